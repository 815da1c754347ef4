"""stdio: newline-delimited JSON-RPC on stdin/stdout; logs go to stderr only.

A thin adapter: it splits lines, hands each message to the engine, and writes
what comes back.  Requests run concurrently (a slow tool or one waiting for the
user does not hold up the others, and pipelined requests are answered as they
finish); ``notifications/cancelled`` cancels the matching request, which then
gets no response.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import sys
import types
from typing import Any, BinaryIO, Coroutine, Generator

import orjson

from ..auth import Principal
from ..errors import InternalError
from ..protocol import jsonrpc
from ..protocol.engine import Engine, Session
from ..protocol.jsonrpc import DEFAULT_LIMITS, Limits, MessageError

__all__ = ["serve_stdio", "StdioConnection", "EOF_GRACE_S"]

#: After stdin closes, in-flight requests get this long to finish (their answers are still
#: written); then they are cancelled and the server exits, as the client expects it to.
EOF_GRACE_S = 2.0


class _StdoutOutbox:
    __slots__ = ("_write",)

    def __init__(self, write: Any) -> None:
        self._write = write

    async def send(self, message: dict[str, Any]) -> None:
        self._write(message)


class StdioConnection:
    """One stdio peer: reads ``reader``, writes newline-delimited JSON to ``out``."""

    def __init__(self, engine: Engine, principal: Principal, out: BinaryIO, *, limits: Limits = DEFAULT_LIMITS) -> None:
        self.engine = engine
        self.principal = principal
        self.out = out
        self.limits = limits
        self.session = Session(principal=principal)
        self.outbox = _StdoutOutbox(self.write)
        self.session.stream = self.outbox
        self.inflight: dict[Any, asyncio.Task[None]] = {}
        self.audit = engine.server.events
        self._registry = engine.server.registry
        self._out: list[bytes] = []
        self._initializing: asyncio.Task[None] | None = None
        self._flush_scheduled = False
        self._background: set[asyncio.Task[Any]] = set()

    def write(self, message: dict[str, Any]) -> None:
        """Queue one message; everything queued in a loop turn goes out in one write."""
        self._out.append(jsonrpc.encode(message) + b"\n")
        if not self._flush_scheduled:
            self._flush_scheduled = True
            try:
                asyncio.get_running_loop().call_soon(self.flush)
            except RuntimeError:
                self.flush()

    def flush(self) -> None:
        self._flush_scheduled = False
        if self._out:
            data = b"".join(self._out)
            self._out.clear()
            self.out.write(data)
            self.out.flush()

    def receive_line(self, line: bytes) -> None:
        """Handle one line (without its newline); never raises."""
        try:
            self._receive_line(line)
        except Exception:  # the last net: one bad line must never end the connection
            self.write(jsonrpc.error_message(None, InternalError()))

    def _receive_line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = jsonrpc.decode(line, self.limits)
        except MessageError as exc:
            self.write(jsonrpc.error_message(exc.id, exc))
            return
        if message.kind == jsonrpc.NOTIFICATION:
            if message.method == "notifications/cancelled":
                self._cancel(message.params or {})
                return
            if message.method == "notifications/initialized" and self._initializing is not None:
                # Pipelined right behind initialize: apply it once initialize has run.
                self._initializing.add_done_callback(lambda _: self.engine._notification(message, self.session))
                return
            self.engine._notification(message, self.session)
            return
        if message.kind == jsonrpc.RESPONSE:
            self.session.resolve(message)
            return
        key = (type(message.id), message.id)
        if key in self.inflight:
            self.write(jsonrpc.error_message(message.id, jsonrpc.InvalidRequest("Duplicate request id in flight")))
            return
        eager = message.method == "tools/call" and self._registry.answers_at_once(message.params)
        coro = self._run(message, key)
        context = contextvars.copy_context()
        if eager:
            # The call usually completes without waiting for anything (its records may wait for a
            # commit), so its first step runs right here; only if it does wait does it become a task.
            try:
                waiting = context.run(coro.send, None)
            except StopIteration:
                return
            coro = _resume(coro, waiting)
        task = asyncio.get_running_loop().create_task(coro, context=context)
        self.inflight[key] = task
        if message.method == "initialize":
            self._initializing = task
            task.add_done_callback(lambda _: setattr(self, "_initializing", None))
        # A task cancelled before it ever ran skips _run's cleanup: forget it here too.
        task.add_done_callback(lambda t: self.inflight.pop(key, None) if self.inflight.get(key) is t else None)

    async def _run(self, message: jsonrpc.Incoming, key: Any) -> None:
        try:
            response = await self.engine.handle(message, self.principal, session=self.session, outbox=self.outbox)
            try:
                await self.audit.durable()  # nothing is acknowledged before its audit record is committed
            except Exception:
                response = jsonrpc.error_message(message.id, InternalError())
        except asyncio.CancelledError:
            return  # cancelled by the client: no response follows
        except Exception:  # the engine already turns faults into errors; this is the last net
            response = jsonrpc.error_message(message.id, jsonrpc.ProtocolError())
        finally:
            self.inflight.pop(key, None)
        if response is not None:
            self.write(response)

    def _cancel(self, params: dict[str, Any]) -> None:
        request_id = params.get("requestId")
        if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
            return  # not an id we could have issued: invalid cancellations are ignored
        task = self.inflight.get((type(request_id), request_id))
        if task is not None:
            task.cancel()

    def start_background(self) -> None:
        task = asyncio.get_running_loop().create_task(self.engine.session_feed(self.session))
        self._background.add(task)

    async def drain(self, timeout: float = 30.0) -> None:
        """Let in-flight requests finish (up to ``timeout``), then stop everything."""
        pending = [t for t in self.inflight.values() if not t.done()]
        if pending:
            done, still = await asyncio.wait(pending, timeout=timeout)
            for task in still:
                task.cancel()
        stopping = list(self.inflight.values()) + list(self._background)
        for task in stopping:
            task.cancel()
        if stopping:  # let them record their cancellation before the last commit
            await asyncio.wait(stopping, timeout=1.0)
        self.session.close()


@types.coroutine
def _resume(coro: Coroutine[Any, Any, Any], waiting: Any) -> Generator[Any, Any, Any]:
    """Go on driving ``coro``, whose first step already ran outside any task and stopped at
    ``waiting`` (the future it awaits): handed to a task, this yields that future again, so the
    task waits for it, then passes results, exceptions and cancellation through."""
    while True:
        try:
            value = yield waiting
        except BaseException as exc:
            try:
                waiting = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                waiting = coro.send(value)
            except StopIteration as stop:
                return stop.value


class _LineReader(asyncio.Protocol):
    """Splits stdin into lines and hands each to the connection as it arrives: no stream
    reader, no future and no task switch per message.  A line longer than the limit is
    answered once ("Message too large") and skipped up to its newline."""

    def __init__(self, conn: StdioConnection, limit: int) -> None:
        self.conn = conn
        self.limit = limit
        self.buffer = bytearray()
        self.skipping = False  # inside an over-long line: drop bytes up to the next newline
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        if self.skipping:
            end = data.find(b"\n")
            if end < 0:
                return
            self.skipping = False
            data = data[end + 1:]
        if buffer:
            buffer += data
            data = bytes(buffer)
            buffer.clear()
        start = 0
        receive = self.conn.receive_line
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if end - start > self.limit:
                self._too_large()
            else:
                receive(data[start:end])
            start = end + 1
        if len(data) - start > self.limit:  # an over-long line still arriving
            self._too_large()
            self.skipping = True
        elif start < len(data):
            buffer += data[start:]

    def _too_large(self) -> None:
        self.conn.write(jsonrpc.error_message(None, jsonrpc.InvalidRequest("Message too large")))

    def eof_received(self) -> bool:
        if self.buffer and not self.skipping:  # a last line without its newline still counts
            line, self.buffer = bytes(self.buffer), bytearray()
            self.conn.receive_line(line)
        if not self.closed.done():
            self.closed.set_result(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


async def serve_stdio(engine: Engine, principal: Principal, *, stdin: BinaryIO | None = None,
                      stdout: BinaryIO | None = None, limits: Limits = DEFAULT_LIMITS,
                      eof_grace: float = EOF_GRACE_S) -> None:
    """Serve until stdin closes."""
    loop = asyncio.get_running_loop()
    source = stdin or sys.stdin.buffer
    conn = StdioConnection(engine, principal, stdout or sys.stdout.buffer, limits=limits)
    engine.server.events.defer(loop)
    conn.start_background()
    reader = _LineReader(conn, limits.max_bytes)
    transport, _ = await loop.connect_read_pipe(lambda: reader, os.fdopen(os.dup(source.fileno()), "rb", buffering=0))
    try:
        await reader.closed
    finally:
        transport.close()
    await conn.drain(eof_grace)
    engine.server.events.flush()
    conn.flush()
