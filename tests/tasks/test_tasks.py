"""Task state machine, owner binding, expiry, ids and durability."""

from __future__ import annotations

import string
import time

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from truecall import (
    Database,
    InvalidTransition,
    NotFound,
    Principal,
    ProtocolError,
    TaskInputInvalid,
    TaskNotFound,
    TaskStatus,
    TaskStore,
)
from truecall.tasks import MISSING_TASK_INPUT_TEXT, TERMINAL, TRANSITIONS, TaskEvent, next_status

from pg_support import backend, database, db_target, db_targets, pg_schemas  # noqa: F401  (fixtures)

S, E = TaskStatus, TaskEvent

#: The documented table (tasks/_state.py docstring), written out independently of the code.
EXPECTED_TABLE = {
    ("input_required", "provide_input"): "working",
    ("working", "request_input"): "input_required",
    ("working", "complete"): "completed",
    ("working", "fail"): "failed",
    ("working", "cancel"): "cancelled",
    ("input_required", "cancel"): "cancelled",
    ("input_required", "fail"): "failed",
}

SERVICE_SCHEMA = {"type": "object", "required": ["service"]}
TYPED_SCHEMA = {
    "type": "object",
    "properties": {"service": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["service"],
}
ALICE = Principal("alice@acme", "acme", frozenset({"incidents:read"}))
ALICE_ELSEWHERE = Principal("alice@acme", "globex", frozenset({"incidents:read"}))
BOB = Principal("bob@acme", "acme", frozenset({"incidents:read"}))


@pytest.fixture
def task_db(database):
    """A fresh database on each backend (SQLite file, PostgreSQL schema): see pg_support."""
    return database


@pytest.fixture
def store(task_db):
    return TaskStore(task_db)


# -- helpers ---------------------------------------------------------------------------------


def task_in(store: TaskStore, status: TaskStatus) -> str:
    """A fresh task id in ``status``, reached through the store's public API."""
    if status is S.INPUT_REQUIRED:
        return store.create(SERVICE_SCHEMA).task_id
    task_id = store.create().task_id
    if status is S.COMPLETED:
        store.complete(task_id, {"content": [], "structuredContent": {"ok": True}})
    elif status is S.FAILED:
        store.fail(task_id, {"kind": "internal", "message": "runner lost"})
    elif status is S.CANCELLED:
        store.cancel(task_id)
    assert store.get(task_id).status is status
    return task_id


def apply(store: TaskStore, task_id: str, event: TaskEvent):
    """Fire ``event`` with valid arguments."""
    if event is E.PROVIDE_INPUT:
        return store.provide_input(task_id, {"service": "payments"})
    if event is E.REQUEST_INPUT:
        return store.request_input(task_id, SERVICE_SCHEMA, "which service?")
    if event is E.COMPLETE:
        return store.complete(task_id, {"content": [{"type": "text", "text": "done"}]})
    if event is E.FAIL:
        return store.fail(task_id, {"kind": "internal", "message": "lost"})
    if event is E.CANCEL:
        return store.cancel(task_id)
    raise AssertionError(event)


# -- the table ------------------------------------------------------------------------------------


def test_table_is_exactly_the_documented_one():
    assert {(s.value, e.value): t.value for (s, e), t in TRANSITIONS.items()} == EXPECTED_TABLE
    assert {s.value for s in TERMINAL} == {"completed", "failed", "cancelled"}
    # nothing leaves a terminal state
    assert not any(s in TERMINAL for s, _ in TRANSITIONS)


def test_invalid_transition_is_a_value_error():
    assert issubclass(InvalidTransition, ValueError)


@pytest.mark.parametrize("status", list(S), ids=lambda s: s.value)
@pytest.mark.parametrize("event", list(E), ids=lambda e: e.value)
def test_next_status_every_pair(status, event):
    expected = EXPECTED_TABLE.get((status.value, event.value))
    if expected is not None:
        assert next_status(status, event) is S(expected)
    else:
        with pytest.raises(InvalidTransition) as info:
            next_status(status, event)
        assert str(info.value).endswith(f": {status.value}")
        assert info.value.status is status and info.value.event is event


@pytest.mark.parametrize("status", list(S), ids=lambda s: s.value)
@pytest.mark.parametrize("event", list(E), ids=lambda e: e.value)
def test_store_every_pair(store, status, event):
    task_id = task_in(store, status)
    expected = EXPECTED_TABLE.get((status.value, event.value))
    if expected is not None:
        after = apply(store, task_id, event)
        assert after.status is S(expected)
        assert after.task_id == task_id
        assert store.get(task_id).status is S(expected)
    else:
        with pytest.raises(InvalidTransition) as info:
            apply(store, task_id, event)
        assert isinstance(info.value, ValueError)
        assert str(info.value).endswith(f": {status.value}")
        assert store.get(task_id).status is status  # nothing moved


# -- the strings and flows of examples/02_user_input.py and 04_injection_b.py -----------------


def test_create_without_schema_is_working(store):
    task = store.create()
    assert task.status is S.WORKING
    assert task.to_dict() == {"taskId": task.task_id, "status": "working"}


def test_create_with_schema_is_input_required(store):
    task = store.create(input_schema={"type": "object", "required": ["service"]})
    assert task.status is S.INPUT_REQUIRED
    assert task.to_dict() == {
        "taskId": task.task_id,
        "status": "input_required",
        "inputSchema": {"type": "object", "required": ["service"]},
    }
    assert store.get(task.task_id).to_dict() == task.to_dict()


def test_provide_input_on_working_task_examples_04_message(store):
    working = store.create()
    with pytest.raises(ValueError) as info:
        store.provide_input(working.task_id, {"service": "payments"})
    assert type(info.value) is InvalidTransition
    assert str(info.value) == "task is not waiting for input: working"
    assert store.get(working.task_id).status is S.WORKING


@pytest.mark.parametrize("bad", [{}, {"service": ""}, {"service": None}, {"other": "x"}, [], "payments", None])
def test_missing_task_input_keeps_waiting(store, bad):
    task = store.create(input_schema=SERVICE_SCHEMA)
    with pytest.raises(TaskInputInvalid) as info:
        store.provide_input(task.task_id, bad)
    assert str(info.value) == "required task input is missing" == MISSING_TASK_INPUT_TEXT
    assert isinstance(info.value, ValueError)
    again = store.get(task.task_id)
    assert again.task_id == task.task_id
    assert again.status is S.INPUT_REQUIRED
    assert again.input is None
    assert again.to_dict() == task.to_dict()


def test_wrongly_typed_task_input_is_refused_without_echoing_it(store):
    task = store.create(input_schema=TYPED_SCHEMA)
    with pytest.raises(TaskInputInvalid) as info:
        store.provide_input(task.task_id, {"service": "payments", "limit": "SeCrEt-not-a-number"})
    assert "limit" in str(info.value)
    assert "SeCrEt" not in str(info.value)
    assert store.get(task.task_id).status is S.INPUT_REQUIRED


def test_examples_02_waiting_invalid_accepted_same_id(store):
    task = store.create(input_schema={"type": "object", "required": ["service"]})
    with pytest.raises(TaskInputInvalid):
        store.provide_input(task.task_id, {})
    accepted = store.provide_input(task.task_id, {"service": "payments"})
    assert accepted.to_dict() == {"taskId": task.task_id, "status": "working", "input": {"service": "payments"}}
    assert store.get(task.task_id).input == {"service": "payments"}


def test_request_input_then_provide_again(store):
    task = store.create()
    waiting = store.request_input(task.task_id, TYPED_SCHEMA, "which service?")
    assert waiting.status is S.INPUT_REQUIRED
    assert waiting.to_dict()["inputSchema"] == TYPED_SCHEMA
    assert waiting.to_dict()["statusMessage"] == "which service?"
    with pytest.raises(TaskInputInvalid):
        store.provide_input(task.task_id, {"limit": 3})
    assert store.provide_input(task.task_id, {"service": "search", "limit": 3}).status is S.WORKING


def test_invalid_input_schema_is_refused_at_create(store):
    with pytest.raises(ValueError):
        store.create(input_schema={"type": "no-such-type"})


@pytest.mark.parametrize("terminal", [S.COMPLETED, S.FAILED, S.CANCELLED], ids=lambda s: s.value)
def test_terminal_tasks_refuse_complete_fail_cancel(store, terminal):
    task_id = task_in(store, terminal)
    before = store.get(task_id)
    cases = [
        (lambda: store.complete(task_id, {"content": []}), f"task cannot complete: {terminal.value}"),
        (lambda: store.fail(task_id, {"kind": "internal", "message": "x"}), f"task cannot fail: {terminal.value}"),
        (lambda: store.cancel(task_id), f"task cannot be cancelled: {terminal.value}"),
    ]
    for call, message in cases:
        with pytest.raises(InvalidTransition) as info:
            call()
        assert str(info.value) == message
    after = store.get(task_id)
    assert after == before  # result, error and message untouched too


def test_completed_task_carries_its_result(store):
    task = store.create()
    result = {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"count": 2}}
    done = store.complete(task.task_id, result, message="finished")
    assert done.to_dict() == {"taskId": task.task_id, "status": "completed", "statusMessage": "finished",
                              "result": result}
    assert done.terminal


def test_failed_task_carries_its_error(store):
    task = store.create()
    failed = store.fail(task.task_id, {"kind": "internal", "message": "runner lost"})
    assert failed.status is S.FAILED
    assert failed.error == {"kind": "internal", "message": "runner lost"}
    assert failed.status_message == "runner lost"


# -- owner binding ----------------------------------------------------------------------------


def _not_found_signature(call) -> tuple:
    with pytest.raises(TaskNotFound) as info:
        call()
    exc = info.value
    return type(exc), str(exc), exc.to_error()


@pytest.mark.parametrize("intruder", [ALICE_ELSEWHERE, BOB], ids=["other-tenant", "other-subject"])
def test_other_owner_reads_like_unknown_id(store, intruder):
    task = store.create(SERVICE_SCHEMA, owner=ALICE)
    assert store.get(task.task_id, ALICE).task_id == task.task_id
    assert store.get(task.task_id).task_id == task.task_id  # operators (no owner) see it

    unknown = _not_found_signature(lambda: store.get("no-such-task-id-at-all", ALICE))
    assert _not_found_signature(lambda: store.get(task.task_id, intruder)) == unknown
    assert unknown[0] is TaskNotFound
    assert isinstance(TaskNotFound(), NotFound) and isinstance(TaskNotFound(), ProtocolError)
    assert isinstance(TaskNotFound(), KeyError)

    # Writes by the intruder read the same and change nothing.
    for call in (
        lambda: store.provide_input(task.task_id, {"service": "payments"}, owner=intruder),
        lambda: store.cancel(task.task_id, owner=intruder),
        lambda: store.fail(task.task_id, {"kind": "internal", "message": "x"}, owner=intruder),
        lambda: store.request_input(task.task_id, SERVICE_SCHEMA, owner=intruder),
        lambda: store.complete(task.task_id, {}, owner=intruder),
    ):
        assert _not_found_signature(call) == unknown
    assert store.get(task.task_id, ALICE).status is S.INPUT_REQUIRED

    assert [t.task_id for t in store.list(ALICE)] == [task.task_id]
    assert store.list(intruder) == []
    # the owner may proceed
    assert store.provide_input(task.task_id, {"service": "payments"}, owner=ALICE).status is S.WORKING


def test_task_without_owner_is_not_anybodys(store):
    task = store.create()
    with pytest.raises(TaskNotFound):
        store.get(task.task_id, ALICE)


@pytest.mark.parametrize("bad_id", ["", "x" * 129, "x" * 100_000, 123, None, ["a"]])
def test_odd_ids_read_as_not_found(store, bad_id):
    with pytest.raises(TaskNotFound) as info:
        store.get(bad_id)  # type: ignore[arg-type]
    assert str(info.value) == "Task not found"


# -- expiry ---------------------------------------------------------------------------------------


def test_ttl_expiry(store):
    # 400 ms: long enough that the checks before the wait never race the expiry on a busy machine
    short = store.create(SERVICE_SCHEMA, ttl_ms=400, owner=ALICE)
    long = store.create(ttl_ms=60_000, owner=ALICE)
    assert store.get(short.task_id).ttl_ms == 400
    assert store.get(short.task_id, ALICE).status is S.INPUT_REQUIRED
    time.sleep(0.45)
    with pytest.raises(TaskNotFound):
        store.get(short.task_id)
    with pytest.raises(TaskNotFound):
        store.get(short.task_id, ALICE)
    with pytest.raises(TaskNotFound):
        store.provide_input(short.task_id, {"service": "payments"})
    with pytest.raises(TaskNotFound):
        store.cancel(short.task_id)
    assert [t.task_id for t in store.list(ALICE)] == [long.task_id]
    assert store.purge_expired() == 1
    assert store.get(long.task_id).status is S.WORKING


def test_the_expiry_sweep_finds_expired_tasks_by_an_index(store, task_db, backend):
    """The sweep deletes ``expires_at <= now`` every few seconds: it read the whole tasks table each time."""
    from truecall.audit._retention import expired_tasks

    store.create(ttl_ms=60_000, owner=ALICE)
    if backend == "sqlite":
        plan = " ".join(str(row[-1]) for row in task_db.fetchall(
            "EXPLAIN QUERY PLAN SELECT h.task_id FROM tasks h WHERE h.expires_at <= ? LIMIT 500", (time.time(),)))
        assert "USING COVERING INDEX tasks_expires" in plan or "USING INDEX tasks_expires" in plan, plan
    else:
        defs = [row[0] for row in task_db.fetchall(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'tasks' AND schemaname = current_schema()")]
        assert any(d.endswith("(expires_at)") for d in defs), defs
    assert expired_tasks(task_db)(time.time(), None) == 0 and len(store.list(ALICE)) == 1


def test_default_ttl_comes_from_the_store(task_db):
    store = TaskStore(task_db, default_ttl_ms=300)
    task = store.create()
    assert task.ttl_ms == 300
    time.sleep(0.35)
    with pytest.raises(TaskNotFound):
        store.get(task.task_id)


# -- ids ------------------------------------------------------------------------------------------

URLSAFE = set(string.ascii_letters + string.digits + "-_")


def test_ids_have_at_least_128_random_bits(store):
    ids = [store.create().task_id for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for task_id in ids:
        assert set(task_id) <= URLSAFE
        assert task_id[0].isalpha()  # never read as a command-line option
        assert len(task_id[1:]) * 6 >= 128  # base64url after the letter: 6 bits a character
    # every position after the fixed letter varies (no counter, no timestamp prefix)
    min_len = min(len(i) for i in ids)
    for pos in range(1, min_len):
        assert len({i[pos] for i in ids}) > 40, f"position {pos} barely varies"


# -- durability -----------------------------------------------------------------------------------


def test_restart_loses_nothing(tmp_path):
    path = tmp_path / "durable.db"
    db = Database(path)
    store = TaskStore(db)
    waiting = store.create(TYPED_SCHEMA, owner=ALICE, tool="incident.search", request={"arguments": {"x": 1}})
    working = store.create(owner=ALICE)
    accepted = store.create(SERVICE_SCHEMA, owner=ALICE)
    store.provide_input(accepted.task_id, {"service": "payments"}, owner=ALICE)
    done = store.create(owner=BOB)
    store.complete(done.task_id, {"content": [{"type": "text", "text": "ok"}]})
    gone = store.create()
    store.cancel(gone.task_id)
    snapshot = {t: store.get(t) for t in (waiting.task_id, working.task_id, accepted.task_id, done.task_id,
                                         gone.task_id)}
    db.close()

    db2 = Database(path)
    store2 = TaskStore(db2)
    try:
        for task_id, before in snapshot.items():
            assert store2.get(task_id) == before
        assert store2.get(waiting.task_id, ALICE).input_schema == TYPED_SCHEMA
        assert store2.get(waiting.task_id).request == {"arguments": {"x": 1}}
        assert store2.get(accepted.task_id).input == {"service": "payments"}
        # the machine goes on where it stopped
        assert store2.provide_input(waiting.task_id, {"service": "search"}, owner=ALICE).status is S.WORKING
        with pytest.raises(InvalidTransition, match=r": completed$"):
            store2.cancel(done.task_id)
        with pytest.raises(TaskNotFound):
            store2.get(done.task_id, ALICE)
    finally:
        db2.close()

    db3 = Database(path)
    try:
        assert TaskStore(db3).get(waiting.task_id).status is S.WORKING
    finally:
        db3.close()


# -- property: random operation sequences follow the table ------------------------------------

OPS = ("provide_valid", "provide_invalid", "request_input", "complete", "fail", "cancel")
OP_EVENT = {
    "provide_valid": E.PROVIDE_INPUT,
    "provide_invalid": E.PROVIDE_INPUT,
    "request_input": E.REQUEST_INPUT,
    "complete": E.COMPLETE,
    "fail": E.FAIL,
    "cancel": E.CANCEL,
}


class TaskMachine(RuleBasedStateMachine):
    """A few tasks, random operations; the expected status comes from TRANSITIONS alone."""

    @initialize()
    def open_store(self):
        self.db = Database(":memory:")
        self.store = TaskStore(self.db)
        self.expected: dict[str, TaskStatus] = {}
        self.ids: list[str] = []

    def teardown(self):
        db = getattr(self, "db", None)
        if db is not None:
            db.close()

    @precondition(lambda self: len(self.ids) < 4)
    @rule(with_schema=st.booleans())
    def create(self, with_schema):
        task = self.store.create(SERVICE_SCHEMA if with_schema else None, owner=ALICE)
        assert task.task_id not in self.expected
        self.expected[task.task_id] = S.INPUT_REQUIRED if with_schema else S.WORKING
        self.ids.append(task.task_id)
        assert task.status is self.expected[task.task_id]

    @precondition(lambda self: self.ids)
    @rule(data=st.data(), op=st.sampled_from(OPS), bad=st.sampled_from([{}, {"service": ""}, {"service": None}]))
    def operate(self, data, op, bad):
        task_id = data.draw(st.sampled_from(self.ids))
        current = self.expected[task_id]
        event = OP_EVENT[op]
        target = TRANSITIONS.get((current, event))
        call = {
            "provide_valid": lambda: self.store.provide_input(task_id, {"service": "payments"}, owner=ALICE),
            "provide_invalid": lambda: self.store.provide_input(task_id, bad, owner=ALICE),
            "request_input": lambda: self.store.request_input(task_id, SERVICE_SCHEMA, owner=ALICE),
            "complete": lambda: self.store.complete(task_id, {"content": []}, owner=ALICE),
            "fail": lambda: self.store.fail(task_id, {"kind": "internal", "message": "x"}, owner=ALICE),
            "cancel": lambda: self.store.cancel(task_id, owner=ALICE),
        }[op]
        if target is None:
            with pytest.raises(InvalidTransition) as info:
                call()
            assert str(info.value).endswith(f": {current.value}"), str(info.value)
            assert info.value.status is current
        elif op == "provide_invalid":
            with pytest.raises(TaskInputInvalid) as info:
                call()
            assert str(info.value) == MISSING_TASK_INPUT_TEXT
        else:
            task = call()
            assert task.task_id == task_id
            self.expected[task_id] = target
            assert task.status is target

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def intruder_sees_nothing(self, data):
        task_id = data.draw(st.sampled_from(self.ids))
        intruder = data.draw(st.sampled_from([BOB, ALICE_ELSEWHERE]))
        with pytest.raises(TaskNotFound):
            self.store.get(task_id, intruder)
        with pytest.raises(TaskNotFound):
            self.store.cancel(task_id, owner=intruder)

    @invariant()
    def store_matches_the_table(self):
        for task_id, status in getattr(self, "expected", {}).items():
            assert self.store.get(task_id, ALICE).status is status


TaskMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_task_machine = TaskMachine.TestCase


# -- fenced leases -------------------------------------------------------------------------------------------


def test_a_takeover_fences_every_later_write_of_the_old_holder(store):
    from truecall import LeaseLost

    held = store.create(owner=ALICE, runner_id="r-a", lease_s=30)
    assert store.take_over(held, "r-b", 30) is None  # a live lease is not taken over
    held = store.create(owner=ALICE, runner_id="r-a", lease_s=0.05)
    time.sleep(0.1)
    taken = store.take_over(held, "r-b", 30)
    assert taken is not None and taken.lease_epoch == held.lease_epoch + 1 and taken.runner_id == "r-b"
    assert store.take_over(held, "r-c", 30, expired_only=False) is None  # read before the takeover: refused
    for late in (lambda: store.check_lease(held.task_id, held.lease_epoch),
                 lambda: store.complete(held.task_id, {"late": True}, epoch=held.lease_epoch),
                 lambda: store.fail(held.task_id, {"code": 1, "message": "late"}, epoch=held.lease_epoch),
                 lambda: store.cancel(held.task_id, epoch=held.lease_epoch),
                 lambda: store.ask(held.task_id, {"q": {"method": "elicitation/create"}}, epoch=held.lease_epoch)):
        with pytest.raises(LeaseLost):
            late()
    assert store.renew_leases("r-a", {held.task_id: held.lease_epoch}, 30) == [held.task_id]
    assert store.get(held.task_id).status is S.WORKING and store.get(held.task_id).result is None
    store.check_lease(held.task_id, taken.lease_epoch)
    assert store.renew_leases("r-b", {held.task_id: taken.lease_epoch}, 30) == []
    assert store.complete(held.task_id, {"by": "r-b"}, epoch=taken.lease_epoch).result == {"by": "r-b"}
    # a lease that ran out but that nobody took over is simply renewed: the epoch decides, not the clock
    slow = store.create(owner=ALICE, runner_id="r-a", lease_s=0.01)
    time.sleep(0.05)
    assert store.renew_leases("r-a", {slow.task_id: slow.lease_epoch}, 30) == []
    assert store.take_over(slow, "r-b", 30) is None


def test_a_tool_with_a_recover_hook_is_fenced_like_the_desk(tmp_path):
    """The task runtime in general: a user's tool accepts, its runner stops renewing (frozen) past the lease,
    another process's sweep takes the task over and settles it through the tool's recover hook.  When the
    frozen runner goes on, its ``ctx.fenced()`` write and its result are refused, its work stops, and the
    audit trail says so; the settlement has its own audit record."""
    import asyncio

    from truecall import ErrorKind, LeaseLost, Server, ToolResult, tool_error

    path = tmp_path / "shared.db"
    a, b = Server("a", db=str(path)).start(), Server("b", db=str(path)).start()
    a.db.execute("CREATE TABLE IF NOT EXISTS bookings (task_id TEXT, runner TEXT)")
    go = asyncio.Event()
    outcomes: list[str] = []

    def register(server: Server) -> None:
        def recover(task) -> ToolResult:
            done = server.db.fetchall("SELECT 1 FROM bookings WHERE task_id = ?", (task.task_id,))
            return ToolResult([], {"booked": True}) if done else tool_error(
                ErrorKind.DEPENDENCY_UNAVAILABLE, "nothing was booked", reference=task.task_id)

        @server.tool("book", description="Books once.", input_schema={"type": "object"}, task_support="optional",
                     recover=recover)
        async def book(ctx):  # type: ignore[no-untyped-def]
            await ctx.accept_as_task("booking")
            await go.wait()
            try:
                with ctx.fenced() as db:
                    db.execute("INSERT INTO bookings VALUES (?, ?)", (ctx.task.task_id, server.name))
            except LeaseLost:
                outcomes.append("fenced")
                raise
            outcomes.append("written")
            return ToolResult([], {"booked": True})

    register(a)
    register(b)
    for server in (a, b):
        server.task_runtime.lease_s = 0.3
        server.task_runtime.poll_s = 0.05
    frozen = a.task_runtime._housekeeping
    a.task_runtime._housekeeping = lambda held, beat: ([], [], [])  # A renews nothing: as if stopped

    async def main() -> None:
        accepted = await a.acall_tool(ALICE, "book", {}, task_mode="inproc")
        await asyncio.sleep(0.45)  # A's lease ran out
        settled = b.task_runtime.recover()
        assert [t.task_id for t in settled] == [accepted.task_id]
        a.task_runtime._housekeeping = frozen  # A wakes up
        go.set()
        await a.task_runtime.wait(accepted.task_id, timeout=5)

    asyncio.run(main())
    assert outcomes == ["fenced"]
    assert a.db.fetchall("SELECT * FROM bookings") == []  # nothing written after the takeover
    (task,) = a.tasks.list()
    assert task.status is S.COMPLETED and task.result["structuredContent"]["error"]["kind"] == "dependency_unavailable"
    kinds = [r[0] for r in a.db.fetchall("SELECT kind FROM audit_events ORDER BY rowid")]
    assert "task.recovered" in kinds and "task.lease_lost" in kinds and "task.completed" not in kinds


def test_lease_check_fences_writes_made_outside_ctx_fenced(tmp_path):
    """``ctx.lease_check()`` is what a tool hands to writes made in another transaction (the desk's ticket
    store, a job's worker): ``None`` before the call is a task; after acceptance it passes while this
    runner holds the lease and raises :class:`LeaseLost` once another process took the task over."""
    import asyncio

    from truecall import LeaseLost, Server, ToolResult

    path = tmp_path / "shared.db"
    a, b = Server("a", db=str(path)).start(), Server("b", db=str(path)).start()
    go = asyncio.Event()
    seen: list[str] = []

    for server in (a, b):
        @server.tool("book", description="Books once.", input_schema={"type": "object"}, task_support="optional")
        async def book(ctx):  # type: ignore[no-untyped-def]
            seen.append(f"before: {ctx.lease_check()}")
            await ctx.accept_as_task("booking")
            check = ctx.lease_check()
            check()
            seen.append("held")
            await go.wait()
            try:
                check()
            except LeaseLost:
                seen.append("fenced")
                raise
            return ToolResult([], {"booked": True})

        server.task_runtime.lease_s = 0.3
        server.task_runtime.poll_s = 0.05
    a.task_runtime._housekeeping = lambda held, beat: ([], [], [])  # A renews nothing: as if stopped

    async def main() -> None:
        accepted = await a.acall_tool(ALICE, "book", {}, task_mode="inproc")
        await asyncio.sleep(0.45)  # A's lease ran out
        assert [t.task_id for t in b.task_runtime.recover()] == [accepted.task_id]
        go.set()
        await a.task_runtime.wait(accepted.task_id, timeout=5)

    asyncio.run(main())
    assert seen == ["before: None", "held", "fenced"]
