"""PostgreSQL behind the same interface (:class:`~truecall.storage.Storage`) as SQLite.

Stores write one portable SQL dialect (``?`` placeholders, SQLite type names,
``INSERT OR IGNORE``); :func:`to_postgres` translates it once per statement
(cached).  A connection pool serves plain statements in autocommit; a
``transaction()`` pins one connection to the current thread until it commits,
so several replicas can share one database safely.  Migrations run under an
advisory lock, so replicas starting together apply each one exactly once.
"""

from __future__ import annotations

import os
import re
import select
import socket
import threading
import time
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Iterator, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ._deadline import Deadlines
from ._faults import postgres_unavailable
from ._interface import Migration, Row
from ._opening import NotOpen, Opening, Unopened
from ._settings import FAST_FAIL_MS, busy_ms, statement_ms
from ._target import CannotOpenDatabase

__all__ = ["PostgresDatabase", "to_postgres", "split_schema"]

_MIGRATION_LOCK = 0x7472756563616C6C  # "truecall"
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def split_schema(url: str) -> tuple[str, str | None]:
    """``postgresql://…/db?schema=tc_x`` → (the URL without ``schema``, ``"tc_x"``).

    libpq knows no ``schema`` parameter; truecall takes it off the URL and keeps
    every table of this server in that schema (created if missing), so several
    deployments or test runs can share one database without seeing each other.
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [v for k, v in query if k == "schema"]
    if not schemas:
        return url, None
    rest = [(k, v) for k, v in query if k != "schema"]
    return urlunsplit(parts._replace(query=urlencode(rest))), schemas[-1]


@lru_cache(maxsize=1024)
def to_postgres(sql: str) -> str:
    """The portable dialect → PostgreSQL."""
    out = sql
    ignore = re.match(r"\s*INSERT\s+OR\s+IGNORE\s+INTO", out, re.I)
    if ignore:
        out = re.sub(r"INSERT\s+OR\s+IGNORE\s+INTO", "INSERT INTO", out, count=1, flags=re.I).rstrip().rstrip(";")
        out += " ON CONFLICT DO NOTHING"
    out = re.sub(r"\bINTEGER\s+PRIMARY\s+KEY\s+AUTOINCREMENT\b", "BIGSERIAL PRIMARY KEY", out, flags=re.I)
    out = re.sub(r"\bBLOB\b", "BYTEA", out, flags=re.I)
    out = re.sub(r"\bREAL\b", "DOUBLE PRECISION", out, flags=re.I)
    out = re.sub(r"\bINTEGER\b", "BIGINT", out, flags=re.I)
    return out.replace("%", "%%").replace("?", "%s")


#: Longest pause between two attempts of the pool to reconnect (seconds).  psycopg_pool doubles
#: it after every failure without a bound, so after a long outage service would come back only
#: long after the server did.
MAX_RECONNECT_DELAY_S = 1.0


def _pool_class() -> Any:
    from psycopg_pool import ConnectionPool

    class Pool(ConnectionPool):
        def _add_connection(self, attempt: Any, growing: bool = False) -> None:
            if attempt is not None and getattr(attempt, "delay", 0) > MAX_RECONNECT_DELAY_S / 2:
                attempt.delay = MAX_RECONNECT_DELAY_S / 2  # doubled once more when this attempt fails
            super()._add_connection(attempt, growing)

    return Pool


#: How long opening a database waits for its server before saying it cannot be reached (seconds;
#: libpq's ``connect_timeout``, which counts whole seconds and at least 2).
OPEN_TIMEOUT_S = 3


def _reach(url: str, given: str) -> None:
    """One connection to the server before the pool is made, bounded by :data:`OPEN_TIMEOUT_S`.

    A pool that cannot connect only logs its attempts and lets the first statement wait the whole
    busy timeout for a ``PoolTimeout`` that does not say why; this attempt fails fast with the
    host and libpq's reason, as a :class:`~truecall.storage.CannotOpenDatabase` naming ``given``
    (the URL as the setting wrote it, ``?schema=`` included).
    """
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        psycopg.connect(url, connect_timeout=OPEN_TIMEOUT_S, autocommit=True).close()
    except psycopg.Error as exc:
        try:
            params = conninfo_to_dict(url)
        except psycopg.Error:
            params = {}
        host = str(params.get("host") or "the default host")
        where = f"{host}:{params['port']}" if params.get("port") else host
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
        # libpq: 'connection failed: connection to server at "h", port p failed: <reason>' — the reason
        reason = re.sub(r'^(connection failed: )?(connection to server at "[^"]*"(, port \d+)? failed: )?', "",
                        lines[0])
        if isinstance(exc, psycopg.errors.ConnectionTimeout):
            reason = f"no answer within {OPEN_TIMEOUT_S} s ({reason})"
        raise CannotOpenDatabase(given, f"cannot connect to the PostgreSQL server at {where}: {reason}") from exc


def _alive(conn: Any) -> bool:
    """Whether a pooled connection is still usable, before a statement is risked on it.

    Free for a healthy idle connection: nothing arrives on its socket unasked, so only a readable
    socket (the server's "terminating connection" message, or EOF after a restart) costs a round
    trip to find out.
    """
    if conn.closed or conn.broken:
        return False
    try:
        poller = select.poll()
        poller.register(conn.pgconn.socket, select.POLLIN | select.POLLERR | select.POLLHUP)
        if poller.poll(0):
            conn.execute("")  # an empty query: fails if the server ended the session
    except Exception:
        return False
    return True


#: How much longer than the server's own bound (``statement_timeout``) a statement's answer is
#: waited for on this side before the connection is cut (seconds): the server's refusal, when it
#: can send one, arrives first and says what happened.
ANSWER_GRACE_S = 0.25


def _wire_settings(bound_ms: int) -> dict[str, Any]:
    """libpq's settings that bound a connection's waits on the network (``bound_ms``: the statement bound).

    ``connect_timeout`` bounds opening a connection (whole seconds, at least 2); ``tcp_user_timeout``
    ends one whose sent bytes stay unacknowledged; keepalives end an idle one whose peer is gone
    (a partition, a host powered off).  What neither can see — the other end acknowledging and
    never answering — is cut by :class:`~truecall.storage._deadline.Deadlines`.
    """
    seconds = max(1, -(-bound_ms // 1000))
    return {"connect_timeout": max(2, seconds), "tcp_user_timeout": max(1000, bound_ms), "keepalives": 1,
            "keepalives_idle": seconds, "keepalives_interval": 1, "keepalives_count": 3}


def _retune(conn: Any, wire: dict[str, Any]) -> None:
    """Give an open connection's socket the TCP bounds of ``wire`` (it was opened with older ones)."""
    try:
        sock = socket.socket(fileno=os.dup(conn.pgconn.socket))
    except Exception:  # noqa: BLE001 - closed meanwhile: the pool replaces it
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, wire["tcp_user_timeout"])
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, wire["keepalives_idle"])
    except (OSError, AttributeError):  # (a platform without these options keeps libpq's)
        pass
    finally:
        sock.close()


class _Cursor:
    """What callers use of a cursor: rows and ``rowcount``."""

    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows


class PostgresDatabase(Opening):
    """A pooled PostgreSQL database (a :class:`~truecall.storage.Storage`, like the SQLite ``Database``)."""

    dialect = "postgresql"
    #: Appended to a ``SELECT`` inside a transaction that will update the rows it read: another
    #: process's transaction on the same rows waits (SQLite's ``BEGIN IMMEDIATE`` locks the whole file).
    for_update = " FOR UPDATE"
    #: Every replica of a deployment serves from the one server: a running task may be alive elsewhere.
    shared = True
    #: A connection per thread (the pool's): a transaction waiting in a worker thread blocks nobody else.
    pooled = True
    #: The server's own commit, shared by every host, is the commit point: no journal next to a file.
    local_file: str | None = None

    unavailable = staticmethod(postgres_unavailable)

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10, schema: str | None = None,
                 busy_timeout_ms: int | None = None, statement_timeout_ms: int | None = None,
                 connect: bool = True, not_open: type[NotOpen] = NotOpen) -> None:
        """``busy_timeout_ms``: how long a statement waits for a pooled connection before it fails
        (default ``$TRUECALL_DB_BUSY_MS`` or 10000), e.g. while the server restarts.
        ``statement_timeout_ms``: how long a statement may run or wait for a lock (PostgreSQL's
        ``statement_timeout`` and ``lock_timeout``; default ``$TRUECALL_DB_STATEMENT_TIMEOUT_MS`` or
        10000); :meth:`bound_waits` lowers it.  ``connect=False``: the URL is read now, the server
        is reached at :meth:`open` (see :mod:`truecall.storage._opening`); a statement before it
        raises ``not_open``."""
        import psycopg
        from psycopg_pool import PoolTimeout

        Opening.__init__(self)
        self._PoolTimeout = PoolTimeout

        #: Raised for a broken constraint, like :attr:`truecall.storage.Database.IntegrityError`.
        self.IntegrityError: type[Exception] = psycopg.IntegrityError

        self._given = url
        url, in_url = split_schema(url)
        schema = schema or in_url
        if schema is not None and not _SCHEMA_NAME.match(schema):
            raise ValueError("a schema name is letters, digits and underscores (at most 63), not starting with a digit")
        self.path = url
        self.schema = schema
        self.statement_timeout_ms = statement_ms(statement_timeout_ms)
        #: Bumped by every change of the bound; a pooled connection applies the new one before its next use.
        self._bound_gen = 0

        self.busy_timeout_ms = busy_ms(busy_timeout_ms)
        self._min_size = min_size
        self._max_size = max_size
        #: How many threads may wait on this database at once (``storage.in_thread``'s pool): one per connection.
        self.max_connections = max_size
        #: The last statement found no connection in time: the next ones wait only briefly (see _connection).
        self._unreachable = False
        #: Cuts a connection whose server's answer is overdue (see _deadline).
        self._deadlines = Deadlines()
        #: libpq's network bounds for the connections the pool opens from now on (bound_waits lowers them).
        self._wire = _wire_settings(self.statement_timeout_ms)
        self._local = threading.local()
        self._closed = False
        # Until it opens, a stand-in that refuses every use in one line (statements carry no check).
        self._not_open = not_open
        self._pool: Any = Unopened(url, not_open)
        if connect:
            self.open()

    def _connect(self) -> None:
        url, schema = self.path, self.schema

        def configure(conn: Any) -> None:
            conn.autocommit = True
            if schema:
                conn.execute(f'SET search_path TO "{schema}"')
            self._apply_bound(conn)

        _reach(url, self._given)
        self._pool = _pool_class()(url, min_size=self._min_size, max_size=self._max_size, configure=configure,
                                   open=True, timeout=self.busy_timeout_ms / 1000, kwargs=self._wire)
        try:
            # Replicas may start together: CREATE … IF NOT EXISTS is not safe against a concurrent
            # creator (it can fail on a catalog unique index), so creation takes the migration lock.
            with self.transaction() as conn:
                self._unbounded(conn)
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                if schema:
                    conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, "
                             "applied_at DOUBLE PRECISION NOT NULL)")
        except BaseException:
            # Not open: the pool goes, the stand-in is back, and a later open() tries again.
            pool, self._pool = self._pool, Unopened(url, self._not_open)
            pool.close()
            raise

    # -- statements -------------------------------------------------------------------

    def bound_waits(self, ms: float) -> None:
        """Never let a statement run or wait for a lock longer than ``ms`` (lowers the timeouts).

        The server bounds every statement below its task lease: a replica stuck longer than
        that in one statement (say, behind ``LOCK TABLE``) would lose its tasks while still
        believing it ran them, and freeze its event loop meanwhile.

        The same bound holds on this side of the network: a connection whose server sends no
        answer for that long is cut (and discarded), the pool's wait for a connection is no longer,
        and new connections carry TCP bounds to match (see :func:`_wire_settings`).
        """
        bound = max(1, int(ms))
        if bound < self.statement_timeout_ms:
            self.statement_timeout_ms = bound
            self._bound_gen += 1
            self._wire.update(_wire_settings(bound))  # (the pool's own dict: connections it opens next)
        if bound < self.busy_timeout_ms:
            self.busy_timeout_ms = bound
            if self.connected:  # (else: the pool is made with it)
                self._pool.timeout = bound / 1000

    def _apply_bound(self, conn: Any) -> None:
        ms = int(self.statement_timeout_ms)
        # One round trip; the third bound ends the session of a process frozen inside a transaction
        # (a stopped container), so the row locks it holds never stop the others for longer.
        conn.execute(f"SET statement_timeout = {ms}; SET lock_timeout = {ms}; "
                     f"SET idle_in_transaction_session_timeout = {ms}")
        if self._bound_gen:
            _retune(conn, self._wire)
        conn._truecall_bound = self._bound_gen

    def _unbounded(self, conn: Any) -> None:
        """Start-up work (migrations, under their advisory lock) waits as long as it takes: replicas
        starting together queue behind one another instead of failing on the serving bound."""
        conn.execute("SET LOCAL statement_timeout = 0")
        conn.execute("SET LOCAL lock_timeout = 0")
        self._deadlines.done(conn._truecall_watch)

    @property
    def _answer_s(self) -> float:
        """How long one statement's answer is waited for before its connection is cut (seconds)."""
        return self.statement_timeout_ms / 1000 + ANSWER_GRACE_S

    def _run(self, conn: Any, sql: str, params: Sequence[Any]) -> _Cursor:
        self._deadlines.extend(conn._truecall_watch, self._answer_s)
        cur = conn.execute(to_postgres(sql), [bytes(p) if isinstance(p, (bytearray, memoryview)) else p
                                               for p in params])
        rows = cur.fetchall() if cur.description is not None else []
        return _Cursor([tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in rows],
                       cur.rowcount)

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """Like ``pool.connection()``, but never a connection the server has already ended.

        After a restart, a failover or ``pg_terminate_backend``, every idle pooled connection is
        dead: each would fail one statement before the pool noticed.  Such a connection is
        closed here (the pool then replaces it) and the next one taken, without a statement
        failing on it.  (The pool's own ``check`` does the same, but sleeps a second after each
        dead connection — on the event loop, that is the whole server.)
        """
        pool = self._pool
        # While the server is unreachable, a statement waits only briefly for a connection: long
        # enough to pick up one the pool has just made again, not the whole timeout on the event loop.
        wait_ms = min(self.busy_timeout_ms, FAST_FAIL_MS) if self._unreachable else self.busy_timeout_ms
        wait = max(1, wait_ms) / 1000  # the pool refuses a zero timeout even with a connection ready
        deadline = time.monotonic() + wait
        try:
            conn = pool.getconn(timeout=wait)
            for _ in range(self._max_size):
                if _alive(conn):
                    break
                conn.close()
                pool.putconn(conn)  # a closed connection is discarded and a new one is started
                conn = pool.getconn(timeout=max(0.001, deadline - time.monotonic()))
        except self._PoolTimeout:
            self._unreachable = True
            raise
        self._unreachable = False
        # Every answer this checkout waits for is bounded here too (see _deadline): a server that
        # stops answering ends as a lost connection, which the pool then discards.
        watch = conn._truecall_watch = self._deadlines.watch(lambda: conn.pgconn.socket, self._answer_s)
        try:
            if getattr(conn, "_truecall_bound", None) != self._bound_gen:
                self._apply_bound(conn)
            with conn:  # what pool.connection() does: commit/rollback, keep the connection open
                yield conn
        finally:
            self._deadlines.done(watch)
            pool.putconn(conn)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _Cursor:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return self._run(conn, sql, params)
        with self._connection() as conn:
            return self._run(conn, sql, params)

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        return self.execute(sql, params).fetchone()

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self.execute(sql, params).fetchall()

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One connection, one transaction, on this thread; nested calls join it."""
        if getattr(self._local, "conn", None) is not None:
            yield self._local.conn
            return
        with self._connection() as conn:
            self._local.conn = conn
            try:
                with conn.transaction():
                    try:
                        yield conn
                    finally:  # the COMMIT's (or ROLLBACK's) answer is waited for like a statement's
                        self._deadlines.extend(conn._truecall_watch, self._answer_s)
            finally:
                self._local.conn = None

    def _migrate_now(self, migrations: Sequence[Migration]) -> None:
        """Apply missing migrations under an advisory lock (replicas may start together): :meth:`migrate`."""
        with self.transaction() as conn:
            self._unbounded(conn)
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            done = {row[0] for row in conn.execute("SELECT name FROM _migrations").fetchall()}
            for name, script in migrations:
                if name in done:
                    continue
                for statement in (s.strip() for s in script.split(";")):
                    if statement:
                        conn.execute(to_postgres(statement).replace("%%", "%"))
                conn.execute("INSERT INTO _migrations VALUES (%s, %s)", (name, time.time()))

    def forget(self) -> bool:
        """PostgreSQL keeps an overwritten row's old version until VACUUM reclaims it (MVCC): this
        cannot be forced from inside the application's transactions, so nothing is promised here."""
        return False

    def integrity_check(self) -> str:
        self.execute("SELECT 1")
        return "ok"

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.connected:
                self._pool.close()
            self._deadlines.close()
