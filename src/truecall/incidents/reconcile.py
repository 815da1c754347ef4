"""Reconcile: settle ``outcome_unknown`` tasks of ``incident.handle`` against the ticket table.

Semantics (decided here, shown by ``truecall tasks show`` and ``incident.reconcile``):

- A task's result is **never rewritten**.  It said "unknown" when it ended, and
  that was true then.  What reconcile finds out later is a **settlement**: a
  separate, dated row keyed by the task (``settlements``), naming who settled it.
  The first settlement of a task stands; running reconcile again changes nothing.
- ``ticket_exists`` — a ticket exists for the task's idempotency key (with its
  notification: both are written in one transaction).  The ticket id is recorded.
- ``nothing_happened`` — no ticket exists for the key *and* the task's dispatch is
  final without one: abandoned or failed, or reconcile fences it now (``queued`` →
  abandoned; ``claimed`` whose lease has run out → abandoned).  After the fence
  no worker can write a ticket for it, so "nothing happened" stays true.
- **pending** (no settlement) — a worker still holds an unexpired claim: it may
  yet write.  Reconcile says when the claim runs out; run it again after that.
- A task with no recorded request never handed a job to the upstream (request
  and dispatch are written in one transaction): ``nothing_happened``.

The lookup takes the ticket table as the truth, not the queue's ack, not the
task's result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from truecall import Principal, TaskStore, describe
from truecall.texts import say

from .dispatch_state import DispatchState
from .handle import TOOL
from .tickets import NOTHING_HAPPENED, TICKET_EXISTS, Settlement, TicketStore

__all__ = ["ReconcileReport", "reconcile", "is_unknown", "describe_settlement", "describe_with_settlement",
           "fenced_cancel", "CancelRefused"]

_MAX_TASKS = 100_000
#: How long an operator's cancel holds the lease it took over (it settles within one transaction).
_OPERATOR_LEASE_S = 60.0


@dataclass
class ReconcileReport:
    settled: list[Settlement] = field(default_factory=list)
    #: (task id, why it cannot be settled yet)
    pending: list[dict[str, Any]] = field(default_factory=list)
    #: Settlements recorded earlier for the tasks examined (the first settlement stands).
    already_settled: list[Settlement] = field(default_factory=list)
    examined: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"examined": self.examined, "settled": [s.to_dict() for s in self.settled], "pending": self.pending,
                "alreadySettled": [s.to_dict() for s in self.already_settled]}


def is_unknown(task: Any) -> bool:
    """A completed task whose result is an ``outcome_unknown`` error."""
    result = task.result or {}
    error = (result.get("structuredContent") or {}).get("error") if result.get("isError") else None
    return task.status.value == "completed" and isinstance(error, dict) and error.get("kind") == "outcome_unknown"


def reconcile(tasks: TaskStore, tickets: TicketStore, *, owner: Principal | None = None, task_id: str | None = None,
              settled_by: str = "reconcile", now: float | None = None) -> ReconcileReport:
    """Settle every unsettled ``outcome_unknown`` ``incident.handle`` task (of ``owner``, or all)."""
    report = ReconcileReport()
    if task_id is not None:
        candidates = [tasks.get(task_id, owner)]
    else:
        candidates = tasks.list(owner, status="completed", limit=_MAX_TASKS)
    for task in candidates:
        if task.tool != TOOL or not is_unknown(task):
            continue
        report.examined += 1
        tenant = task.owner_tenant or ""
        earlier = tickets.settlement(tenant, task.task_id)
        if earlier is not None:
            report.already_settled.append(earlier)
            continue
        outcome = settle_one(tickets, tenant, task.task_id, settled_by=settled_by, now=now)
        if isinstance(outcome, Settlement):
            report.settled.append(outcome)
        else:
            report.pending.append({"taskId": task.task_id, "reason": outcome})
    return report


def settle_one(tickets: TicketStore, tenant: str, task_id: str, *, settled_by: str,
               now: float | None = None) -> Settlement | str:
    """The settlement for one task (recorded), or why it must wait."""
    now = time.time() if now is None else now
    with tickets.db.transaction():
        existing = tickets.settlement(tenant, task_id)
        if existing is not None:
            return existing
        req = tickets.request(tenant, task_id)
        if req is None or req.dispatch_id is None:
            settlement = Settlement(tenant, task_id, None, None, NOTHING_HAPPENED, None,
                                    "no job was ever handed to the upstream for this task", settled_by, now)
        else:
            ticket = tickets.ticket_for_key(tenant, req.idempotency_key)
            if ticket is not None:
                by = "by this task's dispatch" if ticket.dispatch_id == req.dispatch_id else \
                    "by another request with the same idempotencyKey"
                settlement = Settlement(tenant, task_id, req.dispatch_id, req.idempotency_key, TICKET_EXISTS,
                                        ticket.ticket_id, f"ticket {ticket.ticket_id} exists for {req.incident_id} "
                                        f"({by}); on-call was notified", settled_by, now)
            else:
                state = tickets.fence(tenant, req.dispatch_id, now=now)
                if state is DispatchState.DONE:  # a worker finished just now: look again
                    ticket = tickets.ticket_for_key(tenant, req.idempotency_key)
                if ticket is not None:
                    settlement = Settlement(tenant, task_id, req.dispatch_id, req.idempotency_key, TICKET_EXISTS,
                                            ticket.ticket_id, f"ticket {ticket.ticket_id} exists for "
                                            f"{req.incident_id}; on-call was notified", settled_by, now)
                elif state in (DispatchState.ABANDONED, DispatchState.FAILED):
                    settlement = Settlement(tenant, task_id, req.dispatch_id, req.idempotency_key, NOTHING_HAPPENED,
                                            None, f"no ticket exists for {req.incident_id}; the dispatch is "
                                            f"{state.value} and can never write one", settled_by, now)
                elif state is DispatchState.CLAIMED:
                    found = tickets.dispatch(tenant, req.dispatch_id)
                    until = found.lease_until if found else None
                    return (f"a worker still holds the claim on dispatch {req.dispatch_id}"
                            + (f" until {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(until))}" if until else "")
                            + "; run reconcile again after that")
                else:
                    return f"dispatch {req.dispatch_id} is {state.value} but no ticket exists: integrity problem"
        tickets.add_settlement(settlement)
    return settlement


def describe_settlement(settlement: Settlement, locale: str | None = None) -> str:
    """What reconciling found out, for the user (``locale`` as in :func:`truecall.describe`)."""
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(settlement.settled_at))
    if settlement.outcome == TICKET_EXISTS:
        return say("desk.settled.ticket", locale, when=when, by=settlement.settled_by, ticket=settlement.ticket_id)
    return say("desk.settled.nothing", locale, when=when, by=settlement.settled_by)


def describe_with_settlement(task_view: dict[str, Any], settlement: Settlement | None,
                             locale: str | None = None) -> str:
    """``describe()`` of the task as it ended, then what was found out later (never merged into it)."""
    said = describe(task_view, locale)
    if settlement is None:
        return said
    return f"{said}{say('describe.sep', locale)}{describe_settlement(settlement, locale)}"


class CancelRefused(ValueError):
    """The task cannot be cancelled truthfully (its job can no longer be stopped)."""


@dataclass(frozen=True)
class CancelOutcome:
    task: Any
    #: A live server process runs the task: it was asked to stop (cooperatively, within its poll interval).
    requested: bool
    #: The desk's job was withdrawn (queued → abandoned): nothing can be written for it any more.
    withdrawn: bool


def fenced_cancel(tasks: TaskStore, tickets: TicketStore | None, task_id: str, *, message: str,
                  now: float | None = None) -> CancelOutcome:
    """Cancel a task from outside its server process, without lying.

    - A terminal task: :class:`~truecall.InvalidTransition` from the task state table, naming its status.
    - ``incident.handle``: the job is withdrawn first (``queued`` → abandoned), in the same
      transaction.  A job a worker already claimed or finished cannot be stopped, so
      "cancelled" would be a lie: refused (:class:`CancelRefused`, naming the dispatch state).
    - A task whose runner is alive (its lease holds) belongs to that process: it is asked to
      stop (``TaskStore.request_cancel``) and settles the task itself.  Otherwise (no runner,
      or its lease ran out) the lease is taken over first — the old runner's later writes are
      refused — and the task is cancelled here, through the task state table, in one transaction.
    """
    now = time.time() if now is None else now
    withdrawn = False
    with tasks.db.transaction():
        task = tasks.get(task_id)
        if task.terminal:
            tasks.cancel(task_id, message=message)  # raises InvalidTransition naming the status
        runner, lease_until = tasks.lease_holder(task_id)
        live = runner is not None and lease_until is not None and lease_until > now
        epoch = None
        if not live:
            # Take the lease away first (in this same transaction): a runner that was only frozen
            # can then never write for the task after this settlement.
            taken = tasks.take_over(task, "operator-cancel", _OPERATOR_LEASE_S, now=now)
            if taken is None:  # renewed or settled meanwhile
                task = tasks.get(task_id)
                if task.terminal:
                    tasks.cancel(task_id, message=message)
                live = True
            else:
                task, epoch = taken, taken.lease_epoch
        if task.tool == TOOL and tickets is not None:
            tenant = task.owner_tenant or ""
            req = tickets.request(tenant, task_id)
            if req is not None and req.dispatch_id is not None:
                ticket = tickets.ticket_for_key(tenant, req.idempotency_key)
                if ticket is not None:
                    raise CancelRefused(f"task cannot be cancelled: ticket {ticket.ticket_id} already exists for it "
                                        "(the task will complete with it)")
                state, _ = tickets.settle_wait(tenant, req.dispatch_id, req.idempotency_key)
                if state not in (DispatchState.ABANDONED, DispatchState.FAILED):
                    raise CancelRefused(f"task cannot be cancelled: its dispatch is {state.value} (a worker holds the "
                                        "job and may still write the ticket)")
                withdrawn = True
        if live:
            tasks.request_cancel(task_id)
            return CancelOutcome(task, True, withdrawn)
        return CancelOutcome(tasks.cancel(task_id, message=message, epoch=epoch), False, withdrawn)
