"""Every state change of an upstream dispatch (a job on the ticket queue), in one table.

A *dispatch* is the upstream queue's record of one job: "open a ticket for this
incident and notify on-call".  Its state only moves through :data:`TRANSITIONS`,
each move a compare-and-set inside one SQLite transaction
(:meth:`~truecall.incidents.tickets.TicketStore._transition`):

    queued  --claim-->    claimed     a worker takes the job (exactly one can)
    claimed --complete--> done        ticket + outbox notification + done: ONE transaction
    queued  --abandon-->  abandoned   the tool gave up before any worker claimed it
    claimed --fail-->     failed      the upstream reported an error before writing anything
    claimed --expire-->   abandoned   the claim's lease ran out (its worker is presumed dead);
                                      only reconcile issues it, and only after the lease

The fence: a ticket is written only by ``complete``, which needs ``claimed``.
``abandoned`` and ``failed`` are terminal, so once a dispatch reaches either,
nothing can ever be written for it — whoever is still holding the job (a slow
worker, a late retry of the queue) finds the transition refused and its
transaction rolled back.  That is what lets the tool say "nothing was written".

Every illegal move raises :class:`InvalidDispatchTransition` (a ``ValueError``)
naming the current state; nothing is silently ignored.
"""

from __future__ import annotations

import enum

__all__ = ["DispatchState", "DispatchEvent", "InvalidDispatchTransition", "TRANSITIONS", "TERMINAL", "NOTHING_WRITTEN",
           "next_dispatch_state"]


class DispatchState(str, enum.Enum):
    QUEUED = "queued"
    CLAIMED = "claimed"
    DONE = "done"
    ABANDONED = "abandoned"
    FAILED = "failed"


class DispatchEvent(str, enum.Enum):
    CLAIM = "claim"
    COMPLETE = "complete"
    ABANDON = "abandon"
    FAIL = "fail"
    EXPIRE = "expire"


S, E = DispatchState, DispatchEvent

TRANSITIONS: dict[tuple[DispatchState, DispatchEvent], DispatchState] = {
    (S.QUEUED, E.CLAIM): S.CLAIMED,
    (S.CLAIMED, E.COMPLETE): S.DONE,
    (S.QUEUED, E.ABANDON): S.ABANDONED,
    (S.CLAIMED, E.FAIL): S.FAILED,
    (S.CLAIMED, E.EXPIRE): S.ABANDONED,
}

TERMINAL = frozenset({S.DONE, S.ABANDONED, S.FAILED})
#: Terminal states in which no ticket exists for the dispatch, and none ever will.
NOTHING_WRITTEN = frozenset({S.ABANDONED, S.FAILED})

_REFUSAL = {
    E.CLAIM: "dispatch cannot be claimed",
    E.COMPLETE: "dispatch cannot complete",
    E.ABANDON: "dispatch cannot be abandoned",
    E.FAIL: "dispatch cannot fail",
    E.EXPIRE: "dispatch claim cannot expire",
}


class InvalidDispatchTransition(ValueError):
    """An event not allowed in the dispatch's current state."""

    def __init__(self, state: DispatchState, event: DispatchEvent) -> None:
        self.state, self.event = state, event
        super().__init__(f"{_REFUSAL[event]}: {state.value}")


def next_dispatch_state(state: DispatchState | str, event: DispatchEvent | str) -> DispatchState:
    """The state after ``event``, or :class:`InvalidDispatchTransition`."""
    state, event = DispatchState(state), DispatchEvent(event)
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise InvalidDispatchTransition(state, event) from None
