"""SQLite storage shared by the audit trail, the task store and apps.

One connection per :class:`Database`, guarded by a lock so that the async engine,
background task runners and tests may share it.  WAL mode keeps readers off the
writer's back; ``synchronous=NORMAL`` in WAL mode makes every commit durable
against a process crash (the failure we promise to survive); ``FULL`` adds power
loss at the price of an fsync per commit.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence, cast

from ._faults import sqlite_unavailable
from ._interface import Migration, Row
from ._opening import NotOpen, Opening, Unopened
from ._settings import FAST_FAIL_MS
from ._settings import busy_ms as _busy_ms
from ._settings import cache_kib as _cache_kib
from ._target import CannotOpenDatabase

__all__ = ["Database"]


class Database(Opening):
    """A durable SQLite database with named, idempotent migrations (a :class:`~truecall.storage.Storage`)."""

    dialect = "sqlite"
    #: One serving process owns a SQLite file: a task another runner held there is an orphan.
    shared = False
    #: One connection serialises every statement of the process (see the module's docstring).
    pooled = False
    #: What a server database appends to a ``SELECT`` whose rows the transaction will update
    #: (row locks); SQLite's ``BEGIN IMMEDIATE`` already holds the write lock, so nothing here.
    for_update = ""
    #: Raised for a broken constraint (unique, primary key, check, foreign key), whatever the backend.
    IntegrityError: type[Exception] = sqlite3.IntegrityError

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, synchronous: str = "NORMAL",
                 busy_timeout_ms: int | None = None, cache_kib: int | None = None, connect: bool = True,
                 not_open: type[NotOpen] = NotOpen) -> None:
        """``busy_timeout_ms``: how long a statement waits for another connection's lock before it
        fails with ``database is locked`` (default ``$TRUECALL_DB_BUSY_MS`` or 10000).
        ``cache_kib``: SQLite's page cache for this connection (default ``$TRUECALL_DB_CACHE_KIB``
        or 512).  ``connect=False``: nothing is touched until :meth:`open` (see
        :mod:`truecall.storage._opening`); a statement before it raises ``not_open``."""
        Opening.__init__(self)
        self.path = str(path)
        self.busy_timeout_ms = _busy_ms(busy_timeout_ms)
        self._synchronous = synchronous
        self._cache = _cache_kib(cache_kib)
        self._lock = threading.RLock()
        #: Transactions open on this connection through :meth:`transaction` (nesting joins).
        self._depth = 0
        #: The last write gave up waiting for a lock: statements now fail fast (see FAST_FAIL_MS).
        self._degraded = False
        #: A forget() that could not truncate the WAL yet (readers in the way): retried by the next.
        self._unforgotten = False
        self._closed = False
        # Until it opens, a stand-in that refuses every use in one line (statements carry no check).
        self._conn = cast(sqlite3.Connection, Unopened(self.path, not_open))
        if connect:
            self.open()

    def _connect(self) -> None:
        if self.path != ":memory:":
            # A path someone gave names a file in a folder they chose: a typo there must not
            # become a new folder tree with an empty database in it (see default_path()).
            folder = Path(self.path).parent
            if not folder.is_dir():
                raise CannotOpenDatabase(self.path, f"the folder {folder} does not exist (a database path "
                                         "never creates folders)")
        busy = self.busy_timeout_ms
        try:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=busy / 1000)
        except sqlite3.OperationalError as exc:
            raise CannotOpenDatabase(self.path, f"{exc} (a folder or permission problem?)") from exc
        try:
            # A new file gives the pages that audit retention frees back to the file system, a few at a
            # time (``PRAGMA incremental_vacuum``: truecall.audit._retention).  An existing file keeps its mode
            # until a VACUUM rewrites it (docs/guide/operations.md); its freed pages are reused meanwhile.
            conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute(f"PRAGMA cache_size=-{self._cache}")
            conn.execute(f"PRAGMA busy_timeout={busy}")
            # Deleted or overwritten content is zeroed in the pages it leaves, so that what a store
            # forgets (a task's scrubbed answer) is not left in free space; see forget() for the WAL.
            conn.execute("PRAGMA secure_delete=ON")
            conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
        except sqlite3.DatabaseError as exc:
            conn.close()
            # Only what no retry can mend is a misuse; a lock held by another process stays what it is.
            why = {26: "the file is not a SQLite database", 14: "the file cannot be opened"}.get(
                getattr(exc, "sqlite_errorcode", 0) & 0xFF)  # SQLITE_NOTADB, SQLITE_CANTOPEN
            if why is None:
                raise
            raise CannotOpenDatabase(self.path, why) from exc
        self._conn = conn

    @property
    def local_file(self) -> str | None:
        """The file, unless the database is in memory (or a ``file:`` URI, which may name shared memory)."""
        path = self.path
        if not path or path == ":memory:" or path.startswith("file:"):
            return None
        return path

    unavailable = staticmethod(sqlite_unavailable)

    def _migrate_now(self, migrations: Sequence[Migration]) -> None:
        """Apply the migrations not applied yet, each in its own transaction (:meth:`migrate`)."""
        import time

        with self._lock:
            done = {row[0] for row in self._conn.execute("SELECT name FROM _migrations")}
            for name, script in migrations:
                if name in done:
                    continue
                with self.transaction():
                    # Under the write lock: another process on this file may have applied it meanwhile.
                    if self._conn.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone():
                        continue
                    for statement in _statements(script):
                        self._conn.execute(statement)
                    self._conn.execute("INSERT INTO _migrations VALUES (?, ?)", (name, time.time()))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; rolls back on any exception.

        A nested call joins the outer transaction.  Nesting is counted here, not read off the
        connection: a transaction left open by a failed ``COMMIT`` must never be joined (its
        writes would then never be committed while every caller believed they were).
        """
        with self._lock:
            if self._depth:  # nested: join the outer transaction
                yield self._conn
                return
            if self._conn.in_transaction:  # left open by a COMMIT or ROLLBACK that failed
                self._rollback()
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                self._gave_up(exc)
                raise
            if self._degraded:  # the write lock is ours again
                self._recovered()
            self._depth = 1
            try:
                yield self._conn
            except BaseException:
                self._depth = 0
                self._rollback()
                raise
            self._depth = 0
            try:
                self._conn.execute("COMMIT")
            except BaseException:
                self._rollback()  # a failed COMMIT may leave the transaction open: end it, then say so
                raise

    def bound_waits(self, ms: float) -> None:
        """Never wait longer than ``ms`` for another connection's lock (lowers the busy timeout).

        The server bounds every wait below its task lease: a process stuck longer than that
        in one statement would lose its tasks to another replica while still believing it ran them.
        """
        busy = max(1, int(ms))
        with self._lock:
            if busy >= self.busy_timeout_ms:
                return
            self.busy_timeout_ms = busy
            if not self._degraded and self.connected:  # (else: set when it connects)
                self._conn.execute(f"PRAGMA busy_timeout={busy}")

    def _rollback(self) -> None:
        """Best effort: SQLite may have rolled back already (``SQLITE_FULL``, ``SQLITE_IOERR``), and a
        failing rollback must not hide the error that caused it."""
        if self._conn.in_transaction:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def _gave_up(self, exc: sqlite3.OperationalError) -> None:
        """A statement waited in vain for another connection's lock: fail fast from now on."""
        if not self._degraded and (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in (5, 6):  # BUSY, LOCKED
            self._degraded = True
            self._conn.execute(f"PRAGMA busy_timeout={min(self.busy_timeout_ms, FAST_FAIL_MS)}")

    def _recovered(self) -> None:
        self._degraded = False
        self._conn.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        with self._lock:
            try:
                cur = self._conn.execute(sql, params)
            except sqlite3.OperationalError as exc:
                self._gave_up(exc)
                raise
            if self._degraded and cur.rowcount != -1:  # a write went through: the lock is free again
                self._recovered()
            return cur

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        with self._lock:
            try:
                # sqlite3's stubs say Any; without a row_factory a row is a tuple.  (Not a typed local:
                # that costs ~30 instructions on the hottest statement of the audit and the task store.)
                return self._conn.execute(sql, params).fetchone()  # type: ignore[no-any-return]  # a tuple (above)
            except sqlite3.OperationalError as exc:
                self._gave_up(exc)
                raise

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                self._gave_up(exc)
                raise

    def forget(self) -> bool:
        """Make content just overwritten or deleted unreadable from every file.

        ``secure_delete`` zeroes it in the database's pages; the old page images are still in the
        ``-wal`` file until a checkpoint copies the new ones over and the WAL is truncated, which
        this does now.  With readers of another connection in the way it cannot (it waits at most
        a few milliseconds, never the busy timeout): then ``False``, and the next call retries;
        the last connection to close checkpoints and removes the WAL in any case.
        """
        if self.path == ":memory:":
            return True
        with self._lock:
            if self._depth or self._conn.in_transaction:
                self._unforgotten = True  # inside a transaction: its commit comes first
                return False
            self._conn.execute(f"PRAGMA busy_timeout={min(self.busy_timeout_ms, FAST_FAIL_MS)}")
            try:
                row = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                done = row is not None and row[0] == 0
            except sqlite3.OperationalError:
                done = False
            finally:
                self._conn.execute(f"PRAGMA busy_timeout="
                                   f"{min(self.busy_timeout_ms, FAST_FAIL_MS) if self._degraded else self.busy_timeout_ms}")
            self._unforgotten = not done
            return done

    def integrity_check(self) -> str:
        row = self.fetchone("PRAGMA integrity_check")
        if row is None:  # SQLite answers the pragma with at least one row
            raise sqlite3.DatabaseError("PRAGMA integrity_check gave no answer")
        return str(row[0])

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                if self.connected:
                    self._conn.close()


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
