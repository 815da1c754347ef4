"""``truecall serve --http --workers``: throughput, p99 and server CPU per call, one worker against N.

    python bench/workers.py                          # 1 worker and --workers auto; 1, 16, 64 clients
    python bench/workers.py --seconds 10 --rounds 3  # longer cells, more interleaved rounds
    python bench/workers.py --workers 1,2,auto --out bench/results/workers.json
    python bench/workers.py --seconds 1 --warm 0.3 --rounds 1   # a smoke run (a few seconds a cell)

Not a test: it prints figures and checks the issue's goals, it asserts nothing.  The app is the one
``bench/run.py`` serves (``bench/peers/truecall_app.py:app``: one tool, input and output validation,
the durable SQLite audit on), over 2026-07-28 stateless JSON, driven by ``bench/_drivers.py``'s HTTP
client (raw keep-alive connections on uvloop, each calling back-to-back).  Each configuration is a
fresh ``truecall serve`` on 127.0.0.1 with its own database; configurations alternate order from one
round to the next, and a cell's figures add up over the rounds.

Per cell (configuration × clients):

- **calls/s**, **p50/p99** latency of each call as the client saw it;
- **server CPU per call**: utime + stime of the supervisor *and* every worker (``/proc/<pid>/stat``),
  summed, over the measured seconds, divided by the calls;
- **client cores** (the load generator's own CPU seconds per second) and **client share** (its part
  of all the CPU the machine spent meanwhile): on a machine with few cores the generator competes
  with the workers for them, which caps what the workers can show;
- **other cores**: cores busy meanwhile with anything but these (other work on the machine: when it
  is not near 0, the figures are not the machine's);
- **spread**: each worker's part of the server CPU (a worker idle while another is saturated would
  say the connections were not spread).

**The 8-core estimate** (printed under the table, per configuration, at the client count with the
lowest server CPU per call): a worker is one process on one core, so a configuration's capacity is
``min(workers, cores) / (server CPU per call)``; on 8 cores with ``--workers auto`` (8 workers)
and the load generator on another machine that is ``8 cores / CPU per call measured here``, and
for one worker ``1 core / CPU per call``.  It assumes the CPU per call stays what it is here with
more workers (no more contention on the database than measured with these) and that the load
generator's cores are not the workers' (here they are: the measured throughput is below the
estimate by about the client's share).  The measured ratio *auto / 1 worker* at 16 and 64 clients,
set against ``workers × (1 worker's CPU per call ÷ auto's CPU per call)``, says how close to that
this machine came.

Goals (the issue's): with ``--workers 2`` (or ``auto`` when it is 2), server CPU per call within
10 % of one worker's, and throughput above one worker's, at 16 clients.  Each is PASS/FAIL from
this one run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _drivers import BenchError, Cell, http_cell, run_async  # noqa: E402

ROOT = HERE.parent
APP = f"{HERE / 'peers' / 'truecall_app.py'}:app"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def available_cores() -> int:
    return len(os.sched_getaffinity(0))


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (the workers of a supervisor), from ``/proc`` (Linux)."""
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found.extend(int(p) for p in f.read().split())
    except OSError:
        pass
    return sorted(found)


def listening(port: int) -> int:
    """How many sockets listen on 127.0.0.1:``port`` (one per worker that serves, with SO_REUSEPORT)."""
    want = f"0100007F:{port:04X}"
    count = 0
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            parts = line.split()
            if parts[1] == want and parts[3] == "0A":
                count += 1
    return count


class Served:
    """One ``truecall serve --http [--workers N]`` process tree."""

    def __init__(self, workers: str, workdir: Path) -> None:
        self.workers = workers
        self.expected = available_cores() if workers == "auto" else int(workers)
        self.port = free_port()
        workdir.mkdir(parents=True, exist_ok=True)
        self.log = workdir / "serve.log"
        cmd = [sys.executable, "-m", "truecall", "serve", APP, "--http", "--host", "127.0.0.1", "--port", str(self.port)]
        if workers != "1":
            cmd += ["--workers", workers]
        env = {**os.environ, "BENCH_TRUECALL_DB": str(workdir / "bench.db")}
        env.pop("TRUECALL_PRINCIPAL", None)
        with open(self.log, "ab") as err:
            self.proc = subprocess.Popen(cmd, env=env, cwd=str(ROOT), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 60
        while listening(self.port) < (self.expected if self.expected > 1 else 1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise BenchError(f"truecall serve --workers {workers} did not start: "
                                 f"{self.log.read_text(errors='replace')[-1500:]}")
            time.sleep(0.05)

    def pids(self) -> list[int]:
        return [self.proc.pid, *children(self.proc.pid)]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the supervisor drains its workers
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


async def cell(served: Served, clients: int, warm_s: float, seconds: float) -> Cell:
    """``clients`` keep-alive connections calling back-to-back; the CPU of every server process summed."""
    result = await http_cell(served.port, "modern", False, clients, warm_s, seconds, served.pids)
    per_process = result.extra.pop("process_cpu_s")  # the supervisor first (served.pids), then its workers
    result.extra["worker_cpu_s"] = [round(c, 3) for c in per_process[1:]] or [round(per_process[0], 3)]
    result.extra["supervisor_cpu_s"] = round(per_process[0], 3) if len(per_process) > 1 else 0.0
    return result


def summarize(c: Cell) -> dict[str, Any]:
    s = c.summary()
    s["client_cores"] = round(c.client_cpu_s / c.seconds, 2) if c.seconds else None
    s["client_share"] = round(c.client_cpu_s / c.machine_cpu_s, 3) if c.machine_cpu_s else None
    s["server_cores"] = round(c.server_cpu_s / c.seconds, 2) if c.seconds else None
    workers = c.extra.get("worker_cpu_s") or []
    total = sum(workers) or 1.0
    s["spread"] = [round(w / total, 2) for w in workers]
    return s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", default="1,auto", help="comma-separated configurations (default 1,auto)")
    parser.add_argument("--clients", default="1,16,64", help="comma-separated client counts (default 1,16,64)")
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per cell and round (default 5)")
    parser.add_argument("--warm", type=float, default=1.0, help="warm-up seconds per cell (default 1)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    configs = [w.strip() for w in args.workers.split(",") if w.strip()]
    counts = [int(c) for c in args.clients.split(",") if c.strip()]
    if not (0 < args.seconds <= 120 and 0 <= args.warm <= 30 and 1 <= args.rounds <= 20
            and all(1 <= n <= 256 for n in counts)):
        parser.error("bounded runs only: 0 < --seconds <= 120, --warm <= 30, --rounds <= 20, 1 <= clients <= 256")
    cores = available_cores()
    label = {w: (f"auto ({cores})" if w == "auto" else w) for w in configs}
    print(f"{cores} cores available to this process ({os.cpu_count()} on the machine), shared by the servers and "
          f"this load generator; {args.warm:g} s warm-up + {args.seconds:g} s per cell, {args.rounds} round(s)",
          flush=True)
    cells: dict[tuple[str, int], Cell] = {}
    spread: dict[tuple[str, int], list[float]] = {}  # CPU seconds of each worker, over the rounds
    workdir = Path(tempfile.mkdtemp(prefix="truecall-bench-workers-"))
    try:
        for r in range(args.rounds):
            for w in configs if r % 2 == 0 else list(reversed(configs)):
                served = Served(w, workdir / f"{w}-{r}")
                try:
                    for n in counts:
                        c = run_async(cell(served, n, args.warm, args.seconds))
                        per_worker = c.extra.pop("worker_cpu_s")
                        total = cells.setdefault((w, n), Cell(extra={"clients": n}))
                        total.merge(c)
                        kept = spread.setdefault((w, n), [0.0] * len(per_worker))
                        spread[(w, n)] = [a + b for a, b in zip(kept, per_worker)]
                        c.extra["worker_cpu_s"] = per_worker
                        s = summarize(c)
                        print(f"  round {r + 1} workers {label[w]:<9} {n:>3} clients: {s['calls_per_s']:8.0f}/s  "
                              f"p99 {s['p99_us'] / 1000:6.2f} ms  server {s['server_cpu_us_per_call']:6.1f} µs/call  "
                              f"client {s['client_cores']:.2f} cores", flush=True)
                finally:
                    served.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    for key, c in cells.items():
        c.extra["worker_cpu_s"] = [round(x, 3) for x in spread[key]]
    results = {f"{w}x{n}": {"workers": label[w], **summarize(c)} for (w, n), c in cells.items()}
    print()
    print(f"{'workers':<10}{'clients':>8}{'calls/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'server µs/call':>16}"
          f"{'server cores':>14}{'client cores':>14}{'client share':>14}{'other cores':>13}  spread")
    for (w, n), c in cells.items():
        s = results[f"{w}x{n}"]
        print(f"{label[w]:<10}{n:>8}{s['calls_per_s']:>10.0f}{s['p50_us'] / 1000:>9.2f}{s['p99_us'] / 1000:>9.2f}"
              f"{s['server_cpu_us_per_call']:>16.1f}{s['server_cores']:>14.2f}{s['client_cores']:>14.2f}"
              f"{s['client_share']:>14.2f}{s['foreign_cores']:>13.2f}  {s['spread']}")

    print()
    estimate: dict[str, Any] = {}
    for w in configs:
        mine = [results[f"{w}x{n}"] for n in counts]
        best = min(mine, key=lambda s: s["server_cpu_us_per_call"] or float("inf"))
        count = cores if w == "auto" else int(w)
        on8 = min(8 if w == "auto" else count, 8)
        per_call = best["server_cpu_us_per_call"]
        estimate[w] = {"workers_on_8_cores": on8, "cpu_us_per_call": per_call,
                       "calls_per_s": round(on8 * 1e6 / per_call) if per_call else None}
        print(f"8-core estimate, --workers {w if w != 'auto' else 'auto (8)'}: {on8} core(s) / {per_call:.1f} µs per call "
              f"(at {best['clients']} clients here) = {estimate[w]['calls_per_s']:,} calls/s, the load generator elsewhere")
    one = next((w for w in configs if w == "1"), None)
    many = next((w for w in configs if w != "1" and (cores if w == "auto" else int(w)) >= 2), None)
    goals: dict[str, Any] = {}
    if one is not None and many is not None:
        n_many = cores if many == "auto" else int(many)
        for n in (n for n in counts if n >= 16):
            a, b = results[f"{one}x{n}"], results[f"{many}x{n}"]
            ideal = n_many * a["server_cpu_us_per_call"] / b["server_cpu_us_per_call"]
            print(f"{n} clients: --workers {label[many]} / 1 worker = {b['calls_per_s'] / a['calls_per_s']:.2f}x "
                  f"throughput (the CPU per call allows {ideal:.2f}x with {n_many} free cores; the load generator took "
                  f"{b['client_cores']:.2f} of them)")
        if 16 in counts:
            a, b = results[f"{one}x16"], results[f"{many}x16"]
            cpu_ratio = b["server_cpu_us_per_call"] / a["server_cpu_us_per_call"]
            goals = {
                "cpu_per_call_within_10pct": {"ratio": round(cpu_ratio, 3), "pass": cpu_ratio <= 1.10},
                "throughput_above_one_worker": {"ratio": round(b["calls_per_s"] / a["calls_per_s"], 3),
                                                "pass": b["calls_per_s"] > a["calls_per_s"]},
            }
            print(f"goal: --workers {label[many]} server CPU per call within 10 % of 1 worker's at 16 clients: "
                  f"{cpu_ratio:.3f}x  {'PASS' if goals['cpu_per_call_within_10pct']['pass'] else 'FAIL'}")
            print(f"goal: --workers {label[many]} throughput above 1 worker's at 16 clients: "
                  f"{goals['throughput_above_one_worker']['ratio']:.3f}x  "
                  f"{'PASS' if goals['throughput_above_one_worker']['pass'] else 'FAIL'} "
                  f"(load generator: {b['client_share'] * 100:.0f} % of the CPU spent, {b['client_cores']:.2f} cores)")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_bytes(orjson.dumps({
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cores": cores, "cpu_count": os.cpu_count(),
            "seconds": args.seconds, "warm": args.warm, "rounds": args.rounds, "cells": results,
            "estimate_8_cores": estimate, "goals": goals}, option=orjson.OPT_INDENT_2))
        print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
