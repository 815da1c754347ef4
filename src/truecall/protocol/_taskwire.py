"""Tasks on the wire: the extension's shapes (2026-07-28) and 2025-11-25's core shapes."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ..tasks import Task, TaskStatus

__all__ = ["ext_task", "ext_detailed", "core_task", "iso"]


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ext_task(task: Task) -> dict[str, Any]:
    """The extension's ``Task``: flat, ``ttlMs``/``pollIntervalMs``."""
    out: dict[str, Any] = {
        "taskId": task.task_id,
        "status": task.status.value,
        "createdAt": iso(task.created_at),
        "lastUpdatedAt": iso(task.updated_at),
        "ttlMs": task.ttl_ms,
        "pollIntervalMs": task.poll_interval_ms,
    }
    if task.status_message:
        out["statusMessage"] = task.status_message
    return out


def ext_detailed(task: Task, *, result_type: bool = True) -> dict[str, Any]:
    """``tasks/get``: the task plus what its status carries (questions, result or error)."""
    out = ext_task(task)
    if result_type:
        out["resultType"] = "complete"
    if task.status is TaskStatus.INPUT_REQUIRED:
        out["inputRequests"] = task.input_requests or {}
    elif task.status is TaskStatus.COMPLETED:
        out["result"] = {**(task.result or {"content": []}), "resultType": "complete"}
    elif task.status is TaskStatus.FAILED:
        out["error"] = task.error or {"code": -32603, "message": "Internal error"}
    return out


def core_task(task: Task) -> dict[str, Any]:
    """2025-11-25's ``Task``; there a tool error result means status ``failed``."""
    status = task.status.value
    if task.status is TaskStatus.COMPLETED and (task.result or {}).get("isError"):
        status = "failed"
    out: dict[str, Any] = {
        "taskId": task.task_id,
        "status": status,
        "createdAt": iso(task.created_at),
        "lastUpdatedAt": iso(task.updated_at),
        "ttl": task.ttl_ms,
        "pollInterval": task.poll_interval_ms,
    }
    if task.status_message:
        out["statusMessage"] = task.status_message
    return out
