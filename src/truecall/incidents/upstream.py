"""The upstream between ``incident.handle`` and the ticket system: an in-process queue with workers.

This is the part that failed in the incident the guide tells (docs/guide/three-layers.md, "The
story"): a queue that can lose a job, be slow, error, or die halfway.  Its contract with the tool
is deliberately weak
— an *ack* (an ``asyncio.Future``) that may never come — and the tool never
trusts it: after waiting it asks the database (see
:meth:`~truecall.incidents.tickets.TicketStore.settle_wait`), where the
dispatch's state and the fence decide what may be said.

A worker's life with one job::

    take job → claim (queued → claimed, atomic; refused if the tool already withdrew it)
             → ticket + outbox notification + done (ONE transaction; refused if fenced)
             → ack

Faults (:mod:`.faults`) are injected at the named points by configuration only.
The queue itself is memory: a process restart loses every job in it, which the
desk's recover hook turns into honest results.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any, Callable

from truecall import LeaseLost
from truecall.storage import off_loop_result

from .dispatch_state import InvalidDispatchTransition
from .faults import Fault, FaultPlan
from .tickets import TicketStore

__all__ = ["Job", "Upstream", "UpstreamError", "ACK_DONE", "ACK_FAILED", "ACK_FENCED"]

ACK_DONE = "done"
ACK_FAILED = "failed"
ACK_FENCED = "fenced"

#: Exit status of an injected process kill (as if SIGKILLed).
KILL_STATUS = 137


class UpstreamError(RuntimeError):
    """The ticket system refused or failed (injected)."""


@dataclass(frozen=True, slots=True)
class Job:
    tenant: str
    dispatch_id: str
    incident_id: str
    title: str
    note: str | None
    #: The lease check of the task that handed the job over: every write for the job runs it in
    #: its own transaction, so nothing is claimed or written once another process took that task over.
    fence: Callable[[], None] | None = field(default=None, compare=False)
    #: The request's idempotency key (a fault plan may name the fault of a key's job).
    key: str | None = None


class Upstream:
    """An in-process ticket queue: ``submit`` a job, get an ack future that may never resolve."""

    def __init__(self, tickets: TicketStore, faults: FaultPlan | None = None, *, workers: int = 4,
                 claim_lease_s: float = 30.0, channel: str = "oncall",
                 on_event: Callable[[str, dict[str, Any]], None] | None = None) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.tickets = tickets
        self.faults = faults or FaultPlan()
        self.workers = workers
        self.claim_lease_s = claim_lease_s
        self.channel = channel
        self.on_event = on_event or (lambda kind, fields: None)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[tuple[Job, Fault | None]] | None = None
        self._acks: dict[str, asyncio.Future[str]] = {}
        self._waiting: dict[str, int] = {}
        self._workers: list[asyncio.Task[None]] = []
        #: Outcomes as the upstream saw them (for statistics and tests).
        self.stats: dict[str, int] = {}

    # -- the tool's side -------------------------------------------------------------------

    def submit(self, job: Job) -> asyncio.Future[str]:
        """Hand a job to the queue; the ack future resolves with done/failed/fenced — or never."""
        self._bind()
        ack = self.waiter(job.dispatch_id)
        fault = self.faults.draw(job.key)
        if fault is not None and fault.name == "drop":
            self._count("dropped")
            return ack  # lost before any side effect: nobody will ever claim it
        assert self._queue is not None
        self._queue.put_nowait((job, fault))
        return ack

    def waiter(self, dispatch_id: str) -> asyncio.Future[str]:
        """The ack future for ``dispatch_id`` (shared by every caller attached to it).

        Each call must be paired with :meth:`forget` once that caller stops waiting.
        """
        loop = self._bind()
        ack = self._acks.get(dispatch_id)
        if ack is None:
            ack = self._acks[dispatch_id] = loop.create_future()
        self._waiting[dispatch_id] = self._waiting.get(dispatch_id, 0) + 1
        return ack

    def forget(self, dispatch_id: str) -> None:
        """One caller stopped waiting; the last one takes the future along (an ack may never come)."""
        left = self._waiting.get(dispatch_id, 0) - 1
        if left > 0:
            self._waiting[dispatch_id] = left
            return
        self._waiting.pop(dispatch_id, None)
        self._acks.pop(dispatch_id, None)

    @property
    def waiting(self) -> int:
        """How many dispatches someone is waiting for."""
        return len(self._acks)

    async def drain(self, timeout: float = 10.0) -> bool:
        """Until every queued job has been through a worker (``False`` on timeout, e.g. a hang)."""
        if self._queue is None or self._loop is not asyncio.get_running_loop():
            return True
        try:
            await asyncio.wait_for(self._queue.join(), timeout)
        except TimeoutError:
            return False
        return True

    # -- workers ---------------------------------------------------------------------------

    def _bind(self) -> asyncio.AbstractEventLoop:
        """Queue and workers live in the running loop; a new loop starts afresh (like a restart)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop = loop
            self._queue = asyncio.Queue()
            self._acks = {}
            self._waiting = {}
            self._workers = []
        self._workers = [w for w in self._workers if not w.done()]
        while len(self._workers) < self.workers:
            self._workers.append(loop.create_task(self._work(), name="desk-upstream-worker"))
        return loop

    async def _work(self) -> None:
        assert self._queue is not None
        queue = self._queue
        while True:
            job, fault = await queue.get()
            try:
                await self._one(job, fault)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a worker bug: the claim (if any) stays; reconcile settles it
                self._count("worker_error")
                self.on_event("upstream.worker_error", {"tenant": job.tenant, "dispatchId": job.dispatch_id,
                                                        "exception": type(exc).__name__})
            finally:
                queue.task_done()

    async def _one(self, job: Job, fault: Fault | None) -> None:
        name = fault.name if fault else None
        if fault is not None and name in ("delay", "hang", "kill") and fault.ms > 0:
            await asyncio.sleep(fault.seconds)
        self._maybe_stop(fault, "before_claim")
        if fault is not None and name == "hang" and fault.at == "before_claim":
            await asyncio.Event().wait()
        try:
            token = await off_loop_result(self.tickets.db, self.tickets.claim, job.tenant, job.dispatch_id,
                                    self.claim_lease_s, fence=job.fence)
        except LeaseLost:
            return self._lease_lost(job, "before_claim")
        if token is None:  # the tool withdrew it first: nothing may be written
            self._count("fenced_before_claim")
            self._ack(job.dispatch_id, ACK_FENCED)
            return
        self._maybe_stop(fault, "after_claim")
        if fault is not None and name == "hang" and fault.at == "after_claim":
            await asyncio.Event().wait()
        if fault is not None and name == "stall":
            await asyncio.sleep(fault.seconds)
        if name == "crash":  # the worker dies mid-way: its claim stays, no ack, nothing written
            self._count("crashed_after_claim")
            return
        try:
            if name == "error":
                raise UpstreamError("ticket system returned 503")
            body = f"Ticket {{ticket}} opened for {job.incident_id} ({job.title})"
            if job.note:
                body += f": {job.note}"
            ticket = await off_loop_result(self.tickets.db, self.tickets.complete, job.tenant, job.dispatch_id, token,
                                     channel=self.channel, body=body, fence=job.fence)
        except UpstreamError as exc:
            try:
                failed = await off_loop_result(self.tickets.db, self.tickets.fail, job.tenant, job.dispatch_id, token,
                                         str(exc), fence=job.fence)
            except LeaseLost:
                failed = False
            self._count("upstream_error")
            self._ack(job.dispatch_id, ACK_FAILED if failed else ACK_FENCED)
            return
        except LeaseLost:
            return self._lease_lost(job, "before_write")
        except InvalidDispatchTransition:  # fenced while we worked: the transaction rolled back
            self._count("fenced_before_write")
            self._ack(job.dispatch_id, ACK_FENCED)
            return
        self._count("written")
        self.on_event("upstream.ticket_written", {"tenant": job.tenant, "dispatchId": job.dispatch_id,
                                                 "ticketId": ticket.ticket_id})
        self._maybe_stop(fault, "after_write")
        if fault is not None and name == "hang" and fault.at == "after_write":
            await asyncio.Event().wait()
        if name == "lose_ack":  # the side effect happened; the ack never leaves
            self._count("ack_lost")
            return
        self._ack(job.dispatch_id, ACK_DONE)

    def _lease_lost(self, job: Job, point: str) -> None:
        """The task behind the job was taken over by another process: its transaction rolled back,
        nothing was claimed or written, and the job stops here."""
        self._count(f"fenced_lease_lost_{point}")
        self.on_event("upstream.lease_lost", {"tenant": job.tenant, "dispatchId": job.dispatch_id, "at": point})
        self._ack(job.dispatch_id, ACK_FENCED)

    def _maybe_stop(self, fault: Fault | None, point: str) -> None:
        if fault is not None and fault.name == "kill" and fault.at == point:
            os._exit(KILL_STATUS)  # the whole process, mid-task: no cleanup, no flush

    def _ack(self, dispatch_id: str, outcome: str) -> None:
        ack = self._acks.get(dispatch_id)
        if ack is not None and not ack.done():
            ack.set_result(outcome)

    def _count(self, what: str) -> None:
        self.stats[what] = self.stats.get(what, 0) + 1

