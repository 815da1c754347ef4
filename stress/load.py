"""Load and soak: 16 concurrent HTTP keep-alive clients plus a pipelined stdio client.

    python stress/load.py                 # 20 s (the CI length)
    python stress/load.py --seconds 600   # the 10-minute soak

Two real server processes (the incident desk): one ``truecall serve --http``, one over
stdio.  For ``--seconds`` they are driven by

- 12 stateless 2026-07-28 HTTP clients: ``tools/call incident.search`` (85 %) and
  ``tools/list``; every 10th call asks for SSE (``progressToken`` + ``Accept:
  text/event-stream``) so both response paths run;
- 4 handshake-era (2025-11-25) HTTP clients: ``initialize`` → ``initialized`` → calls in
  the session, ``DELETE`` and a new session every 200 calls (session churn);
- 1 stdio client keeping 32 requests in flight (pipelined) on the stdio server.

Checked (exit status 1 when one breaks): 0 unexpected errors (transport failures, non-2xx,
JSON-RPC errors, ``isError`` results); RSS growth < 10 % between the end of the warm-up
(the first quarter, at least 5 s) and the end; no descriptor or thread growth under load
(warm-up end vs end, with the same connections open), and descriptors back to the idle
baseline once the clients have gone; ``--introspect`` also counts asyncio tasks inside the
HTTP server (via the ``stress.introspect`` tool of ``stress/apps/introspect_desk.py``)
and requires them back at baseline.  p50/p99 latencies are printed per client kind.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stress.common import (HOST, LEGACY, MODERN, OPERATOR, READER, GLOBEX, ProcStats, Sampler, ServerProcess,
                           SseParser, modern_meta, percentile, proc_stats)

INTROSPECT_APP = str(Path(__file__).resolve().parent / "apps" / "introspect_desk.py") + ":app"


# -- an asyncio keep-alive HTTP/1.1 client -----------------------------------------------------------


class AsyncHttp:
    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except (ConnectionError, OSError):
                pass
        self.reader = self.writer = None

    async def request(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes = b"",
                      timeout: float = 30.0) -> tuple[int, dict[str, str], bytes]:
        for attempt in (0, 1):
            fresh = self.writer is None
            if fresh:
                self.reader, self.writer = await asyncio.open_connection(HOST, self.port)
            head = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{self.port}", f"Content-Length: {len(body)}"]
            head += [f"{k}: {v}" for k, v in headers]
            assert self.writer is not None and self.reader is not None
            try:
                self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
                async with asyncio.timeout(timeout):
                    return await self._read()
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                await self.close()
                if fresh or attempt:
                    raise ConnectionError(f"{type(exc).__name__}: {exc}") from None
        raise AssertionError("unreachable")

    async def _read(self) -> tuple[int, dict[str, str], bytes]:
        assert self.reader is not None
        head = await self.reader.readuntil(b"\r\n\r\n")
        status_line, *lines = head[:-4].decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        headers = {}
        for line in lines:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n"))[:-2].split(b";")[0], 16)
                if size == 0:
                    await self.reader.readuntil(b"\r\n")
                    break
                chunks.append(await self.reader.readexactly(size))
                await self.reader.readexactly(2)
            body = b"".join(chunks)
        elif "content-length" in headers:
            body = await self.reader.readexactly(int(headers["content-length"]))
        else:
            body = await self.reader.read()
            await self.close()
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, headers, body


def _messages(headers: dict[str, str], body: bytes) -> list[dict[str, Any]]:
    if headers.get("content-type", "").startswith("text/event-stream"):
        return SseParser().feed(body)
    return [orjson.loads(body)] if body else []


# -- bookkeeping --------------------------------------------------------------------------------------


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: collections.defaultdict(list))
    counts: collections.Counter = field(default_factory=collections.Counter)
    errors: collections.Counter = field(default_factory=collections.Counter)
    error_examples: list[str] = field(default_factory=list)
    warm_until: float = 0.0

    def ok(self, kind: str, started: float) -> None:
        now = time.monotonic()
        self.counts[kind] += 1
        if started >= self.warm_until:
            self.latencies[kind].append(now - started)

    def error(self, kind: str, what: str) -> None:
        self.errors[f"{kind}: {what[:80]}"] += 1
        if len(self.error_examples) < 10:
            self.error_examples.append(f"{kind}: {what[:400]}")


def _check_answer(tally: Tally, kind: str, rid: Any, status: int, headers: dict[str, str], body: bytes,
                  started: float) -> dict[str, Any] | None:
    if status != 200:
        tally.error(kind, f"HTTP {status} {body[:200]!r}")
        return None
    try:
        messages = _messages(headers, body)
    except orjson.JSONDecodeError:
        tally.error(kind, f"unparseable body {body[:200]!r}")
        return None
    answers = [m for m in messages if "method" not in m]
    if len(answers) != 1 or answers[0].get("id") != rid:
        tally.error(kind, f"{len(answers)} answers for id {rid}: {body[:200]!r}")
        return None
    answer = answers[0]
    if "error" in answer:
        tally.error(kind, f"JSON-RPC error {answer['error']}")
        return None
    if answer["result"].get("isError"):
        tally.error(kind, f"isError result {answer['result']}")
        return None
    tally.ok(kind, started)
    return answer["result"]


# -- the clients ----------------------------------------------------------------------------------------

_ids = itertools.count(1)


async def modern_client(port: int, n: int, stop: float, tally: Tally) -> None:
    conn = AsyncHttp(port)
    token = (OPERATOR, READER, GLOBEX)[n % 3]
    services = ("payments", "checkout", "search")
    i = 0
    try:
        while time.monotonic() < stop:
            i += 1
            rid = next(_ids)
            sse = i % 10 == 0
            if i % 7 == 0:
                method, params, kind = "tools/list", {"_meta": modern_meta()}, "http-modern tools/list"
                routing = [("Mcp-Method", "tools/list")]
            else:
                meta = modern_meta(progressToken=f"p{rid}") if sse else modern_meta()
                params = {"name": "incident.search", "arguments": {"service": services[i % 3]}, "_meta": meta}
                method, kind = "tools/call", "http-modern search" + (" (sse)" if sse else "")
                routing = [("Mcp-Method", "tools/call"), ("Mcp-Name", "incident.search")]
            headers = [("Content-Type", "application/json"),
                       ("Accept", "application/json, text/event-stream" if sse else "application/json"),
                       ("Authorization", f"Bearer {token}"), ("MCP-Protocol-Version", MODERN)] + routing
            body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            started = time.monotonic()
            try:
                status, rh, rb = await conn.request("POST", "/mcp", headers, body)
            except (ConnectionError, OSError, TimeoutError) as exc:
                tally.error(kind, f"transport {exc}")
                await conn.close()
                continue
            _check_answer(tally, kind, rid, status, rh, rb, started)
    finally:
        await conn.close()


async def legacy_client(port: int, n: int, stop: float, tally: Tally, calls_per_session: int = 200) -> None:
    conn = AsyncHttp(port)
    auth = ("Authorization", f"Bearer {OPERATOR}")
    base = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"), auth]
    try:
        while time.monotonic() < stop:
            rid = next(_ids)
            started = time.monotonic()
            try:
                status, rh, rb = await conn.request("POST", "/mcp", base, orjson.dumps({
                    "jsonrpc": "2.0", "id": rid, "method": "initialize",
                    "params": {"protocolVersion": LEGACY, "capabilities": {},
                               "clientInfo": {"name": f"load-{n}", "version": "1"}}}))
            except (ConnectionError, OSError, TimeoutError) as exc:
                tally.error("http-legacy initialize", f"transport {exc}")
                await conn.close()
                continue
            if _check_answer(tally, "http-legacy initialize", rid, status, rh, rb, started) is None:
                continue
            sid = rh.get("mcp-session-id", "")
            session = base + [("Mcp-Session-Id", sid), ("MCP-Protocol-Version", LEGACY)]
            status, rh, rb = await conn.request("POST", "/mcp", session,
                                                b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
            if status != 202:
                tally.error("http-legacy initialized", f"HTTP {status}")
            for i in range(calls_per_session):
                if time.monotonic() >= stop:
                    break
                rid = next(_ids)
                if i % 7 == 0:
                    msg = {"jsonrpc": "2.0", "id": rid, "method": "tools/list"}
                    kind = "http-legacy tools/list"
                else:
                    msg = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                           "params": {"name": "incident.search", "arguments": {"service": "payments"}}}
                    kind = "http-legacy search"
                started = time.monotonic()
                try:
                    status, rh, rb = await conn.request("POST", "/mcp", session, orjson.dumps(msg))
                except (ConnectionError, OSError, TimeoutError) as exc:
                    tally.error(kind, f"transport {exc}")
                    await conn.close()
                    break
                _check_answer(tally, kind, rid, status, rh, rb, started)
            try:
                status, _, rb = await conn.request("DELETE", "/mcp", [auth, ("Mcp-Session-Id", sid)])
                if status != 200:
                    tally.error("http-legacy delete", f"HTTP {status} {rb[:100]!r}")
                else:
                    tally.counts["http-legacy sessions"] += 1
            except (ConnectionError, OSError, TimeoutError) as exc:
                tally.error("http-legacy delete", f"transport {exc}")
                await conn.close()
    finally:
        await conn.close()


async def stdio_client(server: ServerProcess, stop: float, tally: Tally, depth: int = 32) -> asyncio.StreamWriter:
    """Keeps ``depth`` requests in flight on the stdio server; matches answers by id."""
    proc = server.proc
    assert proc is not None and proc.stdin is not None and proc.stdout is not None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), proc.stdout)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, proc.stdin)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    pending: dict[Any, tuple[float, str]] = {}
    window = asyncio.Semaphore(depth)
    done = asyncio.Event()

    async def read() -> None:
        while True:
            line = await reader.readline()
            if not line:
                done.set()
                return
            msg = orjson.loads(line)
            if "method" in msg:
                continue
            entry = pending.pop(msg.get("id"), None)
            if entry is None:
                tally.error("stdio", f"answer for unknown id {line[:200]!r}")
                continue
            started, kind = entry
            window.release()
            if "error" in msg:
                tally.error(kind, f"JSON-RPC error {msg['error']}")
            elif msg["result"].get("isError"):
                tally.error(kind, f"isError result {msg['result']}")
            else:
                tally.ok(kind, started)

    reading = asyncio.create_task(read())
    i = 0
    while time.monotonic() < stop and not done.is_set():
        await window.acquire()
        i += 1
        rid = f"s{next(_ids)}"
        if i % 7 == 0:
            msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": {"_meta": modern_meta()}}
            kind = "stdio tools/list"
        else:
            msg = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                   "params": {"name": "incident.search", "arguments": {"service": "payments"}, "_meta": modern_meta()}}
            kind = "stdio search (pipelined)"
        pending[rid] = (time.monotonic(), kind)
        writer.write(orjson.dumps(msg) + b"\n")
        await writer.drain()
    deadline = time.monotonic() + 10
    while pending and time.monotonic() < deadline and not done.is_set():
        await asyncio.sleep(0.05)
    for rid, (_, kind) in pending.items():
        tally.error(kind, f"no answer for {rid}")
    reading.cancel()
    return writer  # closed by the caller once the idle numbers are read (EOF ends the server)


# -- the run ------------------------------------------------------------------------------------------------


async def introspect(port: int) -> dict[str, Any] | None:
    conn = AsyncHttp(port)
    try:
        body = orjson.dumps({"jsonrpc": "2.0", "id": "introspect", "method": "tools/call",
                             "params": {"name": "stress.introspect", "arguments": {}, "_meta": modern_meta()}})
        status, _, rb = await conn.request("POST", "/mcp", [
            ("Content-Type", "application/json"), ("Accept", "application/json"),
            ("Authorization", f"Bearer {OPERATOR}"), ("MCP-Protocol-Version", MODERN), ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "stress.introspect")], body)
        if status != 200:
            return None
        return orjson.loads(rb)["result"].get("structuredContent")
    finally:
        await conn.close()


async def _settled(pid: int, timeout: float = 10.0) -> ProcStats:
    """A started server's idle numbers, once its descriptors stop changing (database, journal and
    loop open): a fixed wait reads a server still starting on a busy machine as "3 descriptors"."""
    deadline = time.monotonic() + timeout
    last = proc_stats(pid)
    steady = 0
    while (steady < 10 or last.fds <= 3) and time.monotonic() < deadline:  # more than stdin/out/err, 1 s steady
        await asyncio.sleep(0.1)
        now = proc_stats(pid)
        steady = steady + 1 if now.fds == last.fds else 0
        last = now
    return last


def _stats_near(sampler: Sampler, when: float) -> ProcStats:
    best = min(sampler.samples, key=lambda s: abs(s[0] - when))
    return best[1]


async def run_load(seconds: float, workdir: Path, *, modern: int = 12, legacy: int = 4, stdio_depth: int = 32,
                   introspect_tasks: bool = False, warmup: float | None = None) -> dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    http = ServerProcess(workdir / "http", http=True, app=INTROSPECT_APP if introspect_tasks else None)
    stdio = ServerProcess(workdir / "stdio")
    http.start()
    stdio.start()
    samplers = {"http": Sampler(http.pid, 0.25), "stdio": Sampler(stdio.pid, 0.25)}
    try:
        idle = {"http": await _settled(http.pid), "stdio": await _settled(stdio.pid)}
        tasks_idle = await introspect(http.port or 0) if introspect_tasks else None
        for sampler in samplers.values():
            sampler.start()
        tally = Tally()
        began = time.monotonic()
        warm = warmup if warmup is not None else max(5.0, seconds / 4)
        tally.warm_until = began + warm
        stop = began + seconds
        clients = [modern_client(http.port or 0, i, stop, tally) for i in range(modern)]
        clients += [legacy_client(http.port or 0, i, stop, tally) for i in range(legacy)]
        clients.append(stdio_client(stdio, stop, tally, stdio_depth))
        warm_mark: dict[str, ProcStats] = {}

        async def mark() -> None:
            await asyncio.sleep(warm)
            for name, server in (("http", http), ("stdio", stdio)):
                warm_mark[name] = proc_stats(server.pid)

        marker = asyncio.create_task(mark())
        results = await asyncio.gather(*clients)
        stdio_writer = results[-1]
        ended = time.monotonic()
        loaded_end = {"http": _stats_near(samplers["http"], ended - 0.3),
                      "stdio": _stats_near(samplers["stdio"], ended - 0.3)}
        await marker
        await asyncio.sleep(1.5)  # clients gone: let the server close its side
        after = {"http": proc_stats(http.pid), "stdio": proc_stats(stdio.pid)}
        tasks_after = await introspect(http.port or 0) if introspect_tasks else None
        stdio_writer.close()  # EOF: the stdio server must exit 0 by itself
        stdio_code = None
        for _ in range(100):
            stdio_code = stdio.proc.poll() if stdio.proc else None
            if stdio_code is not None:
                break
            await asyncio.sleep(0.1)
    finally:
        for sampler in samplers.values():
            sampler.stop()
        http_code = http.stop()  # SIGTERM: uvicorn shuts down gracefully, then re-raises the signal (-15)
        if stdio.alive():
            stdio.stop()
    elapsed = ended - began
    summary: dict[str, Any] = {
        "seconds": round(elapsed, 1),
        "warmup_s": warm,
        "requests": dict(tally.counts),
        "throughput_per_s": round(sum(v for k, v in tally.counts.items() if "sessions" not in k) / elapsed, 1),
        "errors": dict(tally.errors),
        "error_examples": tally.error_examples,
        "latency_ms": {kind: {"n": len(v), "p50": round(percentile(v, 50) * 1000, 2),
                              "p99": round(percentile(v, 99) * 1000, 2), "max": round(max(v) * 1000, 2)}
                       for kind, v in sorted(tally.latencies.items()) if v},
        "servers": {},
        "tasks_idle": tasks_idle,
        "tasks_after": tasks_after,
        "exit_codes": {"http": http_code, "stdio": stdio_code},
    }
    all_lat = [x for v in tally.latencies.values() for x in v]
    summary["latency_ms"]["all"] = {"n": len(all_lat), "p50": round(percentile(all_lat, 50) * 1000, 2),
                                    "p99": round(percentile(all_lat, 99) * 1000, 2)}
    for name in ("http", "stdio"):
        w, e = warm_mark[name], loaded_end[name]
        summary["servers"][name] = {
            "idle": str(idle[name]), "after_warmup": str(w), "end_under_load": str(e), "after_clients_left": str(after[name]),
            "rss_growth_pct": round((e.rss_kb - w.rss_kb) * 100.0 / w.rss_kb, 2),
            "rss_max_mib": round(samplers[name].max_rss_kb() / 1024, 1),
            "fds": {"idle": idle[name].fds, "warm": w.fds, "end": e.fds, "after": after[name].fds,
                    "max": samplers[name].max_fds()},
            "threads": {"idle": idle[name].threads, "warm": w.threads, "end": e.threads, "after": after[name].threads},
        }
    summary["stderr_tracebacks"] = {name: _traceback_tail(server.stderr()) for name, server in
                                    (("http", http), ("stdio", stdio))}
    summary["problems"] = verdict(summary)
    return summary


def _traceback_tail(text: str) -> str:
    if "Traceback" not in text:
        return ""
    return text[text.index("Traceback"):][:600]


def verdict(s: dict[str, Any], rss_growth_pct: float = 10.0) -> list[str]:
    problems = []
    if s["errors"]:
        problems.append(f"{sum(s['errors'].values())} unexpected errors: {list(s['errors'])[:5]}")
    for name, srv in s["servers"].items():
        if srv["rss_growth_pct"] >= rss_growth_pct:
            problems.append(f"{name}: RSS grew {srv['rss_growth_pct']} % after warm-up")
        fds = srv["fds"]
        if fds["end"] > fds["warm"] + 2:
            problems.append(f"{name}: fds grew under load {fds['warm']} -> {fds['end']}")
        if fds["after"] > fds["idle"] + 2:
            problems.append(f"{name}: fds not back to idle after the clients left: {fds['idle']} -> {fds['after']}")
        th = srv["threads"]
        if th["end"] > th["warm"] + 1 or th["after"] > th["idle"] + 1:
            problems.append(f"{name}: threads grew {th}")
    if s["tasks_idle"] and s["tasks_after"]:
        if s["tasks_after"]["asyncioTasks"] > s["tasks_idle"]["asyncioTasks"] + 2:
            problems.append(f"asyncio tasks not back to idle: {s['tasks_idle']} -> {s['tasks_after']}")
    if s["exit_codes"]["stdio"] != 0 or s["exit_codes"]["http"] not in (0, -15):
        problems.append(f"exit codes {s['exit_codes']} (stdio must exit 0 on EOF; http 0 or -15 on SIGTERM)")
    for name, tail in s.get("stderr_tracebacks", {}).items():
        if tail:
            problems.append(f"{name}: traceback on stderr: {tail}")
    if not s["requests"]:
        problems.append("no request completed")
    return problems


def print_summary(s: dict[str, Any]) -> None:
    print(f"== load: {s['seconds']} s (warm-up {s['warmup_s']} s), {s['throughput_per_s']} answers/s ==")
    for kind, lat in s["latency_ms"].items():
        print(f"  {kind:32s} n={lat['n']:7d}  p50={lat['p50']:8.2f} ms  p99={lat['p99']:8.2f} ms"
              + (f"  max={lat['max']:8.2f} ms" if "max" in lat else ""))
    print(f"requests: {s['requests']}")
    print(f"unexpected errors: {sum(s['errors'].values())} {s['errors'] or ''}")
    for example in s["error_examples"][:5]:
        print(f"  e.g. {example}")
    for name, srv in s["servers"].items():
        print(f"{name}: idle [{srv['idle']}], after warm-up [{srv['after_warmup']}], end [{srv['end_under_load']}], "
              f"clients gone [{srv['after_clients_left']}]; RSS growth after warm-up {srv['rss_growth_pct']} %, "
              f"max {srv['rss_max_mib']} MiB")
    if s["tasks_idle"] is not None:
        print(f"asyncio tasks (http): idle {s['tasks_idle']}, after {s['tasks_after']}")
    print(f"exit codes: {s['exit_codes']}")
    print("PROBLEMS: " + "; ".join(s["problems"]) if s["problems"] else "OK")


def _exit_on_sigterm() -> None:
    """SIGTERM unwinds normally, so every server this command started is stopped by its PID."""
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def main(argv: list[str] | None = None) -> int:
    _exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=None, help="default: a quarter of the run, at least 5 s")
    parser.add_argument("--modern", type=int, default=12, help="stateless HTTP clients")
    parser.add_argument("--legacy", type=int, default=4, help="handshake-era HTTP clients")
    parser.add_argument("--stdio-depth", type=int, default=32, help="stdio requests kept in flight")
    parser.add_argument("--introspect", action="store_true",
                        help="serve the desk with the stress.introspect tool to count asyncio tasks")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="truecall-load-"))
    summary = asyncio.run(run_load(args.seconds, workdir, modern=args.modern, legacy=args.legacy,
                                   stdio_depth=args.stdio_depth, introspect_tasks=args.introspect,
                                   warmup=args.warmup))
    print_summary(summary)
    if args.json:
        args.json.write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
