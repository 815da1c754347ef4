"""What a running tool can see and ask for: the caller, progress, logs, user input.

The channel back to the client (a *peer*) is supplied by the protocol engine;
in-process calls get :class:`NoPeer`, which has no way to ask anybody anything
and says so instead of hanging.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .auth import Principal

if TYPE_CHECKING:
    from .tools import Tool

__all__ = [
    "ToolContext",
    "Peer",
    "NoPeer",
    "ElicitAction",
    "Elicitation",
    "ElicitationUnavailable",
    "ElicitationRefused",
]


class ElicitAction(str, enum.Enum):
    ACCEPT = "accept"
    DECLINE = "decline"
    CANCEL = "cancel"


class ElicitationRefused(Exception):
    """Reading the content of a declined or cancelled elicitation."""


@dataclass(frozen=True, slots=True)
class Elicitation:
    """The user's answer. Only ``accept`` carries content; nothing else reads as consent."""

    action: ElicitAction
    _content: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def accepted(self) -> bool:
        return self.action is ElicitAction.ACCEPT

    @property
    def content(self) -> dict[str, Any]:
        if self.action is not ElicitAction.ACCEPT:
            raise ElicitationRefused(f"the user did not accept ({self.action.value})")
        return self._content or {}

    def confirmed(self, field_name: str) -> bool:
        """True only for ``accept`` with ``field_name`` set to the boolean ``True``."""
        return self.accepted and (self._content or {}).get(field_name) is True


class ElicitationUnavailable(Exception):
    """Nobody can be asked (no channel, or the client did not declare elicitation)."""

    def __init__(self, missing: list[str] | None = None) -> None:
        self.missing = missing or []
        super().__init__("the client cannot be asked for input")


class Peer(Protocol):
    """The channel from a running tool back to the client."""

    client_capabilities: dict[str, Any]

    async def elicit(self, message: str, schema: dict[str, Any] | None, url: str | None, key: str) -> Elicitation: ...

    async def progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def log(self, level: str, data: Any, logger: str | None) -> None: ...

    async def request(self, method: str, params: dict[str, Any], key: str) -> dict[str, Any]: ...


class NoPeer:
    """In-process calls: no client to ask, progress and logs go nowhere."""

    client_capabilities: dict[str, Any] = {}

    async def elicit(self, message: str, schema: dict[str, Any] | None, url: str | None, key: str) -> Elicitation:
        raise ElicitationUnavailable(_required_fields(schema))

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        return None

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        return None

    async def request(self, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
        raise ElicitationUnavailable()


def _required_fields(schema: dict[str, Any] | None) -> list[str]:
    if not schema:
        return []
    return [str(f) for f in schema.get("required", list(schema.get("properties", {})))]


NO_PEER = NoPeer()


class ToolContext:
    """Handed to every tool handler as its first argument."""

    __slots__ = ("principal", "tool", "server", "peer", "request_id", "meta", "_elicit_seq", "_last_progress")

    def __init__(self, principal: Principal, tool: "Tool", server: Any, peer: Peer = NO_PEER,
                 request_id: Any = None, meta: dict[str, Any] | None = None) -> None:
        self.principal = principal
        self.tool = tool
        self.server = server
        self.peer = peer
        self.request_id = request_id
        self.meta = meta or {}
        self._elicit_seq = 0
        self._last_progress: float | None = None

    @property
    def tenant(self) -> str:
        return self.principal.tenant

    async def elicit(self, message: str, schema: dict[str, Any] | None = None, *, url: str | None = None,
                     key: str | None = None) -> Elicitation:
        """Ask the user (form ``schema`` or ``url``); never for credentials in a form.

        ``key`` names this question so that a stateless retry can match the answer;
        by default questions are numbered in the order the tool asks them.
        """
        if (schema is None) == (url is None):
            raise ValueError("elicit takes exactly one of schema (form mode) or url (URL mode)")
        self._elicit_seq += 1
        return await self.peer.elicit(message, schema, url, key or f"elicit-{self._elicit_seq}")

    async def confirm(self, message: str, *, field_name: str = "confirm", key: str | None = None) -> bool:
        """An explicit yes: only ``accept`` with ``true`` counts; decline/cancel/no channel is no."""
        schema = {
            "type": "object",
            "properties": {field_name: {"type": "boolean", "title": "Confirm", "description": message}},
            "required": [field_name],
        }
        try:
            answer = await self.elicit(message, schema, key=key)
        except ElicitationUnavailable:
            return False
        return answer.confirmed(field_name)

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress; values must increase, so a step back is ignored."""
        if self._last_progress is not None and progress <= self._last_progress:
            return
        self._last_progress = progress
        await self.peer.progress(progress, total, message)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        await self.peer.log(level, data, logger)
