"""stdio: newline-delimited JSON-RPC on stdin/stdout; logs go to stderr only.

A thin adapter: it splits lines, hands each message to the engine, and writes
what comes back.  Requests run concurrently (a slow tool or one waiting for the
user does not hold up the others, and pipelined requests are answered as they
finish); ``notifications/cancelled`` cancels the matching request, which then
gets no response.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any, BinaryIO

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
        task = asyncio.get_running_loop().create_task(self._run(message, key))
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


async def serve_stdio(engine: Engine, principal: Principal, *, stdin: BinaryIO | None = None,
                      stdout: BinaryIO | None = None, limits: Limits = DEFAULT_LIMITS,
                      eof_grace: float = EOF_GRACE_S) -> None:
    """Serve until stdin closes."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limits.max_bytes + 1)
    protocol = asyncio.StreamReaderProtocol(reader)
    source = stdin or sys.stdin.buffer
    await loop.connect_read_pipe(lambda: protocol, os.fdopen(os.dup(source.fileno()), "rb", buffering=0))
    conn = StdioConnection(engine, principal, stdout or sys.stdout.buffer, limits=limits)
    engine.server.events.defer(loop)
    conn.start_background()
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as eof:
            if eof.partial:
                conn.receive_line(eof.partial)  # a last line without its newline still counts
            break
        except asyncio.LimitOverrunError:
            # An over-long line: answer it once, then skip to the next newline.
            conn.write(jsonrpc.error_message(None, jsonrpc.InvalidRequest("Message too large")))
            await _skip_line(reader)
            continue
        conn.receive_line(line[:-1])
    await conn.drain(eof_grace)
    engine.server.events.flush()
    conn.flush()


async def _skip_line(reader: asyncio.StreamReader) -> None:
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)
        except asyncio.IncompleteReadError:
            return
