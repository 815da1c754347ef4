"""The tasks methods: ``tasks/get``, ``tasks/update``, ``tasks/cancel``, ``tasks/result``, ``tasks/list``.

Two flavours share the task store (:mod:`truecall.tasks`): the tasks extension of 2026-07-28
(flat shapes, answers through ``tasks/update``) and 2025-11-25's core tasks (``tasks/result``
waits for the end and relays the task's questions to the client as requests).  Which shape a
request gets is its version's ``tasks`` feature.  A task of another tenant or subject answers
exactly like an unknown one (the policy stage decides, :func:`truecall.server._policy.admit_task`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..server._policy import admit_task
from ..errors import InvalidParams, MissingCapability, NotFound, ProtocolError
from ..storage import off_loop_result
from ..tasks import Task, TaskStatus
from ..tasks.task_store import TaskNotFound
from ._params import check_cursor
from ._session import NULL_OUTBOX, ClientError, Outbox, Session, SessionEnded
from ._taskwire import core_task, ext_detailed
from .versions import TASKS_EXTENSION

if TYPE_CHECKING:
    from ..server._server import Server
    from ._request_context import RequestContext

__all__ = ["TaskMethods", "has_tasks_extension", "tasks_capability_error", "RELATED_TASK"]

RELATED_TASK = "io.modelcontextprotocol/related-task"


def has_tasks_extension(caps: dict[str, Any]) -> bool:
    extensions = caps.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def tasks_capability_error() -> MissingCapability:
    return MissingCapability(f"This request needs the {TASKS_EXTENSION} extension",
                             {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})


def _stored_error(error: dict[str, Any]) -> ProtocolError:
    exc = ProtocolError(str(error.get("message", "Task failed"))[:500], error.get("data"))
    exc.code = int(error["code"])
    return exc


class TaskMethods:
    def __init__(self, server: Server, client_request_timeout: float) -> None:
        self.server = server
        #: How long a question relayed to the client (2025-11-25 ``tasks/result``) waits for its answer.
        self.client_request_timeout = client_request_timeout

    async def _task_for(self, ctx: RequestContext) -> Task:
        """The task the request names, through the policy stage (:func:`truecall.server._policy.admit_task`):
        another tenant's or subject's task answers exactly like an unknown one, and is recorded so."""
        if ctx.features.tasks == "ext" and not has_tasks_extension(ctx.caps):
            raise tasks_capability_error()
        task_id = ctx.params.get("taskId")
        if not isinstance(task_id, str):
            raise InvalidParams("taskId must be a string")
        return admit_task(self.server, ctx.principal, task_id, await self._read(self._stored, task_id))

    def _stored(self, task_id: str) -> Task | None:
        try:
            return self.server.tasks.get(task_id)
        except TaskNotFound:
            return None

    async def _read(self, read: Any, *args: Any, **kwargs: Any) -> Any:
        """Work on the task store, off the event loop on a server database (see ``storage.off_loop``):
        a database that stops answering holds up this request, not the process."""
        return await off_loop_result(self.server.tasks.db, read, *args, **kwargs)

    async def get(self, ctx: RequestContext) -> dict[str, Any]:
        task = await self._task_for(ctx)
        return ext_detailed(task) if ctx.features.tasks == "ext" else core_task(task)

    async def update(self, ctx: RequestContext) -> dict[str, Any]:
        task = await self._task_for(ctx)
        responses = ctx.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise InvalidParams("inputResponses must be an object")
        if any(not isinstance(v, dict) for v in responses.values()):
            raise InvalidParams("each input response must be an object")
        await self._read(self.server.tasks.answer, task.task_id, responses, owner=ctx.principal)
        self.server.task_runtime.answered(task.task_id)
        self.server.events.record("task.input", tenant=ctx.principal.tenant, subject=ctx.principal.subject,
                                  outcome="ok", taskId=task.task_id, arguments=responses,
                                  # keys nobody asked are recorded as [undeclared]
                                  argument_names=frozenset(task.input_requests or ()))
        return {}

    async def cancel(self, ctx: RequestContext) -> dict[str, Any]:
        task = await self._task_for(ctx)
        ext = ctx.features.tasks == "ext"
        if task.terminal:
            if ext:
                return {}  # cancelling a finished task is acknowledged and changes nothing
            raise InvalidParams(f"Task is already {task.status.value}")
        task = await self.server.task_runtime.cancel(task)
        self.server.events.record("task.cancel_requested", tenant=ctx.principal.tenant,
                                  subject=ctx.principal.subject, outcome=task.status.value, taskId=task.task_id)
        return {} if ext else core_task(task)

    async def result(self, ctx: RequestContext) -> dict[str, Any]:
        task = await self._task_for(ctx)
        queue = self.server.changes.listen()
        asking: dict[str, asyncio.Task[None]] = {}
        relays = ctx.features.tasks != "ext"
        try:
            while not task.terminal:
                if task.status is TaskStatus.INPUT_REQUIRED and relays:
                    self._ask_for_task(ctx, task, asking)
                try:
                    async with asyncio.timeout(5.0):
                        while True:
                            kind, value = await queue.get()
                            if kind == "task" and value == task.task_id:
                                break
                except TimeoutError:
                    pass
                task = await self._read(self.server.tasks.get, task.task_id, owner=ctx.principal)
        finally:
            self.server.changes.unlisten(queue)
            for asked in asking.values():
                asked.cancel()
        related = {RELATED_TASK: {"taskId": task.task_id}}
        if task.status is TaskStatus.FAILED:
            error = task.error or {}
            raise ProtocolError(str(error.get("message", "Task failed"))[:500], {"taskId": task.task_id}) \
                if not isinstance(error.get("code"), int) else _stored_error(error)
        if task.status is TaskStatus.CANCELLED:
            raise InvalidParams("Task was cancelled", {"taskId": task.task_id})
        return {**(task.result or {"content": []}), "_meta": related}

    def _ask_for_task(self, ctx: RequestContext, task: Task, asking: dict[str, "asyncio.Task[None]"]) -> None:
        """2025-11-25: a task's open questions go to the client as requests on the ``tasks/result``
        stream (or the session's GET stream), marked with the related task; each answer is stored
        as ``tasks/update`` would store it.  Each question is sent once per ``tasks/result``."""
        session = ctx.session
        outbox = ctx.outbox if ctx.outbox is not NULL_OUTBOX else (session.stream if session else None)
        if session is None or outbox is None:
            return
        for key, request in (task.input_requests or {}).items():
            if key in asking or not isinstance(request, dict) or not isinstance(request.get("method"), str):
                continue
            asking[key] = asyncio.get_running_loop().create_task(
                self._relay_question(ctx, session, outbox, task.task_id, key, request))

    async def _relay_question(self, ctx: RequestContext, session: Session, outbox: Outbox, task_id: str, key: str,
                              request: dict[str, Any]) -> None:
        # (its own asyncio task: the answer it records, task.input, is the task's, not the tasks/result request's)
        self.server.events.detach()
        params = dict(request.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), RELATED_TASK: {"taskId": task_id}}
        try:
            answer: dict[str, Any] = await session.request(outbox, request["method"], params,
                                                           self.client_request_timeout)
        except SessionEnded:
            return  # nobody answered: the question stays open, and a later tasks/result asks it again
        except (ClientError, TimeoutError):
            answer = {"action": "cancel"}  # no answer is never consent
        try:
            await self._read(self.server.tasks.answer, task_id, {key: answer}, owner=ctx.principal)
        except NotFound:
            return  # the task ended or expired meanwhile
        self.server.task_runtime.answered(task_id)
        self.server.events.record("task.input", tenant=ctx.principal.tenant, subject=ctx.principal.subject,
                                  outcome="ok", taskId=task_id, arguments={key: answer})

    async def list(self, ctx: RequestContext) -> dict[str, Any]:
        check_cursor(ctx.params)
        listed = await self._read(self.server.tasks.list, owner=ctx.principal, limit=1000)
        return {"tasks": [core_task(t) for t in listed]}

    async def finished(self, ctx: RequestContext, tool: str, result: dict[str, Any], ttl_ms: int | None) -> Task:
        """2025-11-25: a call asked for as a task but answered at once (invalid arguments, a rate
        limit, a tool that never accepted its work) still gets a task, already finished with that
        result, so that ``tasks/result`` returns exactly what the plain call would have."""
        return await self.server.task_runtime.complete_at_once(ctx.principal, tool, ttl_ms, result)
