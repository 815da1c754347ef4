"""Dependency faults: the desk's database fails under load, then comes back.

    python stress/dependency_faults.py                       # every scenario, 15 s faults (about 2.5 minutes)
    python stress/dependency_faults.py --short               # the CI windows (tests/reliability/test_dependency_faults.py)
    python stress/dependency_faults.py --scenario pg_restart --fault 20 --after 20

One ``truecall serve --http`` (the incident desk) on 127.0.0.1 and four client threads
firing ``incident.search``, ``incident.handle`` (tasks) and ``tasks/get`` (see
``stress/crashloop.py``), in three phases: warm-up, the fault, and after it.  Scenarios:

- ``sqlite_locked``: another connection holds ``BEGIN EXCLUSIVE`` on the SQLite file for
  the whole window (longer than the server's ``TRUECALL_DB_BUSY_MS``, 200 ms here): every
  write fails with ``database is locked``;
- ``sqlite_full``: the server process may not write past byte 64 of any file
  (``RLIMIT_FSIZE`` set on it with ``prlimit``): the disk is "full" — SQLite reports
  ``disk I/O error``/``database or disk is full`` on every write;
- ``pg_terminate``: PostgreSQL ends every session of the server, every 100 ms
  (``pg_terminate_backend`` on the connections of the run's ``application_name``): a
  flapping server, "terminating connection due to administrator command";
- ``pg_restart``: the server reaches PostgreSQL through a TCP proxy on 127.0.0.1; for the
  window the proxy cuts every connection and refuses new ones, then lets them through
  again: what a client sees of a PostgreSQL restart (the machine's server is never touched).

Checked (exit status 1 when one breaks): the server process never dies and no request goes
unanswered; before the fault every answer is a success; during it (and until service
resumes) every answer is a success, an honest tool error (``dependency_unavailable``,
``outcome_unknown``, ``internal`` saying it stopped part-way) or JSON-RPC -32603 — never
another error — and at least one answer shows the fault; after it, service resumes by
itself (the time to the first successful call is reported) and the last second of the run
is all successes; every acknowledged ``tools/call`` has its audit record (by
``requestId``), and so does every ``tools/call`` refused with -32603 (records whose commit
failed are kept and written once the database is back); no task is left ``working``;
every task outcome agrees with the ticket table (as in the crash loop); SQLite's
``integrity_check`` is ok.

Only 127.0.0.1 is used; the server is stopped by its PID.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import secrets
import socket
import sqlite3
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stress.crashloop import (HOST, Client, DeskProcess, Ledger, Report, Rows, Wire, check_audit,
                              check_sqlite_integrity, check_tasks, join_clients, read_db, secret_env, settle,
                              sqlite_rows)

SCENARIOS = ("sqlite_locked", "sqlite_full", "pg_terminate", "pg_restart")
PG_URL = os.environ.get("TRUECALL_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
#: What may answer a call while the database is failing (tool error kinds, and -32603).
HONEST = frozenset({"ok", "task", "dependency_unavailable", "outcome_unknown", "internal", "rpc:-32603"})


# -- a TCP proxy that can play a database restart ----------------------------------------------------------


class TcpProxy:
    """127.0.0.1:<port> → ``target``; :meth:`down` cuts every connection and refuses new ones;
    :meth:`stall_at` stalls them all (bytes held or dropped, nothing closed) at a chosen statement."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((HOST, 0))
        self.listener.listen(256)
        self.port = self.listener.getsockname()[1]
        self.is_up = True
        self.closed = False
        self.lock = threading.Lock()
        self.live: set[socket.socket] = set()
        self.cuts = 0
        #: A stall (see :meth:`stall_at`): "hold" keeps every byte until :meth:`release`, "drop" discards them.
        self.stalled: str | None = None
        self._trigger: tuple[tuple[bytes, ...], bool, str] | None = None
        self._held: list[tuple[socket.socket, bytes]] = []
        self.stalled_at: float | None = None
        self.thread = threading.Thread(target=self._accept, name="pg-proxy", daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.is_up:
                _close(client)  # "connection refused" as far as the protocol goes: closed before any byte
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self.lock:
                self.live.update((client, upstream))
            for src, dst, outbound in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pump, args=(src, dst, outbound), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, outbound: bool = False) -> None:
        seen = 0  # how many patterns of the trigger this connection's requests have shown, in order
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                forward = False  # this read goes through even though the stall begins with it
                with self.lock:
                    trigger = self._trigger
                    if outbound and trigger is not None and self.stalled is None:
                        patterns, on_answer, mode = trigger
                        while seen < len(patterns) and patterns[seen] in data:
                            seen += 1
                        if seen == len(patterns):
                            self._trigger = None
                            # The stall begins before the statement is forwarded, even when the statement goes
                            # through (``on_answer``): set after sending it, the server's answer could pass the
                            # other pump first (seen: an INSERT answered, "DID NOT RAISE").
                            self._stall(mode)
                            forward = on_answer
                    if self.stalled == "hold" and not forward:
                        self._held.append((dst, data))
                        continue
                    if self.stalled == "drop" and not forward:
                        continue
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self.lock:
                self.live.discard(src)
                self.live.discard(dst)
            _close(src)
            _close(dst)

    def stall_at(self, *patterns: bytes, on_answer: bool = False, mode: str = "hold") -> None:
        """Stall every connection once one connection's requests have shown ``patterns`` in order
        (each in one read): before the last one is forwarded, or right after it (``on_answer``: the
        server gets the statement, its answer stalls).  ``mode``: "hold" keeps every byte both
        ways (a hung network path: the bytes are acknowledged, nothing arrives), "drop" discards
        them (a partition).  New connections are accepted and stall the same way."""
        assert mode in ("hold", "drop")
        with self.lock:
            self._trigger = (patterns, on_answer, mode)

    def _stall(self, mode: str) -> None:
        self.stalled = mode
        self.stalled_at = time.monotonic()

    def release(self) -> None:
        """End the stall: held bytes are delivered late, in order (the partition's are gone for good)."""
        with self.lock:
            held, self._held = self._held, []
            self.stalled = None
            for dst, data in held:
                try:
                    dst.sendall(data)
                except OSError:
                    pass

    def down(self) -> None:
        self.is_up = False
        with self.lock:
            live, self.live = list(self.live), set()
        self.cuts += len(live)
        for sock in live:
            _close(sock)

    def up(self) -> None:
        self.is_up = True

    def close(self) -> None:
        self.closed = True
        self.down()
        _close(self.listener)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv on it
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


# -- PostgreSQL helpers (a schema of our own; the machine's server is only ever a client's target) ----------


def _pg_admin() -> Any:
    import psycopg

    return psycopg.connect(PG_URL, connect_timeout=5, autocommit=True)


def _via(url: str, port: int) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    host = f"{HOST}:{port}"
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host))


def _with_schema(url: str, name: str) -> str:
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}schema={name}&application_name={name}"


def _terminate(name: str) -> int:
    with _pg_admin() as conn:
        return len(conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s "
                                "AND pid <> pg_backend_pid()", (name,)).fetchall())


def _pg_rows(name: str) -> Rows:
    def rows(sql: str) -> list[tuple[Any, ...]]:
        with _pg_admin() as conn:
            conn.execute(f'SET search_path TO "{name}"')
            return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r)
                    for r in conn.execute(sql).fetchall()]
    return rows


# -- scenarios --------------------------------------------------------------------------------------------


class Scenario:
    """One dependency fault: where the database is, how to break it and how to mend it."""

    backend = "sqlite"

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.db_path = workdir / "truecall.db"
        self.target = str(self.db_path)
        self.env = {"TRUECALL_DB_BUSY_MS": "200"}

    def on(self, desk: DeskProcess) -> None: ...

    def off(self, desk: DeskProcess) -> None: ...

    def rows(self) -> Rows:
        return sqlite_rows(self.db_path)

    def close(self) -> None: ...


class SqliteLocked(Scenario):
    """Another connection holds the write lock (``BEGIN EXCLUSIVE``) for the whole window."""

    def on(self, desk: DeskProcess) -> None:
        self.release = threading.Event()
        self.held = threading.Event()
        self.error: BaseException | None = None

        def hold() -> None:
            try:
                conn = sqlite3.connect(str(self.db_path), timeout=30, isolation_level=None)
                try:
                    conn.execute("BEGIN EXCLUSIVE")
                    self.held.set()
                    self.release.wait()
                    conn.execute("ROLLBACK")
                finally:
                    conn.close()
            except BaseException as exc:
                self.error = exc
                self.held.set()

        self.thread = threading.Thread(target=hold, name="lock-holder", daemon=True)
        self.thread.start()
        self.held.wait(30)
        if self.error is not None:
            raise RuntimeError("could not take the lock") from self.error

    def off(self, desk: DeskProcess) -> None:
        self.release.set()
        self.thread.join(30)


class SqliteFull(Scenario):
    """The server may not write past byte 64 of any file: a full disk, as the kernel reports it."""

    def on(self, desk: DeskProcess) -> None:
        _soft, hard = resource.prlimit(desk.pid, resource.RLIMIT_FSIZE)
        self.hard = hard
        resource.prlimit(desk.pid, resource.RLIMIT_FSIZE, (64, hard))

    def off(self, desk: DeskProcess) -> None:
        resource.prlimit(desk.pid, resource.RLIMIT_FSIZE, (self.hard, self.hard))


class PgScenario(Scenario):
    backend = "postgresql"

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.schema = f"tc_faults_{secrets.token_hex(5)}"
        with _pg_admin() as conn:
            conn.execute(f'CREATE SCHEMA "{self.schema}"')
        self.target = _with_schema(PG_URL, self.schema)
        self.env = {"TRUECALL_DB_BUSY_MS": "1000"}

    def rows(self) -> Rows:
        return _pg_rows(self.schema)

    def close(self) -> None:
        with _pg_admin() as conn:
            conn.execute("SET lock_timeout = '15s'")
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s "
                         "AND pid <> pg_backend_pid()", (self.schema,))
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


class PgTerminate(PgScenario):
    """Every session of the server is terminated, every 100 ms, for the window."""

    def on(self, desk: DeskProcess) -> None:
        self.stop = threading.Event()
        self.terminated = 0

        def flap() -> None:
            while not self.stop.is_set():
                try:
                    self.terminated += _terminate(self.schema)
                except Exception:
                    pass
                self.stop.wait(0.1)

        self.thread = threading.Thread(target=flap, name="pg-terminator", daemon=True)
        self.thread.start()

    def off(self, desk: DeskProcess) -> None:
        self.stop.set()
        self.thread.join(30)


class PgRestart(PgScenario):
    """The server's connections go through a proxy that plays the restart: cut, refuse, accept again."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        parts = urlsplit(PG_URL)
        self.proxy = TcpProxy((parts.hostname or HOST, parts.port or 5432))
        self.target = _with_schema(_via(PG_URL, self.proxy.port), self.schema)

    def on(self, desk: DeskProcess) -> None:
        self.proxy.down()

    def off(self, desk: DeskProcess) -> None:
        self.proxy.up()

    def close(self) -> None:
        self.proxy.close()
        super().close()


_CLASSES = {"sqlite_locked": SqliteLocked, "sqlite_full": SqliteFull, "pg_terminate": PgTerminate,
            "pg_restart": PgRestart}


# -- one run ------------------------------------------------------------------------------------------------


@dataclass
class FaultReport:
    scenario: str
    backend: str = ""
    warm_s: float = 0.0
    fault_s: float = 0.0
    after_s: float = 0.0
    #: phase → how answers ended → count ("ok", a tool error kind, "task", "rpc:<code>", "gone")
    answers: dict[str, dict[str, int]] = field(default_factory=dict)
    #: seconds from the end of the fault to the first successful incident.search
    resumed_after_s: float | None = None
    #: seconds from the end of the fault until no task was working any more
    tasks_settled_after_s: float | None = None
    refused_calls: int = 0
    refused_with_record: int = 0
    #: Records the trail held beyond its bound (``MAX_RETAINED``) and dropped, counted in ``audit.dropped``.
    dropped_records: int = 0
    checks: Report = field(default_factory=Report)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and self.checks.ok

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "checks"}
        out["checks"] = self.checks.to_dict()
        out["ok"] = self.ok
        return out

    def summary(self) -> str:
        c = self.checks
        lines = [f"[{self.scenario}] ({self.backend}) warm {self.warm_s:.1f} s, fault {self.fault_s:.1f} s, "
                 f"after {self.after_s:.1f} s"]
        for phase, counts in self.answers.items():
            lines.append(f"  {phase:<7} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        resumed = "never" if self.resumed_after_s is None else f"{self.resumed_after_s:.2f} s"
        settled = "never" if self.tasks_settled_after_s is None else f"{self.tasks_settled_after_s:.2f} s"
        lines.append(f"  service resumed {resumed} after the fault ended; no task working when checked ({settled} "
                     "after it)")
        lines.append(f"  acknowledged tools/call {c.acked_calls} ({c.acked_results} results, {c.acked_tasks} tasks), "
                     f"audit records matched {c.audit_matched}; refused with -32603 {self.refused_calls}, their "
                     f"records written once the database was back {self.refused_with_record}, counted as dropped "
                     f"{self.dropped_records}")
        lines.append(f"  tasks by outcome {c.final_kinds}; tickets {c.tickets}; success with ticket "
                     f"{c.success_with_ticket}; dependency_unavailable without {c.unavailable_without_ticket}; "
                     f"unknown settled {c.unknown_settled}; internal {c.internal_results}")
        problems = self.problems + c.problems
        lines.append("  OK" if not problems else "  PROBLEMS:\n    " + "\n    ".join(problems[:40]))
        return "\n".join(lines)


def run_scenario(name: str, workdir: Path | None = None, *, warm: float = 1.0, fault: float = 1.5,
                 after: float = 2.5, clients: int = 4, seed: int | None = None, log: Any = None) -> FaultReport:
    say = log or (lambda line: None)
    base = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix=f"truecall-{name}-"))
    base.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed if seed is not None else secrets.randbelow(1 << 30))
    scenario = _CLASSES[name](base)
    report = FaultReport(name, scenario.backend, warm, fault, after)
    env = {**secret_env(), **scenario.env, "TRUECALL_DESK_TIMEOUT_MS": "600", "TRUECALL_DESK_CLAIM_LEASE_MS": "300",
           "TRUECALL_DESK_WORKERS": "8", "TRUECALL_TASK_LEASE_S": "1", "TRUECALL_DESK_FAULTS": ""}
    ledger = Ledger()
    desk = DeskProcess(base, env, scenario.target)
    try:
        desk.start(timeout=30)
        stop = threading.Event()
        workers = [Client(f"w{i}", desk.port, ledger, random.Random(rng.random()), stop, 1) for i in range(clients)]
        for w in workers:
            w.start()
        time.sleep(warm)
        t_on = time.monotonic()
        scenario.on(desk)
        time.sleep(fault)
        scenario.off(desk)
        t_off = time.monotonic()
        time.sleep(after)
        stop.set()
        join_clients(workers)
        t_end = time.monotonic()
        if not desk.alive():
            report.problems.append(f"the server died (exit {desk.proc.returncode}): "  # type: ignore[union-attr]
                                   f"{desk.log.read_text(errors='replace')[-1500:]}")
            return report
        report.tasks_settled_after_s = _wait_settled(scenario.rows(), t_off, timeout=20)
        time.sleep(0.4)  # claim leases (300 ms) have run out: reconcile can fence what is left
        final = settle(desk.port, ledger, report.checks)
        _probe(desk, report)
    finally:
        desk.stop()
        say(f"[{name}] server stopped")
    rows = scenario.rows()
    try:
        _judge(report, ledger, rows, final, t_on, t_off, t_end)
        if scenario.backend == "sqlite":
            check_sqlite_integrity(report.checks, rows)
    finally:
        scenario.close()
    say(report.summary())
    return report


def _wait_settled(rows: Rows, t_off: float, timeout: float) -> float | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = rows("SELECT COUNT(*) FROM tasks WHERE status IN ('working', 'input_required')")[0][0]
        if not left:
            return max(0.0, time.monotonic() - t_off)
        time.sleep(0.1)
    return None


def _probe(desk: DeskProcess, report: FaultReport) -> None:
    """One more call after everything: the server answers normally."""
    wire = Wire(desk.port)
    try:
        status, body = wire.tool("final-probe", "incident.search", {"service": "payments"})
    finally:
        wire.close()
    result = body.get("result") or {}
    if status != 200 or result.get("isError") or (result.get("structuredContent") or {}).get("count") != 2:
        report.problems.append(f"the last probe did not succeed: {status} {body}")


def _judge(report: FaultReport, ledger: Ledger, rows: Rows, final: dict[str, dict[str, Any]], t_on: float,
           t_off: float, t_end: float) -> None:
    problems = report.problems
    # -- answers by phase ------------------------------------------------------------------------------------
    resumed: float | None = None
    last_bad = 0.0
    for t, rid, what, how in sorted(ledger.timeline):
        phase = "warm" if t < t_on else "fault" if t <= t_off else "after"
        counts = report.answers.setdefault(phase, {})
        counts[how] = counts.get(how, 0) + 1
        ok = how in ("ok", "task")
        if phase == "warm" and not ok:
            problems.append(f"before the fault, {what} {rid} ended {how}")
        if phase != "warm" and how not in HONEST:
            problems.append(f"{phase}: {what} {rid} ended {how} (not an honest failure)")
        if phase == "after" and what == "incident.search" and how == "ok" and resumed is None:
            resumed = t - t_off
        if not ok:
            last_bad = max(last_bad, t)
    report.resumed_after_s = resumed
    fault_counts = report.answers.get("fault", {})
    if not any(k not in ("ok", "task") for k in fault_counts):
        problems.append(f"the fault showed in no answer: {fault_counts}")
    if resumed is None:
        problems.append("service did not resume after the fault (no successful incident.search)")
    if last_bad > t_end - 1.0:
        problems.append(f"errors still {t_end - last_bad:.2f} s before the end of the run")
    # -- the ledger against the database ---------------------------------------------------------------------
    checks = report.checks
    checks.sent, checks.unanswered, checks.rpc_errors = ledger.sent, ledger.unanswered, len(ledger.errors)
    records = check_audit(checks, ledger, rows)
    refused = [rid for rid, status, code in ledger.errors if code == -32603 and not rid.startswith("final")]
    what_of = {r: w for _, r, w, _h in ledger.timeline}
    tool_refusals = [rid for rid in refused if what_of.get(rid, "").startswith("incident.")]
    report.refused_calls = len(tool_refusals)
    report.refused_with_record = sum(1 for rid in tool_refusals if rid in records)
    # (the trail holds at most MAX_RETAINED records while it cannot write, and counts those it drops beyond that
    # in audit.dropped: a fast machine refuses more than that in the fault's 1.2 s — those are accounted for)
    report.dropped_records = sum(orjson.loads(bytes(fields)).get("count", 0) for (fields,) in
                                 rows("SELECT fields FROM audit_events WHERE kind = 'audit.dropped'"))
    if report.refused_calls - report.refused_with_record > report.dropped_records:
        missing = [rid for rid in tool_refusals if rid not in records]
        problems.append(f"{len(missing)} call(s) refused with -32603 whose audit record was never written "
                        f"({report.dropped_records} counted as dropped): {missing[:5]}")
    check_tasks(checks, ledger, rows, final, allow_internal=True)
    # What the fault may make a tool say: read-only tools say nothing changed; others say they stopped part-way.
    for rid, entry in ledger.acked.items():
        message = entry.get("message", "")
        if entry.get("outcome") == "dependency_unavailable" and entry["tool"] == "incident.search" and \
                "changed nothing" not in message:
            problems.append(f"{rid}: dependency_unavailable without saying nothing changed: {message!r}")
        if entry.get("outcome") == "internal" and "not known" not in message and "nothing is known" not in message:
            problems.append(f"{rid}: an internal error that does not say what is known: {message!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", choices=SCENARIOS, help="default: all")
    parser.add_argument("--short", action="store_true", help="the CI windows (0.8 s warm, 1.2 s fault, 3 s after)")
    parser.add_argument("--warm", type=float, default=None)
    parser.add_argument("--fault", type=float, default=None)
    parser.add_argument("--after", type=float, default=None)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the reports here")
    args = parser.parse_args(argv)
    warm, fault, after = (0.8, 1.2, 3.0) if args.short else (3.0, 15.0, 12.0)
    warm = args.warm if args.warm is not None else warm
    fault = args.fault if args.fault is not None else fault
    after = args.after if args.after is not None else after
    reports = []
    for name in args.scenario or SCENARIOS:
        workdir = args.workdir / name if args.workdir is not None else None
        reports.append(run_scenario(name, workdir, warm=warm, fault=fault, after=after, clients=args.clients,
                                    seed=args.seed, log=print))
    if args.json is not None:
        args.json.write_bytes(orjson.dumps([r.to_dict() for r in reports], option=orjson.OPT_INDENT_2))
    return 0 if all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
