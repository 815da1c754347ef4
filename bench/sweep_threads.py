"""Where retention's CPU goes in a serving process, thread by thread (issue 29's 3 % budget).

    python bench/sweep_threads.py [--seconds 1.5] [--rounds 8] [--retention 10000] [--export] [--warm S]
                                  [--drain S] [--ref REV] [--no-pin]

Serves ``bench/peers/truecall_app.py:app`` over stdio twice — ``TRUECALL_AUDIT_RETAIN=SPEC`` with a
sweep every second (``on``; ``--export``: every dropped record exported first), and ``all``
(``off``), as ``run.py --retention`` does — and,
with ``--ref REV``, the same two from ``git archive REV src`` (``REV on``, ``REV off``).  The servers
take turns (rounds in alternating order, each preceded by a warm-up, a second unless --warm) under pipelined load
(64 calls in flight, ``run.py``'s stdio-pipe64 cell), pinned to the last CPU (the driver on the
others) unless ``--no-pin``.  For each server: µs of CPU per call over the measured windows, summed
over its threads and split by thread (``/proc/<pid>/task/*/stat``, utime + stime: the event loop
``loop``, and every other thread: the sweep's, when the interpreter does not name threads for the
system, as 3.11 does not; with retention off the others take ~0 here), and its voluntary and involuntary context
switches per call.  On ÷ off per server pair is printed last.  The split is what ``run.py`` cannot
show: the sweep thread's own work, and what it costs the event loop (GIL handovers, a lock shared on
the one SQLite connection).

``--warm S`` past the age (and two of its tenths and a sweep: ``--retention 10s --warm 14``): the
records a window's sweeps drop came during the same server's warm-up, under the same load, so the
window sees retention at a steady rate — what a server under constant load pays.

``--drain S``: after the rounds, both servers idle ``S`` seconds and each one's CPU over its whole
life (from its handshake) is divided by its calls.  The servers take turns, so a record made in one
server's window is dropped by a sweep that may fall while it waits: the windows miss part of what
retention costs, most of all with an age (``--retention 10s``: a record goes some ten seconds after
it came).  With ``S`` past the age (and two of its tenths and a sweep), every record made has been
dropped by the end, so no drop is missed; but the sweeps that ran while a server waited for its
turn (each with its fixed cost: listing, sealing) are charged to its calls too, so whole life, on ÷
off is an upper bound of retention's cost per call (``--warm`` gives the steady one).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _drivers import StdioPeer, cpu_seconds, stop, unpacked_src  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def threads(pid: int) -> dict[int, tuple[str, float, int, int, float]]:
    """tid -> (name, CPU seconds, voluntary, involuntary context switches, of the CPU the kernel's)."""
    out: dict[int, tuple[str, float, int, int, float]] = {}
    base = Path(f"/proc/{pid}/task")
    for task in base.iterdir():
        try:
            stat = (task / "stat").read_text()
            status = (task / "status").read_text()
        except FileNotFoundError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK
        sw = {k: int(v) for k, v in (line.split(":") for line in status.splitlines()
                                     if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")))}
        out[int(task.name)] = (name, cpu, sw.get("voluntary_ctxt_switches", 0), sw.get("nonvoluntary_ctxt_switches", 0),
                               int(fields[12]) / TICK)
    return out


def role(name: str, tid: int, pid: int) -> str:
    if tid == pid:
        return "loop"
    return "sweep" if name.startswith("truecall-audit") else "other"


class Server:
    def __init__(self, label: str, env: dict[str, str], work: Path, cpus: set[int] | None) -> None:
        self.label = label
        self.tmp = Path(tempfile.mkdtemp(prefix="tc-sweep-threads-", dir=work))
        full = dict(os.environ)
        full.update(env)
        full["BENCH_TRUECALL_DB"] = str(self.tmp / "bench.db")
        full["PYTHONHASHSEED"] = "0"
        if "TRUECALL_AUDIT_EXPORT" in full:
            full["TRUECALL_AUDIT_EXPORT"] = str(self.tmp / "export")
        self.log = open(self.tmp / "server.log", "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "truecall", "serve", str(ROOT / "bench" / "peers" / "truecall_app.py") + ":app"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=full, cwd=str(ROOT),
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
        self.peer = StdioPeer(self.proc)
        self.peer.handshake()
        self.born = cpu_seconds(self.proc.pid)
        self.life: float | None = None
        self.calls = 0
        #: Calls made since the handshake, the warm-ups' included (for the whole life's figure).
        self.every_call = 0
        self.cpu: dict[str, float] = {}
        self.switches = [0, 0]

    def round(self, warm_s: float, seconds: float) -> None:
        self.every_call += self.peer.pipelined(warm_s).calls
        before = threads(self.proc.pid)
        cell = self.peer.pipelined(seconds)
        after = threads(self.proc.pid)
        self.calls += cell.calls
        self.every_call += cell.calls
        for tid, (name, cpu, vol, invol, kernel) in after.items():
            b = before.get(tid, (name, 0.0, 0, 0, 0.0))
            key = role(name, tid, self.proc.pid)
            self.cpu[key] = self.cpu.get(key, 0.0) + cpu - b[1]
            self.cpu[key + " sys"] = self.cpu.get(key + " sys", 0.0) + kernel - b[4]
            self.switches[0] += vol - b[2]
            self.switches[1] += invol - b[3]

    def close(self) -> None:
        stop(self.proc)
        self.log.close()

    def summary(self) -> dict[str, Any]:
        per = {k: v / max(1, self.calls) * 1e6 for k, v in self.cpu.items()}
        return {"calls": self.calls, "total": sum(v for k, v in per.items() if not k.endswith(" sys")), **per,
                "vcs": self.switches[0] / max(1, self.calls), "ivcs": self.switches[1] / max(1, self.calls)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="measured seconds per round and server")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--retention", default="10000")
    parser.add_argument("--warm", type=float, default=1.0,
                        help="seconds of load before each measured window (past an age: see above)")
    parser.add_argument("--export", action="store_true", help="every dropped record exported first")
    parser.add_argument("--drain", type=float, default=0.0, help="idle seconds after the rounds; then whole-life CPU")
    parser.add_argument("--ref", help="also serve git archive REV src (first on PYTHONPATH)")
    parser.add_argument("--no-pin", action="store_true")
    ns = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    server_cpus: set[int] | None = None
    if not ns.no_pin and len(cpus) >= 2:
        server_cpus = {cpus[-1]}
        os.sched_setaffinity(0, set(cpus[:-1]))
    work = Path(tempfile.mkdtemp(prefix="tc-sweep-threads-"))
    on = {"TRUECALL_AUDIT_RETAIN": ns.retention, "TRUECALL_AUDIT_SWEEP_S": "1"}
    if ns.export:
        on["TRUECALL_AUDIT_EXPORT"] = "x"
    off = {"TRUECALL_AUDIT_RETAIN": "all"}
    specs: list[tuple[str, dict[str, str]]] = [("on", on), ("off", off)]
    if ns.ref:
        src = unpacked_src(ns.ref, work / "ref")
        specs += [(f"{ns.ref} on", {**on, "PYTHONPATH": str(src)}), (f"{ns.ref} off", {**off, "PYTHONPATH": str(src)})]
    servers: list[Server] = []
    try:
        for label, env in specs:
            servers.append(Server(label, env, work, server_cpus))
        for r in range(ns.rounds):
            for s in servers if r % 2 == 0 else reversed(servers):
                s.round(ns.warm, ns.seconds)
            print(f"round {r + 1}/{ns.rounds} done", file=sys.stderr, flush=True)
        if ns.drain:
            time.sleep(ns.drain)
            for s in servers:
                s.life = cpu_seconds(s.proc.pid) - s.born
    finally:
        for s in servers:
            s.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"server CPU µs per call, stdio pipelined (64 in flight), {ns.rounds} rounds of {ns.seconds} s"
          f"{', pinned' if server_cpus else ''}:")
    print(f"  {'server':<16} {'calls':>8} {'total':>7} {'loop':>7} {'(kernel)':>8} {'sweep':>7} {'other':>7} {'(kernel)':>8} {'vcs/call':>9} {'ivcs/call':>9}")
    sums = {s.label: s.summary() for s in servers}
    for label, r in sums.items():
        print(f"  {label:<16} {r['calls']:>8} {r['total']:>7.2f} {r.get('loop', 0):>7.2f} {r.get('loop sys', 0):>8.2f} {r.get('sweep', 0):>7.2f} "
              f"{r.get('other', 0):>7.2f} {r.get('other sys', 0):>8.2f} {r['vcs']:>9.3f} {r['ivcs']:>9.3f}")
    pairs = [("on", "off")] + ([(f"{ns.ref} on", f"{ns.ref} off")] if ns.ref else [])
    if ns.drain:
        print(f"whole life (from the handshake to {ns.drain:g} s after the last round), server CPU µs per call:")
        lives = {s.label: (s.life or 0.0) / max(1, s.every_call) * 1e6 for s in servers}
        for label, per in lives.items():
            print(f"  {label:<16} {per:>7.2f}")
        for a, b in pairs:
            print(f"  {a} ÷ {b}: {lives[a] / lives[b]:.3f} (+{lives[a] - lives[b]:.2f} µs)")
    print("measured windows:")
    for a, b in pairs:
        x, y = sums[a], sums[b]
        print(f"  {a} ÷ {b}: total {x['total'] / y['total']:.3f} (+{x['total'] - y['total']:.2f} µs: "
              f"loop {x.get('loop', 0) - y.get('loop', 0):+.2f}, sweep {x.get('sweep', 0):.2f}, "
              f"other {x.get('other', 0) - y.get('other', 0):+.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
