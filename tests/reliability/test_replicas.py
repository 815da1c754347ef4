"""Two replicas, one PostgreSQL: work created on one is driven through the other, and a SIGKILL loses nothing.

Each replica is a real ``truecall serve --http`` process on its own 127.0.0.1 port (see
:func:`http_support.served`), serving ``tests/replica_app.py`` (the desk plus two plain task tools)
with ``TRUECALL_DB`` naming one fresh PostgreSQL schema, the same ``TRUECALL_STATE_KEYS`` and
``TRUECALL_AUDIT_KEY``, and the same ``--token-file`` (hashes only).  ``TRUECALL_TASK_LEASE_S``
is short, so a dead replica's tasks are settled by the other within seconds.  The ground truth
(tasks, tickets, dispatches, runs) is read straight from the schema.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import orjson
import pytest

from http_support import LEGACY, meta, modern_call, request, served, sse_messages
from pg_support import BACKENDS, PgSchema, admin, nobody_writes, pg_schema, wait_until
from truecall import hash_token

from _paths import TESTS

APP = f"{TESTS / 'replica_app.py'}:build"
TASKS_EXT = "io.modelcontextprotocol/tasks"
CAPS = {"extensions": {TASKS_EXT: {}}, "elicitation": {"form": {}}}
LEASE_S = 3.0  # renewed every second: a replica busy for a moment never loses its tasks
TERMINAL = ("completed", "failed", "cancelled")
_ids = itertools.count(1)


def _key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")


@contextlib.contextmanager
def replicas(root: Path, schema: "PgSchema | str", *, faults_a: dict[str, Any] | None = None,
             env: dict[str, str] | None = None, env_a: dict[str, str] | None = None) -> Iterator[tuple[Any, Any, str]]:
    """Replicas A and B on one database (a schema, or a SQLite path); yields (A, B, the operator's bearer token).
    ``env_a``: A's own settings over the shared ones (say, its way to the database through a proxy)."""
    token = "tc_" + _key()
    token_file = root / "tokens.json"
    token_file.write_bytes(orjson.dumps({"tokens": [{
        "sha256": hash_token(token), "subject": "ops@acme", "tenant": "acme",
        "scopes": ["incidents:read", "incidents:write"]}]}))
    shared = {
        "TRUECALL_DB": schema if isinstance(schema, str) else schema.url,
        "TRUECALL_STATE_KEYS": f"{_key()},{_key()}",  # the first seals, both open
        "TRUECALL_AUDIT_KEY": _key(),
        "TRUECALL_TASK_LEASE_S": str(LEASE_S),
        "TRUECALL_DESK_TIMEOUT_MS": "60000",        # incident.handle waits long: tasks stay mid-flight
        "TRUECALL_DESK_CLAIM_LEASE_MS": "1000",
        "TRUECALL_DESK_WORKERS": "8",
        "TRUECALL_DESK_FAULTS": "",
        **(env or {}),
    }
    args = (APP, "--token-file", str(token_file))
    env_a = {**shared, "TRUECALL_DESK_FAULTS": orjson.dumps(faults_a).decode() if faults_a else "", **(env_a or {})}
    with served(root / "a", *args, env=env_a, startup_timeout=30) as a, \
            served(root / "b", *args, env=shared, startup_timeout=30) as b:
        a.extra["env"] = b.extra["env"] = shared
        yield a, b, token


def rpc(http: httpx.Client, url: str, token: str, method: str, params: dict[str, Any], *,
        caps: dict[str, Any] = CAPS) -> dict[str, Any]:
    """One 2026-07-28 request; the JSON-RPC response message."""
    params = {**params, "_meta": meta(caps=caps)}
    name = params.get("taskId") if method.startswith("tasks/") else None
    resp = modern_call(http, url, next(_ids), method, params, token=token, name=name)
    assert resp.headers["content-type"].startswith("application/json"), resp.text
    return orjson.loads(resp.content)


def call(http: httpx.Client, url: str, token: str, tool: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
    message = rpc(http, url, token, "tools/call", {"name": tool, "arguments": arguments}, **kw)
    assert "result" in message, message
    return message["result"]


def start_task(http: httpx.Client, url: str, token: str, tool: str, arguments: dict[str, Any]) -> str:
    result = call(http, url, token, tool, arguments)
    assert result["resultType"] == "task" and result["status"] in ("working", "input_required"), result
    return result["taskId"]


def get(http: httpx.Client, url: str, token: str, task_id: str) -> dict[str, Any]:
    message = rpc(http, url, token, "tasks/get", {"taskId": task_id})
    assert "result" in message, message
    return message["result"]


def poll(http: httpx.Client, url: str, token: str, task_id: str, until: tuple[str, ...] = TERMINAL,
         timeout: float = 15.0) -> dict[str, Any]:
    return wait_until(lambda: (lambda t: t if t["status"] in until else None)(get(http, url, token, task_id)),
                      timeout, f"task {task_id} to reach {until}")


def kind(task: dict[str, Any]) -> str:
    result = task["result"]
    return result["structuredContent"]["error"]["kind"] if result.get("isError") else "success"


class Listener(threading.Thread):
    """A ``subscriptions/listen`` stream (SSE) kept open on a background thread until ``stop_when``."""

    def __init__(self, url: str, token: str, task_ids: list[str], stop_when: Any) -> None:
        super().__init__(daemon=True)
        self.url, self.token, self.task_ids, self.stop_when = url, token, task_ids, stop_when
        self.messages: list[dict[str, Any]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        params = {"notifications": {"taskIds": self.task_ids}, "_meta": meta(caps=CAPS)}
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                   "mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen",
                   "authorization": f"Bearer {self.token}"}
        try:
            with httpx.Client(timeout=httpx.Timeout(5.0, read=20.0)) as client, client.stream(
                    "POST", self.url, content=orjson.dumps(request("listen", "subscriptions/listen", params)),
                    headers=headers) as resp:
                assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
                buffer = ""
                for chunk in resp.iter_text():
                    buffer += chunk
                    while "\n\n" in buffer:
                        event, buffer = buffer.split("\n\n", 1)
                        self.messages.extend(sse_messages(event + "\n\n"))
                        if self.stop_when(self.messages):
                            return
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def task_notes(messages: list[dict[str, Any]], task_id: str) -> list[str]:
    return [m["params"]["status"] for m in messages
            if m.get("method") == "notifications/tasks" and m["params"].get("taskId") == task_id]


# -- work shared across replicas ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any, str, PgSchema]]:
    with pg_schema() as schema, replicas(tmp_path_factory.mktemp("replicas"), schema) as (a, b, token):
        yield a, b, token, schema


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as client:
        yield client


def test_a_task_created_on_a_is_read_answered_and_watched_through_b(pair: Any, http: httpx.Client) -> None:
    a, b, token, schema = pair
    task_id = start_task(http, a.url, token, "survey", {})
    waiting = poll(http, b.url, token, task_id, until=("input_required",))
    assert set(waiting["inputRequests"]) == {"name"}
    assert waiting["inputRequests"]["name"]["method"] == "elicitation/create"

    listener = Listener(b.url, token, [task_id], lambda msgs: "completed" in task_notes(msgs, task_id))
    listener.start()
    wait_until(lambda: task_notes(listener.messages, task_id), 10, "the listen stream on B to report the task")
    answer = {"name": {"action": "accept", "content": {"name": "Ada"}}}
    updated = rpc(http, b.url, token, "tasks/update", {"taskId": task_id, "inputResponses": answer})
    assert "result" in updated, updated

    done = poll(http, b.url, token, task_id)
    assert done["status"] == "completed" and done["result"]["structuredContent"] == {"name": "Ada", "pid": a.proc.pid}
    listener.join(timeout=10)
    assert not listener.is_alive() and listener.error is None, listener.error
    notes = task_notes(listener.messages, task_id)
    assert notes[0] == "input_required" and notes[-1] == "completed"  # A's work, B's stream
    assert listener.messages[0]["method"] == "notifications/subscriptions/acknowledged"
    # executed once, by the replica that accepted it
    assert schema.rows("SELECT tool, pid FROM replica_runs WHERE task_id = %s", (task_id,)) == [("survey", a.proc.pid)]


def test_a_task_running_on_a_is_cancelled_through_b(pair: Any, http: httpx.Client) -> None:
    a, b, token, schema = pair
    task_id = start_task(http, a.url, token, "nap", {"seconds": 600})
    assert get(http, b.url, token, task_id)["status"] == "working"
    answer = rpc(http, b.url, token, "tasks/cancel", {"taskId": task_id})
    assert "result" in answer, answer  # B asks A's runner to stop (A holds the lease)
    cancelled = poll(http, b.url, token, task_id, timeout=10)  # A's runner notices B's request
    assert cancelled["status"] == "cancelled" and "result" not in cancelled
    assert get(http, a.url, token, task_id)["status"] == "cancelled"
    assert schema.rows("SELECT tool, pid FROM replica_runs WHERE task_id = %s", (task_id,)) == [("nap", a.proc.pid)]


def test_a_handshake_session_from_a_is_served_by_b(pair: Any, http: httpx.Client) -> None:
    a, b, token, _ = pair
    headers = {"content-type": "application/json", "accept": "application/json", "authorization": f"Bearer {token}"}
    init = http.post(a.url, headers=headers, content=orjson.dumps(request(1, "initialize", {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "replicas", "version": "0"}})))
    assert init.status_code == 200, init.text
    session = init.headers["mcp-session-id"]
    in_session = {**headers, "mcp-session-id": session, "mcp-protocol-version": LEGACY}
    ready = http.post(a.url, headers=in_session, content=orjson.dumps({"jsonrpc": "2.0",
                                                                        "method": "notifications/initialized"}))
    assert ready.status_code == 202
    for replica, id_ in ((b, 2), (a, 3), (b, 4)):
        resp = http.post(replica.url, headers=in_session, content=orjson.dumps(request(id_, "tools/call", {
            "name": "incident.search", "arguments": {"service": "payments"}})))
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/json"), resp.text
        message = orjson.loads(resp.content)
        assert message["id"] == id_ and message["result"]["structuredContent"] == {
            "service": "payments", "count": 2, "tenant": "acme"}
    # another principal's token cannot use it on either replica; an unknown session is 404 on both
    for replica in (a, b):
        stranger = {**in_session, "authorization": "Bearer not-a-token"}
        assert http.post(replica.url, headers=stranger, content=orjson.dumps(request(5, "tools/list", {}))
                         ).status_code == 401
        unknown = {**in_session, "mcp-session-id": "s" + _key()}
        assert http.post(replica.url, headers=unknown, content=orjson.dumps(request(6, "tools/list", {}))
                         ).status_code == 404


def test_a_request_state_sealed_by_a_is_redeemed_once_on_b(pair: Any, http: httpx.Client) -> None:
    a, b, token, schema = pair
    args = {"name": "incident.escalate", "arguments": {"incidentId": "INC-1003"}}
    first = rpc(http, a.url, token, "tools/call", args)["result"]
    assert first["resultType"] == "input_required" and set(first["inputRequests"]) == {"escalation"}
    answer = {"escalation": {"action": "accept", "content": {"severity": "P1", "reason": "replica test"}}}
    done = rpc(http, b.url, token, "tools/call", {**args, "inputResponses": answer,
                                                  "requestState": first["requestState"]})["result"]
    assert done["structuredContent"] == {"incidentId": "INC-1003", "previousSeverity": "P3", "severity": "P1"}
    for replica in (a, b):  # single use, whichever replica sees it again
        again = rpc(http, replica.url, token, "tools/call", {**args, "inputResponses": answer,
                                                             "requestState": first["requestState"]})
        assert again["error"]["code"] == -32602, again
    assert schema.rows("SELECT severity FROM incidents WHERE tenant = 'acme' AND incident_id = 'INC-1003'") == [("P1",)]


def test_shared_audit_key_metrics_and_readiness(pair: Any, http: httpx.Client) -> None:
    a, b, token, schema = pair
    arguments = {"service": "checkout", "includeLinks": True}
    for replica in (a, b):
        call(http, replica.url, token, "incident.search", arguments)
    rows = schema.rows("SELECT fields FROM audit_events WHERE kind = 'tool.called' AND tool = 'incident.search'")
    hashes = {orjson.loads(bytes(r[0]))["argHash"] for r in rows
              if orjson.loads(bytes(r[0]))["argKeys"] == ["service", "includeLinks"]}
    assert len(hashes) == 1  # one key for every replica: the same arguments hash alike
    completed = schema.rows("SELECT COUNT(*) FROM tasks WHERE status = 'completed'")[0][0]
    for replica in (a, b):
        assert http.get(f"{replica.base}/healthz").status_code == 200
        assert http.get(f"{replica.base}/readyz").json() == {"status": "ready"}
        text = http.get(f"{replica.base}/metrics").text
        assert f'truecall_tasks{{status="completed"}} {float(completed)}' in text  # the shared truth
    assert 'truecall_tool_calls_total{outcome="ok",tool="incident.search"}' in http.get(f"{b.base}/metrics").text


# -- a replica dies mid-task ---------------------------------------------------------------------------------

PLAN_A = ["none", "hang", "delay", "none", "hang", "delay"]
KEYS_A = [f"kill-{i}-{fault}" for i, fault in enumerate(PLAN_A)]
# By key: A's six jobs run at once and reach its queue in any order.
FAULTS_A = {"keys": dict(zip(KEYS_A, PLAN_A)), "hang": {"at": "after_claim"}, "delay": {"ms": 600_000}}
EXPECTED = {"none": "success", "hang": "outcome_unknown", "delay": "dependency_unavailable"}
STATE_BEFORE = {"none": "done", "hang": "claimed", "delay": "queued"}


class AfterTheKill:
    """What one run recorded, phase by phase: replica A runs six desk jobs (two of each fault), a
    generic task and an elicitation; a third replica joins while A lives; A is SIGKILLed; B settles
    A's tasks; reconcile runs through B; three keys are retried through B.  The tests below each check
    one promise against this record (the run is module-scoped: PostgreSQL and three processes once)."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.on_a: dict[str, str] = {}
        self.nap_a = self.survey_a = ""
        #: while A lived, as a newly joined replica C and B saw A's tasks
        self.seen_while_alive: dict[str, str] = {}
        self.ended: dict[str, dict[str, Any]] = {}
        self.settled_after: dict[str, float] = {}
        #: per key, after B settled A's tasks and before reconcile: (tickets, dispatch states, outbox rows)
        self.truth_after_kill: dict[str, tuple[list[str], list[str], int]] = {}
        self.b_own: dict[str, Any] = {}
        self.a_pid = self.b_pid = 0
        self.runs: list[Any] = []
        self.per_task: list[Any] = []
        self.per_task_expected: list[str] = []
        self.nap_b = ""
        self.duplicate_keys: list[Any] = []
        self.reconciled: dict[str, Any] = {}
        self.truth_after_reconcile: dict[str, tuple[list[str], list[str], str]] = {}
        self.retried: dict[str, tuple[dict[str, Any], list[str]]] = {}
        self.duplicates_after_retry: list[Any] = []
        self.unfinished: list[Any] = []


@pytest.fixture(scope="module")
def after_the_kill(tmp_path_factory: pytest.TempPathFactory) -> AfterTheKill:
    tmp_path = tmp_path_factory.mktemp("replica-kill")
    run = AfterTheKill()
    with pg_schema() as schema, replicas(tmp_path, schema, faults_a=FAULTS_A) as (a, b, token), \
            httpx.Client(timeout=10) as http:

        def dispatch_states(key: str) -> list[str]:
            return [r[0] for r in schema.rows("SELECT state FROM dispatches WHERE tenant = 'acme' AND "
                                              "idempotency_key = %s ORDER BY created_at", (key,))]

        def tickets(key: str) -> list[str]:
            return [r[0] for r in schema.rows("SELECT ticket_id FROM tickets WHERE tenant = 'acme' AND "
                                              "idempotency_key = %s", (key,))]

        run.a_pid, run.b_pid = a.proc.pid, b.proc.pid
        run.keys = keys = KEYS_A
        run.on_a = on_a = {key: start_task(http, a.url, token, "incident.handle", {
            "incidentId": "INC-1001", "idempotencyKey": key}) for key in keys}
        run.nap_a = start_task(http, a.url, token, "nap", {"seconds": 600})
        run.survey_a = start_task(http, a.url, token, "survey", {})
        on_b = start_task(http, b.url, token, "incident.handle", {"incidentId": "INC-1002", "idempotencyKey": "on-b"})
        run.nap_b = nap_b = start_task(http, b.url, token, "nap", {"seconds": 0.2})  # B then runs nothing:
        # only its idle sweeper can notice A's death
        wait_until(lambda: all((dispatch_states(k) or ["-"])[-1] == STATE_BEFORE[f] for k, f in zip(keys, PLAN_A)),
                   40, "every job to reach its fault point")  # returns as soon as they have
        poll(http, b.url, token, run.survey_a, until=("input_required",))
        # A is alive: however long its tasks take, B (sweeping for orphans all along) leaves them alone,
        # and so does a third replica starting now (a rolling deploy)
        joined_at = time.monotonic()
        with served(tmp_path / "c", APP, "--token-file", str(tmp_path / "tokens.json"), env=a.extra["env"],
                    startup_timeout=30) as c:
            time.sleep(max(0.0, LEASE_S * 1.25 - (time.monotonic() - joined_at)))
            for key in keys:
                run.seen_while_alive[key] = get(http, c.url, token, on_a[key])["status"]
            run.seen_while_alive["nap"] = get(http, c.url, token, run.nap_a)["status"]
            run.seen_while_alive["survey"] = get(http, b.url, token, run.survey_a)["status"]

        os.kill(a.proc.pid, signal.SIGKILL)
        assert a.proc.wait(timeout=10) == -signal.SIGKILL
        killed_at = time.monotonic()
        for task_id in [*on_a.values(), run.nap_a, run.survey_a]:
            run.ended[task_id] = poll(http, b.url, token, task_id, timeout=LEASE_S * 5)
            run.settled_after[task_id] = time.monotonic() - killed_at
        for key in keys:
            found = tickets(key)
            outbox = schema.rows("SELECT COUNT(*) FROM notifications_outbox WHERE ticket_id = %s",
                                 (found[0],))[0][0] if found else 0
            run.truth_after_kill[key] = (found, dispatch_states(key), outbox)
        run.b_own = {"handle": poll(http, b.url, token, on_b), "nap": poll(http, b.url, token, nap_b)}

        run.runs = schema.rows("SELECT task_id, pid FROM replica_runs")
        run.per_task = schema.rows("SELECT task_id, COUNT(*), COUNT(DISTINCT dispatch_id) FROM handle_requests "
                                   "GROUP BY task_id")
        run.per_task_expected = sorted([*on_a.values(), on_b])
        run.duplicate_keys = schema.rows("SELECT idempotency_key FROM tickets GROUP BY tenant, idempotency_key "
                                         "HAVING COUNT(*) > 1")

        # the claims A's dead worker held expire; reconcile (through B) fences them
        run.reconciled = call(http, b.url, token, "incident.reconcile", {})["structuredContent"]
        for key, fault in zip(keys, PLAN_A):
            if fault == "hang":
                run.truth_after_reconcile[key] = (tickets(key), dispatch_states(key),
                                                  kind(get(http, b.url, token, on_a[key])))
        # retrying through B with the same keys
        for key in keys[:3]:
            again = poll(http, b.url, token, start_task(http, b.url, token, "incident.handle", {
                "incidentId": "INC-1001", "idempotencyKey": key}))
            run.retried[key] = (again, tickets(key))
        run.duplicates_after_retry = schema.rows("SELECT COUNT(*) FROM tickets GROUP BY tenant, idempotency_key "
                                                 "HAVING COUNT(*) > 1")
        run.unfinished = schema.rows("SELECT COUNT(*) FROM tasks WHERE status IN ('working', 'input_required')")
    return run


def test_live_leases_are_never_orphans(after_the_kill: AfterTheKill) -> None:
    """While A lives, neither B (sweeping all along) nor a replica joining late takes its tasks."""
    run = after_the_kill
    for key, fault in zip(run.keys, PLAN_A):
        assert run.seen_while_alive[key] == ("completed" if fault == "none" else "working"), (key, run.seen_while_alive)
    assert run.seen_while_alive["nap"] == "working" and run.seen_while_alive["survey"] == "input_required"


def test_no_task_is_settled_while_the_dead_replicas_lease_could_be_held(after_the_kill: AfterTheKill) -> None:
    run = after_the_kill  # and none is stuck: the fixture polled each to its end within 5 leases
    for key, fault in zip(run.keys, PLAN_A):
        if fault != "none":
            assert run.settled_after[run.on_a[key]] > LEASE_S / 2 - 0.2, run.settled_after


@pytest.mark.parametrize("fault", sorted(EXPECTED))
def test_each_desk_task_of_the_dead_replica_ends_honestly(after_the_kill: AfterTheKill, fault: str) -> None:
    """Terminal, with an honest status, and the ticket table agrees (two jobs met each fault)."""
    run = after_the_kill
    for key in [k for k, f in zip(run.keys, PLAN_A) if f == fault]:
        task = run.ended[run.on_a[key]]
        assert task["status"] == "completed" and kind(task) == EXPECTED[fault], (fault, task)
        found, states, outbox = run.truth_after_kill[key]
        if fault == "none":
            facts = task["result"]["structuredContent"]
            assert found == [facts["ticketId"]] and facts["notified"] is True and outbox == 1
        elif fault == "delay":  # the job died queued in A's memory: withdrawn, nothing written
            assert found == [] and states == ["abandoned"]
            assert "Nothing was written" in task["result"]["structuredContent"]["error"]["message"]
        else:  # A's worker held the job when A died: unknown, and said so
            error = task["result"]["structuredContent"]["error"]
            assert found == [] and states == ["claimed"]
            assert error["reference"] == key and "reconcile" in error["check"]


def test_the_generic_tasks_of_the_dead_replica_end_honestly(after_the_kill: AfterTheKill) -> None:
    run = after_the_kill
    generic = run.ended[run.nap_a]["result"]
    assert generic["isError"] is True and generic["structuredContent"]["error"]["kind"] == "outcome_unknown"
    survey = run.ended[run.survey_a]
    assert survey["status"] == "cancelled" and "result" not in survey


def test_the_surviving_replicas_own_work_is_undisturbed(after_the_kill: AfterTheKill) -> None:
    run = after_the_kill
    assert kind(run.b_own["handle"]) == "success"
    assert run.b_own["nap"]["result"]["structuredContent"]["pid"] == run.b_pid


def test_every_task_ran_exactly_once(after_the_kill: AfterTheKill) -> None:
    """One run per task, one request and one dispatch per task, at most one ticket per key."""
    run = after_the_kill
    assert sorted(run.runs) == sorted([(run.nap_a, run.a_pid), (run.survey_a, run.a_pid),
                                       (run.nap_b, run.b_pid)])
    assert sorted(r[0] for r in run.per_task) == run.per_task_expected
    assert all(r[1] == 1 and r[2] == 1 for r in run.per_task), run.per_task
    assert all(len(states) == 1 for _, states, _ in run.truth_after_kill.values())
    assert run.duplicate_keys == []


def test_reconcile_fences_the_claims_the_dead_worker_held(after_the_kill: AfterTheKill) -> None:
    """Nothing happened, the dispatch is abandoned, and the task's result is never rewritten."""
    run = after_the_kill
    settled = {s["taskId"]: s["outcome"] for s in run.reconciled["settled"]}
    hung = [run.on_a[k] for k, f in zip(run.keys, PLAN_A) if f == "hang"]
    assert settled == {t: "nothing_happened" for t in hung} and run.reconciled["pending"] == []
    for key, (found, states, result_kind) in run.truth_after_reconcile.items():
        assert states == ["abandoned"] and found == [] and result_kind == "outcome_unknown", key


def test_a_retry_through_the_survivor_writes_one_ticket_per_key(after_the_kill: AfterTheKill) -> None:
    run = after_the_kill
    for key, fault in zip(run.keys[:3], PLAN_A[:3]):
        again, found = run.retried[key]
        assert kind(again) == "success" and again["result"]["structuredContent"]["replayed"] is (fault == "none")
        assert found == [again["result"]["structuredContent"]["ticketId"]]
    assert run.duplicates_after_retry == []
    assert run.unfinished == [(0,)]


# -- rotation of the sealing key (in process) -----------------------------------------------------------------


def test_state_key_rotation_keeps_old_states_valid_until_the_old_key_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    from truecall.protocol._sealing import InvalidRequestState, Sealer

    old, new = _key(), _key()
    binding = {"sub": "ops@acme", "ten": "acme", "m": "tools/call", "n": "t", "h": "x"}
    monkeypatch.setenv("TRUECALL_STATE_KEYS", old)
    before = Sealer.from_env()
    monkeypatch.setenv("TRUECALL_STATE_KEYS", f"{new},{old}")
    during = Sealer.from_env()
    monkeypatch.setenv("TRUECALL_STATE_KEYS", new)
    after = Sealer.from_env()
    issued_before, issued_during = before.seal(binding), during.seal(binding)
    assert during.open(issued_before, binding)["sub"] == "ops@acme"  # grace: the old key still opens
    assert after.open(issued_during, binding)["sub"] == "ops@acme"
    with pytest.raises(InvalidRequestState):
        after.open(issued_before, binding)  # the old key is gone: its states are refused
    with pytest.raises(InvalidRequestState):
        before.open(issued_during, binding)  # a replica not yet rotated cannot open the new key's states


# -- fenced leases: a replica that froze past its lease never writes afterwards -------------------------------


class Truth:
    """The rows of one database, whichever backend (``?`` placeholders)."""

    def __init__(self, backend: str, target: "PgSchema | Path") -> None:
        self.backend, self.target = backend, target

    @property
    def url(self) -> str:
        return self.target.url if isinstance(self.target, PgSchema) else str(self.target)

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if isinstance(self.target, PgSchema):
            return self.target.rows(sql.replace("?", "%s"), params)
        conn = sqlite3.connect(self.target, timeout=30)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    @contextlib.contextmanager
    def locked(self, table: str) -> Iterator[None]:
        """Another session holds a write lock until the block ends: ``LOCK TABLE … IN EXCLUSIVE MODE`` on
        PostgreSQL (the issue's reproduction), the file's write lock (``BEGIN EXCLUSIVE``) on SQLite."""
        if isinstance(self.target, PgSchema):
            conn = admin()
            try:
                conn.execute("BEGIN")
                conn.execute(f'LOCK TABLE "{self.target.name}".{table} IN EXCLUSIVE MODE')
                yield
            finally:
                conn.execute("ROLLBACK")
                conn.close()
        else:
            lite = sqlite3.connect(self.target, timeout=30, isolation_level=None)
            try:
                lite.execute("BEGIN EXCLUSIVE")
                yield
            finally:
                lite.execute("ROLLBACK")
                lite.close()

    def nobody_writes(self) -> bool:
        """Whether no connection holds the write lock right now (always true on PostgreSQL, whose server ends
        a frozen process's transaction after ``idle_in_transaction_session_timeout``; see freeze())."""
        return nobody_writes(self.target)

    def tickets(self, key: str) -> list[str]:
        return [r[0] for r in self.rows("SELECT ticket_id FROM tickets WHERE tenant = 'acme' AND idempotency_key = ?",
                                        (key,))]

    def dispatch_states(self, key: str) -> list[str]:
        return [r[0] for r in self.rows("SELECT state FROM dispatches WHERE tenant = 'acme' AND idempotency_key = ? "
                                        "ORDER BY created_at", (key,))]

    def audited(self, kind: str) -> list[dict[str, Any]]:
        return [orjson.loads(bytes(r[0])) for r in self.rows("SELECT fields FROM audit_events WHERE kind = ?",
                                                             (kind,))]


@contextlib.contextmanager
def a_database(backend: str, root: Path) -> Iterator[Truth]:
    if backend == "postgresql":
        with pg_schema() as schema:
            yield Truth(backend, schema)
    else:
        (root / "common").mkdir()
        yield Truth(backend, root / "common" / "desk.db")


def agrees_with_rows(truth: Truth, key: str, seen: dict[str, Any]) -> None:
    """What the client was told for ``key`` is what the rows say, now and for good."""
    result = seen.get("result") or {}
    facts = result.get("structuredContent") or {}
    tickets, states = truth.tickets(key), truth.dispatch_states(key)
    if seen.get("status") == "cancelled":
        assert tickets == [] and set(states) <= {"abandoned", "failed"}, (seen, tickets, states)
    elif not result.get("isError"):
        assert tickets == [facts["ticketId"]], (seen, tickets)
    elif facts["error"]["kind"] == "dependency_unavailable":  # "nothing was written"
        assert tickets == [] and set(states) <= {"abandoned", "failed"}, (seen, tickets, states)
        assert "Nothing was written" in facts["error"]["message"]
    else:  # it may have happened: the client was told so, with the reference to check
        assert facts["error"]["kind"] == "outcome_unknown" and facts["error"]["reference"] == key, seen
        assert len(tickets) <= 1


def timed_get(http: httpx.Client, url: str) -> float:
    began = time.monotonic()
    assert http.get(url).status_code == 200
    return time.monotonic() - began


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_lock_held_past_the_lease_never_turns_nothing_written_into_a_ticket(backend: str, tmp_path: Path) -> None:
    """Issue 20, case 1: ``LOCK TABLE handle_requests IN EXCLUSIVE MODE`` from another session, held past the
    lease, while ``incident.handle`` runs on A.  A neither freezes (its health endpoint and other calls answer
    at once) nor tells the client anything the rows contradict once the lock is gone."""
    with a_database(backend, tmp_path) as truth, replicas(tmp_path, truth.url) as (a, b, token), \
            httpx.Client(timeout=20) as http:
        key = f"locked-{backend}"
        with truth.locked("handle_requests"):
            began = time.monotonic()
            answer = rpc(http, a.url, token, "tools/call", {"name": "incident.handle", "arguments": {
                "incidentId": "INC-1001", "idempotencyKey": key}})
            waits = []
            while time.monotonic() - began < LEASE_S * 1.5:  # the lock outlives A's lease
                waits.append(timed_get(http, f"{a.base}/healthz"))
                waits.append(timed_get(http, f"{b.base}/healthz"))
                time.sleep(0.2)
        print(f"{backend}: health answers during the lock: max {max(waits) * 1000:.0f} ms over {len(waits)}")
        assert max(waits) < 2.0, waits  # never the lock's length: no replica hangs on it
        assert "result" in answer, answer
        seen = answer["result"]
        if seen.get("resultType") == "task":
            seen = poll(http, b.url, token, seen["taskId"], timeout=LEASE_S * 5)
        else:  # answered at once (the database refused before anything was accepted)
            seen = {"status": "completed", "result": seen}
        time.sleep(1.5)  # anything A still had in hand has had time to write by now
        agrees_with_rows(truth, key, seen)
        # and A serves on: the same key again gives one truthful answer, and at most one ticket
        again = poll(http, a.url, token, start_task(http, a.url, token, "incident.handle", {
            "incidentId": "INC-1001", "idempotencyKey": key}))
        assert kind(again) == "success"
        assert truth.tickets(key) == [again["result"]["structuredContent"]["ticketId"]]


def freeze(truth: Truth, pid: int) -> None:
    """SIGSTOP ``pid`` at a moment it holds no write lock.  SQLite cannot take a lock away from a live
    process: one stopped inside a write (a lease renewal, a journal load: a few milliseconds each, longer on a
    loaded machine) would keep every other writer on the file waiting until it runs again — no takeover is then
    possible, which is SQLite's limit (docs/guide/storage.md), not the lease fencing this test is about.  What
    the other replica answers meanwhile is test_a_request_meeting_a_locked_database_is_told_to_retry's."""
    for _ in range(200):
        os.kill(pid, signal.SIGSTOP)
        if truth.nobody_writes():
            return
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.005)
    raise AssertionError("the replica held the write lock at every one of 200 tries")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_request_meeting_a_locked_database_is_told_to_retry(backend: str, tmp_path: Path) -> None:
    """A protocol request (here ``tasks/cancel``) whose database stays locked past its bounded wait is answered
    -32603 with HTTP 503, ``retryable`` and a message naming the outage — never a bare "Internal error" — and
    changes nothing: once the lock is gone the same request succeeds."""
    with a_database(backend, tmp_path) as truth, replicas(tmp_path, truth.url) as (a, b, token), \
            httpx.Client(timeout=20) as http:
        nap = start_task(http, a.url, token, "nap", {"seconds": 600})
        with truth.locked("tasks"):
            resp = modern_call(http, b.url, 7001, "tasks/cancel", {"taskId": nap, "_meta": meta(caps=CAPS)},
                               token=token, name=nap)
        assert resp.status_code == 503, resp.text
        error = orjson.loads(resp.content)["error"]
        assert error["code"] == -32603 and error["data"] == {"retryable": True}, error
        assert error["message"].startswith("Service unavailable: the database "), error
        assert "\n" not in error["message"] and "sqlite3" not in error["message"].lower(), error
        assert get(http, b.url, token, nap)["status"] == "working"  # nothing changed
        assert "result" in rpc(http, b.url, token, "tasks/cancel", {"taskId": nap})
        assert poll(http, b.url, token, nap)["status"] == "cancelled"
        wait_until(lambda: truth.audited("protocol.unavailable"), 5, "B's record to reach the table")  # (its journal)
        assert [e["method"] for e in truth.audited("protocol.unavailable")] == ["tasks/cancel"]


# A's upstream: two jobs wait in the queue (delay), two sit claimed (stall); each outlives the freeze.
FREEZE_STAGES = {"cancel-queued": "queued", "sweep-queued": "queued", "sweep-claimed": "claimed",
                 "cancel-claimed": "claimed"}


def freeze_faults(backend: str) -> dict[str, Any]:
    """By key (the four jobs run at once and reach A's queue in any order): queued ones delayed, claimed ones
    stalled."""
    keys = {f"frozen-{stage}-{backend}": "delay" if want == "queued" else "stall"
            for stage, want in FREEZE_STAGES.items()}
    return {"keys": keys, "delay": {"ms": 2500}, "stall": {"ms": 2500}}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_replica_frozen_past_its_lease_never_writes_after_the_takeover(backend: str, tmp_path: Path) -> None:
    """Issue 20, case 2: A holds tasks (jobs queued and claimed in its upstream, a plain task tool napping), is
    SIGSTOPped past its lease; B cancels some, sweeps the rest; A is resumed (SIGCONT).  A writes nothing after
    the takeover (no claim, no ticket, no result), says so in the audit trail, and serves on; B answered within
    its normal latency all along; every outcome the client saw agrees with the rows."""
    with a_database(backend, tmp_path) as truth, replicas(tmp_path, truth.url, faults_a=freeze_faults(backend)) as (
            a, b, token), httpx.Client(timeout=20) as http:
        keys = {stage: f"frozen-{stage}-{backend}" for stage in FREEZE_STAGES}
        tasks = {stage: start_task(http, a.url, token, "incident.handle", {"incidentId": "INC-1001",
                                                                          "idempotencyKey": key})
                 for stage, key in keys.items()}
        nap = start_task(http, a.url, token, "nap", {"seconds": 600})
        wait_until(lambda: all(truth.dispatch_states(keys[s]) == [want] for s, want in FREEZE_STAGES.items()),
                   10, "every job to reach its stage")
        normal = sorted(timed_get(http, f"{b.base}/healthz") for _ in range(5))[2]
        freeze(truth, a.proc.pid)
        try:
            frozen_at = time.monotonic()
            during = []
            while time.monotonic() - frozen_at < LEASE_S + 1.0:  # A's lease runs out
                began = time.monotonic()
                call(http, b.url, token, "incident.search", {"service": "payments"})
                during.append(time.monotonic() - began)
                during.append(timed_get(http, f"{b.base}/readyz"))
                time.sleep(0.1)
            for stage in ("cancel-queued", "cancel-claimed"):
                assert "result" in rpc(http, b.url, token, "tasks/cancel", {"taskId": tasks[stage]})
            ended = {stage: poll(http, b.url, token, task_id, timeout=LEASE_S * 4) for stage, task_id in tasks.items()}
            napped = poll(http, b.url, token, nap, timeout=LEASE_S * 4)
        finally:
            os.kill(a.proc.pid, signal.SIGCONT)
        print(f"{backend}: B's latency while A was frozen: max {max(during) * 1000:.0f} ms over {len(during)} "
              f"(normal {normal * 1000:.1f} ms)")
        assert max(during) < 1.5, during  # never a wait on A's locks: B answers as usual
        # A wakes: its queued jobs' delays and its claimed jobs' stalls are over, its heartbeat runs
        wait_until(lambda: len(truth.audited("task.lease_lost")) >= len(tasks) + 1, 15,
                   "A to notice it lost every lease")
        wait_until(lambda: len(truth.audited("upstream.lease_lost")) >= 2, 10, "A's workers to be fenced")
        time.sleep(0.5)
        for stage, key in keys.items():
            seen = ended[stage]
            agrees_with_rows(truth, key, seen)
            assert truth.tickets(key) == [], (stage, seen)  # nothing written after the takeover
            if FREEZE_STAGES[stage] == "claimed":  # in flight at the upstream: unknown, never cancelled
                assert seen["status"] == "completed" and kind(seen) == "outcome_unknown", (stage, seen)
                assert truth.dispatch_states(key) == ["claimed"]
            else:
                assert seen["status"] == "cancelled" or kind(seen) == "dependency_unavailable", (stage, seen)
                assert truth.dispatch_states(key) == ["abandoned"]
            # the settled result stands: A's late write of its own outcome was refused
            assert get(http, b.url, token, tasks[stage]) == get(http, a.url, token, tasks[stage])
        assert napped["status"] == "completed" and kind(napped) == "outcome_unknown"
        lost = {e["taskId"] for e in truth.audited("task.lease_lost")}
        assert lost >= {*tasks.values(), nap}
        recovered = {e["taskId"]: e for e in truth.audited("task.recovered")}
        assert set(recovered) >= {*tasks.values(), nap}  # every settlement has its own record
        assert all(e["runner"] != "" for e in recovered.values())
        # A serves on, and its new work is its own again
        fresh = poll(http, a.url, token, start_task(http, a.url, token, "nap", {"seconds": 0}))
        assert fresh["result"]["structuredContent"]["pid"] == a.proc.pid
        assert truth.rows("SELECT COUNT(*) FROM tasks WHERE status IN ('working', 'input_required')") == [(0,)]


def test_a_process_starting_on_a_shared_sqlite_file_leaves_the_live_ones_tasks_alone(tmp_path: Path) -> None:
    """Several processes on one SQLite file (``--workers``): start-up recovery takes over only the tasks of
    runners that are gone, never those of a process that still runs (its lease decides)."""
    (tmp_path / "common").mkdir()
    db = str(tmp_path / "common" / "desk.db")
    with replicas(tmp_path, db) as (a, b, token), httpx.Client(timeout=20) as http:
        nap = start_task(http, a.url, token, "nap", {"seconds": 600})
        survey = start_task(http, a.url, token, "survey", {})
        poll(http, b.url, token, survey, until=("input_required",))
        with served(tmp_path / "c", APP, "--token-file", str(tmp_path / "tokens.json"), env=a.extra["env"],
                    startup_timeout=30) as c:
            assert get(http, c.url, token, nap)["status"] == "working"
            assert get(http, c.url, token, survey)["status"] == "input_required"
        answer = {"name": {"action": "accept", "content": {"name": "Ada"}}}
        assert "result" in rpc(http, b.url, token, "tasks/update", {"taskId": survey, "inputResponses": answer})
        done = poll(http, b.url, token, survey)
        assert done["result"]["structuredContent"] == {"name": "Ada", "pid": a.proc.pid}  # A's work, undisturbed
        assert "result" in rpc(http, b.url, token, "tasks/cancel", {"taskId": nap})
        assert poll(http, b.url, token, nap)["status"] == "cancelled"  # A stopped it itself (it held the lease)
        lost = Truth("sqlite", Path(db)).audited("task.lease_lost")
        assert lost == []
