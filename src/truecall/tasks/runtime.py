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

Leases are *fenced*: a settler from another process (sweep, start-up recovery, a
cancel) first takes the lease over, which moves the task's ``lease_epoch`` on; every
write made on the task's behalf checks that epoch inside its own transaction
(:meth:`TaskStore.check_lease`, :meth:`TaskRuntime.fence`, ``ctx.fenced()``), so a
holder that was merely frozen — a lock wait, a GC pause, a stopped container —
finds every later write refused (:class:`~truecall.tasks.task_store.LeaseLost`), stops
that work and audits ``task.lease_lost``.  It never writes on.

Questions asked after acceptance go into the task (``input_required`` with
``inputRequests``) and are answered with ``tasks/update``.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import secrets
import socket
import time
from typing import TYPE_CHECKING, Any, Callable, Coroutine, TypeVar

from ..server.context import ElicitationUnavailable
from ..errors import ProtocolError
from ..results import ErrorKind, ToolResult, tool_error
from ..storage import in_thread, off_loop, off_loop_result
from ._task_state import InvalidTransition, TaskStatus
from .task_store import LeaseLost, Task, TaskNotFound, TaskStore

if TYPE_CHECKING:
    from ..auth._principals import Principal
    from ..server.context import ToolContext

__all__ = ["TaskRuntime", "TaskPeer", "TaskOffer", "RecoverHook", "LEASE_S"]

T = TypeVar("T")
#: Settles a task whose process died: the result that is true now, or ``None`` (``outcome_unknown``).
RecoverHook = Callable[[Task], ToolResult | None]

LEASE_S = 30.0
HEARTBEAT_S = 10.0


def _completed(payload: dict[str, Any]) -> dict[str, Any]:
    """The fields of a ``task.completed`` record of a task that ended with ``payload`` (a tool result)."""
    if not payload.get("isError"):
        return {"outcome": "ok"}
    error = (payload.get("structuredContent") or {}).get("error")
    return {"outcome": error.get("kind", "error") if isinstance(error, dict) else "error"}


def new_runner_id() -> str:
    """``host:pid:random`` — so that a process sharing a SQLite file can tell a runner that is gone."""
    return f"{socket.gethostname()[:64]}:{os.getpid()}:{secrets.token_hex(6)}"


def runner_gone(runner_id: str | None) -> bool:
    """Whether the process behind ``runner_id`` is certainly not running any more.

    Only a runner of this host whose pid is alive counts as running; any other id (another
    host's, or one not made by :func:`new_runner_id`) is taken as gone, as a process alone on its
    database always did.  A pid reused by an unrelated process errs on the safe side: its tasks
    wait for their lease to run out.
    """
    host, _, rest = (runner_id or "").partition(":")
    pid, _, _ = rest.partition(":")
    if host != socket.gethostname()[:64] or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False
    return False


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


class TaskOffer:
    """A caller's readiness to take a task for one call (``task_mode``), handed to the tool's context.

    The tool decides: :meth:`accept` (what ``ctx.accept_as_task()`` awaits) stores the task,
    tells ``on_accept`` (the pipeline records ``task.created``) and lets the caller go;
    :meth:`TaskRuntime.run_or_accept` races that against the work finishing first.
    """

    __slots__ = ("runtime", "era", "ttl_ms", "on_accept", "loop", "accepted")

    def __init__(self, runtime: "TaskRuntime", era: str, ttl_ms: int | None,
                 on_accept: Callable[[Task], object]) -> None:
        """``era``: "ext", "core" or "inproc"; ``on_accept(task)`` runs once the task is stored."""
        self.runtime, self.era, self.ttl_ms, self.on_accept = runtime, era, ttl_ms, on_accept
        self.loop = asyncio.get_running_loop()
        self.accepted: asyncio.Future[Task] = self.loop.create_future()

    async def accept(self, ctx: "ToolContext", message: str | None) -> Task:
        task = await self.runtime.accept_off_loop(ctx, era=self.era, ttl_ms=self.ttl_ms, message=message)
        self.on_accept(task)
        if not self.accepted.done():
            self.accepted.set_result(task)
        await asyncio.sleep(0)  # the caller hears of the task before the work goes on
        return task


class TaskRuntime:
    """Background execution of accepted tool calls, with leases so no task is orphaned."""

    def __init__(self, store: TaskStore, *, publish: Callable[[str, Any], None] | None = None,
                 runner_id: str | None = None, lease_s: float = LEASE_S, poll_s: float = 0.5,
                 audit: Callable[[str, dict[str, Any]], None] | None = None,
                 recover_hook: Callable[[str], RecoverHook | None] | None = None) -> None:
        if lease_s <= 0:
            raise ValueError("lease_s must be positive")
        self.store = store
        #: How often a runner looks for cancel requests and answers from other processes
        #: (several times per lease, so a short lease is renewed in time).
        self.poll_s = min(poll_s, lease_s / 4)
        self.publish = publish or (lambda kind, value: None)
        self.runner_id = runner_id or new_runner_id()
        self.lease_s = lease_s
        #: Other processes may run tasks on this database (a server database such as PostgreSQL):
        #: at start-up only tasks whose lease ran out are orphans, never merely "another runner's".
        self.shared = store.db.shared
        self.running: dict[str, asyncio.Task[Any]] = {}
        #: Outcomes being written off the loop (a server database), by task id: see _settle.
        self.settling: dict[str, "asyncio.Future[bool]"] = {}
        #: The lease epoch (fencing token) this process holds for each task it runs.
        self.epochs: dict[str, int] = {}
        #: Running tasks whose lease another process took over: their work is being stopped.
        self.lost: set[str] = set()
        #: ``fn(kind, fields)``: settlements made here without a caller (recovery, takeovers).
        self.audit = audit or (lambda kind, fields: None)
        self._wakeups: dict[str, asyncio.Event] = {}
        self._heartbeat: asyncio.Task[None] | None = None
        #: Keep sweeping for orphans while idle (a serving process: ``start()``/``stop()``).
        self._sweeping = False
        #: tool name → the hook settling its orphaned tasks, if it has one (the server reads the
        #: ``recover=`` each tool was registered with).
        self.recover_hook = recover_hook or (lambda tool: None)

    # -- acceptance -----------------------------------------------------------------

    def accept(self, ctx: "ToolContext", *, era: str, ttl_ms: int | None, message: str | None) -> Task:
        """Store the task (durable before it is announced) and switch ``ctx`` to the task peer."""
        return self._accepted(ctx, self._create(ctx, era, ttl_ms, message), era)

    async def accept_off_loop(self, ctx: "ToolContext", *, era: str, ttl_ms: int | None,
                              message: str | None) -> Task:
        """:meth:`accept` with the task's row written off the event loop on a server database (see
        ``storage.off_loop``).  A cancellation that comes while it is written (the caller left before
        hearing of the task) settles the task it made as cancelled: nobody will run it."""
        task, cancelled = await off_loop(self.store.db, self._create, ctx, era, ttl_ms, message)
        if cancelled:
            try:
                await off_loop(self.store.db, self._write_outcome, task.task_id, "cancel", None, task.lease_epoch)
            except Exception:  # noqa: BLE001 - its lease runs out and recovery settles it
                pass
            raise asyncio.CancelledError()
        return self._accepted(ctx, task, era)

    def _create(self, ctx: "ToolContext", era: str, ttl_ms: int | None, message: str | None) -> Task:
        assert ctx.tool is not None
        return self.store.create(owner=ctx.principal, tool=ctx.tool.name, ttl_ms=ttl_ms,
                                 request={"tool": ctx.tool.name, "era": era}, status_message=message,
                                 runner_id=self.runner_id, lease_s=self.lease_s)

    def _accepted(self, ctx: "ToolContext", task: Task, era: str) -> Task:
        caps = ctx.peer.client_capabilities
        ctx.peer = TaskPeer(self, task.task_id, caps, ctx.peer.version,
                            # Both task eras can ask: the extension through tasks/get + tasks/update,
                            # 2025-11-25 through requests on the tasks/result stream (the engine's).
                            can_ask=era in ("ext", "core") and isinstance(caps.get("elicitation"), dict))
        ctx.task = task
        self.epochs[task.task_id] = task.lease_epoch
        self._changed(task.task_id)
        return task

    async def run_or_accept(self, offer: TaskOffer, work: Coroutine[Any, Any, T],
                            audit: Callable[[str, dict[str, Any]], None]) -> T | Task:
        """Run ``work``; if the tool accepts it as a task first, answer that task and own the rest.

        Whichever comes first wins: the work's own answer, or the task the tool accepted
        through ``offer`` (a :class:`TaskOffer` whose ``accept`` the call's
        :class:`~truecall.ToolContext` was given), whose work then goes on here until it
        settles the task (``audit`` records that settlement).  A caller that leaves after the acceptance leaves a task
        behind, not a cancelled call; one that leaves before cancels the work.
        """
        accepted = offer.accepted
        running = offer.loop.create_task(work)
        either: set[asyncio.Future[Any]] = {running, accepted}
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if accepted.done():  # the caller left after the work was accepted: it goes on as a task
                self.adopt(accepted.result(), running, audit)
            else:
                running.cancel()
            raise
        if accepted.done():
            task = accepted.result()
            self.adopt(task, running, audit)
            return task
        accepted.cancel()
        return running.result()

    async def complete_at_once(self, owner: "Principal", tool: str, ttl_ms: int | None,
                               result: dict[str, Any]) -> Task:
        """A task made already completed with ``result`` (2025-11-25: a call asked for as a task but
        answered at once), and its ``task.completed`` record (``settledAtOnce``): the same record,
        made by the same :func:`_completed`, as a task the runtime settles in the background.  The
        call's own record (``tool.called``, ``tool.rejected``, …) is the request's final one; this
        one is the task's."""
        store = self.store

        def write() -> Task:  # (off the event loop on a server database)
            return store.complete(store.create(owner=owner, tool=tool, ttl_ms=ttl_ms,
                                               request={"tool": tool, "era": "core"}).task_id, result)

        task: Task = await off_loop_result(store.db, write)
        self.audit("task.completed", {"tool": tool, "tenant": owner.tenant, "subject": owner.subject,
                                      "taskId": task.task_id, "settledAtOnce": True, **_completed(result)})
        self._changed(task.task_id)
        return task

    def fence(self, task: Task) -> Callable[[], None]:
        """The check a write made on ``task``'s behalf runs inside its own transaction.

        It raises :class:`LeaseLost` once another process took the task over, so that
        transaction commits nothing.  (For a tool: ``with ctx.fenced(): ...``.)
        """
        store, task_id, epoch = self.store, task.task_id, task.lease_epoch
        return lambda: store.check_lease(task_id, epoch)

    def adopt(self, task: Task, work: "asyncio.Task[Any]", principal_audit: Callable[[str, dict[str, Any]], None]) -> None:
        """Own ``work`` (the rest of the handler) until it settles ``task``."""
        self.running[task.task_id] = work
        self._ensure_heartbeat()
        work.add_done_callback(lambda done: self._settle(task.task_id, done, principal_audit))

    def _settle(self, task_id: str, work: "asyncio.Task[Any]", audit: Callable[[str, dict[str, Any]], None]) -> None:
        self.running.pop(task_id, None)
        self._wakeups.pop(task_id, None)
        epoch = self.epochs.pop(task_id, None)
        lost = task_id in self.lost
        self.lost.discard(task_id)
        if lost or (not work.cancelled() and isinstance(work.exception(), LeaseLost)):
            audit("task.lease_lost", {"taskId": task_id, "outcome": "fenced", "runner": self.runner_id})
            return
        try:
            how, payload, kind, fields = self._outcome(work)
        except Exception:  # (a result that cannot be stored): the lease will expire and recovery settles it
            audit("task.settle_failed", {"taskId": task_id, "outcome": "unknown"})
            return

        def written(exc: BaseException | None, changed: bool) -> None:
            if isinstance(exc, LeaseLost):  # another process settled it: this one's outcome is not written, and says so
                audit("task.lease_lost", {"taskId": task_id, "outcome": "fenced", "runner": self.runner_id})
            elif exc is not None:  # the store itself failed: the lease will expire and recovery settles it
                audit("task.settle_failed", {"taskId": task_id, "outcome": "unknown"})
            else:
                if changed:
                    self._changed(task_id)
                audit(kind, {"taskId": task_id, **fields})

        if self.store.db.pooled:  # the outcome is written off the loop: a database that stops answering stops no one else
            writing = in_thread(self.store.db, self._write_outcome, task_id, how, payload, epoch)
            self.settling[task_id] = writing

            def done(w: "asyncio.Future[bool]") -> None:
                if self.settling.get(task_id) is w:
                    del self.settling[task_id]
                written(w.exception(), not w.exception() and w.result())

            writing.add_done_callback(done)
            return
        try:
            changed = self._write_outcome(task_id, how, payload, epoch)
        except Exception as exc:
            written(exc, False)
            return
        written(None, changed)

    @staticmethod
    def _outcome(work: "asyncio.Task[Any]") -> tuple[str, Any, str, dict[str, Any]]:
        """What ended work says: (how the task ends, its payload, the audit record's kind and fields)."""
        if work.cancelled():
            return "cancel", None, "task.cancelled", {"outcome": "cancelled"}
        exc = work.exception()
        if isinstance(exc, ProtocolError):
            return "fail", exc.to_error(), "task.failed", {"outcome": str(exc.code)}
        if exc is not None:
            return "fail", {"code": -32603, "message": "Internal error"}, "task.failed", {"outcome": "-32603"}
        result = work.result()
        payload = result.to_dict() if isinstance(result, ToolResult) else result
        return "complete", payload, "task.completed", _completed(payload)

    def _write_outcome(self, task_id: str, how: str, payload: Any, epoch: int | None) -> bool:
        """Write a task's outcome; ``False`` when another outcome stood already."""
        try:
            if how == "complete":
                self.store.complete(task_id, payload, epoch=epoch)
            elif how == "fail":
                self.store.fail(task_id, payload, epoch=epoch)
            else:
                self.store.cancel(task_id, epoch=epoch)
        except (InvalidTransition, TaskNotFound):
            return False  # already terminal (cancelled meanwhile) or expired: the first outcome stands
        return True

    # -- input while running ----------------------------------------------------------

    async def ask(self, task_id: str, key: str, request: dict[str, Any]) -> dict[str, Any]:
        """Put one question into the task and wait for its answer (``tasks/update``).  The store's work runs
        off the event loop on a server database (see ``storage.off_loop``)."""
        db = self.store.db
        event = self._wakeups.setdefault(task_id, asyncio.Event())
        await off_loop_result(db, self.store.ask, task_id, {key: request}, epoch=self.epochs.get(task_id))
        self._changed(task_id)
        while True:
            event.clear()  # (before the read: an answer stored while it runs wakes the wait below)
            task = await off_loop_result(db, self.store.get, task_id)
            answer: dict[str, Any] | None = (task.responses or {}).get(key)
            if answer is not None:
                # The runner has it now: the store keeps that the key was answered, not what was said.
                await off_loop_result(db, self.store.scrub_response, task_id, key)
                if task.status is TaskStatus.WORKING:
                    self._changed(task_id)
                return answer
            if task.terminal:
                raise asyncio.CancelledError()
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
        writing = self.settling.get(task.task_id)
        if writing is not None:  # its outcome is being written (off the loop): that settles it, not a takeover
            await asyncio.wait({writing}, timeout=wait_s)
        # Whether this process still runs it or writes its outcome is decided here, on the loop, where those
        # change; the database work then runs off the loop (see ``storage.off_loop``).
        here = task.task_id in self.running or task.task_id in self.settling
        current: Task
        current, settled = await off_loop_result(self.store.db, self._cancel_in_store, task, here)
        if settled:
            self._changed(task.task_id)
        return current

    def _cancel_in_store(self, task: Task, here: bool) -> tuple[Task, bool]:
        """The database side of :meth:`cancel` (a worker thread on a server database): the task as it stands
        now, and whether this call settled it (its change is published on the loop)."""
        current = self.store.get(task.task_id)
        if current.terminal or here:
            return current, False
        runner, lease_until = self.store.lease_holder(task.task_id)
        if runner and runner != self.runner_id and lease_until and lease_until > time.time():
            # Another live process runs it: ask that runner to stop (cooperative, eventual).
            self.store.request_cancel(task.task_id)
            return current, False
        if runner is None:  # never had a runner (made straight in the store): nothing runs it
            try:
                current = self.store.cancel(task.task_id)
            except InvalidTransition:
                current = self.store.get(task.task_id)
            return current, True
        # Nobody holds it any more (its runner stopped, or stopped responding): take the lease
        # away first, so the old runner can never write after this settlement.
        taken = self.store.take_over(current, self.runner_id, self.lease_s, expired_only=runner != self.runner_id)
        if taken is None:  # it moved meanwhile: renewed by a live runner, or settled
            return self.store.get(task.task_id), False
        return self._settle_taken(taken, reason="cancel", publish=False), True

    async def wait(self, task_id: str, timeout: float | None = None) -> Task:
        """Until the task is terminal (for in-process callers and tests)."""
        work = self.running.get(task_id)
        if work is not None:
            await asyncio.wait({work}, timeout=timeout)
            await asyncio.sleep(0)
        writing = self.settling.get(task_id)
        if writing is not None:  # its outcome is being written (off the loop)
            await asyncio.wait({writing}, timeout=timeout)
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
        """Start-up recovery: on a local database (SQLite) every other runner's unfinished task is
        orphaned unless that runner's process still runs here (several processes on one file);
        on a shared database only expired leases count."""
        return self.recover(sole_runner=not self.shared)

    def _ensure_heartbeat(self) -> None:
        if self._heartbeat is None or self._heartbeat.done():
            # (a context of its own: it outlives the request that started it, and keeps nothing of it)
            self._heartbeat = asyncio.get_running_loop().create_task(self._beat(), context=contextvars.Context())

    async def _beat(self) -> None:
        ticks = 0
        while self.running or self._sweeping:
            await asyncio.sleep(self.poll_s)
            ticks += 1
            beat = ticks * self.poll_s >= min(HEARTBEAT_S, self.lease_s / 3)
            if beat:
                ticks = 0
            held = {task_id: self.epochs[task_id] for task_id in self.running if task_id in self.epochs}
            try:
                # Off the event loop: a database that makes these wait (a lock, a slow server)
                # must never stop this process from answering everything else meanwhile.
                stop, lost, settled = await asyncio.to_thread(self._housekeeping, held, beat)
            except Exception:
                continue
            for task_id in stop:
                work = self.running.get(task_id)
                if work is not None:
                    work.cancel()
            for task_id in lost:  # taken over elsewhere: stop the work, write nothing more
                work = self.running.get(task_id)
                if work is not None:
                    self.lost.add(task_id)
                    work.cancel()
            for task in settled:
                self._changed(task.task_id)

    def _housekeeping(self, held: dict[str, int], beat: bool) -> tuple[list[str], list[str], list[Task]]:
        """One heartbeat's database work (in a worker thread): cancel requests, renewals, the sweep."""
        stop = self.store.cancel_requests(self.runner_id) if held else []
        if not beat:
            return stop, [], []
        lost = self.store.renew_leases(self.runner_id, held, self.lease_s) if held else []
        return stop, lost, self.recover(publish=False)

    def recover(self, *, sole_runner: bool = False, publish: bool = True) -> list[Task]:
        """Settle tasks whose runner died: the tool's hook decides, else ``outcome_unknown``.

        ``sole_runner`` (at start-up of the only process serving this database)
        takes every other runner's unfinished task as orphaned without waiting
        for its lease to run out.  Each task is taken over first (its lease epoch
        moves on, fencing the old runner out), then settled, then audited.
        """
        settled: list[Task] = []
        now = time.time()
        for task in self.store.orphans(other_than=self.runner_id if sole_runner else None):
            if task.task_id in self.running:
                continue
            if sole_runner and (task.lease_until or 0) > now and not runner_gone(task.runner_id):
                continue  # another live process on this file (several workers): its lease decides
            try:
                taken = self.store.take_over(task, self.runner_id, self.lease_s, expired_only=not sole_runner)
                if taken is None:  # renewed or settled meanwhile: not an orphan after all
                    continue
                done = self._settle_taken(taken, reason="restart" if sole_runner else "lease_expired",
                                          publish=publish)
            except Exception:  # e.g. a lock held elsewhere past the wait bound: the next sweep tries again
                continue
            settled.append(done)
        return settled

    def _settle_taken(self, task: Task, *, reason: str, publish: bool = True) -> Task:
        """Settle a task this process just took over (``task`` carries the new epoch), and audit it.

        A question still open → ``cancelled`` (nobody waits for its answer).  Otherwise the tool's
        recover hook says what is true now, else ``outcome_unknown``.  A cancel is honoured only
        where the hook shows that nothing happened (``dependency_unavailable``): work that may
        have taken effect is never reported cancelled.
        """
        epoch = task.lease_epoch
        if task.status is TaskStatus.INPUT_REQUIRED:
            # Nobody waits for the answer any more: the work stops here, unfinished.
            why = "was cancelled" if reason == "cancel" else "stopped responding or restarted"
            done = self.store.cancel(task.task_id, message=f"the server running this task {why} while it waited "
                                     "for input; it did not finish (steps before the question may have run)",
                                     epoch=epoch)
            outcome = "cancelled"
        else:
            hook = self.recover_hook(task.tool or "")
            try:
                result = hook(task) if hook else None
            except Exception:
                result = None
            if result is None:
                why = ("the task was cancelled after the server running it had stopped responding"
                       if reason == "cancel" else "the server running this task stopped (or stopped responding)")
                result = tool_error(ErrorKind.OUTCOME_UNKNOWN, f"{why} before it finished; whether it took effect "
                                    "is unknown", reference=task.task_id)
            kind = (result.error or {}).get("kind") if result.is_error else "ok"
            if reason == "cancel" and kind == ErrorKind.DEPENDENCY_UNAVAILABLE.value:
                done = self.store.cancel(task.task_id, message="cancelled; nothing was written for it", epoch=epoch)
                outcome = "cancelled"
            else:
                done = self.store.complete(task.task_id, result.to_dict(), epoch=epoch)
                outcome = str(kind)
        self.audit("task.recovered", {"tool": task.tool, "tenant": task.owner_tenant, "subject": task.owner_subject,
                                      "taskId": task.task_id, "outcome": outcome, "reason": reason,
                                      "runner": self.runner_id})
        if publish:
            self._changed(task.task_id)
        return done

    def _changed(self, task_id: str) -> None:
        self.publish("task", task_id)
