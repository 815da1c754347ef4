"""Crash loop: SIGKILL a real desk at random moments, restart it, and check what survived.

    python stress/crashloop.py                 # 50 rounds (the acceptance figure), about 2-3 minutes
    python stress/crashloop.py --rounds 10     # the CI length (tests/reliability/test_crashloop.py)

One ``truecall serve --http`` (the incident desk, SQLite in a temporary directory) on
127.0.0.1.  Each round, six client threads fire 2026-07-28 requests at it concurrently:
``incident.search`` (plain calls), ``incident.handle`` (tasks, with the tasks extension;
a key whose call got no answer is retried with the same key in a later round) and
``tasks/get`` on the tasks they hold.  The upstream queue draws delays, stalls, errors,
lost acks and dropped jobs, so tasks are in every state when the process dies: after a
random delay the server is SIGKILLed (in some rounds the desk's own ``kill`` fault ends it
first, mid-task, with ``os._exit``; in others a process is also SIGKILLed while starting —
importing, migrating, settling orphans), then restarted on the same database.

Every answer a client received is written down: the JSON-RPC id of each acknowledged
``tools/call`` (a result, not an error), the task id of each task created, and every
task outcome seen.  Checked (exit status 1 when one breaks):

- after every kill: ``PRAGMA quick_check`` is ok; the tasks the dead process left
  ``working``/``input_required`` are all settled by the time the restarted server answers
  (the desk's SQLite mode recovers orphans at start-up);
- at the end (a last restart, claim leases expired, ``incident.reconcile`` run, a clean
  stop): ``PRAGMA integrity_check`` and ``foreign_key_check`` are clean; every
  acknowledged ``tools/call`` has its audit record, found by its ``requestId`` (with the
  same outcome; a task's ``task.created`` record with the same task id); no task is
  ``working`` or ``input_required``; every task outcome a client saw before a kill is the
  one stored now; and the ticket table agrees with every reported outcome — success ⇒ that
  ticket exists for the key (with its notification); ``dependency_unavailable`` ⇒ no ticket
  from that dispatch (which is withdrawn or failed); ``outcome_unknown`` ⇒ settled by
  reconcile, and the settlement agrees with the table; at most one ticket per key.

Only 127.0.0.1 is used; the server is stopped by its PID.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import itertools
import os
import random
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stress.common import terminate

HOST = "127.0.0.1"
MODERN = "2026-07-28"
TASKS_EXT = "io.modelcontextprotocol/tasks"
OPERATOR = "demo-acme-operator"
INCIDENTS = ("INC-1001", "INC-1002", "INC-1003")
TERMINAL = ("completed", "failed", "cancelled")


def _meta(caps: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": caps if caps is not None else {},
            "io.modelcontextprotocol/clientInfo": {"name": "truecall-crashloop", "version": "1"}}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


# -- the server process ---------------------------------------------------------------------------------


class DeskProcess:
    """``python -m truecall.cli serve --http`` on 127.0.0.1 in ``workdir``; stopped by its PID."""

    def __init__(self, workdir: Path, env: dict[str, str], db: str | None = None) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "TRUECALL_DB": db or str(self.workdir / "truecall.db"), **env}
        self.env.pop("TRUECALL_PRINCIPAL", None)
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.log = self.workdir / "server.log"

    def spawn(self) -> "DeskProcess":
        """Start the process without waiting for it to be ready."""
        self.port = free_port()
        cmd = [sys.executable, "-m", "truecall", "serve", "--http", "--host", HOST, "--port", str(self.port)]
        with open(self.log, "ab") as err:
            self.proc = subprocess.Popen(cmd, cwd=self.workdir, env=self.env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err)
        return self

    def start(self, timeout: float = 20.0) -> "DeskProcess":
        last = ""
        for _attempt in range(3):  # a probed port can be taken before the bind: retry another
            self.spawn()
            if self._wait_ready(timeout):
                return self
            last = self.log.read_text(errors="replace")[-2000:]
            self.stop()
        raise RuntimeError(f"truecall serve --http did not become ready: {last}")

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                conn = http.client.HTTPConnection(HOST, self.port, timeout=1.0)
                try:
                    conn.request("GET", "/healthz")
                    if conn.getresponse().status == 200:
                        return True
                finally:
                    conn.close()
            except OSError:
                pass
            time.sleep(0.02)
        return False

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> int | None:
        """SIGKILL by PID (nothing flushed, nothing closed); the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return self.proc.wait(timeout=10)

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM by PID (a clean shutdown), SIGKILL after ``timeout``."""
        return None if self.proc is None else terminate(self.proc, timeout)


# -- the wire -------------------------------------------------------------------------------------------


class ServerGone(Exception):
    """No answer: the connection failed or closed before a response arrived."""

    def __init__(self, why: str, rid: str = "", what: str = "") -> None:
        super().__init__(why)
        self.rid, self.what = rid, what


class Wire:
    """One keep-alive HTTP connection speaking 2026-07-28 JSON-RPC (one request at a time)."""

    def __init__(self, port: int, token: str = OPERATOR, timeout: float = 15.0) -> None:
        self.port = port
        self.token = token
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def call(self, request_id: str, method: str, params: dict[str, Any], *, name: str | None = None,
             caps: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        """(HTTP status, decoded body); :class:`ServerGone` when no response came back."""
        params = {**params, "_meta": _meta(caps if caps is not None else {"extensions": {TASKS_EXT: {}}})}
        body = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        headers = {"content-type": "application/json", "accept": "application/json",
                   "mcp-protocol-version": MODERN, "mcp-method": method, "authorization": f"Bearer {self.token}"}
        if name is not None:
            headers["mcp-name"] = name
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(HOST, self.port, timeout=self.timeout)
            self.conn.request("POST", "/mcp", body=body, headers=headers)
            resp = self.conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise ServerGone(type(exc).__name__, request_id, name or method) from None
        if resp.getheader("connection", "").lower() == "close":
            self.close()
        try:
            decoded = orjson.loads(data) if data else {}
        except orjson.JSONDecodeError:
            decoded = {"_raw": data[:200].decode("latin-1")}
        return resp.status, decoded

    def tool(self, request_id: str, name: str, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return self.call(request_id, "tools/call", {"name": name, "arguments": arguments}, name=name)

    def task(self, request_id: str, task_id: str) -> tuple[int, dict[str, Any]]:
        return self.call(request_id, "tasks/get", {"taskId": task_id}, name=task_id)


def result_kind(result: dict[str, Any]) -> str:
    """``ok`` / ``success`` or the error kind of a tool result."""
    if result.get("isError"):
        error = (result.get("structuredContent") or {}).get("error") or {}
        return str(error.get("kind", "error"))
    return "ok"


def task_view(task: dict[str, Any]) -> dict[str, Any]:
    """What a client may rely on from one tasks/get answer."""
    view: dict[str, Any] = {"status": task.get("status")}
    result = task.get("result")
    if isinstance(result, dict):
        view["kind"] = "success" if result_kind(result) == "ok" else result_kind(result)
        facts = result.get("structuredContent") or {}
        error = facts.get("error") if isinstance(facts.get("error"), dict) else {}
        view["ticketId"] = facts.get("ticketId")
        view["dispatchId"] = error.get("dispatchId")
    return view


# -- what the clients were told ---------------------------------------------------------------------------


@dataclass
class Ledger:
    """Every answer a client received, and every call that got none."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    sent: int = 0
    unanswered: int = 0
    #: request id → what was acknowledged (a tools/call with a result)
    acked: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: JSON-RPC errors and non-200 answers: (request id, status, code)
    errors: list[tuple[str, int, Any]] = field(default_factory=list)
    #: task id → {"key", "incident", "requestId", "round"}
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: task id → the last terminal view a client saw (and in which round)
    seen_terminal: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: idempotency keys whose handle call got no answer: retried later with the same arguments
    retry: list[tuple[str, str]] = field(default_factory=list)
    #: handle calls that retried such a key and were answered
    retried: int = 0
    #: (monotonic time, request id, what, how it ended): every answer, in order
    timeline: list[tuple[float, str, str, str]] = field(default_factory=list)

    def note(self, rid: str, what: str, how: str) -> None:
        with self.lock:
            self.timeline.append((time.monotonic(), rid, what, how))

    def note_sent(self) -> None:
        with self.lock:
            self.sent += 1


class Client(threading.Thread):
    """One client: mixed calls on one keep-alive connection until told to stop."""

    def __init__(self, name: str, port: int, ledger: Ledger, rng: random.Random, stop: threading.Event,
                 round_no: int) -> None:
        super().__init__(name=name, daemon=True)
        self.wire = Wire(port)
        self.ledger = ledger
        self.rng = rng
        self.stop_event = stop
        self.round_no = round_no
        self.ids = itertools.count(1)
        self.failure: BaseException | None = None

    def rid(self) -> str:
        return f"r{self.round_no}-{self.name}-{next(self.ids)}"

    def run(self) -> None:
        try:
            while not self.stop_event.is_set():
                roll = self.rng.random()
                try:
                    if roll < 0.45:
                        self.search()
                    elif roll < 0.7:
                        self.handle()
                    else:
                        self.poll()
                except ServerGone as gone:
                    with self.ledger.lock:
                        self.ledger.unanswered += 1
                    self.ledger.note(gone.rid, gone.what, "gone")
                    self.stop_event.wait(0.05)
        except BaseException as exc:  # a checker bug must not pass silently
            self.failure = exc
        finally:
            self.wire.close()

    def search(self) -> None:
        rid = self.rid()
        self.ledger.note_sent()
        status, body = self.wire.tool(rid, "incident.search", {"service": self.rng.choice(["payments", "checkout"])})
        self._answered(rid, "incident.search", status, body)

    def handle(self) -> None:
        with self.ledger.lock:
            retry = self.ledger.retry.pop() if self.ledger.retry and self.rng.random() < 0.5 else None
        key, incident = retry or (f"ck-{secrets.token_hex(6)}", self.rng.choice(INCIDENTS))
        rid = self.rid()
        self.ledger.note_sent()
        try:
            status, body = self.wire.tool(rid, "incident.handle", {"incidentId": incident, "idempotencyKey": key})
        except ServerGone:
            with self.ledger.lock:
                self.ledger.retry.append((key, incident))
            raise
        entry = self._answered(rid, "incident.handle", status, body)
        if entry is not None and retry is not None:
            with self.ledger.lock:
                self.ledger.retried += 1
        if entry is not None and entry.get("taskId"):
            with self.ledger.lock:
                self.ledger.tasks[entry["taskId"]] = {"key": key, "incident": incident, "requestId": rid,
                                                      "round": self.round_no}

    def poll(self) -> None:
        with self.ledger.lock:
            open_tasks = [t for t in self.ledger.tasks if t not in self.ledger.seen_terminal]
            pool = open_tasks or list(self.ledger.tasks)
        if not pool:
            return
        task_id = self.rng.choice(pool)
        rid = self.rid()
        self.ledger.note_sent()
        status, body = self.wire.task(rid, task_id)
        if status != 200 or "result" not in body:
            code = (body.get("error") or {}).get("code")
            with self.ledger.lock:
                self.ledger.errors.append((rid, status, code))
            self.ledger.note(rid, "tasks/get", f"rpc:{code}")
            return
        view = task_view(body["result"])
        self.ledger.note(rid, "tasks/get", "ok")
        if view["status"] in TERMINAL:
            with self.ledger.lock:
                self.ledger.seen_terminal[task_id] = {**view, "round": self.round_no}

    def _answered(self, rid: str, tool: str, status: int, body: dict[str, Any]) -> dict[str, Any] | None:
        result = body.get("result") if status == 200 else None
        if not isinstance(result, dict):
            code = (body.get("error") or {}).get("code")
            with self.ledger.lock:
                self.ledger.errors.append((rid, status, code))
            self.ledger.note(rid, tool, f"rpc:{code}")
            return None
        entry: dict[str, Any] = {"tool": tool, "round": self.round_no}
        if result.get("resultType") == "task":
            entry.update(kind="task", taskId=result.get("taskId"), status=result.get("status"))
        else:
            entry.update(kind="result", outcome=result_kind(result),
                         message=str((result.get("content") or [{}])[0].get("text", ""))[:300])
        with self.ledger.lock:
            self.ledger.acked[rid] = entry
        self.ledger.note(rid, tool, "task" if entry["kind"] == "task" else entry["outcome"])
        return entry


# -- the truth, read directly -----------------------------------------------------------------------------


def read_db(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(str(path), timeout=30)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def unfinished_tasks(db: Path) -> list[str]:
    return [r[0] for r in read_db(db, "SELECT task_id FROM tasks WHERE status IN ('working', 'input_required')")]


# -- the loop ----------------------------------------------------------------------------------------------


@dataclass
class Report:
    rounds: int = 0
    kills_external: int = 0
    kills_internal: int = 0
    kills_at_startup: int = 0
    seconds: float = 0.0
    sent: int = 0
    unanswered: int = 0
    acked_calls: int = 0
    acked_results: int = 0
    acked_tasks: int = 0
    rpc_errors: int = 0
    audit_matched: int = 0
    orphans_at_kills: int = 0
    orphans_settled_by_restart: int = 0
    orphan_outcomes: dict[str, int] = field(default_factory=dict)
    final_status: dict[str, int] = field(default_factory=dict)
    final_kinds: dict[str, int] = field(default_factory=dict)
    seen_before_kill_checked: int = 0
    tickets: int = 0
    success_with_ticket: int = 0
    unavailable_without_ticket: int = 0
    unknown_settled: dict[str, int] = field(default_factory=dict)
    retried_keys: int = 0
    internal_results: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items()}
        out["ok"] = self.ok
        return out

    def summary(self) -> str:
        lines = [
            f"rounds {self.rounds} (SIGKILL from outside {self.kills_external}, desk kill fault "
            f"{self.kills_internal}; plus {self.kills_at_startup} SIGKILLs during start-up) in {self.seconds:.1f} s",
            f"requests sent {self.sent}; unanswered (died with the server) {self.unanswered}; "
            f"JSON-RPC errors {self.rpc_errors}; internal task results {self.internal_results}",
            f"acknowledged tools/call {self.acked_calls} ({self.acked_results} results, {self.acked_tasks} tasks); "
            f"audit records matched by requestId {self.audit_matched}/{self.acked_calls}",
            f"tasks left working/input_required by the kills {self.orphans_at_kills}, settled before the restarted "
            f"server answered {self.orphans_settled_by_restart}: {self.orphan_outcomes}",
            f"tasks at the end by status {self.final_status}, by outcome {self.final_kinds}",
            f"outcomes seen before a kill and unchanged after {self.seen_before_kill_checked}",
            f"tickets {self.tickets}; success with its ticket {self.success_with_ticket}; dependency_unavailable "
            f"with no ticket from its dispatch {self.unavailable_without_ticket}; outcome_unknown settled "
            f"{self.unknown_settled}; keys retried after an unanswered call {self.retried_keys}",
        ]
        lines.append("OK" if self.ok else "PROBLEMS:\n  " + "\n  ".join(self.problems[:50]))
        return "\n".join(lines)


def _round_env(rng: random.Random, keys: dict[str, str], internal_kill: bool) -> dict[str, str]:
    faults: dict[str, Any] = {
        "seed": rng.randrange(1 << 30),
        "delay": {"p": 0.1, "ms": [0, 600]},
        "stall": {"p": 0.1, "ms": [0, 600]},
        "error": 0.05,
        "lose_ack": 0.05,
        "drop": 0.03,
    }
    if internal_kill:
        faults["kill"] = {"p": 0.08, "at": rng.choice(["before_claim", "after_claim", "after_write"]),
                          "ms": rng.choice([0, 50, 200])}
    return {**keys, "TRUECALL_DESK_FAULTS": orjson.dumps(faults).decode(), "TRUECALL_DESK_TIMEOUT_MS": "400",
            "TRUECALL_DESK_CLAIM_LEASE_MS": "300", "TRUECALL_DESK_WORKERS": "16", "TRUECALL_TASK_LEASE_S": "2"}


def run(rounds: int = 50, *, seed: int | None = None, workdir: Path | None = None, clients: int = 6,
        kill_after: tuple[float, float] = (0.3, 1.4), log: Any = None) -> Report:
    """The crash loop; returns the report (``report.ok`` when every check held)."""
    seed = seed if seed is not None else secrets.randbelow(1 << 30)
    rng = random.Random(seed)
    say = log or (lambda line: None)
    base = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="truecall-crashloop-"))
    db = base / "truecall.db"
    keys = secret_env()
    report = Report()
    ledger = Ledger()
    started = time.monotonic()
    pending_orphans: list[str] = []
    say(f"crash loop: {rounds} rounds, seed {seed}, database {db}")
    for round_no in range(1, rounds + 1):
        internal = rng.random() < 0.3
        if rng.random() < 0.15:  # killed while starting: importing, migrating, or settling the orphans
            early = DeskProcess(base, _round_env(rng, keys, False), str(db)).spawn()
            time.sleep(rng.uniform(0.3, 1.0))
            early.kill()
            report.kills_at_startup += 1
            quick = read_db(db, "PRAGMA quick_check")
            if quick != [("ok",)]:
                report.problems.append(f"round {round_no}: quick_check after a kill at start-up: {quick[:5]}")
        desk = DeskProcess(base, _round_env(rng, keys, internal), str(db)).start()
        _check_restart(report, db, pending_orphans, keys)
        stop = threading.Event()
        workers = [Client(f"w{i}", desk.port, ledger, random.Random(rng.random()), stop, round_no)
                   for i in range(clients)]
        for w in workers:
            w.start()
        delay = rng.uniform(*kill_after)
        died_alone = desk.proc.returncode if _wait_exit(desk, delay) else None  # type: ignore[union-attr]
        if died_alone is not None:
            report.kills_internal += 1
        else:
            desk.kill()
            report.kills_external += 1
        stop.set()
        join_clients(workers)
        quick = read_db(db, "PRAGMA quick_check")
        if quick != [("ok",)]:
            report.problems.append(f"round {round_no}: quick_check after the kill: {quick[:5]}")
        pending_orphans = unfinished_tasks(db)
        report.orphans_at_kills += len(pending_orphans)
        report.rounds = round_no
        say(f"round {round_no:3d}: {'desk kill fault' if died_alone is not None else 'SIGKILL'} after "
            f"{delay:.2f} s; {len(pending_orphans)} task(s) left unfinished; acked so far {len(ledger.acked)}")

    # The last restart: orphans are settled at start-up; then reconcile, then a clean stop.
    desk = DeskProcess(base, {**keys, "TRUECALL_DESK_FAULTS": "", "TRUECALL_DESK_CLAIM_LEASE_MS": "300"},
                       str(db)).start()
    try:
        _check_restart(report, db, pending_orphans, keys)
        left = unfinished_tasks(db)
        if left:
            report.problems.append(f"after the last restart {len(left)} task(s) still unfinished: {left[:5]}")
        time.sleep(0.4)  # every claim lease (300 ms) has run out: reconcile can fence what is left
        final = settle(desk.port, ledger, report)
    finally:
        desk.stop()
    report.seconds = time.monotonic() - started
    rows = sqlite_rows(db)
    report.sent, report.unanswered = ledger.sent, ledger.unanswered
    report.rpc_errors = len(ledger.errors)
    for rid, status, code in ledger.errors:
        report.problems.append(f"unexpected JSON-RPC error {rid}: HTTP {status} code {code}")
    check_sqlite_integrity(report, rows)
    check_audit(report, ledger, rows)
    check_tasks(report, ledger, rows, final)
    say(report.summary())
    return report


def secret_env() -> dict[str, str]:
    """Fixed sealing and audit keys for every start of one database (as a deployment would have)."""
    return {name: base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")
            for name in ("TRUECALL_STATE_KEYS", "TRUECALL_AUDIT_KEY")}


def join_clients(workers: list[Client]) -> None:
    for w in workers:
        w.join(timeout=60)
        if w.is_alive():
            raise RuntimeError(f"client {w.name} did not stop")
        if w.failure is not None:
            raise RuntimeError(f"client {w.name} failed") from w.failure


def _wait_exit(desk: DeskProcess, seconds: float) -> bool:
    """True if the process ended by itself within ``seconds`` (the desk's kill fault)."""
    try:
        desk.proc.wait(timeout=seconds)  # type: ignore[union-attr]
        return True
    except subprocess.TimeoutExpired:
        return False


def _check_restart(report: Report, db: Path, orphans: list[str], keys: dict[str, str]) -> None:
    """The restarted server answers only after recovery: every orphan is settled now."""
    if not orphans:
        return
    from truecall.storage._at_rest import AtRest
    from truecall.storage._keys import b64url_decode
    from truecall.tasks.task_store import open_column

    rest = AtRest([b64url_decode(k) for k in keys["TRUECALL_STATE_KEYS"].split(",")])  # the desk's (sealed results)
    marks = ",".join("?" * len(orphans))
    rows = read_db(db, f"SELECT task_id, status, result FROM tasks WHERE task_id IN ({marks})", tuple(orphans))
    for task_id, status, sealed_result in rows:
        result = open_column(rest, "result", task_id, sealed_result)
        if status not in TERMINAL:
            report.problems.append(f"orphan {task_id} still {status} after the restart")
            continue
        report.orphans_settled_by_restart += 1
        kind = status
        if status == "completed" and result:
            kind = task_view({"status": status, "result": result}).get("kind", status)
        report.orphan_outcomes[kind] = report.orphan_outcomes.get(kind, 0) + 1


# -- the final checks (any backend: ``rows(sql)`` reads the server's tables directly) ------------------------

Rows = Callable[[str], list[tuple[Any, ...]]]


def sqlite_rows(db: Path) -> Rows:
    return lambda sql: read_db(db, sql)


def settle(port: int, ledger: Ledger, report: Report) -> dict[str, dict[str, Any]]:
    """Read every acknowledged task back (``tasks/get``), then run ``incident.reconcile`` once."""
    wire = Wire(port)
    final: dict[str, dict[str, Any]] = {}
    try:
        for n, task_id in enumerate(sorted(ledger.tasks)):
            status, body = wire.task(f"final-get-{n}", task_id)
            if status != 200 or "result" not in body:
                report.problems.append(f"tasks/get {task_id} at the end: {status} {body}")
                continue
            final[task_id] = task_view(body["result"])
        status, body = wire.tool("final-reconcile", "incident.reconcile", {})
        if status != 200 or body.get("result", {}).get("isError"):
            report.problems.append(f"incident.reconcile: {status} {body}")
        else:
            pending = body["result"]["structuredContent"]["pending"]
            if pending:
                report.problems.append(f"reconcile left {len(pending)} pending: {pending[:3]}")
    finally:
        wire.close()
    return final


def check_sqlite_integrity(report: Report, rows: Rows) -> None:
    integrity = rows("PRAGMA integrity_check")
    if integrity != [("ok",)]:
        report.problems.append(f"integrity_check: {integrity[:5]}")
    fk = rows("PRAGMA foreign_key_check")
    if fk:
        report.problems.append(f"foreign_key_check: {fk[:5]}")


def audit_by_request(rows: Rows) -> dict[str, list[tuple[str, str | None, dict[str, Any]]]]:
    """Audit records of calls, by the ``requestId`` they carry."""
    records: dict[str, list[tuple[str, str | None, dict[str, Any]]]] = {}
    for kind, outcome, fields in rows("SELECT kind, outcome, fields FROM audit_events WHERE kind IN "
                                      "('tool.called', 'tool.failed', 'tool.rejected', 'task.created', "
                                      "'tool.refused')"):
        doc = orjson.loads(bytes(fields))
        rid = doc.get("requestId")
        if isinstance(rid, str):
            records.setdefault(rid, []).append((kind, outcome, doc))
    return records


def check_audit(report: Report, ledger: Ledger, rows: Rows) -> dict[str, list[tuple[str, str | None, dict[str, Any]]]]:
    """Every acknowledged tools/call has its audit record: same request id, same outcome (a task: same id)."""
    records = audit_by_request(rows)
    report.acked_calls = len(ledger.acked)
    for rid, entry in ledger.acked.items():
        found = records.get(rid, [])
        if entry["kind"] == "task":
            report.acked_tasks += 1
            match = [r for r in found if r[0] == "task.created" and r[2].get("taskId") == entry["taskId"]]
        else:
            report.acked_results += 1
            match = [r for r in found if r[0] in ("tool.called", "tool.failed", "tool.rejected")
                     and r[1] == entry["outcome"]]
        if match:
            report.audit_matched += 1
        else:
            report.problems.append(f"acknowledged {entry['tool']} {rid} ({entry}) has no audit record: {found}")
    return records


def check_tasks(report: Report, ledger: Ledger, rows: Rows, final: dict[str, dict[str, Any]], *,
                allow_internal: bool = False) -> None:
    """No task unfinished; what a client saw is what is stored; the ticket table agrees with every outcome.

    ``allow_internal``: a task may end with an ``internal`` error (a tool that stopped part-way
    because its database failed says so and claims nothing) — expected under dependency
    faults, a bug otherwise."""
    problems = report.problems
    status_rows = rows("SELECT status, COUNT(*) FROM tasks GROUP BY status")
    report.final_status = {s: n for s, n in status_rows}
    if any(s in ("working", "input_required") for s, _ in status_rows):
        problems.append(f"tasks left unfinished: {report.final_status}")
    tickets = {r[0]: r for r in rows("SELECT ticket_id, idempotency_key, dispatch_id FROM tickets "
                                     "WHERE tenant = 'acme'")}
    report.tickets = len(tickets)
    notified = {r[0] for r in rows("SELECT DISTINCT ticket_id FROM notifications_outbox WHERE tenant = 'acme'")}
    if set(tickets) - notified:
        problems.append(f"tickets without their notification: {sorted(set(tickets) - notified)[:5]}")
    dupes = rows("SELECT idempotency_key, COUNT(*) FROM tickets GROUP BY tenant, idempotency_key "
                 "HAVING COUNT(*) > 1")
    if dupes:
        problems.append(f"more than one ticket for a key: {dupes[:5]}")
    by_dispatch = {r[2]: r[0] for r in tickets.values()}
    dispatch_state = {r[0]: r[1] for r in rows("SELECT dispatch_id, state FROM dispatches WHERE tenant = 'acme'")}
    requests = {r[0]: r[1] for r in rows("SELECT task_id, dispatch_id FROM handle_requests WHERE tenant = 'acme'")}
    settlements = {r[0]: (r[1], r[2], r[3]) for r in rows(
        "SELECT task_id, outcome, ticket_id, dispatch_id FROM settlements WHERE tenant = 'acme'")}
    keys_per_task = {t: info["key"] for t, info in ledger.tasks.items()}
    report.retried_keys = ledger.retried
    for task_id, view in final.items():
        label = view.get("kind", view["status"])
        report.final_kinds[label] = report.final_kinds.get(label, 0) + 1
        seen = ledger.seen_terminal.get(task_id)
        if seen is not None:
            if {k: seen.get(k) for k in ("status", "kind", "ticketId")} != \
                    {k: view.get(k) for k in ("status", "kind", "ticketId")}:
                problems.append(f"task {task_id}: a client saw {seen}, now {view}")
            else:
                report.seen_before_kill_checked += 1
        if view["status"] != "completed":
            problems.append(f"task {task_id} ended {view['status']} (expected a completed result): {view}")
            continue
        key = keys_per_task[task_id]
        kind = view.get("kind")
        if kind == "success":
            ticket = tickets.get(view.get("ticketId"))
            if ticket is None or ticket[1] != key:
                problems.append(f"task {task_id} reported ticket {view.get('ticketId')} for {key}; table: {ticket}")
            else:
                report.success_with_ticket += 1
        elif kind == "dependency_unavailable":
            dispatch = view.get("dispatchId") or requests.get(task_id)
            if dispatch is None:  # nothing was handed to the queue for this task
                report.unavailable_without_ticket += 1
            elif dispatch in by_dispatch or dispatch_state.get(dispatch) not in ("abandoned", "failed"):
                problems.append(f"task {task_id} said nothing was written, but dispatch {dispatch} is "
                                f"{dispatch_state.get(dispatch)} with ticket {by_dispatch.get(dispatch)}")
            else:
                report.unavailable_without_ticket += 1
        elif kind == "outcome_unknown":
            settled = settlements.get(task_id)
            if settled is None:
                problems.append(f"task {task_id} outcome_unknown and never settled by reconcile")
                continue
            outcome, ticket_id, dispatch = settled
            report.unknown_settled[outcome] = report.unknown_settled.get(outcome, 0) + 1
            if outcome == "ticket_exists":
                if ticket_id not in tickets or tickets[ticket_id][1] != key:
                    problems.append(f"task {task_id} settled ticket_exists {ticket_id}; "
                                    f"table: {tickets.get(ticket_id)}")
            elif dispatch in by_dispatch or dispatch_state.get(dispatch) not in ("abandoned", "failed"):
                problems.append(f"task {task_id} settled nothing_happened, but dispatch {dispatch} is "
                                f"{dispatch_state.get(dispatch)} with ticket {by_dispatch.get(dispatch)}")
        elif kind == "internal" and allow_internal:
            report.internal_results += 1  # a tool that stopped part-way says so; it claims nothing
        else:
            problems.append(f"task {task_id} ended with an unexpected outcome: {view}")
    missing = set(ledger.tasks) - set(final)
    if missing:
        problems.append(f"{len(missing)} acknowledged task(s) unreadable at the end: {sorted(missing)[:5]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--workdir", type=Path, default=None, help="keep the database and logs here")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args(argv)
    report = run(args.rounds, seed=args.seed, workdir=args.workdir, clients=args.clients, log=print)
    if args.json is not None:
        args.json.write_bytes(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
