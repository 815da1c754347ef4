"""truecall's HTTP/1.1 server protocol: an :class:`asyncio.Protocol` on ``httptools``, with the
limits a server facing the network needs.

uvicorn runs it (``uvicorn.Config(http=GuardedHttpToolsProtocol)``: uvicorn's ``http`` setting
takes an ``asyncio.Protocol`` class) and keeps what it is good at: the listening socket, the
loop, signals, the lifespan, the ``date``/``server`` headers and a graceful shutdown.  The
protocol meets uvicorn only where uvicorn meets every protocol class it is given: it is built
as ``cls(config=, server_state=, app_state=)``; it reads the public fields of
:class:`uvicorn.Config` (the app, ``timeout_keep_alive``, ``limit_concurrency``, ``root_path``,
``reset_contextvars``); it keeps :class:`uvicorn.server.ServerState` (``connections``,
``tasks``, ``default_headers``, ``total_requests``) the way uvicorn's shutdown and
``limit_max_requests`` read it; and it answers ``shutdown()``.
``tests/transports/test_http_uvicorn_contract.py`` checks that contract against the installed
uvicorn.  Nothing of uvicorn's own protocols is used.

uvicorn's protocols bound none of these (measured with ``stress/slow_peers.py``): a request
head must arrive within ``head_timeout`` of connecting (or of the previous response) — idle
connections and slowloris headers get 408 and are closed; a body must be complete within
``body_timeout`` of its headers (slow bodies: 408); a request head larger than
``max_head_bytes`` gets 431.  ``limit_concurrency`` answers 503 as uvicorn does.

It is also cheaper per request than uvicorn's protocol:

- one lazily re-armed timer per connection carries the head and body deadlines and the
  keep-alive timeout; a request only moves a deadline (a float), so a request that arrives
  whole in one read arms no timer at all;
- a response head sent with ``"truecall.body_follows": True`` (the application's promise that
  the body message comes next, without waiting) is written together with that body: one
  ``write`` (one syscall, one TCP segment) with a content-length for a JSON answer;
- the request offers a disconnect hook in ``scope["extensions"]`` (see
  :data:`truecall.transports.http.DISCONNECT_HOOK`), so the application is told of a client
  gone away without a watcher task per request.

Everything else is HTTP/1.1 as uvicorn frames it: keep-alive and ``Connection: close``,
HTTP/1.0, pipelining (one request answered at a time, in order), ``Expect: 100-continue``,
chunked answers when the application gives no length, ``HEAD``, read and write back-pressure.
An ``Upgrade`` request (truecall speaks no WebSocket) is served as a plain request and the
connection closed after its answer.
"""

from __future__ import annotations

import asyncio
import contextvars
import http
import logging
import os
import re
import select
import urllib.parse
from collections import deque
from typing import TYPE_CHECKING, Any, Awaitable, Callable, cast

import httptools

from .http import BODY_FOLLOWS, DISCONNECT_HOOK

if TYPE_CHECKING:
    from uvicorn.config import Config
    from uvicorn.server import ServerState

__all__ = ["GuardedHttpToolsProtocol", "SHUTDOWN_TIMEOUT_S"]

HEAD_TIMEOUT_S = float(os.environ.get("TRUECALL_HEAD_TIMEOUT_S", "10"))
BODY_TIMEOUT_S = float(os.environ.get("TRUECALL_BODY_TIMEOUT_S", "30"))
MAX_HEAD_BYTES = int(os.environ.get("TRUECALL_MAX_HEAD_BYTES", str(64 * 1024)))
SHUTDOWN_TIMEOUT_S = int(os.environ.get("TRUECALL_SHUTDOWN_TIMEOUT_S", "10"))

#: Request body bytes held for the application before the socket stops being read.
HIGH_WATER = 65536

_408 = b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\ncontent-length: 15\r\nconnection: close\r\n\r\nRequest Timeout"
_431 = (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain\r\ncontent-length: 31\r\n"
        b"connection: close\r\n\r\nRequest Header Fields Too Large")
_100 = b"HTTP/1.1 100 Continue\r\n\r\n"
_SLACK_S = 0.002  # the loop's timers have millisecond resolution: a timer this close to its deadline has expired

# RFC 9110 field names are tokens; values carry no control characters but tab.
_BAD_NAME = re.compile(b'[\x00-\x1f\x7f()<>@,;:\\[\\]={} \t\\\\"]')
_BAD_VALUE = re.compile(b"[\x00-\x08\x0a-\x1f\x7f]")


def _status_line(status: int) -> bytes:
    try:
        phrase = http.HTTPStatus(status).phrase.encode()
    except ValueError:
        phrase = b""
    return b"HTTP/1.1 %d %s\r\n" % (status, phrase)


STATUS_LINE = {status: _status_line(status) for status in range(100, 600)}

#: An ASGI application (its result is checked: an application must return None).
ASGIApp = Callable[[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]],
                    Callable[[dict[str, Any]], Awaitable[None]]], Awaitable[Any]]

_logger = logging.getLogger("uvicorn.error")  # uvicorn's logger names: its log configuration applies
_access_logger = logging.getLogger("uvicorn.access")


def _header_block(headers: Any) -> bytes | None:
    """The header lines as written, or ``None`` when one of them needs the general framing
    (content-length, transfer-encoding, connection) or is invalid (refused there, as usual)."""
    out: list[bytes] = []
    for name, value in headers:
        if _BAD_NAME.search(name) or _BAD_VALUE.search(value):
            return None
        name = name.lower()
        if name in (b"content-length", b"transfer-encoding", b"connection"):
            return None
        out += (name, b": ", value, b"\r\n")
    return b"".join(out)


_BLOCKS: dict[tuple[Any, ...], bytes | None] = {}  # the application's few distinct header lists
#: request target as received -> (root_path, path, raw_path, query_string): clients ask for the same one
_TARGETS: dict[bytes, tuple[str, str, bytes, bytes]] = {}
_DEFAULTS: list[Any] = [None, None]  # [server_state.default_headers (replaced every second: date), its block]


class _Hook:
    """A request's ``scope["extensions"][DISCONNECT_HOOK]`` (see
    :class:`truecall.transports.http.DisconnectHook`).  Apart from its cycle: the scope that
    holds it then makes no reference cycle, and a finished request is freed at once."""

    __slots__ = ("disconnected", "on_disconnect")

    def __init__(self) -> None:
        self.disconnected = False
        #: Called (once, from the loop) when the client goes away before the response is complete.
        self.on_disconnect: Callable[[], None] | None = None


class _Cycle:
    """One request and its response: the ASGI ``receive`` and ``send`` of that request."""

    __slots__ = ("conn", "scope", "keep_alive", "waiting_for_100_continue", "chunks", "size", "more_body",
                 "ready", "waiter", "disconnected", "response_started", "response_complete", "chunked",
                 "expected_length", "held", "hook")

    def __init__(self, conn: GuardedHttpToolsProtocol, scope: dict[str, Any], keep_alive: bool,
                 expect_100_continue: bool) -> None:
        self.conn = conn
        self.scope = scope
        self.keep_alive = keep_alive
        self.waiting_for_100_continue = expect_100_continue
        # request body: chunks not yet handed over; ready: something for receive() to return
        self.chunks: list[bytes] = []
        self.size = 0
        self.more_body = True
        self.ready = False
        self.waiter: asyncio.Future[None] | None = None
        self.disconnected = False
        # response
        self.response_started = False
        self.response_complete = False
        self.chunked: bool | None = None
        self.expected_length = 0
        self.held: dict[str, Any] | None = None  # a promised http.response.start, not written yet
        self.hook = scope["extensions"][DISCONNECT_HOOK] = _Hook()

    def wake(self) -> None:
        """Something happened that ``receive`` reports: body, its end, a disconnect, the response done."""
        self.ready = True
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # the ASGI application ----------------------------------------------------------------

    async def run_asgi(self, app: ASGIApp) -> None:
        """Run the application; what it leaves unfinished is handled as uvicorn does."""
        try:
            result: Any = await app(self.scope, self.receive, self.send)
        except BaseException as exc:
            _logger.error("Exception in ASGI application\n", exc_info=exc)
            if not self.response_started:
                await self._send_500()
            else:
                self.conn.transport.close()
        else:
            if result is not None:
                _logger.error("ASGI callable should return None, but returned '%s'.", result)
                self.conn.transport.close()
            elif not self.response_started and not self.disconnected:
                _logger.error("ASGI callable returned without starting response.")
                await self._send_500()
            elif not self.response_complete and not self.disconnected:
                _logger.error("ASGI callable returned without completing response.")
                self.conn.transport.close()

    async def _send_500(self) -> None:
        await self.send({"type": "http.response.start", "status": 500,
                         "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"21"),
                                     (b"connection", b"close")]})
        await self.send({"type": "http.response.body", "body": b"Internal Server Error", "more_body": False})

    async def receive(self) -> dict[str, Any]:
        conn = self.conn
        if self.waiting_for_100_continue and not conn.transport.is_closing():
            conn.transport.write(_100)
            self.waiting_for_100_continue = False
        if not self.disconnected and not self.response_complete:
            conn.resume_reading()
            if not self.ready:
                waiter = self.waiter = conn.loop.create_future()
                try:
                    await waiter
                finally:
                    self.waiter = None
            self.ready = False
        if self.disconnected or self.response_complete:
            return {"type": "http.disconnect"}
        chunks = self.chunks
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if chunks:
            self.chunks = []
            self.size = 0
        return {"type": "http.request", "body": body, "more_body": self.more_body}

    def answer_whole(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> bool:
        """A complete response (start, then its one body), written at once without awaiting: what
        ``send`` does for that pair, minus two coroutines.  ``False`` when it cannot be (a response
        already started, writes paused, the client gone): the caller sends the messages instead."""
        if self.response_started or self.disconnected or self.conn.write_paused:
            return False
        self.response_started = True
        self.waiting_for_100_continue = False
        start = {"type": "http.response.start", "status": status, "headers": headers}
        if not self._send_whole(start, body):
            self._send_body(self._head(start), body, False)
        return True

    async def send(self, message: dict[str, Any]) -> None:
        conn = self.conn
        if conn.write_paused and not self.disconnected:
            await conn.drain()
        if self.disconnected:
            return
        kind = message["type"]
        if not self.response_started:
            if kind != "http.response.start":
                raise RuntimeError(f"Expected ASGI message 'http.response.start', but got '{kind}'.")
            self.response_started = True
            self.waiting_for_100_continue = False
            if message.get(BODY_FOLLOWS):  # written with the body message that comes next
                self.held = message
            else:
                conn.transport.write(self._head(message))
            return
        if self.response_complete:
            raise RuntimeError(f"Unexpected ASGI message '{kind}' sent, after response already completed.")
        if kind != "http.response.body":
            raise RuntimeError(f"Expected ASGI message 'http.response.body', but got '{kind}'.")
        body = message.get("body", b"")
        more_body = message.get("more_body", False)
        head = b""
        start = self.held
        if start is not None:
            self.held = None
            if not more_body and self._send_whole(start, body):
                return
            head = self._head(start)
        self._send_body(head, body, more_body)

    # framing --------------------------------------------------------------------------------

    def _head(self, message: dict[str, Any]) -> bytes:
        """Status line and headers; decides the body's framing (content-length, chunked, none)."""
        status = message["status"]
        scope = self.scope
        if self.conn.access_log:
            self._log(status)
        content = [STATUS_LINE[status]]  # (a status outside 100-599 raises, as in uvicorn)
        has_close = False
        for name, value in (*self.conn.server_state.default_headers, *message.get("headers", ())):
            if _BAD_NAME.search(name):
                raise RuntimeError("Invalid HTTP header name.")
            if _BAD_VALUE.search(value):
                raise RuntimeError("Invalid HTTP header value.")
            name = name.lower()
            if name == b"content-length" and self.chunked is None:
                self.expected_length = int(value.decode())
                self.chunked = False
            elif name == b"transfer-encoding" and value.lower() == b"chunked":
                self.expected_length = 0
                self.chunked = True
            elif name == b"connection":
                if b"close" in [token.lower().strip() for token in value.split(b",")]:
                    self.keep_alive = False
                    has_close = True
            content += (name, b": ", value, b"\r\n")
        if not self.keep_alive and not has_close:
            content.append(b"connection: close\r\n")
        if self.chunked is None and scope["method"] != "HEAD" and status not in (204, 304):
            self.chunked = True
            content.append(b"transfer-encoding: chunked\r\n")
        content.append(b"\r\n")
        return b"".join(content)

    def _send_body(self, head: bytes, body: bytes, more_body: bool) -> None:
        transport = self.conn.transport
        if self.scope["method"] == "HEAD":
            self.expected_length = 0
            if head:
                transport.write(head)
        elif self.chunked:
            data = [head]
            if body:
                data += (b"%x\r\n" % len(body), body, b"\r\n")
            if not more_body:
                data.append(b"0\r\n\r\n")
            transport.write(b"".join(data))
        else:
            if len(body) > self.expected_length:
                raise RuntimeError("Response content longer than Content-Length")
            self.expected_length -= len(body)
            transport.write(head + body if head else body)
        if not more_body:
            if self.expected_length != 0:
                raise RuntimeError("Response content shorter than Content-Length")
            self._complete()

    def _send_whole(self, start: dict[str, Any], body: bytes) -> bool:
        """A complete response in one write, with a content-length; False when it needs the general framing."""
        if not self.keep_alive or self.scope["method"] == "HEAD":
            return False
        status = start["status"]
        headers = start.get("headers") or ()
        try:
            key = (status, *headers)
            block = _BLOCKS.get(key, b"")
        except TypeError:  # headers as lists (unhashable): the general way
            return False
        if block == b"":
            block = _header_block(headers) if status in STATUS_LINE and status not in (204, 304) else None
            if len(_BLOCKS) >= 256:  # (per-session values): start over rather than grow
                _BLOCKS.clear()
            _BLOCKS[key] = block
        if block is None:
            return False
        defaults = self.conn.server_state.default_headers
        if _DEFAULTS[0] is not defaults:
            default_block = _header_block(defaults)
            if default_block is None:
                return False
            _DEFAULTS[:] = [defaults, default_block]
        if self.conn.access_log:
            self._log(status)
        self.conn.transport.write(b"".join((STATUS_LINE[status], _DEFAULTS[1], block,
                                            b"content-length: %d\r\n\r\n" % len(body), body)))
        self._complete()
        return True

    def _complete(self) -> None:
        self.response_complete = True
        self.wake()
        if not self.keep_alive:
            self.conn.transport.close()
        self.conn.on_response_complete(self)

    def _log(self, status: int) -> None:
        scope = self.scope
        client = scope.get("client")
        path = urllib.parse.quote(scope["path"])
        if scope["query_string"]:
            path += "?" + scope["query_string"].decode("ascii")
        _access_logger.info('%s - "%s %s HTTP/%s" %d', "%s:%d" % client if client else "", scope["method"], path,
                            scope["http_version"], status)


async def _service_unavailable(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The answer over ``limit_concurrency`` (uvicorn's words)."""
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"19"),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": b"Service Unavailable", "more_body": False})


class _HeadTooLarge(Exception):
    pass


class GuardedHttpToolsProtocol(asyncio.Protocol):
    """One HTTP/1.1 connection: httptools parses, a :class:`_Cycle` per request runs the app;
    head/body/keep-alive deadlines on one timer, a head size limit."""

    head_timeout = HEAD_TIMEOUT_S
    body_timeout = BODY_TIMEOUT_S
    max_head_bytes = MAX_HEAD_BYTES

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        if not config.loaded:
            config.load()
        self.app: ASGIApp = config.loaded_app
        self.loop = _loop or asyncio.get_event_loop()
        self.parser = httptools.HttpRequestParser(self)
        try:  # answer the first of pipelined requests even when it says Connection: close (as uvicorn)
            self.parser.set_dangerous_leniencies(lenient_data_after_close=True)
        except AttributeError:  # pragma: no cover  (httptools < 0.6.3)
            pass
        self.root_path: str = config.root_path
        self.asgi_version = config.asgi_version
        self.limit_concurrency = config.limit_concurrency
        self.timeout_keep_alive = config.timeout_keep_alive
        self.reset_contextvars = getattr(config, "reset_contextvars", False)
        self.access_log = _access_logger.hasHandlers()  # (uvicorn: no handler unless access_log is on)
        self.app_state = app_state
        self.server_state = server_state
        # uvicorn types these sets with its own protocol classes; it calls shutdown() on each connection
        self.connections: set[Any] = server_state.connections
        self.tasks: set[asyncio.Task[None]] = server_state.tasks

        self.transport: asyncio.Transport = None  # type: ignore[assignment]  # set by connection_made
        self.server: tuple[str, int | None] | None = None
        self.client: tuple[str, int] | None = None
        self.scheme = "http"
        self.pipeline: deque[tuple[_Cycle, ASGIApp]] = deque()
        self.cycle: _Cycle | None = None  # the request being read (or the last one)
        self.answering: _Cycle | None = None  # the request whose application runs
        self.read_paused = False
        self.write_paused = False
        self._writable: asyncio.Event | None = None
        # per request, while its head is parsed
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.scope: dict[str, Any] = {}
        self.expect_100_continue = False
        self.upgrade = False

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

    # connection ------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.connections.add(self)
        self.transport = cast(asyncio.Transport, transport)  # a stream's (uvloop's is no asyncio.Transport subclass)
        transport = self.transport
        self.server = _address(transport, "sockname")
        peer = _address(transport, "peername")
        self.client = (peer[0], peer[1]) if peer is not None and peer[1] is not None else None
        self.scheme = "https" if transport.get_extra_info("sslcontext") else "http"
        self._deadline = self.loop.time() + self.head_timeout
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self.connections.discard(self)
        self._disarm()
        gone = []
        for cycle in {self.cycle, self.answering}:  # (the one answered and a pipelined one read after it)
            if cycle is None:
                continue
            if not cycle.response_complete:
                cycle.disconnected = cycle.hook.disconnected = True
                gone.append(cycle.hook)
            cycle.wake()
        self.resume_writing()
        if exc is None:
            self.transport.close()
        self.parser = None  # type: ignore[assignment]  # (no more data comes)
        for hook in gone:
            callback = hook.on_disconnect
            if callback is not None:
                hook.on_disconnect = None
                callback()

    def eof_received(self) -> None:
        pass  # the client half-closed: its answer may still go out (the transport closes after it)

    def shutdown(self) -> None:
        """uvicorn's graceful shutdown: close when idle, else after the answer under way."""
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            self.transport.close()
        else:
            cycle.keep_alive = False

    # back-pressure ---------------------------------------------------------------------------

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        writable = self._writable
        if writable is not None:
            self._writable = None
            writable.set()

    async def drain(self) -> None:
        writable = self._writable
        if writable is None:
            writable = self._writable = asyncio.Event()
        await writable.wait()

    def pause_reading(self) -> None:
        if not self.read_paused:
            self.read_paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.read_paused:
            self.read_paused = False
            self.transport.resume_reading()

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
        if self._idle:  # the keep-alive timeout
            if _bytes_waiting(self.transport):
                # The loop runs due timers before it reads: after a pause (a stopped or starved
                # process) a request written meanwhile is in the socket but not yet read.  It is
                # served — the connection was not idle — and the keep-alive wait starts again
                # after its answer (these bytes end it in data_received).
                self._deadline = self._idle_until = self.loop.time() + self.timeout_keep_alive
                self._arm()
                return
            self._deadline = None
            self.transport.close()
            return
        self._deadline = None
        # A head still being read after the last answer ended is a new request: it gets its 408 too
        # (the cycle is the previous one's).  While an answer is still going out, no bytes are added.
        if (self._reading_head and self._response_done) or self.cycle is None or not self.cycle.response_started:
            self.transport.write(_408)
        self.transport.close()

    # bytes in --------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._idle:  # these bytes end the keep-alive wait
            self._idle = False
            self._deadline = self._body_until if self._in_body else None
        if self._reading_head and self._deadline is None:  # a new request on a kept-alive connection
            self._deadline = self.loop.time() + self.head_timeout
        was_head = self._reading_head
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            # served as a plain request (truecall speaks no WebSocket); the parser skipped what
            # followed the head, so the connection ends with this answer
            _logger.warning("Unsupported upgrade request.")
            self._end_after_answer()
        except httptools.HttpParserError:
            _logger.warning("Invalid HTTP request received.")
            self._send_400("Invalid HTTP request received.")
            return
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

    def _end_after_answer(self) -> None:
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            self.transport.close()
            return
        cycle.keep_alive = False
        if cycle.more_body:
            cycle.more_body = False
            cycle.wake()

    def _send_400(self, msg: str) -> None:
        if self._parsed_head > self.max_head_bytes:
            self._refuse_head()  # _HeadTooLarge raised inside a parser callback: answer 431, not 400
            return
        content = [STATUS_LINE[400]]
        for name, value in self.server_state.default_headers:
            content += (name, b": ", value, b"\r\n")
        content += (b"content-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n" % len(msg),
                    b"connection: close\r\n\r\n", msg.encode("ascii"))
        self.transport.write(b"".join(content))
        self.transport.close()

    def _refuse_head(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self.transport.write(_431)
            self.transport.close()

    # httptools callbacks ----------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.url = b""
        self.expect_100_continue = False
        self.headers = []
        self.scope = {"type": "http", "asgi": {"version": self.asgi_version, "spec_version": "2.3"},
                      "http_version": "1.1", "server": self.server, "client": self.client, "scheme": self.scheme,
                      "root_path": self.root_path, "headers": self.headers, "state": self.app_state.copy()}

    def on_url(self, url: bytes) -> None:
        n = self._parsed_head = self._parsed_head + len(url)
        if n > self.max_head_bytes:
            raise _HeadTooLarge()
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        n = self._parsed_head = self._parsed_head + len(name) + len(value) + 4
        if n > self.max_head_bytes:
            raise _HeadTooLarge()
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self.expect_100_continue = True
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._in_body = True
        self._response_done = False
        self._parsed_head = 0
        parser = self.parser
        scope = self.scope
        http_version = parser.get_http_version()
        scope["method"] = parser.get_method().decode("ascii")
        if http_version != "1.1":
            scope["http_version"] = http_version
        target = self.url
        parts = _TARGETS.get(target)
        if parts is None or parts[0] != self.root_path:
            url = httptools.parse_url(target)
            raw_path = url.path
            path = raw_path.decode("ascii")
            if "%" in path:
                path = urllib.parse.unquote(path)
            parts = (self.root_path, self.root_path + path, self.root_path.encode("ascii") + raw_path,
                     url.query or b"")
            if len(_TARGETS) >= 256:  # (a client sending many distinct targets gets no memory, only the parse)
                _TARGETS.clear()
            _TARGETS[target] = parts
        scope["path"] = parts[1]
        scope["raw_path"] = parts[2]
        scope["query_string"] = parts[3]
        app = self.app
        limit = self.limit_concurrency
        if limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit):
            app = _service_unavailable
            _logger.warning("Exceeded concurrency limit.")
        existing = self.cycle
        scope["extensions"] = {}
        cycle = self.cycle = _Cycle(self, scope, http_version != "1.0" and parser.should_keep_alive(),
                                    self.expect_100_continue)
        if existing is None or existing.response_complete:
            self._start(cycle, app)
        else:  # pipelined: answered after the one before it
            self.pause_reading()
            self.pipeline.appendleft((cycle, app))
        # armed by data_received, which this parser callback runs inside
        self._body_until = self._deadline = self.loop.time() + self.body_timeout

    def on_body(self, body: bytes) -> None:
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            return
        cycle.chunks.append(body)
        cycle.size += len(body)
        if cycle.size > HIGH_WATER:
            self.pause_reading()
        cycle.wake()

    def on_message_complete(self) -> None:
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.more_body = False
            cycle.wake()
        self._in_body = False
        if self._response_done:  # answered early (e.g. 413): the next bytes start a new head
            self._next_head()
            self._deadline = self._idle_until if self._idle else None
        else:
            self._deadline = None  # from here on the answer is the application's business

    # requests --------------------------------------------------------------------------------

    def _start(self, cycle: _Cycle, app: ASGIApp) -> None:
        self.answering = cycle
        if self.reset_contextvars:  # uvicorn's opt-in: each request in a fresh context
            task = self.loop.create_task(cycle.run_asgi(app), context=contextvars.Context())
        else:
            task = self.loop.create_task(cycle.run_asgi(app))
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    def on_response_complete(self, cycle: _Cycle) -> None:
        """The cycle's answer is written: the next pipelined request starts, or the keep-alive wait."""
        if cycle is not self.answering:
            return
        self.answering = None
        self._response_done = True
        if not self._in_body:
            self._next_head()
        # else: the rest of this request's body is still arriving; it is body, not a new head
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self.resume_reading()
        if self.pipeline:  # start the next pipelined request
            self._start(*self.pipeline.pop())
        else:
            self._idle = True
            self._idle_until = self.loop.time() + self.timeout_keep_alive
            self._deadline = min(self._idle_until, self._body_until) if self._in_body else self._idle_until
            self._arm()

    def _next_head(self) -> None:
        self._reading_head = True
        self._head_bytes = 0
        self._parsed_head = 0


def _bytes_waiting(transport: asyncio.Transport) -> bool:
    """Whether the connection's socket holds bytes (or its end) not read yet: one ``poll`` of its
    descriptor, asked only when the keep-alive timer fires."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return False
    try:
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return False


def _address(transport: asyncio.Transport, name: str) -> tuple[str, int | None] | None:
    """``(host, port)`` of a socket end (``(path, None)`` for a Unix socket), as uvicorn puts it in the scope."""
    info = transport.get_extra_info(name)
    if isinstance(info, (list, tuple)) and len(info) >= 2:
        return (str(info[0]), int(info[1]))
    if isinstance(info, str):
        return (info, None)
    return None
