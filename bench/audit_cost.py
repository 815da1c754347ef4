"""The audit's share of server work per call, in instructions (callgrind), audit on minus off.

    python bench/audit_cost.py [--calls 2000] [--mode pipe|seq] [--ref REV]

Serves ``bench/peers/truecall_app.py`` (``app``: validation and the durable audit on;
``app_noaudit``: the audit off) on stdio under ``valgrind --tool=callgrind`` with
instrumentation off, warms it up, then counts the instructions of exactly ``--calls`` calls
(pipelined 64 in flight, or one at a time), the journal's load into ``audit_events`` included
(the count stops a few seconds after the last answer).  ``--ref REV`` runs the same two apps
from ``git archive REV src`` in the same run.  Unlike CPU time, instruction counts do not
depend on what else the machine runs: a shared, loaded machine gives the same numbers (they
leave out the kernel's share, e.g. the journal's ``write()``; ``bench/run.py`` measures that).
A load is one transaction (~120k instructions, then ~14k per row).  Under valgrind's slowdown a
load takes fewer rows at a time than at full speed, so the per-transaction share is overstated,
and not equally on both sides: trees before 2026-12-01 load every 20 ms whatever the rate, later
ones 250 ms after the first record of a batch or once 64 KiB wait (``truecall.audit._log.LOAD_DELAY_S``,
``LOAD_BYTES``).  bench/PROFILE.md says how much of a ratio that accounts for.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from _drivers import (_STDIO_CALL, StdioPeer, callgrind_instrument, callgrind_total, in_parallel,  # noqa: E402
                      stop, unpacked_src)


def _pipelined(peer: StdioPeer, calls: int, window: int = 64) -> None:
    first = min(window, calls)
    peer.write(b"".join(_STDIO_CALL % (5_000_000 + i) for i in range(first)))
    sent, got = first, 0
    while got < calls:
        line = peer.read_response()
        got += 1
        if b'"structuredContent"' not in line:
            raise RuntimeError(f"unexpected answer: {line[:300]!r}")
        if sent < calls:
            peer.write(_STDIO_CALL % (5_000_000 + sent))
            sent += 1


def _sequential(peer: StdioPeer, calls: int) -> None:
    for i in range(calls):
        peer.write(_STDIO_CALL % (7_000_000 + i))
        peer.read_response()


def instructions_per_call(attr: str, src: Path, calls: int, mode: str, out: Path) -> float:
    tmp = tempfile.mkdtemp(prefix="tc-audit-cost-")
    env = dict(os.environ, BENCH_TRUECALL_DB=os.path.join(tmp, "bench.db"), PYTHONPATH=str(src))
    argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
            sys.executable, "-m", "truecall", "serve", f"{BENCH / 'peers' / 'truecall_app.py'}:{attr}"]
    with open(os.path.join(tmp, "server.log"), "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, cwd=tmp)
    run = _pipelined if mode == "pipe" else _sequential
    try:
        peer = StdioPeer(proc)
        peer.handshake()
        run(peer, 300)
        time.sleep(0.5)
        callgrind_instrument(proc.pid, True)
        run(peer, calls)
        time.sleep(3.0)  # the pending load runs (it is part of the audit's cost)
        callgrind_instrument(proc.pid, False)
    finally:
        stop(proc, grace=60)
    return callgrind_total(out) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--mode", choices=("pipe", "seq"), default="pipe")
    parser.add_argument("--ref", help="also measure git archive REF src, in the same run")
    ns = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tc-audit-cost-"))
    trees = {"this tree": ROOT / "src"}
    if ns.ref:
        trees[ns.ref] = unpacked_src(ns.ref, work / "ref")
    results: dict[tuple[str, str], float] = {}

    def one(tree: str, attr: str) -> None:
        out = work / f"{len(results)}-{attr}-{abs(hash(tree))}.callgrind"
        results[(tree, attr)] = instructions_per_call(attr, trees[tree], ns.calls, ns.mode, out)

    in_parallel(one, [(t, a) for t in trees for a in ("app", "app_noaudit")])
    print(f"instructions per call, stdio {'pipelined (64)' if ns.mode == 'pipe' else 'sequential'}, "
          f"{ns.calls} calls (callgrind):")
    for tree in trees:
        on, off = results[(tree, "app")], results[(tree, "app_noaudit")]
        print(f"  {tree:>12}: audit on {on:>9,.0f}  off {off:>9,.0f}  audit {on - off:>8,.0f} "
              f"({100 * (on - off) / on:.0f} % of the call)")
    if ns.ref:
        mine = results[("this tree", "app")] - results[("this tree", "app_noaudit")]
        theirs = results[(ns.ref, "app")] - results[(ns.ref, "app_noaudit")]
        print(f"  the audit's instructions per call, this tree ÷ {ns.ref}: {mine / theirs:.3f}")


if __name__ == "__main__":
    main()
