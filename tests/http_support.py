"""Helpers for the Streamable HTTP tests: a real ``truecall serve --http`` process and wire helpers.

``served(tmp_path, *args)`` starts ``python -m truecall.cli serve *args --http --port N`` on
127.0.0.1 (a free port; nothing else is ever bound), with ``TRUECALL_DB`` and the working
directory under ``tmp_path``, waits for ``/healthz`` and, on exit, terminates the process by its
PID (killing it if it does not stop in time).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import httpx
import orjson

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


def _stop(proc: subprocess.Popen[bytes], timeout: float) -> None:
    if proc.poll() is not None:
        return
    try:
        os.kill(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        proc.wait(timeout=timeout)


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
        cmd = [sys.executable, "-m", "truecall.cli", "serve", *args, "--http", "--host", HOST, "--port", str(port)]
        with open(log, "wb") as err:
            proc = subprocess.Popen(cmd, cwd=workdir, env=full_env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=err)
        try:
            if _wait_ready(proc, port, startup_timeout):
                break
            last_error = log.read_text(errors="replace")
        except BaseException:
            _stop(proc, stop_timeout)
            raise
        _stop(proc, stop_timeout)
    else:
        raise RuntimeError(f"truecall serve did not become ready: {last_error[-2000:]}")
    server = Served(proc, port, db, workdir, log)
    try:
        yield server
    finally:
        _stop(proc, stop_timeout)


def _wait_ready(proc: subprocess.Popen[bytes], port: int, timeout: float) -> bool:
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
