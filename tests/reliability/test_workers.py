"""``truecall serve --http --workers 2``: what holds across replicas holds across workers, on SQLite and PostgreSQL.

One ``truecall serve`` process (the supervisor) binds the port and runs two worker processes on it.
A keep-alive connection stays with the worker that accepted it, so a test opens connections until it
holds one to each worker (the ``whoami`` tool of ``tests/workers_app.py`` answers the pid) and then
drives the same work through both.  The supervisor is given no ``TRUECALL_STATE_KEYS`` nor
``TRUECALL_AUDIT_KEY``: sharing them between its workers is its job.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import orjson
import pytest

from http_support import HOST, LEGACY, free_port, meta, modern_headers, request, served, wait_ready
from pg_support import BACKENDS, wait_until
from test_replicas import (LEASE_S, Listener, Truth, _key, a_database, call, get, kind, poll, rpc, start_task,
                           task_notes)
from truecall import hash_token
from truecall.cli._workers import worker_pids
from truecall.audit._journal import unloaded_bytes

from _paths import TESTS

APP = f"{TESTS / 'workers_app.py'}:build"


@contextlib.contextmanager
def workers(root: Path, db: str, count: int = 2) -> Iterator[tuple[Any, str]]:
    """``truecall serve --workers COUNT`` on ``db``; yields (the served supervisor, the operator's token)."""
    token = "tc_" + _key()
    root.mkdir(parents=True, exist_ok=True)
    token_file = root / "tokens.json"
    token_file.write_bytes(orjson.dumps({"tokens": [{
        "sha256": hash_token(token), "subject": "ops@acme", "tenant": "acme",
        "scopes": ["incidents:read", "incidents:write"]}]}))
    env = {"TRUECALL_DB": db, "TRUECALL_TASK_LEASE_S": str(LEASE_S), "TRUECALL_DESK_FAULTS": "",
           "TRUECALL_STATE_KEYS": "", "TRUECALL_AUDIT_KEY": ""}  # the supervisor makes them
    with served(root, APP, "--token-file", str(token_file), "--workers", str(count), env=env,
                startup_timeout=30, stop_timeout=20) as server:
        wait_until(lambda: len(worker_pids(server.proc.pid)) == count, 30, f"{count} workers")
        yield server, token


#: pids answered by every acknowledged ``whoami`` call of the running test (the audit must hold each once).
WHOAMI: list[int] = []


def whoami(http: httpx.Client, url: str, token: str) -> int:
    pid: int = call(http, url, token, "whoami", {})["structuredContent"]["pid"]
    WHOAMI.append(pid)
    return pid


def one_client_per_worker(url: str, token: str, count: int = 2) -> dict[int, httpx.Client]:
    """Keep-alive clients, one held to each worker (new connections land on whichever worker accepts first)."""
    clients: dict[int, httpx.Client] = {}
    for _ in range(200):
        client = httpx.Client(timeout=15)
        pid = whoami(client, url, token)
        if pid in clients:
            client.close()
        else:
            clients[pid] = client
            if len(clients) == count:
                return clients
    for client in clients.values():
        client.close()
    raise AssertionError(f"200 connections all landed on {sorted(clients)}")


@contextlib.contextmanager
def two_workers(backend: str, tmp_path: Path) -> Iterator[tuple[Truth, Any, str, httpx.Client, httpx.Client, int, int]]:
    with a_database(backend, tmp_path) as truth, workers(tmp_path / "serve", truth.url) as (server, token):
        clients = one_client_per_worker(server.url, token)
        (pid_a, a), (pid_b, b) = sorted(clients.items())
        try:
            assert sorted(clients) == worker_pids(server.proc.pid)
            yield truth, server, token, a, b, pid_a, pid_b
        finally:
            a.close()
            b.close()


def same_worker(http: httpx.Client, url: str, token: str, pid: int) -> None:
    assert whoami(http, url, token) == pid  # the connection did not move


@pytest.mark.parametrize("backend", BACKENDS)
def test_tasks_sessions_and_sealed_state_cross_workers(backend: str, tmp_path: Path) -> None:
    with two_workers(backend, tmp_path) as (truth, server, token, a, b, pid_a, pid_b):
        url = server.url
        # a task accepted on A is polled, answered and finished through B
        task_id = start_task(a, url, token, "survey", {})
        waiting = poll(b, url, token, task_id, until=("input_required",))
        assert set(waiting["inputRequests"]) == {"name"}
        # watched through whichever worker the listen stream's connection reached (A's work, any worker's stream)
        listener = Listener(url, token, [task_id], lambda msgs: "completed" in task_notes(msgs, task_id))
        listener.start()
        wait_until(lambda: task_notes(listener.messages, task_id), 10, "the listen stream to report the task")
        answer = {"name": {"action": "accept", "content": {"name": "Ada"}}}
        assert "result" in rpc(b, url, token, "tasks/update", {"taskId": task_id, "inputResponses": answer})
        done = poll(b, url, token, task_id)
        assert done["status"] == "completed" and done["result"]["structuredContent"] == {"name": "Ada", "pid": pid_a}
        listener.join(timeout=10)
        assert not listener.is_alive() and listener.error is None, listener.error
        notes = task_notes(listener.messages, task_id)
        assert notes[0] == "input_required" and notes[-1] == "completed"
        assert truth.rows("SELECT tool, pid FROM replica_runs WHERE task_id = ?", (task_id,)) == [("survey", pid_a)]

        # a task running on A is cancelled through B (A's runner sees B's request and stops)
        nap = start_task(a, url, token, "nap", {"seconds": 600})
        assert get(b, url, token, nap)["status"] == "working"
        assert "result" in rpc(b, url, token, "tasks/cancel", {"taskId": nap})
        cancelled = poll(a, url, token, nap, timeout=10)
        assert cancelled["status"] == "cancelled" and "result" not in cancelled

        # a handshake-era session negotiated on A serves requests on B, and back
        headers = {"content-type": "application/json", "accept": "application/json",
                   "authorization": f"Bearer {token}"}
        init = a.post(url, headers=headers, content=orjson.dumps(request(1, "initialize", {
            "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "workers", "version": "0"}})))
        assert init.status_code == 200, init.text
        in_session = {**headers, "mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
        assert a.post(url, headers=in_session, content=orjson.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"})).status_code == 202
        for http, id_ in ((b, 2), (a, 3), (b, 4)):
            resp = http.post(url, headers=in_session, content=orjson.dumps(request(id_, "tools/call", {
                "name": "whoami", "arguments": {}})))
            assert resp.status_code == 200, resp.text
            assert orjson.loads(resp.content)["result"]["structuredContent"] == {"pid": pid_b if http is b else pid_a}

        # requestState sealed by A opens on B (the supervisor's key), and only once, on either worker
        args = {"name": "incident.escalate", "arguments": {"incidentId": "INC-1003"}}
        first = rpc(a, url, token, "tools/call", args)["result"]
        assert first["resultType"] == "input_required", first
        answer = {"escalation": {"action": "accept", "content": {"severity": "P1", "reason": "workers test"}}}
        redeemed = rpc(b, url, token, "tools/call", {**args, "inputResponses": answer,
                                                     "requestState": first["requestState"]})["result"]
        assert redeemed["structuredContent"]["severity"] == "P1", redeemed
        for http in (a, b):
            again = rpc(http, url, token, "tools/call", {**args, "inputResponses": answer,
                                                         "requestState": first["requestState"]})
            assert again["error"]["code"] == -32602, again

        # the same arguments hash alike on both workers (one audit key, made by the supervisor)
        for http in (a, b):
            call(http, url, token, "incident.search", {"service": "checkout", "includeLinks": True})
        same_worker(a, url, token, pid_a)
        same_worker(b, url, token, pid_b)
        if backend == "sqlite":
            wait_until(lambda: unloaded_bytes(truth.url) == 0, 10, "the journals to be loaded")
        hashes = {f["argHash"] for f in truth.audited("tool.called") if f.get("argKeys") == ["service", "includeLinks"]}
        assert len(hashes) == 1, hashes


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_worker_killed_mid_task_is_restarted_and_its_task_settled(backend: str, tmp_path: Path) -> None:
    WHOAMI.clear()
    with two_workers(backend, tmp_path) as (truth, server, token, a, b, pid_a, pid_b):
        url = server.url
        nap = start_task(a, url, token, "nap", {"seconds": 600})
        survey = start_task(a, url, token, "survey", {})
        poll(b, url, token, survey, until=("input_required",))
        for _ in range(5):  # acknowledged, so journaled by A before its answers left
            same_worker(a, url, token, pid_a)
        os.kill(pid_a, signal.SIGKILL)
        killed_at = time.monotonic()
        restarted = wait_until(lambda: (lambda p: p if len(p) == 2 and pid_a not in p else None)(
            worker_pids(server.proc.pid)), 20, "the supervisor to start another worker")
        assert pid_b in restarted
        # never left working: the new worker settles them at start (SQLite: A's pid is gone) or, on PostgreSQL,
        # whichever worker sweeps first once A's lease has run out
        ended = {task_id: poll(b, url, token, task_id, timeout=LEASE_S * 6) for task_id in (nap, survey)}
        assert ended[nap]["status"] == "completed" and kind(ended[nap]) == "outcome_unknown", ended[nap]
        assert ended[survey]["status"] == "cancelled", ended[survey]
        print(f"{backend}: settled {time.monotonic() - killed_at:.1f}s after the kill")
        assert truth.rows("SELECT COUNT(*) FROM tasks WHERE status IN ('working', 'input_required')") == [(0,)]
        recovered = truth.audited("task.recovered")
        assert {r["taskId"] for r in recovered} == {nap, survey} and len(recovered) == 2
        # every call A acknowledged is in the table, once (its journal loaded by a survivor or its successor)
        if backend == "sqlite":
            wait_until(lambda: unloaded_bytes(truth.url) == 0, 10, "the dead worker's journal to be loaded")
            # A never closed its journal: the worker started in its place loaded it and deleted it
            journals = Path(truth.url + "-audit")
            assert not [p for p in os.listdir(journals) if f"-{pid_a}-" in p]
            assert {int(p.split("-")[1]) for p in os.listdir(journals)} <= set(restarted)  # one per live worker
        assert truth.rows("SELECT COUNT(*) FROM audit_events WHERE kind = 'tool.called' AND tool = 'whoami'"
                          ) == [(len(WHOAMI),)]
        # and the service goes on, on both workers
        same_worker(b, url, token, pid_b)
        with httpx.Client(timeout=10) as fresh:
            assert whoami(fresh, url, token) in restarted
        assert "was killed by SIGKILL" in server.stderr()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_graceful_stop_under_load_finishes_and_audits_every_acknowledged_call(backend: str, tmp_path: Path) -> None:
    with a_database(backend, tmp_path) as truth, workers(tmp_path / "serve", truth.url) as (server, token):
        acknowledged: list[tuple[int, float]] = []  # (pid, when the answer was complete)
        cut: list[str] = []  # an answer begun and not finished: must never happen
        refused: list[str] = []  # no answer at all once the stop began: allowed (never acknowledged)
        stop_sent = threading.Event()
        # a new connection per call: each lands on either worker, and the stop meets calls on both
        headers = {**modern_headers("tools/call", "pause", token=token), "connection": "close"}

        def load(n: int) -> None:
            body = orjson.dumps(request(n, "tools/call", {"name": "pause", "arguments": {"seconds": 0.3},
                                                          "_meta": meta()}))
            with httpx.Client(timeout=20) as http:
                while True:
                    try:
                        with http.stream("POST", server.url, headers=headers, content=body) as resp:
                            try:
                                data = resp.read()
                            except httpx.HTTPError as exc:
                                cut.append(f"{type(exc).__name__}: {exc}")
                                return
                    except httpx.HTTPError as exc:
                        if not stop_sent.is_set():
                            cut.append(f"before the stop: {type(exc).__name__}: {exc}")
                        refused.append(type(exc).__name__)
                        return
                    if resp.status_code != 200:
                        cut.append(f"{resp.status_code}: {data[:200]!r}")
                        return
                    acknowledged.append((orjson.loads(data)["result"]["structuredContent"]["pid"], time.monotonic()))

        threads = [threading.Thread(target=load, args=(n,), daemon=True) for n in range(8)]
        for thread in threads:
            thread.start()
        wait_until(lambda: cut or (len({pid for pid, _ in acknowledged}) == 2 and len(acknowledged) >= 16), 30,
                   "both workers to serve the load")
        assert cut == [], cut
        pids = worker_pids(server.proc.pid)
        stopped_at = time.monotonic()
        stop_sent.set()
        os.kill(server.proc.pid, signal.SIGTERM)
        assert server.proc.wait(timeout=30) == 0
        for thread in threads:
            thread.join(timeout=20)
        assert not any(t.is_alive() for t in threads)
        assert cut == [], cut
        finished_after = [pid for pid, at in acknowledged if at > stopped_at]
        assert finished_after, "no call was in flight when the stop began"
        for pid in pids:  # every worker is gone, none left behind
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        # every acknowledged call is in the table, exactly once
        if backend == "sqlite":
            assert unloaded_bytes(truth.url) == 0  # each worker loaded its journal as it stopped
        audited = truth.rows("SELECT COUNT(*) FROM audit_events WHERE kind = 'tool.called' AND tool = 'pause'")[0][0]
        assert audited == len(acknowledged), (audited, len(acknowledged), len(finished_after))


def test_sigkill_of_the_supervisor_leaves_no_worker(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "TRUECALL_DB": str(tmp_path / "desk.db")}
    cmd = [sys.executable, "-m", "truecall", "serve", "--http", "--host", HOST, "--port", str(port), "--workers", "2"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        pids = wait_until(lambda: (lambda p: p if len(p) == 2 else None)(worker_pids(proc.pid)), 30, "2 workers")
        assert wait_ready(proc, port, 30), "the workers never answered /healthz"  # refused until they listen
        proc.kill()
        proc.wait(timeout=10)

        def gone(pid: int) -> bool:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            with open(f"/proc/{pid}/stat", "rb") as f:  # a zombie (reaped by init shortly) is gone too
                return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"

        wait_until(lambda: all(gone(pid) for pid in pids), 20, "the workers to stop")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_workers_with_stdio_and_bad_counts_are_one_line_errors(tmp_path: Path) -> None:
    env = {**os.environ, "TRUECALL_DB": str(tmp_path / "desk.db")}
    for args, said in ((["--workers", "2"], "--workers is for --http"),
                       (["--http", "--workers", "0"], "--workers 0: a number of processes"),
                       (["--http", "--workers", "many"], "--workers many: a number of processes")):
        for entry in (["truecall"], ["truecall.cli"])[:1 if args[-1] != "2" else 2]:  # both CLIs parse it
            done = subprocess.run([sys.executable, "-m", *entry, "serve", *args], cwd=tmp_path, env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
            lines = done.stderr.decode().strip().splitlines()
            assert done.returncode == 2 and len(lines) == 1 and said in lines[0], (entry, args, done.stderr)


def test_a_bad_app_under_workers_is_said_once(tmp_path: Path) -> None:
    env = {**os.environ, "TRUECALL_DB": str(tmp_path / "desk.db")}
    done = subprocess.run([sys.executable, "-m", "truecall", "serve", "no_such_module:app", "--http", "--host", HOST,
                           "--port", str(free_port()), "--workers", "2"], cwd=tmp_path, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    lines = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "no module named 'no_such_module'" in lines[0], done.stderr
