"""PostgreSQL: the audit trail partitioned by time, old partitions dropped whole (issue 29).

A retention sweep that deletes rows one by one makes the server do the work of every record twice
(written, then deleted and vacuumed).  On PostgreSQL ``audit_events`` is instead a table
partitioned by range of ``ts``: one partition per *span* (:func:`partition_span`), created ahead
by the sweep, and a partition whose records are all past the policy is detached and dropped whole.

- **The span.**  With an age in the policy, a tenth of it (at least a second), and never more than
  the export period (``TRUECALL_AUDIT_EXPORT_PERIOD``, a day by default): an age is applied a
  partition at a time, so a record is kept at most one span longer than the age (10 %).  Without
  an age (a number or size of records only), the export period: a partition is one export file.
- **Ahead.**  The sweeper, when it starts (before any call is served) and at every sweep, makes sure
  partitions exist up to :data:`AHEAD` spans and four sweep intervals past now.  A record
  whose time no partition covers (no sweep ran for a while: retention turned off, a clock set
  ahead) lands in ``audit_events_default``; the next partition made for its time takes it over.
- **Dropped whole.**  The oldest partitions go whole when their end is past the age, or when their
  newest id is among the oldest records a number or size budget drops.  In this order, so that a
  kill anywhere loses nothing and exports nothing twice:

  1. one short transaction detaches the partition (late records for its time go to the default
     partition from then on) and notes its name in ``audit_detached``;
  2. its records are exported (appended to the period files, ``fsync``'d) in batches;
  3. one transaction records the files' lengths and checksums, drops the detached table and
     forgets its name.

  Killed after 1, the next sweep finds the name in ``audit_detached`` and starts again at 2 (the
  files are first cut back to their recorded lengths).  Detached, the records are no longer in
  queries: they are past the policy and about to go.
- **Over a size,** the oldest partitions go whole, one after the other, until the trail is within it
  (rows deleted from an old partition would give no space back: new records go to the newest).
- **What is left to rows.**  A number or size budget that falls inside a partition still deletes
  rows (the oldest first, exported first), as on SQLite; an age only the stragglers of the default
  partition older than the age plus a span.
- **Ids.**  The key is ``(id, ts)`` (a partitioned table's key includes its partition key); ids come
  from the one sequence, so they stay unique and increasing, but a killed insert leaves unused ones.

Migration (``audit-partitioned-1``, once, when a sweep first runs on the database): the old table
is renamed ``audit_events_legacy`` and attached as the partition of everything before the next
span boundary (one scan of it to check that, and one build of its new ``(id, ts)`` key, both under
the lock writers wait for), the id sequence is handed to the new table (ids go on increasing, never
reused), and an empty old table is simply dropped.
"""

from __future__ import annotations

import re
import threading
import time
from typing import TYPE_CHECKING, Any

from ._sql import _COLUMNS, _db_bytes, record_and_drop

if TYPE_CHECKING:
    from ._retention import ExportWriter, Retention

__all__ = ["Partitions", "partition_span", "AHEAD", "PARTITIONED"]

PARTITIONED = "audit-partitioned-1"
#: Partitions kept ready past now, in spans.
AHEAD = 2
#: Records read per batch while a detached partition is exported.
EXPORT_BATCH = 5000
#: How long detaching a partition waits for the table's lock (ms): writers queue behind that wait,
#: so it is kept short and tried again at the next sweep.
DETACH_WAIT_MS = 200

#: How far another host's clock may be ahead of this one's (seconds): a partition starting within
#: this of now may be receiving records while it is made.
CLOCKS_S = 60.0

#: Serializes the processes making and detaching partitions (an advisory lock: "tcparts").
_PARTITION_LOCK = 0x7463706172747300

_BOUND = re.compile(r"FOR VALUES FROM \((MINVALUE|'?[-0-9.e+]+'?)\) TO \((MAXVALUE|'?[-0-9.e+]+'?)\)")
_DEFAULT = "audit_events_default"


def partition_span(policy: "Retention", period_s: float) -> float:
    """Seconds a partition covers (see the module's docstring): whole seconds, at least one."""
    span = period_s
    if policy.max_age_s is not None:
        span = min(span, max(1.0, policy.max_age_s / 10))
    return float(max(1, int(span)))


def _bound(text: str) -> float | None:
    return None if text in ("MINVALUE", "MAXVALUE") else float(text.strip("'"))


def _stamp(ts: float) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(ts))


class Partitions:
    """The partitions of ``audit_events`` on one PostgreSQL database (see the module's docstring)."""

    def __init__(self, db: Any, span_s: float, ahead_s: float | None = None) -> None:
        """``ahead_s``: how far past now partitions are kept ready (at least :data:`AHEAD` spans; the
        sweeper asks for a few of its intervals more, so that no record waits for one)."""
        self.db = db
        self.span_s = span_s
        self.ahead_s = max(AHEAD * span_s, ahead_s or 0.0)
        #: Records the last :meth:`drop_whole` dropped with their partitions (no row deleted: no VACUUM).
        self.last_whole = 0
        self.migrate()

    # -- the table -------------------------------------------------------------------------------

    def migrate(self) -> None:
        """Make ``audit_events`` partitioned, once (any process; under the migrations' lock)."""
        from ..storage._postgres import _MIGRATION_LOCK

        db = self.db
        if db.fetchone("SELECT 1 FROM _migrations WHERE name = ?", (PARTITIONED,)):
            return
        with db.transaction() as conn:
            conn.execute("SET LOCAL statement_timeout = 0")
            conn.execute("SET LOCAL lock_timeout = 0")
            db.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
            if db.fetchone("SELECT 1 FROM _migrations WHERE name = ?", (PARTITIONED,)):
                return
            kind = db.fetchone("SELECT relkind FROM pg_class WHERE oid = 'audit_events'::regclass")
            if kind and kind[0] != "p":
                (seq,) = db.fetchone("SELECT pg_get_serial_sequence('audit_events', 'id')") or (None,)
                if seq is None:
                    raise RuntimeError("audit_events.id has no sequence: cannot partition the audit trail")
                (newest,) = db.fetchone("SELECT MAX(ts) FROM audit_events") or (None,)
                db.execute("LOCK TABLE audit_events IN ACCESS EXCLUSIVE MODE")
                db.execute("ALTER TABLE audit_events RENAME TO audit_events_legacy")
                # (a partition has the table's key, (id, ts), built when it is attached: not two)
                db.execute("ALTER TABLE audit_events_legacy DROP CONSTRAINT audit_events_pkey")
                db.execute("ALTER INDEX IF EXISTS audit_events_tenant_ts RENAME TO audit_events_legacy_tenant_ts")
                db.execute(f"CREATE TABLE audit_events (id BIGINT NOT NULL DEFAULT nextval('{seq}'::regclass), "
                           "ts DOUBLE PRECISION NOT NULL, kind TEXT NOT NULL, tenant TEXT, subject TEXT, tool TEXT, "
                           "outcome TEXT, fields BYTEA NOT NULL, PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts)")
                db.execute("CREATE INDEX audit_events_tenant_ts ON audit_events (tenant, ts)")
                # The sequence belongs to the new table: dropping the old one must not take it along.
                db.execute(f"ALTER SEQUENCE {seq} OWNED BY audit_events.id")
                db.execute("ALTER TABLE audit_events_legacy ALTER COLUMN id DROP DEFAULT")
                if newest is None:
                    db.execute("DROP TABLE audit_events_legacy")
                else:
                    # Everything before the span boundary after the newest record (or now): new
                    # partitions start there.
                    edge = (max(float(newest), time.time()) // self.span_s + 1) * self.span_s
                    db.execute(f"ALTER TABLE audit_events ATTACH PARTITION audit_events_legacy "
                               f"FOR VALUES FROM (MINVALUE) TO ({edge!r})")
                db.execute(f"CREATE TABLE {_DEFAULT} PARTITION OF audit_events DEFAULT")
            db.execute("CREATE TABLE IF NOT EXISTS audit_detached (name TEXT PRIMARY KEY)")
            db.execute("INSERT INTO _migrations VALUES (?, ?)", (PARTITIONED, time.time()))

    def ranges(self) -> list[tuple[str, float | None, float | None]]:
        """The range partitions, ``(name, from, to)`` (``None``: unbounded), oldest first."""
        rows = self.db.fetchall("SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
                                "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'audit_events'::regclass")
        out: list[tuple[str, float | None, float | None]] = []
        for name, bound in rows:
            m = _BOUND.search(str(bound))
            if m is not None:
                out.append((str(name), _bound(m.group(1)), _bound(m.group(2))))
        out.sort(key=lambda r: (r[2] is None, r[2] if r[2] is not None else 0.0))
        return out

    def ensure_ahead(self, now: float) -> list[str]:
        """Partitions up to :data:`AHEAD` spans past ``now``, each from where the newest one ends
        (records of its time waiting in the default partition are moved into it); returns the
        names made."""
        made: list[str] = []
        while True:
            ranges = self.ranges()
            ends = [hi for _, _, hi in ranges if hi is not None]
            if any(hi is None for _, _, hi in ranges):
                return made  # (a partition up to MAXVALUE: nothing can be added after it)
            start = max(ends) if ends else now // self.span_s * self.span_s
            if start >= now + self.ahead_s:
                return made
            end = (start // self.span_s + 1) * self.span_s
            name = f"audit_events_{_stamp(start)}"
            if any(n == name for n, _, _ in ranges):  # (a span under a second: never with whole seconds)
                name = f"{name}_{int(start * 1000) % 1000:03d}"
            with self.db.transaction() as conn:
                # Replicas make partitions too: one at a time, each finding where the newest ends.
                self.db.execute("SELECT pg_advisory_xact_lock(?)", (_PARTITION_LOCK,))
                if self.db.fetchone("SELECT 1 FROM pg_inherits WHERE inhparent = 'audit_events'::regclass AND "
                                    "inhrelid = to_regclass(?)", (name,)) or self._newest_end() != (
                                        max(ends) if ends else None):
                    continue  # another process made it (or another) meanwhile: look again
                if start <= now + CLOCKS_S:
                    # Records of this time may be arriving (no sweep made it ahead: the first one, or
                    # one after a pause): they wait from here to the commit and are then routed to the
                    # new partition.  (Routed to the default partition first, one would be refused
                    # there once the new partition took its range.)  Kept short: on a busy table the
                    # next sweep tries again.
                    conn.execute(f"SET LOCAL lock_timeout = {DETACH_WAIT_MS}")
                    self.db.execute("LOCK TABLE audit_events IN SHARE ROW EXCLUSIVE MODE")
                self.db.execute(f"CREATE TABLE {name} (LIKE audit_events INCLUDING DEFAULTS)")
                moved = self.db.execute(f"INSERT INTO {name} SELECT * FROM {_DEFAULT} WHERE ts >= ? AND ts < ?",
                                        (start, end)).rowcount
                if moved:
                    self.db.execute(f"DELETE FROM {_DEFAULT} WHERE ts >= ? AND ts < ?", (start, end))
                self.db.execute(f"ALTER TABLE audit_events ATTACH PARTITION {name} "
                                f"FOR VALUES FROM ({start!r}) TO ({end!r})")
            made.append(name)

    @property
    def margin_s(self) -> float:
        """How far past an age a straggler must be to be deleted by rows: a span (partitions are
        aligned to spans; SQLite's segments, sealed at a sweep, need more)."""
        return self.span_s

    def _newest_end(self) -> float | None:
        ends = [hi for _, _, hi in self.ranges() if hi is not None]
        return max(ends) if ends else None

    def vacuum_current(self, now: float) -> None:
        """After rows were deleted: a plain ``VACUUM`` of the partition new records go to (and of the
        default one), whose free space they take.  The space of rows deleted in older partitions is
        never taken by a new record: it goes when their partition is dropped whole, and a VACUUM of
        them would only add its maps (32 KiB a partition) and the server's work."""
        for name, lo, hi in self.ranges():
            if (lo is None or lo <= now) and (hi is None or now < hi):
                self.db.execute(f"VACUUM {name}")
        self.db.execute(f"VACUUM {_DEFAULT}")

    # -- dropping whole ----------------------------------------------------------------------------

    def _last_id_dropped(self, policy: "Retention") -> int | None:
        """The newest id a number or size budget drops (``None``: neither drops any)."""
        if policy.max_records is None and policy.max_bytes is None:
            return None
        row = self.db.fetchone("SELECT (SELECT MIN(id) FROM audit_events), (SELECT MAX(id) FROM audit_events)")
        if not row or row[0] is None:
            return None
        low, span = int(row[0]), int(row[1]) - int(row[0]) + 1
        drop = 0
        if policy.max_records is not None:
            drop = max(drop, span - policy.max_records)
        if policy.max_bytes is not None:
            used = _db_bytes(self.db)
            if used is not None and used > policy.max_bytes:
                drop = max(drop, int((used - policy.max_bytes) / (used / span)) + 1)
        return low + drop - 1 if drop > 0 else None

    def drop_whole(self, policy: "Retention", writer: "ExportWriter | None", now: float, *,
                   stop: threading.Event | None = None) -> int:
        """Detach, export and drop every oldest partition the policy lets go whole; returns the
        records dropped.  A partition detached by a sweep that did not finish goes first."""
        dropped = 0
        for (name,) in self.db.fetchall("SELECT name FROM audit_detached ORDER BY name"):
            dropped += self._export_and_drop(str(name), writer, stop)
        last_id = self._last_id_dropped(policy)
        cutoff = now - policy.max_age_s if policy.max_age_s is not None else None
        for name, _, hi in self.ranges():
            if stop is not None and stop.is_set():
                break
            if hi is None or hi > now:
                break  # the current partition, and the ones made ahead, are never dropped whole
            whole = cutoff is not None and hi <= cutoff
            if not whole and policy.max_bytes is not None:
                # Over a size: the oldest partitions go whole.  (Rows deleted from one would give no
                # space back — new records go to the newest — and the next sweep would delete more.)
                used = _db_bytes(self.db)
                whole = used is not None and used > policy.max_bytes
            if not whole and last_id is not None:
                newest = self.db.fetchone(f"SELECT MAX(id) FROM {name}")
                whole = newest is None or newest[0] is None or int(newest[0]) <= last_id
            if not whole:
                break
            if not self._detach(name):
                break
            dropped += self._export_and_drop(name, writer, stop)
        self.last_whole = dropped
        return dropped

    def _detach(self, name: str) -> bool:
        try:
            with self.db.transaction() as conn:
                conn.execute(f"SET LOCAL lock_timeout = {DETACH_WAIT_MS}")
                self.db.execute("SELECT pg_advisory_xact_lock(?)", (_PARTITION_LOCK,))
                if not self.db.fetchone("SELECT 1 FROM pg_inherits WHERE inhparent = 'audit_events'::regclass "
                                        "AND inhrelid = to_regclass(?)", (name,)):
                    return False  # another process's sweep detached it first
                self.db.execute(f"ALTER TABLE audit_events DETACH PARTITION {name}")
                self.db.execute("INSERT INTO audit_detached (name) VALUES (?)", (name,))
        except Exception as exc:  # the table's lock was not had in time: the next sweep tries again
            if "lock" not in str(exc).lower():
                raise
            return False
        return True

    def _export_and_drop(self, name: str, writer: "ExportWriter | None", stop: threading.Event | None) -> int:
        """Export a detached partition's records (durably), then drop it in the transaction that
        records the export; returns its records."""
        count = 0
        marks: dict[str, tuple[int, str]] = {}
        try:
            last = -1
            if writer is None:  # nothing to export: only how many go (counted by the server)
                row = self.db.fetchone(f"SELECT COUNT(*) FROM {name}")
                count = int(row[0]) if row else 0
            while writer is not None:
                if stop is not None and stop.is_set():
                    raise _Stopped
                rows = self.db.fetchall(f"SELECT {_COLUMNS} FROM {name} WHERE id > ? ORDER BY id LIMIT ?",
                                        (last, EXPORT_BATCH))
                if not rows:
                    break
                marks.update(writer.append_batches([rows], sync=False)[0])
                count += len(rows)
                last = rows[-1][0]
            if writer is not None:
                writer.sync(marks)  # durable before the transaction that records them and drops the rows
        except _Stopped:
            if writer is not None:  # stopped (the server is): the files are left as recorded
                writer.cut_back(marks)
            return 0
        except BaseException:
            if writer is not None:
                writer.forget(marks)  # the next attempt cuts the unrecorded tail off again
            raise

        def drop(conn: Any) -> None:
            self.db.execute(f"DROP TABLE IF EXISTS {name}")  # (another sweep may have been first)
            self.db.execute("DELETE FROM audit_detached WHERE name = ?", (name,))

        record_and_drop(self.db, writer, marks, drop)
        return count


class _Stopped(Exception):
    """The sweep was asked to stop while a detached partition was exported (it stays detached)."""
