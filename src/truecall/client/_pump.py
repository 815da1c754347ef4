"""The I/O pump around the sans-IO core: bytes in, futures resolved, queued messages out.

:class:`~._connection.ClientConnection` decides what the protocol means and owns no
clock and no task; a :class:`~._transport.Transport` moves bytes and owns no protocol.
Between them something must run on the event loop: hand received bytes to the
connection, resolve the future of the request an answer belongs to, route the server's
notifications (progress to the call that asked for it, task changes to whoever waits on
that task), answer the server's own requests, and flush what the connection queued.
That is this module, and nothing more — the tool semantics (judging, tasks, listings)
live above it, so the rule "one answer resolves one waiter, a lost connection resolves
them all" has a single owner.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Callable, Protocol

from ..errors import ProtocolError
from ._answers import Answering, answer
from ._connection import (ClientConnection, ErrorResponse, Negotiated, NegotiationFailed, Response, ServerNotification,
                          ServerRequest)
from ._errors import ConnectionLost, NotSent, from_wire
from ._transport import Transport, hooks_of

__all__ = ["Session", "Settings", "TimedOut", "ProgressHandler", "LogHandler", "NotificationHandler"]

log = logging.getLogger("truecall.client")

ProgressHandler = Callable[[float, "float | None", "str | None"], Any]
LogHandler = Callable[[str, Any, "str | None"], Any]
NotificationHandler = Callable[[str, dict[str, Any]], Any]


class TimedOut(Exception):
    """No answer within the limit; ``args[0]`` is the request id (the request was sent)."""


class Settings(Answering, Protocol):
    """What the pump reads from its owner (the public :class:`~truecall.client.Client`), at use
    time: the caller may change a handler or a timeout on the client after it is built."""

    on_log: LogHandler | None
    on_notification: NotificationHandler | None
    timeout: float | None
    discover_timeout: float


class Session:
    """One open connection's event-loop side: request correlation, notifications, server requests."""

    def __init__(self, conn: ClientConnection, transport: Transport, settings: Settings, *,
                 on_tools_changed: Callable[[], None]) -> None:
        self.conn = conn
        self.transport = transport
        self.hooks = hooks_of(transport)
        self.settings = settings
        self.on_tools_changed = on_tools_changed
        #: progress token → the handler of the call that asked for it
        self.progress: dict[Any, ProgressHandler] = {}
        #: task id → woken by that task's status notification (the waiter polls, this only hurries it)
        self.task_wakeups: dict[str, asyncio.Event] = {}
        self.opened = False
        self._waiting: dict[Any, asyncio.Future[tuple[str, Any]]] = {}
        self._negotiated: asyncio.Future[Negotiated] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._dead: str | None = None

    @property
    def dead(self) -> str | None:
        """Why the connection ended (``"server_exited"``, ...), or None while it lasts."""
        return self._dead

    # -- lifecycle ---------------------------------------------------------------------------

    async def open(self, param_headers: Callable[[str, Any], dict[str, str]]) -> None:
        """Open the transport and negotiate (``server/discover``, else the handshake); closes on failure."""
        loop = asyncio.get_running_loop()
        self._negotiated = loop.create_future()
        await self.transport.open(self._on_data, self._on_lost)
        self.opened = True
        try:
            self.conn.start()
            await self.flush()
            try:
                await asyncio.wait_for(asyncio.shield(self._negotiated), self.settings.discover_timeout)
            except TimeoutError:
                if self.conn.state.value != "discovering":
                    raise
                self.conn.fall_back()  # a server that ignores server/discover: the handshake era
                await self.flush()
                await asyncio.wait_for(asyncio.shield(self._negotiated), self.settings.timeout)
            negotiated = self._negotiated.result()
            if negotiated.era == "legacy":
                await self.hooks.listen()
                if self.conn.log_level is not None and "logging" in self.conn.server_capabilities:
                    await self.rpc("logging/setLevel", {"level": self.conn.log_level})
            self.hooks.use_param_headers(param_headers)
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        if not self.opened:
            return
        self.opened = False
        for task in list(self._background):
            task.cancel()
        if self.conn.state.value != "closed":
            self.conn.close()
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_result(("lost", "connection_lost"))
        await self.transport.aclose()

    # -- the pump ------------------------------------------------------------------------------

    async def flush(self) -> None:
        """Send what the connection queued; a message that cannot leave resolves its waiter as not sent."""
        for message in self.conn.data_to_send():
            try:
                if self._dead is not None:
                    raise NotSent(f"the connection is closed ({self._dead})")
                await self.transport.send(message)
            except NotSent:
                rid = message.get("id") if "method" in message else None
                fut = self._waiting.get(rid)
                if fut is not None and not fut.done():
                    fut.set_result(("lost", "not_sent"))
                elif message.get("method") in ("server/discover", "initialize") and self._negotiated is not None \
                        and not self._negotiated.done():
                    self._negotiated.set_exception(NotSent("could not reach the server"))

    def _kick(self) -> None:
        task = asyncio.get_running_loop().create_task(self.flush())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _on_data(self, data: bytes) -> None:
        for event in self.conn.receive_data(data):
            if isinstance(event, (Response, ErrorResponse)):
                fut = self._waiting.get(event.id)
                if fut is not None and not fut.done():
                    fut.set_result(("result", event.result) if isinstance(event, Response) else ("error", event.error))
            elif isinstance(event, ServerNotification):
                self._notification(event)
            elif isinstance(event, ServerRequest):
                self.spawn(self._serve_request(event))
            elif isinstance(event, Negotiated):
                self.hooks.agreed(event.version, event.era)  # before the initialized notification goes out
                if self._negotiated is not None and not self._negotiated.done():
                    self._negotiated.set_result(event)
            elif isinstance(event, NegotiationFailed):
                if self._negotiated is not None and not self._negotiated.done():
                    self._negotiated.set_exception(event.error)
        self._kick()  # a fall-back initialize, the initialized notification, answers to the server

    def _on_lost(self, reason: str, request_id: Any) -> None:
        if request_id is None:
            self._dead = reason
            for fut in self._waiting.values():
                if not fut.done():
                    fut.set_result(("lost", reason))
            if self._negotiated is not None and not self._negotiated.done():
                self._negotiated.set_exception(ConnectionLost(f"the server went away ({reason})"))
            return
        waiter = self._waiting.get(request_id)
        if waiter is not None and not waiter.done():
            waiter.set_result(("lost", reason))
        elif request_id in self.conn.pending and self.conn.pending[request_id] in ("server/discover", "initialize"):
            self.conn.forget(request_id)
            if self._negotiated is not None and not self._negotiated.done():
                exc: Exception = NotSent("could not reach the server") if reason == "not_sent" else \
                    ConnectionLost("the server closed the connection during negotiation")
                self._negotiated.set_exception(exc)

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        """Run ``coro`` in the background; cancelled when the session closes."""
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # -- requests ----------------------------------------------------------------------------

    async def send(self, method: str, params: dict[str, Any] | None, *, meta: dict[str, Any] | None = None,
                   timeout: float | None | str = "default") -> tuple[Any, str, Any]:
        """Send one request and wait: (id, "result" | "error" | "lost", value); raises TimedOut(id)."""
        if not self.opened:
            raise RuntimeError("the client is not open: use 'async with Client(...)'")
        rid = self.conn.send_request(method, params, meta=meta)
        fut: asyncio.Future[tuple[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = fut
        try:
            await self.flush()
            limit = self.settings.timeout if isinstance(timeout, str) else timeout  # "default"
            try:
                kind, value = await asyncio.wait_for(asyncio.shield(fut), limit)
            except TimeoutError:
                self.conn.forget(rid)
                await self.transport.cancel(rid)
                raise TimedOut(rid) from None
            except asyncio.CancelledError:
                if self.conn.forget(rid) is not None:
                    try:
                        await asyncio.shield(self.transport.cancel(rid))
                    except Exception:
                        pass
                raise
        finally:
            self._waiting.pop(rid, None)
        if kind == "lost":
            self.conn.forget(rid)
        return rid, kind, value

    async def rpc(self, method: str, params: dict[str, Any] | None = None, *,
                  timeout: float | None | str = "default") -> dict[str, Any]:
        """A request whose answer is a result or a typed exception."""
        try:
            rid, kind, value = await self.send(method, params, timeout=timeout)
        except TimedOut:
            raise TimeoutError(f"{method}: no answer in time") from None
        if kind == "error":
            raise from_wire(value, method=method)
        if kind == "lost":
            if value == "not_sent":
                raise NotSent(f"{method}: the request could not be sent")
            raise ConnectionLost(f"{method}: the connection was lost before an answer ({value})", value)
        result: dict[str, Any] = value  # a JSON-RPC result is an object (the connection checked it)
        return result

    # -- from the server -------------------------------------------------------------------------

    def _notification(self, event: ServerNotification) -> None:
        method, params = event.method, event.params
        if method == "notifications/progress":
            handler = self.progress.get(params.get("progressToken"))
            if handler is not None:
                self._callback(handler, params.get("progress"), params.get("total"), params.get("message"))
            return
        if method == "notifications/message":
            on_log = self.settings.on_log
            if on_log is not None:
                self._callback(on_log, params.get("level"), params.get("data"), params.get("logger"))
            return
        if method in ("notifications/tasks/status", "notifications/tasks"):
            task_id = params.get("taskId")
            wake = self.task_wakeups.get(task_id) if isinstance(task_id, str) else None
            if wake is not None:
                wake.set()
        if method == "notifications/tools/list_changed":
            self.on_tools_changed()
        on_notification = self.settings.on_notification
        if on_notification is not None:
            self._callback(on_notification, method, params)

    def _callback(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            result = fn(*args)
        except Exception:
            log.exception("a client callback failed")
            return
        if inspect.isawaitable(result):
            self.spawn(result)

    async def _serve_request(self, event: ServerRequest) -> None:
        try:
            result = await answer(self.settings, event.method, event.params)
        except ProtocolError as exc:
            self.conn.send_error(event.id, exc)
        except Exception:
            log.exception("answering the server's %s failed", event.method[:100])
            self.conn.send_error(event.id, ProtocolError("The client could not answer"))
        else:
            self.conn.send_response(event.id, result)
        await self.flush()
