"""Reading the audit trail back: :meth:`truecall.AuditLog.query` and :meth:`~truecall.AuditLog.kinds`.

Plain statements over ``audit_events`` (newest first, filtered by the columns a record has for the
purpose); the log loads what it journaled before it asks (``AuditLog.sync``).
"""

from __future__ import annotations

from typing import Any

import orjson

from ._records import AuditRecord
from ._retention import time_window
from ..storage import Storage

__all__ = ["select_records", "select_kinds"]


def select_records(db: Storage, *, kind: str | None, tenant: str | None, subject: str | None, tool: str | None,
                   outcome: str | None, since: float | None, until: float | None, limit: int) -> list[AuditRecord]:
    """Newest first, filtered by the given columns (``None``: any)."""
    where, params = time_window(since, until)
    for name, value in (("kind", kind), ("tenant", tenant), ("subject", subject), ("tool", tool), ("outcome", outcome)):
        if value is not None:
            where.append(f"{name} = ?")
            params.append(value)
    sql = "SELECT id, ts, kind, tenant, subject, tool, outcome, fields FROM audit_events"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY id DESC LIMIT ?"
    params.append(int(limit))
    return [_record(r) for r in db.fetchall(sql, params)]


def select_kinds(db: Storage) -> list[str]:
    """Every kind the trail holds, sorted."""
    return [r[0] for r in db.fetchall("SELECT DISTINCT kind FROM audit_events ORDER BY kind")]


def _record(r: tuple[Any, ...]) -> AuditRecord:
    return AuditRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], orjson.loads(r[7]))
