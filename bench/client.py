"""The client side: truecall.Client against the official ``mcp`` client and FastMCP's client,
all calling the same server (truecall serving bench/peers/truecall_app.py), in the same run.

    python bench/client.py            # 5 s per cell
    python bench/client.py --quick    # 2 s per cell

Run it with the interpreter truecall is installed in; the peers' clients run in bench/.venv-peers
(installed on first use, as bench/run.py does).  Per transport (stdio, Streamable HTTP) and era
(2025-11-25 handshake, 2026-07-28) each client makes calls one at a time for the cell's duration
(bench/client_driver.py) and reports calls/s and its own CPU per call (the server is another
process and is not counted).  Every client checks every result.  Prints one table with ratios to
truecall and writes bench/results/client-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from run import RESULTS, ensure_peers_venv, free_port, wait_listening  # noqa: E402

DRIVER = BENCH / "client_driver.py"
APP = f"{BENCH / 'peers' / 'truecall_app.py'}:app"
CLIENTS = ("truecall", "mcp", "fastmcp")
ERAS = ("legacy", "modern")


def server_cmd(*extra: str) -> list[str]:
    return [sys.executable, "-m", "truecall", "serve", APP, *extra]


def drive(python: str, client: str, transport: str, era: str, seconds: float, target: list[str],
          env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run([python, str(DRIVER), client, transport, era, str(seconds), *target], capture_output=True,
                          text=True, timeout=seconds * 10 + 120, env=env, cwd=BENCH)
    if proc.returncode != 0:
        return {"error": (proc.stderr or proc.stdout).strip()[-500:]}
    row: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    row["calls_per_s"] = row["calls"] / row["seconds"]
    row["client_cpu_us_per_call"] = row["cpu_s"] / row["calls"] * 1e6
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 s per cell instead of 5")
    parser.add_argument("--out", help="where to write the JSON results")
    ns = parser.parse_args(argv)
    seconds = 2.0 if ns.quick else 5.0
    peers_python = ensure_peers_venv(lambda text: print(text, flush=True))
    python = {"truecall": sys.executable, "mcp": peers_python, "fastmcp": peers_python}
    tmp = tempfile.mkdtemp(prefix="truecall-client-bench-")
    env = {**os.environ, "BENCH_TRUECALL_DB": os.path.join(tmp, "bench.db")}
    env.pop("TRUECALL_PRINCIPAL", None)
    results: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()

    for era in ERAS:
        for client in CLIENTS:
            print(f"stdio {era} {client} ...", flush=True)
            results[f"stdio/{era}/{client}"] = drive(python[client], client, "stdio", era, seconds, server_cmd(), env)

    port = free_port()
    log = open(os.path.join(tmp, "server.log"), "wb")
    server = subprocess.Popen(server_cmd("--http", "--port", str(port)), env=env, cwd=tmp, stdin=subprocess.DEVNULL,
                              stdout=log, stderr=log)
    try:
        wait_listening(server, port)
        url = f"http://127.0.0.1:{port}/mcp"
        for era in ERAS:
            for client in CLIENTS:
                print(f"http {era} {client} ...", flush=True)
                results[f"http/{era}/{client}"] = drive(python[client], client, "http", era, seconds, [url], env)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
        log.close()

    print()
    print(table(results))
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = Path(ns.out) if ns.out else RESULTS / f"client-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"seconds_per_cell": seconds, "results": results,
                               "elapsed_s": round(time.perf_counter() - started, 1)}, indent=2) + "\n")
    print(f"\nresults: {out}")
    return 0 if all("error" not in r for r in results.values()) else 1


def table(results: dict[str, dict[str, Any]]) -> str:
    head = f"{'cell':<16}" + "".join(f"{c + ' calls/s':>20}{c + ' CPU µs/call':>22}" for c in CLIENTS)
    lines = [head, "-" * len(head)]
    for transport in ("stdio", "http"):
        for era in ERAS:
            cells = [results.get(f"{transport}/{era}/{c}", {}) for c in CLIENTS]
            base = cells[0]
            row = f"{transport + ' ' + era:<16}"
            for cell in cells:
                if "error" in cell or not cell:
                    row += f"{'error':>20}{'':>22}"
                    continue
                rate, cpu = cell["calls_per_s"], cell["client_cpu_us_per_call"]
                if cell is base:
                    row += f"{rate:>20.0f}{cpu:>22.0f}"
                else:
                    r_rate = f" ({rate / base['calls_per_s']:.2f}×)" if "calls_per_s" in base else ""
                    r_cpu = f" ({cpu / base['client_cpu_us_per_call']:.2f}×)" if "calls_per_s" in base else ""
                    row += f"{f'{rate:.0f}{r_rate}':>20}{f'{cpu:.0f}{r_cpu}':>22}"
            lines.append(row)
    errors = [f"  {k}: {v['error']}" for k, v in results.items() if "error" in v]
    if errors:
        lines += ["", "errors:", *errors]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
