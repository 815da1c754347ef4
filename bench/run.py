"""truecall against its peers: stdio and Streamable HTTP throughput, latency, cold start, RSS, CPU.

    python bench/run.py            # full run (about 7–8 minutes on 2 cores)
    python bench/run.py --quick    # short run (about 3 minutes)
    python bench/run.py --compare REF --systems truecall   # this tree against REF's src/, same run

``--compare REF`` adds a system "truecall@REF": the same app served by ``git archive REF src``
(on ``PYTHONPATH``, ahead of the installed tree), interleaved with everything else in every round,
and prints each cell of "truecall" as a ratio to it — the before/after check of a change that must
not cost the hot path, measured in one run rather than two runs at different times.  For a budget
of a few % add ``--processes 5 --pin``: every server started five times (a process's own layout
moves its CPU per call by a few %), each cell judged by the median of the process pairs, servers
and driver on their own cores.

Run it with the interpreter of the virtual environment truecall is installed in
(``pip install -e .``); the peers (fastmcp 4.2.3, mcp 2.3.0) are installed into
bench/.venv-peers on first use.  Prints one table (each system's value and its
ratio to truecall), checks the targets of issue 6, and writes
bench/results/<timestamp>.json.  See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PEERS = BENCH / "peers"
PEERS_VENV = BENCH / ".venv-peers"
REQUIREMENTS = BENCH / "requirements-peers.txt"
RESULTS = BENCH / "results"
PYCACHE = PEERS_VENV / "pycache"

sys.path.insert(0, str(BENCH))

try:
    import orjson  # noqa: F401  (the drivers need it; it comes with truecall)
    import truecall
except ImportError as exc:  # pragma: no cover
    sys.exit(f"run this with the Python truecall is installed in (pip install -e .): {exc}")

from _drivers import (BenchError, Cell, StdioPeer, http_cell, rss_mb, run_async, stdio_cold_start, stop,  # noqa: E402
                      unpacked_src)

# -- what runs --------------------------------------------------------------------------------


@dataclass
class System:
    key: str
    label: str
    python: str
    stdio: list[str] | None
    http: Callable[[int, bool], list[str]] | None
    #: Extra environment for this system's processes (``--compare``: PYTHONPATH to the other tree).
    env: dict[str, str] | None = None


def systems(peers_python: str) -> list[System]:
    me = sys.executable

    def truecall_cmd(attr: str) -> tuple[list[str], Callable[[int, bool], list[str]]]:
        base = [me, "-m", "truecall", "serve", f"{PEERS / 'truecall_app.py'}:{attr}"]
        return base, lambda port, _json: base + ["--http", "--port", str(port)]

    def peer(script: str, python: str, stdio: bool = True, http: bool = True) -> tuple[Any, Any]:
        path = str(PEERS / script)
        return ([python, path, "stdio"] if stdio else None,
                (lambda port, js: [python, path, "http", "--port", str(port)] + (["--json"] if js else []))
                if http else None)

    return [
        System("truecall", "truecall", me, *truecall_cmd("app")),
        System("truecall-noaudit", "truecall audit off", me, *truecall_cmd("app_noaudit")),
        System("truecall-typed", "truecall typed", me, *truecall_cmd("app_typed")),
        System("fastmcp", "FastMCP 4.2.3", peers_python, *peer("fastmcp_server.py", peers_python)),
        System("mcp-lowlevel", "mcp low-level", peers_python, *peer("mcp_lowlevel.py", peers_python)),
        System("mcp-highlevel", "mcp high-level", peers_python, *peer("mcp_highlevel.py", peers_python)),
        System("plain-loop", "plain loop", me, *peer("plain_loop.py", me, http=False)),
        System("bare-asgi", "bare ASGI", me, *peer("bare_asgi.py", me, stdio=False)),
    ]


PROFILES = {
    # seconds of warm-up and of measurement per cell, cold-start spawns
    "quick": {"warm_s": 0.3, "cell_s": 1.5, "stdio_warm_s": 0.5, "cold_runs": 3, "rounds": 3},
    "full": {"warm_s": 1.0, "cell_s": 5.0, "stdio_warm_s": 1.5, "cold_runs": 7, "rounds": 5},
}

HTTP_CELLS = [(era, sse, clients) for era in ("modern", "legacy") for sse in (False, True) for clients in (1, 16)]


def http_key(era: str, sse: bool, clients: int) -> str:
    return f"http-{era}-{'sse' if sse else 'json'}-{'seq' if clients == 1 else f'c{clients}'}"


# -- the peers' virtual environment --------------------------------------------------------------


def ensure_peers_venv(log: Callable[[str], None]) -> str:
    python = PEERS_VENV / "bin" / "python"
    stamp = PEERS_VENV / ".bench-stamp"
    want = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text().strip() == want:
        return str(python)
    log(f"installing the peers into {PEERS_VENV.relative_to(ROOT)} ({REQUIREMENTS.name}) ...")
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r",
                    str(REQUIREMENTS)], check=True)
    subprocess.run([str(python), "-c", "import fastmcp, mcp, uvloop, httptools"], check=True)
    stamp.write_text(want + "\n")
    return str(python)


def versions(peers_python: str) -> dict[str, str]:
    code = ("import importlib.metadata as m, json; print(json.dumps({p: m.version(p) for p in "
            "['fastmcp', 'mcp', 'uvicorn', 'httptools', 'uvloop', 'starlette', 'pydantic']}))")
    out = subprocess.run([peers_python, "-c", code], capture_output=True, text=True, check=True).stdout
    mine = {}
    import importlib.metadata as md

    for p in ("uvicorn", "httptools", "uvloop", "orjson", "jsonschema-rs"):
        try:
            mine[p] = md.version(p)
        except md.PackageNotFoundError:
            pass
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "src"], capture_output=True,
                                    text=True).stdout.strip())
    except OSError:
        commit, dirty = "", False
    return {"truecall": truecall.__version__, "truecall_commit": commit, "truecall_src_dirty": dirty,
            "truecall_env": mine, "peers_env": json.loads(out),
            "python": platform.python_version()}


# -- one system ------------------------------------------------------------------------------------


def interpreter_env(system: System | None = None) -> dict[str, str]:
    """The environment of every interpreter the bench starts (servers, import timings): ``system``'s
    own settings, and one shared bytecode cache, written on a discarded first run, whatever
    ``PYTHONDONTWRITEBYTECODE`` says here — an installed package has its bytecode, and without it a
    start or an import would time the compiler (``import truecall``: about 110 ms instead of 53)."""
    env = dict(os.environ)
    if system is not None and system.env:
        env.update(system.env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


class Live:
    """One running server: its process, its temporary folder, and how to reach it."""

    def __init__(self, system: System, proc: subprocess.Popen[bytes], tmp: str, log_name: str,
                 peer: StdioPeer | None = None, port: int = 0) -> None:
        self.system, self.proc, self.tmp, self.log_name, self.peer, self.port = system, proc, tmp, log_name, peer, port

    def stop(self) -> None:
        stop(self.proc)
        shutil.rmtree(self.tmp, ignore_errors=True)


class Runner:
    """Measures every system in rounds: each cell is split into slices and the systems take
    turns, so that load from elsewhere on the machine falls on all of them alike."""

    def __init__(self, profile: dict[str, Any], logs: Path, verbose: bool = True) -> None:
        self.p = profile
        self.logs = logs
        self.verbose = verbose
        self.results: dict[str, dict[str, Any]] = {}
        #: Every cell's slices, kept across ``--processes`` runs, and each process's own summary of it.
        self.cells: dict[tuple[str, str], Cell] = {}
        self.per_process: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.cold_done = False

    def record(self, system: str, key: str, cell: Cell) -> None:
        """One server process's measurement of one cell: merged into the cell's total (every process
        of the system, in order) and kept on its own, so that the spread across processes shows."""
        total = self.cells.setdefault((system, key), Cell())
        total.merge(cell)
        self.per_process.setdefault((system, key), []).append(cell.summary())
        self.results.setdefault(system, {})[key] = total.summary()

    def say(self, text: str) -> None:
        if self.verbose:
            print(text, file=sys.stderr, flush=True)

    def env(self, tmp: str, system: System | None = None) -> dict[str, str]:
        env = interpreter_env(system)
        env["BENCH_TRUECALL_DB"] = os.path.join(tmp, "bench.db")
        env.pop("TRUECALL_PRINCIPAL", None)
        # One string-hash seed for every server: with a random one each process lays out its dicts and sets
        # differently, and two servers of the same code differ in CPU per call by that alone.
        env["PYTHONHASHSEED"] = env.get("BENCH_HASH_SEED", "0")
        return env

    def spawn(self, argv: list[str], tmp: str, log_name: str, stdio: bool,
              system: System | None = None) -> subprocess.Popen[bytes]:
        log = open(self.logs / log_name, "ab")
        server_cpus = self.p.get("server_cpus")
        try:
            return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE if stdio else subprocess.DEVNULL,
                                    stderr=log, env=self.env(tmp, system), cwd=str(ROOT),
                                    preexec_fn=(lambda: os.sched_setaffinity(0, set(server_cpus))) if server_cpus else None)
        finally:
            log.close()

    def log_tail(self, log_name: str) -> str:
        try:
            return (self.logs / log_name).read_text(errors="replace")[-1500:]
        except OSError:
            return ""

    def fail(self, s: System, what: str, exc: BaseException, log_name: str | None = None) -> None:
        tail = self.log_tail(log_name) if log_name else ""
        message = f"{s.key} {what}: {exc}" + (f"\n{tail}" if tail else "")
        self.results.setdefault(s.key, {})["error"] = message
        self.say(f"  FAILED {message.splitlines()[0]}")

    def alive(self, systems: list[System]) -> list[System]:
        return [s for s in systems if "error" not in self.results.get(s.key, {})]

    def rounds(self, systems: list[System]) -> list[list[System]]:
        """The order of the systems in each round (alternating, so no one is always first)."""
        n = max(1, int(self.p["rounds"]))
        return [list(systems) if r % 2 == 0 else list(reversed(systems)) for r in range(n)]

    # stdio

    def cold_starts(self, systems: list[System]) -> None:
        runs: dict[str, list[dict[str, float]]] = {s.key: [] for s in systems}
        self.say(f"cold start: {self.p['cold_runs']} spawns each (after one discarded) ...")
        for i in range(self.p["cold_runs"] + 1):  # the first spawn only warms the page and bytecode caches
            for s in self.alive(systems) if i % 2 == 0 else list(reversed(self.alive(systems))):
                tmp = tempfile.mkdtemp(prefix="tc-bench-")
                try:
                    with open(self.logs / f"{s.key}-cold.log", "ab") as log:
                        r = stdio_cold_start(s.stdio, self.env(tmp, s), str(ROOT), log)  # type: ignore[arg-type]
                except Exception as exc:
                    self.fail(s, "cold start", exc, f"{s.key}-cold.log")
                    continue
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
                if i:
                    runs[s.key].append(r)
        for s in self.alive(systems):
            rs = runs[s.key]
            self.results.setdefault(s.key, {})["cold_start"] = {
                "first_response_ms": round(statistics.median(r["first_response_ms"] for r in rs), 1),
                "first_call_ms": round(statistics.median(r["first_call_ms"] for r in rs), 1),
                "runs": [{k: round(v, 1) for k, v in r.items()} for r in rs],
            }

    def stdio(self, systems: list[System]) -> None:
        if not self.cold_done:
            self.cold_starts(systems)
            self.cold_done = True
        lives: dict[str, Live] = {}
        try:
            for s in self.alive(systems):
                tmp = tempfile.mkdtemp(prefix="tc-bench-")
                log_name = f"{s.key}-stdio.log"
                proc = self.spawn(s.stdio, tmp, log_name, stdio=True, system=s)  # type: ignore[arg-type]
                live = lives[s.key] = Live(s, proc, tmp, log_name, peer=StdioPeer(proc))
                try:
                    live.peer.handshake()  # type: ignore[union-attr]
                    live.peer.warm_up(self.p["stdio_warm_s"])  # type: ignore[union-attr]
                    self.results.setdefault(s.key, {})["rss_mb_after_warmup"] = round(rss_mb(proc.pid), 1)
                except Exception as exc:
                    self.fail(s, "stdio start", exc, log_name)
            slice_s = self.p["cell_s"] / max(1, int(self.p["rounds"]))
            for key, label in (("stdio-seq", "sequential"), ("stdio-pipe64", "pipelined, 64 in flight")):
                self.say(f"stdio {label}: {self.p['rounds']} rounds of {slice_s:.2f} s per system ...")
                acc = {s.key: Cell() for s in systems}
                for order in self.rounds(self.alive(list(s for s in systems if s.key in lives))):
                    for s in order:
                        if "error" in self.results.get(s.key, {}):
                            continue
                        peer = lives[s.key].peer
                        try:
                            cell = peer.sequential(slice_s) if key == "stdio-seq" else peer.pipelined(slice_s, 64)  # type: ignore[union-attr]
                        except Exception as exc:
                            self.fail(s, key, exc, lives[s.key].log_name)
                            continue
                        acc[s.key].merge(cell)
                for s in self.alive([s for s in systems if s.key in lives]):
                    self.record(s.key, key, acc[s.key])
            for s in self.alive([s for s in systems if s.key in lives]):
                self.results[s.key]["rss_mb_after_stdio"] = round(rss_mb(lives[s.key].proc.pid), 1)
        finally:
            for live in lives.values():
                live.stop()

    # HTTP

    def http(self, systems: list[System]) -> None:
        slice_s = self.p["cell_s"] / max(1, int(self.p["rounds"]))
        for json_mode in (True, False):
            mode = "json" if json_mode else "sse"
            lives: dict[str, Live] = {}
            try:
                for s in self.alive(systems):
                    port = free_port()
                    tmp = tempfile.mkdtemp(prefix="tc-bench-")
                    log_name = f"{s.key}-http-{mode}.log"
                    t0 = time.perf_counter()
                    proc = self.spawn(s.http(port, json_mode), tmp, log_name, stdio=False, system=s)  # type: ignore[misc]
                    lives[s.key] = Live(s, proc, tmp, log_name, port=port)
                    try:
                        wait_listening(proc, port)
                        self.results.setdefault(s.key, {})[f"http_{mode}_ready_ms"] = round(
                            (time.perf_counter() - t0) * 1000, 1)
                    except Exception as exc:
                        self.fail(s, f"http ({mode}) start", exc, log_name)
                for era, sse, clients in HTTP_CELLS:
                    if sse == json_mode:
                        continue
                    key = http_key(era, sse, clients)
                    self.say(f"{key}: {self.p['rounds']} rounds of {slice_s:.2f} s per system ...")
                    acc = {s.key: Cell() for s in systems}
                    for i, order in enumerate(self.rounds(self.alive([s for s in systems if s.key in lives]))):
                        warm = self.p["warm_s"] if i == 0 else min(0.2, self.p["warm_s"])
                        for s in order:
                            if "error" in self.results.get(s.key, {}):
                                continue
                            live = lives[s.key]
                            try:
                                cell = run_async(http_cell(live.port, era, sse, clients, warm, slice_s, live.proc.pid))
                            except Exception as exc:
                                self.fail(s, key, exc, live.log_name)
                                continue
                            acc[s.key].merge(cell)
                    for s in self.alive([s for s in systems if s.key in lives]):
                        self.record(s.key, key, acc[s.key])
                for s in self.alive([s for s in systems if s.key in lives]):
                    self.results[s.key][f"rss_mb_after_http_{mode}"] = round(rss_mb(lives[s.key].proc.pid), 1)
            finally:
                for live in lives.values():
                    live.stop()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(proc: subprocess.Popen[bytes], port: int, timeout: float = 60.0) -> None:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            raise BenchError(f"server exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.01)
    raise BenchError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


# -- table and targets -------------------------------------------------------------------------------


def _get(results: dict[str, Any], system: str, *path: str) -> float | None:
    node: Any = results.get(system)
    for part in path:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node if isinstance(node, (int, float)) else None


ROWS: list[tuple[str, tuple[str, ...], str]] = [
    ("stdio sequential calls/s", ("stdio-seq", "calls_per_s"), "n"),
    ("  p50 µs", ("stdio-seq", "p50_us"), "n"),
    ("  p99 µs", ("stdio-seq", "p99_us"), "n"),
    ("  server CPU µs/call", ("stdio-seq", "server_cpu_us_per_call"), "n"),
    ("stdio pipelined (64) calls/s", ("stdio-pipe64", "calls_per_s"), "n"),
    ("  p50 µs", ("stdio-pipe64", "p50_us"), "n"),
    ("  server CPU µs/call", ("stdio-pipe64", "server_cpu_us_per_call"), "n"),
]
for _era, _sse, _clients in HTTP_CELLS:
    _k = http_key(_era, _sse, _clients)
    _name = (f"HTTP {'2026-07-28' if _era == 'modern' else '2025-11-25'} {'SSE' if _sse else 'JSON'} "
             f"{'seq' if _clients == 1 else f'{_clients} conc.'} calls/s")
    ROWS.append((_name, (_k, "calls_per_s"), "n"))
    if _clients == 1:
        ROWS.append(("  p50 / p99 µs", (_k, "p50_us"), "lat"))
    else:
        ROWS.append(("  server CPU µs/call", (_k, "server_cpu_us_per_call"), "n"))
ROWS += [
    ("cold start ms (spawn → 1st response)", ("cold_start", "first_response_ms"), "n"),
    ("  spawn → 1st tools/call result ms", ("cold_start", "first_call_ms"), "n"),
    ("RSS MB after warm-up (stdio)", ("rss_mb_after_warmup",), "n"),
    ("RSS MB after HTTP JSON cells", ("rss_mb_after_http_json",), "n"),
]


def fmt_num(v: float | None) -> str:
    if v is None:
        return "–"
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}"


def table(results: dict[str, Any], order: list[System]) -> str:
    cols = [s for s in order if s.key in results and "error" not in results[s.key]]
    errs = [s for s in order if s.key in results and "error" in results[s.key]]
    header = ["metric  (value, and ×: this system ÷ truecall)"] + [s.label for s in cols]
    lines = []
    for name, path, kind in ROWS:
        row = [name]
        base = _get(results, "truecall", *path)
        for s in cols:
            v = _get(results, s.key, *path)
            if kind == "lat":
                p99 = _get(results, s.key, path[0], "p99_us")
                row.append("–" if v is None else f"{fmt_num(v)} / {fmt_num(p99)}")
                continue
            if v is None:
                row.append("–")
            elif s.key == "truecall" or not base:
                row.append(fmt_num(v))
            else:
                row.append(f"{fmt_num(v)} ({v / base:.2f}×)" if v / base >= 0.01 else f"{fmt_num(v)} ({v / base:.3f}×)")
        if any(c != "–" for c in row[1:]):
            lines.append(row)
    widths = [max(len(r[i]) for r in [header] + lines) for i in range(len(header))]
    out = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))]
    out.append("  ".join("-" * w for w in widths))
    for r in lines:
        out.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    for key in ("http-modern-sse-seq", "http-legacy-sse-seq"):
        odd = [s.label for s in cols if (results[s.key].get(key) or {}).get("content_type") not in
               (None, "text/event-stream")]
        if odd:
            out.append(f"note: {key}: answered as JSON although the client accepted SSE: {', '.join(odd)}")
    busy = []
    for s in cols:
        worst = max((c.get("foreign_cores") or 0 for c in results[s.key].values() if isinstance(c, dict)),
                    default=0)
        if worst >= 0.15:
            busy.append(f"{s.label} {worst:.2f}")
    if busy:
        out.append("warning: other processes used CPU during some cells (cores, worst cell): " + ", ".join(busy)
                   + " — numbers are noisier than on an idle machine")
    for s in errs:
        out.append(f"FAILED {s.label}: {results[s.key]['error'].splitlines()[0]}")
    return "\n".join(out)


def targets(results: dict[str, Any], system: str = "truecall") -> list[dict[str, Any]]:
    """Issue 6's targets, each a ratio measured in this run."""
    checks: list[dict[str, Any]] = []

    def ratio(name: str, path: tuple[str, ...], other: str, want: float, higher_is_better: bool = True) -> None:
        mine, theirs = _get(results, system, *path), _get(results, other, *path)
        if mine is None or theirs is None or not theirs:
            checks.append({"target": name, "measured": None, "want": want, "ok": None})
            return
        r = mine / theirs
        ok = r >= want if higher_is_better else r <= want
        check = {"target": name, "measured": round(r, 3), "want": want, "ok": ok}
        if path[-1] == "calls_per_s":  # the same ratio from server CPU per call: steadier on a busy machine
            my_cpu = _get(results, system, path[0], "server_cpu_us_per_call")
            their_cpu = _get(results, other, path[0], "server_cpu_us_per_call")
            if my_cpu and their_cpu:
                check["by_cpu"] = round(their_cpu / my_cpu, 3)
        checks.append(check)

    ratio("stdio sequential ≥ 10× FastMCP", ("stdio-seq", "calls_per_s"), "fastmcp", 10)
    ratio("stdio sequential ≥ 5× mcp low-level", ("stdio-seq", "calls_per_s"), "mcp-lowlevel", 5)
    ratio("stdio sequential ≥ 40 % of plain loop", ("stdio-seq", "calls_per_s"), "plain-loop", 0.40)
    ratio("stdio pipelined ≥ 20× FastMCP", ("stdio-pipe64", "calls_per_s"), "fastmcp", 20)
    for era, sse, clients in HTTP_CELLS:
        if clients != 16:
            continue
        k = http_key(era, sse, clients)
        ratio(f"{k} ≥ 10× FastMCP", (k, "calls_per_s"), "fastmcp", 10)
        ratio(f"{k} ≥ 3× mcp low-level", (k, "calls_per_s"), "mcp-lowlevel", 3)
        ratio(f"{k} ≥ 30 % of bare ASGI", (k, "calls_per_s"), "bare-asgi", 0.30)
    ratio("cold start ≤ 20 % of FastMCP", ("cold_start", "first_response_ms"), "fastmcp", 0.20, False)
    ratio("RSS after warm-up ≤ 45 % of FastMCP", ("rss_mb_after_warmup",), "fastmcp", 0.45, False)
    return checks


def targets_text(checks: list[dict[str, Any]]) -> str:
    out = ["targets (truecall, default configuration; ratio = truecall ÷ other for calls/s, "
           "truecall ÷ FastMCP for cold start and RSS):"]
    for c in checks:
        mark = "n/a " if c["ok"] is None else ("PASS" if c["ok"] else "FAIL")
        measured = "–" if c["measured"] is None else f"{c['measured']:.3g}"
        by_cpu = f"   (by server CPU per call: {c['by_cpu']:.3g})" if "by_cpu" in c else ""
        out.append(f"  {mark}  {c['target']:<44} measured ratio {measured:>6}{by_cpu}")
    held = sum(1 for c in checks if c["ok"])
    out.append(f"  {held}/{len(checks)} hold")
    return "\n".join(out)


# -- issue 15: the type-hinted twin and the import cost --------------------------------------------------

#: What ``import truecall`` costs, and what a server written the type-hinted way adds (msgspec and
#: docstring_parser, imported at its first registration); pydantic must stay out unless the user imports it.
IMPORT_SNIPPETS = {
    "import truecall": "import truecall",
    "import truecall + one typed tool": ("import truecall\ns = truecall.Server('x')\n"
                                         "@s.tool\ndef f(a: int, b: int = 1) -> int:\n"
                                         "    \"\"\"Add.\n\n    Args:\n        a: first\n    \"\"\"\n"
                                         "    return a + b\n"),
}


_IMPORT_TIMED = "import time\nt0 = time.perf_counter()\nimport truecall\nprint((time.perf_counter() - t0) * 1000)\n"


def import_compare(systems: list[System], runs: int) -> dict[str, float]:
    """``import truecall`` in a fresh interpreter for each system that serves truecall (this tree and
    every ``--compare`` tree), taking turns, after one discarded run each: the median ms of each."""
    samples: dict[str, list[float]] = {s.key: [] for s in systems}
    for i in range(runs + 1):
        for s in systems if i % 2 == 0 else list(reversed(systems)):
            done = subprocess.run([s.python, "-c", _IMPORT_TIMED], capture_output=True, text=True, check=True,
                                  cwd=str(ROOT), env=interpreter_env(s))
            if i:
                samples[s.key].append(float(done.stdout))
    return {key: round(statistics.median(v), 1) for key, v in samples.items()}


def import_costs(python: str, runs: int) -> dict[str, Any]:
    """Median wall ms of each snippet in a fresh interpreter (after one discarded run), and which
    schema libraries it left imported."""
    out: dict[str, Any] = {}
    for label, code in IMPORT_SNIPPETS.items():
        timed = ("import sys, time\nt0 = time.perf_counter()\n" + code +
                 "\nt1 = time.perf_counter()\n"
                 "print((t1 - t0) * 1000, 'pydantic' in sys.modules, 'msgspec' in sys.modules)\n")
        samples: list[float] = []
        flags = ""
        for i in range(runs + 1):
            done = subprocess.run([python, "-c", timed], capture_output=True, text=True, check=True, cwd=str(ROOT),
                                  env=interpreter_env())
            ms, pyd, msg = done.stdout.split()
            if i:
                samples.append(float(ms))
            flags = (f"pydantic {'imported' if pyd == 'True' else 'not imported'}, "
                     f"msgspec {'imported' if msg == 'True' else 'not imported'}")
        out[label] = {"median_ms": round(statistics.median(samples), 1), "modules": flags}
    return out


def typed_vs_hand(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Server CPU per call of the type-hinted twin ÷ the hand-schema tool, per cell (goal ≤ 1.05)."""
    hand, typed = results.get("truecall") or {}, results.get("truecall-typed") or {}
    rows = []
    for cell, data in hand.items():
        if not isinstance(data, dict):
            continue
        a, b = data.get("server_cpu_us_per_call"), (typed.get(cell) or {}).get("server_cpu_us_per_call")
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a:
            rows.append({"cell": cell, "hand_us": round(a, 1), "typed_us": round(b, 1),
                         "ratio": round(b / a, 3), "ok": b / a <= 1.05})
    return rows


def typed_text(rows: list[dict[str, Any]], imports: dict[str, Any] | None) -> str:
    out = ["issue 15: the type-hinted twin (server CPU µs per call, typed ÷ hand-schema; goal ≤ 1.05):"]
    for r in rows:
        out.append(f"  {'PASS' if r['ok'] else 'FAIL'}  {r['cell']:<24} hand {r['hand_us']:>7.1f}  typed "
                   f"{r['typed_us']:>7.1f}  ratio {r['ratio']:.3f}")
    if not rows:
        out.append("  n/a (run truecall and truecall-typed)")
    for label, v in (imports or {}).items():
        out.append(f"  {label:<34} {v['median_ms']:>6.1f} ms  ({v['modules']})")
    return "\n".join(out)


# -- main ------------------------------------------------------------------------------------------------


def compared_system(ref: str, workdir: str) -> System:
    """truecall as it was at ``ref``: its ``src/`` unpacked into ``workdir``, first on PYTHONPATH."""
    unpacked_src(ref, Path(workdir))
    base = [sys.executable, "-m", "truecall", "serve", f"{PEERS / 'truecall_app.py'}:app"]
    path = os.pathsep.join(filter(None, [os.path.join(workdir, "src"), os.environ.get("PYTHONPATH")]))
    return System(f"truecall@{ref}", f"truecall@{ref}", sys.executable, base,
                  lambda port, _json: base + ["--http", "--port", str(port)], env={"PYTHONPATH": path})


#: The cells ``--compare`` checks: server CPU per call (steadier than throughput on a shared machine).
COMPARED = [("stdio-seq", "server_cpu_us_per_call"), ("stdio-pipe64", "server_cpu_us_per_call")] + [
    (http_key(era, sse, clients), "server_cpu_us_per_call") for era, sse, clients in HTTP_CELLS if clients != 1]


def compare_rows(results: dict[str, Any], other: str, this: str = "truecall",
                 per_process: dict[tuple[str, str], list[dict[str, Any]]] | None = None) -> list[dict[str, Any]]:
    """Each compared cell: both systems' figure over all their processes, the ratio, and (with
    ``--processes``) the ratio of each pair of processes that ran side by side."""
    rows = []
    for cell, metric in COMPARED:
        mine, theirs = _get(results, this, cell, metric), _get(results, other, cell, metric)
        pairs = zip((per_process or {}).get((this, cell), []), (per_process or {}).get((other, cell), []))
        by_process = [round(a[metric] / b[metric], 3) for a, b in pairs if a.get(metric) and b.get(metric)]
        rows.append({"cell": cell, "metric": metric, "this": mine, "other": theirs,
                     "ratio": round(mine / theirs, 3) if mine and theirs else None, "by_process": by_process,
                     "median_pair": round(statistics.median(by_process), 3) if by_process else None,
                     # three pairs or more: one process disturbed for a while (another process's burst, a
                     # kernel thread) moves the sum but not the median of the pairs
                     "judged_by": "median" if len(by_process) >= 3 else "all"})
    return rows


def compare_text(results: dict[str, Any], other: str, this: str = "truecall",
                 per_process: dict[tuple[str, str], list[dict[str, Any]]] | None = None) -> str:
    lines = [f"server CPU µs/call, {'this tree' if this == 'truecall' else this} ÷ {other} (> 1.03: slower by "
             "more than 3 %; 'all': every process's calls summed; with three processes or more each judged by "
             "the median of the pairs that ran side by side):"]
    for row in compare_rows(results, other, this, per_process):
        r = row["ratio"] if row["judged_by"] == "all" else row["median_pair"]
        verdict = "–" if r is None else ("SLOWER" if r > 1.03 else "ok")
        total = "–" if row["ratio"] is None else f"{row['ratio']:.3f}"
        pairs = (f"  process pairs: median {row['median_pair']:.3f}, {min(row['by_process']):.3f}–"
                 f"{max(row['by_process']):.3f}" if len(row["by_process"]) > 1 else "")
        lines.append(f"  {row['cell']:<24} {fmt_num(row['this']):>8} vs {fmt_num(row['other']):>8}  all {total}{pairs}"
                     f"  {verdict} (by {'the median pair' if row['judged_by'] == 'median' else 'all'})")
    return "\n".join(lines)


def retention_systems(spec: str, workdir: str, export: bool = False) -> list[System]:
    """``--retention SPEC``: truecall served twice more, its audit trail kept to SPEC (a sweep every
    second; with ``export``, every dropped record exported first), and with retention off (``all``):
    the same rounds."""
    base = [sys.executable, "-m", "truecall", "serve", f"{PEERS / 'truecall_app.py'}:app"]

    def http(port: int, _json: bool) -> list[str]:
        return base + ["--http", "--port", str(port)]

    on = {"TRUECALL_AUDIT_RETAIN": spec, "TRUECALL_AUDIT_SWEEP_S": "1"}
    if export:
        on["TRUECALL_AUDIT_EXPORT"] = os.path.join(workdir, "export")
    return [System("truecall-retain", f"truecall retain {spec}{' (export)' * export}", sys.executable, base, http,
                   env=on),
            System("truecall-retain-off", "truecall retain all", sys.executable, base, http,
                   env={"TRUECALL_AUDIT_RETAIN": "all"})]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="truecall vs FastMCP and the mcp SDK: stdio and HTTP.")
    parser.add_argument("--quick", action="store_true", help="short run (1.5 s per cell)")
    parser.add_argument("--seconds", type=float, help="override the seconds per cell")
    parser.add_argument("--systems", help="comma-separated subset (truecall,truecall-noaudit,truecall-typed,fastmcp,"
                                          "mcp-lowlevel,mcp-highlevel,plain-loop,bare-asgi)")
    parser.add_argument("--no-stdio", action="store_true", help="skip the stdio cells and cold start")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP cells")
    parser.add_argument("--out", help="where to write the JSON (default bench/results/<timestamp>.json)")
    parser.add_argument("--compare", metavar="REF", action="append",
                        help="also serve truecall from REF's src/ (git archive) in the same rounds, and print this "
                             "tree's ratio to it per cell; given twice, e.g. --compare OLD --compare HEAD, the second "
                             "ratio (this tree against its own commit) is the run's noise floor")
    parser.add_argument("--processes", type=int, default=1, metavar="N",
                        help="start every server N times, one after the other, and measure every cell on each (the "
                             "figures sum all N): two processes of the same code differ by a few %% in CPU per call "
                             "(where the interpreter and its heap land in memory), and N of them average that out")
    parser.add_argument("--pin", action="store_true",
                        help="servers on the last CPU, this driver on the others: no server shares a core with the "
                             "driver one slice and not the next (where the scheduler puts them moves CPU per call by "
                             "several %%); every system is pinned alike")
    parser.add_argument("--retention", metavar="SPEC", help="also serve truecall with TRUECALL_AUDIT_RETAIN=SPEC "
                                                            "and with it off, and print their ratio per cell (e.g. "
                                                            "30s or 10000: a sweep that drops as calls arrive)")
    parser.add_argument("--retention-export", action="store_true",
                        help="with --retention: every dropped record exported first (TRUECALL_AUDIT_EXPORT)")
    ns = parser.parse_args(argv)

    started = time.perf_counter()
    profile: dict[str, Any] = dict(PROFILES["quick" if ns.quick else "full"])
    if ns.seconds:
        profile["cell_s"] = ns.seconds
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    RESULTS.mkdir(parents=True, exist_ok=True)
    logs = RESULTS / f"{stamp}-logs"
    logs.mkdir()
    runner = Runner(profile, logs)

    peers_python = ensure_peers_venv(runner.say)
    versions_at_start = versions(peers_python)  # the tree may change while we run: record what we started with
    all_systems = systems(peers_python)
    retention_dir: str | None = None
    if ns.retention:
        retention_dir = tempfile.mkdtemp(prefix="truecall-bench-retention-")
        all_systems[1:1] = retention_systems(ns.retention, retention_dir, ns.retention_export)
    wanted = set(ns.systems.split(",")) if ns.systems else None
    if wanted:
        unknown = wanted - {s.key for s in all_systems}
        if unknown:
            parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
    chosen = [s for s in all_systems if wanted is None or s.key in wanted]
    compare_dirs: list[str] = []
    for at, ref in enumerate(ns.compare or []):
        compare_dirs.append(tempfile.mkdtemp(prefix="truecall-bench-compare-"))
        chosen.insert(1 + at, compared_system(ref, compare_dirs[-1]))

    if ns.processes < 1:
        parser.error("--processes: at least 1")
    if ns.pin:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            parser.error("--pin: needs two CPUs at least")
        profile["server_cpus"] = [cpus[-1]]
        os.sched_setaffinity(0, set(cpus[:-1]))
        runner.say(f"pinned: servers on CPU {cpus[-1]}, the driver on {', '.join(map(str, cpus[:-1]))}")
    for n in range(ns.processes):
        if ns.processes > 1:
            runner.say(f"-- servers started afresh: {n + 1} of {ns.processes} --")
        if not ns.no_stdio:
            runner.stdio([s for s in chosen if s.stdio])
        if not ns.no_http:
            runner.http([s for s in chosen if s.http])
    results = {s.key: runner.results.get(s.key, {}) for s in chosen}
    imports = import_costs(sys.executable, 3 if ns.quick else 7)

    elapsed = time.perf_counter() - started
    checks = targets(results)
    report = {
        "started": stamp,
        "profile": "quick" if ns.quick else "full",
        "settings": profile,
        "processes": ns.processes,
        "argv": sys.argv[1:],
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "versions": versions_at_start,
        "systems": {s.key: {"label": s.label} for s in chosen},
        "results": results,
        "targets": checks,
        "targets_noaudit": targets(results, "truecall-noaudit"),
        "typed_vs_hand": typed_vs_hand(results),
        "import_ms": imports,
        "elapsed_s": round(elapsed, 1),
    }
    out = Path(ns.out) if ns.out else RESULTS / f"{stamp}.json"
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print()
    print(table(results, chosen))
    print()
    print(targets_text(checks))
    print()
    print(typed_text(typed_vs_hand(results), imports))
    if ns.compare:
        report["compare"] = {}
        imported = import_compare([s for s in chosen if s.key == "truecall" or s.key.startswith("truecall@")],
                                  9 if ns.quick else 25)
        report["import_truecall_ms"] = imported
        print()
        print("import truecall, median ms (fresh interpreters taking turns, bytecode cached): " + ", ".join(
            f"{key} {ms:.1f}" + ("" if key == "truecall" or "truecall" not in imported
                                 else f" (this tree {imported['truecall'] - ms:+.1f})")
            for key, ms in imported.items()))
        for ref in ns.compare:
            print()
            print(compare_text(results, f"truecall@{ref}", per_process=runner.per_process))
            report["compare"][ref] = compare_rows(results, f"truecall@{ref}", per_process=runner.per_process)
        out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        for folder in compare_dirs:
            shutil.rmtree(folder, ignore_errors=True)
    if ns.retention:
        print()
        print(compare_text(results, "truecall-retain-off", "truecall-retain", runner.per_process))
        report["retention"] = compare_rows(results, "truecall-retain-off", "truecall-retain", runner.per_process)
        if results.get("truecall"):  # the default budget (90d,2GB): a sweep that finds nothing to drop
            print()
            print(compare_text(results, "truecall-retain-off", "truecall", runner.per_process))
            report["retention_default"] = compare_rows(results, "truecall-retain-off", "truecall", runner.per_process)
        report["loadavg_end"] = os.getloadavg()
        out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        shutil.rmtree(retention_dir or "", ignore_errors=True)
    print(f"\n{'quick' if ns.quick else 'full'} run: {elapsed:.0f} s; results: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}"
          f"; server logs: {logs.relative_to(ROOT)}")
    return 0 if all(not ("error" in results[s.key]) for s in chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
