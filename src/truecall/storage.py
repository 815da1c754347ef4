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
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from ._misuse import Misuse, SettingError

__all__ = ["Database", "Migration", "open_database", "unavailable", "CannotOpenDatabase", "DEFAULT_PATH",
           "default_path", "shown_target", "ENV_BUSY_MS", "DEFAULT_BUSY_MS", "ENV_CACHE_KIB",
           "DEFAULT_CACHE_KIB", "ENV_STATEMENT_MS", "DEFAULT_STATEMENT_MS"]

#: (name, SQL script) pairs; applied once each, in order, recorded in ``_migrations``.
Migration = tuple[str, str]

#: How long a statement waits for another connection's write lock before failing with
#: ``database is locked`` (milliseconds).  The database is used from the event loop, so this is
#: also how long one statement can hold the whole process up.
ENV_BUSY_MS = "TRUECALL_DB_BUSY_MS"
DEFAULT_BUSY_MS = 10_000
#: SQLite's own page cache per connection, in KiB.  Small on purpose: a server's hot pages are few
#: (the right edge of the audit table, the open tasks), and a miss is one read from the operating
#: system's page cache, which holds the rest; SQLite's default (2 MiB) is that much more memory.
ENV_CACHE_KIB = "TRUECALL_DB_CACHE_KIB"
DEFAULT_CACHE_KIB = 512
#: Once a statement has waited the whole busy timeout in vain, the next ones wait only this long
#: (milliseconds) until a write gets through again: a lock held for minutes must not turn every
#: statement of every request into a full wait on the event loop (that is a hung server, not an
#: honest "unavailable").
FAST_FAIL_MS = 20
#: PostgreSQL: the longest a statement may run, or wait for a lock, before it fails
#: (``statement_timeout`` and ``lock_timeout``, milliseconds).  A serving process lowers it
#: further, to half its task lease (see ``Server``).
ENV_STATEMENT_MS = "TRUECALL_DB_STATEMENT_TIMEOUT_MS"
DEFAULT_STATEMENT_MS = 10_000

# SQLite primary result codes that mean "the database is unavailable right now", not "this
# statement is wrong": BUSY, LOCKED, NOMEM, READONLY, IOERR, FULL, CANTOPEN, PROTOCOL.
_SQLITE_UNAVAILABLE = {5: "busy (locked by another connection)", 6: "locked", 7: "out of memory",
                       8: "read-only", 10: "disk I/O error", 13: "full (disk or size limit)",
                       14: "cannot be opened", 15: "locking protocol error"}


def unavailable(exc: BaseException) -> str | None:
    """Why ``exc`` means the database is unavailable (locked, full, unreachable, restarted), or ``None``.

    ``None`` for everything else, SQL mistakes and constraint violations included (those are bugs
    or answers, not outages).  The reason is fixed text, safe for a client.
    """
    if isinstance(exc, sqlite3.OperationalError):
        why = _SQLITE_UNAVAILABLE.get(getattr(exc, "sqlite_errorcode", 0) & 0xFF)
        return f"the database is {why}" if why else None
    psycopg = sys.modules.get("psycopg")  # loaded only when a PostgreSQL database is in use
    if psycopg is not None and isinstance(exc, psycopg.OperationalError):
        return "the database server is unreachable or refused the statement (connection lost, restart, " \
               "timeout or out of resources)"
    return None


class Database:
    """A durable SQLite database with named, idempotent migrations."""

    dialect = "sqlite"
    #: What a server database appends to a ``SELECT`` whose rows the transaction will update
    #: (row locks); SQLite's ``BEGIN IMMEDIATE`` already holds the write lock, so nothing here.
    for_update = ""
    #: Raised for a broken constraint (unique, primary key, check, foreign key), whatever the backend.
    IntegrityError: type[Exception] = sqlite3.IntegrityError

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, synchronous: str = "NORMAL",
                 busy_timeout_ms: int | None = None, cache_kib: int | None = None) -> None:
        """``busy_timeout_ms``: how long a statement waits for another connection's lock before it
        fails with ``database is locked`` (default ``$TRUECALL_DB_BUSY_MS`` or 10000).
        ``cache_kib``: SQLite's page cache for this connection (default ``$TRUECALL_DB_CACHE_KIB``
        or 512)."""
        self.path = str(path)
        if self.path != ":memory:":
            # A path someone gave names a file in a folder they chose: a typo there must not
            # become a new folder tree with an empty database in it (see default_path()).
            folder = Path(self.path).parent
            if not folder.is_dir():
                raise CannotOpenDatabase(self.path, f"the folder {folder} does not exist (a database path "
                                         "never creates folders)")
        busy = _busy_ms(busy_timeout_ms)
        self.busy_timeout_ms = busy
        self._lock = threading.RLock()
        #: Transactions open on this connection through :meth:`transaction` (nesting joins).
        self._depth = 0
        #: The last write gave up waiting for a lock: statements now fail fast (see FAST_FAIL_MS).
        self._degraded = False
        cache = _cache_kib(cache_kib)
        try:
            self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                         timeout=busy / 1000)
        except sqlite3.OperationalError as exc:
            raise CannotOpenDatabase(self.path, f"{exc} (a folder or permission problem?)") from exc
        #: A forget() that could not truncate the WAL yet (readers in the way): retried by the next.
        self._unforgotten = False
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA synchronous={synchronous}")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute(f"PRAGMA cache_size=-{cache}")
            self._conn.execute(f"PRAGMA busy_timeout={busy}")
            # Deleted or overwritten content is zeroed in the pages it leaves, so that what a store
            # forgets (a task's scrubbed answer) is not left in free space; see forget() for the WAL.
            self._conn.execute("PRAGMA secure_delete=ON")
            self._conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            # Only what no retry can mend is a misuse; a lock held by another process stays what it is.
            why = {26: "the file is not a SQLite database", 14: "the file cannot be opened"}.get(
                getattr(exc, "sqlite_errorcode", 0) & 0xFF)  # SQLITE_NOTADB, SQLITE_CANTOPEN
            if why is None:
                raise
            raise CannotOpenDatabase(self.path, why) from exc
        self._closed = False

    def migrate(self, migrations: Sequence[Migration]) -> None:
        """Apply the migrations not applied yet, each in its own transaction."""
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
            if not self._degraded:
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

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchone()
            except sqlite3.OperationalError as exc:
                self._gave_up(exc)
                raise

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
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
        return str(self.fetchone("PRAGMA integrity_check")[0])  # type: ignore[index]

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()


#: The setting that names the database of the desk and of the operator commands (a path or a URL).
ENV_DB = "TRUECALL_DB"
#: Where the desk and the operator commands keep their data when nothing names a database.
DEFAULT_PATH = os.path.join(".truecall", "desk.db")


def default_path() -> str:
    """:data:`DEFAULT_PATH`, its folder created: the one database path truecall picks itself, so
    the one whose folder it may make (a path that was given must be in a folder that exists)."""
    os.makedirs(os.path.dirname(DEFAULT_PATH), exist_ok=True)
    return DEFAULT_PATH


class CannotOpenDatabase(Misuse):
    """The database named by a setting cannot be opened: a missing folder, a file that is not a
    database, a server that cannot be reached.  ``target`` is what was asked for; ``reason`` is why.
    ``setting``, when known, is what named it (``TRUECALL_DB``, ``--db``): the line starts with it.
    """

    def __init__(self, target: str, reason: str, setting: str | None = None) -> None:
        super().__init__(target, reason)
        self.target = target
        self.reason = reason
        self.setting = setting or (ENV_DB if self.names(os.environ.get(ENV_DB)) else None)

    def names(self, value: str | None) -> bool:
        """Whether ``value`` (a setting's text) names this database."""
        if not value:
            return False
        value = value[len("sqlite:///"):] if value.startswith("sqlite:///") else value
        if "://" in value or "://" in self.target:
            return value == self.target
        return os.path.abspath(value) == os.path.abspath(self.target)

    def __str__(self) -> str:
        shown = shown_target(self.target)
        where = f"{self.setting}={shown}" if self.setting else f"database {shown}"
        return f"{where}: {self.reason}"


def shown_target(target: str) -> str:
    """A database name fit for output: a URL's password (in its user part or its query) is never shown."""
    import re

    target = re.sub(r"(://[^/:@]*):[^/@]*@", r"\1:***@", target)
    return re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", target)


def _busy_ms(value: int | None) -> int:
    return _whole(value, ENV_BUSY_MS, DEFAULT_BUSY_MS, 0, "milliseconds", "busy_timeout_ms")


def _statement_ms(value: int | None) -> int:
    return _whole(value, ENV_STATEMENT_MS, DEFAULT_STATEMENT_MS, 1, "milliseconds", "statement_timeout_ms")


def _cache_kib(value: int | None) -> int:
    return _whole(value, ENV_CACHE_KIB, DEFAULT_CACHE_KIB, 64, "KiB", "the SQLite page cache")


def _whole(value: int | None, env: str, default: int, minimum: int, unit: str, what: str) -> int:
    """``value``, else ``$env``, else ``default``: a whole number of ``unit`` >= ``minimum``."""
    if value is None:
        raw = os.environ.get(env, "").strip()
        if not raw:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise SettingError(f"{env} must be a whole number of {unit}, not {raw!r}") from None
        if value < minimum:
            raise SettingError(f"{env} must be a whole number of {unit} >= {minimum}, not {raw!r}")
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be a whole number of {unit} >= {minimum}")
    return value


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def open_database(target: "str | os.PathLike[str] | Database | None" = None, **options: Any) -> Any:
    """One setting picks the backend: a ``postgresql://`` URL, or a SQLite path (default in-memory).

    A PostgreSQL URL may carry ``?schema=NAME``: every table then lives in that schema
    (created if missing), e.g. ``postgresql://app@db/truecall?schema=desk_eu``.
    """
    if target is not None and not isinstance(target, (str, os.PathLike)):
        return target  # already a database
    text = str(target) if target is not None else ":memory:"
    if text.startswith(("postgresql://", "postgres://")):
        from .storage_pg import PostgresDatabase

        return PostgresDatabase(text, **options)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///"):]
    return Database(text, **options)
