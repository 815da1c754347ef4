"""The audit trail: every decision, written (redacted) before the answer leaves.

``record(kind, **fields)`` is the seed's API.  A handful of fields get their own
columns so that ``truecall audit`` can filter without parsing JSON; everything
else is redacted and stored as one JSON document.  Tool arguments are never
stored: callers pass ``arguments=`` and get a fingerprint (keys, size, HMAC).
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterable

import orjson

from .redact import fingerprint, redact
from .storage import Database

__all__ = ["AuditLog", "AuditRecord", "AUDIT_MIGRATIONS"]

AUDIT_MIGRATIONS = [
    (
        "audit-1",
        """
        CREATE TABLE audit_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            ts REAL NOT NULL,
            kind TEXT NOT NULL,
            tenant TEXT,
            subject TEXT,
            tool TEXT,
            outcome TEXT,
            fields BLOB NOT NULL
        );
        CREATE INDEX audit_events_tenant_ts ON audit_events (tenant, ts);
        CREATE INDEX audit_events_kind ON audit_events (kind)
        """,
    ),
    # Every index is paid on every call; queries filter by tenant and time first.
    ("audit-2", "DROP INDEX audit_events_kind"),
]

_COLUMNS = ("tenant", "subject", "tool", "outcome")
_INSERT = "INSERT INTO audit_events (ts, kind, tenant, subject, tool, outcome, fields) VALUES (?, ?, ?, ?, ?, ?, ?)"


@dataclass(frozen=True, slots=True)
class AuditRecord:
    id: int
    ts: float
    kind: str
    tenant: str | None
    subject: str | None
    tool: str | None
    outcome: str | None
    fields: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ts": self.ts,
            "kind": self.kind,
            "tenant": self.tenant,
            "subject": self.subject,
            "tool": self.tool,
            "outcome": self.outcome,
            **self.fields,
        }


class AuditLog:
    """Durable, redacted audit records in the given database."""

    def __init__(self, db: Database, *, key: bytes | None = None, enabled: bool = True) -> None:
        """``key`` is the HMAC key for argument hashes; keep it outside the database
        (configuration or a key file) so that a copy of the database cannot be
        brute-forced for short secrets.  Without one, a per-process key is used."""
        self.db = db
        self.enabled = enabled
        db.migrate(AUDIT_MIGRATIONS)
        self._key = key or secrets.token_bytes(32)
        # Group commit (see :meth:`defer`): records made in one event-loop turn share a commit.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._pending: list[tuple[Any, ...]] = []
        self._flushing: asyncio.Future[None] | None = None

    def defer(self, loop: asyncio.AbstractEventLoop) -> None:
        """Batch records made on ``loop`` into one commit per loop turn.

        Transports call this when they start serving and then ``await durable()``
        before an answer leaves: every record behind an answer is committed first,
        yet concurrent calls share one commit instead of paying one each.
        """
        self._loop = loop
        self._loop_thread = threading.get_ident()

    async def durable(self) -> None:
        """Return once every record made so far is committed (raises if the commit failed)."""
        if self._flushing is not None:
            await asyncio.shield(self._flushing)

    def flush(self) -> None:
        """Commit what is pending now (at shutdown)."""
        if self._pending or self._flushing is not None:
            self._flush()

    def _flush(self) -> None:
        rows, self._pending = self._pending, []
        future, self._flushing = self._flushing, None
        try:
            if len(rows) == 1:  # an autocommit insert is one statement instead of three
                self.db.execute(_INSERT, rows[0])
            elif rows:
                with self.db.transaction():
                    for row in rows:
                        self.db.execute(_INSERT, row)
        except BaseException as exc:  # nothing behind these records may be acknowledged
            if future is not None and not future.done():
                future.set_exception(exc)
                future.exception()  # retrieved here too: a waiter may already be gone
            if not isinstance(exc, Exception):
                raise
            return
        if future is not None and not future.done():
            future.set_result(None)

    def fingerprint(self, arguments: Any) -> dict[str, Any]:
        return fingerprint(arguments, self._key)

    def record(self, kind: str, **fields: Any) -> None:
        """Write one event; returns only once it is committed."""
        if not self.enabled:
            return
        arguments = fields.pop("arguments", _MISSING)
        if arguments is not _MISSING:
            fields.update(fingerprint(arguments, self._key))
        cols = [fields.pop(c, None) for c in _COLUMNS]
        cols = [None if v is None else redact(str(v))[:256] for v in cols]
        doc = orjson.dumps(redact(fields), default=str)
        row = (time.time(), kind, *cols, doc)
        loop = self._loop
        if loop is not None and self._loop_thread == threading.get_ident():
            self._pending.append(row)
            if self._flushing is None:
                self._flushing = loop.create_future()
                loop.call_soon(self._flush)
            return
        self.db.execute(_INSERT, row)

    def query(
        self,
        *,
        kind: str | None = None,
        tenant: str | None = None,
        subject: str | None = None,
        tool: str | None = None,
        outcome: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        """Newest first, filtered by the given columns."""
        where, params = [], []
        for name, value in (("kind", kind), ("tenant", tenant), ("subject", subject), ("tool", tool), ("outcome", outcome)):
            if value is not None:
                where.append(f"{name} = ?")
                params.append(value)
        if since is not None:
            where.append("ts >= ?")
            params.append(since)
        if until is not None:
            where.append("ts < ?")
            params.append(until)
        sql = "SELECT id, ts, kind, tenant, subject, tool, outcome, fields FROM audit_events"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT ?"
        params.append(int(limit))
        return [_row(r) for r in self.db.fetchall(sql, params)]

    def kinds(self) -> Iterable[str]:
        return [r[0] for r in self.db.fetchall("SELECT DISTINCT kind FROM audit_events ORDER BY kind")]


_MISSING = object()


def _row(r: tuple[Any, ...]) -> AuditRecord:
    return AuditRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], orjson.loads(r[7]))
