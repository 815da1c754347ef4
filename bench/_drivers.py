"""Load drivers for the benchmark: raw pipes for stdio, raw asyncio streams for HTTP.

Kept deliberately thin so that the client costs far less per call than any
server it drives (the bare ASGI baseline shows how much: see ``client_cpu_us``).
Nothing here imports a peer SDK: the client is the same for every system.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

TOOL = "incident_search"
SERVICE = "payments"
EXPECTED = {"service": "payments", "count": 2}
LEGACY_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
CLIENT_INFO = {"name": "truecall-bench", "version": "1.0.0"}

_CLK_TCK = os.sysconf("SC_CLK_TCK")


# -- /proc ------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent busy (not idle/iowait) since boot, from /proc/stat."""
    with open("/proc/stat", "rb") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / _CLK_TCK


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", "rb") as f:
        for line in f:
            if line.startswith(b"VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


# -- results ------------------------------------------------------------------------------


@dataclass
class Cell:
    """One measured cell: throughput, latency, CPU."""

    calls: int = 0
    seconds: float = 0.0
    latencies_ns: list[int] = field(default_factory=list)
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    machine_cpu_s: float = 0.0
    errors: int = 0
    content_type: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    slices: list[float] = field(default_factory=list)

    def merge(self, other: "Cell") -> None:
        """Add one slice (the cells are measured in rounds, interleaved across systems)."""
        self.calls += other.calls
        self.seconds += other.seconds
        self.latencies_ns += other.latencies_ns
        self.server_cpu_s += other.server_cpu_s
        self.client_cpu_s += other.client_cpu_s
        self.machine_cpu_s += other.machine_cpu_s
        self.errors += other.errors
        if self.content_type is None:
            self.content_type = other.content_type
        elif other.content_type not in (None, self.content_type):
            self.content_type += f"|{other.content_type}"
        for k, v in other.extra.items():
            self.extra.setdefault(k, v)
        if other.slices:  # a whole process's cell: its slices
            self.slices += other.slices
        elif other.seconds:
            self.slices.append(other.calls / other.seconds)

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies_ns)

        def pct(p: float) -> float | None:
            if not lat:
                return None
            return round(lat[min(len(lat) - 1, int(p * len(lat)))] / 1000, 1)

        calls = max(self.calls, 1)
        return {
            "calls": self.calls,
            "seconds": round(self.seconds, 3),
            "calls_per_s": round(self.calls / self.seconds, 1) if self.seconds else 0.0,
            "p50_us": pct(0.50),
            "p99_us": pct(0.99),
            "server_cpu_us_per_call": round(self.server_cpu_s / calls * 1e6, 1),
            "client_cpu_us_per_call": round(self.client_cpu_s / calls * 1e6, 1),
            # cores busy with anything but this server and this client (other work on the machine)
            "foreign_cores": round(max(0.0, self.machine_cpu_s - self.server_cpu_s - self.client_cpu_s)
                                   / self.seconds, 2) if self.seconds else None,
            "errors": self.errors,
            "content_type": self.content_type,
            "slices_calls_per_s": [round(x, 1) for x in self.slices],
            **self.extra,
        }


class BenchError(RuntimeError):
    pass


def check_result(message: dict[str, Any]) -> None:
    """The tool's answer must be the real one: text + structuredContent, not an error."""
    if "error" in message:
        raise BenchError(f"JSON-RPC error: {message['error']}")
    result = message.get("result") or {}
    if result.get("isError"):
        raise BenchError(f"tool error: {result}")
    if result.get("structuredContent") != EXPECTED:
        raise BenchError(f"unexpected structuredContent: {result}")
    content = result.get("content") or []
    if not content or content[0].get("type") != "text" or "payments" not in content[0].get("text", ""):
        raise BenchError(f"unexpected content: {result}")


def check_tools_list(message: dict[str, Any]) -> None:
    tools = (message.get("result") or {}).get("tools") or []
    tool = next((t for t in tools if t.get("name") == TOOL), None)
    if tool is None or not isinstance(tool.get("outputSchema"), dict):
        raise BenchError(f"{TOOL} with an outputSchema not listed: {message}")


def _fast_ok(line: bytes) -> bool:
    return b'"structuredContent"' in line and b'"isError":true' not in line and b'"error"' not in line


# -- stdio ----------------------------------------------------------------------------------

_STDIO_CALL = (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"' + TOOL.encode()
               + b'","arguments":{"service":"' + SERVICE.encode() + b'"}}}\n')


def _stdio_initialize(request_id: int = 0) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize",
                         "params": {"protocolVersion": LEGACY_VERSION, "capabilities": {},
                                    "clientInfo": CLIENT_INFO}}) + b"\n"


_STDIO_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


class StdioPeer:
    """A server process spoken to over its stdin/stdout pipes (newline-delimited JSON-RPC)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.pid = proc.pid
        assert proc.stdin is not None and proc.stdout is not None
        self.fd_in = proc.stdin.fileno()
        self.fd_out = proc.stdout.fileno()
        self.buf = bytearray()

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self.fd_in, view)
            view = view[n:]

    def read_line(self) -> bytes:
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[: i + 1]
                return line
            chunk = os.read(self.fd_out, 1 << 16)
            if not chunk:
                raise BenchError("server closed stdout")
            self.buf += chunk

    def read_response(self) -> bytes:
        """The next line that is a response (server notifications and requests are skipped)."""
        while True:
            line = self.read_line()
            if line.strip() and b'"method"' not in line:
                return line

    def handshake(self) -> dict[str, Any]:
        self.write(_stdio_initialize())
        first = orjson.loads(self.read_response())
        if "result" not in first:
            raise BenchError(f"initialize failed: {first}")
        self.write(_STDIO_INITIALIZED)
        self.write(b'{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{}}\n')
        check_tools_list(orjson.loads(self.read_response()))
        self.write(_STDIO_CALL % 1)
        check_result(orjson.loads(self.read_response()))
        return first

    def warm_up(self, seconds: float) -> int:
        deadline = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < deadline:
            self.write(_STDIO_CALL % (10 + n))
            self.read_response()
            n += 1
        return n

    def sequential(self, seconds: float) -> Cell:
        cell = Cell()
        lat = cell.latencies_ns
        write, read, now = self.write, self.read_response, time.perf_counter_ns
        request_id = 1_000_000
        cpu0, ccpu0, mcpu0 = cpu_seconds(self.pid), time.process_time(), machine_busy_seconds()
        start = now()
        deadline = start + int(seconds * 1e9)
        t = start
        while t < deadline:
            write(_STDIO_CALL % request_id)
            line = read()
            t2 = now()
            lat.append(t2 - t)
            if not _fast_ok(line):
                cell.errors += 1
            request_id += 1
            t = t2
        cell.seconds = (t - start) / 1e9
        cell.server_cpu_s = cpu_seconds(self.pid) - cpu0
        cell.client_cpu_s = time.process_time() - ccpu0
        cell.machine_cpu_s = machine_busy_seconds() - mcpu0
        cell.calls = len(lat)
        return cell

    def pipelined(self, seconds: float, window: int = 64) -> Cell:
        """Keep ``window`` requests in flight; responses may come back in any order."""
        cell = Cell(extra={"in_flight": window})
        lat = cell.latencies_ns
        now = time.perf_counter_ns
        sent: dict[int, int] = {}
        next_id = 2_000_000
        cpu0, ccpu0, mcpu0 = cpu_seconds(self.pid), time.process_time(), machine_busy_seconds()
        start = now()
        deadline = start + int(seconds * 1e9)
        batch = []
        for _ in range(window):
            sent[next_id] = start
            batch.append(_STDIO_CALL % next_id)
            next_id += 1
        self.write(b"".join(batch))
        loads = orjson.loads
        while sent:
            chunk = os.read(self.fd_out, 1 << 16)
            if not chunk:
                raise BenchError("server closed stdout")
            self.buf += chunk
            t = now()
            batch = []
            while True:
                i = self.buf.find(b"\n")
                if i < 0:
                    break
                line = bytes(self.buf[:i])
                del self.buf[: i + 1]
                if not line.strip() or b'"method"' in line:
                    continue
                request_id = loads(line).get("id")
                t0 = sent.pop(request_id, None)
                if t0 is None:
                    continue
                lat.append(t - t0)
                if not _fast_ok(line):
                    cell.errors += 1
                if t < deadline:
                    sent[next_id] = t
                    batch.append(_STDIO_CALL % next_id)
                    next_id += 1
            if batch:
                self.write(b"".join(batch))
        end = now()
        cell.seconds = (end - start) / 1e9
        cell.server_cpu_s = cpu_seconds(self.pid) - cpu0
        cell.client_cpu_s = time.process_time() - ccpu0
        cell.machine_cpu_s = machine_busy_seconds() - mcpu0
        cell.calls = len(lat)
        return cell


def stdio_cold_start(argv: list[str], env: dict[str, str], cwd: str, log: Any) -> dict[str, float]:
    """Spawn → first response (initialize), and → first tools/call result, in ms."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, cwd=cwd)
    try:
        peer = StdioPeer(proc)
        peer.write(_stdio_initialize())
        peer.read_response()
        t1 = time.perf_counter()
        peer.write(_STDIO_INITIALIZED)
        peer.write(_STDIO_CALL % 1)
        check_result(orjson.loads(peer.read_response()))
        t2 = time.perf_counter()
        return {"first_response_ms": (t1 - t0) * 1000, "first_call_ms": (t2 - t0) * 1000}
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes], grace: float = 3.0) -> None:
    """Stop one process we started, by its PID: close stdin, SIGTERM, then SIGKILL."""
    if proc.poll() is None and proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace)
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


# -- HTTP -------------------------------------------------------------------------------------


class HttpResponse:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: bytes, body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def header(self, name: str) -> str | None:
        key = name.lower().encode() + b":"
        for line in self.headers.split(b"\r\n"):
            if line.lower().startswith(key):
                return line[len(key):].strip().decode("latin-1")
        return None

    def json(self) -> dict[str, Any]:
        """The JSON-RPC message in a JSON body or in the last ``data:`` line of an SSE body."""
        body = self.body
        if body.lstrip().startswith(b"{"):
            return orjson.loads(body)
        found = None
        for line in body.split(b"\n"):
            if line.startswith(b"data:"):
                data = line[5:].strip()
                if data.startswith(b"{"):
                    found = orjson.loads(data)
        if found is None:
            raise BenchError(f"no JSON-RPC message in body ({self.status}): {body[:300]!r}")
        return found


def _parse(buf: bytearray) -> tuple[HttpResponse, int] | None:
    """One complete HTTP/1.1 response at the start of ``buf`` (Content-Length or chunked)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buf[:end])
    status = int(head[9:12])
    lower = head.lower()
    start = end + 4
    i = lower.find(b"\r\ncontent-length:")
    if i >= 0:
        j = lower.find(b"\r\n", i + 2)
        length = int(lower[i + 17: j if j >= 0 else len(lower)])
        if len(buf) < start + length:
            return None
        return HttpResponse(status, head, bytes(buf[start:start + length])), start + length
    if b"\r\ntransfer-encoding: chunked" in lower:
        body = bytearray()
        pos = start
        while True:
            j = buf.find(b"\r\n", pos)
            if j < 0:
                return None
            size = int(buf[pos:j].split(b";")[0], 16)
            if size == 0:
                k = buf.find(b"\r\n", j + 2)  # trailer section ends with an empty line
                if k < 0:
                    return None
                if k == j + 2:
                    return HttpResponse(status, head, bytes(body)), k + 2
                k = buf.find(b"\r\n\r\n", j + 2)
                if k < 0:
                    return None
                return HttpResponse(status, head, bytes(body)), k + 4
            if len(buf) < j + 2 + size + 2:
                return None
            body += buf[j + 2: j + 2 + size]
            pos = j + 2 + size + 2
    if status in (202, 204, 304) or 100 <= status < 200:
        return HttpResponse(status, head, b""), start
    raise BenchError(f"response without length: {head!r}")


class _Conn(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; one request at a time."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.waiter: asyncio.Future[HttpResponse] | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            parsed = _parse(self.buf)
            if parsed is not None:
                del self.buf[: parsed[1]]
                waiter.set_result(parsed[0])

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(BenchError(f"connection lost: {exc}"))

    def request(self, data: bytes) -> asyncio.Future[HttpResponse]:
        self.waiter = asyncio.get_running_loop().create_future()
        assert self.transport is not None
        self.transport.write(data)
        return self.waiter


def _post(path: str, port: int, body: bytes, headers: dict[str, str]) -> bytes:
    head = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: application/json"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class HttpClient:
    """One MCP client on one keep-alive connection, in one era and response mode.

    ``era``: ``modern`` (2026-07-28, stateless, per-request ``_meta`` and routing
    headers) or ``legacy`` (2025-11-25: ``initialize`` → ``Mcp-Session-Id``).
    ``sse``: accept ``text/event-stream`` (and, in the modern era, ask for
    progress so a server that streams only on demand streams).
    """

    def __init__(self, port: int, era: str, sse: bool, path: str = "/mcp") -> None:
        self.port, self.era, self.sse, self.path = port, era, sse, path
        self.conn: _Conn | None = None
        self.headers: dict[str, str] = {"Accept": "application/json, text/event-stream" if sse else "application/json"}
        self._template: tuple[bytes, bytes, bytes] | None = None

    async def connect(self) -> None:
        loop = asyncio.get_running_loop()
        _, self.conn = await loop.create_connection(_Conn, "127.0.0.1", self.port)
        if self.era == "legacy":
            init = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                 "params": {"protocolVersion": LEGACY_VERSION, "capabilities": {},
                                            "clientInfo": CLIENT_INFO}})
            resp = await self.conn.request(_post(self.path, self.port, init, self.headers))
            message = resp.json()
            if resp.status != 200 or "result" not in message:
                raise BenchError(f"initialize failed ({resp.status}): {resp.body[:300]!r}")
            session = resp.header("mcp-session-id")
            self.headers["Mcp-Protocol-Version"] = message["result"].get("protocolVersion", LEGACY_VERSION)
            if session:
                self.headers["Mcp-Session-Id"] = session
            note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
            resp = await self.conn.request(_post(self.path, self.port, note, self.headers))
            if resp.status not in (200, 202, 204):
                raise BenchError(f"initialized failed ({resp.status}): {resp.body[:300]!r}")
        else:
            self.headers.update({"Mcp-Protocol-Version": MODERN_VERSION, "Mcp-Method": "tools/call",
                                 "Mcp-Name": TOOL})
        self._template = self._make_template()

    def _make_template(self) -> tuple[bytes, bytes, bytes]:
        """The request bytes split around the body length and the JSON-RPC id, built once."""
        params: dict[str, Any] = {"name": TOOL, "arguments": {"service": SERVICE}}
        if self.era == "modern":
            meta: dict[str, Any] = {"io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
                                    "io.modelcontextprotocol/clientCapabilities": {},
                                    "io.modelcontextprotocol/clientInfo": CLIENT_INFO}
            if self.sse:
                meta["progressToken"] = "bench"
            params["_meta"] = meta
        tail = b',"method":"tools/call","params":' + orjson.dumps(params) + b"}"
        head = _post(self.path, self.port, b"", self.headers)
        head = head.replace(b"Content-Length: 0\r\n", b"") [:-2] + b"Content-Length: %d\r\n\r\n"
        return head, b'{"jsonrpc":"2.0","id":%d', tail

    def call_bytes(self, request_id: int) -> bytes:
        head, body_head, tail = self._template  # type: ignore[misc]
        body = body_head % request_id + tail
        return head % len(body) + body

    async def call(self, request_id: int) -> HttpResponse:
        assert self.conn is not None
        return await self.conn.request(self.call_bytes(request_id))

    async def aclose(self) -> None:
        """End the session (handshake era: DELETE, as a well-behaved client does), then the connection."""
        if self.conn is None or self.conn.transport is None:
            return
        if self.era == "legacy" and "Mcp-Session-Id" in self.headers:
            head = [f"DELETE {self.path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}"]
            head += [f"{k}: {v}" for k, v in self.headers.items()]
            try:
                await asyncio.wait_for(self.conn.request(("\r\n".join(head) + "\r\n\r\n").encode()), 5)
            except (BenchError, asyncio.TimeoutError):
                pass
        self.conn.transport.close()


def _cpu_of(pids: list[int]) -> dict[int, float]:
    """CPU seconds of each process (0 for one that is gone: a worker restarted mid-cell)."""
    out = {}
    for pid in pids:
        try:
            out[pid] = cpu_seconds(pid)
        except OSError:
            out[pid] = 0.0
    return out


def run_async(coro: Any) -> Any:
    """Run ``coro`` on uvloop when it is installed (a cheaper client), else asyncio."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


async def open_clients(port: int, era: str, sse: bool, clients: int) -> tuple[list[HttpClient], str]:
    """``clients`` keep-alive connections, the first call checked; and the content type it came as."""
    peers = [HttpClient(port, era, sse) for _ in range(clients)]
    await asyncio.gather(*(p.connect() for p in peers))
    first = await peers[0].call(1)
    if first.status != 200:
        raise BenchError(f"tools/call answered {first.status}: {first.body[:300]!r}")
    check_result(first.json())
    return peers, (first.header("content-type") or "").split(";")[0]


def unpacked_src(ref: str, into: Path) -> Path:
    """``git archive REF src`` unpacked under ``into``: the ``src`` folder truecall was at ``ref``."""
    root = Path(__file__).resolve().parent.parent
    archive = subprocess.run(["git", "-C", str(root), "archive", ref, "src"], check=True, capture_output=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


# -- callgrind (instruction counts: what a loaded machine cannot distort) --------------------------

def callgrind_instrument(pid: int, on: bool) -> None:
    """Turn counting on or off in a process started under ``valgrind --instr-atstart=no``."""
    subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def callgrind_total(out: Path) -> int:
    """The instructions a callgrind output file counted in all."""
    text = subprocess.run(["callgrind_annotate", str(out)], capture_output=True, text=True, check=True).stdout
    match = re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", text) or re.search(r"([\d,]+)\s+PROGRAM TOTALS", text)
    if match is None:
        raise RuntimeError(f"no totals in {out}")
    return int(match.group(1).replace(",", ""))


def callgrind_split(out: Path) -> dict[str, int]:
    """Where a callgrind file's instructions went: ``timers`` (the event loop's timer callbacks: the
    audit journal's load every few ms, uvicorn's tick; what they cost per call grows with how long a
    run takes, i.e. with valgrind's slowdown and the machine's load), ``elsewhere`` (outside the
    event loop: other threads, such as the retention sweep's) and ``calls`` (the rest of the loop's
    work: the requests themselves, which does not depend on the clock)."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                          capture_output=True, text=True, check=True).stdout
    found: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([\s\d.]+%\)\s+\S*/(timer\.c:uv__run_timers|core\.c:uv_run) ", line)
        if m:
            found.setdefault(m.group(2), int(m.group(1).replace(",", "")))
    total = callgrind_total(out)
    loop, timers = found.get("core.c:uv_run", 0), found.get("timer.c:uv__run_timers", 0)
    return {"total": total, "calls": loop - timers, "timers": timers, "elsewhere": total - loop}


def print_costs(cells: list[str], trees: list[str], results: dict[tuple[str, str], dict[str, float] | str],
                ref: str | None, width: int, bare: str | None = None) -> None:
    """The table of ``stdio_cost.py`` and ``http_cost.py``: per cell, each tree's instructions per call
    (this tree ÷ ``ref`` when both counted), then the same split as :func:`callgrind_split` says."""
    for cell in cells:
        mine, theirs = results[(trees[0], cell)], results.get((ref, cell)) if ref else None
        for part in ("total", "calls", "timers", "elsewhere"):
            row = [f"  {cell if part == 'total' else '':>{width}} {part:>9}:"]
            for tree in trees:
                value = results[(tree, cell)]
                if isinstance(value, dict):
                    row.append(f"{tree} {value[part]:>11,.0f}")
                elif part == "total":
                    row.append(f"{tree} {value}")
            if isinstance(mine, dict) and isinstance(theirs, dict) and theirs[part]:
                row.append(f"{trees[0]} ÷ {ref}: {mine[part] / theirs[part]:.3f}")
            other = results.get((bare, cell)) if bare else None
            if part == "total" and isinstance(mine, dict) and isinstance(other, dict):
                row.append(f"bare ÷ {trees[0]}: {100 * other['total'] / mine['total']:.0f} %")
            print("   ".join(row))


def in_parallel(target: Callable[..., None], calls: list[tuple[Any, ...]]) -> None:
    """``target(*args)`` for each ``args``, each in its own thread (instruction counts do not mind
    sharing the cores), until all are done."""
    jobs = [threading.Thread(target=target, args=args) for args in calls]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join()


async def http_cell(port: int, era: str, sse: bool, clients: int, warm_s: float, seconds: float,
                    pid: int | Callable[[], list[int]]) -> Cell:
    """``clients`` keep-alive connections, each calling back-to-back, for ``seconds``.

    ``pid``: the server process, or a function giving every process that serves (a ``--workers``
    supervisor and its workers, read after the warm-up): their CPU is summed into
    ``server_cpu_s`` and kept per process, in that order, in ``extra["process_cpu_s"]``."""
    peers, content_type = await open_clients(port, era, sse, clients)
    cell = Cell(content_type=content_type, extra={"clients": clients, "era": era, "accept_sse": sse})

    async def loop(client: HttpClient, until_ns: int, record: bool, base: int) -> None:
        conn = client.conn
        assert conn is not None
        now = time.perf_counter_ns
        lat = cell.latencies_ns
        request_id = base
        t = now()
        while t < until_ns:
            resp = await conn.request(client.call_bytes(request_id))
            t2 = now()
            if record:
                lat.append(t2 - t)
                if resp.status != 200 or not _fast_ok(resp.body):
                    cell.errors += 1
            request_id += 1
            t = t2

    warm_until = time.perf_counter_ns() + int(warm_s * 1e9)
    await asyncio.gather(*(loop(p, warm_until, False, 10 + 1_000_000 * i) for i, p in enumerate(peers)))
    pids = pid() if callable(pid) else [pid]
    cpu0, ccpu0, mcpu0 = _cpu_of(pids), time.process_time(), machine_busy_seconds()
    start = time.perf_counter_ns()
    until = start + int(seconds * 1e9)
    await asyncio.gather(*(loop(p, until, True, 500_000 + 1_000_000 * i) for i, p in enumerate(peers)))
    end = time.perf_counter_ns()
    cpu1 = _cpu_of(pids)
    per_process = [cpu1[p] - cpu0[p] for p in pids]
    cell.seconds = (end - start) / 1e9
    cell.server_cpu_s = sum(per_process)
    cell.extra["process_cpu_s"] = per_process
    cell.client_cpu_s = time.process_time() - ccpu0
    cell.machine_cpu_s = machine_busy_seconds() - mcpu0
    cell.calls = len(cell.latencies_ns)
    await asyncio.gather(*(p.aclose() for p in peers))
    return cell


def cost_cells(cells: list[str], trees: dict[str, Any], work: Path, label: Callable[[str], str],
               measure: Callable[[Any, str, Path], dict[str, float]]) -> dict[tuple[str, str], dict[str, float] | str]:
    """``stdio_cost.py``'s and ``http_cost.py``'s runs: ``measure(tree's src, cell, callgrind file)`` for each
    tree and cell at once (see :func:`in_parallel`); a cell that fails is reported in the table as
    ``"failed: …"`` and the others still count.  ``label(tree)`` names the tree in the file name."""
    results: dict[tuple[str, str], dict[str, float] | str] = {}

    def one(tree: str, cell: str, index: int) -> None:
        try:
            results[(tree, cell)] = measure(trees[tree], cell, work / f"{index}-{cell}-{label(tree)}.callgrind")
        except Exception as exc:  # noqa: BLE001 - reported in the table
            results[(tree, cell)] = f"failed: {exc}"

    in_parallel(one, [(t, c, i) for i, (t, c) in enumerate((t, c) for t in trees for c in cells)])
    return results


def chosen_cells(parser: Any, given: str, known: Any) -> list[str]:
    """``--cells``: the comma-separated names, each one of ``known`` (else the parser's error)."""
    cells = [c.strip() for c in given.split(",") if c.strip()]
    for c in cells:
        if c not in known:
            parser.error(f"unknown cell {c!r}")
    return cells


# -- what stdio_cost.py and http_cost.py share around each measured server ----------------------------


def cost_parser(description: str, cells: str, cells_help: str) -> argparse.ArgumentParser:
    """The options both callgrind scripts take (each adds its own)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--cells", default=cells, help=cells_help)
    parser.add_argument("--attr", default="app", help="the app in bench/peers/truecall_app.py (default: app)")
    parser.add_argument("--ref", help="also measure git archive REF src, in the same run")
    parser.add_argument("--keep", action="store_true", help="keep the callgrind files")
    return parser


def cost_trees(src: Path, ref: str | None, work: Path) -> dict[str, Any]:
    """This tree's ``src``, and REF's unpacked under ``work`` when asked: the trees a cost script measures."""
    trees: dict[str, Any] = {"this tree": src}
    if ref:
        trees[ref] = unpacked_src(ref, work / "ref")
    return trees


@contextlib.contextmanager
def under_callgrind(proc: subprocess.Popen[bytes], cell: str, src: Any, tmp: str) -> Iterator[None]:
    """The measured server for the block: a failure names the cell, the tree and the server's log, and
    the process is stopped either way (valgrind writes its counts on the way out: a long grace)."""
    try:
        yield
    except Exception as exc:
        raise BenchError(f"{cell} ({src}): {exc}; server log: {tmp}/server.log") from exc
    finally:
        stop(proc, grace=60.0)


def per_call(out: Path, tmp: str, calls: int) -> dict[str, float]:
    """The callgrind file's counts split (calls, timers, elsewhere), per call; the server's folder removed."""
    split = callgrind_split(out)
    shutil.rmtree(tmp, ignore_errors=True)
    return {part: count / calls for part, count in split.items()}


def keep_or_remove(work: Path, keep: bool) -> None:
    if keep:
        print(f"callgrind files: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
