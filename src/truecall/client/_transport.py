"""What the client needs from a transport: move messages, say when something is lost.

A transport hands every received message to ``receive`` (bytes, undecoded) and
calls ``lost(reason, request_id)`` when answers can no longer come: for one
request (``request_id``) or for all of them (``None``).  Reasons: ``"not_sent"``
(the request never left: nothing can have happened), ``"connection_lost"``,
``"server_exited"``.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

__all__ = ["Transport", "Receive", "Lost"]

Receive = Callable[[bytes], None]
Lost = Callable[[str, Any], None]


class Transport(Protocol):
    async def open(self, receive: Receive, lost: Lost) -> None: ...

    async def send(self, message: dict[str, Any]) -> None:
        """Send one message; raises :class:`~truecall.client.NotSent` if it cannot leave at all."""

    async def cancel(self, request_id: Any) -> None:
        """Tell the server the client stopped waiting for ``request_id``."""

    async def aclose(self) -> None: ...
