"""incident.handle: accepted is a task, done is a ticket, and every failure says exactly what is known."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from truecall import InvalidTransition, Principal, Task, TaskStore, describe
from truecall.errors import NotFound, TaskRequired
from truecall.incidents import DEMO_TOKENS, build_desk
from truecall.incidents.dispatch_state import (NOTHING_WRITTEN, TERMINAL, TRANSITIONS, DispatchEvent, DispatchState,
                                               InvalidDispatchTransition, next_dispatch_state)
from truecall.incidents.faults import FaultPlan
from truecall.incidents.reconcile import CancelRefused, describe_with_settlement, fenced_cancel, reconcile
from truecall.incidents.tickets import NOTHING_HAPPENED, TICKET_EXISTS

from pg_support import BACKENDS, pg_schemas  # noqa: F401  (fixtures)

OPERATOR = DEMO_TOKENS["demo-acme-operator"]
READER = DEMO_TOKENS["demo-acme-reader"]
GLOBEX = DEMO_TOKENS["demo-globex-reader"]
GLOBEX_OPERATOR = Principal("ops@globex", "globex", frozenset({"incidents:read", "incidents:write"}))
OTHER_ACME_OPERATOR = Principal("ada@acme", "acme", frozenset({"incidents:read", "incidents:write"}))

_dbs = itertools.count()

# -- both storage backends: every test with a tmp_path runs on SQLite and on PostgreSQL --------------------------

_backend: dict[str, Any] = {}  # the current test's backend, schema factory and desks (set by desk_backend)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "tmp_path" in metafunc.fixturenames:
        metafunc.parametrize("desk_backend", BACKENDS, indirect=True)


@pytest.fixture(autouse=True)
def desk_backend(request: pytest.FixtureRequest, pg_schemas: Any) -> Any:
    _backend.clear()
    _backend.update(name=getattr(request, "param", "sqlite"), schemas=pg_schemas, desks=[])
    yield _backend["name"]
    for server in _backend.pop("desks"):
        server.db.close()
    _backend.clear()


def new_target(tmp_path: Path, name: str) -> str:
    """A fresh database for this test's backend: a SQLite file, or a PostgreSQL schema."""
    if _backend.get("name") == "postgresql":
        return _backend["schemas"]().url
    return str(tmp_path / f"{name}.db")


def make_desk(tmp_path: Path, faults: Any = None, *, timeout: float = 0.5, lease: float = 30.0, **kw: Any):
    server = build_desk(new_target(tmp_path, f"desk-{next(_dbs)}"), faults=faults or {}, ack_timeout_s=timeout,
                        claim_lease_s=lease, **kw).start()
    _backend.setdefault("desks", []).append(server)
    return server


async def handle(server, args: dict[str, Any], principal: Principal = OPERATOR) -> tuple[Task, Task]:
    accepted = await server.acall_tool(principal, "incident.handle", args, task_mode="ext")
    assert isinstance(accepted, Task), accepted
    return accepted, await server.task_runtime.wait(accepted.task_id)


async def until_dispatched(server: Any, key: str, state: DispatchState, timeout: float = 10.0) -> None:
    """Until the key's job is in ``state`` (the handler records it off the event loop)."""
    deadline = time.monotonic() + timeout
    while [d.state for d in server.state.tickets.dispatches("acme", key)][-1:] != [state]:
        assert time.monotonic() < deadline, f"{key} never reached {state.value}"
        await asyncio.sleep(0.005)


def sc(task: Task) -> dict[str, Any]:
    return task.result["structuredContent"]


def err(task: Task) -> dict[str, Any]:
    assert task.result["isError"] is True
    return task.result["structuredContent"]["error"]


# -- the dispatch state table ------------------------------------------------------------------


def test_dispatch_table_is_exactly_the_documented_one() -> None:
    S, E = DispatchState, DispatchEvent
    assert TRANSITIONS == {
        (S.QUEUED, E.CLAIM): S.CLAIMED,
        (S.CLAIMED, E.COMPLETE): S.DONE,
        (S.QUEUED, E.ABANDON): S.ABANDONED,
        (S.CLAIMED, E.FAIL): S.FAILED,
        (S.CLAIMED, E.EXPIRE): S.ABANDONED,
    }
    assert TERMINAL == {S.DONE, S.ABANDONED, S.FAILED}
    assert NOTHING_WRITTEN == {S.ABANDONED, S.FAILED}


@pytest.mark.parametrize("state", list(DispatchState))
@pytest.mark.parametrize("event", list(DispatchEvent))
def test_every_illegal_dispatch_move_names_the_current_state(state: DispatchState, event: DispatchEvent) -> None:
    if (state, event) in TRANSITIONS:
        assert next_dispatch_state(state, event) is TRANSITIONS[(state, event)]
        return
    with pytest.raises(InvalidDispatchTransition) as info:
        next_dispatch_state(state, event)
    assert str(info.value).endswith(f": {state.value}")
    assert isinstance(info.value, ValueError)


def test_terminal_dispatches_can_never_write(tmp_path: Path) -> None:
    server = make_desk(tmp_path)
    t = server.state.tickets
    opened = t.open_request("acme", "s", "task-1", "k", "INC-1001", None)
    token = t.claim("acme", opened.dispatch_id, lease_s=30)
    assert token and t.claim("acme", opened.dispatch_id, lease_s=30) is None  # exactly one claim
    assert t.fail("acme", opened.dispatch_id, token, "boom")
    with pytest.raises(InvalidDispatchTransition, match="cannot complete: failed"):
        t.complete("acme", opened.dispatch_id, token, channel="oncall", body="x")
    assert t.ticket_for_key("acme", "k") is None
    # a second attempt with the key gets a new dispatch; the abandoned one can never be claimed
    opened2 = t.open_request("acme", "s", "task-2", "k", "INC-1001", None)
    assert opened2.new and opened2.dispatch_id != opened.dispatch_id
    state, ticket = t.settle_wait("acme", opened2.dispatch_id, "k")
    assert state is DispatchState.ABANDONED and ticket is None
    assert t.claim("acme", opened2.dispatch_id, lease_s=30) is None


def test_a_claim_past_its_lease_is_fenced_and_the_late_write_rolls_back(tmp_path: Path) -> None:
    server = make_desk(tmp_path)
    t = server.state.tickets
    opened = t.open_request("acme", "s", "task-1", "k", "INC-1001", None)
    token = t.claim("acme", opened.dispatch_id, lease_s=0.01)
    assert t.fence("acme", opened.dispatch_id, now=time.time() - 60) is DispatchState.CLAIMED  # lease holds
    time.sleep(0.02)
    assert t.fence("acme", opened.dispatch_id) is DispatchState.ABANDONED
    with pytest.raises(InvalidDispatchTransition, match="abandoned"):
        t.complete("acme", opened.dispatch_id, token, channel="oncall", body="late")
    assert t.ticket_for_key("acme", "k") is None
    assert t.tickets("acme") == []


# -- the happy path -------------------------------------------------------------------------------


def test_accepted_is_a_task_and_done_is_a_ticket_with_its_notification(tmp_path: Path) -> None:
    server = make_desk(tmp_path)

    async def main() -> None:
        accepted, done = await handle(server, {"incidentId": "INC-1001", "idempotencyKey": "newton-1",
                                               "note": "EU issuers"})
        assert accepted.status.value == "working" and accepted.result is None
        said = describe(accepted.to_dict())
        assert "accepted, not yet done" in said and "TKT" not in said
        assert "已受理，尚未完成" in describe(accepted.to_dict(), "zh")
        assert done.status.value == "completed" and not done.result.get("isError")
        facts = sc(done)
        assert facts["incidentId"] == "INC-1001" and facts["notified"] is True
        assert facts["idempotencyKey"] == "newton-1" and facts["replayed"] is False
        ticket = server.state.tickets.ticket("acme", facts["ticketId"])
        assert ticket is not None and ticket.notified and "EU issuers" in ticket.notifications[0].body
        link = [b for b in done.result["content"] if b["type"] == "resource_link"]
        assert link and link[0]["uri"] == f"ticket://acme/{facts['ticketId']}"
        contents = await server.read_resource(OPERATOR, link[0]["uri"])
        body = orjson.loads(contents[0]["text"])
        assert body["ticketId"] == facts["ticketId"] and body["notifications"][0]["channel"] == "oncall"
        assert (await server.read_resource(READER, link[0]["uri"]))[0]["text"] == contents[0]["text"]
        # another tenant's ticket reads exactly like a missing one
        with pytest.raises(NotFound) as missing:
            await server.read_resource(GLOBEX, "ticket://acme/TKT-DOESNOTEXIST")
        with pytest.raises(NotFound) as foreign:
            await server.read_resource(GLOBEX, link[0]["uri"])
        with pytest.raises(NotFound):
            await server.read_resource(GLOBEX, f"ticket://globex/{facts['ticketId']}")
        assert missing.value.message == foreign.value.message

    asyncio.run(main())


def test_describe_of_each_ending(tmp_path: Path) -> None:
    """describe(task view): working / completed-with-ticket / dependency_unavailable / outcome_unknown."""
    server = make_desk(tmp_path, {"sequence": ["none", "drop", "stall"], "stall": {"ms": 200}}, timeout=0.03)

    async def main() -> None:
        accepted, done = await handle(server, {"incidentId": "INC-1001", "idempotencyKey": "a"})
        working = describe(accepted.to_dict())
        assert working == f"task {accepted.task_id}: accepted, not yet done"
        assert describe(accepted.to_dict(), "zh") == f"任务 {accepted.task_id}：已受理，尚未完成"
        completed = describe(done.to_dict())
        ticket_id = sc(done)["ticketId"]
        assert ticket_id in completed and f"ticket://acme/{ticket_id}" in completed
        assert not completed.startswith("Not successful")
        assert not describe(done.to_dict(), "zh").startswith("未成功")

        _, dropped = await handle(server, {"incidentId": "INC-1002", "idempotencyKey": "b"})
        said = describe(dropped.to_dict())
        assert said.startswith("Not successful") and "nothing was changed" in said and "retried later" in said
        assert "Nothing was written" in said
        said_zh = describe(dropped.to_dict(), "zh")
        assert said_zh.startswith("未成功") and "未产生任何变更" in said_zh and "可稍后重试" in said_zh

        _, stalled = await handle(server, {"incidentId": "INC-1003", "idempotencyKey": "c"})
        said = describe(stalled.to_dict())
        assert said.startswith("Not successful") and "outcome unknown" in said and "do not retry blindly" in said
        assert "check first c" in said  # the reference: the idempotency key
        assert "incident.reconcile" in said and "SAME idempotencyKey" in said  # what to check
        zh = describe(stalled.to_dict(), "zh")
        assert zh.startswith("未成功") and "结果未知" in zh and "不要盲目重试" in zh and "请先核对 c" in zh
        await server.state.upstream.drain()

    asyncio.run(main())


# -- refusals before acceptance -----------------------------------------------------------------------


def test_unknown_and_foreign_incidents_are_refused_without_a_task(tmp_path: Path) -> None:
    server = make_desk(tmp_path)

    async def main() -> None:
        missing = await server.acall_tool(OPERATOR, "incident.handle", {"incidentId": "INC-9999"}, task_mode="ext")
        foreign = await server.acall_tool(OPERATOR, "incident.handle", {"incidentId": "INC-2001"}, task_mode="ext")
        for result, iid in ((missing, "INC-9999"), (foreign, "INC-2001")):
            assert not isinstance(result, Task)
            error = result.error
            assert error["kind"] == "invalid_input" and error["field"] == "incidentId"
            assert error["message"] == "no such incident for this tenant" and iid not in error["message"]
        assert server.tasks.list() == []
        assert server.state.tickets.dispatches("acme") == [] and server.state.tickets.dispatches("globex") == []

    asyncio.run(main())


def test_it_runs_only_as_a_task_and_needs_the_write_scope(tmp_path: Path) -> None:
    server = make_desk(tmp_path)
    definition = server.registry.tools["incident.handle"].definition
    assert definition["execution"] == {"taskSupport": "required"}
    assert definition["annotations"] == {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
                                         "openWorldHint": True}
    assert definition["outputSchema"]["properties"]["notified"] == {"type": "boolean", "const": True}
    assert "accepted, NOT done" in definition["description"]

    async def main() -> None:
        with pytest.raises(TaskRequired):
            await server.acall_tool(OPERATOR, "incident.handle", {"incidentId": "INC-1001"})
        with pytest.raises(PermissionError):
            await server.acall_tool(READER, "incident.handle", {"incidentId": "INC-1001"}, task_mode="ext")
        bad = await server.acall_tool(OPERATOR, "incident.handle", {"incidentId": "INC-1001",
                                                                    "idempotencyKey": "no spaces"}, task_mode="ext")
        assert not isinstance(bad, Task) and bad.error["kind"] == "invalid_input"

    asyncio.run(main())
    assert [t.name for t in server.visible_tools(READER)] == ["incident.search"]


# -- idempotency ---------------------------------------------------------------------------------------


def test_same_key_same_arguments_is_the_same_ticket_other_arguments_are_refused(tmp_path: Path) -> None:
    server = make_desk(tmp_path)

    async def main() -> None:
        args = {"incidentId": "INC-1001", "idempotencyKey": "same", "note": "n"}
        _, first = await handle(server, args)
        _, second = await handle(server, args)
        assert sc(second)["ticketId"] == sc(first)["ticketId"]
        assert sc(first)["replayed"] is False and sc(second)["replayed"] is True
        assert "already existed" in second.result["content"][0]["text"]
        for other in ({"incidentId": "INC-1002", "idempotencyKey": "same", "note": "n"},
                      {"incidentId": "INC-1001", "idempotencyKey": "same"},
                      {"incidentId": "INC-1001", "idempotencyKey": "same", "note": "other"}):
            refused = await server.acall_tool(OPERATOR, "incident.handle", other, task_mode="ext")
            assert not isinstance(refused, Task)
            assert refused.error["kind"] == "invalid_input" and refused.error["field"] == "idempotencyKey"
        # keys are per tenant: globex may use the same string for its own incident
        _, theirs = await handle(server, {"incidentId": "INC-2001", "idempotencyKey": "same", "note": "n"},
                                 GLOBEX_OPERATOR)
        assert sc(theirs)["ticketId"] != sc(first)["ticketId"]
        assert len(server.state.tickets.tickets("acme")) == 1 and len(server.state.tickets.tickets("globex")) == 1

    asyncio.run(main())


def test_a_missing_key_is_generated_and_returned_for_safe_retries(tmp_path: Path) -> None:
    server = make_desk(tmp_path, {"sequence": ["drop", "none", "none"]}, timeout=0.02)

    async def main() -> None:
        _, lost = await handle(server, {"incidentId": "INC-1001"})
        key = err(lost)["idempotencyKey"]
        assert key.startswith("ik-") and len(key) > 20
        _, done = await handle(server, {"incidentId": "INC-1001", "idempotencyKey": key})
        assert sc(done)["idempotencyKey"] == key
        _, again = await handle(server, {"incidentId": "INC-1001"})  # no key: a new request, a new key
        assert sc(again)["idempotencyKey"] != key and sc(again)["ticketId"] != sc(done)["ticketId"]

    asyncio.run(main())


def test_concurrent_calls_with_one_key_share_one_job_and_one_ticket(tmp_path: Path) -> None:
    server = make_desk(tmp_path, {"sequence": ["stall"], "stall": {"ms": 30}}, timeout=0.5)

    async def main() -> None:
        args = {"incidentId": "INC-1001", "idempotencyKey": "burst"}
        results = await asyncio.gather(*(handle(server, args) for _ in range(10)))
        ids = {sc(done)["ticketId"] for _, done in results}
        assert len(ids) == 1
        assert len(server.state.tickets.dispatches("acme", "burst")) == 1
        assert server.state.upstream.faults.drawn == {"stall": 1}  # one job went upstream, not ten

    asyncio.run(main())


# -- faults, one by one ----------------------------------------------------------------------------------


def test_dropped_job_is_dependency_unavailable_and_nothing_is_ever_written(tmp_path: Path) -> None:
    server = make_desk(tmp_path, {"sequence": ["drop"]}, timeout=0.02)

    async def main() -> None:
        _, done = await handle(server, {"incidentId": "INC-1001", "idempotencyKey": "d"})
        e = err(done)
        assert e["kind"] == "dependency_unavailable" and e["retryable"] is True
        assert "Nothing was written" in e["message"] and "withdrawn" in e["message"]
        dispatch = server.state.tickets.dispatch("acme", e["dispatchId"])
        assert dispatch.state is DispatchState.ABANDONED
        assert server.state.tickets.tickets("acme") == []

    asyncio.run(main())


def test_delayed_job_is_withdrawn_and_the_late_worker_is_fenced(tmp_path: Path) -> None:
    server = make_desk(tmp_path, {"sequence": ["delay"], "delay": {"ms": 60}}, timeout=0.02)

    async def main() -> None:
        _, done = await handle(server, {"incidentId": "INC-1001", "idempotencyKey": "late"})
        assert err(done)["kind"] == "dependency_unavailable"
        assert await server.state.upstream.drain()
        assert server.state.upstream.stats == {"fenced_before_claim": 1}
        assert server.state.tickets.tickets("acme") == []

    asyncio.run(main())


def test_upstream_error_fails_the_dispatch_before_any_write(tmp_path: Path) -> None:
    server = make_desk(tmp_path, {"sequence": ["error"]})

    async def main() -> None:
        _, done = await handle(server, {"incidentId": "INC-1001", "idempotencyKey": "e"})
        e = err(done)
        assert e["kind"] == "dependency_unavailable" and "reported an error" in e["message"]
        assert server.state.tickets.dispatch("acme", e["dispatchId"]).state is DispatchState.FAILED
        assert server.state.tickets.tickets("acme") == []

    asyncio.run(main())


def test_lost_ack_after_the_write_still_reports_the_verified_ticket(tmp_path: Path) -> None:
    server = make_desk(tmp_path, {"sequence": ["lose_ack"]}, timeout=0.03)

    async def main() -> None:
        _, done = await handle(server, {"incidentId": "INC-1001", "idempotencyKey": "quiet"})
        assert sc(done)["notified"] is True
        assert server.state.tickets.ticket("acme", sc(done)["ticketId"]) is not None
        assert server.state.upstream.stats == {"written": 1, "ack_lost": 1}

    asyncio.run(main())


def test_stalled_worker_is_outcome_unknown_then_reconcile_finds_the_ticket(tmp_path: Path) -> None:
    server = make_desk(tmp_path, {"sequence": ["stall", "none"], "stall": {"ms": 80}}, timeout=0.02)

    async def main() -> None:
        _, done = await handle(server, {"incidentId": "INC-1001", "idempotencyKey": "slow"})
        e = err(done)
        assert e["kind"] == "outcome_unknown" and e["reference"] == "slow" and e["retryable"] is False
        assert e["dispatchId"].startswith("dsp_") and "reconcile" in e["check"]
        pending = reconcile(server.tasks, server.state.tickets)  # the worker still holds the claim
        assert pending.settled == [] and pending.pending and "holds the claim" in pending.pending[0]["reason"]
        assert await server.state.upstream.drain()
        report = reconcile(server.tasks, server.state.tickets, settled_by="test")
        [settlement] = report.settled
        ticket = server.state.tickets.ticket_for_key("acme", "slow")
        assert settlement.outcome == TICKET_EXISTS and settlement.ticket_id == ticket.ticket_id
        assert server.tasks.get(done.task_id).result == done.result  # never rewritten
        said = describe_with_settlement(done.to_dict(), settlement)
        assert said.startswith("Not successful") and f"ticket {ticket.ticket_id} exists" in said
        said = describe_with_settlement(done.to_dict(), settlement, "zh")
        assert said.startswith("未成功") and f"工单 {ticket.ticket_id} 已存在" in said
        again = reconcile(server.tasks, server.state.tickets)
        assert again.settled == [] and again.already_settled == [settlement]
        # retrying with the same key is safe: the same ticket, no second one
        _, retry = await handle(server, {"incidentId": "INC-1001", "idempotencyKey": "slow"})
        assert sc(retry)["ticketId"] == ticket.ticket_id and sc(retry)["replayed"] is True
        assert len(server.state.tickets.tickets("acme")) == 1

    asyncio.run(main())


def test_crashed_worker_is_outcome_unknown_then_reconcile_fences_nothing_happened(tmp_path: Path) -> None:
    server = make_desk(tmp_path, {"sequence": ["crash", "none"]}, timeout=0.02, lease=0.05)

    async def main() -> None:
        _, done = await handle(server, {"incidentId": "INC-1001", "idempotencyKey": "gone"})
        e = err(done)
        assert e["kind"] == "outcome_unknown"
        await asyncio.sleep(0.08)
        [settlement] = reconcile(server.tasks, server.state.tickets).settled
        assert settlement.outcome == NOTHING_HAPPENED and settlement.ticket_id is None
        assert server.state.tickets.dispatch("acme", e["dispatchId"]).state is DispatchState.ABANDONED
        said = describe_with_settlement(done.to_dict(), settlement)
        assert "outcome unknown" in said and "nothing happened" in said
        said = describe_with_settlement(done.to_dict(), settlement, "zh")
        assert "结果未知" in said and "未产生任何变更" in said
        _, retry = await handle(server, {"incidentId": "INC-1001", "idempotencyKey": "gone"})
        assert sc(retry)["replayed"] is False
        assert [t.dispatch_id for t in server.state.tickets.tickets("acme")] != [e["dispatchId"]]

    asyncio.run(main())


# -- cancellation ---------------------------------------------------------------------------------------------


def test_cancel_while_queued_withdraws_the_job(tmp_path: Path) -> None:
    server = make_desk(tmp_path, {"sequence": ["delay"], "delay": {"ms": 300}}, timeout=5)

    async def main() -> None:
        accepted = await server.acall_tool(OPERATOR, "incident.handle", {"incidentId": "INC-1001",
                                                                         "idempotencyKey": "stop"}, task_mode="ext")
        await until_dispatched(server, "stop", DispatchState.QUEUED)
        task = await server.task_runtime.cancel(accepted)
        assert task.status.value == "cancelled"
        assert describe(task.to_dict()).endswith("cancelled, not done")
        assert describe(task.to_dict(), "zh").endswith("已取消，未完成")
        [dispatch] = server.state.tickets.dispatches("acme", "stop")
        assert dispatch.state is DispatchState.ABANDONED
        assert await server.state.upstream.drain()
        assert server.state.tickets.tickets("acme") == []

    asyncio.run(main())


def test_cancel_after_a_worker_claimed_the_job_cannot_stop_it_and_says_so(tmp_path: Path) -> None:
    server = make_desk(tmp_path, {"sequence": ["stall"], "stall": {"ms": 100}}, timeout=5)

    async def main() -> None:
        accepted = await server.acall_tool(OPERATOR, "incident.handle", {"incidentId": "INC-1001",
                                                                         "idempotencyKey": "too-late"}, task_mode="ext")
        await until_dispatched(server, "too-late", DispatchState.CLAIMED)
        task = await server.task_runtime.cancel(accepted)
        assert task.status.value == "completed"  # not "cancelled": that would claim it was stopped
        e = err(task)
        assert e["kind"] == "outcome_unknown" and "cancelling cannot stop it" in e["message"]
        assert await server.state.upstream.drain()
        assert server.state.tickets.ticket_for_key("acme", "too-late") is not None

    asyncio.run(main())


def test_operator_cancel_from_outside_is_fenced(tmp_path: Path) -> None:
    server = make_desk(tmp_path, {"keys": {"h1": "hang", "h2": "delay"}, "hang": {"at": "after_claim"},
                                  "delay": {"ms": 10_000}}, timeout=5)

    async def main() -> None:
        claimed = await server.acall_tool(OPERATOR, "incident.handle", {"incidentId": "INC-1001",
                                                                        "idempotencyKey": "h1"}, task_mode="ext")
        queued = await server.acall_tool(OPERATOR, "incident.handle", {"incidentId": "INC-1002",
                                                                       "idempotencyKey": "h2"}, task_mode="ext")
        await until_dispatched(server, "h1", DispatchState.CLAIMED)
        await until_dispatched(server, "h2", DispatchState.QUEUED)
        outside = TaskStore(server.db)  # e.g. `truecall tasks cancel` in another process
        with pytest.raises(CancelRefused, match="its dispatch is claimed"):
            fenced_cancel(outside, server.state.tickets, claimed.task_id, message="operator")
        assert outside.get(claimed.task_id).status.value == "working"
        asked = fenced_cancel(outside, server.state.tickets, queued.task_id, message="operator")
        # this process's runner holds the task: the job is withdrawn at once, the runner is asked to stop
        assert asked.requested and asked.withdrawn and asked.task.status.value == "working"
        assert server.state.tickets.dispatches("acme", "h2")[0].state is DispatchState.ABANDONED
        deadline = time.monotonic() + 5
        while outside.get(queued.task_id).status.value == "working":  # the runner polls for cancel requests
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        assert outside.get(queued.task_id).status.value == "cancelled"
        with pytest.raises(InvalidTransition, match="task cannot be cancelled: cancelled"):
            fenced_cancel(outside, server.state.tickets, queued.task_id, message="again")
        server.task_runtime.running[claimed.task_id].cancel()  # the hung worker's task: stopping it cannot
        deadline = time.monotonic() + 5                           # undo the claim, and says so (settled by
        while outside.get(claimed.task_id).status.value == "working":  # the runner as it unwinds; on a loaded
            assert time.monotonic() < deadline                    # machine, PostgreSQL takes more than 50 ms)
            await asyncio.sleep(0.02)
        assert err(outside.get(claimed.task_id))["kind"] == "outcome_unknown"
        assert server.state.tickets.tickets("acme") == []

    asyncio.run(main())


# -- recovery after a process death -------------------------------------------------------------------------


def _leave_an_orphan(desk: Any, where: str) -> Task:
    """A task of a runner that died ``where`` (in the ticket table as a real death leaves it)."""
    t = desk.state.tickets
    task = desk.tasks.create(owner=OPERATOR, tool="incident.handle", request={"tool": "incident.handle", "era": "ext"},
                             runner_id="dead-runner")
    if where == "never":  # died before the job was handed over
        return task
    t.bind_key("acme", where, "INC-1001", None)
    t.open_request("acme", OPERATOR.subject, task.task_id, where, "INC-1001", None)
    d = t.dispatches("acme", where)[0].dispatch_id
    if where == "claimed":  # died while a worker held it
        t.claim("acme", d, lease_s=30)
    elif where == "written":  # died after the write, before the ack
        t.complete("acme", d, t.claim("acme", d, lease_s=30), channel="oncall", body="b")
    elif where == "failed":
        t.fail("acme", d, t.claim("acme", d, lease_s=30), "503")
    return task  # "queued": died with the job in the (memory) queue


#: Where the runner died → the settlement recovery makes and the outcome of its audit record.
ORPHANS = {
    "never": ("dependency_unavailable", "dependency_unavailable"),
    "queued": ("dependency_unavailable", "dependency_unavailable"),
    "claimed": ("outcome_unknown", "outcome_unknown"),
    "written": ("success", "ok"),
    "failed": ("dependency_unavailable", "dependency_unavailable"),
}


@pytest.mark.parametrize("where", list(ORPHANS))
def test_recover_hook_settles_an_orphan_from_the_ticket_table(tmp_path: Path, where: str) -> None:
    db = new_target(tmp_path, "desk")
    first = build_desk(str(db), faults={}).start()
    orphan = _leave_an_orphan(first, where)
    first.db.close()

    second = build_desk(str(db), faults={}).start()  # the restart
    _backend["desks"].append(second)
    settled = {task.task_id: task for task in second.task_runtime.recover(sole_runner=True)}
    assert set(settled) == {orphan.task_id}
    task = settled[orphan.task_id]
    kind, audit_outcome = ORPHANS[where]
    if kind == "success":
        ticket = second.state.tickets.ticket_for_key("acme", where)
        assert sc(task)["ticketId"] == ticket.ticket_id and describe(task.to_dict()).count("TKT-") >= 1
        assert [t.ticket_id for t in second.state.tickets.tickets("acme")] == [ticket.ticket_id]
    else:
        assert err(task)["kind"] == kind
        assert second.state.tickets.tickets("acme") == []
    if where == "never":
        assert "before the job was handed" in err(task)["message"]
    if where == "queued":
        assert second.state.tickets.dispatches("acme", "queued")[0].state is DispatchState.ABANDONED
    if where == "claimed":
        assert err(task)["reference"] == "claimed"
    # every settlement made by recovery has an audit record of its own (issue 13, item 10)
    audited = [(r[1], orjson.loads(bytes(r[0]))) for r in second.db.fetchall(
        "SELECT fields, outcome FROM audit_events WHERE kind = 'task.recovered'")]
    assert [(outcome, fields["taskId"], fields["reason"]) for outcome, fields in audited] == [
        (audit_outcome, orphan.task_id, "restart")]


# -- the reconcile tool -----------------------------------------------------------------------------------------


def test_reconcile_tool_settles_only_the_callers_tasks(tmp_path: Path) -> None:
    server = make_desk(tmp_path, {"sequence": ["crash", "crash"]}, timeout=0.02, lease=0.03)

    async def main() -> None:
        _, mine = await handle(server, {"incidentId": "INC-1001", "idempotencyKey": "m"})
        _, theirs = await handle(server, {"incidentId": "INC-1002", "idempotencyKey": "t"}, OTHER_ACME_OPERATOR)
        await asyncio.sleep(0.05)
        foreign = await server.acall_tool(OPERATOR, "incident.reconcile", {"taskId": theirs.task_id})
        unknown = await server.acall_tool(OPERATOR, "incident.reconcile", {"taskId": "no-such-task"})
        assert foreign.error == unknown.error | {"message": foreign.error["message"]}
        assert foreign.error["kind"] == "invalid_input"
        result = await server.acall_tool(OPERATOR, "incident.reconcile", {})
        assert not result.is_error
        facts = result.structured_content
        assert [s["taskId"] for s in facts["settled"]] == [mine.task_id]
        assert facts["settled"][0]["outcome"] == "nothing_happened"
        assert facts["settled"][0]["settledBy"] == "incident.reconcile:newton@acme"
        assert "1 settled now" in result.content[0]["text"]
        again = await server.acall_tool(OPERATOR, "incident.reconcile", {})
        assert again.structured_content["settled"] == []
        assert again.structured_content["alreadySettled"] == facts["settled"]  # asking again tells the same answer
        assert "nothing happened" in again.content[0]["text"]
        assert server.state.tickets.settlement("acme", theirs.task_id) is None

    asyncio.run(main())
    definition = server.registry.tools["incident.reconcile"].definition
    assert definition["annotations"]["readOnlyHint"] is False and definition["annotations"]["idempotentHint"] is True


# -- configuration -------------------------------------------------------------------------------------------------


def test_faults_come_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRUECALL_DESK_FAULTS", '{"sequence": ["drop"]}')
    monkeypatch.setenv("TRUECALL_DESK_TIMEOUT_MS", "20")
    server = build_desk(new_target(tmp_path, "env")).start()

    async def main() -> None:
        _, done = await handle(server, {"incidentId": "INC-1001"})
        assert err(done)["kind"] == "dependency_unavailable"
        assert "within 20 ms" in err(done)["message"]

    asyncio.run(main())
    monkeypatch.setenv("TRUECALL_DESK_FAULTS", "{not json")
    with pytest.raises(ValueError, match="TRUECALL_DESK_FAULTS"):
        build_desk(str(tmp_path / "bad.db"))
    monkeypatch.setenv("TRUECALL_DESK_FAULTS", "")
    monkeypatch.setenv("TRUECALL_DESK_TIMEOUT_MS", "soon")
    with pytest.raises(ValueError, match="TRUECALL_DESK_TIMEOUT_MS"):
        build_desk(str(tmp_path / "bad2.db"))


@pytest.mark.parametrize("spec, message", [
    ({"explode": 0.1}, "unknown fault"),
    ({"drop": 0.7, "error": 0.6}, "add up to"),
    ({"drop": 1.5}, "between 0 and 1"),
    ({"drop": True}, "probability"),
    ({"delay": {"p": 0.1, "ms": -1}}, "ms must be"),
    ({"delay": {"p": 0.1, "ms": [5, 1]}}, "range"),
    ({"drop": {"p": 0.1, "ms": 5}}, "takes no ms"),
    ({"kill": {"p": 0.1, "at": "lunch"}}, "at must be"),
    ({"error": {"p": 0.1, "at": "after_claim"}}, "takes no 'at'"),
    ({"sequence": ["drop", "boom"]}, "sequence"),
    ({"sequence": []}, "sequence"),
    ({"seed": "x"}, "seed"),
    ({"keys": {"k": "boom"}}, "keys"),
    ({"keys": ["k"]}, "keys"),
    ({"keys": {}}, "keys"),
])
def test_bad_fault_configs_are_refused(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FaultPlan(spec)


def test_a_sequence_is_cycled_in_submission_order() -> None:
    plan = FaultPlan({"sequence": ["none", "kill", "delay"], "kill": {"at": "after_write"}, "delay": {"ms": 7}})
    drawn = [plan.draw() for _ in range(6)]
    assert [f.name if f else None for f in drawn] == [None, "kill", "delay"] * 2
    assert drawn[1].at == "after_write" and drawn[2].ms == 7


def test_a_keyed_job_meets_its_own_fault_whatever_its_place_in_the_queue() -> None:
    """Jobs of tasks running at once reach the queue in any order: ``keys`` ties a fault to the job, and keyed
    jobs take no place in the sequence."""
    plan = FaultPlan({"keys": {"h1": "hang", "h2": "none"}, "sequence": ["delay", "none"],
                      "hang": {"at": "after_claim"}})
    drawn = [plan.draw(key) for key in ("h2", "x", "h1", "y", None, "h1")]
    assert [f.name if f else None for f in drawn] == [None, "delay", "hang", None, "delay", "hang"]
    assert drawn[2].at == "after_claim"
    assert FaultPlan(plan.to_dict()).keys == {"h1": "hang", "h2": "none"}
    assert FaultPlan({"keys": {"k": "drop"}}).active


# -- its own database failing (issue 13, item 9) ------------------------------------------------------------------


def _locked() -> Exception:
    exc = __import__("sqlite3").OperationalError("database is locked")
    exc.sqlite_errorcode = 5  # SQLITE_BUSY: what a statement that waited in vain for a lock raises
    return exc


def test_after_hand_over_any_failure_of_its_own_queries_is_outcome_unknown(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    server = make_desk(tmp_path, {"sequence": ["delay"], "delay": {"ms": 50}}, timeout=2.0)

    def fails(*args: Any, **kwargs: Any) -> Any:
        raise _locked()

    monkeypatch.setattr(server.state.tickets, "settle_wait", fails)
    _, done = asyncio.run(handle(server, {"incidentId": "INC-1001", "idempotencyKey": "k-after"}))
    error = err(done)
    assert error["kind"] == "outcome_unknown" and error["reference"] == "k-after", error
    [dispatch] = server.state.tickets.dispatches("acme", "k-after")
    assert "reconcile" in error["check"] and error["dispatchId"] == dispatch.dispatch_id
    # and it was right to say so: the job had gone out, and the ticket exists
    assert server.state.tickets.ticket_for_key("acme", "k-after") is not None


def test_before_hand_over_a_database_that_does_not_answer_is_dependency_unavailable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = make_desk(tmp_path)

    def fails(*args: Any, **kwargs: Any) -> Any:
        raise _locked()

    monkeypatch.setattr(server.state.tickets, "open_request", fails)
    _, done = asyncio.run(handle(server, {"incidentId": "INC-1001", "idempotencyKey": "k-before"}))
    error = err(done)
    assert error["kind"] == "dependency_unavailable" and "locked" in error["message"], error
    assert server.state.tickets.dispatches("acme", "k-before") == []
    assert server.state.tickets.ticket_for_key("acme", "k-before") is None
