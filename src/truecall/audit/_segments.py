"""SQLite: the audit trail in segments, old segments dropped whole (issue 29).

At a steady rate, retention drops as many records as arrive, so what dropping one costs is paid per
call.  Deleting a record costs SQLite about 1.9 µs of CPU (its row and its ``(tenant, ts)`` index
entry, the pages rewritten); dropping a table of them about 0.15 µs a record (its pages put on the
free list) — against 14–45 µs of server CPU per call (bench/sweep_cost.py, bench/run.py).  So, as
PostgreSQL's partitions do (:mod:`truecall.audit._partitions`), old records go a table at a time;
SQLite has no partitioned tables, hence segments:

- **The live segment** is ``audit_events``: every writer inserts there, as before.
- **Sealing.**  At a sweep, the live segment is sealed when its oldest record is a *span* old
  (:func:`truecall.audit._partitions.partition_span`: a tenth of the age, at most the export period),
  when it holds a tenth of a size budget, or :data:`SEGMENT_RECORDS` records (a drop's write lock
  stays short: ~15 ms).  One write transaction renames it ``audit_events_s<its first id>`` and
  makes a new, empty ``audit_events`` (the same columns and indexes, the indexes named after the
  id where it starts) whose ids go on from the old one's (its ``sqlite_sequence`` row: ids are never
  reused).  Writers in other processes re-prepare their statements and insert into the new one.
- **Reading the trail** reads every segment (:func:`segments`, :func:`union`).
- **Dropped whole**, oldest first: a sealed segment whose newest record is past the age, while the
  trail is over a size (and would still be within a tenth of it without the segment), or whose
  newest id is among the oldest records a number drops.  Its records
  are exported first (appended to the period files and ``fsync``'d), then one transaction records
  the files' lengths and checksums and drops the table.  Killed in between, the table is still there
  and the next sweep cuts the files back and exports it again: nothing is lost, nothing exported
  twice.  ``secure_delete`` is off for the drop (zeroing every freed page costs ~0.9 µs a record):
  a record was redacted before it was stored, and an exported one is in the files anyway.
- **What is left to rows** (:func:`truecall.audit._retention.sweep_once`, in the oldest segment): a
  number or size budget exactly; an age only for stragglers older than the age and two spans and
  a sweep interval (a segment spans a little more than a span: it is sealed at a sweep).  So an
  age is applied a segment at a time, and a record is kept at most that much past it.
"""

from __future__ import annotations

import re
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ._sql import _db_bytes, record_and_drop

if TYPE_CHECKING:
    from ._retention import ExportWriter, Retention, _Chunk

    #: ``(db, records, batch, period_s, table) -> chunks``: the sweep's reader of export lines.
    Chunker = Callable[[Any, int, int, float, str], list[_Chunk]]

__all__ = ["Segments", "segments", "union", "read_trail", "SEGMENT_RECORDS", "LIVE"]

T = TypeVar("T")

LIVE = "audit_events"
#: A live segment holding this many records is sealed whatever its age: dropping it then holds the
#: write lock some 15 ms (about 0.15 µs a record).
SEGMENT_RECORDS = 100_000
#: Records read per statement while a segment is exported.
EXPORT_BATCH = 5000
#: The newest records (by id) whose times are read for a segment's newest time: ids follow the
#: journals' loads, which may interleave processes' records by a fraction of a second.
NEWEST_READ = 1000

_SEALED = re.compile(r"audit_events_s\d{19}")
_INDEX_NAME = re.compile(r"^(CREATE\s+(?:UNIQUE\s+)?INDEX\s+)(\"?)([A-Za-z0-9_]+?)(?:_\d+)?\2(\s+ON\s+)", re.I)


def segments(db: Any) -> list[str]:
    """The audit trail's tables, oldest first: the sealed segments (SQLite), then ``audit_events``."""
    if db.dialect != "sqlite":
        return [LIVE]
    rows = db.fetchall("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'audit\\_events\\_s%' "
                       "ESCAPE '\\' ORDER BY name")
    return [str(r[0]) for r in rows if _SEALED.fullmatch(str(r[0]))] + [LIVE]


def union(tables: list[str], select: str, where: str, params: list[Any], tail: str = "", *,
          distinct: bool = False) -> tuple[str, list[Any]]:
    """``select`` (``SELECT … FROM {table}``) over ``tables``, each filtered by ``where`` (its
    ``params`` repeated per table), then ``tail`` (``ORDER BY … LIMIT ?``, applied to the whole:
    SQLite merges the tables' ordered rows)."""
    arm = select + (f" WHERE {where}" if where else "")
    sql = (" UNION " if distinct else " UNION ALL ").join(arm.format(table=t) for t in tables)
    return (sql + (" " + tail if tail else "")), list(params) * len(tables)


def read_trail(db: Any, read: Callable[[list[str]], T]) -> T:
    """``read(tables)`` over the trail's tables, read again if a segment was sealed or dropped (by
    another process's sweep) meanwhile: a statement over a list read before a seal would miss the
    renamed segment, and one naming a segment dropped since fails ("no such table").  (A seal's name
    is new every time, so an unchanged list means no seal came between.)"""
    while True:
        tables = segments(db)
        try:
            out = read(tables)
        except Exception as exc:
            if "no such table" not in str(exc) or segments(db) == tables:
                raise
            continue
        if segments(db) == tables:
            return out


def _id_span(db: Any, tables: list[str]) -> tuple[int, int] | None:
    """The oldest and the newest id of the trail (its ends: one index read each)."""
    low = high = None
    for t in tables:
        row = db.fetchone(f"SELECT MIN(id) FROM {t}")
        if row and row[0] is not None:
            low = int(row[0])
            break
    for t in reversed(tables):
        row = db.fetchone(f"SELECT MAX(id) FROM {t}")
        if row and row[0] is not None:
            high = int(row[0])
            break
    return None if low is None or high is None else (low, high)


class Segments:
    """The segments of ``audit_events`` on one SQLite database (see the module's docstring)."""

    def __init__(self, db: Any, span_s: float, policy: "Retention", interval_s: float, chunks: "Chunker") -> None:
        """``chunks``: how a segment's records are read as export lines (the sweep's own
        ``_sqlite_chunks``, handed over by the sweeper: this module sits below ``_retention``)."""
        self.db = db
        self._chunks = chunks
        self.span_s = span_s
        #: Stragglers of an age are deleted by rows only past the age and this (see the docstring).
        self.margin_s = 2 * span_s + interval_s
        self.policy = policy
        #: Records the last :meth:`drop_whole` dropped with their segments.
        self.last_whole = 0
        #: Segments sealed so far by this process.
        self.sealed = 0

    def oldest(self, tables: list[str]) -> str:
        """The oldest of ``tables`` (:func:`segments`) that holds a record (``audit_events`` when none does)."""
        for t in tables:
            if self.db.fetchone(f"SELECT 1 FROM {t} LIMIT 1"):
                return t
        return LIVE

    # -- sealing -----------------------------------------------------------------------------------

    def _due(self, now: float) -> int | None:
        """The live segment's first id when it is to be sealed (``None``: not now)."""
        db = self.db
        row = db.fetchone(f"SELECT (SELECT id FROM {LIVE} ORDER BY id LIMIT 1), "
                          f"(SELECT ts FROM {LIVE} ORDER BY id LIMIT 1), (SELECT MAX(id) FROM {LIVE})")
        if not row or row[0] is None:
            return None
        first, oldest, last = int(row[0]), float(row[1]), int(row[2])
        held = last - first + 1
        due = oldest <= now - self.span_s or held >= SEGMENT_RECORDS
        if not due and self.policy.max_bytes is not None:
            used = _db_bytes(db)
            span = _id_span(db, segments(db))
            if used and span:
                due = held * (used / (span[1] - span[0] + 1)) >= self.policy.max_bytes / 10
        return first if due else None

    def seal(self, now: float | None = None) -> str | None:
        """Seal the live segment if it is due (see the module's docstring); returns the new name."""
        now = time.time() if now is None else now
        first = self._due(now)
        if first is None:
            return None
        db = self.db
        with db.transaction():
            row = db.fetchone(f"SELECT MIN(id) FROM {LIVE}")
            if not row or row[0] is None or int(row[0]) != first:
                return None  # another process sealed it meanwhile
            name = f"{LIVE}_s{first:019d}"
            # (read before the rename: they name audit_events, as the new table and indexes must)
            table = db.fetchone("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (LIVE,))
            indexes = db.fetchall("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
                                  "AND sql IS NOT NULL", (LIVE,))
            seq = db.fetchone("SELECT seq FROM sqlite_sequence WHERE name = ?", (LIVE,))
            if table is None or seq is None:
                raise RuntimeError("audit_events is not an AUTOINCREMENT table: it cannot be sealed")
            db.execute(f"ALTER TABLE {LIVE} RENAME TO {name}")
            db.execute(str(table[0]))
            for (sql,) in indexes:
                # (the renamed table keeps its indexes and their names: the new ones are named apart)
                db.execute(_INDEX_NAME.sub(lambda m: f"{m.group(1)}{m.group(3)}_{int(seq[0]) + 1}{m.group(4)}",
                                           str(sql), count=1))
            db.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (LIVE, int(seq[0])))
        self.sealed += 1
        return name

    # -- dropping whole ------------------------------------------------------------------------------

    def _newest(self, name: str) -> tuple[int | None, float | None]:
        row = self.db.fetchone(f"SELECT MAX(id), MAX(ts) FROM (SELECT id, ts FROM {name} ORDER BY id DESC LIMIT ?)",
                               (NEWEST_READ,))
        return (None, None) if not row or row[0] is None else (int(row[0]), float(row[1]))

    def _last_id_dropped(self, policy: "Retention", tables: list[str]) -> int | None:
        """The newest id a number budget drops (``None``: it drops none)."""
        if policy.max_records is None:
            return None
        span = _id_span(self.db, tables)
        if span is None:
            return None
        drop = (span[1] - span[0] + 1) - policy.max_records
        return span[0] + drop - 1 if drop > 0 else None

    def drop_whole(self, policy: "Retention", writer: "ExportWriter | None", now: float, *,
                   stop: threading.Event | None = None) -> int:
        """Export and drop every oldest sealed segment the policy lets go whole; returns the records
        dropped."""
        dropped = 0
        tables = segments(self.db)
        last_id = self._last_id_dropped(policy, tables)
        cutoff = now - policy.max_age_s if policy.max_age_s is not None else None
        while len(tables) > 1:
            if stop is not None and stop.is_set():
                break
            name = tables[0]
            newest_id, newest_ts = self._newest(name)
            whole = newest_id is None  # (emptied by rows)
            if not whole and cutoff is not None:
                whole = newest_ts is not None and newest_ts < cutoff
            if not whole and policy.max_bytes is not None:
                # Over a size, a segment goes whole only if the trail without it is still within a tenth
                # of the budget (a segment is sealed at a tenth of it): a trail of before, sealed whole
                # at the first sweep, goes by rows instead, oldest first.
                used = _db_bytes(self.db)
                span = _id_span(self.db, tables)
                low = self.db.fetchone(f"SELECT MIN(id) FROM {name}")
                if used is not None and used > policy.max_bytes and span and low and low[0] is not None:
                    mine = (newest_id or 0) - int(low[0]) + 1
                    whole = used - mine * used / (span[1] - span[0] + 1) >= policy.max_bytes * 0.9
            if not whole and last_id is not None:
                whole = newest_id is not None and newest_id <= last_id
            if not whole:
                break
            dropped += self._export_and_drop(name, writer)
            tables = segments(self.db)
        self.last_whole = dropped
        return dropped

    def _export_and_drop(self, name: str, writer: "ExportWriter | None") -> int:
        """Export a sealed segment's records (durably), then drop it in the transaction that records
        the export; returns its records."""
        db = self.db
        ends = db.fetchone(f"SELECT (SELECT MIN(id) FROM {name}), (SELECT MAX(id) FROM {name})")
        # (a segment's ids are a range: SQLite's AUTOINCREMENT leaves no gap, rows go oldest first)
        count = 0 if not ends or ends[0] is None else int(ends[1]) - int(ends[0]) + 1
        marks: dict[str, tuple[int, str]] = {}
        if writer is not None and count:
            chunks = self._chunks(db, count, EXPORT_BATCH, writer.period_s, name)
            count = sum(c.count for c in chunks)
            for done in writer.append_encoded([c.files for c in chunks], sync=False):
                marks.update(done)
            writer.sync(marks)  # durable before the transaction that records them and drops the records

        def drop(conn: Any) -> None:
            conn.execute("PRAGMA secure_delete=OFF")
            try:
                db.execute(f"DROP TABLE IF EXISTS {name}")  # (another process's sweep may have been first)
            finally:
                conn.execute("PRAGMA secure_delete=ON")

        record_and_drop(db, writer, marks, drop)
        return count
