"""uvicorn's httptools protocol with the limits a server facing the network needs.

uvicorn bounds none of these by default (measured with ``stress/slow_peers.py``):
a request head must arrive within ``head_timeout`` of connecting (or of the previous
response) — idle connections and slowloris headers get 408 and are closed; a body
must be complete within ``body_timeout`` of its headers (slow bodies: 408); a
request head larger than ``max_head_bytes`` gets 431.  ``truecall serve --http``
uses it, with a bounded graceful shutdown.

It is also cheaper per request than uvicorn's own protocol:

- one lazily re-armed timer per connection carries the head and body deadlines and
  uvicorn's keep-alive timeout; a request only moves a deadline (a float), so a
  request that arrives whole in one read arms no timer at all;
- a response head sent with ``"truecall.body_follows": True`` (the application's
  promise that the body message comes next, without waiting) is written together
  with that body: one ``write`` (one syscall, one TCP segment) for a JSON answer;
- the request cycle lets the application register ``on_disconnect`` (see
  :func:`truecall.transports.http._until_disconnect`) instead of running a watcher
  task per request.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable

from uvicorn.protocols.http.httptools_impl import (HEADER_RE, HEADER_VALUE_RE, STATUS_LINE, HttpToolsProtocol,
                                                   RequestResponseCycle)

from .http import BODY_FOLLOWS

__all__ = ["GuardedHttpToolsProtocol", "SHUTDOWN_TIMEOUT_S"]

HEAD_TIMEOUT_S = float(os.environ.get("TRUECALL_HEAD_TIMEOUT_S", "10"))
BODY_TIMEOUT_S = float(os.environ.get("TRUECALL_BODY_TIMEOUT_S", "30"))
MAX_HEAD_BYTES = int(os.environ.get("TRUECALL_MAX_HEAD_BYTES", str(64 * 1024)))
SHUTDOWN_TIMEOUT_S = int(os.environ.get("TRUECALL_SHUTDOWN_TIMEOUT_S", "10"))

_408 = b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\ncontent-length: 15\r\nconnection: close\r\n\r\nRequest Timeout"
_431 = (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain\r\ncontent-length: 31\r\n"
        b"connection: close\r\n\r\nRequest Header Fields Too Large")
_SLACK_S = 0.002  # the loop's timers have millisecond resolution: a timer this close to its deadline has expired


class _Output:
    """The transport as a request cycle sees it: a held response head leaves with the next write."""

    __slots__ = ("transport", "head", "hold")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.head: bytes | None = None
        self.hold = False

    def write(self, data: bytes) -> None:
        if self.hold:  # the head of a response whose body comes next
            self.hold = False
            self.head = data
            return
        head = self.head
        if head is not None:
            self.head = None
            data = head + data
        self.transport.write(data)

    def flush(self) -> None:
        head = self.head
        if head is not None:
            self.head = None
            self.transport.write(head)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


def _header_block(headers: Any) -> bytes | None:
    """The header lines as uvicorn writes them, or ``None`` when one of them needs uvicorn's own
    handling (framing, connection) or is invalid (uvicorn then raises as usual)."""
    out = []
    for name, value in headers:
        if HEADER_RE.search(name) or HEADER_VALUE_RE.search(value):
            return None
        name = name.lower()
        if name in (b"content-length", b"transfer-encoding", b"connection"):
            return None
        out += (name, b": ", value, b"\r\n")
    return b"".join(out)


_BLOCKS: dict[tuple[Any, ...], bytes | None] = {}  # the application's few distinct header lists
_DEFAULTS: list[Any] = [None, None]  # [server_state.default_headers (replaced every second: date), its block]


class _Cycle(RequestResponseCycle):
    """uvicorn's request cycle, with a one-write path for a promised head and its body, and a
    disconnect callback."""

    #: Called (once, from the loop) when the client goes away before the response is complete.
    on_disconnect: Callable[[], None] | None = None
    _start: Any = None  # a promised http.response.start, not written yet

    async def send(self, message: Any) -> None:
        start = self._start
        if start is not None:  # the message promised to follow this head
            self._start = None
            self.response_started = False
            if message["type"] == "http.response.body" and not message.get("more_body", False) \
                    and not self.disconnected and not self.flow.write_paused and self._send_whole(start, message):
                return
            out = self.transport  # anything else: uvicorn's way, the head held for this message
            out.hold = True  # type: ignore[attr-defined]
            try:
                await super().send(start)
            finally:
                out.hold = False  # type: ignore[attr-defined]  # (uvicorn refused the head: nothing held)
            try:
                await super().send(message)
            finally:
                out.flush()  # type: ignore[attr-defined]  # (nothing written for it: HEAD, a refused message)
            return
        if message.get(BODY_FOLLOWS) and not self.response_started and message["type"] == "http.response.start":
            self._start = message
            self.response_started = True
            self.waiting_for_100_continue = False
            return
        await super().send(message)

    async def receive(self) -> Any:
        if self.more_body is False and not self.waiting_for_100_continue and not self.disconnected \
                and not self.response_complete and self.message_event.is_set():
            # the whole body is here already (the usual case): uvicorn's receive without the wait
            self.flow.resume_reading()
            self.message_event.clear()
            message = {"type": "http.request", "body": bytes(self.body), "more_body": False}
            self.body = bytearray()
            return message
        return await super().receive()

    def _send_whole(self, start: Any, message: Any) -> bool:
        """A complete response in one write, with a content-length; False when it needs uvicorn's way."""
        if not self.keep_alive or self.access_log or self.scope["method"] == "HEAD":
            return False
        status = start["status"]
        headers = start.get("headers") or ()
        try:
            key = (status, *headers)
            block = _BLOCKS.get(key, b"")
        except TypeError:  # headers as lists (unhashable): uvicorn's way
            return False
        if block == b"":
            block = _header_block(headers) if status in STATUS_LINE and status not in (204, 304) else None
            if len(_BLOCKS) >= 256:  # (per-session values): start over rather than grow
                _BLOCKS.clear()
            _BLOCKS[key] = block
        if block is None:
            return False
        defaults = self.default_headers
        if _DEFAULTS[0] is not defaults:
            default_block = _header_block(defaults)
            if default_block is None:
                return False
            _DEFAULTS[:] = [defaults, default_block]
        body = message.get("body", b"")
        self.response_started = True
        self.transport.write(b"".join((STATUS_LINE[status], _DEFAULTS[1], block, b"content-length: %d\r\n\r\n" % len(body),
                                       body)))
        self.response_complete = True
        self.message_event.set()
        self.on_response()
        return True


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with head/body deadlines and a head size limit."""

    head_timeout = HEAD_TIMEOUT_S
    body_timeout = BODY_TIMEOUT_S
    max_head_bytes = MAX_HEAD_BYTES

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._guard: asyncio.TimerHandle | None = None  # the connection's one timer, fires at _guard_at
        self._guard_at = 0.0
        self._deadline: float | None = None  # when the current phase must be over; None: not ours to bound
        self._idle = False  # the deadline is the keep-alive one: it closes quietly, and any byte ends it
        self._idle_until = 0.0
        self._body_until = 0.0
        self._reading_head = True
        self._in_body = False
        self._response_done = False
        self._head_bytes = 0
        self._parsed_head = 0
        super().connection_made(transport)
        self._out = _Output(transport)
        self._deadline = self.loop.time() + self.head_timeout
        self._arm()

    # deadlines -------------------------------------------------------------------------------

    def _arm(self) -> None:
        """Make sure the timer fires no later than the deadline (it re-arms itself when early)."""
        deadline = self._deadline
        if deadline is None:
            return
        guard = self._guard
        if guard is not None:
            if self._guard_at <= deadline:
                return
            guard.cancel()
        self._guard_at = deadline
        self._guard = self.loop.call_at(deadline, self._expired)

    def _disarm(self) -> None:
        self._deadline = None
        if self._guard is not None:
            self._guard.cancel()
            self._guard = None

    def _expired(self) -> None:
        self._guard = None
        deadline = self._deadline
        if deadline is None or self.transport.is_closing():
            return
        if self.loop.time() < deadline - _SLACK_S:  # the deadline moved since the timer was set
            self._arm()
            return
        self._deadline = None
        if self._idle:  # uvicorn's keep-alive timeout
            self._out.close()
            return
        self._out.flush()
        # A head still being read after the last answer ended is a new request: it gets its 408 too
        # (the cycle is the previous one's).  While an answer is still going out, no bytes are added.
        if (self._reading_head and self._response_done) or self.cycle is None or not self.cycle.response_started:
            self.transport.write(_408)
        self.transport.close()

    # parser and transport callbacks ----------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._idle:  # these bytes end the keep-alive wait
            self._idle = False
            self._deadline = self._body_until if self._in_body else None
        if self._reading_head and self._deadline is None:  # a new request on a kept-alive connection
            self._deadline = self.loop.time() + self.head_timeout
        was_head = self._reading_head
        super().data_received(data)
        if self.transport.is_closing():
            return
        if was_head and self._reading_head:
            # still inside the request head after this chunk: httptools buffers a header until
            # it is complete, so count raw bytes too
            self._head_bytes += len(data)
            if self._head_bytes > self.max_head_bytes:
                self._refuse_head()
                return
        if self._deadline is not None:  # the request is not complete: bound the rest of it
            self._arm()

    def send_400_response(self, msg: str) -> None:
        if self._parsed_head > self.max_head_bytes:
            self._refuse_head()  # _HeadTooLarge raised inside a parser callback: answer 431, not 400
            return
        self._out.flush()
        super().send_400_response(msg)

    def on_url(self, url: bytes) -> None:
        n = self._parsed_head = self._parsed_head + len(url)
        if n > self.max_head_bytes:
            raise _HeadTooLarge()
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        n = self._parsed_head = self._parsed_head + len(name) + len(value) + 4
        if n > self.max_head_bytes:
            raise _HeadTooLarge()
        # uvicorn's on_header, inline (one Python call per header instead of three)
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self.expect_100_continue = True
        self.headers.append((name, value))

    def _refuse_head(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self._out.flush()
            self.transport.write(_431)
            self.transport.close()

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._in_body = True
        self._response_done = False
        self._parsed_head = 0
        existing = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not existing and type(cycle) is RequestResponseCycle:
            # Before its task first runs (it asks for cycle.send then): the cycle of this request,
            # writing through the connection's output.
            cycle.__class__ = _Cycle
            cycle.transport = self._out  # type: ignore[assignment]
        # armed by data_received, which this parser callback runs inside
        self._body_until = self._deadline = self.loop.time() + self.body_timeout

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_body = False
        if self._response_done:  # answered early (e.g. 413): the next bytes start a new head
            self._next_head()
            self._deadline = self._idle_until if self._idle else None
        else:
            self._deadline = None  # from here on the answer is the application's business

    def on_response_complete(self) -> None:
        # uvicorn's, with the keep-alive timeout as a deadline instead of a timer per response
        self._response_done = True
        if not self._in_body:
            self._next_head()
        # else: the rest of this request's body is still arriving; it is body, not a new head
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self._unset_keepalive_if_required()
        self.flow.resume_reading()
        if self.pipeline:  # start the next pipelined request
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
        else:
            self._idle = True
            self._idle_until = self.loop.time() + self.timeout_keep_alive
            self._deadline = min(self._idle_until, self._body_until) if self._in_body else self._idle_until
            self._arm()

    def _next_head(self) -> None:
        self._reading_head = True
        self._head_bytes = 0
        self._parsed_head = 0

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._out.head = None
        cycle = self.cycle
        super().connection_lost(exc)
        if cycle is not None and cycle.disconnected:
            callback = getattr(cycle, "on_disconnect", None)
            if callback is not None:
                cycle.on_disconnect = None  # type: ignore[attr-defined]
                callback()


class _HeadTooLarge(Exception):
    pass
