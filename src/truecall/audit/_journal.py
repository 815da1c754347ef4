"""The audit journal: an append-only local file where an audit record becomes durable.

On a SQLite file database every commit costs a WAL transaction (page writes, shared-memory
locks): 25-50 µs, paid by every sequential call.  Appending one line to a file is one
``write()`` with the same guarantee SQLite gives here (``synchronous=NORMAL``: the data is
in the operating system when the call returns, so it survives the process being killed).
So a serving process appends the records behind an answer to its own journal before the
answer leaves, and loads them into the ``audit_events`` table in batches: a quarter of a
second after the first of a batch, or as soon as 64 KiB wait (``truecall.audit._log.LOAD_DELAY_S``,
``LOAD_BYTES``).

Exactly once: the table ``audit_journal`` holds, per journal file, the offset up to which
its lines are in ``audit_events``, updated in the same transaction as the rows it loads.
A journal is locked (``flock``) by the process writing it; a journal nobody holds belongs to
a process that ended without loading it (killed, crashed) and is loaded by the next one to
open the database, then deleted.

Journal lines are JSON arrays ``[ts, kind, tenant, subject, tool, outcome, {fields}]``.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import threading
import time
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import orjson

if TYPE_CHECKING:
    from ..storage import Storage

__all__ = ["Journal", "JOURNAL_MIGRATIONS", "journal_dir", "recover_journals", "encode_line", "encode_rows",
           "unloaded_bytes",
           "wait_loaded"]

JOURNAL_MIGRATIONS = [
    ("audit-journal-1", "CREATE TABLE audit_journal (name TEXT PRIMARY KEY, loaded INTEGER NOT NULL)"),
]

_INSERT_INTO = "INSERT INTO audit_events (ts, kind, tenant, subject, tool, outcome, fields) VALUES "
_CHUNKS = (256, 64, 16, 4, 1)
#: One statement per chunk size (a multi-row VALUES costs about half of executemany per row).
_INSERTS = {n: _INSERT_INTO + ",".join(["(?, ?, ?, ?, ?, ?, ?)"] * n) for n in _CHUNKS}
_MARK = ("INSERT INTO audit_journal (name, loaded) VALUES (?, ?) "
         "ON CONFLICT (name) DO UPDATE SET loaded = excluded.loaded")
_SUFFIX = ".jsonl"


def journal_dir(db: Storage) -> Path | None:
    """Where journals of ``db`` live (``<file>-audit/``), or ``None`` when it takes none: an
    in-memory SQLite database (no other process could recover it) or a server database,
    whose own commit is shared by every host and so must stay the commit point."""
    path = db.local_file
    return None if path is None else _dir_of(path)


def _dir_of(db_path: str | os.PathLike[str]) -> Path:
    return Path(str(db_path) + "-audit")


def unloaded_bytes(db_path: str | os.PathLike[str]) -> int:
    """Bytes journaled next to the SQLite file ``db_path`` and not in its table yet (any process's):
    0 means a reader of the table sees every record acknowledged so far."""
    directory = _dir_of(db_path)
    try:
        names = [p for p in os.listdir(directory) if p.endswith(_SUFFIX)]
    except FileNotFoundError:
        return 0
    if not names:
        return 0
    import sqlite3

    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
    try:
        try:
            marks = dict(conn.execute("SELECT name, loaded FROM audit_journal").fetchall())
        except sqlite3.OperationalError:  # no table yet: nothing loaded
            marks = {}
    finally:
        conn.close()
    total = 0
    for name in names:
        try:
            size = os.stat(directory / name).st_size
        except FileNotFoundError:
            continue
        total += max(0, size - int(marks.get(name, 0)))
    return total


def wait_loaded(db_path: str | os.PathLike[str], timeout: float = 2.0) -> bool:
    """Wait until every live process has loaded what it journaled (within ``LOAD_DELAY_S``, a quarter of a second);
    ``False`` if some still wait after ``timeout`` (e.g. a killed process's, loaded by the next one
    to open the database)."""
    deadline = time.monotonic() + timeout
    while unloaded_bytes(db_path):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return True


def encode_rows(rows: Sequence[tuple[Any, ...]]) -> bytes:
    """Rows as journal lines (the last element, the fields document, is already JSON bytes)."""
    return b"".join([encode_line(row) for row in rows])


def encode_line(row: tuple[Any, ...]) -> bytes:
    """One row as its journal line."""
    return b"".join((orjson.dumps(row[:6])[:-1], b",", row[6], b"]\n"))


def _insert(conn: Any, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert ``rows`` in order, in multi-row statements of a few fixed sizes (so few are prepared).

    The fields documents are bound as ``bytearray``: the same BLOB, but ``sqlite3`` binds a
    ``bytes`` only after looking for an adapter (a dict look-up and two failed attribute
    look-ups, as costly as the rest of the row's binding)."""
    start, total = 0, len(rows)
    for size in _CHUNKS:
        statement = _INSERTS[size]
        while total - start >= size:
            params = list(chain.from_iterable(rows[start:start + size]))
            params[6::7] = map(bytearray, params[6::7])
            conn.execute(statement, params)
            start += size


def _load_rows(db: Any, name: str, rows: Sequence[tuple[Any, ...]], end: int) -> None:
    """``rows`` into the table and the journal's loaded offset (``end``), in one transaction."""
    with db.transaction() as conn:
        if rows:
            _insert(conn, rows)
        conn.execute(_MARK, (name, end))


def _forget(db: Any, path: Path, name: str) -> None:
    """Delete a fully loaded journal, then its mark (a mark left by a crash in between is swept)."""
    os.unlink(path)
    db.execute("DELETE FROM audit_journal WHERE name = ?", (name,))


def _decode(data: bytes) -> tuple[list[tuple[Any, ...]], int]:
    """Complete lines of ``data`` as rows, and how many bytes they took.  A last line without
    its newline was cut short by a crash mid-write: its answer never left, it is not loaded."""
    end = data.rfind(b"\n") + 1
    rows = []
    for line in data[:end].splitlines():
        if not line:
            continue
        try:
            item = orjson.loads(line)
            rows.append((*item[:6], orjson.dumps(item[6])))
        except (orjson.JSONDecodeError, IndexError, TypeError):
            continue  # a damaged line must not keep every later record out of the table
    return rows, end


class Journal:
    """This process's journal file: appended in the serving thread, loaded into the table later."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.name = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}{_SUFFIX}"
        self.path = directory / self.name
        self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: nobody else holds it
        #: Bytes written, and bytes whose rows are in the table.
        self.size = 0
        self.loaded = 0
        self._lock = threading.Lock()  # guards size, loaded and the kept rows
        self._loading = threading.Lock()  # one load at a time (the loop, a query from another thread)
        #: The rows of bytes ``loaded:size`` when all of them were appended with their rows.
        self._rows: list[tuple[Any, ...]] | None = []
        #: A failed write could not be cut off: the file ends mid-line and takes no more records.
        self.broken = False

    @property
    def pending(self) -> int:
        return self.size - self.loaded

    def append(self, data: bytes, rows: Sequence[tuple[Any, ...]] | None = None) -> None:
        """Returns once every byte of ``data`` is written; raises ``OSError`` otherwise (nothing
        is then counted as written).  ``rows`` are what ``data`` encodes: kept so that loading
        need not read the file back."""
        if self.broken:
            raise OSError("this journal lost track of its end; a new one takes the next records")
        with self._lock:
            self._write(data)
            if rows is not None and self._rows is not None:
                self._rows.extend(rows)
            else:
                self._rows = None  # read the file back at the next load

    def append_line(self, line: bytes, row: tuple[Any, ...]) -> None:
        """:meth:`append` of one row's line (the per-call path: no list, usually one ``write``)."""
        if self.broken:
            raise OSError("this journal lost track of its end; a new one takes the next records")
        lock = self._lock
        lock.acquire()  # (not ``with``: its __enter__/__exit__ calls cost more, every call)
        try:
            n = os.write(self.fd, line)
            if n == len(line):
                self.size += n
            else:
                self._write(line, n)
            rows = self._rows
            if rows is not None:
                rows.append(row)
        finally:
            lock.release()

    def _write(self, data: bytes, written: int = 0) -> None:
        """Write ``data[written:]`` (``written`` bytes of it already are) and count all of it; on a
        failure cut off what was written, or mark the journal broken.  (Called holding the lock.)"""
        view = memoryview(data)
        try:
            while written < len(data):
                n = os.write(self.fd, view[written:])
                if n <= 0:  # pragma: no cover - a regular file never returns 0 for a non-empty write
                    raise OSError("journal write made no progress")
                written += n
        except BaseException:
            if written:  # cut the partial line off, or the next write would be glued to it
                try:
                    os.ftruncate(self.fd, self.size)
                except OSError:  # the file now ends mid-line: write no more to it
                    self.broken = True
            raise
        self.size += written

    def load(self, db: Any) -> int:
        """Move the lines not yet in the table into it; returns how many rows went in.

        Safe from any thread; appends wait only while the state is read and updated, not
        during the database transaction."""
        with self._loading:
            with self._lock:
                size, start = self.size, self.loaded
                if start >= size or self.fd < 0:
                    return 0
                kept = self._rows[:] if self._rows is not None else None
            if kept is not None:
                rows, end = kept, size
            else:
                rows, used = _decode(os.pread(self.fd, size - start, start))
                end = start + used
            _load_rows(db, self.name, rows, end)
            with self._lock:
                self.loaded = end
                if self._rows is not None and kept is not None:
                    del self._rows[:len(kept)]
                elif self._rows is None and end == self.size:
                    self._rows = []  # caught up: keep rows in memory again
            return len(rows)

    def close(self, db: Any) -> None:
        """Delete the file once all of it is in the table (else leave it for recovery)."""
        with self._loading, self._lock:
            if self.fd < 0:
                return
            try:
                if self.loaded >= self.size:
                    _forget(db, self.path, self.name)
            finally:
                os.close(self.fd)
                self.fd = -1


def recover_journals(db: Any, directory: Path) -> int:
    """Load and delete the journals no live process holds; returns the rows loaded."""
    try:
        names = sorted(p for p in os.listdir(directory) if p.endswith(_SUFFIX))
    except FileNotFoundError:
        names = []
    total = 0
    for name in names:
        total += _recover_one(db, directory / name, name)
    # Marks of journals that are gone (deleted after their last load, before the mark was).
    live = set(os.listdir(directory)) if directory.is_dir() else set()
    for (name,) in db.fetchall("SELECT name FROM audit_journal"):
        if name not in live:
            db.execute("DELETE FROM audit_journal WHERE name = ?", (name,))
    return total


def _recover_one(db: Any, path: Path, name: str) -> int:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return 0  # recovered by someone else meanwhile
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # its process is alive and loads it itself
        try:
            if os.stat(path).st_ino != os.fstat(fd).st_ino:
                return 0
        except FileNotFoundError:
            return 0  # recovered and deleted by someone else before we got the lock
        mark = db.fetchone("SELECT loaded FROM audit_journal WHERE name = ?", (name,))
        start = int(mark[0]) if mark else 0
        size = os.fstat(fd).st_size
        rows, used = _decode(os.pread(fd, max(0, size - start), start)) if size > start else ([], 0)
        _load_rows(db, name, rows, start + used)
        _forget(db, path, name)
        return len(rows)
    finally:
        os.close(fd)
