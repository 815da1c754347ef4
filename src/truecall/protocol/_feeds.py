"""Change notifications: ``subscriptions/listen`` (2026-07-28) and a handshake-era session's feed.

Both read the server's change feed (:mod:`truecall.server._changes`: tools, prompts, resources, tasks)
and forward what the client asked for: a listen stream what its request named, a session
what it subscribed to (resources), the lists, and — where the version has core tasks — the
status of its principal's tasks, never before the handle of a task was written.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..server._policy import may_read
from ..errors import InvalidParams, NotFound
from ..storage import off_loop_result
from . import jsonrpc
from ._session import Session
from ._session_state import SessionState
from ._task_methods import has_tasks_extension, tasks_capability_error
from ._taskwire import core_task, ext_detailed
from .versions import META_SUBSCRIPTION, features_of

if TYPE_CHECKING:
    from ..server._server import Server
    from ._request_context import RequestContext

__all__ = ["Feeds"]


class Feeds:
    def __init__(self, server: Server) -> None:
        self.server = server
        #: How often a listen stream re-reads the tasks it watches (changes made by other replicas).
        self.task_poll_s = 1.0

    async def listen(self, ctx: RequestContext) -> dict[str, Any]:
        """``subscriptions/listen``: ack, then the requested change notifications until cancelled."""
        wanted = ctx.params.get("notifications")
        if not isinstance(wanted, dict):
            raise InvalidParams("notifications must be an object")
        honored: dict[str, Any] = {}
        for flag in ("toolsListChanged", "promptsListChanged", "resourcesListChanged"):
            if wanted.get(flag) is True:
                honored[flag] = True
        uris = wanted.get("resourceSubscriptions")
        if uris is not None:
            if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris) or len(uris) > 1000:
                raise InvalidParams("resourceSubscriptions must be a list of URIs")
            honored["resourceSubscriptions"] = uris
        task_ids = wanted.get("taskIds")
        if task_ids is not None:
            if not has_tasks_extension(ctx.caps):
                raise tasks_capability_error()
            if not isinstance(task_ids, list) or not all(isinstance(t, str) for t in task_ids) or len(task_ids) > 1000:
                raise InvalidParams("taskIds must be a list of task ids")
            honored["taskIds"] = task_ids
        watched_tasks = set(task_ids or ())
        sub_meta = {META_SUBSCRIPTION: ctx.id}
        feed = self.server.changes
        queue = feed.listen()
        try:
            await ctx.outbox.send(jsonrpc.notification("notifications/subscriptions/acknowledged",
                                                       {"_meta": sub_meta, "notifications": honored}))
            watched = set(honored.get("resourceSubscriptions", ()))
            last_update: dict[str, float] = {}
            while True:
                if watched_tasks:
                    # Tasks may change in another process (replicas share the database):
                    # look at them now and then, not only when this process announces a change.
                    try:
                        kind, value = await asyncio.wait_for(queue.get(), timeout=self.task_poll_s)
                    except TimeoutError:
                        for task_id in watched_tasks:
                            await self._notify_task(ctx, task_id, sub_meta, last_update)
                        continue
                else:
                    kind, value = await queue.get()
                if kind == "task":
                    if value in watched_tasks:
                        await self._notify_task(ctx, value, sub_meta, last_update)
                elif kind == "resource":
                    if value in watched and may_read(self.server, ctx.principal, value):
                        await ctx.outbox.send(jsonrpc.notification(
                            "notifications/resources/updated", {"_meta": sub_meta, "uri": value}))
                elif honored.get(f"{kind}ListChanged"):
                    await ctx.outbox.send(jsonrpc.notification(f"notifications/{kind}/list_changed",
                                                               {"_meta": sub_meta}))
        finally:
            feed.unlisten(queue)

    async def _notify_task(self, ctx: RequestContext, task_id: str, sub_meta: dict[str, Any],
                           last_update: dict[str, float]) -> None:
        try:
            task = await off_loop_result(self.server.tasks.db, self.server.tasks.get, task_id, owner=ctx.principal)
        except NotFound:
            return
        if last_update.get(task_id) == task.updated_at:
            return
        last_update[task_id] = task.updated_at
        await ctx.outbox.send(jsonrpc.notification(
            "notifications/tasks", {**ext_detailed(task, result_type=False), "_meta": sub_meta}))

    async def session_feed(self, session: Session) -> None:
        """Forward changes to a handshake-era session's stream until cancelled."""
        feed = self.server.changes
        queue = feed.listen()
        session._feed = queue
        try:
            while not session.closed:
                kind, value = await queue.get()
                stream = session.stream
                if stream is None or session.state is SessionState.NEW:
                    continue
                if kind == "task":
                    if features_of(session.version).tasks != "core" or session.principal is None:
                        continue
                    if session.task_note_waits(value):
                        continue
                    try:
                        task = await off_loop_result(self.server.tasks.db, self.server.tasks.get, value,
                                                     owner=session.principal)
                    except NotFound:
                        continue
                    await stream.send(jsonrpc.notification("notifications/tasks/status", core_task(task)))
                elif kind == "resource":
                    if value in session.subscriptions:
                        await stream.send(jsonrpc.notification("notifications/resources/updated", {"uri": value}))
                else:
                    await stream.send(jsonrpc.notification(f"notifications/{kind}/list_changed"))
        finally:
            if session._feed is queue:
                session._feed = None
            feed.unlisten(queue)
