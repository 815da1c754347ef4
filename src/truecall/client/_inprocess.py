"""In-process: a :class:`~truecall.Server` in this process, no I/O.

Messages still go through JSON (encoded and decoded on both sides), so what a test
sees is what a wire would carry; the server runs its real engine, audit included
(an answer is delivered after its audit records are durable, as over stdio).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..auth._principals import Principal
from ..protocol import jsonrpc
from ..protocol.jsonrpc import MessageError
from ._transport import Lost, Receive, TransportHooks

__all__ = ["InProcessTransport"]


class _Outbox:
    __slots__ = ("deliver",)

    def __init__(self, deliver: Any) -> None:
        self.deliver = deliver

    async def send(self, message: dict[str, Any]) -> None:
        self.deliver(jsonrpc.encode(message))


class InProcessTransport(TransportHooks):
    def __init__(self, server: Any, token: str | None = None, principal: Principal | None = None) -> None:
        from ..protocol.engine import Engine, Session

        self.server = server
        self.token = token
        self.principal = principal
        # Another engine may already serve this Server (tests, a bench): never settle its tasks.
        self.engine = Engine(server).start(recover=False)
        self.session = Session()
        self._inflight: dict[Any, asyncio.Task[None]] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._receive: Receive | None = None
        self._lifespan_owner = False  # this client entered the app's lifespan (and leaves it)

    async def open(self, receive: Receive, lost: Lost) -> None:
        self._receive = receive
        principal = self.principal
        if principal is None:
            if self.token is not None:
                principal = self.server.authenticate(self.token)
            else:
                principal = self.server.local_principal or self.server.local_user()  # as over stdio
        self.principal = principal
        self.session.principal = principal
        self.outbox = _Outbox(receive)
        self.session.stream = self.outbox
        # The app's lifespan (Server(lifespan=...)) runs while a client is connected, as while served.
        self._lifespan_owner = await self.server.start_lifespan()
        # Audit records are committed as they are made (no defer(): that binds the server's log to
        # this loop, and the Server outlives the client in tests and may be used synchronously after).
        self._spawn(self.engine.session_feed(self.session))

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def send(self, message: dict[str, Any]) -> None:
        try:
            incoming = jsonrpc.decode(jsonrpc.encode(message))
        except MessageError as exc:
            assert self._receive is not None
            self._receive(jsonrpc.encode(jsonrpc.error_message(exc.id, exc)))
            return
        if incoming.kind != jsonrpc.REQUEST:
            cancels = self.engine.plan(incoming).cancels  # (notifications/cancelled: the request it withdraws)
            if cancels is not None:
                task = self._inflight.get(cancels)
                if task is not None:
                    task.cancel()
                return
            self.engine.notify(incoming, self.session)  # (a response answers a server-to-client request)
            return
        task = self._spawn(self._serve(incoming))
        self._inflight[incoming.id] = task
        task.add_done_callback(lambda _: self._inflight.pop(incoming.id, None))

    async def _serve(self, incoming: jsonrpc.Incoming) -> None:
        assert self._receive is not None and self.principal is not None
        try:
            # (written as it comes: serve returns once its audit records are durable)
            response, _ = await self.engine.serve(incoming, self.principal, session=self.session,
                                                  outbox=self.outbox)
        except asyncio.CancelledError:
            return
        if response is not None:
            self._receive(jsonrpc.encode(response))

    async def cancel(self, request_id: Any) -> None:
        task = self._inflight.get(request_id)
        if task is not None:
            task.cancel()

    async def aclose(self) -> None:
        tasks = list(self._background)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)
        if self._lifespan_owner:
            self._lifespan_owner = False
            await self.server.stop_lifespan()
        self.session.close()
