"""Helpers for the Streamable HTTP tests: a real ``truecall serve --http`` process and wire helpers.

``served(tmp_path, *args)`` starts ``python -m truecall.cli serve *args --http --port N`` on
127.0.0.1 (a free port; nothing else is ever bound), with ``TRUECALL_DB`` and the working
directory under ``tmp_path``, waits for ``/healthz`` and, on exit, terminates the process by its
PID (killing it if it does not stop in time).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import httpx
import orjson

from stress.common import terminate

HOST = "127.0.0.1"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT = "io.modelcontextprotocol/clientInfo"

OPERATOR = "demo-acme-operator"
READER = "demo-acme-reader"
GLOBEX = "demo-globex-reader"


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@dataclass
class Served:
    """A running ``truecall serve --http`` process."""

    proc: subprocess.Popen[bytes]
    port: int
    db: Path
    workdir: Path
    log: Path
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def stderr(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@contextlib.contextmanager
def served(
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    startup_timeout: float = 15.0,
    stop_timeout: float = 5.0,
) -> Iterator[Served]:
    """Run ``truecall serve *args --http --port N`` on 127.0.0.1 until the block ends."""
    workdir = Path(tmp_path)
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "truecall.db"
    log = workdir / f"serve-{os.getpid()}-{time.monotonic_ns()}.log"
    full_env = {**os.environ, "TRUECALL_DB": str(db), **(env or {})}
    full_env.pop("TRUECALL_PRINCIPAL", None)
    last_error: str = ""
    for _attempt in range(3):  # a free port can be taken between probe and bind: retry a fresh one
        port = free_port()
        cmd = [sys.executable, "-m", "truecall", "serve", *args, "--http", "--host", HOST, "--port", str(port)]
        with open(log, "wb") as err:
            proc = subprocess.Popen(cmd, cwd=workdir, env=full_env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=err)
        try:
            if wait_ready(proc, port, startup_timeout):
                break
            last_error = log.read_text(errors="replace")
        except BaseException:
            terminate(proc, stop_timeout)
            raise
        terminate(proc, stop_timeout)
    else:
        raise RuntimeError(f"truecall serve did not become ready: {last_error[-2000:]}")
    server = Served(proc, port, db, workdir, log)
    try:
        yield server
    finally:
        terminate(proc, stop_timeout)


@contextlib.contextmanager
def served_with_token(tmp_path: Path, app: str, token: str, *, subject: str = "dev@local",
                      tenant: str = "local", scopes: tuple[str, ...] = ()) -> Iterator[Served]:
    """``served`` for ``app`` with a token file that admits ``token`` alone (as the README configures it)."""
    import truecall

    workdir = Path(tmp_path)
    workdir.mkdir(parents=True, exist_ok=True)
    tokens = workdir / "tokens.json"
    tokens.write_bytes(orjson.dumps({"tokens": [{"sha256": truecall.hash_token(token), "subject": subject,
                                                 "tenant": tenant, "scopes": list(scopes)}]}))
    with served(workdir, app, "--token-file", str(tokens)) as server:
        yield server


def wait_ready(proc: subprocess.Popen[bytes], port: int, timeout: float) -> bool:
    """True once the server answers /healthz; a refused connection (not listening yet) is only "not yet"."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=1.0) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            try:
                if client.get(f"http://{HOST}:{port}/healthz").status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            time.sleep(0.03)
    return False


# -- the 2026-07-28 wire -------------------------------------------------------------


def meta(version: str = MODERN, caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {META_VERSION: version, META_CAPS: caps if caps is not None else {},
            META_CLIENT: {"name": "truecall-tests", "version": "0"}, **extra}


def modern_headers(method: str | None, name: str | None = None, *, token: str | None = OPERATOR,
                   version: str = MODERN, sse: bool = False) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream" if sse else "application/json",
        "mcp-protocol-version": version,
    }
    if method is not None:
        headers["mcp-method"] = method
    if name is not None:
        headers["mcp-name"] = name
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return headers


def request(id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def modern_call(client: httpx.Client, url: str, id: Any, method: str, params: dict[str, Any] | None = None, *,
                token: str | None = OPERATOR, name: str | None = None, sse: bool = False,
                headers: dict[str, str] | None = None) -> httpx.Response:
    """POST one 2026-07-28 request with the routing headers filled in from the body."""
    params = dict(params or {})
    params.setdefault("_meta", meta())
    if name is None:
        name = params.get("name") if method in ("tools/call", "prompts/get") else \
            params.get("uri") if method == "resources/read" else None
    h = modern_headers(method, name, token=token, sse=sse)
    if headers:
        h.update(headers)
    return client.post(url, content=orjson.dumps(request(id, method, params)), headers=h)


def sse_messages(body: str | bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body; every ``data:`` line must be one JSON object."""
    text_body = body.decode() if isinstance(body, bytes) else body
    out: list[dict[str, Any]] = []
    for event in text_body.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip(" ") for line in event.split("\n") if line.startswith("data:")]
        if not data:
            continue
        message = orjson.loads("\n".join(data))
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", message
        out.append(message)
    return out


# -- a small app for progress and cancellation (public truecall API only) ------------

APP_DB_ENV = "TRUECALL_TEST_APP_DB"

PROGRESS_APP = '''\
"""A test app: one tool that reports progress, one that only sleeps."""

import asyncio
import os

import truecall

app = truecall.Server("progress-app", "1.0.0", db=os.environ["TRUECALL_TEST_APP_DB"])
# No tokens are configured: on loopback the transport serves this principal anonymously.
app.local_principal = truecall.Principal("local@test", "local", frozenset())


@app.tool("count", description="Counts to three, reporting progress at each step.",
          input_schema={"type": "object", "properties": {}, "additionalProperties": False})
async def count(ctx):
    for step in (1, 2, 3):
        await ctx.progress(step, 3, f"step {step}")
    return {"steps": 3}


@app.tool("slow", description="Sleeps for a long time and does nothing else.",
          input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}})
async def slow(ctx, seconds: float = 30.0):
    await asyncio.sleep(seconds)
    return "woke up"
'''


def write_progress_app(directory: Path) -> tuple[Path, Path]:
    """Write the progress app into ``directory``; returns (app file, the db path it will use)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "progress_app.py"
    path.write_text(PROGRESS_APP)
    return path, directory / "app.db"


def audit_kinds(db: Path, tool: str | None = None) -> list[str]:
    """Audit record kinds in ``db`` (oldest first), read with plain sqlite3."""
    import sqlite3

    from truecall.audit._journal import wait_loaded

    assert wait_loaded(db), "the server did not load its audit journal into the table"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        if tool is None:
            rows = conn.execute("SELECT kind FROM audit_events ORDER BY id").fetchall()
        else:
            rows = conn.execute("SELECT kind FROM audit_events WHERE tool = ? ORDER BY id", (tool,)).fetchall()
    finally:
        conn.close()
    return [r[0] for r in rows]


def raw_post(port: int, body: bytes, headers: dict[str, str], path: str = "/mcp",
             timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """One POST written byte for byte on a socket (for header values httpx refuses to send).

    Returns (status, lower-cased headers, body); the body is read until the server closes.
    """
    lines = [f"POST {path} HTTP/1.1", f"Host: {HOST}:{port}", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    head, _, rest = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    if parsed.get("transfer-encoding", "").lower() == "chunked":
        rest = _dechunk(rest)
    return int(status_line.split()[1]), parsed, rest


def _dechunk(data: bytes) -> bytes:
    out, pos = [], 0
    while True:
        end = data.index(b"\r\n", pos)
        size = int(data[pos:end].split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        out.append(data[end + 2:end + 2 + size])
        pos = end + 2 + size + 2
