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
from typing import Any, Iterator, Sequence

__all__ = ["Database", "Migration", "open_database"]

#: (name, SQL script) pairs; applied once each, in order, recorded in ``_migrations``.
Migration = tuple[str, str]


class Database:
    """A durable SQLite database with named, idempotent migrations."""

    dialect = "sqlite"
    #: What a server database appends to a ``SELECT`` whose rows the transaction will update
    #: (row locks); SQLite's ``BEGIN IMMEDIATE`` already holds the write lock, so nothing here.
    for_update = ""
    #: Raised for a broken constraint (unique, primary key, check, foreign key), whatever the backend.
    IntegrityError: type[Exception] = sqlite3.IntegrityError

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, synchronous: str = "NORMAL") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10.0)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA synchronous={synchronous}")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA busy_timeout=10000")
        self._conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
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
        """``BEGIN IMMEDIATE`` … ``COMMIT``; rolls back on any exception."""
        with self._lock:
            if self._conn.in_transaction:  # nested: join the outer transaction
                yield self._conn
                return
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        with self._lock:
            return self._conn.execute(sql, params)

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        with self._lock:
            return self._conn.execute(sql, params).fetchone()

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def integrity_check(self) -> str:
        return str(self.fetchone("PRAGMA integrity_check")[0])  # type: ignore[index]

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()


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
