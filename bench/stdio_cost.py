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

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from _drivers import (_STDIO_CALL, BenchError, StdioPeer, _fast_ok, callgrind_instrument, chosen_cells,  # noqa: E402
                      cost_cells, cost_parser, cost_trees, keep_or_remove, per_call, print_costs, under_callgrind)

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
    with under_callgrind(proc, cell, src, tmp):
        peer = StdioPeer(proc)
        peer.handshake()
        run = _sequential if cell == "seq" else _pipelined
        run(peer, WARM_CALLS, 10)
        time.sleep(0.5)
        callgrind_instrument(proc.pid, True)
        run(peer, calls, 1_000_000)
        time.sleep(1.0)  # the journal's pending load runs (part of the calls' cost)
        callgrind_instrument(proc.pid, False)
    return per_call(out, tmp, calls)


def main() -> None:
    parser = cost_parser((__doc__ or "").splitlines()[0], "seq", f"comma-separated, of {', '.join(CELLS)} (default: seq)")
    ns = parser.parse_args()
    cells = chosen_cells(parser, ns.cells, CELLS)
    work = Path(tempfile.mkdtemp(prefix="tc-stdio-cost-"))
    trees = cost_trees(ROOT / "src", ns.ref, work)
    results = cost_cells(cells, trees, work, lambda tree: "stdio-tree" if tree == "this tree" else "stdio-ref",
                         lambda src, cell, out: instructions_per_call(ns.attr, src, cell, ns.calls, out))
    print(f"instructions per tools/call, stdio, {ns.calls} calls, {ns.attr} (callgrind):")
    print_costs(cells, list(trees), results, ns.ref, 8)
    keep_or_remove(work, ns.keep)


if __name__ == "__main__":
    main()
