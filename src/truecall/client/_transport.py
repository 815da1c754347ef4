"""What the client needs from a transport: move messages, say when something is lost.

A transport hands every received message to ``receive`` (bytes, undecoded) and
calls ``lost(reason, request_id)`` when answers can no longer come: for one
request (``request_id``) or for all of them (``None``).  Reasons: ``"not_sent"``
(the request never left), ``"connection_lost"``, ``"server_exited"``, ``"http_500"`` /
``"http_502"`` / ``"http_503"`` / ``"http_504"`` (HTTP: that status with no JSON-RPC answer).
What a reason means for the work — only a ``tools/call`` that was not sent is "nothing
happened" — is ``_silence``'s table, not the transport's business.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

__all__ = ["Transport", "TransportHooks", "Receive", "Lost", "hooks_of"]

Receive = Callable[[bytes], None]
Lost = Callable[[str, Any], None]


class Transport(Protocol):
    async def open(self, receive: Receive, lost: Lost) -> None: ...

    async def send(self, message: dict[str, Any]) -> None:
        """Send one message; raises :class:`~truecall.client.NotSent` if it cannot leave at all."""

    async def cancel(self, request_id: Any) -> None:
        """Tell the server the client stopped waiting for ``request_id``."""

    async def aclose(self) -> None: ...


class TransportHooks:
    """What a transport may do with what the session learns; each default does nothing.

    Only HTTP needs them: the handshake era's ``MCP-Protocol-Version`` header on every later message,
    the ``Mcp-Param-*`` headers of a tool's declared parameters, and the GET stream for the server's own
    messages.  truecall's transports inherit this class; a transport of the caller's that does not is
    given these defaults (:func:`hooks_of`), so the four methods of :class:`Transport` are all it needs."""

    def agreed(self, version: str, era: str) -> None:
        """The two sides agreed on ``version`` (``era``: ``"modern"`` or ``"legacy"``), before any
        later message leaves (the ``notifications/initialized`` that follows carries it too)."""

    def use_param_headers(self, make: Callable[[str, Any], dict[str, str]]) -> None:
        """``make(tool, arguments)`` gives a ``tools/call``'s ``Mcp-Param-*`` headers (2026-07-28)."""

    async def listen(self) -> None:
        """Open what carries the server's own messages in the handshake era (HTTP: the GET stream)."""


_NO_HOOKS = TransportHooks()


def hooks_of(transport: Transport) -> TransportHooks:
    """The transport's hooks, or the do-nothing ones for a transport that has none."""
    return transport if isinstance(transport, TransportHooks) else _NO_HOOKS
