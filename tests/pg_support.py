"""PostgreSQL for the tests: a fresh schema per test, and fixtures over both storage backends.

- ``PG_URL`` — the server: ``$TRUECALL_TEST_PG_URL``, which ``conftest.py`` sets to a private
  server it starts for the run (``tests/pg_server.py``) unless it already names one.
- ``pg_schema()`` — a context manager: ``CREATE SCHEMA tc_<random>``, yields a :class:`PgSchema`
  (``.name``, ``.url`` = the server URL with ``?schema=<name>&application_name=<name>``), then
  ends every connection that still uses it and ``DROP SCHEMA … CASCADE``.  A server process
  given ``TRUECALL_DB=<.url>`` keeps all its tables in that schema (``open_database`` takes the
  ``schema`` parameter off the URL).
- fixtures: ``pg_schemas`` (a factory; every schema it made is dropped after the test),
  ``pg_url`` (one fresh schema's URL), ``backend`` (parametrized ``sqlite``/``postgresql``),
  ``db_targets`` (a factory of fresh database targets for the test's backend: a SQLite path under
  ``tmp_path`` or a fresh schema URL), ``db_target`` (one) and ``database`` (an open
  ``Database`` on a fresh target, closed after the test).

PostgreSQL unreachable is a test *failure*, never a skip.

Use from a test module with ``from pg_support import database, backend, ...  # noqa: F401`` (pytest
finds fixtures imported into the module).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import psycopg
import pytest

PG_URL = os.environ["TRUECALL_TEST_PG_URL"]
BACKENDS = ["sqlite", "postgresql"]

_reachable: bool | None = None


def require_pg() -> None:
    """Fail (not skip) the calling test when PostgreSQL does not answer."""
    global _reachable
    if _reachable is None:
        try:
            with psycopg.connect(PG_URL, connect_timeout=5, autocommit=True) as conn:
                conn.execute("SELECT 1")
            _reachable = True
        except psycopg.Error as exc:
            _reachable = False
            reason = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
            pytest.fail(f"PostgreSQL is unreachable at {PG_URL} ({reason}); the storage tests need it. "
                        "Unset TRUECALL_TEST_PG_URL to let the suite start its own.", pytrace=False)
    if not _reachable:
        pytest.fail(f"PostgreSQL is unreachable at {PG_URL}", pytrace=False)


def admin() -> psycopg.Connection[Any]:
    """A plain autocommit connection to the test database (outside any test schema)."""
    require_pg()
    return psycopg.connect(PG_URL, connect_timeout=5, autocommit=True)


@dataclass(frozen=True)
class PgSchema:
    name: str
    url: str

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Read the schema's tables directly (ground truth for tests), ``%s`` placeholders."""
        with admin() as conn:
            conn.execute(f'SET search_path TO "{self.name}"')
            return conn.execute(sql, params).fetchall()


def schema_url(name: str) -> str:
    sep = "&" if "?" in PG_URL else "?"
    # application_name marks every connection of this schema's users, so teardown can end them.
    return f"{PG_URL}{sep}schema={name}&application_name={name}"


def new_schema_name() -> str:
    return f"tc_{secrets.token_hex(6)}"


def drop_schema(name: str) -> None:
    with admin() as conn:
        conn.execute("SET lock_timeout = '15s'")
        # Connections left open by a test (a killed replica's, a pool nobody closed) are ended first.
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s "
                     "AND pid <> pg_backend_pid()", (name,))
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@contextlib.contextmanager
def pg_schema(*, create: bool = True) -> Iterator[PgSchema]:
    """A fresh schema (``create=False``: only a fresh name; whoever opens the URL creates it)."""
    name = new_schema_name()
    if create:
        with admin() as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
    else:
        require_pg()
    try:
        yield PgSchema(name, schema_url(name))
    finally:
        drop_schema(name)


@pytest.fixture
def pg_schemas() -> Iterator[Callable[..., PgSchema]]:
    """``pg_schemas(create=True)`` → a fresh :class:`PgSchema`; all are dropped after the test."""
    stack = contextlib.ExitStack()

    def make(*, create: bool = True) -> PgSchema:
        return stack.enter_context(pg_schema(create=create))

    with stack:
        yield make


@pytest.fixture
def pg_url(pg_schemas: Callable[..., PgSchema]) -> str:
    return pg_schemas().url


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def db_targets(backend: str, tmp_path: Path, pg_schemas: Callable[..., PgSchema]) -> Callable[[], str]:
    """A factory of fresh, empty database targets for ``backend`` (what ``TRUECALL_DB`` may say)."""
    counter = iter(range(10**6))

    def make() -> str:
        if backend == "sqlite":
            return str(tmp_path / f"db-{next(counter)}.db")
        return pg_schemas().url

    return make


@pytest.fixture
def db_target(db_targets: Callable[[], str]) -> str:
    return db_targets()


@pytest.fixture
def database(db_target: str) -> Iterator[Any]:
    """A fresh ``Database`` (SQLite under ``tmp_path``, or PostgreSQL in its own schema)."""
    from truecall.storage import open_database

    db = open_database(db_target)
    try:
        yield db
    finally:
        db.close()


def nobody_writes(target: "PgSchema | str | Path") -> bool:
    """Whether no connection holds the database's write lock right now: a SQLite file's (``BEGIN
    IMMEDIATE`` without waiting); always true on PostgreSQL, whose server ends a frozen process's
    transaction after ``idle_in_transaction_session_timeout`` (see test_replicas.freeze)."""
    import sqlite3

    if isinstance(target, PgSchema) or str(target).startswith("postgresql"):
        return True
    lite = sqlite3.connect(str(target), timeout=0, isolation_level=None)
    try:
        lite.execute("BEGIN IMMEDIATE")
        lite.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        lite.close()


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(interval)
