"""Tasks: work that was accepted, not (yet) completed.

Its states in one table (``_task_state``), the durable store (``task_store``: :class:`TaskStore`) and
the runtime that runs accepted work with leases and recovers it (``runtime``)."""

from ._task_state import TERMINAL, TRANSITIONS, InvalidTransition, TaskEvent, TaskStatus, next_status
from .task_store import MISSING_TASK_INPUT_TEXT, LeaseLost, Task, TaskInputInvalid, TaskNotFound, TaskStore

__all__ = [
    "TERMINAL",
    "TRANSITIONS",
    "InvalidTransition",
    "TaskEvent",
    "TaskStatus",
    "next_status",
    "MISSING_TASK_INPUT_TEXT",
    "Task",
    "TaskInputInvalid",
    "LeaseLost",
    "TaskNotFound",
    "TaskStore",
]
