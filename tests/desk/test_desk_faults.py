"""The accident, a thousand times: random upstream faults vs. the ticket table.

Every ``incident.handle`` run goes through the real pipeline (``acall_tool`` with
``task_mode="ext"`` → a task → ``task_runtime.wait``) against an upstream queue
that drops, delays, stalls, errors, crashes and loses acks at random.  Each
run's reported outcome is compared with the ground truth in the ticket table:

- success ⇒ the ticket exists, with its notification;
- ``dependency_unavailable`` ⇒ its dispatch is final and wrote nothing, now and
  after every worker has drained;
- ``outcome_unknown`` ⇒ reconcile settles it, and the settlement matches the table;
- never two tickets for one idempotency key.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from typing import Any


import pytest

from pg_support import pg_schema
from truecall import describe
from truecall.incidents import DEMO_TOKENS, build_desk
from truecall.incidents.dispatch_state import NOTHING_WRITTEN, DispatchState
from truecall.incidents.faults import FaultPlan
from truecall.incidents.reconcile import reconcile
from truecall.incidents.tickets import NOTHING_HAPPENED, TICKET_EXISTS

OPERATOR = DEMO_TOKENS["demo-acme-operator"]
TENANT = OPERATOR.tenant
RUNS = 1000
BATCH = 40
TIMEOUT_S = 0.015
#: The fault plan's times (below) are drawn around a 15 ms ack budget: SQLite's, whose one connection runs
#: every statement inline, and where 15 ms is about the 90th percentile of a fault-free hand-over (submit →
#: ack) with 40 calls at once on an idle machine (8.5 / 11.2 / 13.9 ms at the 10th / 50th / 90th).  A machine
#: or a backend that takes longer to hand a job to a worker (PostgreSQL: its workers claim off the event loop,
#: queueing with 40 handlers' transactions for the pool's threads and connections: 42 / 69 / 104 ms on the
#: same machine, 329 ms median in a CI run) would turn most runs into "withdrawn before a worker claimed it"
#: and starve the other paths.  So each backend's own fault-free hand-over is first timed at the same
#: concurrency (``_handover_p90``), and its budget, lease and fault times are the ones below stretched by
#: ``p90 / 15 ms`` (never shrunk): the budget sits where it sits for SQLite on an idle machine, and the mix of
#: paths stays the one the thresholds below were set on.  (Stretching by the ratio of the two backends'
#: medians did not: CI's SQLite median was itself 85 ms, the factor came to 3.87, the budget 58 ms against a
#: 329 ms PostgreSQL median, and 214 of 600 jobs were withdrawn before a claim: 82 successes < 100.)  The
#: factor is printed with the statistics.
LEASE_S = 0.06
#: Fault-free batches timed per backend (the first one, a warm-up, not counted).
CALIBRATION_BATCHES = 3

#: The fault plan draws from the test's seed plus this offset (its own sequence, replayed by the same number);
#: with the default seed 4242 that is the plan's seed the thresholds below were measured on, 20261129.
FAULT_SEED_OFFSET = 20261129 - 4242
#: The runs' default seed (TRUECALL_TEST_SEED replays another).
pytestmark = pytest.mark.seed(4242)

FAULTS = {
    "drop": 0.07,                            # lost before any side effect
    "delay": {"p": 0.08, "ms": [2, 40]},     # queued past (or within) the timeout
    "stall": {"p": 0.12, "ms": [2, 120]},    # claimed, then slow: within/past the timeout, within/past the lease
    "error": 0.07,                           # the upstream raises before writing
    "crash": 0.07,                           # worker dies after claiming: claim left behind, nothing written
    "lose_ack": 0.08,                        # ticket written, ack never sent
}

INCIDENTS = ["INC-1001", "INC-1002", "INC-1003"]


def _kind(result: dict[str, Any]) -> str:
    if not result.get("isError"):
        return "success"
    return result["structuredContent"]["error"]["kind"]


#: The same runs on each backend: SQLite in full; PostgreSQL (a round trip per statement) 600, enough
#: that every threshold below holds with room.  Since fenced leases, work in flight when a lease is
#: taken over is outcome_unknown rather than dependency_unavailable: at 400 runs dependency_unavailable
#: came to 49 ± 7 (the threshold is 50); at 600 it is ≈ 73, three standard deviations clear.
RUNS_BY_BACKEND = {"sqlite": RUNS, "postgresql": 600}


class FaultRuns:
    """One backend's runs, made once for the module (``fault_runs``) and checked by the tests below."""

    def __init__(self, server: Any, runs: list[dict[str, Any]], stats: Counter[str], elapsed: float,
                 expected: int) -> None:
        self.server, self.tickets, self.runs, self.stats = server, server.state.tickets, runs, stats
        self.elapsed, self.expected = elapsed, expected

    def of_kind(self, *kinds: str) -> list[dict[str, Any]]:
        return [run for run in self.runs if run["kind"] in kinds]


def _scaled(factor: float) -> dict[str, Any]:
    """``FAULTS`` with every time stretched by ``factor``."""
    plan: dict[str, Any] = {}
    for name, spec in FAULTS.items():
        plan[name] = {**spec, "ms": [ms * factor for ms in spec["ms"]]} if isinstance(spec, dict) else spec
    return plan


def _handover_p90(target: str) -> float:
    """The 90th percentile of the time (seconds) from handing a fault-free job to the upstream to its ack, with a batch of
    calls at once as in the runs (the first batch, which warms the database up, not counted)."""
    server = build_desk(target, faults={"seed": 1}, ack_timeout_s=5.0, claim_lease_s=5.0, workers=16, audit=True).start()
    upstream = server.state.upstream
    took: list[float] = []
    submit = upstream.submit

    def timed_submit(job: Any) -> Any:
        started = time.perf_counter()
        ack = submit(job)
        ack.add_done_callback(lambda _: took.append(time.perf_counter() - started))
        return ack

    upstream.submit = timed_submit
    serial = iter(range(10**9))

    async def one() -> None:
        out = await server.acall_tool(OPERATOR, "incident.handle",
                                      {"incidentId": INCIDENTS[0], "idempotencyKey": f"cal-{next(serial)}"},
                                      task_mode="ext")
        assert (await server.task_runtime.wait(out.task_id)).status.value == "completed"

    async def batches() -> None:
        for _ in range(CALIBRATION_BATCHES):
            await asyncio.gather(*(one() for _ in range(BATCH)))

    try:
        asyncio.run(batches())
    finally:
        server.db.close()
    counted = sorted(took[BATCH:])
    return counted[len(counted) * 9 // 10]


@pytest.fixture(scope="module", params=list(RUNS_BY_BACKEND))
def fault_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
               module_rng_seed: int) -> Any:
    """Runs on a SQLite file or a fresh PostgreSQL schema, then the final reconcile."""
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            folder = tmp_path_factory.mktemp("desk-faults")
            calibration, target = str(folder / "calibration.db"), str(folder / "desk.db")
        else:
            calibration = stack.enter_context(pg_schema()).url
            target = stack.enter_context(pg_schema()).url
        p90 = _handover_p90(calibration)
        factor = max(1.0, p90 / TIMEOUT_S)
        server = build_desk(target, faults={**_scaled(factor), "seed": module_rng_seed + FAULT_SEED_OFFSET},
                            ack_timeout_s=TIMEOUT_S * factor, claim_lease_s=LEASE_S * factor, workers=16,
                            audit=True).start()
        stack.callback(server.db.close)
        runs = _run_the_accident(server, random.Random(module_rng_seed), RUNS_BY_BACKEND[request.param], factor)
        runs.stats["scale_x100"] = round(factor * 100)
        runs.stats["handover_p90_us"] = round(p90 * 1e6)
        yield runs


def _run_the_accident(server: Any, rng: random.Random, RUNS: int, factor: float) -> FaultRuns:
    tickets = server.state.tickets
    runs: list[dict[str, Any]] = []
    bound: dict[str, dict[str, Any]] = {}  # key → the arguments it was first used with
    stats: Counter[str] = Counter()
    started = time.perf_counter()
    serial = iter(range(10**9))

    def arguments_for_run() -> tuple[dict[str, Any], str]:
        r = rng.random()
        if bound and r < 0.25:  # reuse a key with its own arguments: same ticket, never a second one
            key = rng.choice(sorted(bound))
            return dict(bound[key]), "reuse"
        if bound and r < 0.29:  # reuse a key with other arguments: refused
            key = rng.choice(sorted(bound))
            args = dict(bound[key])
            args["note"] = (args.get("note") or "") + " (changed)"
            return args, "conflict"
        if r < 0.31:
            return {"incidentId": "INC-9999"}, "unknown_incident"
        args: dict[str, Any] = {"incidentId": rng.choice(INCIDENTS)}
        if rng.random() < 0.5:
            args["note"] = f"note {rng.randrange(1000)}"
        if r < 0.45:
            return args, "no_key"  # the desk generates a key and returns it
        args["idempotencyKey"] = f"k-{next(serial)}"
        return args, "new_key"

    async def one(args: dict[str, Any], how: str) -> dict[str, Any]:
        out = await server.acall_tool(OPERATOR, "incident.handle", args, task_mode="ext")
        if not hasattr(out, "task_id"):  # refused before acceptance: a plain result, never a task
            return {"args": args, "how": how, "task": None, "result": out.to_dict(), "kind": _kind(out.to_dict())}
        assert out.status.value == "working"
        assert "not yet done" in describe(out.to_dict())  # accepted, not done
        assert "尚未完成" in describe(out.to_dict(), "zh")
        task = await server.task_runtime.wait(out.task_id)
        assert task.terminal, task
        assert task.status.value == "completed", task
        return {"args": args, "how": how, "task": task, "result": task.result, "kind": _kind(task.result)}

    async def main() -> None:
        mid_reconciles = 0
        while len(runs) < RUNS:
            batch = []
            fresh: dict[str, dict[str, Any]] = {}
            for _ in range(min(BATCH, RUNS - len(runs))):
                args, how = arguments_for_run()
                if how == "new_key":
                    fresh[args["idempotencyKey"]] = dict(args)
                batch.append((args, how))
            done = await asyncio.gather(*(one(a, h) for a, h in batch))
            # A key is reused only by a later batch: within one the calls run at once (their statements off the
            # loop, on a server database), and which of two first uses of a key binds it is theirs to decide.
            bound.update(fresh)
            runs.extend(done)
            for run in done:  # generated keys become reusable too
                sc = (run["result"].get("structuredContent") or {})
                key = sc.get("idempotencyKey") or (sc.get("error") or {}).get("idempotencyKey")
                if run["how"] == "no_key" and key:
                    bound[key] = {**run["args"], "idempotencyKey": key}
            # reconcile while stalled workers may still hold claims: the fence must beat late writes
            if rng.random() < 0.3:
                reconcile(server.tasks, tickets, settled_by="mid-run")
                mid_reconciles += 1
        stats["mid_reconciles"] = mid_reconciles
        assert await server.state.upstream.drain(timeout=10)
        assert server.state.upstream.waiting == 0  # every caller let go of its ack, answered or not

    asyncio.run(main())
    time.sleep(LEASE_S * factor * 1.5)  # every claim left behind by a crashed worker is now past its lease
    final = reconcile(server.tasks, tickets, settled_by="final")

    stats["final_pending"] = len(final.pending)
    return FaultRuns(server, runs, stats, time.perf_counter() - started, RUNS)


def test_reconcile_leaves_nothing_pending_and_no_task_working(fault_runs: FaultRuns) -> None:
    assert fault_runs.stats["final_pending"] == 0
    assert fault_runs.server.tasks.list(status="working", limit=10) == []


def test_never_two_tickets_for_one_idempotency_key(fault_runs: FaultRuns) -> None:
    tickets = fault_runs.tickets
    assert tickets.duplicate_keys(TENANT) == []
    done_per_key = Counter(d.idempotency_key for d in tickets.dispatches(TENANT) if d.state is DispatchState.DONE)
    assert all(n == 1 for n in done_per_key.values())
    assert len(tickets.tickets(TENANT)) == len(done_per_key)


def test_success_means_the_ticket_exists_with_its_notification(fault_runs: FaultRuns) -> None:
    for run in fault_runs.of_kind("success"):
        sc = run["result"]["structuredContent"]
        ticket = fault_runs.tickets.ticket(TENANT, sc["ticketId"])
        assert ticket is not None, "the client saw success and no ticket exists"
        assert ticket.notified and sc["notified"] is True
        assert ticket.idempotency_key == sc["idempotencyKey"]
        assert ticket.incident_id == run["args"]["incidentId"]
        assert sc["ticketId"] in _said(run)


def test_every_failure_says_not_successful(fault_runs: FaultRuns) -> None:
    for run in fault_runs.runs:
        if run["kind"] != "success":
            assert _said(run).startswith("Not successful")
            assert describe(run["task"].to_dict() if run["task"] is not None else run["result"],
                            "zh").startswith("未成功")


def test_invalid_input_is_refused_before_acceptance(fault_runs: FaultRuns) -> None:
    """A reused key with other arguments and an unknown incident: a plain result, never a task; and
    nothing else is invalid."""
    for run in fault_runs.runs:
        if run["kind"] == "invalid_input":
            assert run["task"] is None and run["how"] in ("conflict", "unknown_incident")
        elif run["kind"] != "success":
            assert run["how"] not in ("conflict", "unknown_incident"), run


def test_dependency_unavailable_means_its_attempt_wrote_nothing(fault_runs: FaultRuns) -> None:
    tickets = fault_runs.tickets
    for run in fault_runs.of_kind("dependency_unavailable"):
        error = run["result"]["structuredContent"]["error"]
        dispatch = tickets.dispatch(TENANT, error["dispatchId"])
        assert dispatch is not None and dispatch.state in NOTHING_WRITTEN, dispatch
        assert tickets.ticket_for_dispatch(TENANT, dispatch.dispatch_id) is None, \
            "the client saw dependency_unavailable and its attempt wrote a ticket"
        later = tickets.ticket_for_key(TENANT, error["idempotencyKey"])
        if later is not None:  # a later attempt with the same key may have succeeded — after this one ended
            newer = tickets.dispatch(TENANT, later.dispatch_id)
            assert newer is not None and newer.created_at >= dispatch.updated_at


def test_outcome_unknown_is_settled_by_reconcile_as_the_table_says(fault_runs: FaultRuns) -> None:
    tickets = fault_runs.tickets
    for run in fault_runs.of_kind("outcome_unknown"):
        error = run["result"]["structuredContent"]["error"]
        assert error["reference"] == error["idempotencyKey"]
        assert "reconcile" in error["check"]
        dispatch = tickets.dispatch(TENANT, error["dispatchId"])
        assert dispatch is not None
        settlement = tickets.settlement(TENANT, run["task"].task_id)
        assert settlement is not None, "an outcome_unknown task was left unsettled"
        ticket = tickets.ticket_for_key(TENANT, error["idempotencyKey"])
        if settlement.outcome == TICKET_EXISTS:
            assert ticket is not None and ticket.ticket_id == settlement.ticket_id
        else:
            assert settlement.outcome == NOTHING_HAPPENED
            final_dispatch = tickets.dispatch(TENANT, dispatch.dispatch_id)
            assert final_dispatch is not None and final_dispatch.state in NOTHING_WRITTEN
            assert tickets.ticket_for_dispatch(TENANT, dispatch.dispatch_id) is None
        # the task's own result was never rewritten
        assert fault_runs.server.tasks.get(run["task"].task_id).result == run["result"]


def test_the_mix_really_happened(fault_runs: FaultRuns) -> None:
    """Every path was taken, many times, within the time budget."""
    runs, tickets = fault_runs.runs, fault_runs.tickets
    kinds = Counter(run["kind"] for run in runs)
    settled = Counter(s.outcome for s in (tickets.settlement(TENANT, run["task"].task_id)
                                          for run in runs if run["kind"] == "outcome_unknown") if s is not None)
    replayed = sum(1 for run in runs if run["kind"] == "success" and run["result"]["structuredContent"]["replayed"])
    summary = {
        "runs": len(runs),
        "outcomes": dict(kinds),
        "settlements": dict(settled),
        "faults_drawn": dict(fault_runs.server.state.upstream.faults.drawn),
        "upstream": dict(fault_runs.server.state.upstream.stats),
        "tickets": len(tickets.tickets(TENANT)),
        "how": dict(Counter(run["how"] for run in runs)),
        "other": dict(fault_runs.stats),
        "seconds": round(fault_runs.elapsed, 2),
    }
    print("\nfault-run statistics:", summary)
    assert len(runs) >= fault_runs.expected
    assert kinds["success"] >= 100
    assert kinds["dependency_unavailable"] >= 50
    assert kinds["outcome_unknown"] >= 30
    assert kinds["invalid_input"] >= 10
    assert settled[TICKET_EXISTS] >= 5 and settled[NOTHING_HAPPENED] >= 5
    assert replayed >= 20
    assert fault_runs.elapsed < 60


def _said(run: dict[str, Any]) -> str:
    return describe(run["task"].to_dict()) if run["task"] is not None else describe(run["result"])


def test_fault_plan_mixes_by_probability_and_is_reproducible() -> None:
    spec = {"seed": 1, "drop": 0.2, "delay": {"p": 0.2, "ms": [1, 3]}, "error": 0.1}
    a, b = FaultPlan(spec), FaultPlan(spec)
    draws_a = [(f.name, round(f.ms, 6)) if f else None for f in (a.draw() for _ in range(2000))]
    draws_b = [(f.name, round(f.ms, 6)) if f else None for f in (b.draw() for _ in range(2000))]
    assert draws_a == draws_b
    counts = Counter(d[0] if d else "none" for d in draws_a)
    assert 300 < counts["drop"] < 500 and 300 < counts["delay"] < 500 and 120 < counts["error"] < 280
    assert all(1 <= d[1] <= 3 for d in draws_a if d and d[0] == "delay")
    assert a.drawn == dict(counts)
