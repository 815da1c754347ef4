"""One SSE response being written: the first event sends the head, the last closes the stream."""

from __future__ import annotations

from typing import Any

from ..protocol import jsonrpc
from ._http_wire import BODY_FOLLOWS, Send

SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")]


class SseOutbox:
    """An SSE response being written; the first message sends the headers."""

    __slots__ = ("send_", "headers", "started", "closed")

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]]) -> None:
        self.send_ = send
        self.headers = headers
        self.started = False
        self.closed = False

    async def start(self, body_follows: bool = False) -> None:
        if not self.started:
            self.started = True
            await self.send_({"type": "http.response.start", "status": 200, "headers": SSE + self.headers,
                              BODY_FOLLOWS: body_follows})

    async def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        await self.start(True)
        await self.send_({"type": "http.response.body", "body": event(message), "more_body": True})

    async def finish(self, message: dict[str, Any] | None) -> None:
        if self.closed:
            return
        if not self.started and message is not None:
            # Nothing was streamed before the answer: the whole stream is this one event, sent as
            # one body (one write, with a content-length, under truecall's own protocol).
            await self.start(True)
            self.closed = True
            await self.send_({"type": "http.response.body", "body": event(message), "more_body": False})
            return
        if message is not None:
            await self.send(message)
        await self.start(True)
        self.closed = True
        await self.send_({"type": "http.response.body", "body": b"", "more_body": False})


def event(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as an SSE event."""
    return b"event: message\ndata: " + jsonrpc.encode(message) + b"\n\n"
