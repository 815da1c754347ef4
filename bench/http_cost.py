"""Server work per Streamable HTTP call, in instructions (callgrind), for each era and answer mode.

    python bench/http_cost.py [--calls 2000] [--clients 16] [--cells modern-json,legacy-json,...]
                              [--attr app] [--ref REV] [--keep]

Serves ``bench/peers/truecall_app.py:app`` (validation and the durable audit on; ``--attr
app_noaudit`` for the audit off) with ``truecall serve --http`` (uvicorn + httptools + uvloop)
under ``valgrind --tool=callgrind --instr-atstart=no``, one server per cell.  Each cell opens
``--clients`` keep-alive connections (the handshake era: ``initialize`` → ``Mcp-Session-Id``,
one session per connection, as ``bench/run.py`` does, with ``bench/_drivers.py``'s
``HttpClient``), warms up with instrumentation off, then counts the instructions of exactly
``--calls`` ``tools/call`` requests, split evenly over the clients calling back-to-back, plus
what the server does in the second after the last answer (the audit journal's pending load:
part of a call's cost).  ``--ref REV`` measures the same cells from ``git archive REV src`` in
the same run.  Unlike CPU time, instruction counts do not depend on what else the machine
runs, so a loaded machine gives the same numbers (give or take 1 %: work on timers — the
journal's load every 20 ms — runs per tick, not per call, and valgrind's slowdown changes how
many ticks a run spans; they also leave out the kernel's share, e.g. ``send()``).

The cells (``--cells``, comma-separated): ``modern-json``, ``legacy-json``, ``modern-sse``,
``legacy-sse`` — 2026-07-28 (stateless, ``_meta`` and routing headers) or 2025-11-25
(handshake, session id), accepting JSON only or JSON and SSE (the 2026-07-28 SSE request
carries a ``progressToken``, which is what makes truecall stream).  ``--keep`` keeps the
callgrind files (their folder is printed) for ``callgrind_annotate --inclusive=yes``.  Each count
is also split into ``calls``, ``timers`` and ``elsewhere``, as ``stdio_cost.py`` says: only ``calls``
does not grow with the run's length.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from _drivers import (BenchError, HttpClient, callgrind_instrument, chosen_cells, cost_cells, cost_parser,  # noqa: E402
                      cost_trees, keep_or_remove, open_clients, per_call, print_costs, run_async, under_callgrind)
from run import free_port, wait_listening  # noqa: E402

CELLS = {"modern-json": ("modern", False), "legacy-json": ("legacy", False),
         "modern-sse": ("modern", True), "legacy-sse": ("legacy", True)}
WARM_CALLS = 20  # per client, instrumentation off


async def _drive(port: int, era: str, sse: bool, clients: int, calls: int, pid: int) -> None:
    peers, content_type = await open_clients(port, era, sse, clients)
    if sse != (content_type == "text/event-stream"):  # (each server streams these cells)
        raise BenchError(f"{era} sse={sse}: answered {content_type}")

    async def run(client: HttpClient, n: int, base: int) -> None:
        conn = client.conn
        assert conn is not None
        for i in range(n):
            resp = await conn.request(client.call_bytes(base + i))
            if resp.status != 200 or b'"structuredContent"' not in resp.body or b'"isError":true' in resp.body:
                raise BenchError(f"bad answer ({resp.status}): {resp.body[:300]!r}")

    await asyncio.gather(*(run(p, WARM_CALLS, 10 + 1_000_000 * i) for i, p in enumerate(peers)))
    await asyncio.sleep(0.5)
    share = [calls // clients + (1 if i < calls % clients else 0) for i in range(clients)]
    await asyncio.to_thread(callgrind_instrument, pid, True)
    await asyncio.gather(*(run(p, share[i], 500_000 + 1_000_000 * i) for i, p in enumerate(peers)))
    await asyncio.sleep(1.0)  # the journal's pending load runs (part of the calls' cost)
    await asyncio.to_thread(callgrind_instrument, pid, False)
    # (counted already; a server whose keep-alive timeout passed meanwhile has closed the connection)
    await asyncio.gather(*(p.aclose() for p in peers), return_exceptions=True)


def instructions_per_call(attr: str, src: Path | None, cell: str, calls: int, clients: int, out: Path) -> dict[str, float]:
    """``src``: the truecall tree to serve ``attr`` from, or ``None`` for the bare ASGI app."""
    era, sse = CELLS[cell]
    tmp = tempfile.mkdtemp(prefix="tc-http-cost-")
    env = dict(os.environ, BENCH_TRUECALL_DB=os.path.join(tmp, "bench.db"))
    port = free_port()
    argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", sys.executable]
    if src is None:
        argv += [str(BENCH / "peers" / "bare_asgi.py"), "http", "--port", str(port)]
    else:
        env["PYTHONPATH"] = str(src)
        argv += ["-m", "truecall", "serve", f"{BENCH / 'peers' / 'truecall_app.py'}:{attr}",
                 "--http", "--port", str(port)]
    with open(os.path.join(tmp, "server.log"), "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd=tmp)
    with under_callgrind(proc, cell, src, tmp):
        wait_listening(proc, port, timeout=300.0)  # (under valgrind a start takes a while)
        run_async(_drive(port, era, sse, clients, calls, proc.pid))
    return per_call(out, tmp, calls)


def main() -> None:
    parser = cost_parser((__doc__ or "").splitlines()[0], "modern-json,legacy-json",
                         f"comma-separated, of {', '.join(CELLS)} (default: the two JSON cells)")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--bare", action="store_true", help="also measure bench/peers/bare_asgi.py (the floor)")
    ns = parser.parse_args()
    cells = chosen_cells(parser, ns.cells, CELLS)
    work = Path(tempfile.mkdtemp(prefix="tc-http-cost-"))
    trees = cost_trees(ROOT / "src", ns.ref, work)
    if ns.bare:
        trees["bare ASGI"] = None
    results = cost_cells(cells, trees, work, lambda tree: {"this tree": "tree", "bare ASGI": "bare"}.get(tree, "ref"),
                         lambda src, cell, out: instructions_per_call(ns.attr, src, cell, ns.calls, ns.clients, out))
    print(f"instructions per tools/call, Streamable HTTP, {ns.clients} keep-alive clients, {ns.calls} calls, "
          f"{ns.attr} (callgrind):")
    print_costs(cells, list(trees), results, ns.ref, 12, "bare ASGI" if ns.bare else None)
    keep_or_remove(work, ns.keep)


if __name__ == "__main__":
    main()
