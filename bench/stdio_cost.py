"""Server work per stdio call, in instructions (callgrind): the stdio twin of ``http_cost.py``.

    python bench/stdio_cost.py [--calls 2000] [--cells seq,pipe64] [--attr app] [--ref REV] [--keep]

Serves ``bench/peers/truecall_app.py:app`` (validation and the durable audit on) with ``truecall
serve`` over its stdin/stdout pipes under ``valgrind --tool=callgrind --instr-atstart=no``, one
server per cell, driven as ``bench/run.py``'s stdio cells drive it (``bench/_drivers.py``'s
``StdioPeer``: the 2025-11-25 handshake, then ``tools/call`` lines).  After a warm-up with
instrumentation off it counts the instructions of exactly ``--calls`` calls — ``seq``: one at a
time, each answer read before the next request is written; ``pipe64``: 64 requests kept in
flight — plus what the server does in the second after the last answer (the audit journal's
pending load: part of a call's cost).  ``--ref REV`` measures the same cells from ``git archive
REV src`` in the same run; ``--keep`` keeps the callgrind files for ``callgrind_annotate
--inclusive=yes``.  Why instructions and not CPU time: see ``http_cost.py``.

Each cell's count is also split (``_drivers.callgrind_split``): ``calls``, the event loop's work
outside its timers (the requests themselves); ``timers``, its timer callbacks (the journal's load);
``elsewhere``, other threads (the retention sweep).  Only ``calls`` is independent of the clock:
the other two are work per tick, and callgrind's slowdown, longer on a busy machine, gives a
thousand calls more ticks (83a5ac1's ``seq`` over four runs: 4.6 % apart in ``total``, 0.5 % in
``calls``).
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

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from _drivers import (_STDIO_CALL, BenchError, StdioPeer, _fast_ok, callgrind_instrument, callgrind_split,  # noqa: E402
                      chosen_cells, cost_cells, print_costs, stop, unpacked_src)

CELLS = ("seq", "pipe64")
WARM_CALLS = 200
WINDOW = 64


def _sequential(peer: StdioPeer, calls: int, base: int) -> None:
    for i in range(calls):
        peer.write(_STDIO_CALL % (base + i))
        line = peer.read_response()
        if not _fast_ok(line):
            raise BenchError(f"bad answer: {line[:300]!r}")


def _pipelined(peer: StdioPeer, calls: int, base: int) -> None:
    """``calls`` requests, ``WINDOW`` of them in flight until the last is sent."""
    sent = min(WINDOW, calls)
    peer.write(b"".join(_STDIO_CALL % (base + i) for i in range(sent)))
    answered = 0
    while answered < calls:
        line = peer.read_response()
        if not _fast_ok(line):
            raise BenchError(f"bad answer: {line[:300]!r}")
        answered += 1
        if sent < calls:
            peer.write(_STDIO_CALL % (base + sent))
            sent += 1


def instructions_per_call(attr: str, src: Path, cell: str, calls: int, out: Path) -> dict[str, float]:
    tmp = tempfile.mkdtemp(prefix="tc-stdio-cost-")
    env = dict(os.environ, BENCH_TRUECALL_DB=os.path.join(tmp, "bench.db"), PYTHONPATH=str(src))
    argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", sys.executable,
            "-m", "truecall", "serve", f"{BENCH / 'peers' / 'truecall_app.py'}:{attr}"]
    with open(os.path.join(tmp, "server.log"), "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, cwd=tmp)
    try:
        peer = StdioPeer(proc)
        peer.handshake()
        run = _sequential if cell == "seq" else _pipelined
        run(peer, WARM_CALLS, 10)
        time.sleep(0.5)
        callgrind_instrument(proc.pid, True)
        run(peer, calls, 1_000_000)
        time.sleep(1.0)  # the journal's pending load runs (part of the calls' cost)
        callgrind_instrument(proc.pid, False)
    except Exception as exc:
        raise BenchError(f"{cell} ({src}): {exc}; server log: {tmp}/server.log") from exc
    finally:
        stop(proc, grace=60.0)
    split = callgrind_split(out)
    shutil.rmtree(tmp, ignore_errors=True)
    return {part: count / calls for part, count in split.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--cells", default="seq", help=f"comma-separated, of {', '.join(CELLS)} (default: seq)")
    parser.add_argument("--attr", default="app", help="the app in bench/peers/truecall_app.py (default: app)")
    parser.add_argument("--ref", help="also measure git archive REF src, in the same run")
    parser.add_argument("--keep", action="store_true", help="keep the callgrind files")
    ns = parser.parse_args()
    cells = chosen_cells(parser, ns.cells, CELLS)
    work = Path(tempfile.mkdtemp(prefix="tc-stdio-cost-"))
    trees: dict[str, Path] = {"this tree": ROOT / "src"}
    if ns.ref:
        trees[ns.ref] = unpacked_src(ns.ref, work / "ref")
    results = cost_cells(cells, trees, work, lambda tree: "stdio-tree" if tree == "this tree" else "stdio-ref",
                         lambda src, cell, out: instructions_per_call(ns.attr, src, cell, ns.calls, out))
    print(f"instructions per tools/call, stdio, {ns.calls} calls, {ns.attr} (callgrind):")
    print_costs(cells, list(trees), results, ns.ref, 8)
    if ns.keep:
        print(f"callgrind files: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
