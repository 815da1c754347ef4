"""Raw JSON-RPC over stdio and Streamable HTTP: what no client library lets through."""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Sequence

import orjson

from ._report import Finding, Report, scrub
from ._rules import excerpt


class _RawStdio:
    """A separate process of the same server, spoken to in raw lines (this probe started it; it stops it)."""

    def __init__(self, command: Sequence[str], env: Any, timeout: float) -> None:
        import os

        self.command, self.timeout = list(command), timeout
        self.env = {**os.environ, **env} if env is not None else None  # as the client's stdio transport does
        self.proc: asyncio.subprocess.Process | None = None
        self.extra: list[Any] = []

    async def __aenter__(self) -> "_RawStdio":
        self.proc = await asyncio.create_subprocess_exec(
            *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=self.env, limit=1 << 24)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()
            await asyncio.wait_for(proc.wait(), 2.0)
        except (TimeoutError, OSError, AssertionError):
            proc.kill()
            await proc.wait()

    async def send(self, line: bytes) -> None:
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        proc.stdin.write(line + b"\n")
        await proc.stdin.drain()

    async def answers(self, ids: set[Any], wait: float, linger: float) -> list[Any]:
        """The answers whose id is in ``ids``: the first within ``wait`` seconds, then any more that
        come within ``linger`` (answers to other ids, e.g. late ones, are passed over)."""
        got: list[Any] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            left = deadline - loop.time()
            message = await self.read(left) if left > 0 else None
            if message is None:
                return got
            if message.get("id") in ids:
                got.append(message)
                deadline = loop.time() + linger

    async def answers_before(self, ids: set[Any], sentinel: Any, wait: float, linger: float) -> tuple[list[Any], bool]:
        """The answers whose id is in ``ids`` that come before the answer to the request ``sentinel``
        (sent after them) or within ``linger`` seconds after it, and whether it came within ``wait``.
        A server that reads its input in order has seen the lines sent before a request it answers:
        its silence on them is then proven, not assumed from a timeout (``linger`` leaves room for a
        server that answers concurrently)."""
        got: list[Any] = []
        loop = asyncio.get_running_loop()
        deadline, answered = loop.time() + wait, False
        while True:
            left = deadline - loop.time()
            message = await self.read(left) if left > 0 else None
            if message is None:
                return got, answered
            if message.get("id") in ids:
                got.append(message)
            elif not answered and message.get("id") == sentinel:
                answered, deadline = True, min(deadline, loop.time() + linger)

    async def read(self, wait: float) -> Any:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        deadline = asyncio.get_running_loop().time() + wait
        while True:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return None
            try:
                raw = await asyncio.wait_for(proc.stdout.readline(), left)
            except TimeoutError:
                return None
            if not raw:
                return None
            try:
                message = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue  # a log line on stdout is another fault; not this check's
            if isinstance(message, dict) and ("result" in message or "error" in message):
                return message


def _find(report: Report, severity: str, code: str, summary: str, sent: Any, answer: Any,
          era: str = "json-rpc") -> None:
    """A raw check's finding: what was sent as is, the answer as evidence."""
    report.findings.append(Finding(severity, "protocol", code, era, None, summary, {"sent": sent},
                                   scrub(excerpt(answer))))


def _error_code(message: Any) -> Any:
    error = message.get("error") if isinstance(message, dict) else None
    return error.get("code") if isinstance(error, dict) else None


#: How long answers to a bad line may still come after the answer to the request sent after it.
LINGER_S = 0.3


async def _raw_checks(report: Report, command: Sequence[str], *, modern: bool, env: Any, timeout: float) -> None:
    """Raw lines to a process of the server's own.  The server is known to be reading (it answered a
    tools/list, which is also the one-request-one-answer check) before any silence is held against it."""
    from ..protocol.versions import META_CAPS, META_CLIENT, META_VERSION

    wait = min(timeout, 3.0)
    client_info = {"name": "truecall-probe", "version": "1"}

    find = functools.partial(_find, report)

    try:
        async with _RawStdio(command, env, timeout) as raw:
            meta = {META_VERSION: "2026-07-28", META_CAPS: {}, META_CLIENT: client_info}
            if not modern:
                hello = {"jsonrpc": "2.0", "id": "truecall-probe-init", "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client_info}}
                await raw.send(orjson.dumps(hello))
                if not await raw.answers({"truecall-probe-init"}, timeout, 0.0):
                    report.notes.append(f"raw JSON-RPC checks not run: no answer to initialize in {timeout:g} s")
                    return
                await raw.send(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            listing = {"jsonrpc": "2.0", "id": "truecall-probe-once", "method": "tools/list",
                       "params": {"_meta": meta} if modern else {}}
            await raw.send(orjson.dumps(listing))
            got = await raw.answers({"truecall-probe-once"}, timeout, 0.5)
            if not got:
                report.notes.append(f"raw JSON-RPC checks not run: no answer to tools/list in {timeout:g} s")
                return
            if len(got) > 1:
                find("failure", "answered_twice", f"one tools/list was answered {len(got)} times", listing,
                     [{"id": g.get("id"), "has": sorted(k for k in g if k in ("result", "error"))} for g in got])
            # Each bad line is followed by a tools/list: once that is answered, a server that reads in
            # order has read the bad line, and its silence is shown (no timeout waited out).
            async def after(line: bytes, ids: set[Any], sentinel: str) -> tuple[Any, str]:
                await raw.send(line)
                await raw.send(orjson.dumps(listing | {"id": sentinel}))
                got, answered = await raw.answers_before(ids, sentinel, wait, LINGER_S)
                silence = " (silence, though the request after it was answered)" if answered else \
                    f" (silence for {wait:g} s)"
                return next(iter(got), None), silence

            bad = "{not json"
            answer, silence = await after(bad.encode(), {None}, "truecall-probe-after-bad")
            if _error_code(answer) != -32700:
                find("warning", "parse_error_unanswered",
                     "a line that is not JSON was not answered with -32700 and id null"
                     + (silence if answer is None else ""), bad, answer)
            invalid = {"jsonrpc": "2.0", "id": "truecall-probe-invalid", "method": 42}
            answer, silence = await after(orjson.dumps(invalid), {"truecall-probe-invalid", None},
                                          "truecall-probe-after-invalid")
            if _error_code(answer) != -32600:
                find("warning", "invalid_request_unanswered",
                     "a request whose method is a number was not answered with -32600"
                     + (silence if answer is None else ""), invalid, answer)
            if modern:
                ask = {"jsonrpc": "2.0", "id": "truecall-probe-version", "method": "tools/list", "params": {"_meta": {
                    **meta, META_VERSION: "1999-01-01"}}}
                await raw.send(orjson.dumps(ask))
                answer = next(iter(await raw.answers({"truecall-probe-version"}, timeout, 0.0)), None)
                data = (answer.get("error") or {}).get("data") if isinstance(answer, dict) and \
                    isinstance(answer.get("error"), dict) else None
                if _error_code(answer) != -32022 or not isinstance(data, dict) or \
                        not isinstance(data.get("supported"), list):
                    find("failure", "unsupported_version_data",
                         "a request naming protocol version 1999-01-01 was not refused with -32022 and "
                         "data.supported", ask, answer, "2026-07-28")
    except (OSError, AssertionError, ConnectionError, ValueError) as exc:
        report.notes.append(f"raw JSON-RPC checks not run: {type(exc).__name__}: {str(exc)[:200]}")


async def _raw_http(report: Report, url: str, *, token: str | None, timeout: float,
                    http_transport: Any = None) -> None:
    """The same raw checks over Streamable HTTP, 2026-07-28 only (stateless: no session to open first).
    One POST, one answer: a JSON body or the first JSON-RPC message of an event stream."""
    import httpx

    from ..protocol.versions import META_CAPS, META_CLIENT, META_VERSION

    base = {"content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28"}
    if token:
        base["authorization"] = f"Bearer {token}"
    meta = {META_VERSION: "2026-07-28", META_CAPS: {}, META_CLIENT: {"name": "truecall-probe", "version": "1"}}

    find = functools.partial(_find, report)

    async def post(http: Any, body: bytes, headers: dict[str, str]) -> Any:
        response = await http.post(url, content=body, headers={**base, **headers})
        text = response.text
        if "text/event-stream" in response.headers.get("content-type", ""):
            for line in text.splitlines():
                if line.startswith("data:"):
                    try:
                        message = orjson.loads(line[5:].strip())
                    except orjson.JSONDecodeError:
                        continue
                    if isinstance(message, dict) and ("result" in message or "error" in message):
                        return message
            return {"httpStatus": response.status_code, "body": text[:200]}
        try:
            message = orjson.loads(text) if text else None
        except orjson.JSONDecodeError:
            message = None
        return message if isinstance(message, dict) else {"httpStatus": response.status_code, "body": text[:200]}

    try:
        async with httpx.AsyncClient(timeout=timeout, transport=http_transport) as http:
            bad = "{not json"
            answer = await post(http, bad.encode(), {})
            if _error_code(answer) != -32700:
                find("warning", "parse_error_unanswered", "a body that is not JSON was not answered with -32700",
                     bad, answer)
            invalid = {"jsonrpc": "2.0", "id": "truecall-probe-invalid", "method": 42}
            answer = await post(http, orjson.dumps(invalid), {})
            if _error_code(answer) != -32600:
                find("warning", "invalid_request_unanswered",
                     "a request whose method is a number was not answered with -32600", invalid, answer)
            ask = {"jsonrpc": "2.0", "id": "truecall-probe-version", "method": "tools/list",
                   "params": {"_meta": {**meta, META_VERSION: "1999-01-01"}}}
            answer = await post(http, orjson.dumps(ask), {"mcp-protocol-version": "1999-01-01",
                                                          "mcp-method": "tools/list"})
            error = answer.get("error") if isinstance(answer, dict) else None
            data = error.get("data") if isinstance(error, dict) else None
            if _error_code(answer) != -32022 or not isinstance(data, dict) or \
                    not isinstance(data.get("supported"), list):
                find("failure", "unsupported_version_data",
                     "a request naming protocol version 1999-01-01 was not refused with -32022 and data.supported",
                     ask, answer, "2026-07-28")
    except httpx.HTTPError as exc:
        report.notes.append(f"raw JSON-RPC checks over HTTP not finished: {type(exc).__name__}")
