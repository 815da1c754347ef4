"""Driving a task the server accepted to its end: poll, answer its questions, judge its result.

An :class:`~._outcomes.Accepted` is not a success; ``wait()`` and ``cancel()`` come
here.  The two eras differ in how a task ends — 2026-07-28 puts the result (or the
error, or the input requests) in ``tasks/get``, the 2025-11-25 extension makes the
client block on ``tasks/result`` — but in both the client polls at the interval the
server asked for (clamped to 10 ms … 5 min), a status notification only wakes the poll
early, and a connection that ends while waiting — however it ends: lost, the server killed, a
request about the task that can no longer leave, a gateway's 5xx, a timeout — is
:class:`~._outcomes.Unknown` with the task id (``_silence``'s ``ACCEPTED`` row), never
:class:`~._errors.NotSent`: the task was accepted and may have run.  The final result is judged
like a direct one (schema, then the narrative's claim).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import ProtocolError
from ..protocol.versions import TASKS_EXTENSION
from ._answers import answer_inputs
from ._catalog import Catalog
from ._errors import ConnectionLost, NotSent, from_wire
from ._outcomes import Accepted, Cancelled, Done, Failed, Outcome, Unconfirmed, Unknown, judge
from ._pump import Session
from ._silence import Stage, after_loss

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["Tasks", "poll_s"]


def poll_s(task: Mapping[str, Any]) -> float:
    """The task's poll interval in seconds (1 s when it names none or nonsense)."""
    ms = task.get("pollIntervalMs", task.get("pollInterval"))
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or ms <= 0:
        ms = 1000
    return min(max(float(ms), 10.0), 300_000.0) / 1000.0


class Tasks:
    """The task side of one client: handles (:class:`Accepted`), waiting and cancelling."""

    def __init__(self, client: Client, session: Session, catalog: Catalog) -> None:
        #: what an Accepted is bound to (its wait() and cancel() come back here) and what it offers the server
        self.client = client
        self.session = session
        self.catalog = catalog

    def accepted(self, name: str, task: dict[str, Any], rid: Any, era: str) -> Accepted:
        raw = task.get("status")
        status = raw if isinstance(raw, str) else "working"
        message = task.get("statusMessage")
        return Accepted(tool=name, task_id=task["taskId"], status=status, task=task, request_id=rid, era=era,
                        status_message=message if isinstance(message, str) else None, _client=self.client)

    async def handle(self, task_id: str, tool: str) -> Accepted:
        task = await self.session.rpc("tasks/get", {"taskId": task_id})
        return self.accepted(tool, {**task, "taskId": task_id}, None, self.session.conn.era or "modern")

    def _listen(self, task_id: str) -> Any:
        """2026-07-28 with the tasks extension: ``subscriptions/listen`` for this task, so a change
        wakes the waiter before its poll interval is up (polling still decides; a server without
        listen support answers with an error nobody waits for)."""
        conn = self.session.conn
        extensions = conn.server_capabilities.get("extensions")
        if conn.era != "modern" or not isinstance(extensions, dict) or TASKS_EXTENSION not in extensions:
            return None
        return conn.send_request("subscriptions/listen", {"notifications": {"taskIds": [task_id]}})

    async def _ask(self, accepted: Accepted, method: str, params: dict[str, Any], *,
                   timeout: float | None | str = "default") -> dict[str, Any] | Unknown:
        """One request about an accepted task: its answer, or the :class:`Unknown` its silence means
        (every way the connection can end: ``NotSent`` and ``ConnectionLost`` are ``ConnectionError`` subclasses,
        a timeout a ``TimeoutError``, what a custom transport raises an ``OSError``).  The server's own
        answers are raised as they are, though some are ``OSError`` subclasses too (``InsufficientScope`` is a
        ``PermissionError``)."""
        try:
            return await self.session.rpc(method, params, timeout=timeout)
        except OSError as exc:
            if isinstance(exc, ProtocolError):
                raise
            loss = ("not_sent" if isinstance(exc, NotSent) else exc.reason if isinstance(exc, ConnectionLost)
                    else "timeout" if isinstance(exc, TimeoutError) else "connection_lost")
            return Unknown(accepted.tool, accepted.request_id, after_loss(Stage.ACCEPTED, loss, self.session.dead),
                           task_id=accepted.task_id)

    async def wait(self, accepted: Accepted) -> Done | Failed | Unconfirmed | Cancelled | Unknown:
        session = self.session
        tool = (self.catalog.tools or {}).get(accepted.tool)
        validator = self.catalog.validator(accepted.tool, tool)
        task_id = accepted.task_id
        wake = session.task_wakeups.setdefault(task_id, asyncio.Event())
        poll = poll_s(accepted.task)
        listen_id = self._listen(task_id) if accepted.era == "modern" else None
        try:
            while True:
                wake.clear()  # before asking: a change announced while the answer travels still wakes us
                task = await self._ask(accepted, "tasks/get", {"taskId": task_id})
                if isinstance(task, Unknown):
                    return task
                status = task.get("status")
                poll = poll_s(task) if ("pollIntervalMs" in task or "pollInterval" in task) else poll
                if accepted.era == "modern":
                    if status == "completed":
                        return judge(accepted.tool, task.get("result"), validator, request_id=accepted.request_id,
                                     task_id=task_id)
                    if status == "failed":
                        raise from_wire(task.get("error"), tool=accepted.tool)
                    if status == "input_required":
                        answers = await answer_inputs(self.client, task.get("inputRequests"), accepted.tool)
                        updated = await self._ask(accepted, "tasks/update", {"taskId": task_id,
                                                                              "inputResponses": answers})
                        if isinstance(updated, Unknown):
                            return updated
                        continue
                else:
                    if status in ("completed", "failed", "input_required"):
                        # tasks/result blocks until the end; questions come as server requests meanwhile.
                        result = await self._ask(accepted, "tasks/result", {"taskId": task_id}, timeout=None)
                        if isinstance(result, Unknown):
                            return result
                        return judge(accepted.tool, result, validator, request_id=accepted.request_id,
                                     task_id=task_id)
                if status == "cancelled":
                    message = task.get("statusMessage")
                    return Cancelled(accepted.tool, task_id, message if isinstance(message, str) else None,
                                     accepted.request_id)
                try:
                    await asyncio.wait_for(wake.wait(), poll)
                except TimeoutError:
                    pass
        finally:
            session.task_wakeups.pop(task_id, None)
            if listen_id is not None and session.conn.forget(listen_id) is not None:
                try:
                    await session.transport.cancel(listen_id)
                except Exception:
                    pass

    async def cancel(self, accepted: Accepted) -> Outcome:
        answer = await self._ask(accepted, "tasks/cancel", {"taskId": accepted.task_id})
        if isinstance(answer, Unknown):
            return answer
        task = answer if isinstance(answer.get("status"), str) else await self._ask(accepted, "tasks/get",
                                                                                    {"taskId": accepted.task_id})
        if isinstance(task, Unknown):
            return task
        status = task.get("status")
        if status == "cancelled":
            message = task.get("statusMessage")
            return Cancelled(accepted.tool, accepted.task_id, message if isinstance(message, str) else None,
                             accepted.request_id)
        if status in ("completed", "failed"):
            return await self.wait(accepted)
        return self.accepted(accepted.tool, {**accepted.task, **task, "taskId": accepted.task_id},
                             accepted.request_id, accepted.era)
