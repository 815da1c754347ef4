"""Running accepted work in the background, honestly.

A tool decides when its work is *accepted*: ``await ctx.accept_as_task()``
stores a task (durably, before anyone hears of it) and lets the caller go with a
handle; the rest of the handler keeps running here.  Its outcome becomes the
task's outcome:

- a result (error results included) → ``completed`` with that result;
- a protocol error → ``failed`` with that error;
- cancellation → ``cancelled``;
- the process dies → the task's lease runs out and :meth:`TaskRuntime.recover`
  settles it with the tool's ``recover`` hook, or as ``outcome_unknown`` — never
  left ``working`` and never shown ``completed`` without proof.

Questions asked after acceptance go into the task (``input_required`` with
``inputRequests``) and are answered with ``tasks/update``.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import TYPE_CHECKING, Any, Callable

from ..context import ElicitationUnavailable
from ..errors import ProtocolError
from ..results import ErrorKind, ToolResult, tool_error
from ._state import InvalidTransition, TaskStatus
from .store import Task, TaskNotFound, TaskStore

if TYPE_CHECKING:
    from ..context import ToolContext

__all__ = ["TaskRuntime", "TaskPeer", "LEASE_S"]

LEASE_S = 30.0
HEARTBEAT_S = 10.0


class TaskPeer:
    """A running task's channel to the client: questions go through the task store."""

    def __init__(self, runtime: "TaskRuntime", task_id: str, client_capabilities: dict[str, Any],
                 version: str | None, can_ask: bool) -> None:
        self.runtime = runtime
        self.task_id = task_id
        self.client_capabilities = client_capabilities
        self.version = version
        self.can_ask = can_ask

    async def request(self, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
        if not self.can_ask:
            raise ElicitationUnavailable(capability=method)
        request: dict[str, Any] = {"method": method}
        if params:
            request["params"] = params
        return await self.runtime.ask(self.task_id, key, request)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        return None  # progress and logs never go on a task's streams

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        return None


class TaskRuntime:
    """Background execution of accepted tool calls, with leases so no task is orphaned."""

    def __init__(self, store: TaskStore, *, publish: Callable[[str, Any], None] | None = None,
                 runner_id: str | None = None, lease_s: float = LEASE_S, poll_s: float = 0.5) -> None:
        if lease_s <= 0:
            raise ValueError("lease_s must be positive")
        self.store = store
        #: How often a runner looks for cancel requests and answers from other processes
        #: (several times per lease, so a short lease is renewed in time).
        self.poll_s = min(poll_s, lease_s / 4)
        self.publish = publish or (lambda kind, value: None)
        self.runner_id = runner_id or secrets.token_hex(8)
        self.lease_s = lease_s
        #: Other processes may run tasks on this database (a server database such as PostgreSQL):
        #: at start-up only tasks whose lease ran out are orphans, never merely "another runner's".
        self.shared = getattr(store.db, "dialect", "sqlite") != "sqlite"
        self.running: dict[str, asyncio.Task[Any]] = {}
        self._wakeups: dict[str, asyncio.Event] = {}
        self._heartbeat: asyncio.Task[None] | None = None
        #: Keep sweeping for orphans while idle (a serving process: ``start()``/``stop()``).
        self._sweeping = False
        #: tool name → hook settling an orphaned task: ``fn(task) -> ToolResult``.
        self.recover_hooks: dict[str, Callable[[Task], ToolResult]] = {}

    # -- acceptance -----------------------------------------------------------------

    def accept(self, ctx: "ToolContext", *, era: str, ttl_ms: int | None, message: str | None) -> Task:
        """Store the task (durable before it is announced) and switch ``ctx`` to the task peer."""
        request = {"tool": ctx.tool.name, "era": era}
        task = self.store.create(owner=ctx.principal, tool=ctx.tool.name, ttl_ms=ttl_ms, request=request,
                                 status_message=message, runner_id=self.runner_id, lease_s=self.lease_s)
        caps = ctx.peer.client_capabilities
        ctx.peer = TaskPeer(self, task.task_id, caps, ctx.peer.version,
                            # Both task eras can ask: the extension through tasks/get + tasks/update,
                            # 2025-11-25 through requests on the tasks/result stream (the engine's).
                            can_ask=era in ("ext", "core") and isinstance(caps.get("elicitation"), dict))
        ctx.task = task
        self._changed(task.task_id)
        return task

    def adopt(self, task: Task, work: "asyncio.Task[Any]", principal_audit: Callable[[str, dict[str, Any]], None]) -> None:
        """Own ``work`` (the rest of the handler) until it settles ``task``."""
        self.running[task.task_id] = work
        self._ensure_heartbeat()
        work.add_done_callback(lambda done: self._settle(task.task_id, done, principal_audit))

    def _settle(self, task_id: str, work: "asyncio.Task[Any]", audit: Callable[[str, dict[str, Any]], None]) -> None:
        self.running.pop(task_id, None)
        self._wakeups.pop(task_id, None)
        try:
            if work.cancelled():
                self._finish(task_id, "cancel", None)
                audit("task.cancelled", {"taskId": task_id, "outcome": "cancelled"})
                return
            exc = work.exception()
            if isinstance(exc, ProtocolError):
                self._finish(task_id, "fail", exc.to_error())
                audit("task.failed", {"taskId": task_id, "outcome": str(exc.code)})
                return
            if exc is not None:
                self._finish(task_id, "fail", {"code": -32603, "message": "Internal error"})
                audit("task.failed", {"taskId": task_id, "outcome": "-32603"})
                return
            result = work.result()
            payload = result.to_dict() if isinstance(result, ToolResult) else result
            self._finish(task_id, "complete", payload)
            err = result.error if isinstance(result, ToolResult) else None
            audit("task.completed", {"taskId": task_id,
                                     "outcome": (err or {}).get("kind", "error") if payload.get("isError") else "ok"})
        except Exception:  # the store itself failed: the lease will expire and recovery settles it
            audit("task.settle_failed", {"taskId": task_id, "outcome": "unknown"})

    def _finish(self, task_id: str, how: str, payload: Any) -> None:
        try:
            if how == "complete":
                self.store.complete(task_id, payload)
            elif how == "fail":
                self.store.fail(task_id, payload)
            else:
                self.store.cancel(task_id)
        except (InvalidTransition, TaskNotFound):
            return  # already terminal (cancelled meanwhile) or expired: the first outcome stands
        self._changed(task_id)

    # -- input while running ----------------------------------------------------------

    async def ask(self, task_id: str, key: str, request: dict[str, Any]) -> dict[str, Any]:
        """Put one question into the task and wait for its answer (``tasks/update``)."""
        event = self._wakeups.setdefault(task_id, asyncio.Event())
        self.store.ask(task_id, {key: request})
        self._changed(task_id)
        while True:
            task = self.store.get(task_id)
            answer = (task.responses or {}).get(key)
            if answer is not None:
                # The runner has it now: the store keeps that the key was answered, not what was said.
                self.store.scrub_response(task_id, key)
                if task.status is TaskStatus.WORKING:
                    self._changed(task_id)
                return answer
            if task.terminal:
                raise asyncio.CancelledError()
            event.clear()
            try:
                await asyncio.wait_for(event.wait(), timeout=self.poll_s)  # answers may come via another process
            except TimeoutError:
                pass

    def answered(self, task_id: str) -> None:
        """``tasks/update`` stored answers: wake the runner."""
        event = self._wakeups.get(task_id)
        if event is not None:
            event.set()
        self._changed(task_id)

    # -- cancellation ----------------------------------------------------------------

    async def cancel(self, task: Task, *, wait_s: float = 1.0) -> Task:
        """Ask the runner to stop; a task with no live runner here is cancelled at once."""
        work = self.running.get(task.task_id)
        if work is not None and not work.done():
            work.cancel()
            try:
                await asyncio.wait_for(asyncio.shield(work), timeout=wait_s)
            except (asyncio.CancelledError, TimeoutError, Exception):
                pass
        current = self.store.get(task.task_id)
        if not current.terminal and task.task_id not in self.running:
            runner, lease_until = self.store.lease_holder(task.task_id)
            if runner and runner != self.runner_id and lease_until and lease_until > time.time():
                # Another live process runs it: ask that runner to stop (cooperative, eventual).
                self.store.request_cancel(task.task_id)
                return current
            try:
                current = self.store.cancel(task.task_id)
            except InvalidTransition:
                current = self.store.get(task.task_id)
            self._changed(task.task_id)
        return current

    async def wait(self, task_id: str, timeout: float | None = None) -> Task:
        """Until the task is terminal (for in-process callers and tests)."""
        work = self.running.get(task_id)
        if work is not None:
            await asyncio.wait({work}, timeout=timeout)
            await asyncio.sleep(0)
        return self.store.get(task_id)

    # -- leases and recovery ------------------------------------------------------------

    def start(self) -> None:
        """Sweep for orphans even while nothing runs here (call in a serving process's event loop).

        With replicas sharing a database, a replica that dies leaves its tasks to the
        others: whichever sweeps first after their leases ran out settles them.
        """
        self._sweeping = True
        self._ensure_heartbeat()

    def stop(self) -> None:
        self._sweeping = False
        if self._heartbeat is not None and not self._heartbeat.done() and not self.running:
            self._heartbeat.cancel()

    def recover_at_start(self) -> list[Task]:
        """Start-up recovery: a process alone on its database (SQLite) takes every other runner's
        unfinished task as orphaned; on a shared database only expired leases count."""
        return self.recover(sole_runner=not self.shared)

    def _ensure_heartbeat(self) -> None:
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.get_running_loop().create_task(self._beat())

    async def _beat(self) -> None:
        ticks = 0
        while self.running or self._sweeping:
            await asyncio.sleep(self.poll_s)
            ticks += 1
            try:
                if self.running:
                    for task_id in self.store.cancel_requests(self.runner_id):
                        work = self.running.get(task_id)
                        if work is not None:
                            work.cancel()
                if ticks * self.poll_s >= min(HEARTBEAT_S, self.lease_s / 3):
                    ticks = 0
                    if self.running:
                        self.store.renew_leases(self.runner_id, list(self.running), self.lease_s)
                    self.recover()
            except Exception:
                continue

    def recover(self, *, sole_runner: bool = False) -> list[Task]:
        """Settle tasks whose runner died: the tool's hook decides, else ``outcome_unknown``.

        ``sole_runner`` (at start-up of the only process serving this database)
        takes every other runner's unfinished task as orphaned without waiting
        for its lease to run out.
        """
        settled = []
        for task in self.store.orphans(other_than=self.runner_id if sole_runner else None):
            if task.task_id in self.running:
                continue
            hook = self.recover_hooks.get(task.tool or "")
            try:
                result = hook(task) if hook else None
            except Exception:
                result = None
            if result is None:
                result = tool_error(
                    ErrorKind.OUTCOME_UNKNOWN,
                    "the server stopped while this task was running; whether it took effect is unknown",
                    reference=task.task_id,
                )
            try:
                if task.status is TaskStatus.INPUT_REQUIRED:
                    # Nobody waits for the answer any more: the work stops here, unfinished.
                    settled.append(self.store.cancel(task.task_id, message="the server restarted while this task "
                                                     "waited for input; it did not finish (steps before the "
                                                     "question may have run)"))
                else:
                    settled.append(self.store.complete(task.task_id, result.to_dict()))
            except (InvalidTransition, TaskNotFound):
                continue
            self._changed(task.task_id)
        return settled

    def _changed(self, task_id: str) -> None:
        self.publish("task", task_id)
