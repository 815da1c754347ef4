"""uvicorn's httptools protocol with the limits a server facing the network needs.

uvicorn bounds none of these by default (measured with ``stress/slow_peers.py``):
a request head must arrive within ``head_timeout`` of connecting (or of the previous
response) — idle connections and slowloris headers get 408 and are closed; a body
must be complete within ``body_timeout`` of its headers (slow bodies: 408); a
request head larger than ``max_head_bytes`` gets 431.  ``truecall serve --http``
uses it, with a bounded graceful shutdown.
"""

from __future__ import annotations

import asyncio
import os

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["GuardedHttpToolsProtocol", "SHUTDOWN_TIMEOUT_S"]

HEAD_TIMEOUT_S = float(os.environ.get("TRUECALL_HEAD_TIMEOUT_S", "10"))
BODY_TIMEOUT_S = float(os.environ.get("TRUECALL_BODY_TIMEOUT_S", "30"))
MAX_HEAD_BYTES = int(os.environ.get("TRUECALL_MAX_HEAD_BYTES", str(64 * 1024)))
SHUTDOWN_TIMEOUT_S = int(os.environ.get("TRUECALL_SHUTDOWN_TIMEOUT_S", "10"))

_408 = b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\ncontent-length: 15\r\nconnection: close\r\n\r\nRequest Timeout"
_431 = (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain\r\ncontent-length: 31\r\n"
        b"connection: close\r\n\r\nRequest Header Fields Too Large")


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with head/body deadlines and a head size limit."""

    head_timeout = HEAD_TIMEOUT_S
    body_timeout = BODY_TIMEOUT_S
    max_head_bytes = MAX_HEAD_BYTES

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._guard: asyncio.TimerHandle | None = None
        self._reading_head = True
        self._in_body = False
        self._response_done = False
        self._head_bytes = 0
        super().connection_made(transport)
        self._arm(self.head_timeout)

    # deadlines -------------------------------------------------------------------------------

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._guard = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._guard is not None:
            self._guard.cancel()
            self._guard = None

    def _expired(self) -> None:
        self._guard = None
        if self.transport.is_closing():
            return
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_408)
        self.transport.close()

    # parser and transport callbacks ----------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._reading_head and self._guard is None:  # a new request on a kept-alive connection
            self._arm(self.head_timeout)
        was_head = self._reading_head
        super().data_received(data)
        if was_head and self._reading_head and not self.transport.is_closing():
            # still inside the request head after this chunk: httptools buffers a header until
            # it is complete, so count raw bytes too
            self._head_bytes += len(data)
            if self._head_bytes > self.max_head_bytes:
                self._refuse_head()

    def send_400_response(self, msg: str) -> None:
        if getattr(self, "_parsed_head", 0) > self.max_head_bytes:
            self._refuse_head()  # _count_head raised inside a parser callback: answer 431, not 400
            return
        super().send_400_response(msg)

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)
        super().on_header(name, value)

    def _count_head(self, n: int) -> None:
        self._parsed_head = getattr(self, "_parsed_head", 0) + n
        if self._parsed_head > self.max_head_bytes:
            raise _HeadTooLarge()

    def _refuse_head(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self.transport.write(_431)
            self.transport.close()

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._in_body = True
        self._response_done = False
        self._parsed_head = 0
        super().on_headers_complete()
        self._arm(self.body_timeout)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_body = False
        self._disarm()  # from here on the answer is the application's business
        if self._response_done:  # answered early (e.g. 413): the next bytes start a new head
            self._next_head()

    def on_response_complete(self) -> None:
        self._response_done = True
        if not self._in_body:
            self._next_head()
        # else: the rest of this request's body is still arriving; it is body, not a new head
        super().on_response_complete()  # arms uvicorn's keep-alive timer

    def _next_head(self) -> None:
        self._reading_head = True
        self._head_bytes = 0
        self._parsed_head = 0

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


class _HeadTooLarge(Exception):
    pass
