"""The real server over stdio: ``python -m truecall.cli serve`` with pipes.

Every line the server writes to stdout must be one JSON-RPC message, valid against the
official schema of the protocol version of the request it answers; stderr may carry logs
but never a traceback; each request is answered exactly once (a cancelled one never).
"""

from __future__ import annotations

import collections
import os
import queue
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

import mcp_schema
from truecall.audit._journal import wait_loaded

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-tests", "version": "1.0"}}
META_ELICIT = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}

RESULT_TYPES = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/read": "ReadResourceResult",
}

SLOW_APP = textwrap.dedent('''
    """A tiny app on the public truecall API, with a tool that takes its time."""
    import asyncio
    from pathlib import Path

    from truecall import Server

    app = Server("slow-app", "0.1.0", db=str(Path(__file__).with_name("slow.db")))


    @app.tool("slow", description="Sleeps, then says so.",
              input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}})
    async def slow(ctx, seconds: float = 30.0) -> str:
        await asyncio.sleep(seconds)
        return "woke"


    @app.tool("quick", description="Answers at once.")
    def quick(ctx) -> str:
        return "quick"
''')


def _key(id: Any) -> bytes:
    return orjson.dumps(id)  # 1 and "1" are different ids


class StdioServer:
    """The server process, its stdout read line by line on a thread."""

    def __init__(self, cwd: Path, *args: str, env: dict[str, str] | None = None, version: str = LEGACY) -> None:
        full_env = dict(os.environ)
        full_env["TRUECALL_DB"] = str(cwd / "desk.db")
        full_env.pop("TRUECALL_PRINCIPAL", None)
        full_env.update(env or {})
        self.proc = subprocess.Popen([sys.executable, "-m", "truecall", "serve", *args], cwd=cwd, env=full_env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.version = version  # for server-initiated messages and answers we cannot attribute
        self.sent: dict[bytes, tuple[str, str]] = {}  # request id -> (version, method)
        self.raw_lines: list[bytes] = []
        self.stderr = b""
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stash: list[dict[str, Any]] = []
        self._out = threading.Thread(target=self._pump, daemon=True)
        self._out.start()
        self._err = threading.Thread(target=self._pump_err, daemon=True)
        self._err.start()
        self.returncode: int | None = None

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw_lines.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    # -- writing ---------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any], version: str | None = None, *, newline: bool = True) -> Any:
        if "method" in message and "id" in message:
            self.sent[_key(message["id"])] = (version or self.version, message["method"])
        self.write(orjson.dumps(message) + (b"\n" if newline else b""))
        return message.get("id")

    def request(self, id: Any, method: str, params: dict[str, Any] | None = None, version: str | None = None,
                timeout: float = 10.0) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message, version)
        return self.response(id, timeout)

    def modern(self, id: Any, method: str, params: dict[str, Any] | None = None, meta: dict[str, Any] = META,
               timeout: float = 10.0) -> dict[str, Any]:
        return self.request(id, method, {**(params or {}), "_meta": meta}, MODERN, timeout)

    # -- reading ---------------------------------------------------------------------------

    def next_message(self, timeout: float = 10.0) -> dict[str, Any]:
        if self._stash:
            return self._stash.pop(0)
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no message within {timeout}s; stderr: {self.stderr[-2000:]!r}") from None
        assert line is not None, f"stdout closed; stderr: {self.stderr[-2000:]!r}"
        message = orjson.loads(line)
        self._validate(message)
        return message

    def wait_for(self, predicate: Any, timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        skipped: list[dict[str, Any]] = []
        try:
            for i, m in enumerate(self._stash):
                if predicate(m):
                    return self._stash.pop(i)
            stash, self._stash = self._stash, []
            skipped.extend(stash)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"nothing matching within {timeout}s; got {skipped}")
                m = self.next_message(left)
                if predicate(m):
                    return m
                skipped.append(m)
        finally:
            self._stash = skipped + self._stash

    def response(self, id: Any, timeout: float = 10.0) -> dict[str, Any]:
        return self.wait_for(lambda m: "method" not in m and m.get("id", object()) == id
                             and type(m.get("id")) is type(id), timeout)

    def _validate(self, message: dict[str, Any]) -> None:
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", message
        if "method" not in message and "id" in message and _key(message["id"]) in self.sent:
            version, method = self.sent[_key(message["id"])]
        else:
            version, method = self.version, None
        if "id" not in message and "error" in message and version == "2025-06-18":
            version = LEGACY  # 2025-06-18 cannot express an error for an unreadable id
        mcp_schema.check(message, version)
        if "result" in message and method in RESULT_TYPES:
            definition = RESULT_TYPES[method]
            if version == MODERN and message["result"].get("resultType") == "input_required":
                definition = "InputRequiredResult"
            mcp_schema.check_result(message["result"], definition, version)

    # -- ending ----------------------------------------------------------------------------

    def close(self, timeout: float = 10.0) -> float:
        """Close stdin; wait for a clean exit; check everything that was written. Returns seconds taken."""
        started = time.monotonic()
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.returncode = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"server did not exit within {timeout}s after stdin closed") from None
        took = time.monotonic() - started
        self._out.join(5)
        self._err.join(5)
        assert self.returncode == 0, self.stderr[-3000:]
        assert b"Traceback" not in self.stderr, self.stderr[-3000:]
        # protocol only on stdout: every line one whole, valid message
        for line in self.raw_lines:
            assert line.endswith(b"\n") and b"\n" not in line[:-1]
            self._validate(orjson.loads(line))
        return took

    def answers(self) -> collections.Counter[bytes]:
        """How many responses each id got (responses only; unreadable ids under b'null')."""
        counts: collections.Counter[bytes] = collections.Counter()
        for line in self.raw_lines:
            m = orjson.loads(line)
            if "method" not in m:
                counts[_key(m.get("id"))] += 1
        return counts

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def spawn(tmp_path):
    started: list[StdioServer] = []

    def factory(*args: str, **kwargs: Any) -> StdioServer:
        server = StdioServer(tmp_path, *args, **kwargs)
        started.append(server)
        return server

    yield factory
    for server in started:
        server.kill()


def _severity(db: Path, incident: str) -> str:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT severity FROM incidents WHERE tenant = 'acme' AND incident_id = ?",
                            (incident,)).fetchone()[0]
    finally:
        conn.close()


def _exactly_once(server: StdioServer, ids: list[Any]) -> None:
    counts = server.answers()
    for id in ids:
        assert counts[_key(id)] == 1, (id, counts[_key(id)])
    assert all(n == 1 for k, n in counts.items() if k not in (b"null", b'"slow-2"')), counts


# -- handshake era -------------------------------------------------------------------------------------


def test_handshake_session_over_stdio(spawn, tmp_path):
    server = spawn(version=LEGACY)
    early = server.request(0, "tools/list")
    assert early["error"]["code"] == -32600 and "new" in early["error"]["message"]
    assert server.request("p0", "ping") == {"jsonrpc": "2.0", "id": "p0", "result": {}}

    init = server.request(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {"elicitation": {}},
                                            "clientInfo": {"name": "stdio-tests", "version": "1.0"}})
    assert init["result"]["protocolVersion"] == LEGACY
    assert init["result"]["serverInfo"]["name"] == "truecall-incident-desk"
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    tools = server.request(2, "tools/list")["result"]["tools"]
    assert {"incident.search", "incident.escalate"} <= {t["name"] for t in tools}
    found = server.request(3, "tools/call", {"name": "incident.search", "arguments": {"service": "payments"}})
    assert found["result"]["structuredContent"] == {"service": "payments", "count": 2, "tenant": "acme"}
    missing = server.request(4, "resources/read", {"uri": "incident://acme/INC-404"})
    assert missing["error"]["code"] == -32002
    again = server.request(5, "initialize", {"protocolVersion": LEGACY, "capabilities": {}})
    assert again["error"]["code"] == -32600 and "ready" in again["error"]["message"]

    # handshake-era elicitation: a real request on stdout, answered on stdin
    server.send({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
        "name": "incident.escalate", "arguments": {"incidentId": "INC-1002"}}})
    ask = server.wait_for(lambda m: m.get("method") == "elicitation/create")
    assert ask["params"]["mode"] == "form" and "INC-1002" in ask["params"]["message"]
    server.send({"jsonrpc": "2.0", "id": ask["id"],
                 "result": {"action": "accept", "content": {"severity": "P1", "reason": "stdio test"}}})
    done = server.response(6)
    assert done["result"]["structuredContent"] == {"incidentId": "INC-1002", "previousSeverity": "P3",
                                                   "severity": "P1"}

    server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "incident.escalate", "arguments": {"incidentId": "INC-1001"}}})
    ask = server.wait_for(lambda m: m.get("method") == "elicitation/create")
    server.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}})
    declined = server.response(7)
    assert declined["result"]["isError"] is True
    assert declined["result"]["structuredContent"]["error"]["kind"] == "declined"

    assert server.close() < 5
    _exactly_once(server, [0, "p0", 1, 2, 3, 4, 5, 6, 7])
    assert _severity(tmp_path / "desk.db", "INC-1002") == "P1"
    assert _severity(tmp_path / "desk.db", "INC-1001") == "P2"


def test_handshake_2025_06_18_over_stdio(spawn):
    server = spawn(version="2025-06-18")
    init = server.request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    assert init["result"]["protocolVersion"] == "2025-06-18"
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    result = server.request(2, "tools/call", {"name": "incident.escalate", "arguments": {"incidentId": "INC-1001"}})
    # no elicitation capability declared: an honest isError naming what is missing, never a hang
    assert result["result"]["isError"] is True
    assert result["result"]["structuredContent"]["error"]["missing"] == ["severity", "reason"]
    server.close()


# -- stateless era -----------------------------------------------------------------------------------


def test_stateless_session_over_stdio(spawn, tmp_path):
    server = spawn(version=MODERN)
    discover = server.modern("d", "server/discover")["result"]
    assert MODERN in discover["supportedVersions"] and discover["resultType"] == "complete"
    listed = server.modern(1, "tools/list")["result"]
    assert listed["resultType"] == "complete" and isinstance(listed["ttlMs"], int) and listed["cacheScope"]
    found = server.modern(2, "tools/call", {"name": "incident.search", "arguments": {"service": "checkout"}})
    assert found["result"]["structuredContent"]["count"] == 1
    assert found["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "truecall-incident-desk"

    bad_version = server.modern(3, "tools/list", meta={**META, "io.modelcontextprotocol/protocolVersion": "1999-01-01"})
    assert bad_version["error"]["code"] == -32022
    assert bad_version["error"]["data"]["requested"] == "1999-01-01"
    no_caps = server.request(4, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}, MODERN)
    assert no_caps["error"]["code"] == -32602
    for i, method in enumerate(["ping", "initialize", "logging/setLevel", "no/such"]):
        assert server.modern(f"gone-{i}", method, {"level": "info"})["error"]["code"] == -32601
    not_found = server.modern(5, "resources/read", {"uri": "incident://acme/INC-404"})
    assert not_found["error"]["code"] == -32602 and not_found["error"]["data"]["uri"] == "incident://acme/INC-404"

    # MRTR over stdio: no server-to-client request ever, the question comes back as a result
    args = {"incidentId": "INC-1003"}
    first = server.modern(6, "tools/call", {"name": "incident.escalate", "arguments": args}, meta=META_ELICIT)
    assert first["result"]["resultType"] == "input_required"
    assert first["result"]["inputRequests"]["escalation"]["method"] == "elicitation/create"
    done = server.modern(7, "tools/call", {
        "name": "incident.escalate", "arguments": args, "requestState": first["result"]["requestState"],
        "inputResponses": {"escalation": {"action": "accept", "content": {"severity": "P1", "reason": "r"}}}},
        meta=META_ELICIT)
    assert done["result"]["resultType"] == "complete"
    assert done["result"]["structuredContent"]["severity"] == "P1"
    replay = server.modern(8, "tools/call", {
        "name": "incident.escalate", "arguments": args, "requestState": first["result"]["requestState"],
        "inputResponses": {"escalation": {"action": "accept", "content": {"severity": "P2", "reason": "r"}}}},
        meta=META_ELICIT)
    assert replay["error"]["code"] == -32602


    server.close()
    assert not any(orjson.loads(line).get("method") == "elicitation/create" for line in server.raw_lines)
    _exactly_once(server, ["d", 1, 2, 3, 4, 5, 6, 7, 8, "gone-0", "gone-1", "gone-2", "gone-3"])
    assert _severity(tmp_path / "desk.db", "INC-1003") == "P1"


# -- bad input ---------------------------------------------------------------------------------------------


def test_malformed_lines_are_answered_once_and_serving_goes_on(spawn):
    server = spawn(version=LEGACY)
    server.write(b"{not json\n")
    parse = server.next_message()
    assert parse == {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}}
    assert server.request("alive-1", "ping")["result"] == {}

    server.write(b"\xff\xfe\xfd\n")
    assert server.next_message()["error"]["code"] == -32700
    server.write(b"\n   \n\t\n")  # blank lines are not messages: no answer at all
    server.write(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n')
    batch = server.next_message()
    assert batch["error"]["code"] == -32600 and "id" not in batch

    server.send({"jsonrpc": "1.0", "id": 11, "method": "ping"})
    wrong = server.response(11)
    assert wrong["error"]["code"] == -32600
    server.send({"id": 12, "method": "ping"})
    assert server.response(12)["error"]["code"] == -32600

    for odd in (1.5, True, None, {"a": 1}, [1]):
        server.write(orjson.dumps({"jsonrpc": "2.0", "id": odd, "method": "ping"}) + b"\n")
        err = server.next_message()
        assert err["error"]["code"] == -32600 and "id" not in err, odd
    for fine in ("", "🦊", -7, 2**62):
        assert server.request(fine, "ping")["result"] == {}, fine

    server.send({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": [1, 2]})
    assert server.response(13)["error"]["code"] == -32600
    server.send({"jsonrpc": "2.0", "id": 14, "method": 42})
    assert server.response(14)["error"]["code"] == -32600
    assert server.modern(15, "no/such/method")["error"]["code"] == -32601
    assert server.request(16, "no/such/method")["error"]["code"] == -32600  # before initialize: the state says no

    # a line ending in CRLF is one message too
    server.write(b'{"jsonrpc":"2.0","id":"crlf","method":"ping"}\r\n')
    assert server.response("crlf")["result"] == {}
    # two requests in one write are two messages
    server.write(b'{"jsonrpc":"2.0","id":"dup","method":"ping"}\n{"jsonrpc":"2.0","id":"dup2","method":"ping"}\n')
    assert server.response("dup")["result"] == {} and server.response("dup2")["result"] == {}

    # a message larger than the limit is refused once; the stream stays in sync
    huge = b'{"jsonrpc":"2.0","id":"huge","method":"ping","params":{"pad":"' + b"x" * (4 * 1024 * 1024 + 10) + b'"}}'
    server.write(huge + b"\n")
    too_big = server.next_message()
    assert too_big["error"]["code"] == -32600
    assert server.request("after-huge", "ping")["result"] == {}

    # the last line, without its newline, still counts at end of input
    server.send({"jsonrpc": "2.0", "id": "last", "method": "ping"}, newline=False)
    server.close()
    _exactly_once(server, ["alive-1", 11, 12, "", "🦊", -7, 2**62, 13, 14, 15, 16, "crlf", "dup", "dup2",
                           "after-huge", "last"])
    assert _key("huge") not in server.answers()
    # six refusals without a readable id: parse x2, batch, and the odd ids x5, huge
    assert server.answers()[b"null"] == 2 + 1 + 5 + 1


def test_last_line_without_newline_is_answered_at_eof(spawn):
    server = spawn(version=MODERN)
    server.write(orjson.dumps({"jsonrpc": "2.0", "id": "only", "method": "tools/list", "params": {"_meta": META}}))
    server.sent[_key("only")] = (MODERN, "tools/list")
    server.close()
    assert len(server.raw_lines) == 1
    answer = orjson.loads(server.raw_lines[0])
    assert answer["id"] == "only" and answer["result"]["tools"]


def test_64_pipelined_requests_are_each_answered_exactly_once(spawn):
    server = spawn(version=MODERN)
    ids: list[Any] = []
    batch = b""
    for i in range(64):
        id = i if i % 2 else f"req-{i}"
        ids.append(id)
        if i % 4 == 3:
            message = {"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": META}}
        else:
            message = {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "incident.search", "arguments": {"service": ("payments", "checkout", "search")[i % 3]},
                "_meta": META}}
        server.sent[_key(id)] = (MODERN, message["method"])
        batch += orjson.dumps(message) + b"\n"
    server.write(batch)  # one write: the server sees them back to back
    seen = {}
    for _ in range(64):
        m = server.next_message()
        assert "result" in m, m
        seen[_key(m["id"])] = m
    assert set(seen) == {_key(i) for i in ids}
    for i, id in enumerate(ids):
        result = seen[_key(id)]["result"]
        if i % 4 != 3:
            assert result["structuredContent"]["count"] == (2, 1, 0)[i % 3]
    server.close()
    _exactly_once(server, ids)
    assert len(server.raw_lines) == 64


# -- cancellation and shutdown -------------------------------------------------------------------------------


def _audit(db: Path, kind: str) -> list[tuple[Any, ...]]:
    assert wait_loaded(db), "the server did not load its audit journal into the table"
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT tool, outcome, subject, tenant FROM audit_events WHERE kind = ? ORDER BY id",
                            (kind,)).fetchall()
    finally:
        conn.close()


def test_cancelled_request_gets_no_answer_and_eof_mid_call_exits_cleanly(spawn, tmp_path):
    app = tmp_path / "slowapp" / "app.py"
    app.parent.mkdir()
    app.write_text(SLOW_APP)
    server = spawn(f"{app}:app", env={"TRUECALL_PRINCIPAL": "tester,t1,"}, version=MODERN)

    server.send({"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call", "params": {
        "name": "slow", "arguments": {"seconds": 30}, "_meta": META}}, MODERN)
    # the quick answer proves the slow call is running (requests run concurrently)
    assert server.modern(1, "tools/call", {"name": "quick"})["result"]["content"][0]["text"] == "quick"
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                 "params": {"requestId": "slow-1", "reason": "changed my mind"}})
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "never-sent"}})
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}})
    assert server.modern(2, "tools/call", {"name": "quick"})["result"]["content"][0]["text"] == "quick"
    deadline = time.monotonic() + 5
    while len(_audit(app.with_name("slow.db"), "tool.cancelled")) < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    cancelled = _audit(app.with_name("slow.db"), "tool.cancelled")
    assert cancelled == [("slow", "cancelled", "tester", "t1")]

    # a second slow call is in flight when the client goes away
    server.send({"jsonrpc": "2.0", "id": "slow-2", "method": "tools/call", "params": {
        "name": "slow", "arguments": {"seconds": 30}, "_meta": META}}, MODERN)
    assert server.modern(3, "tools/call", {"name": "quick"})["result"]["content"][0]["text"] == "quick"
    # the same id again while the first is in flight: refused once, the first keeps running
    server.send({"jsonrpc": "2.0", "id": "slow-2", "method": "tools/call", "params": {
        "name": "quick", "_meta": META}}, MODERN)
    duplicate = server.response("slow-2")
    assert duplicate["error"]["code"] == -32600 and "in flight" in duplicate["error"]["message"]
    # a request cancelled in the same write that carried it never runs and is never answered
    server.write(orjson.dumps({"jsonrpc": "2.0", "id": "slow-0", "method": "tools/call", "params": {
        "name": "slow", "arguments": {"seconds": 30}, "_meta": META}}) + b"\n"
        + orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow-0"}})
        + b"\n")
    assert server.modern(4, "tools/call", {"name": "quick"})["result"]["content"][0]["text"] == "quick"
    took = server.close(timeout=15)
    assert took < 5, f"exit took {took:.1f}s after stdin closed"

    answered = server.answers()
    assert _key("slow-1") not in answered and _key("slow-0") not in answered  # cancelled: no response, ever
    slow_2 = [m for m in map(orjson.loads, server.raw_lines) if m.get("id") == "slow-2"]
    # it never finished, so nothing claims it did; but it was read, so it is answered: the server
    # stopped it at the end of the input, and cannot say whether it took effect
    assert [m["error"]["code"] for m in slow_2] == [-32600, -32603], slow_2
    assert "stopped" in slow_2[1]["error"]["message"] and "unknown" in slow_2[1]["error"]["message"]
    assert answered[_key("slow-2")] == 2  # the duplicate's refusal, and the stopped call's answer
    _exactly_once(server, [1, 2, 3, 4])
    # both interrupted calls are on the record as cancelled, not as done
    assert [r[0] for r in _audit(app.with_name("slow.db"), "tool.cancelled")] == ["slow", "slow"]
    assert [r[0] for r in _audit(app.with_name("slow.db"), "tool.called")] == ["quick"] * 4


def test_a_request_cancelled_before_it_starts_is_forgotten():
    """In process: a cancel that lands before the request's task first runs leaves nothing behind."""
    import asyncio
    import io

    from truecall import Principal, Server
    from truecall.protocol import Engine
    from truecall.transports.stdio import StdioConnection

    app = Server("inproc", db=":memory:")
    ran: list[str] = []

    @app.tool("slow", description="Sleeps.")
    async def slow(ctx) -> str:
        ran.append("slow")
        await asyncio.sleep(5)
        return "woke"

    async def scenario() -> bytes:
        out = io.BytesIO()
        conn = StdioConnection(Engine(app), Principal("tester", "t1"), out)
        request = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "slow", "_meta": META}})
        conn.receive_line(request)
        conn.receive_line(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                        "params": {"requestId": 1}}))
        await asyncio.sleep(0.05)
        assert conn.inflight == {}
        assert ran == []
        conn.receive_line(b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":' + orjson.dumps(META)
                          + b"}}")
        await asyncio.sleep(0.05)
        assert conn.inflight == {}
        await conn.drain(0.1)
        app.db.close()
        return out.getvalue()

    lines = asyncio.run(scenario()).splitlines()
    assert [orjson.loads(line)["id"] for line in lines] == [2]


def test_a_request_the_client_cancelled_is_not_answered_even_when_the_input_ends_first():
    """In process: a handler that takes its time to stop (cleanup after the cancellation) is still
    running when the input ends and the grace runs out; the client cancelled it, so nothing is
    answered — not "the server stopped" (the fuzzer saw that for a cancelled subscriptions/listen)."""
    import asyncio
    import io

    from truecall import Principal, Server
    from truecall.protocol import Engine
    from truecall.transports.stdio import StdioConnection

    app = Server("inproc", db=":memory:")

    @app.tool("stubborn", description="Cleans up for a while when cancelled.")
    async def stubborn(ctx) -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            await asyncio.sleep(0.3)  # its cleanup outlives the end of the input and the grace
            raise
        return "woke"

    async def scenario() -> bytes:
        out = io.BytesIO()
        conn = StdioConnection(Engine(app), Principal("tester", "t1"), out)
        conn.receive_line(orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                        "params": {"name": "stubborn", "_meta": META}}))
        await asyncio.sleep(0.05)  # running
        conn.receive_line(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                        "params": {"requestId": 7}}))
        await conn.drain(0.05)  # the input ends at once; the grace is shorter than the cleanup
        app.db.close()
        return out.getvalue()

    written = asyncio.run(scenario())
    assert b'"id":7' not in written, written


def test_app_without_a_principal_serves_the_local_user_and_says_so_once(spawn, tmp_path):
    """stdio is a process the local user started: with no principal configured the app runs as that
    user (tenant ``local``, every scope its tools declare), and says so once on stderr."""
    app = tmp_path / "slowapp2" / "app.py"
    app.parent.mkdir()
    app.write_text(SLOW_APP)
    server = spawn(f"{app}:app", version=MODERN)
    for n in (1, 2):
        assert server.modern(n, "tools/call", {"name": "quick"})["result"]["content"][0]["text"] == "quick"
    server.close()
    notes = [line for line in server.stderr.splitlines() if b"no principal configured" in line]
    assert len(notes) == 1, server.stderr
    assert b"(tenant 'local'" in notes[0] and b"TRUECALL_PRINCIPAL" in notes[0]
    assert b"Traceback" not in server.stderr


def test_closing_stdin_right_away_exits_cleanly(spawn):
    server = spawn()
    assert server.close() < 5
    assert server.raw_lines == []


# -- whatever stdin and stdout are ------------------------------------------------------------------

HANDSHAKE_BATCH = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "batch", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "incident.search", "arguments": {"service": "payments"}}},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
]


def _serve_shell(tmp_path: Path, redirections: str, timeout: float = 20.0) -> subprocess.CompletedProcess[bytes]:
    """``truecall serve`` with stdin/stdout as the shell redirections say (files, /dev/null, closed)."""
    env = dict(os.environ, TRUECALL_DB=str(tmp_path / "desk.db"))
    env.pop("TRUECALL_PRINCIPAL", None)
    command = f'exec "{sys.executable}" -m truecall serve {redirections}'
    return subprocess.run(["sh", "-c", command], cwd=tmp_path, env=env, capture_output=True, timeout=timeout)


def _batch_file(tmp_path: Path, messages: list[dict[str, Any]]) -> Path:
    path = tmp_path / "requests.jsonl"
    path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in messages))
    return path


def _check_clean(done: subprocess.CompletedProcess[bytes]) -> None:
    assert done.returncode == 0, done.stderr[-3000:]
    assert b"Traceback" not in done.stderr and b"Fatal Python error" not in done.stderr, done.stderr[-3000:]


def _answers_by_id(lines: list[bytes]) -> dict[Any, dict[str, Any]]:
    out = {}
    for line in lines:
        message = orjson.loads(line)
        mcp_schema.check(message, LEGACY)
        if "method" not in message:
            assert message["id"] not in out, message
            out[message["id"]] = message
    return out


def test_stdin_a_regular_file_is_served_to_its_end_and_exits_0(tmp_path):
    # was: exit 134, "Fatal Python error: Aborted" inside uvloop's connect_read_pipe
    _batch_file(tmp_path, HANDSHAKE_BATCH)
    done = _serve_shell(tmp_path, "< requests.jsonl")
    _check_clean(done)
    answers = _answers_by_id(done.stdout.splitlines())
    assert set(answers) == {1, 2, 3}
    assert answers[2]["result"]["structuredContent"]["count"] == 2
    assert answers[3]["result"]["tools"]


def test_stdout_a_regular_file_gets_every_answer(tmp_path):
    _batch_file(tmp_path, HANDSHAKE_BATCH)
    done = _serve_shell(tmp_path, "< requests.jsonl > answers.jsonl")
    _check_clean(done)
    assert done.stdout == b""
    assert set(_answers_by_id((tmp_path / "answers.jsonl").read_bytes().splitlines())) == {1, 2, 3}


@pytest.mark.parametrize("redirections", ["< /dev/null", "<&-", "< /dev/null >&-", "< requests.jsonl >&-"])
def test_stdin_devnull_or_closed_and_stdout_closed_end_cleanly(tmp_path, redirections):
    _batch_file(tmp_path, HANDSHAKE_BATCH)
    done = _serve_shell(tmp_path, redirections)
    _check_clean(done)
    assert done.stdout == b""


def test_a_reader_that_hangs_up_on_stdout_ends_the_server_cleanly(tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the first answer meets EPIPE
    env = dict(os.environ, TRUECALL_DB=str(tmp_path / "desk.db"))
    env.pop("TRUECALL_PRINCIPAL", None)
    proc = subprocess.Popen([sys.executable, "-m", "truecall", "serve"], cwd=tmp_path, env=env,
                            stdin=subprocess.PIPE, stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    try:
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(b"".join(orjson.dumps(m) + b"\n" for m in HANDSHAKE_BATCH))
        proc.stdin.flush()  # stdin stays open: only the lost output can end the server
        returncode = proc.wait(15)
        stderr = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert returncode == 0, stderr[-3000:]
    assert b"Traceback" not in stderr and b"Exception" not in stderr, stderr[-3000:]


# -- answers in the order owed ----------------------------------------------------------------------


def test_a_handshake_written_in_one_go_with_a_call_is_answered_in_order(spawn):
    # was: the tools/call answered first, with -32600 "not allowed in session state: new"
    server = spawn(version=LEGACY)
    for message in HANDSHAKE_BATCH:
        server.sent[_key(message.get("id"))] = (LEGACY, message["method"])
    server.write(b"".join(orjson.dumps(m) + b"\n" for m in HANDSHAKE_BATCH))  # one write
    first = server.next_message()
    assert first["id"] == 1 and first["result"]["protocolVersion"] == LEGACY, first
    call = server.response(2)
    assert call["result"]["structuredContent"]["count"] == 2, call
    assert server.response(3)["result"]["tools"]
    server.close()
    _exactly_once(server, [1, 2, 3])


def test_lines_behind_an_initialize_wait_for_its_answer_and_keep_their_order():
    """In process: whatever follows an initialize in the stream (a call, a malformed line, an
    over-long line, a second initialize) is answered after it, in stream order."""
    import asyncio
    import io

    from truecall import Principal, Server
    from truecall.protocol import Engine
    from truecall.transports.stdio import StdioConnection, _LineReader

    app = Server("inproc", db=":memory:")

    @app.tool("quick", description="Answers at once.")
    def quick(ctx) -> str:
        return "quick"

    init = {"jsonrpc": "2.0", "id": "i1", "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {}}}
    lines = [init, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": {"name": "quick"}}]

    async def scenario() -> list[dict[str, Any]]:
        out = io.BytesIO()
        conn = StdioConnection(Engine(app), Principal("tester", "t1"), out)
        reader = _LineReader(conn, 4096)
        data = b"".join(orjson.dumps(m) + b"\n" for m in lines) + b"{broken\n" + b"x" * 5000 + b"\n" \
            + orjson.dumps({**init, "id": "i2"}) + b"\n" \
            + orjson.dumps({"jsonrpc": "2.0", "id": "c2", "method": "tools/call", "params": {"name": "quick"}})
        reader.data_received(data)
        reader.eof_received()
        await conn.drain(5.0)
        conn.flush()
        app.db.close()
        return [orjson.loads(line) for line in out.getvalue().splitlines()]

    answers = asyncio.run(scenario())
    assert [a.get("id") for a in answers] == ["i1", "c1", None, None, "i2", "c2"], answers
    assert answers[1]["result"]["content"][0]["text"] == "quick"
    assert answers[2]["error"]["code"] == -32700 and answers[3]["error"]["message"] == "Message too large"
    assert answers[4]["error"]["code"] == -32600  # a second initialize in a ready session
    assert answers[5]["result"]["content"][0]["text"] == "quick"


def test_a_task_status_never_reaches_the_client_before_its_handle(spawn):
    # was: notifications/tasks/status (working) written before the tools/call answer carrying the task
    server = spawn(version=LEGACY)
    server.request(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                     "clientInfo": {"name": "stdio-tests", "version": "1.0"}})
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for i in range(3):
        server.write(orjson.dumps({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {
            "name": "incident.handle", "arguments": {"incidentId": "INC-1001"}, "task": {}}}) + b"\n")
        server.sent[_key(10 + i)] = (LEGACY, "tools/call with task")  # checked as CreateTaskResult below
    handles: dict[str, int] = {}
    while len(handles) < 3:
        m = server.next_message()
        if m.get("method") == "notifications/tasks/status":
            assert m["params"]["taskId"] in handles, f"status of a task whose handle was not written: {m}"
        elif "id" in m and "result" in m:
            mcp_schema.check_result(m["result"], "CreateTaskResult", LEGACY)
            handles[m["result"]["task"]["taskId"]] = m["id"]
    server.close()


def test_at_the_end_of_the_input_a_question_nobody_can_answer_fails_and_the_call_is_answered(spawn, tmp_path):
    server = spawn(version=LEGACY)
    server.request(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {"elicitation": {}},
                                     "clientInfo": {"name": "stdio-tests", "version": "1.0"}})
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "incident.escalate", "arguments": {"incidentId": "INC-1002"}}})
    server.wait_for(lambda m: m.get("method") == "elicitation/create")
    took = server.close()  # the client leaves without answering the question
    assert took < 5
    answer = [m for m in map(orjson.loads, server.raw_lines) if m.get("id") == 2 and "method" not in m]
    assert len(answer) == 1 and answer[0]["result"]["isError"] is True, answer  # could not ask: nothing changed
    assert _severity(tmp_path / "desk.db", "INC-1002") == "P3"


TASK_APP = textwrap.dedent('''
    """A task that outlives the end of its client's input."""
    import asyncio
    from pathlib import Path

    from truecall import Server

    app = Server("task-app", "0.1.0", db=str(Path(__file__).with_name("task.db")))


    @app.tool("long", description="Accepted at once, then works for a while.", task_support="optional")
    async def long(ctx):
        await ctx.accept_as_task("accepted")
        await asyncio.sleep(30)
        return "finished"
''')


def test_a_task_still_running_at_the_end_of_the_input_is_settled_and_audited_before_exit(spawn, tmp_path):
    # was: left to the loop's own shutdown, after the last audit commit (no record of the settlement)
    app = tmp_path / "taskapp" / "app.py"
    app.parent.mkdir()
    app.write_text(TASK_APP)
    server = spawn(f"{app}:app", env={"TRUECALL_PRINCIPAL": "tester,t1,"}, version=LEGACY)
    server.request(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                     "clientInfo": {"name": "stdio-tests", "version": "1.0"}})
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    server.write(orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                               "params": {"name": "long", "arguments": {}, "task": {}}}) + b"\n")
    server.sent[_key(2)] = (LEGACY, "tools/call with task")
    handle = server.response(2)
    mcp_schema.check_result(handle["result"], "CreateTaskResult", LEGACY)
    task_id = handle["result"]["task"]["taskId"]
    assert server.close() < 6
    db = app.with_name("task.db")
    conn = sqlite3.connect(db)
    try:
        (status,) = conn.execute("SELECT status FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    finally:
        conn.close()
    assert status == "cancelled"  # settled, not left "working" for nobody
    assert wait_loaded(db)
    conn = sqlite3.connect(db)
    try:
        kinds = [k for (k,) in conn.execute("SELECT kind FROM audit_events ORDER BY id")]
    finally:
        conn.close()
    assert "task.cancelled" in kinds, kinds
    # the session still listened: its status went out, after the handle
    notes = [m for m in map(orjson.loads, server.raw_lines) if m.get("method") == "notifications/tasks/status"]
    assert notes and notes[-1]["params"]["status"] == "cancelled", notes


def test_lines_held_behind_an_initialize_that_outlives_the_grace_are_still_answered():
    """In process: the audit commit never completes, so the initialize is never answered in time; at
    the end of the input every request read (the initialize and what waited behind it) is answered
    once, in stream order, as stopped with its outcome unknown."""
    import asyncio
    import io

    from truecall import Principal, Server
    from truecall.protocol import Engine
    from truecall.transports.stdio import StdioConnection, _LineReader

    app = Server("inproc", db=":memory:")

    @app.tool("quick", description="Answers at once.")
    def quick(ctx) -> str:
        return "quick"

    async def stuck_commit() -> None:
        await asyncio.Event().wait()

    async def scenario() -> list[dict[str, Any]]:
        out = io.BytesIO()
        conn = StdioConnection(Engine(app), Principal("tester", "t1"), out)
        app.events.durable = stuck_commit  # type: ignore[method-assign]  # what Engine.serve waits for
        reader = _LineReader(conn, 4096)
        reader.data_received(b"".join(orjson.dumps(m) + b"\n" for m in [
            {"jsonrpc": "2.0", "id": "i", "method": "initialize",
             "params": {"protocolVersion": LEGACY, "capabilities": {}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "quick"}},
            {"jsonrpc": "2.0", "id": "l", "method": "tools/list"}]))
        reader.eof_received()
        await asyncio.wait_for(conn.drain(0.2), 5)
        conn.flush()
        app.db.close()
        return [orjson.loads(line) for line in out.getvalue().splitlines()]

    answers = asyncio.run(scenario())
    assert sorted(a["id"] for a in answers) == ["c", "i", "l"], answers
    assert answers[0]["id"] == "i"
    for a in answers:
        assert a["error"]["code"] == -32603 and "unknown" in a["error"]["message"], a
