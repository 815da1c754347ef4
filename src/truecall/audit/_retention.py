"""Audit retention: the trail kept within a budget, and what leaves it exported first.

A policy (:class:`Retention`, from ``TRUECALL_AUDIT_RETAIN`` or ``Server(audit_retain=…)``) says how
long and how much of the trail ``audit_events`` keeps: an age (``30d``), a number of records
(``5000000``), a size of the database (``2GB``), any of them together (``90d,2GB``: whichever drops
more).  A background thread (:class:`Sweeper`) applies it, off the per-call path: every few seconds it
takes the oldest records in batches of :data:`BATCH` (one short write transaction each, a pause
between two), so no lock it takes is held longer than one batch's delete.

Export before delete: with ``TRUECALL_AUDIT_EXPORT=DIR`` (``Server(audit_export=…)``), every record
the sweep drops is first appended to a file in ``DIR`` — JSON lines, gzip-compressed, one file per
period (:data:`ENV_PERIOD`, a day by default), each file beside a ``.sha256`` that ``sha256sum -c``
checks.  A file grows by one gzip member per batch (a gzip file may hold several; ``zcat`` reads them
as one), so it is only ever appended to.  The order that makes a record's export durable before it is
deleted, and a kill anywhere in between harmless:

1. the batch is appended to its file, the file is ``fsync``'d (and its folder when the file is new);
2. the ``.sha256`` is rewritten (a new file, ``fsync``'d, renamed over the old one, folder ``fsync``'d);
3. one transaction records the file's new length and checksum in ``audit_export`` *and* deletes the
   batch from ``audit_events``.

Killed before 3, the records are still in the table and the file is longer than ``audit_export``
says: the next sweep (in this process or the next) cuts the file back to the recorded length and
exports them again — never twice, never lost.  A file shorter than its recorded length, or whose
bytes no longer match the recorded checksum, stops the sweep (nothing more is deleted) until an
operator looks: the export is no longer what was promised.

An exported line is ``{"id":…,"ts":…,"kind":…,"tenant":…,"subject":…,"tool":…,"outcome":…,
"fields":{…}}`` where ``fields`` is the stored document byte for byte: redacted when it was
recorded, its argument hashes as they were.  On SQLite the lines are made by SQLite (:data:`_LINES`):
``ts`` with 17 significant digits, the same float read back (orjson, elsewhere, writes the fewest
digits that read back).

PostgreSQL: the table is partitioned by time and old partitions are exported, then dropped whole
(:mod:`truecall.audit._partitions`); SQLite: the trail is kept in segments, sealed and dropped whole
the same way (:mod:`truecall.audit._segments`).  What a number or size budget drops inside a partition
or a segment goes by rows, as above.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import logging
import math
import os
import re
import sqlite3
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, cast

import orjson

from ._sql import _COLUMNS, _MARK, _db_bytes
from ..storage import BATCH, PAUSE_S, delete_batched
from .._misuse import Misuse, SettingError
from ._partitions import Partitions, partition_span
from ._segments import LIVE, Segments, _id_span, read_trail, segments, union

if TYPE_CHECKING:
    from ..storage import Storage

log = logging.getLogger("truecall.audit")

__all__ = ["Retention", "ExportWriter", "Sweeper", "ENV_RETAIN", "ENV_EXPORT", "ENV_PERIOD", "DEFAULT_RETAIN",
           "EXPORT_MIGRATIONS", "export_range", "verify_export", "read_export", "sweep_once"]

ENV_RETAIN = "TRUECALL_AUDIT_RETAIN"
ENV_EXPORT = "TRUECALL_AUDIT_EXPORT"
ENV_PERIOD = "TRUECALL_AUDIT_EXPORT_PERIOD"
ENV_SWEEP_S = "TRUECALL_AUDIT_SWEEP_S"
#: What a server keeps when nothing says otherwise: 90 days, and never more than 2 GB of database.
#: (About 230 bytes a call: 2 GB is some 9 million calls — three months at 1 call/s, about two and a
#: half hours at 1,000 calls/s.  See docs/guide/operations.md for the arithmetic.)
DEFAULT_RETAIN = "90d,2GB"
# Records per delete transaction (BATCH, a few milliseconds of write lock; the export, ~7 µs a row more —
# reading the whole row, its line, gzip — is done before, outside) and the pause between two batches of
# one sweep (PAUSE_S): storage.delete_batched's.
#: Batches read and exported together (one ``fsync`` per file for all of them; each still deleted in
#: its own transaction).
GROUP = 8
#: Seconds between two sweeps.
SWEEP_S = 5.0
#: Pages given back to the file system per ``incremental_vacuum`` step (SQLite, 4 KiB each).
VACUUM_PAGES = 256
#: Seconds over which the most pages new records took between two sweeps is remembered (SQLite): that
#: many free pages are kept for them, not given back (see :meth:`Sweeper.sweep`).
RESERVE_S = 60.0

EXPORT_MIGRATIONS = [
    ("audit-export-1", "CREATE TABLE audit_export (name TEXT PRIMARY KEY, bytes INTEGER NOT NULL, "
                       "sha256 TEXT NOT NULL)"),
]

_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_UNITS_B = {"kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3, "tb": 1000 ** 4,
            "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3, "tib": 1024 ** 4}
_ITEM = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")


@dataclass(frozen=True)
class Retention:
    """How much of the audit trail is kept: ``None`` everywhere keeps it all."""

    max_age_s: float | None = None
    max_records: int | None = None
    max_bytes: int | None = None

    @property
    def keeps_all(self) -> bool:
        return self.max_age_s is None and self.max_records is None and self.max_bytes is None

    @classmethod
    def parse(cls, text: str, setting: str = ENV_RETAIN) -> "Retention":
        """``90d``, ``5000000`` (records), ``2GB``, ``500MiB``, ``12h,100000``; ``all`` (or ``forever``,
        ``off``): keep everything."""
        raw = text.strip().lower()
        if raw in ("all", "forever", "off", "none", "0"):
            return cls()
        age: float | None = None
        records: int | None = None
        size: int | None = None
        for item in filter(None, (p.strip() for p in re.split(r"[,\s]+", raw))):
            m = _ITEM.fullmatch(item)
            if m is None:
                raise SettingError(f"{setting}: {item!r} is not an age (90d, 12h), a number of records (100000) "
                                   "or a size (2GB)")
            number, unit = float(m.group(1)), m.group(2)
            if unit in _UNITS_S:
                age = number * _UNITS_S[unit]
            elif unit in _UNITS_B or unit == "b":
                size = int(number * _UNITS_B.get(unit, 1))
            elif unit in ("", "records", "record", "r"):
                records = int(number)
            else:
                raise SettingError(f"{setting}: unknown unit {unit!r} in {item!r} (s, m, h, d, w; records; "
                                   "KB, MB, GB, KiB, MiB, GiB)")
            if number <= 0:
                raise SettingError(f"{setting}: {item!r} must be more than zero (or say 'all' to keep everything)")
        return cls(age, records, size)

    @classmethod
    def from_setting(cls, given: "Retention | str | None") -> "Retention":
        if isinstance(given, Retention):
            return given
        if given is not None:
            return cls.parse(given, "audit_retain")
        return cls.parse(os.environ.get(ENV_RETAIN, "").strip() or DEFAULT_RETAIN)


def period_seconds(text: str | None = None) -> float:
    raw = (text if text is not None else os.environ.get(ENV_PERIOD, "")).strip().lower() or "1d"
    m = _ITEM.fullmatch(raw)
    if m is None or m.group(2) not in _UNITS_S or float(m.group(1)) <= 0:
        raise SettingError(f"{ENV_PERIOD}: {raw!r} is not a period (1d, 6h, 15m)")
    return float(m.group(1)) * _UNITS_S[m.group(2)]


# -- the export files -----------------------------------------------------------------------------

_LINE = b'{"id":%d,"ts":%b,%b,"fields":%b}\n'
#: A column's value -> its JSON: the kinds, tenants, subjects, tools and outcomes of a trail repeat.
_JSON: dict[Any, bytes] = {}


def _json(value: Any) -> bytes:
    out = _JSON.get(value)
    if out is None:
        out = orjson.dumps(value)
        if len(_JSON) < 4096:
            _JSON[value] = out
    return out


#: kind, tenant, subject, tool and outcome -> that part of a line: a trail repeats few combinations.
_MIDDLE: dict[tuple[Any, ...], bytes] = {}


def _middle(columns: tuple[Any, ...]) -> bytes:
    """The five columns between a line's time and its document, rendered once per combination: one
    lookup a record instead of five (0.3 µs a record less)."""
    out = _MIDDLE.get(columns)
    if out is None:
        out = b'"kind":%b,"tenant":%b,"subject":%b,"tool":%b,"outcome":%b' % tuple(_json(v) for v in columns)
        if len(_MIDDLE) < 4096:
            _MIDDLE[columns] = out
    return out


def encode_record(row: Sequence[Any]) -> bytes:
    """One exported line: the columns, and the stored fields document as it is (bytes for bytes).
    One formatting of bytes, the columns' JSON made once per distinct combination: ~1.5 µs a record
    with the read against 3.1 µs for a dict encoded and the document joined on."""
    return _LINE % (row[0], orjson.dumps(row[1]), _middle(tuple(row[2:7])), bytes(row[7]))


def _by_file(rows: Sequence[Sequence[Any]], period_s: float) -> dict[str, list[bytes]]:
    """``rows`` encoded, grouped by their period file (the name is looked up once per run of rows
    in one period: the oldest records are in time order but for a few at a period's edge).

    A batch almost always lies in one period: then its lines are made in one comprehension, the
    formatting inlined (the same bytes as :func:`encode_record`'s, 0.25 µs a record less)."""
    if not rows:
        return {}
    stamps = [row[1] for row in rows]
    first, last = min(stamps), max(stamps)
    if first // period_s == last // period_s and type(rows[0]) is tuple:  # (slices of it are keys)
        known, dumps, line = _MIDDLE.get, orjson.dumps, _LINE
        return {_file_name(first, period_s): [line % (r[0], dumps(r[1]), known(r[2:7]) or _middle(r[2:7]), bytes(r[7]))
                                              for r in cast("Sequence[tuple[Any, ...]]", rows)]}
    groups: dict[str, list[bytes]] = {}
    lo = hi = 0.0
    lines: list[bytes] = []
    for row in rows:
        ts = row[1]
        if not lo <= ts < hi:
            lines = groups.setdefault(_file_name(ts, period_s), [])
            lo = ts // period_s * period_s
            hi = lo + period_s
        lines.append(encode_record(row))
    return groups


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_NAMES: dict[int, str] = {}


def _file_name(ts: float, period_s: float) -> str:
    start = int(ts // period_s * period_s)
    name = _NAMES.get(start)
    if name is None:
        name = f"audit-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(start))}.jsonl.gz"
        if len(_NAMES) < 1024:
            _NAMES[start] = name
    return name


class ExportError(RuntimeError):
    """An export file is not what its recorded length and checksum say: nothing more is deleted."""


class ExportExists(Misuse, FileExistsError):
    """An export on demand would write into a file that exists: it never overwrites one."""


class ExportWriter:
    """Appends batches of records to the period files in ``directory``, durably.

    ``state``: ``name -> (bytes, sha256)`` as last recorded (the ``audit_export`` table for the sweep,
    read again at every append: processes sharing the folder take turns); ``None`` for an export on
    demand, whose own appends are the record (:meth:`committed`).

    The ``.sha256`` beside a file is written by :meth:`seal` (once per sweep, not per batch: two
    ``fsync`` fewer a batch) from the recorded checksum; a sweep killed before it sealed leaves a
    stale one, which the next append to that file (or :meth:`seal`) writes again."""

    def __init__(self, directory: str | os.PathLike[str], period_s: float,
                 state: Callable[[str], tuple[int, str] | None] | None) -> None:
        self.directory = Path(directory)
        self.period_s = period_s
        self._state = state
        #: name -> (bytes durable so far, running sha256) for files this writer opened.
        self._open: dict[str, tuple[int, Any]] = {}
        #: name -> (bytes, sha256) recorded (committed) and not yet sealed.
        self._unsealed: dict[str, tuple[int, str]] = {}
        #: An export on demand: what it appended is what is recorded.
        self._own: dict[str, tuple[int, str]] = {}
        #: name -> (bytes, sha256) appended (durably) and not recorded yet: several appends may come
        #: before the one transaction that records them (a partition exported whole, then dropped).
        self._ahead: dict[str, tuple[int, str]] = {}

    def _recorded(self, name: str) -> tuple[int, str] | None:
        ahead = self._ahead.get(name)
        if ahead is not None:  # appended by this sweep, to be recorded by a transaction still to come
            return ahead
        return self._state(name) if self._state is not None else self._own.get(name)

    def _resume(self, name: str) -> tuple[int, Any]:
        """The file's recorded length and the hash of those bytes; a longer file is cut back first
        (its tail was written by a sweep killed before it recorded it: those records were not deleted)."""
        recorded = self._recorded(name)
        known = self._open.get(name)
        if known is not None and recorded is not None and (known[0], known[1].hexdigest()) == recorded:
            return known  # nobody else appended since (another process sharing the folder may have)
        path = self.directory / name
        digest = hashlib.sha256()
        if recorded is None:
            if path.exists() and path.stat().st_size:
                # Never recorded: a sweep killed before its first transaction for this file.  Those
                # records are still in the table, so the file starts again from nothing.
                with open(path, "r+b") as f:
                    f.truncate(0)
                    os.fsync(f.fileno())
            known = (0, digest)
        else:
            length, sha = recorded
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                raise ExportError(f"audit export {path} is missing (it held {length} bytes of exported records)")
            if size < length:
                raise ExportError(f"audit export {path} is shorter ({size} bytes) than what was exported "
                                  f"into it ({length} bytes)")
            with open(path, "r+b") as f:
                if size > length:
                    f.truncate(length)
                    os.fsync(f.fileno())
                while f.tell() < length:
                    chunk = f.read(min(1 << 20, length - f.tell()))
                    if not chunk:
                        break
                    digest.update(chunk)
            if digest.hexdigest() != sha:
                raise ExportError(f"audit export {path} does not match its recorded checksum")
            try:
                sealed = (self.directory / f"{name}.sha256").read_text().split()[0]
            except (FileNotFoundError, IndexError):
                sealed = ""
            if sealed != sha:  # a sweep killed between its transaction and its seal
                self._write_sum(name, sha)
            known = (length, digest)
        self._open[name] = known
        return known

    def append(self, rows: Sequence[Sequence[Any]]) -> dict[str, tuple[int, str]]:
        """Append ``rows`` (id order) to their period files, durably; returns each touched file's new
        ``(bytes, sha256)``, to be recorded in the same transaction that deletes the rows."""
        return self.append_batches([rows])[0]

    def append_batches(self, batches: Sequence[Sequence[Sequence[Any]]], *,
                       sync: bool = True) -> list[dict[str, tuple[int, str]]]:
        """Append each batch (a gzip member per batch and file) and make them all durable with one
        ``fsync`` per file; returns each batch's marks (what to record with the deletion of that
        batch: a file's length and checksum up to the end of the batch's member).  Recorded one
        batch after the other, a kill in between leaves a tail the next sweep cuts back.
        ``sync=False``: not made durable yet — :meth:`sync` must be called before any of it is recorded
        (a partition exported in many appends, recorded once)."""
        return self.append_encoded([{name: b"".join(lines) for name, lines in _by_file(rows, self.period_s).items()}
                                    for rows in batches], sync=sync)

    def append_encoded(self, batches: Sequence[dict[str, bytes]], *,
                       sync: bool = True) -> list[dict[str, tuple[int, str]]]:
        """:meth:`append_batches` for batches already encoded: each a period file's name -> its lines."""
        self.directory.mkdir(parents=True, exist_ok=True)
        #: name -> (fd, length when this call began, new file)
        files: dict[str, tuple[int, int, bool]] = {}
        state: dict[str, tuple[int, Any]] = {}
        out: list[dict[str, tuple[int, str]]] = []
        try:
            for encoded in batches:
                done: dict[str, tuple[int, str]] = {}
                for name, data in encoded.items():
                    if name not in files:
                        length, digest = self._resume(name)
                        path = self.directory / name
                        new = not path.exists()
                        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                        files[name] = (fd, length, new)
                        state[name] = (length, digest.copy())
                    length, digest = state[name]
                    member = gzip.compress(data, compresslevel=1, mtime=0)
                    view, written = memoryview(member), 0
                    while written < len(member):
                        written += os.write(files[name][0], view[written:])
                    digest.update(member)
                    state[name] = (length + len(member), digest)
                    done[name] = (length + len(member), digest.hexdigest())
                out.append(done)
            if sync:
                for fd, _, _ in files.values():
                    os.fsync(fd)
            if any(new for _, _, new in files.values()):
                _fsync_dir(self.directory)
        except BaseException:
            for name, (fd, length, _) in files.items():
                try:
                    os.ftruncate(fd, length)
                except OSError:
                    pass
                self._open.pop(name, None)  # re-read from the recorded state next time
                self._ahead.pop(name, None)
            raise
        finally:
            for fd, _, _ in files.values():
                os.close(fd)
        for name, (length, digest) in state.items():
            self._open[name] = (length, digest)
            self._ahead[name] = (length, digest.hexdigest())
        return out

    def sync(self, names: Iterable[str]) -> None:
        """Make what was appended to ``names`` with ``sync=False`` durable (one ``fsync`` a file)."""
        for name in names:
            fd = os.open(self.directory / name, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def committed(self, marks: dict[str, tuple[int, str]]) -> None:
        """``marks`` (from :meth:`append`) are recorded: :meth:`seal` writes their checksums."""
        self._unsealed.update(marks)
        if self._state is None:
            self._own.update(marks)
        for name, mark in marks.items():
            if self._ahead.get(name) == mark:
                del self._ahead[name]

    def forget(self, names: Iterable[str]) -> None:
        """Drop what this writer believes of ``names`` (a transaction recording them failed)."""
        for name in names:
            self._open.pop(name, None)
            self._ahead.pop(name, None)

    def cut_back(self, names: Iterable[str]) -> None:
        """Cut ``names`` back to their recorded length now (a sweep stopped between an export and its
        transaction: the files are left as the records say, checksums matching)."""
        for name in names:
            self.forget([name])
            if self._recorded(name) is None:
                (self.directory / name).unlink(missing_ok=True)
                (self.directory / f"{name}.sha256").unlink(missing_ok=True)
            else:
                self._resume(name)

    def repair(self) -> None:
        """After a start: every file appended to after its ``.sha256`` was written (a sweep killed
        before its seal, or before its transaction) is cut back to its recorded length and sealed."""
        if not self.directory.is_dir():
            return
        for path in self.directory.glob("*.jsonl.gz"):
            try:
                sealed = (self.directory / f"{path.name}.sha256").stat().st_mtime_ns
            except FileNotFoundError:
                sealed = -1
            if path.stat().st_mtime_ns <= sealed:
                continue
            self._open.pop(path.name, None)
            if self._recorded(path.name) is None:  # never recorded: its records are all still in the table
                path.unlink()
                (self.directory / f"{path.name}.sha256").unlink(missing_ok=True)
                _fsync_dir(self.directory)
            else:
                self._resume(path.name)

    def seal(self) -> None:
        """Write the ``.sha256`` of every file whose appends were recorded since the last seal."""
        unsealed, self._unsealed = self._unsealed, {}
        for name, (_, sha) in unsealed.items():
            self._write_sum(name, sha)

    def _write_sum(self, name: str, sha: str) -> None:
        tmp = self.directory / f".{name}.sha256.tmp"
        with open(tmp, "wb") as f:
            f.write(f"{sha}  {name}\n".encode())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.directory / f"{name}.sha256")
        _fsync_dir(self.directory)


def verify_export(directory: str | os.PathLike[str]) -> dict[str, bool]:
    """Each ``*.jsonl.gz`` in ``directory`` → whether it matches its ``.sha256`` (missing: ``False``)."""
    out: dict[str, bool] = {}
    folder = Path(directory)
    for path in sorted(folder.glob("*.jsonl.gz")):
        try:
            expected = (folder / f"{path.name}.sha256").read_text().split()[0]
        except (FileNotFoundError, IndexError):
            out[path.name] = False
            continue
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        out[path.name] = digest.hexdigest() == expected
    return out


def read_export(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every record exported into ``directory`` (file order, then line order)."""
    records: list[dict[str, Any]] = []
    for path in sorted(Path(directory).glob("*.jsonl.gz")):
        with gzip.open(path, "rb") as f:
            records.extend(orjson.loads(line) for line in f if line.strip())
    return records


# -- the sweep ---------------------------------------------------------------------------------

def _oldest(db: Any, limit: int, whole: bool, table: str = LIVE) -> list[tuple[Any, ...]]:
    """The oldest ``limit`` records (of ``table``): whole (to export them) or only their id and time."""
    columns = _COLUMNS if whole else "id, ts"
    rows: list[tuple[Any, ...]] = db.fetchall(f"SELECT {columns} FROM {table} ORDER BY id LIMIT ?", (limit,))
    return rows


#: Two subqueries, not ``SELECT MIN(id), MAX(id)``: SQLite reads one end of the index for a lone MIN
#: or MAX, but scans the whole table for the pair (200 ms of CPU at a million records, every sweep).
_SPAN = "SELECT (SELECT MIN(id) FROM audit_events), (SELECT MAX(id) FROM audit_events)"


def _span(db: Any, tables: list[str] | None = None) -> int:
    """Records in the table (or in ``tables``, a trail's segments), counted by the span of their ids
    (the sweep deletes only the oldest, so the span is the count; ``COUNT(*)`` would scan the table
    on every sweep)."""
    row = db.fetchone(_SPAN) if tables is None or tables == [LIVE] else _id_span(db, tables)
    if not row or row[0] is None:
        return 0
    return int(row[1]) - int(row[0]) + 1


def _how_many(db: Any, policy: Retention, rows: list[tuple[Any, ...]] | int, now: float,
              tables: list[str] | None = None) -> int:
    """How many of ``rows`` (the oldest, id order) the policy drops: the most any of its limits drops.
    A number instead of rows (a policy without an age): how many of that many oldest records."""
    if isinstance(rows, int):
        rows = [()] * rows  # (only their number is read)
    drop = 0
    if policy.max_age_s is not None:
        cutoff = now - policy.max_age_s
        n = 0
        while n < len(rows) and rows[n][1] < cutoff:
            n += 1
        drop = max(drop, n)
    if policy.max_records is not None:
        drop = max(drop, min(len(rows), _span(db, tables) - policy.max_records))
    if policy.max_bytes is not None:
        used = _db_bytes(db)  # (the span only when over the budget: most sweeps are not)
        if used is not None and used > policy.max_bytes:
            span = _span(db, tables)
            if span:
                drop = max(drop, min(len(rows), int((used - policy.max_bytes) / (used / span)) + 1))
    return max(0, drop)


def _export_state(db: Any) -> Callable[[str], tuple[int, str] | None]:
    def state(name: str) -> tuple[int, str] | None:
        row = db.fetchone("SELECT bytes, sha256 FROM audit_export WHERE name = ?", (name,))
        return (int(row[0]), str(row[1])) if row else None

    return state


@dataclass
class _Chunk:
    """One batch of the oldest records: deleted in one transaction (by its id range on SQLite, by its
    ids elsewhere), exported first as ``files`` (period file name -> its lines) when exported."""

    lo: int
    hi: int
    count: int
    ids: list[int]
    files: dict[str, bytes]

    @classmethod
    def of(cls, rows: Sequence[Sequence[Any]], period_s: float | None) -> "_Chunk":
        files = ({name: b"".join(lines) for name, lines in _by_file(rows, period_s).items()}
                 if period_s is not None else {})
        return cls(rows[0][0], rows[-1][0], len(rows), [row[0] for row in rows], files)


#: SQLite: a batch's export lines made by SQLite, returned as one value (with the batch's count, ids
#: and times) instead of a row per record.  The same JSON as :func:`encode_record`'s, but for the
#: time's digits: 17 significant digits (``%!.17g``, the same float read back) where orjson writes the
#: shortest that reads back.  What it saves is less the CPU of reading and formatting than the
#: handovers: ``sqlite3`` releases the interpreter's lock around every row it steps, and the serving
#: thread takes it at each release; one statement stepped once releases it once, for the whole
#: batch.  The five columns between the time and the document repeat (a trail has few combinations
#: of kind, tenant, subject, tool and outcome): the :data:`COMMON` combinations seen last are bound
#: with their JSON made by Python (:func:`_middle`), and SQLite quotes only the others (1.0 µs a record
#: for the statement instead of 1.7).  (Ordered by the subquery: an aggregate reads its rows in the
#: order a subquery with ORDER BY and LIMIT yields them.)
COMMON = 3
_QUOTED = ("printf('\"kind\":%s,\"tenant\":%s,\"subject\":%s,\"tool\":%s,\"outcome\":%s', json_quote(kind), "
           "json_quote(tenant), json_quote(subject), json_quote(tool), json_quote(outcome))")
_LINES = ("SELECT CAST(group_concat(line, '') AS BLOB), count(*), min(id), max(id), min(ts), max(ts) FROM ("
          "SELECT id, ts, printf('{\"id\":%d,\"ts\":%!.17g,%s,\"fields\":', id, ts, CASE "
          + " ".join(f"WHEN kind = ?{3 + 6 * k} AND tenant IS ?{4 + 6 * k} AND subject IS ?{5 + 6 * k} AND tool IS "
                     f"?{6 + 6 * k} AND outcome IS ?{7 + 6 * k} THEN ?{8 + 6 * k}" for k in range(COMMON))
          + f" ELSE {_QUOTED} END) || fields || '}}' || char(10) AS line "
          "FROM {table} WHERE id > ?1 ORDER BY id LIMIT ?2)")
#: The combinations of the first records of the last batches, the latest first (see :data:`_LINES`).
_COMMON: list[tuple[Any, ...]] = []
_LINES_OK: dict[str, bool] = {}


def _lines_in_sql(db: Any) -> bool:
    """Whether this SQLite makes :data:`_LINES` (its JSON functions: built in since 3.38, most builds
    before); asked once per database file."""
    known = _LINES_OK.get(db.path)
    if known is None:
        try:
            db.fetchone("SELECT json_quote('a'), printf('%!.17g', 0.5)")
            known = True
        except Exception:
            known = False
        _LINES_OK[db.path] = known
    return known


def _sqlite_chunks(db: Any, n: int, batch: int, period_s: float, table: str = LIVE) -> list[_Chunk]:
    """The oldest ``n`` records in batches of ``batch``, each with its export lines (:data:`_LINES`).
    A batch across a period's edge (or whose lines SQLite would not make: a column holding a BLOB)
    is read and encoded in Python, file by file."""
    chunks: list[_Chunk] = []
    after = -(1 << 63)
    while n > 0:
        try:
            first = db.fetchone(f"SELECT kind, tenant, subject, tool, outcome FROM {table} WHERE id > ? "
                                "ORDER BY id LIMIT 1", (after,))
            common = list(_COMMON)  # (a copy: sweeps of other databases may run in other threads)
            if first is not None:
                common = [tuple(first)] + [c for c in common if c != tuple(first)]
                _COMMON[:] = common[:COMMON]
            bound: list[Any] = [after, min(batch, n)]
            for k in range(COMMON):
                if k < len(common):
                    bound += [*common[k], _middle(common[k]).decode()]
                else:  # (no kind is NULL: never matched)
                    bound += [None] * 6
            row = db.fetchone(_LINES.replace("{table}", table), bound)
        except (sqlite3.Error, TypeError):  # (a column holding what neither JSON nor SQLite's JSON takes)
            row = None
        if row is not None and not row[1]:
            break
        if (row is not None and math.isfinite(row[4]) and math.isfinite(row[5])
                and row[4] // period_s == row[5] // period_s):
            chunk = _Chunk(int(row[2]), int(row[3]), int(row[1]), [], {_file_name(row[4], period_s): bytes(row[0])})
        else:
            rows = db.fetchall(f"SELECT {_COLUMNS} FROM {table} WHERE id > ? ORDER BY id LIMIT ?",
                               (after, min(batch, n)))
            if not rows:
                break
            chunk = _Chunk.of(rows, period_s)
        chunks.append(chunk)
        after = chunk.hi
        n -= chunk.count
    return chunks


#: How many of the oldest ``?`` records are older than ``?``, up to the first that is not.
_OLDER = ("SELECT count(*) FROM (SELECT id FROM {table} ORDER BY id LIMIT ?1) WHERE id < "
          "ifnull((SELECT min(id) FROM (SELECT id, ts FROM {table} ORDER BY id LIMIT ?1) WHERE ts >= ?2), "
          "9223372036854775807)")


def _due(db: Any, policy: Retention, want: int, now: float, table: str = LIVE,
         tables: list[str] | None = None) -> int:
    """:func:`_how_many` of the oldest ``want`` records (of ``table``), counted by SQLite instead of read."""
    n = _how_many(db, Retention(None, policy.max_records, policy.max_bytes), want, now, tables)
    if policy.max_age_s is not None:
        row = db.fetchone(_OLDER.replace("{table}", table), (want, now - policy.max_age_s))
        n = max(n, int(row[0]) if row else 0)
    return min(n, want)


def sweep_once(db: Any, policy: Retention, writer: ExportWriter | None, *, now: float | None = None,
               batch: int = BATCH, pause_s: float = PAUSE_S, stop: threading.Event | None = None,
               max_batches: int = 1_000_000, group: int | None = None,
               partitions: "Partitions | Segments | None" = None) -> int:
    """Drop what ``policy`` lets go, oldest first, a batch per transaction (exported first when
    ``writer``); returns how many records were dropped.

    The oldest records are read ``group`` batches at a time and exported together (one ``fsync``
    per file for the group, each batch its own gzip member), then deleted a batch per transaction,
    each transaction recording its batch's end of the file.  ``partitions`` (PostgreSQL, a table
    partitioned by time; SQLite, its segments): whole partitions or segments past the policy are
    exported and dropped first, and an age is applied only that way (rows are deleted for a number
    or a size of records, and an age's stragglers); rows then go from the oldest segment."""
    if policy.keeps_all:
        return 0
    now = time.time() if now is None else now
    group = group or GROUP
    dropped = 0
    if partitions is not None:
        dropped += partitions.drop_whole(policy, writer, now, stop=stop)
        if policy.max_age_s is not None:  # by rows: only the stragglers (see truecall.audit._partitions)
            policy = Retention(policy.max_age_s + partitions.margin_s, policy.max_records, policy.max_bytes)
    # SQLite's segments: rows go from the oldest one that holds any (the next sweep goes on from there)
    tables: list[str] | None = None
    table = LIVE
    if isinstance(partitions, Segments):
        tables = segments(db)
        table = partitions.oldest(tables)
    # SQLite: one writer at a time allocates ids and commits them, so the oldest rows are exactly an
    # id range (a range delete is cheaper than a list).  PostgreSQL: a transaction may commit a lower
    # id after a higher one was read; only the ids read (and exported) are deleted.
    by_range = db.dialect == "sqlite"
    batches_done = 0
    try:
        # The oldest record alone first: most sweeps find nothing due, and reading a whole batch
        # (a thousand rows, every few seconds, in the serving process) only to learn that is work
        # the calls pay for: ~35k instructions a call in bench/stdio_cost.py, where callgrind
        # stretches a thousand calls over some fifty sweeps.
        if _how_many(db, policy, _oldest(db, 1, False, table), now, tables) <= 0:
            return dropped
        in_sql = by_range and writer is not None and _lines_in_sql(db)
        while batches_done < max_batches:
            if stop is not None and stop.is_set():
                break
            want = batch * max(1, min(group, max_batches - batches_done))
            chunks: list[_Chunk]
            if in_sql:  # SQLite, exported: the lines made by SQLite, a batch in one row (see _LINES)
                assert writer is not None
                n = _due(db, policy, want, now, table, tables)
                chunks = _sqlite_chunks(db, n, batch, writer.period_s, table) if n > 0 else []
                n = sum(c.count for c in chunks)
            else:
                if policy.max_age_s is None:  # how many is known before reading them: read only those
                    n = _how_many(db, policy, want, now, tables)
                    rows = _oldest(db, n, writer is not None, table) if n > 0 else []
                    n = len(rows)
                else:
                    rows = _oldest(db, want, writer is not None, table)
                    n = _how_many(db, policy, rows, now, tables)
                rows = rows[:n]
                chunks = [_Chunk.of(rows[i:i + batch], writer.period_s if writer is not None else None)
                          for i in range(0, n, batch)]
            if n <= 0:
                break
            all_marks = (writer.append_encoded([c.files for c in chunks]) if writer is not None
                         else [{} for _ in chunks])
            for k, (chunk, marks) in enumerate(zip(chunks, all_marks)):
                try:  # (a group is finished even when asked to stop: a few batches, tens of ms)
                    with db.transaction():
                        for name, (length, sha) in marks.items():
                            db.execute(_MARK, (name, length, sha))
                        if by_range:
                            db.execute(f"DELETE FROM {table} WHERE id >= ? AND id <= ?", (chunk.lo, chunk.hi))
                        else:
                            ids = chunk.ids
                            db.execute(f"DELETE FROM audit_events WHERE id IN ({','.join('?' * len(ids))})", ids)
                except BaseException:
                    if writer is not None:  # the next attempt cuts the unrecorded tail off again
                        writer.forget({name for m in all_marks[k:] for name in m})
                    raise
                if writer is not None:
                    writer.committed(marks)
                dropped += chunk.count
                batches_done += 1
                if pause_s and (k + 1 < len(chunks) or n == want):
                    time.sleep(pause_s)
            if n < want:
                break
    finally:
        if writer is not None:
            writer.seal()
    return dropped


_told_vacuum = False


def _space(db: Any) -> tuple[int, int] | None:
    """SQLite: the file's pages and how many of them are free (``None`` elsewhere)."""
    if db.dialect != "sqlite":
        return None
    row = db.fetchone("SELECT (SELECT page_count FROM pragma_page_count()), "
                      "(SELECT freelist_count FROM pragma_freelist_count())")
    return (int(row[0]), int(row[1])) if row else None


def free_pages(db: Any) -> int:
    """SQLite: pages on the free list (0 elsewhere)."""
    if db.dialect != "sqlite":
        return 0
    row = db.fetchone("PRAGMA freelist_count")
    return int(row[0]) if row else 0


def vacuum_some(db: Any, pause_s: float = PAUSE_S, stop: threading.Event | None = None, steps: int = 10_000,
                limit: int | None = None) -> int:
    """SQLite with ``auto_vacuum=INCREMENTAL``: give free pages back to the file system (at most
    ``limit``), a few hundred per step (a short write each); returns the pages freed.  Else nothing
    (free pages are reused by new records: the file stops growing but does not shrink).
    PostgreSQL: a plain ``VACUUM`` of the table (no exclusive lock: writers go on), so that the space
    of the deleted rows is reused now rather than whenever autovacuum comes by."""
    if db.dialect != "sqlite":
        db.execute("VACUUM audit_events")
        return 0
    row = db.fetchone("PRAGMA auto_vacuum")
    if not row or int(row[0]) != 2:
        global _told_vacuum
        if not _told_vacuum:
            _told_vacuum = True
            log.warning("this database was made without auto_vacuum=INCREMENTAL: the space retention frees is "
                        "reused (the file stops growing) but not given back; to shrink it once, stop the server "
                        "and run: sqlite3 %s 'PRAGMA auto_vacuum=INCREMENTAL; VACUUM'", db.path)
        return 0
    freed = 0
    for _ in range(steps):
        if stop is not None and stop.is_set():
            break
        free = db.fetchone("PRAGMA freelist_count")
        if not free or int(free[0]) == 0:
            break
        step = min(VACUUM_PAGES, int(free[0]), VACUUM_PAGES if limit is None else limit - freed)
        if step <= 0:
            break
        # (fetched: the pragma frees one page per step of its statement, and execute() steps once)
        db.fetchall(f"PRAGMA incremental_vacuum({step})")
        left = db.fetchone("PRAGMA freelist_count")
        done = int(free[0]) - (int(left[0]) if left else 0)
        if done <= 0:
            break
        freed += done
        if pause_s:
            time.sleep(pause_s)
    return freed


#: ``fn(now, max_age_s) -> rows deleted``: a table's rows that are only history, swept with the trail
#: (the tasks past their TTL; an app's own, e.g. the desk's settled requests).  Bounded batches, as
#: :func:`delete_batched` does.
History = Callable[[float, "float | None"], int]


def expired_tasks(db: Any) -> History:
    """The tasks past their TTL: already invisible to every read (``expires_at > now`` everywhere), their
    rows only history."""

    def sweep(now: float, max_age_s: float | None) -> int:
        return delete_batched(db, "tasks", "task_id", "h.expires_at <= ?", (now,))

    return sweep


class Sweeper:
    """The background thread that applies a :class:`Retention` every :data:`SWEEP_S` seconds."""

    def __init__(self, db: "Storage", policy: Retention, export_dir: str | os.PathLike[str] | None, *,
                 period_s: float | None = None, interval_s: float | None = None,
                 on_sweep: Callable[[int, str | None], None] | None = None,
                 history: Sequence[History] = ()) -> None:
        self.db = db
        #: Other tables' history, swept after the trail (a list the owner may append to later).
        self.history = history
        self.policy = policy
        db.migrate(EXPORT_MIGRATIONS)
        period = period_s or period_seconds()
        self.writer = ExportWriter(export_dir, period, _export_state(db)) if export_dir is not None else None
        if interval_s is None:
            raw = os.environ.get(ENV_SWEEP_S, "").strip()
            interval_s = float(raw) if raw else SWEEP_S
        self.interval_s = interval_s
        #: PostgreSQL: the trail partitioned by time, old partitions dropped whole (truecall.audit._partitions);
        #: the partitions of the coming minutes are made now, before any call is served.  SQLite: the
        #: trail in segments, sealed and dropped whole by the sweeps (truecall.audit._segments).
        self.partitions: Partitions | Segments | None = None
        if db.dialect == "sqlite" and not policy.keeps_all:
            self.partitions = Segments(db, partition_span(policy, period), policy, interval_s, _sqlite_chunks)
        if db.dialect == "postgresql" and not policy.keeps_all:
            self.partitions = Partitions(db, partition_span(policy, period), ahead_s=4 * interval_s)
            try:
                self.partitions.ensure_ahead(time.time())
            except Exception as exc:  # records wait in the default partition; the first sweep tries again
                log.warning("audit partitions could not be made ahead yet: %s", type(exc).__name__)
        self.on_sweep = on_sweep
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: Why the last sweep failed (``None``: it did not).
        self.problem: str | None = None
        self.dropped = 0
        self._repaired = False
        #: SQLite: (pages, free pages) when the last sweep ended, and the pages new records took
        #: between two sweeps, over the last RESERVE_S seconds of sweeps (see sweep()).
        self._space_after: tuple[int, int] | None = None
        self._taken: deque[int] = deque(maxlen=max(1, math.ceil(RESERVE_S / max(interval_s, 1e-3))))
        #: Pages given back to the file system by the sweeps so far (SQLite).
        self.vacuumed = 0

    def start(self) -> None:
        if self._thread is None and not self.policy.keeps_all:
            self._stop.clear()  # (served again after a stop: a test's loop, a restarted transport)
            self._thread = threading.Thread(target=self._run, name="truecall-audit-retention", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=10)

    def sweep(self, now: float | None = None) -> int:
        """One sweep now (the thread's, or a test's): drop, then give space back.  Processes sharing
        the export folder (``--workers``) take turns: one that finds another sweeping skips its turn.

        Space given back (SQLite): only the pages that were free already when this sweep began — free
        for a whole interval, not taken by the records that arrived meanwhile — and of those, only
        what exceeds the most pages the records took between two sweeps in the last
        :data:`RESERVE_S` seconds (and a quarter more).  At a steady rate the pages a sweep frees are taken again by the
        next interval's records, and arrivals come and go (a quiet second, a burst): returning the
        pages to the file system only to grow the file again moves every one of them twice (11.3 µs
        of CPU a record dropped, 5.9 of it ``incremental_vacuum``, with the load stopping for two
        sweeps in every four: bench/sweep_cost.py --idle).  The file still shrinks when it must: a
        budget lowered frees pages no arrival takes, and a rate that fell for good is forgotten
        after :data:`RESERVE_S`.  (``now``: a test's clock; the time otherwise.)"""
        space = _space(self.db)
        idle = space[1] if space is not None else 0
        if space is not None and self._space_after is not None:  # what the records since the last sweep took
            pages, free = self._space_after
            self._taken.append(max(0, free - space[1]) + max(0, space[0] - pages))
        if isinstance(self.partitions, Partitions):
            self.partitions.ensure_ahead(time.time() if now is None else now)
        if self.partitions is not None:
            self.partitions.last_whole = 0

        def apply(writer: ExportWriter | None) -> int:
            # (with an export, under the folder's lock: another sweeper's seal between this one's export
            # and its delete would leave the exported records in a renamed table, exported again later)
            if isinstance(self.partitions, Segments):
                self.partitions.seal(now)
            return sweep_once(self.db, self.policy, writer, now=now, stop=self._stop, partitions=self.partitions)

        if self.writer is None:
            dropped = apply(None)
        else:
            self.writer.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.writer.directory / ".sweep.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return 0
                if not self._repaired:
                    self.writer.repair()
                    self._repaired = True
                dropped = apply(self.writer)
            finally:
                os.close(fd)
        now = time.time() if now is None else now
        others = sum(fn(now, self.policy.max_age_s) for fn in self.history)
        if space is not None:
            reserve = max(self._taken, default=0)
            surplus = idle - reserve - reserve // 4  # (a quarter more: a rate is never quite the same)
            if surplus > 0:
                self.vacuumed += vacuum_some(self.db, stop=self._stop, limit=surplus)
            self._space_after = _space(self.db)
        elif isinstance(self.partitions, Partitions):
            if dropped - self.partitions.last_whole:
                self.partitions.vacuum_current(now)
            if others:
                vacuum_some(self.db, stop=self._stop)
        elif dropped or others:
            vacuum_some(self.db, stop=self._stop)
        return dropped

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                dropped = self.sweep()
            except Exception as exc:
                why = str(exc) if isinstance(exc, ExportError) else type(exc).__name__
                if why != self.problem:
                    log.warning("audit retention sweep failed (nothing unexported was deleted): %s", why)
                self.problem = why
                continue
            if self.problem is not None:
                log.warning("audit retention sweep works again")
                self.problem = None
            self.dropped += dropped
            if dropped and self.on_sweep is not None:
                try:
                    self.on_sweep(dropped, str(self.writer.directory) if self.writer is not None else None)
                except Exception:
                    pass


def time_window(since: float | None, until: float | None) -> tuple[list[str], list[Any]]:
    """The conditions (and their parameters) of ``since <= ts < until``, either end open."""
    where: list[str] = []
    params: list[Any] = []
    if since is not None:
        where.append("ts >= ?")
        params.append(since)
    if until is not None:
        where.append("ts < ?")
        params.append(until)
    return where, params


def export_range(db: Any, directory: str | os.PathLike[str], since: float | None, until: float | None, *,
                 period_s: float | None = None, batch: int = 5000) -> dict[str, tuple[int, str]]:
    """``truecall audit export``: the records with ``since <= ts < until`` written to new period files
    in ``directory`` (the same format as the sweep's); refuses to touch a file that exists."""
    folder = Path(directory)
    period = period_s or period_seconds()
    writer = ExportWriter(folder, period, None)
    seen: set[str] = set()
    files: dict[str, tuple[int, str]] = {}
    last = -1
    while True:
        where, params = time_window(since, until)
        where.append("id > ?")
        params.append(last)
        def read(tables: list[str]) -> list[Any]:
            sql, bound = union(tables, f"SELECT {_COLUMNS} FROM {{table}}", " AND ".join(where), params,
                               "ORDER BY id LIMIT ?")
            return cast("list[Any]", db.fetchall(sql, [*bound, batch]))

        rows = read_trail(db, read)
        if not rows:
            break
        for name in {_file_name(r[1], period) for r in rows} - seen:
            if (folder / name).exists():
                raise ExportExists(f"{folder / name} exists: export into an empty folder (--to)")
            seen.add(name)
        marks = writer.append(rows)
        writer.committed(marks)
        files.update(marks)
        last = rows[-1][0]
    writer.seal()
    return files
