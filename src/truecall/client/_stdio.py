"""stdio: the server is a child process; newline-delimited JSON on its stdin/stdout.

The child's stderr is its log and is left alone (inherited) unless told otherwise.
When its stdout ends (it exited, or was killed) every unanswered request is lost:
the client turns a lost ``tools/call`` into :class:`~truecall.client.Unknown`.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Mapping, Sequence



from ..protocol import jsonrpc
from ._errors import NotSent
from ._transport import Lost, Receive, TransportHooks

__all__ = ["StdioTransport"]

#: One line from the server may be this long (a big resource); longer ones end the connection.
LINE_LIMIT = 64 * 1024 * 1024


class StdioTransport(TransportHooks):
    def __init__(self, command: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
                 stderr: Any = None, close_timeout: float = 3.0) -> None:
        if not command or not all(isinstance(c, str) for c in command):
            raise ValueError("a stdio server is a non-empty command line: a list of strings")
        self.command = list(command)
        self.env = {**os.environ, **env} if env is not None else None
        self.cwd = cwd
        self.stderr = stderr
        self.close_timeout = close_timeout
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    async def open(self, receive: Receive, lost: Lost) -> None:
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=self.stderr,
                env=self.env, cwd=self.cwd, limit=LINE_LIMIT)
        except OSError as exc:
            raise NotSent(f"could not start the server: {exc.strerror or exc}") from None
        self._reader = asyncio.get_running_loop().create_task(self._read(receive, lost))

    async def _read(self, receive: Receive, lost: Lost) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        try:
            while True:
                line = await stdout.readline()
                if not line:
                    break
                if line.strip():
                    receive(line)
        except (ValueError, ConnectionError):  # an over-long line, or the pipe broke
            pass
        if not self._closing:
            lost("server_exited", None)

    async def send(self, message: dict[str, Any]) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.returncode is not None or proc.stdin.is_closing():
            raise NotSent("the server process is not running")
        try:
            proc.stdin.write(jsonrpc.encode(message) + b"\n")
            await proc.stdin.drain()
        except (ConnectionError, BrokenPipeError) as exc:
            raise NotSent(f"the server process is not reading: {exc}") from None

    async def cancel(self, request_id: Any) -> None:
        try:
            await self.send(jsonrpc.notification("notifications/cancelled",
                                                 {"requestId": request_id, "reason": "the client stopped waiting"}))
        except NotSent:
            pass

    async def aclose(self) -> None:
        self._closing = True
        proc = self.proc
        if proc is None:
            return
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()  # the spec's shutdown: close stdin, wait, then SIGTERM, then SIGKILL
        for step in (None, "terminate", "kill"):
            if proc.returncode is not None:
                break
            if step is not None:
                try:
                    getattr(proc, step)()
                except ProcessLookupError:
                    break
            try:
                await asyncio.wait_for(proc.wait(), self.close_timeout)
            except TimeoutError:
                continue
        if self._reader is not None:
            self._reader.cancel()
            try:
                await self._reader
            except (asyncio.CancelledError, Exception):
                pass


