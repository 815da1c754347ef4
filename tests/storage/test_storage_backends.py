"""One storage interface, two backends: every store behaves the same on SQLite and on PostgreSQL.

Each test gets a fresh database (``database``/``db_target`` from :mod:`pg_support`: a SQLite file
under ``tmp_path``, or its own PostgreSQL schema, dropped afterwards) and runs once per backend.
"Two replicas" are two ``Database`` objects on one target: two connections (SQLite) or two pools
(PostgreSQL), racing from threads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import orjson
import pytest

from _paths import TESTS
from pg_support import PgSchema, backend, database, db_target, db_targets, pg_schemas  # noqa: F401
from truecall import AuditLog, InvalidTransition, Principal, TaskInputInvalid, TaskNotFound, TaskStatus, TaskStore
from truecall.incidents.dispatch_state import DispatchState
from truecall.incidents.reconcile import fenced_cancel, reconcile
from truecall.incidents.store import IncidentStore
from truecall.incidents.tickets import NOTHING_HAPPENED, TICKET_EXISTS, KeyConflict, TicketStore
from truecall.protocol._session_state import SessionState
from truecall.protocol.engine import Session
from truecall.transports._session_store import SessionStore
from truecall.storage import Database, Storage, open_database
from truecall.storage import PostgresDatabase, split_schema, to_postgres

ALICE = Principal("alice@acme", "acme", frozenset({"read"}))
BOB = Principal("bob@acme", "acme", frozenset({"read"}))
ALICE_GLOBEX = Principal("alice@acme", "globex", frozenset({"read"}))
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def race(n: int, fn: Callable[[int], Any]) -> list[Any]:
    """Run ``fn(0..n-1)`` on ``n`` threads released together; each outcome or the exception it raised."""
    barrier = threading.Barrier(n)

    def run(i: int) -> Any:
        barrier.wait()
        try:
            return fn(i)
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            return exc

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(run, range(n)))


@pytest.fixture
def twin(db_target: str, database: Any) -> Any:
    """A second ``Database`` on the same target (another connection, or another pool)."""
    other = open_database(db_target)
    yield other
    other.close()


# -- the dialect -------------------------------------------------------------------------------------------


def test_backend_is_what_the_setting_names(database: Any, backend: str) -> None:
    assert database.dialect == backend
    assert isinstance(database, Database if backend == "sqlite" else PostgresDatabase)
    assert database.integrity_check() == "ok"
    assert database.fetchone("SELECT 1") == (1,)


def test_each_backend_declares_every_member_of_the_interface(database: Any, backend: str) -> None:
    """What differs between backends is read off the database (no probing with getattr and a default)."""
    members = {name for name in vars(Storage) if not name.startswith("_")}
    assert {"dialect", "for_update", "shared", "pooled", "local_file", "bound_waits", "unavailable",
            "IntegrityError", "transaction", "migrate"} <= members
    assert [name for name in sorted(members) if not hasattr(database, name)] == []
    server = backend == "postgresql"
    assert (database.for_update, database.shared, database.pooled) == \
        ((" FOR UPDATE", True, True) if server else ("", False, False))
    assert database.local_file == (None if server else database.path)
    assert database.unavailable(ValueError("database is locked")) is None


def test_portable_sql_translates_once() -> None:
    assert to_postgres("INSERT OR IGNORE INTO t VALUES (?, ?)") == \
        "INSERT INTO t VALUES (%s, %s) ON CONFLICT DO NOTHING"
    assert to_postgres("CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, b BLOB, r REAL, n INTEGER)") == \
        "CREATE TABLE t (id BIGSERIAL PRIMARY KEY, b BYTEA, r DOUBLE PRECISION, n BIGINT)"
    assert to_postgres("SELECT '100%' WHERE a = ?") == "SELECT '100%%' WHERE a = %s"


def test_rowcount_is_the_same(database: Any) -> None:
    database.migrate([("rc-1", "CREATE TABLE rc (k TEXT PRIMARY KEY, n INTEGER NOT NULL)")])
    assert database.execute("INSERT INTO rc VALUES (?, ?)", ("a", 1)).rowcount == 1
    assert database.execute("INSERT OR IGNORE INTO rc VALUES (?, ?)", ("a", 2)).rowcount == 0
    assert database.execute("INSERT OR IGNORE INTO rc VALUES (?, ?)", ("b", 2)).rowcount == 1
    database.execute("INSERT INTO rc VALUES (?, ?)", ("c", 3))
    assert database.execute("UPDATE rc SET n = n + 10 WHERE n >= ?", (2,)).rowcount == 2
    assert database.execute("UPDATE rc SET n = 0 WHERE k = ?", ("nope",)).rowcount == 0
    assert database.execute("DELETE FROM rc WHERE k IN (?, ?)", ("a", "b")).rowcount == 2
    assert database.fetchall("SELECT k, n FROM rc ORDER BY k") == [("c", 13)]
    assert database.execute("DELETE FROM rc").rowcount == 1


def test_bytes_and_numbers_round_trip(database: Any) -> None:
    database.migrate([("rt-1", "CREATE TABLE rt (id INTEGER PRIMARY KEY AUTOINCREMENT, b BLOB, r REAL, "
                               "n INTEGER, t TEXT)")])
    every_byte = bytes(range(256))
    values = [every_byte, b"", b"\x00", bytearray(b"\x00\xff\x00"), memoryview(b"view\x00")]
    for v in values:
        database.execute("INSERT INTO rt (b, r, n, t) VALUES (?, ?, ?, ?)", (v, 1.5e-300, 2**62, "ü\u2028'\"?%"))
    rows = database.fetchall("SELECT id, b, r, n, t FROM rt ORDER BY id")
    assert [type(r[1]) for r in rows] == [bytes] * len(values)
    assert [r[1] for r in rows] == [bytes(v) for v in values]
    assert all(r[2] == 1.5e-300 and r[3] == 2**62 and r[4] == "ü\u2028'\"?%" for r in rows)
    assert [r[0] for r in rows] == sorted(r[0] for r in rows) and len({r[0] for r in rows}) == len(values)
    assert database.fetchone("SELECT b FROM rt WHERE b = ?", (every_byte,)) == (every_byte,)
    assert database.fetchone("SELECT b FROM rt WHERE n = ?", (-1,)) is None
    assert database.fetchall("SELECT b FROM rt WHERE n = ?", (-1,)) == []


def test_transactions_roll_back_on_error_and_the_database_stays_usable(database: Any) -> None:
    database.migrate([("tx-1", "CREATE TABLE tx (k TEXT PRIMARY KEY)")])
    with pytest.raises(RuntimeError):
        with database.transaction():
            database.execute("INSERT INTO tx VALUES (?)", ("python-error",))
            raise RuntimeError("boom")
    with pytest.raises(database.IntegrityError):
        with database.transaction():
            database.execute("INSERT INTO tx VALUES (?)", ("before-sql-error",))
            database.execute("INSERT INTO tx VALUES (?)", ("dup",))
            database.execute("INSERT INTO tx VALUES (?)", ("dup",))
    with pytest.raises(ValueError):  # nested: the inner block joins the outer one; all of it rolls back
        with database.transaction():
            database.execute("INSERT INTO tx VALUES (?)", ("outer",))
            with database.transaction():
                database.execute("INSERT INTO tx VALUES (?)", ("inner",))
            raise ValueError("after the inner block")
    assert database.fetchall("SELECT k FROM tx") == []
    with pytest.raises(database.IntegrityError):  # a failed plain statement poisons nothing
        database.execute("INSERT INTO tx VALUES (?)", ("x",))
        database.execute("INSERT INTO tx VALUES (?)", ("x",))
    with database.transaction():
        database.execute("INSERT INTO tx VALUES (?)", ("y",))
    assert database.fetchall("SELECT k FROM tx ORDER BY k") == [("x",), ("y",)]


def test_a_transaction_is_invisible_to_another_connection_until_it_commits(database: Any, twin: Any) -> None:
    database.migrate([("vis-1", "CREATE TABLE vis (k TEXT PRIMARY KEY)")])
    with database.transaction():
        database.execute("INSERT INTO vis VALUES (?)", ("k",))
        if database.dialect == "postgresql":  # SQLite's writer holds the file; a reader sees the last commit
            assert twin.fetchall("SELECT k FROM vis") == []
    assert twin.fetchall("SELECT k FROM vis") == [("k",)]


# -- migrations ----------------------------------------------------------------------------------------------

COUNTED = [
    # a slow first step (the engine releases the GIL), so that racing callers really overlap
    ("counted-1", "CREATE TABLE applied (name TEXT NOT NULL); CREATE TABLE slow AS WITH RECURSIVE c(x) AS "
                  "(SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000) SELECT COUNT(*) AS n FROM c"),
    ("counted-2", "INSERT INTO applied VALUES ('counted-2')"),
    ("counted-3", "INSERT INTO applied VALUES ('counted-3'); CREATE INDEX applied_name ON applied (name)"),
]


def _applied(db: Any) -> dict[str, int]:
    return dict(db.fetchall("SELECT name, COUNT(*) FROM applied GROUP BY name"))


def test_migrations_are_versioned_and_applied_once(database: Any) -> None:
    database.migrate(COUNTED[:2])
    database.migrate(COUNTED[:2])
    assert _applied(database) == {"counted-2": 1}
    database.migrate(COUNTED)  # a later version adds only what is new
    assert _applied(database) == {"counted-2": 1, "counted-3": 1}
    names = [r[0] for r in database.fetchall("SELECT name FROM _migrations ORDER BY applied_at, name")]
    assert names == ["counted-1", "counted-2", "counted-3"]


def test_a_failing_migration_rolls_back_whole_and_is_retried(database: Any) -> None:
    bad = [("m-1", "CREATE TABLE m (k TEXT); INSERT INTO m VALUES ('a'); INSERT INTO no_such_table VALUES (1)")]
    with pytest.raises(Exception):
        database.migrate(bad)
    assert database.fetchone("SELECT 1 FROM _migrations WHERE name = 'm-1'") is None
    database.migrate([("m-1", "CREATE TABLE m (k TEXT); INSERT INTO m VALUES ('a')")])
    assert database.fetchall("SELECT k FROM m") == [("a",)]


def test_concurrent_migrations_from_threads_apply_each_exactly_once(db_target: str) -> None:
    dbs = [open_database(db_target) for _ in range(6)]  # six "replicas": own connections, own pools
    try:
        outcomes = race(len(dbs), lambda i: dbs[i].migrate(COUNTED))
        assert outcomes == [None] * len(dbs)
        assert _applied(dbs[0]) == {"counted-2": 1, "counted-3": 1}
        assert dbs[0].fetchone("SELECT COUNT(*) FROM _migrations") == (3,)
    finally:
        for db in dbs:
            db.close()


def test_replicas_opening_a_new_schema_at_once_all_start(pg_schemas: Callable[..., PgSchema]) -> None:
    # CREATE SCHEMA/TABLE IF NOT EXISTS alone fails for all but one of concurrent creators
    # (a unique violation in the catalog); opening takes the migration lock first.
    for _round in range(3):
        schema = pg_schemas(create=False)
        opened = race(8, lambda i: PostgresDatabase(schema.url))
        try:
            assert [type(o) for o in opened] == [PostgresDatabase] * 8, [o for o in opened if isinstance(o, Exception)]
        finally:
            for db in opened:
                if isinstance(db, PostgresDatabase):
                    db.close()
        assert schema.rows("SELECT COUNT(*) FROM _migrations") == [(0,)]


_MIGRATE_CHILD = """
import sys, time
from truecall.storage import open_database
import test_storage_backends as t
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
db = open_database(sys.argv[1])  # creates the schema and the migrations table: racing the others
db.migrate(t.COUNTED)
db.close()
"""


def test_concurrent_migrations_from_processes_apply_each_exactly_once(pg_schemas: Callable[..., PgSchema]) -> None:
    # The schema does not exist yet: the processes also race to create it and the migrations table.
    schema = pg_schemas(create=False)
    here = os.path.dirname(__file__)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, str(TESTS), os.environ.get("PYTHONPATH", "")])}
    start = str(time.time() + 1.5)
    procs = [subprocess.Popen([sys.executable, "-c", _MIGRATE_CHILD, schema.url, start], env=env, cwd=here,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(6)]
    # …and two `truecall migrate` (the whole desk schema) at the same moment.
    cli_env = {**os.environ, "TRUECALL_DB": schema.url}
    clis = [subprocess.Popen([sys.executable, "-m", "truecall.cli", "migrate"], env=cli_env, cwd=here,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    try:
        for proc in procs + clis:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err.decode()[-2000:]
    finally:
        for proc in procs + clis:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert dict(schema.rows("SELECT name, COUNT(*) FROM applied GROUP BY name")) == {"counted-2": 1, "counted-3": 1}
    names = [r[0] for r in schema.rows("SELECT name FROM _migrations")]
    assert len(names) == len(set(names)) and {"counted-1", "tasks-3", "desk-tickets-1", "sessions-1"} <= set(names)


def test_a_schema_in_the_url_isolates_and_is_created(pg_schemas: Callable[..., PgSchema]) -> None:
    a, b = pg_schemas(create=False), pg_schemas()
    assert split_schema(a.url) == (a.url.replace(f"schema={a.name}&", ""), a.name)
    assert split_schema("postgresql://h/db") == ("postgresql://h/db", None)
    db_a, db_b = open_database(a.url), open_database(b.url)
    try:
        assert (db_a.schema, db_b.schema) == (a.name, b.name)
        TaskStore(db_a).create(owner=ALICE)
        TaskStore(db_b)
        assert db_a.fetchone("SELECT COUNT(*) FROM tasks") == (1,)
        assert db_b.fetchone("SELECT COUNT(*) FROM tasks") == (0,)
        assert a.rows("SELECT COUNT(*) FROM tasks") == [(1,)]
    finally:
        db_a.close()
        db_b.close()
    with pytest.raises(ValueError):
        PostgresDatabase(a.url, schema='x"; DROP TABLE tasks; --')


# -- audit -----------------------------------------------------------------------------------------------------


def test_audit_records_and_queries_alike(database: Any) -> None:
    log = AuditLog(database, key=b"k" * 32)
    log.record("tool.called", tenant="acme", subject="alice", tool="search", outcome="ok", durationMs=1.5,
               arguments={"service": "payments"})
    log.record("tool.denied", tenant="globex", subject="eve", tool="escalate", outcome="denied",
               reason="insufficient_scope")
    log.record("task.created", tenant="acme", subject="alice", tool="handle", outcome="accepted", taskId="t1",
               note="token tc_" + "A" * 40)
    newest_first = log.query()
    assert [r.kind for r in newest_first] == ["task.created", "tool.denied", "tool.called"]
    assert newest_first[0].id > newest_first[1].id > newest_first[2].id
    assert [r.kind for r in log.query(tenant="acme")] == ["task.created", "tool.called"]
    assert [r.kind for r in log.query(outcome="denied")] == ["tool.denied"]
    assert [r.kind for r in log.query(tenant="acme", tool="search", limit=1)] == ["tool.called"]
    called = log.query(kind="tool.called")[0]
    assert called.fields["durationMs"] == 1.5 and "payments" not in orjson.dumps(called.fields).decode()
    assert called.fields["argHash"] == log.fingerprint({"service": "payments"})["argHash"]
    assert "tc_AAAA" not in orjson.dumps(log.query(kind="task.created")[0].to_dict()).decode()
    assert log.query(since=time.time() + 60) == [] and len(log.query(until=time.time() + 60)) == 3
    assert list(log.kinds()) == ["task.created", "tool.called", "tool.denied"]


# -- tasks -----------------------------------------------------------------------------------------------------


def test_task_life_cycle(database: Any) -> None:
    store = TaskStore(database)
    waiting = store.create({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
                           owner=ALICE, tool="t", request={"tool": "t", "era": "ext"})
    assert waiting.status is TaskStatus.INPUT_REQUIRED
    with pytest.raises(TaskInputInvalid):
        store.provide_input(waiting.task_id, {"n": "x"}, owner=ALICE)
    with pytest.raises(TaskNotFound):  # another owner reads like an unknown id
        store.provide_input(waiting.task_id, {"n": 1}, owner=BOB)
    working = store.provide_input(waiting.task_id, {"n": 1}, owner=ALICE)
    assert working.status is TaskStatus.WORKING and working.input == {"n": 1}
    again = store.request_input(waiting.task_id, NAME_FORM, "need a name")
    assert again.status is TaskStatus.INPUT_REQUIRED and again.input_schema == NAME_FORM
    store.provide_input(waiting.task_id, {"name": "ada"})
    done = store.complete(waiting.task_id, {"content": [], "structuredContent": {"ok": True}}, message="fine")
    assert done.status is TaskStatus.COMPLETED and done.result["structuredContent"] == {"ok": True}
    for refused in (lambda: store.cancel(waiting.task_id), lambda: store.fail(waiting.task_id, {"code": 1}),
                    lambda: store.complete(waiting.task_id, {})):
        with pytest.raises(InvalidTransition, match="completed"):
            refused()
    failed = store.fail(store.create(owner=ALICE).task_id, {"code": -32603, "message": "Internal error"})
    assert failed.status is TaskStatus.FAILED and failed.status_message == "Internal error"
    cancelled = store.cancel(store.create(owner=BOB).task_id)
    assert cancelled.status is TaskStatus.CANCELLED
    loaded = store.get(waiting.task_id, owner=ALICE)
    assert loaded.request == {"tool": "t", "era": "ext"} and loaded.created_at <= loaded.updated_at
    assert [t.task_id for t in store.list(ALICE)] == [waiting.task_id, failed.task_id]
    assert [t.task_id for t in store.list(status="cancelled")] == [cancelled.task_id]
    assert store.list(ALICE_GLOBEX) == []
    with pytest.raises(TaskNotFound):
        store.get(waiting.task_id, owner=ALICE_GLOBEX)


def test_ask_answer_and_scrub(database: Any) -> None:
    store = TaskStore(database)
    task = store.create(owner=ALICE, tool="t", runner_id="r1")
    asked = store.ask(task.task_id, {"name": {"method": "elicitation/create", "params": {"message": "Name?"}}})
    assert asked.status is TaskStatus.INPUT_REQUIRED and set(asked.input_requests) == {"name"}
    both = store.ask(task.task_id, {"colour": {"method": "elicitation/create"}})
    assert set(both.input_requests) == {"name", "colour"}
    with pytest.raises(ValueError, match="already used"):
        store.ask(task.task_id, {"name": {"method": "x"}})
    partial = store.answer(task.task_id, {"name": {"action": "accept", "content": {"name": "ada"}},
                                          "unknown": {"action": "accept"}}, owner=ALICE)
    assert partial.status is TaskStatus.INPUT_REQUIRED and set(partial.input_requests) == {"colour"}
    assert set(partial.responses) == {"name"}
    with pytest.raises(TaskNotFound):
        store.answer(task.task_id, {"colour": {"action": "accept"}}, owner=BOB)
    declined = store.answer(task.task_id, {"colour": {"action": "decline", "content": {"colour": "red"}}})
    assert declined.status is TaskStatus.WORKING and declined.input_requests is None
    assert declined.responses["colour"] == {"action": "decline"}  # no content kept for a refusal
    assert store.answer(task.task_id, {"colour": {"action": "accept"}}).responses == declined.responses  # late
    store.scrub_response(task.task_id, "name")
    assert store.get(task.task_id).responses["name"] == {"action": "accept"}
    with pytest.raises(ValueError, match="already used"):  # keys stay used for the task's life
        store.ask(task.task_id, {"name": {"method": "x"}})


def test_leases_orphans_and_cancel_requests(database: Any) -> None:
    store = TaskStore(database)
    mine = store.create(owner=ALICE, runner_id="r-live", lease_s=30)
    dead = store.create(owner=ALICE, runner_id="r-dead", lease_s=0.05)
    asking = store.create(owner=ALICE, runner_id="r-dead", lease_s=0.05)
    store.ask(asking.task_id, {"q": {"method": "elicitation/create"}})
    nobody = store.create(owner=ALICE)  # an in-process task without a runner is never an orphan
    finished = store.create(owner=ALICE, runner_id="r-dead", lease_s=0.05)
    store.complete(finished.task_id, {})
    time.sleep(0.1)
    assert {t.task_id for t in store.orphans()} == {dead.task_id, asking.task_id}
    assert {t.task_id for t in store.orphans(other_than="r-live")} == {dead.task_id, asking.task_id}
    assert {t.task_id for t in store.orphans(other_than="r-dead")} == {mine.task_id}
    assert store.renew_leases("r-dead", {dead.task_id: dead.lease_epoch}, 30) == []
    assert {t.task_id for t in store.orphans()} == {asking.task_id}
    assert store.renew_leases("someone-else", {asking.task_id: 0}, 30) == [asking.task_id]  # only the holder
    assert {t.task_id for t in store.orphans()} == {asking.task_id}
    runner, until = store.lease_holder(dead.task_id)
    assert runner == "r-dead" and until > time.time() + 20
    assert store.lease_holder("t-nope") == (None, None) and store.lease_holder(nobody.task_id)[0] is None
    assert store.cancel_requests("r-dead") == []
    store.request_cancel(dead.task_id)
    store.request_cancel(finished.task_id)
    assert store.cancel_requests("r-dead") == [dead.task_id]  # terminal tasks are not listed
    assert store.cancel_requests("r-live") == []


def test_expiry_and_purge(database: Any) -> None:
    store = TaskStore(database)
    short = store.create(owner=ALICE, ttl_ms=30)
    long = store.create(owner=ALICE)
    time.sleep(0.06)
    with pytest.raises(TaskNotFound):
        store.get(short.task_id)
    assert store.purge_expired() == 1 and store.purge_expired() == 0
    assert [t.task_id for t in store.list()] == [long.task_id]


def test_two_replicas_racing_on_one_task_settle_it_once(database: Any, twin: Any) -> None:
    a, b = TaskStore(database), TaskStore(twin)
    ids = [a.create(owner=ALICE, runner_id="r").task_id for _ in range(12)]
    for task_id in ids:
        outcomes = race(2, lambda i: (a.complete(task_id, {"by": "a"}) if i == 0 else b.cancel(task_id)))
        wins = [o for o in outcomes if not isinstance(o, Exception)]
        losses = [o for o in outcomes if isinstance(o, Exception)]
        assert len(wins) == 1 and len(losses) == 1 and isinstance(losses[0], InvalidTransition), outcomes
        final = a.get(task_id)
        assert final.status is wins[0].status
        assert (final.result == {"by": "a"}) is (final.status is TaskStatus.COMPLETED)


def test_two_replicas_answering_at_once_lose_no_answer(database: Any, twin: Any) -> None:
    a, b = TaskStore(database), TaskStore(twin)
    for _ in range(8):
        task_id = a.create(owner=ALICE, runner_id="r").task_id
        a.ask(task_id, {"k1": {"method": "elicitation/create"}, "k2": {"method": "elicitation/create"}})
        outcomes = race(2, lambda i: (a if i == 0 else b).answer(task_id, {f"k{i + 1}": {"action": "accept",
                                                                                          "content": {"i": i}}}))
        assert not any(isinstance(o, Exception) for o in outcomes), outcomes
        final = a.get(task_id)
        assert final.status is TaskStatus.WORKING and set(final.responses) == {"k1", "k2"}


# -- sessions --------------------------------------------------------------------------------------------------


def _session(principal: Principal = ALICE) -> Session:
    session = Session(principal=principal)
    session.state = SessionState.READY
    session.version = "2025-11-25"
    session.client_capabilities = {"elicitation": {"form": {}}}
    session.client_info = {"name": "c", "version": "1"}
    session.log_level = "info"
    session.subscriptions = {"memo://b", "memo://a"}
    return session


def test_sessions_move_between_replicas(database: Any, twin: Any) -> None:
    here, there = SessionStore(database), SessionStore(twin)
    session = _session()
    here.save(session)
    loaded = there.load(session.id, ALICE)
    assert loaded is not None and loaded.id == session.id and loaded.state is SessionState.READY
    assert (loaded.version, loaded.client_capabilities, loaded.client_info, loaded.log_level, loaded.subscriptions) == \
        ("2025-11-25", {"elicitation": {"form": {}}}, {"name": "c", "version": "1"}, "info", {"memo://a", "memo://b"})
    assert there.load(session.id, BOB) is None and there.load(session.id, ALICE_GLOBEX) is None
    loaded.log_level = "error"
    there.save(loaded)  # saving again updates in place
    assert here.load(session.id, ALICE).log_level == "error"
    assert database.fetchone("SELECT COUNT(*) FROM mcp_sessions") == (1,)
    stolen = Session(session.id, BOB)  # another principal cannot take a session id over
    stolen.state = SessionState.READY
    there.save(stolen)
    assert here.load(session.id, BOB) is None and here.load(session.id, ALICE) is not None
    outcomes = race(4, lambda i: (here if i % 2 else there).save(loaded))  # concurrent saves never collide
    assert outcomes == [None] * 4
    here.touch(session.id)
    closed = _session()
    closed.state = SessionState.CLOSED
    here.save(closed)
    assert there.load(closed.id, ALICE) is None
    there.delete(session.id)
    assert here.load(session.id, ALICE) is None


def test_idle_sessions_expire_and_are_purged(database: Any) -> None:
    store = SessionStore(database, idle_s=0.5)  # the checks after save(kept) must not race its idle window
    kept, idle = _session(), _session()
    store.save(idle)
    time.sleep(0.6)
    store.save(kept)
    assert store.load(idle.id, ALICE) is None and store.load(kept.id, ALICE) is not None
    assert store.purge_idle() == 1
    assert database.fetchall("SELECT session_id FROM mcp_sessions") == [(kept.id,)]


# -- the desk: incidents, tickets, dispatches, idempotency keys --------------------------------------------------


def test_incidents(database: Any) -> None:
    store = IncidentStore(database)
    IncidentStore(database)  # seeding twice changes nothing
    assert [i.incident_id for i in store.search("acme", "payments")] == ["INC-1001", "INC-1002"]
    assert store.search("globex", "checkout") == [] and store.get("globex", "INC-1001") is None
    updated = store.escalate("acme", "INC-1002", "P1", "customers hit", "newton@acme")
    assert updated is not None and updated.severity == "P1"
    assert store.escalate("globex", "INC-1002", "P1", "x", "y") is None
    assert database.fetchall("SELECT kind, detail, actor FROM incident_events") == [
        ("escalated", "P3->P1: customers hit", "newton@acme")]


def test_tickets_dispatches_and_keys(database: Any) -> None:
    t = TicketStore(database)
    assert TicketStore.present(database)
    assert t.bind_key("acme", "k1", "INC-1001", None) is True
    assert t.bind_key("acme", "k1", "INC-1001", None) is False
    with pytest.raises(KeyConflict):
        t.bind_key("acme", "k1", "INC-1001", "other note")
    assert t.bind_key("globex", "k1", "INC-2001", None) is True  # keys are per tenant
    opened = t.open_request("acme", "newton", "task-1", "k1", "INC-1001", None)
    assert opened.new and opened.dispatch_id and opened.ticket is None
    attached = t.open_request("acme", "newton", "task-2", "k1", "INC-1001", None)
    assert not attached.new and attached.dispatch_id == opened.dispatch_id
    gone = t.open_request("acme", "newton", "task-3", "k1", "INC-1001", None, still_wanted=lambda: False)
    assert gone.gone and t.request("acme", "task-3") is None
    token = t.claim("acme", opened.dispatch_id, lease_s=30)
    assert token and t.claim("acme", opened.dispatch_id, lease_s=30) is None
    ticket = t.complete("acme", opened.dispatch_id, token, channel="oncall", body="Ticket {ticket} opened")
    assert ticket.notified and ticket.notifications[0].body == f"Ticket {ticket.ticket_id} opened"
    assert t.ticket_for_key("acme", "k1") == ticket == t.ticket_for_dispatch("acme", opened.dispatch_id)
    assert t.settle_wait("acme", opened.dispatch_id, "k1") == (DispatchState.DONE, ticket)
    replay = t.open_request("acme", "newton", "task-4", "k1", "INC-1001", None)
    assert replay.ticket == ticket and not replay.new
    assert t.ticket("globex", ticket.ticket_id) is None and t.tickets("globex") == []

    # a queued job withdrawn after waiting: the fence holds against a late worker
    t.bind_key("acme", "k2", "INC-1002", "n")
    late = t.open_request("acme", "newton", "task-5", "k2", "INC-1002", "n")
    assert t.settle_wait("acme", late.dispatch_id, "k2") == (DispatchState.ABANDONED, None)
    assert t.claim("acme", late.dispatch_id, lease_s=30) is None
    # a new attempt with the key may start a new job once the old one is final
    retry = t.open_request("acme", "newton", "task-6", "k2", "INC-1002", "n")
    assert retry.new and retry.dispatch_id != late.dispatch_id
    failing = t.claim("acme", retry.dispatch_id, lease_s=30)
    assert t.fail("acme", retry.dispatch_id, "wrong-token", "503") is False
    assert t.fail("acme", retry.dispatch_id, failing, "503") is True
    # a claim past its lease is fenced by reconcile's side; the late write rolls back
    t.bind_key("acme", "k3", "INC-1003", None)
    stale = t.open_request("acme", "newton", "task-7", "k3", "INC-1003", None)
    stale_token = t.claim("acme", stale.dispatch_id, lease_s=0.01)
    time.sleep(0.03)
    assert t.fence("acme", stale.dispatch_id) is DispatchState.ABANDONED
    with pytest.raises(ValueError):
        t.complete("acme", stale.dispatch_id, stale_token, channel="oncall", body="late")
    assert t.ticket_for_key("acme", "k3") is None
    assert [d.state for d in t.dispatches("acme", "k2")] == [DispatchState.ABANDONED, DispatchState.FAILED]
    assert t.duplicate_keys("acme") == [] and len(t.tickets("acme")) == 1


def test_settlements_and_reconcile(database: Any) -> None:
    tasks, t = TaskStore(database), TicketStore(database)
    from truecall.incidents.handle import unknown_result

    def unknown_task(key: str) -> str:
        task = tasks.create(owner=ALICE, tool="incident.handle")
        t.bind_key("acme", key, "INC-1001", None)
        opened = t.open_request("acme", ALICE.subject, task.task_id, key, "INC-1001", None)
        tasks.complete(task.task_id, unknown_result("INC-1001", key, opened.dispatch_id, "test").to_dict())
        return task.task_id

    written, nothing = unknown_task("w"), unknown_task("n")
    d = t.dispatches("acme", "w")[0].dispatch_id
    t.complete("acme", d, t.claim("acme", d, lease_s=30), channel="oncall", body="b")
    report = reconcile(tasks, t, settled_by="test")
    assert {s.task_id: s.outcome for s in report.settled} == {written: TICKET_EXISTS, nothing: NOTHING_HAPPENED}
    again = reconcile(tasks, t, settled_by="test")
    assert again.settled == [] and {s.task_id for s in again.already_settled} == {written, nothing}
    assert t.add_settlement(t.settlement("acme", written)) is False  # the first settlement stands


def test_fenced_cancel_from_another_replica(database: Any, twin: Any) -> None:
    tasks, t = TaskStore(database), TicketStore(database)
    task = tasks.create(owner=ALICE, tool="incident.handle", runner_id="r-live", lease_s=30)
    t.bind_key("acme", "fc", "INC-1001", None)
    t.open_request("acme", ALICE.subject, task.task_id, "fc", "INC-1001", None)
    outside = fenced_cancel(TaskStore(twin), TicketStore(twin, migrate=False), task.task_id, message="ops")
    assert outside.requested and outside.withdrawn  # the live runner is asked; the job is withdrawn now
    assert tasks.cancel_requests("r-live") == [task.task_id]
    assert t.dispatches("acme", "fc")[0].state is DispatchState.ABANDONED


def test_two_replicas_racing_on_one_key_make_one_job_and_one_ticket(database: Any, twin: Any) -> None:
    stores = [TicketStore(database), TicketStore(twin)]
    for n in range(6):
        key = f"race-{n}"
        bound = race(2, lambda i: stores[i].bind_key("acme", key, "INC-1001", None if i == 0 or n % 2 else "x"))
        if n % 2:
            assert sorted(bound) == [False, True]
        else:  # other arguments: exactly one binding wins, the other is refused
            assert sum(1 for b in bound if b is True) == 1 and sum(isinstance(b, KeyConflict) for b in bound) == 1
            continue
        opened = race(2, lambda i: stores[i].open_request("acme", "s", f"task-{n}-{i}", key, "INC-1001", None))
        assert opened[0].dispatch_id == opened[1].dispatch_id and sorted(o.new for o in opened) == [False, True]
        tokens = race(2, lambda i: stores[i].claim("acme", opened[0].dispatch_id, 30))
        assert sum(1 for tok in tokens if tok) == 1
        token = next(tok for tok in tokens if tok)
        done = race(2, lambda i: stores[i].complete("acme", opened[0].dispatch_id, token, channel="c", body="b"))
        assert sum(1 for d in done if not isinstance(d, Exception)) == 1
    assert stores[0].duplicate_keys("acme") == [] and len(stores[0].tickets("acme")) == 3


def test_a_claim_races_a_withdrawal_and_exactly_one_wins(database: Any, twin: Any) -> None:
    a, b = TicketStore(database), TicketStore(twin)
    for n in range(10):
        key = f"w-{n}"
        a.bind_key("acme", key, "INC-1001", None)
        dispatch_id = a.open_request("acme", "s", f"t-{n}", key, "INC-1001", None).dispatch_id
        claim, settled = race(2, lambda i: b.claim("acme", dispatch_id, 30) if i == 0 else
                              a.settle_wait("acme", dispatch_id, key))
        state = a.dispatch("acme", dispatch_id).state
        if claim:
            assert state is DispatchState.CLAIMED and settled[0] is DispatchState.CLAIMED
        else:
            assert state is DispatchState.ABANDONED and settled[0] is DispatchState.ABANDONED
