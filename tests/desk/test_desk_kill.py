"""The desk as a real process: tasks over HTTP, SIGKILL mid-task, restart — every task ends honestly.

``truecall serve --http`` runs on 127.0.0.1 with ``TRUECALL_DB`` and a fault
configuration in ``TRUECALL_DESK_FAULTS``; requests are raw 2026-07-28 JSON-RPC
(``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``_meta`` with the tasks
extension).  After every kill and restart, each task is polled with
``tasks/get`` until terminal, and its reported outcome is checked against the
ticket table (read directly with sqlite3).
"""

from __future__ import annotations

import itertools
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from http_support import GLOBEX, OPERATOR, READER, meta, modern_call, served

TASKS_EXT = "io.modelcontextprotocol/tasks"
CAPS = {"extensions": {TASKS_EXT: {}}}
_ids = itertools.count(1)


def env_for(faults: dict[str, Any] | None, *, timeout_ms: int = 60_000, lease_ms: int = 300) -> dict[str, str]:
    return {"TRUECALL_DESK_FAULTS": orjson.dumps(faults).decode() if faults else "",
            "TRUECALL_DESK_TIMEOUT_MS": str(timeout_ms), "TRUECALL_DESK_CLAIM_LEASE_MS": str(lease_ms),
            "TRUECALL_DESK_WORKERS": "8"}


def rpc(http: httpx.Client, url: str, method: str, params: dict[str, Any], *, token: str = OPERATOR,
        name: str | None = None, caps: dict[str, Any] | None = CAPS) -> tuple[int, dict[str, Any]]:
    params = {**params, "_meta": meta(caps=caps if caps is not None else {})}
    resp = modern_call(http, url, next(_ids), method, params, token=token, name=name)
    return resp.status_code, orjson.loads(resp.content) if resp.content else {}


def create(http: httpx.Client, url: str, args: dict[str, Any], token: str = OPERATOR) -> dict[str, Any]:
    status, body = rpc(http, url, "tools/call", {"name": "incident.handle", "arguments": args}, token=token)
    assert status == 200, body
    result = body["result"]
    assert result["resultType"] == "task", result  # accepted: a task handle, never a success text
    assert result["status"] == "working" and "content" not in result
    return result


def get(http: httpx.Client, url: str, task_id: str, token: str = OPERATOR) -> dict[str, Any]:
    status, body = rpc(http, url, "tasks/get", {"taskId": task_id}, token=token, name=task_id)
    assert status == 200, body
    return body["result"]


def poll(http: httpx.Client, url: str, task_id: str, *, until: tuple[str, ...] = ("completed", "failed",
                                                                                  "cancelled"),
         timeout: float = 15.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        task = get(http, url, task_id)
        if task["status"] in until:
            return task
        assert time.monotonic() < deadline, f"task {task_id} still {task['status']}"
        time.sleep(0.05)


def kind(task: dict[str, Any]) -> str:
    result = task["result"]
    return result["structuredContent"]["error"]["kind"] if result.get("isError") else "success"


class Truth:
    """The ticket table and the queue's records, read directly (read-only)."""

    def __init__(self, db: Path) -> None:
        self.db = db

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def tickets_for_key(self, key: str) -> list[str]:
        return [r[0] for r in self._rows("SELECT ticket_id FROM tickets WHERE tenant = 'acme' AND "
                                         "idempotency_key = ?", (key,))]

    def notified(self, ticket_id: str) -> bool:
        return bool(self._rows("SELECT 1 FROM notifications_outbox WHERE tenant = 'acme' AND ticket_id = ?",
                               (ticket_id,)))

    def dispatch_states(self, key: str) -> list[str]:
        return [r[0] for r in self._rows("SELECT state FROM dispatches WHERE tenant = 'acme' AND idempotency_key = ? "
                                         "ORDER BY created_at", (key,))]

    def ticket_count(self) -> int:
        return self._rows("SELECT COUNT(*) FROM tickets")[0][0]

    def duplicate_keys(self) -> list[tuple[Any, ...]]:
        return self._rows("SELECT tenant, idempotency_key FROM tickets GROUP BY tenant, idempotency_key "
                          "HAVING COUNT(*) > 1")

    def wait_for_states(self, expected: dict[str, str], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            now = {key: (self.dispatch_states(key) or ["(none)"])[-1] for key in expected}
            if now == expected:
                return
            assert time.monotonic() < deadline, f"dispatch states {now}, expected {expected}"
            time.sleep(0.05)


def check_agrees(truth: Truth, task: dict[str, Any], key: str) -> str:
    """The reported outcome against the ticket table; returns the kind."""
    k = kind(task)
    tickets = truth.tickets_for_key(key)
    assert len(tickets) <= 1
    if k == "success":
        facts = task["result"]["structuredContent"]
        assert tickets == [facts["ticketId"]] and facts["notified"] is True and truth.notified(facts["ticketId"])
    elif k == "dependency_unavailable":
        assert tickets == [] and truth.dispatch_states(key)[-1] in ("abandoned", "failed")
        assert "Nothing was written" in task["result"]["structuredContent"]["error"]["message"]
    else:
        assert k == "outcome_unknown", task
        error = task["result"]["structuredContent"]["error"]
        assert error["reference"] == key and "reconcile" in error["check"]
    return k


def reconcile_cli(db: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "truecall.cli", "reconcile", "--db", str(db), "--json"],
                         capture_output=True, timeout=60, env={**os.environ, "TRUECALL_DB": str(db)})
    assert out.returncode == 0, out.stderr
    return orjson.loads(out.stdout)


def sigkill(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL


# -- tests -------------------------------------------------------------------------------------------------


#: Six jobs, two of each fault: done before the kill, claimed by a worker that dies with the process,
#: still queued in its memory.
PLAN = ["none", "hang", "delay", "hang", "delay", "none"]
KEYS = [f"kill-{i}" for i in range(len(PLAN))]
HUNG = [i for i, fault in enumerate(PLAN) if fault == "hang"]


class Restarted:
    """What one kill-and-restart recorded, phase by phase (module-scoped: two desk processes once)."""

    def __init__(self) -> None:
        self.tasks: list[dict[str, Any]] = []
        self.before_kill: list[str] = []
        self.ended: list[dict[str, Any]] = []
        #: check_agrees per task, read from the ticket table before reconcile changes it
        self.kinds: list[str] = []
        self.reconciled: dict[str, Any] = {}
        self.after_reconcile: dict[int, tuple[list[str], list[str], str]] = {}
        self.retried: dict[int, tuple[dict[str, Any], str]] = {}
        self.duplicates: list[Any] = []
        self.tickets = 0


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> Restarted:
    tmp_path = tmp_path_factory.mktemp("sigkill-restart")
    # by key: the six tasks run at once, so their jobs reach the queue in any order
    faults = {"keys": dict(zip(KEYS, PLAN)), "hang": {"at": "after_claim"}, "delay": {"ms": 600_000}}
    run = Restarted()
    with httpx.Client(timeout=10) as http:
        with served(tmp_path, env=env_for(faults)) as first:
            truth = Truth(first.db)
            run.tasks = tasks = [create(http, first.url, {"incidentId": "INC-1001", "idempotencyKey": key})
                                 for key in KEYS]
            expected_before = {"none": "done", "hang": "claimed", "delay": "queued"}
            truth.wait_for_states({key: expected_before[f] for key, f in zip(KEYS, PLAN)})
            for task, fault in zip(tasks, PLAN):
                now = poll(http, first.url, task["taskId"], until=("completed",)) if fault == "none" else \
                    get(http, first.url, task["taskId"])
                run.before_kill.append(now["status"])
            sigkill(first.proc)  # mid-task: four tasks are working, two jobs claimed, two queued

        with served(tmp_path, env=env_for(None)) as second:
            assert second.db == truth.db
            run.ended = [poll(http, second.url, t["taskId"]) for t in tasks]
            run.kinds = [check_agrees(truth, task, key) for task, key in zip(run.ended, KEYS)]
            # the claimed ones: the worker died with the process; once the claim's lease is over,
            # reconcile fences the job
            time.sleep(0.4)
            run.reconciled = reconcile_cli(truth.db)
            for i in HUNG:
                run.after_reconcile[i] = (truth.dispatch_states(KEYS[i]), truth.tickets_for_key(KEYS[i]),
                                          kind(get(http, second.url, tasks[i]["taskId"])))
            for i in (1, 2, 0):
                again = poll(http, second.url, create(http, second.url, {"incidentId": "INC-1001",
                                                                         "idempotencyKey": KEYS[i]})["taskId"])
                run.retried[i] = (again, check_agrees(truth, again, KEYS[i]))
            run.duplicates, run.tickets = truth.duplicate_keys(), truth.ticket_count()
    return run


def test_before_the_kill_only_the_finished_jobs_completed(restarted: Restarted) -> None:
    assert restarted.before_kill == ["completed" if fault == "none" else "working" for fault in PLAN]


def test_after_the_restart_every_task_ends_with_the_outcome_the_table_shows(restarted: Restarted) -> None:
    """Success for the finished jobs, unknown for the claimed ones, unavailable for the queued ones."""
    assert restarted.kinds == ["success", "outcome_unknown", "dependency_unavailable", "outcome_unknown",
                               "dependency_unavailable", "success"]
    for task in restarted.ended:
        assert task["status"] == "completed"  # tool error results complete the task; none left working


def test_reconcile_fences_the_claims_the_dead_worker_held(restarted: Restarted) -> None:
    """Nothing happened; the task's own result is unchanged: it said "unknown", and that was true."""
    settled = {s["taskId"]: s for s in restarted.reconciled["settled"]}
    assert set(settled) == {restarted.tasks[i]["taskId"] for i in HUNG} and restarted.reconciled["pending"] == []
    for i in HUNG:
        assert settled[restarted.tasks[i]["taskId"]]["outcome"] == "nothing_happened"
        assert restarted.after_reconcile[i] == (["abandoned"], [], "outcome_unknown")


def test_a_retry_with_the_same_key_writes_one_ticket_per_key(restarted: Restarted) -> None:
    for i, (again, agreed) in restarted.retried.items():
        assert agreed == "success"
        assert again["result"]["structuredContent"]["replayed"] is (i == 0)
    assert restarted.duplicates == [] and restarted.tickets == 4  # keys 0 and 5, then 1 and 2


@pytest.mark.parametrize("point, expected", [
    ("before_claim", "dependency_unavailable"),
    ("after_claim", "outcome_unknown"),
    ("after_write", "success"),
])
def test_the_worker_kills_the_process_at_each_point(tmp_path: Path, point: str, expected: str) -> None:
    faults = {"sequence": ["kill"], "kill": {"at": point, "ms": 300}}
    key = f"exit-{point}"
    with httpx.Client(timeout=10) as http:
        with served(tmp_path, env=env_for(faults, lease_ms=200)) as first:
            truth = Truth(first.db)
            task = create(http, first.url, {"incidentId": "INC-1002", "idempotencyKey": key, "note": point})
            assert first.proc.wait(timeout=15) == 137  # os._exit in the worker, mid-task
        with served(tmp_path, env=env_for(None)) as second:
            ended = poll(http, second.url, task["taskId"])
            assert check_agrees(truth, ended, key) == expected
            if expected == "outcome_unknown":
                assert truth.dispatch_states(key) == ["claimed"]
                time.sleep(0.3)
                [settled] = reconcile_cli(truth.db)["settled"]
                assert settled["outcome"] == "nothing_happened" and truth.tickets_for_key(key) == []
            elif expected == "success":
                assert truth.dispatch_states(key) == ["done"]
            else:
                assert truth.dispatch_states(key) == ["abandoned"]


# -- tasks over HTTP, one promise per test: two desks for the module (one plain, one whose jobs all wait
# in the queue), so that no test depends on which job another test submitted first

@pytest.fixture(scope="module")
def http() -> Any:
    with httpx.Client(timeout=10) as client:
        yield client


@pytest.fixture(scope="module")
def plain_desk(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with served(tmp_path_factory.mktemp("plain-desk"), env=env_for(None)) as desk:
        yield desk


@pytest.fixture(scope="module")
def queued_desk(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Every job waits in the upstream queue (600 s): a task stays working until it is cancelled."""
    faults = {"sequence": ["delay"], "delay": {"ms": 600_000}}
    with served(tmp_path_factory.mktemp("queued-desk"), env=env_for(faults)) as desk:
        yield desk


@pytest.fixture(scope="module")
def handled(http: httpx.Client, plain_desk: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """One incident.handle accepted and polled to its end on the plain desk: (the handle, the task)."""
    created = create(http, plain_desk.url, {"incidentId": "INC-1001", "idempotencyKey": "e2e-1"})
    return created, poll(http, plain_desk.url, created["taskId"])


def test_incident_handle_without_the_tasks_extension_is_refused(http: httpx.Client, plain_desk: Any) -> None:
    """It runs only as a task."""
    status, body = rpc(http, plain_desk.url, "tools/call", {"name": "incident.handle",
                                                            "arguments": {"incidentId": "INC-1001"}}, caps={})
    assert status == 400 and body["error"]["code"] == -32021


def test_a_reader_may_not_handle_an_incident(http: httpx.Client, plain_desk: Any) -> None:
    status, body = rpc(http, plain_desk.url, "tools/call", {"name": "incident.handle",
                                                            "arguments": {"incidentId": "INC-1001"}}, token=READER)
    assert status == 403


def test_an_unknown_incident_is_refused_before_anything_is_accepted(http: httpx.Client, plain_desk: Any) -> None:
    status, body = rpc(http, plain_desk.url, "tools/call", {"name": "incident.handle",
                                                            "arguments": {"incidentId": "INC-2001"}})
    assert status == 200 and body["result"]["isError"] is True
    assert body["result"]["structuredContent"]["error"]["kind"] == "invalid_input"


def test_an_accepted_task_completes_with_a_ticket_whose_link_reads(http: httpx.Client, plain_desk: Any,
                                                                   handled: Any) -> None:
    created, done = handled
    assert "accepted, not done" in created.get("statusMessage", "")
    assert done["status"] == "completed" and check_agrees(Truth(plain_desk.db), done, "e2e-1") == "success"
    facts = done["result"]["structuredContent"]
    link = next(b for b in done["result"]["content"] if b["type"] == "resource_link")
    assert link["uri"] == f"ticket://acme/{facts['ticketId']}"
    status, body = rpc(http, plain_desk.url, "resources/read", {"uri": link["uri"]})
    assert status == 200 and orjson.loads(body["result"]["contents"][0]["text"])["ticketId"] == facts["ticketId"]


def test_another_tenant_reads_the_ticket_like_a_missing_one(http: httpx.Client, plain_desk: Any,
                                                            handled: Any) -> None:
    link = next(b for b in handled[1]["result"]["content"] if b["type"] == "resource_link")
    status, body = rpc(http, plain_desk.url, "resources/read", {"uri": link["uri"]}, token=GLOBEX)
    status_missing, missing = rpc(http, plain_desk.url, "resources/read", {"uri": "ticket://acme/TKT-NOPE"},
                                  token=GLOBEX)
    assert status == status_missing and body["error"]["code"] == missing["error"]["code"]
    assert body["error"]["message"] == missing["error"]["message"]


def test_another_tenants_task_reads_like_an_unknown_one(http: httpx.Client, plain_desk: Any, handled: Any) -> None:
    task_id = handled[0]["taskId"]
    status, body = rpc(http, plain_desk.url, "tasks/get", {"taskId": task_id}, token=GLOBEX, name=task_id)
    assert "error" in body


def test_cancelling_a_queued_task_withdraws_its_job(http: httpx.Client, queued_desk: Any) -> None:
    truth = Truth(queued_desk.db)
    slow = create(http, queued_desk.url, {"incidentId": "INC-1002", "idempotencyKey": "e2e-slow"})
    truth.wait_for_states({"e2e-slow": "queued"})
    assert get(http, queued_desk.url, slow["taskId"])["status"] == "working"
    status, body = rpc(http, queued_desk.url, "tasks/cancel", {"taskId": slow["taskId"]}, name=slow["taskId"])
    assert status == 200 and "error" not in body
    cancelled = poll(http, queued_desk.url, slow["taskId"])
    assert cancelled["status"] == "cancelled" and "result" not in cancelled
    assert truth.dispatch_states("e2e-slow") == ["abandoned"] and truth.tickets_for_key("e2e-slow") == []


def test_cancelling_a_finished_task_changes_nothing(http: httpx.Client, plain_desk: Any, handled: Any) -> None:
    task_id = handled[0]["taskId"]
    status, body = rpc(http, plain_desk.url, "tasks/cancel", {"taskId": task_id}, name=task_id)
    assert status == 200 and get(http, plain_desk.url, task_id)["status"] == "completed"
    assert Truth(plain_desk.db).tickets_for_key("e2e-1") == [handled[1]["result"]["structuredContent"]["ticketId"]]


def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "truecall.cli", *args], capture_output=True, timeout=60)


def test_operator_cancel_from_the_cli_reaches_the_serving_process(tmp_path: Path) -> None:
    faults = {"keys": {"ops-queued": "delay", "ops-claimed": "stall"}, "delay": {"ms": 600_000},
              "stall": {"ms": 600_000}}
    with httpx.Client(timeout=10) as http, served(tmp_path, env=env_for(faults)) as desk:
        truth = Truth(desk.db)
        queued = create(http, desk.url, {"incidentId": "INC-1001", "idempotencyKey": "ops-queued"})
        claimed = create(http, desk.url, {"incidentId": "INC-1002", "idempotencyKey": "ops-claimed"})
        truth.wait_for_states({"ops-queued": "queued", "ops-claimed": "claimed"})

        listed = orjson.loads(cli("tasks", "list", "--db", str(desk.db), "--json", "--status", "working").stdout)
        assert {t["taskId"] for t in listed["tasks"]} == {queued["taskId"], claimed["taskId"]}

        refused = cli("tasks", "cancel", "--db", str(desk.db), "--json", "--", claimed["taskId"])
        assert refused.returncode == 1
        assert orjson.loads(refused.stdout)["error"].endswith("its dispatch is claimed (a worker holds the job and "
                                                               "may still write the ticket)")
        asked = cli("tasks", "cancel", "--db", str(desk.db), "--json", "--", queued["taskId"])
        assert asked.returncode == 0, asked.stderr
        answer = orjson.loads(asked.stdout)
        assert answer["cancelRequested"] is True and answer["cancelled"] is False
        # the serving process notices the request and stops the task; the job was already withdrawn
        ended = poll(http, desk.url, queued["taskId"])
        assert ended["status"] == "cancelled"
        assert truth.dispatch_states("ops-queued") == ["abandoned"] and truth.tickets_for_key("ops-queued") == []
        assert get(http, desk.url, claimed["taskId"])["status"] == "working"
        shown = orjson.loads(cli("tasks", "show", "--db", str(desk.db), "--json", "--", queued["taskId"]).stdout)
        assert shown["status"] == "cancelled" and shown["describe"].endswith("cancelled, not done")
        zh = subprocess.run([sys.executable, "-m", "truecall.cli", "tasks", "show", "--db", str(desk.db), "--json",
                             "--", queued["taskId"]], capture_output=True, timeout=60,
                            env={**os.environ, "TRUECALL_LANG": "zh"})
        assert orjson.loads(zh.stdout)["describe"].endswith("已取消，未完成")
