"""Every task state change, in one table.

The rule, for every illegal transition alike: it raises
:class:`InvalidTransition` (a ``ValueError``) naming the task's current status.
Nothing is silently ignored — cancelling a task that already completed is an
error, not a no-op, because a caller who believes it stopped something must be
told that it did not.

    input_required --provide_input--> working
    working --request_input--> input_required
    working --complete--> completed        (a tool error result also completes)
    working --fail--> failed               (protocol-level failure only)
    working|input_required --cancel--> cancelled
    working|input_required --fail--> failed (e.g. expiry, lost runner)
"""

from __future__ import annotations

import enum
from typing import Callable, Mapping

from .._machine import Machine

__all__ = ["TaskStatus", "TaskEvent", "InvalidTransition", "TRANSITIONS", "TERMINAL", "next_status"]


class TaskStatus(str, enum.Enum):
    """Where a task is; ``completed``, ``failed`` and ``cancelled`` are final (``tasks/_task_state.py`` has the table)."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class TaskEvent(str, enum.Enum):
    PROVIDE_INPUT = "provide_input"
    REQUEST_INPUT = "request_input"
    COMPLETE = "complete"
    FAIL = "fail"
    CANCEL = "cancel"


S, E = TaskStatus, TaskEvent

_MOVES = {
    (S.INPUT_REQUIRED, E.PROVIDE_INPUT): S.WORKING,
    (S.WORKING, E.REQUEST_INPUT): S.INPUT_REQUIRED,
    (S.WORKING, E.COMPLETE): S.COMPLETED,
    (S.WORKING, E.FAIL): S.FAILED,
    (S.WORKING, E.CANCEL): S.CANCELLED,
    (S.INPUT_REQUIRED, E.CANCEL): S.CANCELLED,
    (S.INPUT_REQUIRED, E.FAIL): S.FAILED,
}

TERMINAL = frozenset({S.COMPLETED, S.FAILED, S.CANCELLED})

# How each refusal reads; the current status is always appended.
_REFUSAL = {
    E.PROVIDE_INPUT: "task is not waiting for input",
    E.REQUEST_INPUT: "task cannot ask for input",
    E.COMPLETE: "task cannot complete",
    E.FAIL: "task cannot fail",
    E.CANCEL: "task cannot be cancelled",
}


class InvalidTransition(ValueError):
    """An event not allowed in the task's current status."""

    def __init__(self, status: TaskStatus, event: TaskEvent) -> None:
        self.status, self.event = status, event
        super().__init__(f"{_REFUSAL[event]}: {status.value}")


_MACHINE = Machine(TaskStatus, _MOVES, InvalidTransition)
#: Every legal move (read-only): the table :func:`next_status` moves by.
TRANSITIONS: Mapping[tuple[TaskStatus, TaskEvent], TaskStatus] = _MACHINE.moves
#: ``next_status(status, event)``: the status after ``event``, or :class:`InvalidTransition`.
next_status: Callable[[TaskStatus, TaskEvent], TaskStatus] = _MACHINE.advance
