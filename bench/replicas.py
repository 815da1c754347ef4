"""Replicas on a shared database: tools/call and task throughput, SQLite vs PostgreSQL, one replica vs two.

    python bench/replicas.py                 # about 40 s: 3 s per cell
    python bench/replicas.py --seconds 10    # longer cells
    python bench/replicas.py --out bench/results/replicas.json
    python bench/replicas.py --compare main  # also the same cells on another revision's src/ (e.g. before
                                             # a change): the cost of that change per call, side by side

Not a test: it prints figures, it asserts nothing about them.  In one run it measures three
deployments of ``tests/replica_app.py`` (the incident desk plus a ``nap`` task tool), each
``truecall serve --http`` on 127.0.0.1:

- ``sqlite x1``     — one replica on a SQLite file (the default backend);
- ``postgresql x1`` — one replica on PostgreSQL (``$TRUECALL_BENCH_PG_URL``, default
  ``postgresql://postgres@127.0.0.1:5432/test``), in a schema of its own;
- ``postgresql x2`` — two replicas on that one schema, with shared sealing/audit keys.

and two cells for each, with ``--clients`` keep-alive connections spread over the replicas:

- **tools/call**: back-to-back stateless (2026-07-28) ``incident.search`` calls (input and
  output validation, audit record committed before the answer): calls/s, p50/p99;
- **task create→complete**: ``nap`` (``seconds: 0``) accepted as a task via one replica, then
  ``tasks/get`` polled every 2 ms — on the *other* replica when there are two — until
  ``completed``: tasks/s and p50/p99 from the ``tools/call`` to the first ``completed`` seen;
- **incident.handle**: the same for the desk's ``incident.handle`` with a fresh idempotency key
  each time (task, request + dispatch, claim, ticket + notification, result): the path whose every
  write is fenced by the task's lease epoch.

``--fence-cost`` measures instead, in process, what the lease fencing adds to one ``incident.handle``
call on each backend: its four lease checks (request + dispatch, claim, ticket, the final read, each
inside that write's own transaction) and its two thread hops (PostgreSQL only), against the whole call.

``--compare REF`` runs every deployment a second time on ``git archive REF src`` and prints each
cell's throughput as a ratio (this tree / REF): e.g. ``--compare <commit before fencing>`` gives
the cost of fencing per call.

Everything stays on loopback; every process is stopped by its PID and the schema is dropped at the
end.  All processes (replicas, PostgreSQL, this client) share the machine's cores, so the figures
say how the pieces compare on *this* machine, not what a cluster would do.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import secrets
import shutil
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
from _drivers import _Conn, _post, cpu_seconds, run_async, stop, unpacked_src  # noqa: E402

ROOT = HERE.parent
APP = f"{ROOT / 'tests' / 'replica_app.py'}:build"
PG_URL = os.environ.get("TRUECALL_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
TOKEN = "demo-acme-operator"  # the desk's loopback demo credential
MODERN = "2026-07-28"
TASKS_EXT = "io.modelcontextprotocol/tasks"
POLL_S = 0.002
RUN = secrets.token_hex(4)


def _meta(caps: dict[str, Any]) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": caps,
            "io.modelcontextprotocol/clientInfo": {"name": "truecall-bench-replicas", "version": "1"}}


SEARCH_META = _meta({})
TASK_META = _meta({"extensions": {TASKS_EXT: {}}})


def _request(port: int, rid: int, method: str, name: str, params: dict[str, Any]) -> bytes:
    body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    return _post("/mcp", port, body, {"Accept": "application/json", "Authorization": f"Bearer {TOKEN}",
                                      "Mcp-Protocol-Version": MODERN, "Mcp-Method": method, "Mcp-Name": name})


# -- processes ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_replica(db: str, env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    cmd = [sys.executable, "-m", "truecall", "serve", APP, "--http", "--host", "127.0.0.1", "--port", str(port)]
    with open(log, "ab") as err:
        proc = subprocess.Popen(cmd, env={**os.environ, **env, "TRUECALL_DB": db}, cwd=log.parent,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"replica exited ({proc.returncode}); see {log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
                sock.sendall(f"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
                if sock.recv(64).startswith(b"HTTP/1.1 200"):
                    return proc, port
        except OSError:
            pass
        time.sleep(0.05)
    stop(proc)
    raise RuntimeError(f"replica did not become ready; see {log}")


class PgSchema:
    """A schema of the bench's own on the PostgreSQL server, dropped at the end."""

    def __init__(self) -> None:
        import psycopg

        self.name = f"bench_{secrets.token_hex(5)}"
        with psycopg.connect(PG_URL, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE SCHEMA "{self.name}"')
        sep = "&" if "?" in PG_URL else "?"
        self.url = f"{PG_URL}{sep}schema={self.name}&application_name={self.name}"

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(PG_URL, autocommit=True, connect_timeout=5) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s "
                         "AND pid <> pg_backend_pid()", (self.name,))
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.name}" CASCADE')


# -- the cells ------------------------------------------------------------------------------------------


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


async def _connect(port: int) -> _Conn:
    _, conn = await asyncio.get_running_loop().create_connection(_Conn, "127.0.0.1", port)
    return conn


async def calls_cell(ports: list[int], clients: int, warm_s: float, seconds: float) -> dict[str, Any]:
    conns = [(await _connect(ports[i % len(ports)]), ports[i % len(ports)]) for i in range(clients)]
    params = {"name": "incident.search", "arguments": {"service": "payments"}, "_meta": SEARCH_META}
    latencies: list[float] = []
    errors = 0

    async def loop(conn: _Conn, port: int, until: float, record: bool, base: int) -> None:
        nonlocal errors
        rid = base
        while (t0 := time.perf_counter()) < until:
            resp = await conn.request(_request(port, rid, "tools/call", "incident.search", params))
            rid += 1
            if record:
                latencies.append(time.perf_counter() - t0)
                if resp.status != 200 or b'"count":2' not in resp.body:
                    errors += 1

    warm = time.perf_counter() + warm_s
    await asyncio.gather(*(loop(c, p, warm, False, 1_000_000 * i) for i, (c, p) in enumerate(conns)))
    start = time.perf_counter()
    await asyncio.gather(*(loop(c, p, start + seconds, True, 1_000_000 * i + 500_000)
                           for i, (c, p) in enumerate(conns)))
    elapsed = time.perf_counter() - start
    for conn, _ in conns:
        assert conn.transport is not None
        conn.transport.close()
    return {"per_s": len(latencies) / elapsed, "n": len(latencies), "p50_ms": _pct(latencies, 0.5) * 1e3,
            "p99_ms": _pct(latencies, 0.99) * 1e3, "errors": errors, "seconds": elapsed}


async def tasks_cell(ports: list[int], clients: int, warm_s: float, seconds: float, *,
                     tool: str = "nap") -> dict[str, Any]:
    """Each client creates a task on one replica and polls it on the next (the other, when two)."""
    pairs = []
    for i in range(clients):
        create_port, poll_port = ports[i % len(ports)], ports[(i + 1) % len(ports)]
        pairs.append((await _connect(create_port), create_port, await _connect(poll_port), poll_port))
    create = {"name": tool, "arguments": {"seconds": 0}, "_meta": TASK_META}
    keys = iter(range(1 << 62))
    latencies: list[float] = []
    polls: list[int] = []
    errors = 0

    async def one(cc: _Conn, cp: int, pc: _Conn, pp: int, rid: int) -> tuple[float, int] | None:
        t0 = time.perf_counter()
        body = create if tool == "nap" else {"name": tool, "_meta": TASK_META, "arguments": {
            "incidentId": "INC-1001", "idempotencyKey": f"bench-{RUN}-{next(keys)}"}}
        resp = await cc.request(_request(cp, rid, "tools/call", tool, body))
        result = orjson.loads(resp.body).get("result") or {}
        task_id = result.get("taskId")
        if resp.status != 200 or result.get("resultType") != "task" or not task_id:
            return None
        params = {"taskId": task_id, "_meta": TASK_META}
        n = 0
        while True:
            n += 1
            got = await pc.request(_request(pp, rid, "tasks/get", task_id, params))
            status = (orjson.loads(got.body).get("result") or {}).get("status")
            if status == "completed":
                return time.perf_counter() - t0, n
            if got.status != 200 or status not in ("working", "input_required"):
                return None
            await asyncio.sleep(POLL_S)

    async def loop(pair: tuple[_Conn, int, _Conn, int], until: float, record: bool, base: int) -> None:
        nonlocal errors
        rid = base
        while time.perf_counter() < until:
            rid += 1
            outcome = await one(*pair, rid)
            if not record:
                continue
            if outcome is None:
                errors += 1
            else:
                latencies.append(outcome[0])
                polls.append(outcome[1])

    warm = time.perf_counter() + warm_s
    await asyncio.gather(*(loop(p, warm, False, 1_000_000 * i) for i, p in enumerate(pairs)))
    start = time.perf_counter()
    await asyncio.gather(*(loop(p, start + seconds, True, 1_000_000 * i + 500_000) for i, p in enumerate(pairs)))
    elapsed = time.perf_counter() - start
    for cc, _, pc, _ in pairs:
        for conn in (cc, pc):
            assert conn.transport is not None
            conn.transport.close()
    return {"per_s": len(latencies) / elapsed, "n": len(latencies), "p50_ms": _pct(latencies, 0.5) * 1e3,
            "p99_ms": _pct(latencies, 0.99) * 1e3, "polls_per_task": sum(polls) / max(1, len(polls)),
            "errors": errors, "seconds": elapsed}


# -- the run ------------------------------------------------------------------------------------------------


def measure(label: str, db: str, replicas: int, args: argparse.Namespace, workdir: Path,
            env: dict[str, str]) -> dict[str, Any]:
    procs: list[subprocess.Popen[bytes]] = []
    try:
        ports = []
        for i in range(replicas):
            proc, port = start_replica(db, env, workdir / f"{label.replace(' ', '-')}-{i}.log")
            procs.append(proc)
            ports.append(port)
        out: dict[str, Any] = {"backend": label.split()[0], "replicas": replicas}
        handle = lambda *a: tasks_cell(*a, tool="incident.handle")  # noqa: E731
        for cell, fn in (("tools_call", calls_cell), ("tasks", tasks_cell), ("handle", handle)):
            cpu0 = [cpu_seconds(p.pid) for p in procs]
            out[cell] = run_async(fn(ports, args.clients, args.warm, args.seconds))
            out[cell]["server_cpu_s"] = round(sum(cpu_seconds(p.pid) - c for p, c in zip(procs, cpu0)), 2)
            print(f"  {label:<14} {cell:<10} {out[cell]['per_s']:8.0f}/s  p50 {out[cell]['p50_ms']:6.2f} ms  "
                  f"p99 {out[cell]['p99_ms']:6.2f} ms  errors {out[cell]['errors']}", flush=True)
        return out
    finally:
        for proc in procs:
            stop(proc)


def fence_cost(target: str, label: str, calls: int = 300) -> dict[str, Any]:
    """Median cost of the fence per ``incident.handle`` call, in process (see the module docstring)."""
    import statistics

    sys.path.insert(0, str(ROOT / "src"))
    from truecall.incidents import DEMO_TOKENS, build_desk
    from truecall.incidents.handle import off_loop

    operator = DEMO_TOKENS["demo-acme-operator"]
    server = build_desk(target, faults={}, ack_timeout_s=5).start()

    async def run() -> dict[str, Any]:
        whole, checks, hops = [], [], []
        task = None
        for i in range(calls):
            t0 = time.perf_counter()
            task = await server.acall_tool(operator, "incident.handle", {"incidentId": "INC-1001",
                                                                         "idempotencyKey": f"fc-{RUN}-{i}"},
                                           task_mode="ext")
            done = await server.task_runtime.wait(task.task_id)
            assert done.result is not None and not done.result.get("isError"), done
            whole.append(time.perf_counter() - t0)
        for _ in range(calls):
            with server.db.transaction():  # as on the real path: inside the write's own transaction
                server.db.fetchone("SELECT 1")
                t0 = time.perf_counter()
                for _ in range(4):
                    server.tasks.check_lease(task.task_id, task.lease_epoch)
                checks.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await off_loop(server.db, lambda: None)
            await off_loop(server.db, lambda: None)
            hops.append(time.perf_counter() - t0)
        call, check, hop = (statistics.median(v) * 1e3 for v in (whole, checks, hops))
        return {"backend": label, "call_ms": call, "checks_ms": check, "hops_ms": hop,
                "share": (check + hop) / call}

    try:
        out = asyncio.run(run())
    finally:
        server.db.close()
    print(f"  {label:<11} incident.handle {out['call_ms']:7.2f} ms; 4 lease checks {out['checks_ms']:.3f} ms, "
          f"2 thread hops {out['hops_ms']:.3f} ms: fencing {out['share'] * 100:.1f} % of the call", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per cell (default 3)")
    parser.add_argument("--warm", type=float, default=1.0, help="warm-up seconds per cell (default 1)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent keep-alive connections (default 8)")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON here")
    parser.add_argument("--compare", metavar="REF", default=None,
                        help="also measure git revision REF's src/ and print this tree / REF per cell")
    parser.add_argument("--only", choices=["sqlite", "postgresql"], default=None,
                        help="only the deployments on this backend")
    parser.add_argument("--fence-cost", action="store_true",
                        help="measure what lease fencing adds to one incident.handle call (in process)")
    args = parser.parse_args(argv)
    if args.fence_cost:
        workdir = Path(tempfile.mkdtemp(prefix="truecall-bench-fence-"))
        schema = PgSchema()
        try:
            print("the cost of fencing per incident.handle call (medians of 300):")
            fence_cost(str(workdir / "desk.db"), "sqlite")
            fence_cost(schema.url, "postgresql")
        finally:
            schema.drop()
            shutil.rmtree(workdir, ignore_errors=True)
        return 0
    if not (0 < args.seconds <= 120 and 0 <= args.warm <= 30 and 1 <= args.clients <= 256):
        parser.error("bounded runs only: 0 < --seconds <= 120, --warm <= 30, 1 <= --clients <= 256")

    key = lambda: base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")  # noqa: E731
    env = {"TRUECALL_STATE_KEYS": key(), "TRUECALL_AUDIT_KEY": key(), "TRUECALL_DESK_FAULTS": "",
           "TRUECALL_DESK_TIMEOUT_MS": "10000"}
    workdir = Path(tempfile.mkdtemp(prefix="truecall-bench-replicas-"))
    trees = {"this tree": ROOT / "src"}
    if args.compare is not None:
        trees[args.compare] = unpacked_src(args.compare, workdir / "compare")
    print(f"{args.clients} clients, {args.warm:g} s warm-up + {args.seconds:g} s per cell, "
          f"{os.cpu_count()} cores shared by everything", flush=True)
    results: list[dict[str, Any]] = []
    try:
        for i, (tree, src) in enumerate(trees.items()):
            tree_env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))}
            print(f"{tree} ({src}):", flush=True)
            deployments: list[tuple[str, str | None, int]] = []
            if args.only in (None, "sqlite"):
                deployments.append(("sqlite x1", str(workdir / f"desk-{i}.db"), 1))
            if args.only in (None, "postgresql"):
                deployments += [("postgresql x1", None, 1), ("postgresql x2", None, 2)]
            for label, path, n in deployments:
                schema = PgSchema() if path is None else None  # every deployment starts on fresh data
                try:
                    db = schema.url if schema is not None else str(path)
                    results.append({**measure(label, db, n, args, workdir, tree_env), "tree": tree})
                finally:
                    if schema is not None:
                        schema.drop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print()
    print(f"{'deployment':<30}{'tools/call/s':>14}{'p50 ms':>9}{'tasks/s':>10}{'p50 ms':>9}{'handle/s':>10}"
          f"{'p50 ms':>9}{'errors':>8}")
    for r in results:
        label = f"{r['backend']} x{r['replicas']} ({r['tree']})"
        c, t, h = r["tools_call"], r["tasks"], r["handle"]
        print(f"{label:<30}{c['per_s']:>14.0f}{c['p50_ms']:>9.2f}{t['per_s']:>10.0f}{t['p50_ms']:>9.2f}"
              f"{h['per_s']:>10.0f}{h['p50_ms']:>9.2f}{c['errors'] + t['errors'] + h['errors']:>8}")
    if args.compare is not None:
        mine = [r for r in results if r["tree"] == "this tree"]
        theirs = {(r["backend"], r["replicas"]): r for r in results if r["tree"] == args.compare}
        for r in mine:
            o = theirs[(r["backend"], r["replicas"])]
            ratios = ", ".join(f"{cell} {r[cell]['per_s'] / o[cell]['per_s']:.3f}x" for cell in ("tools_call", "tasks",
                                                                                               "handle"))
            print(f"{r['backend']} x{r['replicas']}: this tree / {args.compare}: {ratios}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_bytes(orjson.dumps({"clients": args.clients, "seconds": args.seconds, "warm": args.warm,
                                           "cores": os.cpu_count(), "results": results},
                                          option=orjson.OPT_INDENT_2))
        print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
