"""Dependency faults: a locked, full or restarted database gives honest answers, loses nothing
acknowledged, and the service comes back by itself.

In process: the audit trail's durability contract (a commit that failed earlier is never
acknowledged later; refused records are kept and written once the database is back), SQLite's
transaction handling under ``SQLITE_FULL`` (``max_page_count``) and a failed ``COMMIT``, the
busy timeout and its fail-fast mode, PostgreSQL's pool after its sessions were terminated, and
the pipeline's mapping of a database failure inside a tool.  Then the short versions of
``stress/dependency_faults.py``: a real ``truecall serve --http`` desk under load while its
SQLite file is locked or its disk "full", and while its PostgreSQL sessions are terminated or
the server "restarts" (a TCP proxy on 127.0.0.1 cuts and refuses connections; the machine's
PostgreSQL itself is never touched).
"""

from __future__ import annotations

import asyncio
import io
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest

from pg_support import PG_URL, PgSchema, pg_schemas, require_pg  # noqa: F401

from truecall import ErrorKind, Principal, Server, StaticTokens
from truecall.audit import MAX_RETAINED, AuditLog, AuditUnavailable
from truecall.storage import FAST_FAIL_MS, Database, unavailable

from stress import dependency_faults

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "faults", "version": "1"}}


def _full(db: Database) -> None:
    """Make every further page allocation fail with SQLITE_FULL (the pragma is per connection)."""
    pages = db.fetchone("PRAGMA page_count")[0]
    db.execute(f"PRAGMA max_page_count = {pages}")


def _unfull(db: Database) -> None:
    db.execute("PRAGMA max_page_count = 1073741823")


class Lock:
    """Another connection holding the SQLite file's write lock (``BEGIN EXCLUSIVE``) until released."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=10)

    def take(self) -> None:
        self.conn.execute("BEGIN EXCLUSIVE")

    def release(self) -> None:
        self.conn.execute("ROLLBACK")

    def close(self) -> None:
        if self.conn.in_transaction:
            self.release()
        self.conn.close()


# -- the audit trail's durability contract ---------------------------------------------------------------


def test_a_commit_that_failed_earlier_is_not_acknowledged_later(tmp_path: Path) -> None:
    """The request's record was in a batch whose commit failed; by the time it asks for durability
    nothing is pending any more.  It must still hear of the failure."""
    db = Database(tmp_path / "a.db", busy_timeout_ms=20)
    log = AuditLog(db, key=b"k" * 32, journal=False)  # the database is the commit point (journal: test_audit_journal)
    lock = Lock(tmp_path / "a.db")

    async def scenario() -> None:
        log.defer(asyncio.get_running_loop())
        log.begin()  # what the engine does at the start of each request
        lock.take()
        log.record("tool.called", tool="t", outcome="ok", requestId="r1")
        await asyncio.sleep(0)  # the batch is flushed (and fails) in this turn…
        await asyncio.sleep(0)
        assert log._flushing is None  # …so nothing is pending when the answer is about to leave
        with pytest.raises(AuditUnavailable):
            await log.durable()
        lock.release()

        async def other() -> None:  # a request that began after the failure is not blamed for it
            log.begin()
            log.record("tool.called", tool="t", outcome="ok", requestId="r2")
            await log.durable()

        await asyncio.create_task(other())

    try:
        asyncio.run(scenario())
    finally:
        lock.close()
    # The refused record was kept and written with the next batch.
    assert [r.fields["requestId"] for r in reversed(log.query())] == ["r1", "r2"]
    db.close()


def test_refused_records_are_kept_within_a_bound_and_the_loss_is_recorded(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import truecall.audit._log as audit_module

    monkeypatch.setattr(audit_module, "MAX_RETAINED", 3)
    db = Database(tmp_path / "b.db", busy_timeout_ms=20)
    log = AuditLog(db, key=b"k" * 32, journal=False)
    lock = Lock(tmp_path / "b.db")

    async def scenario() -> None:
        log.defer(asyncio.get_running_loop())
        lock.take()
        for n in range(5):
            log.record("tool.called", tool="t", outcome="ok", requestId=f"r{n}")
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                await log.durable()
        lock.release()
        log.record("tool.called", tool="t", outcome="ok", requestId="r5")
        await log.durable()

    try:
        asyncio.run(scenario())
    finally:
        lock.close()
    records = list(reversed(log.query()))
    assert [r.fields.get("requestId") for r in records if r.kind == "tool.called"] == ["r2", "r3", "r4", "r5"]
    [dropped] = [r for r in records if r.kind == "audit.dropped"]
    assert dropped.fields["count"] == 2 and dropped.outcome == "error"
    db.close()


def test_stdio_refuses_an_answer_whose_record_failed_and_serves_again_after(tmp_path: Path) -> None:
    from truecall.protocol import Engine
    from truecall.transports.stdio import StdioConnection

    app = Server("locked", db=Database(tmp_path / "s.db", busy_timeout_ms=20), audit_journal=False)
    lock = Lock(tmp_path / "s.db")

    @app.tool("echo", description="Echoes.", annotations={"readOnlyHint": True})
    def echo(ctx, text: str = "") -> str:
        return text

    async def scenario() -> list[dict[str, Any]]:
        out = io.BytesIO()
        app.events.defer(asyncio.get_running_loop())
        conn = StdioConnection(Engine(app), Principal("tester", "t1"), out)

        async def call(rid: int) -> None:
            conn.receive_line(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                            "params": {"name": "echo", "arguments": {"text": "x"}, "_meta": META}}))
            await asyncio.sleep(0.05)

        lock.take()
        await call(1)
        lock.release()
        await call(2)
        await conn.drain(0.1)
        return [orjson.loads(line) for line in out.getvalue().splitlines()]

    try:
        first, second = asyncio.run(scenario())
    finally:
        lock.close()
    assert first["id"] == 1 and first["error"]["code"] == -32603 and "result" not in first
    assert second["id"] == 2 and second["result"]["content"] == [{"type": "text", "text": "x"}]
    # the refused call's record was written once the database had room again
    assert sorted(r.fields["requestId"] for r in app.events.query(kind="tool.called")) == [1, 2]
    app.db.close()


# -- SQLite: transactions under SQLITE_FULL, a failed COMMIT, the busy timeout ------------------------------


def test_sqlite_full_raises_the_real_error_and_the_connection_stays_usable(tmp_path: Path) -> None:
    db = Database(tmp_path / "f.db")
    db.execute("CREATE TABLE t (x BLOB)")
    _full(db)
    with pytest.raises(sqlite3.OperationalError) as caught:
        with db.transaction():  # SQLite rolls the transaction back by itself here
            db.execute("INSERT INTO t VALUES (?)", (b"x" * 100_000,))
    assert "full" in str(caught.value)  # not "cannot rollback - no transaction is active"
    assert unavailable(caught.value) == "the database is full (disk or size limit)"
    _unfull(db)
    with db.transaction():
        db.execute("INSERT INTO t VALUES (?)", (b"y",))
    assert db.fetchall("SELECT x FROM t") == [(b"y",)]
    db.close()


class _CommitFails:
    """A connection whose next COMMIT fails and leaves the transaction open (as SQLite may on I/O errors)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.fail_next_commit = True

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT" and self.fail_next_commit:
            self.fail_next_commit = False
            raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_a_failed_commit_is_rolled_back_never_joined_by_the_next_transaction(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    db = Database(path)
    db.execute("CREATE TABLE t (x TEXT)")
    real = db._conn
    db._conn = _CommitFails(real)  # type: ignore[assignment]
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        with db.transaction():
            db.execute("INSERT INTO t VALUES ('lost')")
    assert not real.in_transaction  # ended, not left open for the next caller to join
    with db.transaction():
        db.execute("INSERT INTO t VALUES ('kept')")
    other = sqlite3.connect(path)
    try:  # what another connection sees is what was committed
        assert other.execute("SELECT x FROM t").fetchall() == [("kept",)]
    finally:
        other.close()
    db._conn = real
    db.close()


def test_the_busy_timeout_is_configurable_and_fails_fast_while_the_lock_is_held(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "l.db"
    monkeypatch.setenv("TRUECALL_DB_BUSY_MS", "300")
    db = Database(path)
    assert db.busy_timeout_ms == 300 and Database(":memory:", busy_timeout_ms=5).busy_timeout_ms == 5
    db.execute("CREATE TABLE t (x INTEGER)")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError) as caught:
            db.execute("INSERT INTO t VALUES (1)")
        assert 0.25 < time.monotonic() - started < 3
        assert unavailable(caught.value) == "the database is busy (locked by another connection)"
        assert db.fetchall("SELECT x FROM t") == []  # reads go on (WAL)
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError):
            with db.transaction():
                db.execute("INSERT INTO t VALUES (2)")
        assert time.monotonic() - started < 0.25  # fails fast: the lock is known to be held
        assert db.fetchone("PRAGMA busy_timeout")[0] == FAST_FAIL_MS
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with db.transaction():
        db.execute("INSERT INTO t VALUES (3)")
    assert db.fetchone("PRAGMA busy_timeout")[0] == 300  # back to normal once a write got through
    assert db.fetchall("SELECT x FROM t") == [(3,)]
    db.close()
    with pytest.raises(ValueError):
        Database(":memory:", busy_timeout_ms=-1)


def test_only_outages_count_as_unavailable() -> None:
    assert unavailable(sqlite3.OperationalError("no such table: x")) is None
    assert unavailable(sqlite3.IntegrityError("UNIQUE constraint failed")) is None
    assert unavailable(ValueError("database is locked")) is None
    assert unavailable(psycopg.OperationalError("server closed the connection unexpectedly")) is not None
    assert unavailable(psycopg.errors.UndefinedTable("x")) is None


# -- PostgreSQL: the pool after a restart -------------------------------------------------------------------


def test_postgres_sessions_ended_by_the_server_fail_no_statement(pg_schemas: Any) -> None:
    from truecall.storage import open_database

    schema: PgSchema = pg_schemas()
    db = open_database(schema.url)
    try:
        db.execute("CREATE TABLE t (x BIGINT)")
        # several pooled connections, all idle
        with db.transaction():
            with db._connection() as second, db._connection() as third:
                second.execute("SELECT 1")
                third.execute("SELECT 1")
        for attempt in range(3):
            with psycopg.connect(PG_URL, autocommit=True) as admin:
                ended = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                                      "application_name = %s", (schema.name,)).fetchall()
            assert ended, "the pool had connections to end"
            time.sleep(0.1)
            # every idle connection is dead now; none of them may fail a statement
            db.execute("INSERT INTO t VALUES (%d)" % attempt)
            assert db.fetchone("SELECT COUNT(*) FROM t") == (attempt + 1,)
    finally:
        db.close()


def test_postgres_unreachable_fails_fast_after_one_full_wait_and_comes_back(pg_schemas: Any) -> None:
    from urllib.parse import urlsplit

    from truecall.storage import PostgresDatabase

    schema: PgSchema = pg_schemas()
    parts = urlsplit(PG_URL)
    proxy = dependency_faults.TcpProxy((parts.hostname or "127.0.0.1", parts.port or 5432))
    url = dependency_faults._with_schema(dependency_faults._via(PG_URL, proxy.port), schema.name)
    db = PostgresDatabase(url, busy_timeout_ms=500)
    try:
        db.execute("CREATE TABLE t (x BIGINT)")
        proxy.down()
        started = time.monotonic()
        with pytest.raises(psycopg.OperationalError) as caught:
            db.execute("INSERT INTO t VALUES (1)")
        assert time.monotonic() - started < 3
        assert unavailable(caught.value) is not None
        started = time.monotonic()
        for _ in range(5):
            with pytest.raises(psycopg.OperationalError):
                db.fetchone("SELECT COUNT(*) FROM t")
        assert time.monotonic() - started < 0.5  # known unreachable: no full wait per statement
        proxy.up()
        deadline = time.monotonic() + 5  # the pool reconnects by itself (at most a second apart)
        while True:
            try:
                db.execute("INSERT INTO t VALUES (2)")
                break
            except psycopg.OperationalError:
                assert time.monotonic() < deadline, "the pool did not reconnect"
                time.sleep(0.05)
        assert db.fetchone("SELECT COUNT(*) FROM t") == (1,)
    finally:
        db.close()
        proxy.close()


# -- the pipeline: a database failure inside a tool ------------------------------------------------------------


def test_a_database_failure_inside_a_tool_is_an_honest_tool_error(tmp_path: Path) -> None:
    token = "t-faults"
    app = Server("faults", tokens=StaticTokens.from_plain({token: Principal("u", "acme", frozenset())}),
                 db=tmp_path / "p.db").start()
    locked = sqlite3.OperationalError("database is locked")
    locked.sqlite_errorcode = 5  # type: ignore[attr-defined]
    locked.sqlite_errorname = "SQLITE_BUSY"  # type: ignore[attr-defined]

    @app.tool("lookup", description="Reads.", annotations={"readOnlyHint": True})
    def lookup(ctx) -> str:
        raise locked

    @app.tool("write", description="Writes.")
    def write(ctx) -> str:
        raise locked

    @app.tool("buggy", description="Has a bug.", annotations={"readOnlyHint": True})
    def buggy(ctx) -> str:
        raise sqlite3.OperationalError("no such table: nope")

    read = app.call_tool("lookup", {}, token)
    error = read.structured_content["error"]
    assert read.is_error and error["kind"] == ErrorKind.DEPENDENCY_UNAVAILABLE.value and error["retryable"] is True
    assert error["message"] == "the database is busy (locked by another connection); this read-only tool changed " \
                               "nothing. Retry later."
    wrote = app.call_tool("write", {}, token).structured_content["error"]
    assert wrote["kind"] == "internal" and "stopped part-way" in wrote["message"] and "not known" in wrote["message"]
    bug = app.call_tool("buggy", {}, token).structured_content["error"]
    assert bug["kind"] == "internal" and bug["message"] == \
        "the tool failed unexpectedly; nothing is known to have happened"
    records = {r.tool: r for r in app.events.query(kind="tool.failed")}
    assert records["lookup"].outcome == "dependency_unavailable"
    assert records["write"].fields["reason"] == "dependency_unavailable"
    assert records["buggy"].fields["reason"] == "exception" and "no such table" not in orjson.dumps(
        records["buggy"].fields).decode()
    app.db.close()


def test_the_engine_never_blames_the_client_or_raises_for_a_database_failure(tmp_path: Path) -> None:
    from truecall.protocol import Engine, Session, jsonrpc

    path = tmp_path / "e.db"
    app = Server("engine-faults", db=Database(path, busy_timeout_ms=20))
    form = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

    @app.tool("ask", description="Asks for a name.")
    async def ask(ctx) -> str:
        answer = await ctx.elicit("Your name?", form, key="user_name")
        return f"Hi, {answer.content['name']}!"

    engine = Engine(app).start()
    principal = Principal("u", "acme", frozenset())
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
    lock = Lock(path)

    async def call(rid: int, params: dict[str, Any]) -> dict[str, Any]:
        message = jsonrpc.decode(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                               "params": {"name": "ask", **params, "_meta": meta}}))
        return (await engine.serve(message, principal))[0]

    async def scenario() -> None:
        app.events.defer(asyncio.get_running_loop())  # as every transport does
        first = (await call(1, {}))["result"]
        retry = {"requestState": first["requestState"],
                 "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}}}
        lock.take()
        try:
            # The state could not be marked used: an internal error, not "your requestState is invalid".
            refused = await call(2, retry)
            assert refused["error"]["code"] == -32603, refused
            # A handshake-era session whose state cannot be stored: an error message, not an exception.
            session = Session(principal=principal)

            def persist(s: Session) -> None:
                raise sqlite3.OperationalError("database is locked")

            session.persist = persist
            init = jsonrpc.decode(orjson.dumps({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}))
            response, _status = await engine.serve(init, principal, session=session)
            assert response["error"]["code"] == -32603 and "result" not in response
        finally:
            lock.release()
        # Once the database is back, the same state is still good: nothing consumed it.
        done = (await call(4, retry))["result"]
        assert done["content"] == [{"type": "text", "text": "Hi, Ada!"}]

    try:
        asyncio.run(scenario())
    finally:
        lock.close()
        app.db.close()


# -- the real server under load (short versions of stress/dependency_faults.py) -----------------------------


@pytest.mark.seed(11)
@pytest.mark.parametrize("scenario", dependency_faults.SCENARIOS)
def test_desk_under_a_dependency_fault(tmp_path: Path, scenario: str, rng_seed: int) -> None:
    if scenario.startswith("pg_"):
        require_pg()
    # 3 s after the fault: PostgreSQL's pool reconnects at most a second apart, and the last second must be clean.
    report = dependency_faults.run_scenario(scenario, tmp_path, warm=0.8, fault=1.2, after=3.0, clients=4, seed=rng_seed)
    assert report.ok, report.summary()
    counts = report.answers
    assert counts["warm"] and set(counts["warm"]) <= {"ok", "task"}
    assert any(k not in ("ok", "task") for k in counts["fault"]), counts  # the fault showed
    assert report.resumed_after_s is not None and report.resumed_after_s < 2.0, report.summary()
    checks = report.checks
    assert checks.acked_calls > 50 and checks.audit_matched == checks.acked_calls
    # every refused call has its record, but those beyond what the trail holds while it cannot write
    # (MAX_RETAINED), which audit.dropped counts: a fast machine refuses more than that in the fault's 1.2 s
    assert report.refused_calls - report.refused_with_record <= report.dropped_records, report.summary()
    assert report.dropped_records == 0 or report.refused_calls > MAX_RETAINED, report.summary()
    assert checks.final_status and set(checks.final_status) <= {"completed", "cancelled", "failed"}


def test_the_page_cache_is_configurable_and_nonsense_is_refused(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from truecall.storage import DEFAULT_CACHE_KIB

    assert Database(tmp_path / "c.db").fetchone("PRAGMA cache_size")[0] == -DEFAULT_CACHE_KIB
    assert Database(tmp_path / "c.db", cache_kib=4096).fetchone("PRAGMA cache_size")[0] == -4096
    monkeypatch.setenv("TRUECALL_DB_CACHE_KIB", "1024")
    assert Database(tmp_path / "c.db").fetchone("PRAGMA cache_size")[0] == -1024
    for bad in ("lots", "0"):
        monkeypatch.setenv("TRUECALL_DB_CACHE_KIB", bad)
        with pytest.raises(ValueError, match="KiB"):
            Database(tmp_path / "c.db")
