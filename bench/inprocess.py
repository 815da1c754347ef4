"""In-process ``call_tool`` throughput for ``incident.search`` (validation and durable audit on).

    python bench/inprocess.py [--calls 20000] [--no-audit]

Prints calls/s and µs per call, and the same for the plain handler call (the
floor: what the tool itself costs), so the pipeline's overhead reads as a ratio.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from truecall.incidents import build_desk


def run(calls: int, audit: bool) -> None:
    path = os.path.join(tempfile.mkdtemp(prefix="truecall-bench-"), "desk.db")
    server = build_desk(path, audit=audit).start()
    token, args = "demo-acme-operator", {"service": "payments"}
    for _ in range(500):  # warm-up
        server.call_tool("incident.search", args, token, "acme")
    started = time.perf_counter()
    for _ in range(calls):
        result = server.call_tool("incident.search", args, token, "acme")
    elapsed = time.perf_counter() - started
    assert result.structured_content == {"service": "payments", "count": 2, "tenant": "acme"}

    tool = server.registry.tools["incident.search"]
    from truecall import ToolContext

    ctx = ToolContext(server.tokens.authenticate(token), tool, server)
    started = time.perf_counter()
    for _ in range(calls):
        tool.handler(ctx, **args)
    floor = time.perf_counter() - started

    per_call = elapsed / calls * 1e6
    print(f"audit={'on' if audit else 'off'}  calls={calls}")
    print(f"  call_tool:       {calls / elapsed:>10,.0f} calls/s  {per_call:8.1f} µs/call")
    print(f"  handler alone:   {calls / floor:>10,.0f} calls/s  {floor / calls * 1e6:8.1f} µs/call")
    print(f"  pipeline overhead: {per_call - floor / calls * 1e6:.1f} µs/call "
          f"({elapsed / floor:.2f}x the bare handler)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--no-audit", action="store_true")
    ns = parser.parse_args()
    run(ns.calls, audit=not ns.no_audit)


if __name__ == "__main__":
    main()
