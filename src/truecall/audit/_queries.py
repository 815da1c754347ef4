"""Reading the audit trail back: :meth:`truecall.AuditLog.query` and :meth:`~truecall.AuditLog.kinds`.

Plain statements over ``audit_events`` and its sealed segments (SQLite: :mod:`truecall.audit._segments`),
newest first, filtered by the columns a record has for the purpose; the log loads what it journaled
before it asks (``AuditLog.sync``).
"""

from __future__ import annotations

from typing import Any

import orjson

from ._records import AuditRecord
from ._retention import time_window
from ._segments import read_trail, union
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

    def read(tables: list[str]) -> list[AuditRecord]:
        sql, bound = union(tables, "SELECT id, ts, kind, tenant, subject, tool, outcome, fields FROM {table}",
                           " AND ".join(where), params, "ORDER BY id DESC LIMIT ?")
        return [_record(r) for r in db.fetchall(sql, [*bound, int(limit)])]

    return read_trail(db, read)


def select_kinds(db: Storage) -> list[str]:
    """Every kind the trail holds, sorted."""
    def read(tables: list[str]) -> list[str]:
        sql, params = union(tables, "SELECT DISTINCT kind FROM {table}", "", [], "ORDER BY kind", distinct=True)
        return [r[0] for r in db.fetchall(sql, params)]

    return read_trail(db, read)


def _record(r: tuple[Any, ...]) -> AuditRecord:
    return AuditRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], orjson.loads(r[7]))
