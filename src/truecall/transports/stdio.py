"""stdio: newline-delimited JSON-RPC on stdin/stdout; logs go to stderr only.

A thin adapter: it splits lines, hands each message to the engine, and writes
what comes back (:meth:`Engine.serve`: an answer whose audit records are durable).  What it
must know of a message first — answered in place, a possible task handle, an ``initialize``,
a cancellation — it asks the engine (:meth:`Engine.plan`): it never reads a method name.
Requests run concurrently (a slow tool or one waiting for the user does not hold up the
others, and pipelined requests are answered as they finish); ``notifications/cancelled``
cancels the matching request, which then gets no response.  Order is kept where it is owed:
the lines behind an ``initialize`` wait until it is answered, and a task's status
notification waits for the answer carrying its handle.  stdin may be a pipe, a file, ``/dev/null`` or closed; its end
ends the server once what was read is answered (:meth:`StdioConnection.drain`).
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import os
import stat
import sys
import threading
import types
from typing import Any, BinaryIO, Coroutine, Generator

import orjson

from ..auth._principals import Principal
from ..errors import InternalError, InvalidRequest, ProtocolError
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
        self.session.transport = "stdio"
        self.outbox = _StdoutOutbox(self.write)
        self.session.stream = self.outbox
        self.inflight: dict[Any, asyncio.Task[None]] = {}
        engine.start()  # (once: ``truecall serve`` started it already)
        self._out: list[bytes] = []
        #: The ``initialize`` being served; lines read meanwhile wait in ``_held`` (None: a line too large).
        self._initializing: asyncio.Task[None] | None = None
        self._held: collections.deque[bytes | None] = collections.deque()
        #: Set once the input has ended and the grace for work in flight is over (see drain).
        self._stopping = False
        self._withdrawn: set[Any] = set()  # requests the client cancelled: never answered
        self._flush_scheduled = False
        self._background: set[asyncio.Task[Any]] = set()
        #: The reader of stdout went away (EPIPE) or stdout failed: nothing more can be said.
        self.output_lost = False
        #: Called once when that happens (the server then ends as at the end of its input).
        self.on_output_lost: Any = None

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
            if self.output_lost:
                return
            try:
                self.out.write(data)
                self.out.flush()
            except (OSError, ValueError):  # EPIPE: the client stopped reading; or stdout was closed
                self.output_lost = True
                if self.on_output_lost is not None:
                    self.on_output_lost()

    def receive_line(self, line: bytes) -> None:
        """Handle one line (without its newline); never raises.

        While an ``initialize`` is being served, the lines after it wait (in order) until it has
        been answered: whatever follows a handshake on the stream is served in the session that
        handshake opened, and answered after it.
        """
        if self._initializing is not None:
            self._held.append(line)
            return
        try:
            self._receive_line(line)
        except Exception:  # the last net: one bad line must never end the connection
            self.write(jsonrpc.error_message(None, InternalError()))

    def too_large(self) -> None:
        """A line over the size limit (the reader skips it): answered in its place in the stream."""
        if self._initializing is not None:
            self._held.append(None)
            return
        self.write(jsonrpc.error_message(None, InvalidRequest("Message too large")))

    def _initialized(self, task: asyncio.Task[None] | None = None) -> None:
        """The ``initialize`` was answered: the lines that arrived meanwhile are served now, in
        order (up to the next ``initialize``, which holds the rest again)."""
        self._initializing = None
        held = self._held
        while held and self._initializing is None:
            line = held.popleft()
            if line is None:
                self.too_large()
            else:
                self.receive_line(line)

    def _receive_line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = jsonrpc.decode(line, self.limits)
        except MessageError as exc:
            self.write(jsonrpc.error_message(exc.id, exc))
            return
        plan = self.engine.plan(message)
        if message.kind != jsonrpc.REQUEST:
            if plan.cancels is not None:
                self._cancel(plan.cancels)
            else:
                self.engine.notify(message, self.session)
            return
        key = (type(message.id), message.id)
        if key in self.inflight:
            self.write(jsonrpc.error_message(message.id, InvalidRequest("Duplicate request id in flight")))
            return
        # (a call that may answer with a task handle holds the session's task notes until it is written)
        coro = self._run(message, key, plan.may_be_task)
        context = contextvars.copy_context()
        if plan.at_once:
            # The call usually completes without waiting for anything (its records may wait for a
            # commit), so its first step runs right here; only if it does wait does it become a task.
            try:
                waiting = context.run(coro.send, None)
            except StopIteration:
                return
            coro = _resume(coro, waiting)  # type: ignore[assignment]  # a generator a task drives as a coroutine
        task = asyncio.get_running_loop().create_task(coro, context=context)
        self.inflight[key] = task
        if plan.opens_session:
            self._initializing = task
            task.add_done_callback(self._initialized)
        # A task cancelled before it ever ran skips _run's cleanup: forget it here too.
        task.add_done_callback(lambda t: self.inflight.pop(key, None) if self.inflight.get(key) is t else None)

    async def _run(self, message: jsonrpc.Incoming, key: Any, handle: bool = False) -> None:
        if handle:  # its answer may be a task handle: no status of that task goes out before it
            self.session.hold_task_notes()
        response = None
        try:
            try:
                # (written as it comes: serve returns once its audit records are durable)
                response, _ = await self.engine.serve(message, self.principal, session=self.session,
                                                      outbox=self.outbox)
            except asyncio.CancelledError:
                if not self._stopping or key in self._withdrawn:
                    return  # cancelled by the client (even if its cancellation outlived the input): no response
                response = jsonrpc.error_message(message.id, _Stopped())
            except Exception:  # the engine already turns faults into errors; this is the last net
                response = jsonrpc.error_message(message.id, ProtocolError())
            finally:
                self.inflight.pop(key, None)
            if response is not None:
                self.write(response)
        finally:
            if handle:
                self.session.release_task_notes(response)

    def _cancel(self, request_id: str | int) -> None:
        """``notifications/cancelled`` withdrew ``request_id``: no answer, even if it still finishes.
        (The engine judged the id; one no request could have is ignored before this.)"""
        key = (type(request_id), request_id)
        task = self.inflight.get(key)
        if task is not None:
            self._withdrawn.add(key)  # no answer, even if the input ends before the cancellation lands
            task.add_done_callback(lambda _: self._withdrawn.discard(key))
            task.cancel()

    def start_background(self) -> None:
        task = asyncio.get_running_loop().create_task(self.engine.session_feed(self.session))
        self._background.add(task)

    async def drain(self, timeout: float = 30.0) -> None:
        """The input has ended: answer what was read, then stop everything.

        What "answered" means for work in flight at the end of the input:

        - every request read is answered exactly once, unless the client cancelled it
          (``notifications/cancelled``: no answer, as always);
        - server-to-client requests still waiting (elicitation) fail at once: nobody can answer
          them now, and the tool says so in its result like any other "could not ask";
        - requests and accepted tasks get ``timeout`` seconds to finish as usual; then what still
          runs is cancelled: a request is answered with an error saying the server stopped before
          it finished and that whether it took effect is unknown (its audit record says
          ``tool.cancelled``); a task (its handle was acknowledged) is settled by the task
          runtime's cancellation rules and stays readable in the task store, its settlement
          audited, its status notification written if the session still listens;
        - the audit records of all of it are committed before the process exits.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        self.session.hang_up()
        runtime = self.engine.server.task_runtime
        while True:
            await asyncio.sleep(0)  # held lines replay on their initialize's callback
            pending: list[asyncio.Future[Any]] = [t for t in self.inflight.values() if not t.done()]
            pending += [t for t in runtime.running.values() if not t.done()]
            pending += [w for w in runtime.settling.values() if not w.done()]  # (outcomes written off the loop)
            left = deadline - loop.time()
            if not pending or left <= 0:
                if not self._held or left <= 0:
                    break
                continue
            await asyncio.wait(pending, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        self._stopping = True
        while self._held:  # (an initialize that outlived the grace) still answered, as stopped
            self._initialized()
        await asyncio.sleep(0)  # every request's task has started: its _run answers its cancellation
        stopping = [t for t in self.inflight.values() if not t.done()]
        stopping += [t for t in runtime.running.values() if not t.done()]
        for task in stopping:
            task.cancel()
        if stopping:  # let them answer and record their cancellation before the last commit
            await asyncio.wait(stopping, timeout=1.0)
        writing = [w for w in runtime.settling.values() if not w.done()]
        if writing:  # their outcomes, written off the loop
            await asyncio.wait(writing, timeout=1.0)
        for _ in range(3):  # settlements publish changes: the session feed writes their status
            await asyncio.sleep(0)
        for task in self._background:
            task.cancel()
        if self._background:
            await asyncio.wait(self._background, timeout=1.0)
        self.session.close()


class _Stopped(InternalError):
    default_message = ("The server stopped (its input ended) before this request finished; "
                       "whether it took effect is unknown")


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
        self.conn.too_large()

    def eof_received(self) -> bool:
        if self.buffer and not self.skipping:  # a last line without its newline still counts
            line, self.buffer = bytes(self.buffer), bytearray()
            self.conn.receive_line(line)
        if not self.closed.done():
            self.closed.set_result(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving as if the input had ended (nobody can hear the answers any more)."""
        if not self.closed.done():
            self.closed.set_result(None)


def _is_pipe(fd: int) -> bool:
    """Whether ``fd`` is a pipe or a socket: what the loop's pipe transport can watch.

    Anything else (a regular file, ``/dev/null``, a terminal) is read by :class:`_ThreadReader`:
    uvloop aborts the whole process on ``connect_read_pipe`` of a regular file or ``/dev/null``
    (asyncio raises), so it is never asked to."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _ThreadReader:
    """stdin that is not a pipe: blocking reads on a daemon thread, each chunk handed to the loop
    and taken in before the next read (a large file is not read ahead of the server).  A daemon,
    so a terminal nobody types into never holds up the exit."""

    def __init__(self, fd: int, reader: _LineReader, loop: asyncio.AbstractEventLoop) -> None:
        self.fd, self.reader, self.loop = fd, reader, loop
        self.thread = threading.Thread(target=self._run, name="truecall-stdin", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        taken = threading.Event()

        def hand_over(data: bytes) -> None:
            try:
                self.reader.data_received(data)
            finally:
                taken.set()

        try:
            while not self.reader.closed.done():
                try:
                    data = os.read(self.fd, _READ_SIZE)
                except InterruptedError:
                    continue
                except OSError:  # unreadable (EBADF, EIO of a terminal gone): the same as its end
                    break
                if not data:
                    break
                taken.clear()
                self.loop.call_soon_threadsafe(hand_over, data)
                taken.wait()
            self.loop.call_soon_threadsafe(self.reader.eof_received)
        except RuntimeError:  # the loop is closed: the server has ended anyway
            pass
        finally:
            os.close(self.fd)

    def close(self) -> None:
        pass  # the thread ends at the input's end (or with the process: it is a daemon)


_READ_SIZE = 256 * 1024


class _NoOutput:
    """stdout closed (``>&-``): answers have nowhere to go and are dropped."""

    def write(self, data: bytes) -> int:
        return len(data)

    def flush(self) -> None:
        pass


def _fileno(stream: Any) -> int | None:
    if stream is None:
        return None
    try:
        fd = stream.fileno()
        os.fstat(fd)
    except (AttributeError, ValueError, OSError):  # closed, detached, or not a real descriptor
        return None
    return int(fd)


async def serve_stdio(engine: Engine, principal: Principal, *, stdin: BinaryIO | None = None,
                      stdout: BinaryIO | None = None, limits: Limits = DEFAULT_LIMITS,
                      eof_grace: float = EOF_GRACE_S) -> None:
    """Serve until stdin ends.

    stdin may be anything: a pipe or socket (watched by the loop), a regular file, ``/dev/null``
    or a terminal (read on a thread), or closed (Python then has no ``sys.stdin``: no input at
    all).  Its end is the end of the input, however it comes: see :meth:`StdioConnection.drain`
    for what is still answered.  stdout may be a pipe, a file, or closed (answers are dropped).
    """
    loop = asyncio.get_running_loop()
    source = stdin if stdin is not None else getattr(sys.stdin, "buffer", None)
    sink: Any = stdout if stdout is not None else getattr(sys.stdout, "buffer", None)
    if _fileno(sink) is None and stdout is None:
        sink = _NoOutput()
    conn = StdioConnection(engine, principal, sink, limits=limits)
    engine.attach(loop)
    conn.start_background()
    reader = _LineReader(conn, limits.max_bytes)
    conn.on_output_lost = reader.stop
    fd = _fileno(source)
    transport: Any = None
    if fd is None:
        reader.eof_received()  # no stdin at all: an input that is over before it began
    elif _is_pipe(fd):
        transport, _ = await loop.connect_read_pipe(lambda: reader, os.fdopen(os.dup(fd), "rb", buffering=0))
    else:
        transport = _ThreadReader(os.dup(fd), reader, loop)
    try:
        await reader.closed
    finally:
        if transport is not None:
            transport.close()
    await conn.drain(eof_grace)
    engine.flush()
    conn.flush()
