"""What every stress command shares: the real server as a child process, /proc readings,
a raw keep-alive HTTP/1.1 client, SSE parsing and the error-hygiene check.

Only 127.0.0.1 is ever used.  Every child process is stopped by its own PID (SIGTERM,
then SIGKILL after a grace period); nothing is killed by name.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
LEGACY_0618 = "2025-06-18"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
META_LOG = "io.modelcontextprotocol/logLevel"
META_SUB = "io.modelcontextprotocol/subscriptionId"
TASKS_EXT = "io.modelcontextprotocol/tasks"

#: The desk's demo bearer tokens (loopback only).  They are secrets as far as answers go:
#: no response may ever contain one.
OPERATOR = "demo-acme-operator"
READER = "demo-acme-reader"
GLOBEX = "demo-globex-reader"
TOKENS = (OPERATOR, READER, GLOBEX)


def modern_meta(caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {META_VERSION: MODERN, META_CAPS: caps if caps is not None else {},
            META_CLIENT: {"name": "truecall-stress", "version": "1"}, **extra}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


# -- /proc ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcStats:
    rss_kb: int
    fds: int
    threads: int
    #: VmHWM: the most RSS the process has ever had, kept by the kernel (a sampler misses short peaks).
    hwm_kb: int = 0

    def __str__(self) -> str:
        return f"rss={self.rss_kb / 1024:.1f} MiB fds={self.fds} threads={self.threads}"


def proc_stats(pid: int) -> ProcStats:
    """RSS (VmRSS) and its high-water mark (VmHWM), open file descriptors and threads of ``pid``, read from /proc."""
    rss = threads = hwm = 0
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return ProcStats(rss, fds, threads, hwm)


def fd_limit(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/limits") as limits:
            for line in limits:
                if line.startswith("Max open files"):
                    return int(line.split()[3])
    except (OSError, ValueError, IndexError):
        return None
    return None


def socket_fds(pid: int) -> int:
    """How many of ``pid``'s descriptors are sockets."""
    count = 0
    base = f"/proc/{pid}/fd"
    for name in os.listdir(base):
        try:
            if os.readlink(f"{base}/{name}").startswith("socket:"):
                count += 1
        except OSError:
            pass
    return count


# -- the server as a child process -----------------------------------------------------------


def secret_env() -> dict[str, str]:
    """Fresh sealing and audit keys: they are in the server's environment, never in an answer."""
    return {
        "TRUECALL_STATE_KEYS": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("="),
        "TRUECALL_AUDIT_KEY": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("="),
    }


def terminate(proc: subprocess.Popen[Any], timeout: float = 10.0) -> int | None:
    """Stop a process we started, by its PID: SIGTERM, then SIGKILL after ``timeout``."""
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=timeout)
    return proc.returncode


class ServerProcess:
    """``python -m truecall serve [APP] [--http ...]`` in ``workdir``, stopped by PID."""

    def __init__(self, workdir: Path, *, app: str | None = None, http: bool = False,
                 env: dict[str, str] | None = None, extra_args: Iterable[str] = (),
                 launcher: list[str] | None = None) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.app = app
        self.http = http
        self.port: int | None = None
        self.secrets = secret_env()
        self.env = {**os.environ, "TRUECALL_DB": str(self.workdir / "truecall.db"), **self.secrets, **(env or {})}
        self.env.pop("TRUECALL_PRINCIPAL", None)
        self.env.setdefault("PYTHONUNBUFFERED", "1")
        self.extra_args = list(extra_args)
        #: What runs ``serve ...`` (default: ``python -m truecall``).
        self.launcher = launcher or [sys.executable, "-m", "truecall"]
        self.log = self.workdir / f"server-{'http' if http else 'stdio'}-{time.monotonic_ns()}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        #: Run in the child before exec (e.g. to lower its descriptor limit).
        self.preexec: Any = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def secret_values(self) -> list[str]:
        return list(self.secrets.values())

    def start(self, timeout: float = 20.0) -> "ServerProcess":
        cmd = [*self.launcher, "serve"]
        if self.app:
            cmd.append(self.app)
        cmd += self.extra_args
        if not self.http:
            with open(self.log, "wb") as err:
                self.proc = subprocess.Popen(cmd, cwd=self.workdir, env=self.env, stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=err, preexec_fn=self.preexec)
            return self
        last = ""
        for _attempt in range(3):  # a probed port can be taken before the bind: retry with another
            self.port = free_port()
            full = cmd + ["--http", "--host", HOST, "--port", str(self.port)]
            with open(self.log, "wb") as err:
                self.proc = subprocess.Popen(full, cwd=self.workdir, env=self.env, stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, stderr=err, preexec_fn=self.preexec)
            if self._wait_ready(timeout):
                return self
            last = self.stderr()[-2000:]
            self.stop()
        raise RuntimeError(f"truecall serve --http did not become ready: {last}")

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                with RawHttp(self.port or 0, timeout=1.0) as conn:
                    if conn.request("GET", "/healthz").status == 200:
                        return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stats(self) -> ProcStats:
        return proc_stats(self.pid)

    def stderr(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM by PID, SIGKILL after ``timeout``; returns the exit status."""
        proc = self.proc
        if proc is None:
            return None
        terminate(proc, timeout)
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        return proc.returncode

    def __enter__(self) -> "ServerProcess":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# -- a raw HTTP/1.1 client ---------------------------------------------------------------------


class HttpProtocolViolation(Exception):
    """The server's bytes are not a well-formed HTTP/1.1 response."""


@dataclass
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes
    elapsed: float
    streamed: bool = False  # read as an open SSE stream and closed by us
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


class RawHttp:
    """One keep-alive connection to the server, written and read byte for byte.

    Unlike a client library it sends any header value (non-ASCII, control bytes, 64 KiB)
    and any framing, and it can stop reading an SSE stream after its first event.
    """

    MAX_HEAD = 256 * 1024

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.port = port
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self.buf = bytearray()

    def __enter__(self) -> "RawHttp":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def connect(self) -> socket.socket:
        if self.sock is None:
            self.sock = socket.create_connection((HOST, self.port), timeout=self.timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.buf = bytearray()
        return self.sock

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = None
        self.buf = bytearray()

    # reading -----------------------------------------------------------------------------

    def _fill(self, deadline: float) -> bool:
        assert self.sock is not None
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("response deadline")
        self.sock.settimeout(left)
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def _until(self, marker: bytes, deadline: float, limit: int) -> bytes:
        while True:
            idx = self.buf.find(marker)
            if idx >= 0:
                out = bytes(self.buf[:idx])
                del self.buf[: idx + len(marker)]
                return out
            if len(self.buf) > limit:
                raise HttpProtocolViolation("header section too long")
            if not self._fill(deadline):
                raise ConnectionError("connection closed mid-response")

    def _exact(self, n: int, deadline: float) -> bytes:
        while len(self.buf) < n:
            if not self._fill(deadline):
                raise ConnectionError("connection closed mid-body")
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def _to_eof(self, deadline: float) -> bytes:
        while self._fill(deadline):
            pass
        out = bytes(self.buf)
        self.buf = bytearray()
        return out

    def read_response(self, deadline: float, *, method: str = "POST", first_event_only: bool = False,
                      stream_grace: float = 1.0, on_event: Any = None) -> HttpResponse:
        """One response.  ``first_event_only``: an SSE stream is read until its first event or
        ``stream_grace`` seconds after its headers, then the connection is closed (``streamed``)."""
        started = time.monotonic()
        while True:
            head = self._until(b"\r\n\r\n", deadline, self.MAX_HEAD)
            status_line, *lines = head.decode("latin-1").split("\r\n")
            parts = status_line.split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
                raise HttpProtocolViolation(f"bad status line {status_line[:80]!r}")
            status = int(parts[1])
            headers: dict[str, str] = {}
            for line in lines:
                name, sep, value = line.partition(":")
                if not sep:
                    raise HttpProtocolViolation(f"bad header line {line[:80]!r}")
                headers[name.strip().lower()] = value.strip()
            if status != 100:
                break
        response = HttpResponse(status, headers, b"", 0.0)
        sse = headers.get("content-type", "").startswith("text/event-stream")
        if method == "HEAD" or status in (204, 304):
            pass
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = bytearray()
            parser = SseParser() if sse else None
            if sse and first_event_only:
                deadline = min(deadline, time.monotonic() + stream_grace)
            while True:
                try:
                    size_line = self._until(b"\r\n", deadline, 4096)
                except socket.timeout:
                    if not (sse and first_event_only):
                        raise
                    response.streamed = True  # an open stream with nothing (more) to say yet
                    self.close()
                    break
                try:
                    size = int(size_line.split(b";")[0].strip(), 16)
                except ValueError:
                    raise HttpProtocolViolation(f"bad chunk size {size_line[:40]!r}") from None
                if size == 0:
                    self._until(b"\r\n", deadline, 65536)  # trailers end
                    break
                chunk = self._exact(size, deadline)
                if self._exact(2, deadline) != b"\r\n":
                    raise HttpProtocolViolation("chunk not terminated by CRLF")
                body += chunk
                if parser is not None:
                    for event in parser.feed(chunk):
                        response.events.append(event)
                        if on_event is not None:
                            on_event(event)
                    if first_event_only and response.events:
                        response.streamed = True
                        self.close()
                        break
            response.body = bytes(body)
        elif "content-length" in headers:
            try:
                length = int(headers["content-length"])
            except ValueError:
                raise HttpProtocolViolation("bad content-length") from None
            response.body = self._exact(length, deadline)
        else:
            response.body = self._to_eof(deadline)
            self.close()
        if sse and not response.streamed and not response.events and response.body:
            response.events = SseParser().feed(response.body)
        if headers.get("connection", "").lower() == "close":
            self.close()
        response.elapsed = time.monotonic() - started
        return response

    # writing -----------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        sock = self.connect()
        sock.settimeout(self.timeout)
        sock.sendall(data)

    def request(self, method: str, path: str, headers: Iterable[tuple[Any, Any]] = (), body: bytes | None = None,
                *, timeout: float | None = None, first_event_only: bool = False, host: bytes | None = None,
                chunks: list[int] | None = None, on_event: Any = None, stream_grace: float = 1.0) -> HttpResponse:
        """One request on the kept-alive connection (reconnecting if the server closed it)."""
        data = build_request(method, path, headers, body, port=self.port, host=host, chunks=chunks)
        deadline = time.monotonic() + (timeout or self.timeout)
        for attempt in (0, 1):
            fresh = self.sock is None
            self.send_raw_safe(data, fresh)
            try:
                return self.read_response(deadline, method=method, first_event_only=first_event_only,
                                          on_event=on_event, stream_grace=stream_grace)
            except ConnectionError:
                # The server closed an idle keep-alive connection just as we reused it: retry once
                # on a fresh connection (only if nothing at all was read).
                self.close()
                if fresh or attempt:
                    raise
        raise AssertionError("unreachable")

    def send_raw_safe(self, data: bytes, fresh: bool) -> None:
        try:
            self.send_raw(data)
        except (BrokenPipeError, ConnectionResetError):
            if fresh:
                raise
            self.close()
            self.send_raw(data)


def _b(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogatepass")


def build_request(method: str, path: str, headers: Iterable[tuple[Any, Any]] = (), body: bytes | None = None, *,
                  port: int = 0, host: bytes | None = None, chunks: list[int] | None = None) -> bytes:
    """The bytes of one HTTP/1.1 request; ``chunks`` sends the body chunked in those sizes."""
    out = [_b(method) + b" " + _b(path) + b" HTTP/1.1\r\n"]
    names = set()
    for name, value in headers:
        names.add(_b(name).lower())
        out.append(_b(name) + b": " + _b(value) + b"\r\n")
    if b"host" not in names:
        out.insert(1, b"Host: " + (host if host is not None else f"{HOST}:{port}".encode()) + b"\r\n")
    payload = b""
    if body is not None:
        if chunks is not None:
            out.append(b"Transfer-Encoding: chunked\r\n")
            pieces, pos = [], 0
            for size in chunks:
                piece = body[pos:pos + max(1, size)]
                if not piece:
                    break
                pieces.append(b"%x\r\n%s\r\n" % (len(piece), piece))
                pos += len(piece)
            if pos < len(body):
                pieces.append(b"%x\r\n%s\r\n" % (len(body) - pos, body[pos:]))
            payload = b"".join(pieces) + b"0\r\n\r\n"
        else:
            if b"content-length" not in names:
                out.append(b"Content-Length: " + str(len(body)).encode() + b"\r\n")
            payload = body
    elif method in ("POST", "PUT", "PATCH") and b"content-length" not in names:
        out.append(b"Content-Length: 0\r\n")
    out.append(b"\r\n")
    return b"".join(out) + payload


class SseParser:
    """Incremental ``text/event-stream`` parser; yields each event's JSON ``data``."""

    def __init__(self) -> None:
        self.pending = b""

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self.pending += data
        out = []
        text = self.pending.replace(b"\r\n", b"\n")
        *events, rest = text.split(b"\n\n")
        self.pending = rest
        for event in events:
            lines = [line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
            if not lines:
                continue  # a comment / keep-alive
            try:
                message = orjson.loads(b"\n".join(lines))
            except orjson.JSONDecodeError:
                message = {"__unparseable__": b"\n".join(lines)[:200].decode("latin-1")}
            out.append(message)
        return out


# -- wire checks -----------------------------------------------------------------------------

#: What an error (or a tool's isError text) must never show: internals of the server.
FORBIDDEN_IN_ERRORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("traceback", re.compile(r"Traceback \(most recent call last\)")),
    ("frame", re.compile(r'File "[^"]*", line \d+')),
    ("python file", re.compile(r"[\w./-]+\.py\b")),
    ("posix path", re.compile(r"(?:^|(?<=[\s'\"(=:]))/(?:[\w.-]+/)+[\w.-]+")),
    ("site-packages", re.compile(r"site-packages|dist-packages")),
    ("exception class", re.compile(r"\b(?:RecursionError|UnicodeEncodeError|UnicodeDecodeError|TypeError|KeyError|"
                                   r"AttributeError|IndexError|AssertionError|ZeroDivisionError|OverflowError|"
                                   r"sqlite3\.\w+|OperationalError|IntegrityError|JSONDecodeError|"
                                   r"NameError|RuntimeError|MemoryError)\b")),
    ("object repr", re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>")),
    ("sql", re.compile(r"\b(?:SELECT|INSERT INTO|UPDATE|DELETE FROM)\b .*\b(?:FROM|VALUES|SET|WHERE)\b")),
)


def strings_in(value: Any, out: list[str] | None = None, limit: int = 20000) -> list[str]:
    """Every string (keys too) in a JSON value, for the echo allowance of :func:`leaks`."""
    out = [] if out is None else out
    stack = [value]
    while stack and len(out) < limit:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            for k, v in item.items():
                out.append(str(k))
                stack.append(v)
        elif isinstance(item, list):
            stack.extend(item)
    return out


def leaks(text: str, echo: str, secret_values: Iterable[str]) -> list[str]:
    """What ``text`` (an error message/data) reveals that it must not.

    ``echo`` is what the client itself sent: a match that is only the client's own input
    repeated back (e.g. an unknown method name) is not a leak.  Secrets never are echoes.
    """
    found = []
    for secret in secret_values:
        if secret and secret in text:
            found.append(f"secret {secret[:6]}…")
    for name, pattern in FORBIDDEN_IN_ERRORS:
        for m in pattern.finditer(text):
            hit = m.group(0).strip(" '\"(=:")
            if hit and hit not in echo:
                found.append(f"{name}: {hit[:120]!r}")
                break
    return found


def error_texts(message: dict[str, Any]) -> list[str]:
    """The texts of a response that describe an error: the JSON-RPC error, or an isError tool result."""
    texts = []
    error = message.get("error")
    if isinstance(error, dict):
        texts.append(orjson.dumps(error).decode())
    result = message.get("result")
    if isinstance(result, dict) and result.get("isError") is True:
        for block in result.get("content") or []:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                texts.append(block["text"])
        if "structuredContent" in result:
            texts.append(orjson.dumps(result["structuredContent"]).decode())
    return texts


def check_envelope(message: Any) -> str | None:
    """Why ``message`` is not a well-formed JSON-RPC 2.0 message from a server (None if it is)."""
    if not isinstance(message, dict):
        return "not an object"
    if message.get("jsonrpc") != "2.0":
        return "jsonrpc is not 2.0"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "method is not a string"
        if "id" in message and not _valid_id(message["id"]):
            return "server request id invalid"
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            return "params not an object"
        return None
    has_result, has_error = "result" in message, "error" in message
    if has_result == has_error:
        return "response must have exactly one of result/error"
    if has_result:
        if not _valid_id(message.get("id")):
            return "result without a valid id"
        if not isinstance(message["result"], dict):
            return "result is not an object"
        return None
    if "id" in message and not _valid_id(message["id"]):
        return "error id invalid (null must be omitted)"
    error = message["error"]
    if not isinstance(error, dict) or not isinstance(error.get("code"), int) or isinstance(error.get("code"), bool):
        return "error.code is not an integer"
    if not isinstance(error.get("message"), str):
        return "error.message is not a string"
    return None


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def id_key(value: Any) -> tuple[str, Any]:
    """1 and "1" are different ids."""
    return (type(value).__name__, value)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, int(round(q / 100.0 * (len(ordered) - 1)))))
    return ordered[idx]


class Sampler(threading.Thread):
    """Samples a PID's /proc numbers every ``interval`` seconds until stopped."""

    def __init__(self, pid: int, interval: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.samples: list[tuple[float, ProcStats]] = []
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                self.samples.append((time.monotonic(), proc_stats(self.pid)))
            except OSError:
                return
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)

    def max_rss_kb(self) -> int:
        return max((s.rss_kb for _, s in self.samples), default=0)

    def max_fds(self) -> int:
        return max((s.fds for _, s in self.samples), default=0)


def chunked(seq: list[Any], n: int) -> Iterator[list[Any]]:
    for i in range(0, len(seq), n):
        yield seq[i:i + n]
