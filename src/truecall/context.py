"""What a running tool can see and ask for: the caller, progress, logs, user input.

The channel back to the client (a *peer*) is supplied by the protocol engine;
in-process calls get :class:`NoPeer`, which has no way to ask anybody anything
and says so instead of hanging.
"""

from __future__ import annotations

import enum
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator, Protocol

from .auth import Principal

if TYPE_CHECKING:
    from .tools import Tool

__all__ = [
    "InputRequired",
    "InvalidElicitationAnswer",
    "ToolContext",
    "Peer",
    "NoPeer",
    "ElicitAction",
    "Elicitation",
    "ElicitationUnavailable",
    "ElicitationRefused",
    "Acceptor",
]

#: ``accept(ctx, message) -> Task``: how a call that may become a task is accepted as one (the
#: task runtime's :meth:`~truecall.tasks.runtime.TaskOffer.accept`); ``None``: it may not.
Acceptor = Callable[["ToolContext", "str | None"], Awaitable[Any]]


class ElicitAction(str, enum.Enum):
    """The user's three answers to an elicitation; only ``accept`` carries content."""

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
    """Nobody can be asked (no channel, or the client did not declare the capability)."""

    def __init__(self, missing: list[str] | None = None, capability: str = "elicitation") -> None:
        self.missing = missing or []
        self.capability = capability
        super().__init__(f"the client cannot be asked ({capability})")


class InputRequired(Exception):
    """Control flow, not an error: the tool needs answers before it can go on.

    Raised by a stateless peer (2026-07-28) when a tool asks for input the request
    did not carry; the engine turns it into an ``InputRequiredResult``.
    """

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__("input required")
        self.requests = requests


class Peer(Protocol):
    """The channel from a running tool back to the client, supplied by the engine."""

    #: Capabilities the client declared (for this request, or at initialize).
    client_capabilities: dict[str, Any]
    #: The protocol version in force for this request.
    version: str | None

    async def request(self, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
        """Ask the client (elicitation, sampling, roots) and return its result."""
        ...

    async def progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def log(self, level: str, data: Any, logger: str | None) -> None: ...


class NoPeer:
    """In-process calls: no client to ask, progress and logs go nowhere."""

    client_capabilities: dict[str, Any] = {}
    version: str | None = None

    async def request(self, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
        raise ElicitationUnavailable(capability=method)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        return None

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        return None


def _required_fields(schema: dict[str, Any] | None) -> list[str]:
    if not schema:
        return []
    return [str(f) for f in schema.get("required", list(schema.get("properties", {})))]


NO_PEER = NoPeer()


class ToolContext:
    """Handed to every tool handler as its first argument."""

    __slots__ = ("principal", "tool", "server", "peer", "request_id", "meta", "_elicit_seq", "_last_progress",
                 "task", "_acceptor")

    def __init__(self, principal: Principal, tool: "Tool", server: Any, peer: Peer = NO_PEER,
                 request_id: Any = None, meta: dict[str, Any] | None = None,
                 acceptor: Acceptor | None = None) -> None:
        self.principal = principal
        self.tool = tool
        self.server = server
        self.peer = peer
        self.request_id = request_id
        self.meta = meta or {}
        self._elicit_seq = 0
        self._last_progress: float | None = None
        #: The task this call became, once accepted.
        self.task: Any = None
        #: Set only when the caller can take a task (see :meth:`accept_as_task`).
        self._acceptor = acceptor

    @property
    def tenant(self) -> str:
        return self.principal.tenant

    def fenced(self) -> Any:
        """A database transaction fenced by this call's task lease: ``with ctx.fenced() as db: ...``.

        Once the work is a task, the lease is checked first inside the transaction; if another
        process took the task over (its runner was frozen or presumed dead), this raises
        :class:`~truecall.LeaseLost` and nothing of the transaction is committed — the tool's
        own writes are then fenced exactly like the task's result.  Before acceptance it is a
        plain transaction.
        """
        return _fenced(self)

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the client declared (on this request in 2026-07-28, at initialize before)."""
        return self.peer.client_capabilities

    @property
    def protocol_version(self) -> str | None:
        return self.peer.version

    async def elicit(self, message: str, schema: dict[str, Any] | None = None, *, url: str | None = None,
                     key: str | None = None) -> Elicitation:
        """Ask the user (form ``schema`` or ``url``); never for credentials in a form.

        ``key`` names this question so that a stateless retry can match the answer;
        by default questions are numbered in the order the tool asks them.  An answer
        counts only for a question this server asked: in 2026-07-28 the retry must carry
        the ``requestState`` of the round that asked it, and the question must read the
        same (answers a client volunteers are ignored and the question is asked).  A
        client that did not declare the mode is never asked: this raises
        :class:`ElicitationUnavailable`, which the pipeline turns into an
        ``invalid_input`` result naming the missing fields.
        """
        if (schema is None) == (url is None):
            raise ValueError("elicit takes exactly one of schema (form mode) or url (URL mode)")
        from .forms import check_form, check_url

        if schema is not None:
            check_form(message, schema)  # the red lines hold whoever the client is
        else:
            check_url(url)  # type: ignore[arg-type]
        self._elicit_seq += 1
        key = key or f"elicit-{self._elicit_seq}"
        caps = self.peer.client_capabilities.get("elicitation")
        from .protocol.versions import features_of

        features = features_of(self.peer.version)  # what this version's elicitation looks like
        if not isinstance(caps, dict):
            raise ElicitationUnavailable(_required_fields(schema))
        if url is not None:
            if not features.elicitation_url or "url" not in caps:
                raise ElicitationUnavailable([], "elicitation.url")
            params: dict[str, Any] = {"mode": "url", "message": message, "url": url}
            if features.elicitation_id:
                params["elicitationId"] = f"{self.request_id}-{key}"
        else:
            if caps and "form" not in caps and features.elicitation_modes:
                raise ElicitationUnavailable(_required_fields(schema))
            params = {"message": message, "requestedSchema": schema}
            if features.elicitation_modes:
                params = {"mode": "form", **params}
        try:
            answer = await self.peer.request("elicitation/create", params, key)
        except TimeoutError:
            return Elicitation(ElicitAction.CANCEL)  # silence is never consent
        return _elicitation(answer, schema)

    async def sample(self, messages: list[dict[str, Any]], max_tokens: int, *, key: str | None = None,
                     **options: Any) -> dict[str, Any]:
        """Ask the client's model (``sampling/createMessage``); needs the sampling capability."""
        if "sampling" not in self.peer.client_capabilities:
            raise ElicitationUnavailable([], "sampling")
        self._elicit_seq += 1
        params = {"messages": messages, "maxTokens": max_tokens, **options}
        return await self.peer.request("sampling/createMessage", params, key or f"sample-{self._elicit_seq}")

    async def roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        """The client's roots (``roots/list``); needs the roots capability."""
        if "roots" not in self.peer.client_capabilities:
            raise ElicitationUnavailable([], "roots")
        self._elicit_seq += 1
        result = await self.peer.request("roots/list", {}, key or f"roots-{self._elicit_seq}")
        roots = result.get("roots")
        return roots if isinstance(roots, list) else []

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

    async def accept_as_task(self, message: str | None = None) -> Any:
        """Accept the work: the caller gets a task handle now, this handler goes on in the background.

        Call it at the point where the work is *accepted* and not before any input
        the call needs synchronously.  For a client that cannot take a task this
        returns ``None`` and the call simply continues (a tool declared
        ``task_support="required"`` never gets here: such callers are refused).
        """
        if self.task is not None:
            return self.task
        if self._acceptor is None:
            if self.tool is not None and self.tool.task_support == "required":
                from .errors import MissingCapability

                raise MissingCapability("This tool runs only as a task")
            return None
        return await self._acceptor(self, message)

    async def gather(self, *asks: Any) -> list[Any]:
        """Ask several questions at once: all answers, or every missing question in one round.

        Awaiting asks one after another costs one round trip per question on the
        stateless protocol; here they run together, and the ones without an answer
        yet are merged into a single :class:`InputRequired`.
        """
        import asyncio

        outcomes = await asyncio.gather(*asks, return_exceptions=True)
        missing: dict[str, dict[str, Any]] = {}
        for outcome in outcomes:
            if isinstance(outcome, InputRequired):
                missing.update(outcome.requests)
            elif isinstance(outcome, BaseException):
                raise outcome
        if missing:
            raise InputRequired(missing)
        return list(outcomes)

    @property
    def progress_token(self) -> str | int | None:
        """The request's progress token, if the client asked for progress."""
        return self.meta.get("progressToken")

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress; values must increase, so a step back is ignored."""
        if self._last_progress is not None and progress <= self._last_progress:
            return
        self._last_progress = progress
        await self.peer.progress(progress, total, message)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        await self.peer.log(level, data, logger)


class InvalidElicitationAnswer(Exception):
    """The client's answer does not match what was asked."""


def _elicitation(answer: Any, schema: dict[str, Any] | None) -> Elicitation:
    if not isinstance(answer, dict):
        raise InvalidElicitationAnswer("an elicitation answer must be an object")
    try:
        action = ElicitAction(answer.get("action"))
    except ValueError:
        raise InvalidElicitationAnswer("an elicitation answer needs action accept, decline or cancel") from None
    if action is not ElicitAction.ACCEPT:
        return Elicitation(action)
    content = answer.get("content")
    if schema is None:  # URL mode: accept means consent to open the link, nothing more
        return Elicitation(action, None)
    if content is None:
        content = {}
    if not isinstance(content, dict) or not _form_validator(schema).is_valid(content):
        raise InvalidElicitationAnswer("the answer does not match the requested form")
    return Elicitation(action, content)


def _form_validator(schema: dict[str, Any]) -> Any:
    import orjson

    from .schema import Validator

    key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    found = _FORM_VALIDATORS.get(key)
    if found is None:
        if len(_FORM_VALIDATORS) > 512:
            _FORM_VALIDATORS.clear()
        found = _FORM_VALIDATORS[key] = Validator(schema)
    return found


_FORM_VALIDATORS: dict[bytes, Any] = {}


@contextmanager
def _fenced(ctx: ToolContext) -> Iterator[Any]:
    db = ctx.server.db
    with db.transaction():
        if ctx.task is not None:
            ctx.server.tasks.check_lease(ctx.task.task_id, ctx.task.lease_epoch)
        yield db
