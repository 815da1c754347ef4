"""One request, exactly one final audit record — on the wire, for every method and outcome.

``tests/one_record_app.py`` has a tool, resource and prompt for each outcome (success, tool error,
refusal for scope or tenant, task support required or forbidden, rate limit, unknown name, a bug in
the handler); tasks are made by its task tools.  It is served for real (``truecall serve``) over
stdio and over Streamable HTTP, and asked each request in both protocol eras: 2026-07-28
(stateless) and 2025-11-25 (handshake).  For each request the records it left are read from the
database and those of the *final* kinds counted: there must be exactly one, of the kind that
outcome is recorded as, and for a refusal the ``reason`` the policy stage gives
(:mod:`truecall.server._policy`).  Requests that only read (``tools/list``, ``ping``, ``tasks/get``,
``tasks/result``, a completion that is answered, a subscription) leave none.

Non-final records (a task's own settlement, ``tool.form_refused`` before its ``tool.called``, the
trail's own ``audit.*``) are the ones in :data:`NON_FINAL` and are not counted; every other kind
is.  (The audit trail is not journaled here, ``TRUECALL_AUDIT_JOURNAL=0``: a request's records are
in the table when its answer arrives.)
"""

from __future__ import annotations

import os
import queue
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import orjson
import pytest

from _paths import TESTS
from http_support import LEGACY, MODERN, meta, modern_call, request, served
from stress.common import terminate
import truecall

APP = TESTS / "one_record_app.py"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
ACME, GLOBEX = "one-record-acme", "one-record-globex"

#: Kinds that never settle a request: recorded beside its final record, or by no request at all.
NON_FINAL = frozenset({"task.completed", "task.failed", "task.cancelled", "task.lease_lost", "task.settle_failed",
                       "task.recovered", "tool.form_refused", "audit.retention", "audit.refused", "audit.dropped"})


def _env(db: Path) -> dict[str, str]:
    return {"TRUECALL_DB": str(db), "TRUECALL_AUDIT_JOURNAL": "0"}


class Peer:
    """One client of one server in one era: ``call(method, params) -> response message``."""

    transport: str
    db: Path

    def __init__(self, era: str) -> None:
        self.era = era
        self._ids = iter(range(1000, 10**6))

    def next_id(self) -> int:
        return next(self._ids)

    def params(self, params: dict[str, Any], caps: dict[str, Any] | None = None) -> dict[str, Any]:
        if self.era == MODERN:
            return {**params, "_meta": meta(caps=caps or {})}
        return params

    def call(self, method: str, params: dict[str, Any], *, caps: dict[str, Any] | None = None,
             as_tenant: str | None = None) -> dict[str, Any]:
        raise NotImplementedError


class StdioPeer(Peer):
    transport = "stdio"

    def __init__(self, workdir: Path, era: str) -> None:
        super().__init__(era)
        workdir.mkdir(parents=True, exist_ok=True)
        self.db = workdir / "one.db"
        env = {**os.environ, **_env(self.db), "TRUECALL_PRINCIPAL": "alice@acme,acme,read"}
        self.proc = subprocess.Popen([sys.executable, "-m", "truecall", "serve", f"{APP}:app"], cwd=workdir,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        if era == LEGACY:
            answer = self.call("initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                              "clientInfo": {"name": "one-record", "version": "0"}})
            assert answer["result"]["protocolVersion"] == LEGACY, answer
            self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        ready = self.call("ping" if era == LEGACY else "server/discover", {})
        assert "result" in ready, ready  # serving: its tables are made

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(message) + b"\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any], *, caps: dict[str, Any] | None = None,
             as_tenant: str | None = None) -> dict[str, Any]:
        assert as_tenant is None, "one principal per stdio process"
        id = self.next_id()
        self._send(request(id, method, self.params(params, caps)))
        deadline = time.monotonic() + 15
        while True:
            line = self._lines.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line is not None, "the server closed stdout"
            message = orjson.loads(line)
            if "method" not in message and message.get("id") == id:
                return message

    def stop(self) -> None:
        terminate(self.proc)


class HttpPeer(Peer):
    transport = "http"

    def __init__(self, server: Any, era: str) -> None:
        super().__init__(era)
        self.server, self.db = server, server.db
        self.http = httpx.Client(timeout=httpx.Timeout(15.0))
        self.sessions: dict[str, str] = {}

    def _session(self, token: str) -> str:
        session = self.sessions.get(token)
        if session is None:
            resp = self.http.post(self.server.url, content=orjson.dumps(request(1, "initialize", {
                "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "one-record", "version": "0"}})),
                headers=self._legacy_headers(token, None))
            assert resp.status_code == 200, resp.text
            session = self.sessions[token] = resp.headers["mcp-session-id"]
            resp = self.http.post(self.server.url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                                  headers=self._legacy_headers(token, session))
            assert resp.status_code == 202, resp.text
        return session

    @staticmethod
    def _legacy_headers(token: str, session: str | None) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "application/json",
                   "authorization": f"Bearer {token}"}
        if session is not None:
            headers["mcp-session-id"] = session
            headers["mcp-protocol-version"] = LEGACY
        return headers

    def call(self, method: str, params: dict[str, Any], *, caps: dict[str, Any] | None = None,
             as_tenant: str | None = None) -> dict[str, Any]:
        token = GLOBEX if as_tenant == "globex" else ACME
        id = self.next_id()
        if self.era == MODERN:
            resp = modern_call(self.http, self.server.url, id, method, self.params(params, caps), token=token,
                               name=params.get("taskId") if method.startswith("tasks/") else None)
        else:
            resp = self.http.post(self.server.url, content=orjson.dumps(request(id, method, params)),
                                  headers=self._legacy_headers(token, self._session(token)))
        message = resp.json()
        assert message.get("id") == id, message
        return message

    def stop(self) -> None:
        self.http.close()


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    workdir = tmp_path_factory.mktemp("one-record-http")
    tokens = workdir / "tokens.json"
    tokens.write_bytes(orjson.dumps({"tokens": [
        {"sha256": truecall.hash_token(ACME), "subject": "alice@acme", "tenant": "acme", "scopes": ["read"]},
        {"sha256": truecall.hash_token(GLOBEX), "subject": "gina@globex", "tenant": "globex", "scopes": ["read"]},
    ]}))
    with served(workdir, f"{APP}:app", "--token-file", str(tokens), env=_env(workdir / "truecall.db")) as server:
        yield server


@pytest.fixture(scope="module")
def peers(tmp_path_factory: pytest.TempPathFactory, http_server: Any) -> Iterator[dict[tuple[str, str], Peer]]:
    started: dict[tuple[str, str], Peer] = {}

    class Lazy(dict):  # type: ignore[type-arg]  # a peer is started when a test first asks for it
        def __missing__(self, key: tuple[str, str]) -> Peer:
            transport, era = key
            peer: Peer = (StdioPeer(tmp_path_factory.mktemp(f"one-record-stdio-{era}"), era) if transport == "stdio"
                          else HttpPeer(http_server, era))
            self[key] = started[key] = peer
            return peer

    yield Lazy()
    for peer in started.values():
        peer.stop()


# -- reading the trail ------------------------------------------------------------------------

def _rows(db: Path, after: int) -> list[tuple[int, str, str | None, dict[str, Any]]]:
    conn = sqlite3.connect(db)
    try:
        return [(id, kind, outcome, orjson.loads(fields)) for id, kind, outcome, fields in conn.execute(
            "SELECT id, kind, outcome, fields FROM audit_events WHERE id > ? ORDER BY id", (after,))]
    finally:
        conn.close()


def _last_id(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT COALESCE(MAX(id), 0) FROM audit_events").fetchone()[0]
    finally:
        conn.close()


def _settled(db: Path, task_id: str, timeout: float = 10.0) -> None:
    """Wait until a task's own settlement is recorded (its records are not the request's)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(f.get("taskId") == task_id and kind in NON_FINAL for _, kind, _, f in _rows(db, 0)):
            return
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} never settled")


# -- the matrix -------------------------------------------------------------------------------

def _tool(name: str) -> dict[str, Any]:
    return {"name": name, "arguments": {}}


def _prompt_ref(name: str) -> dict[str, Any]:
    return {"ref": {"type": "ref/prompt", "name": name}, "argument": {"name": "x", "value": ""}}


def _template_ref(uri: str, **resolved: str) -> dict[str, Any]:
    return {"ref": {"type": "ref/resource", "uri": uri}, "argument": {"name": "id", "value": ""},
            **({"context": {"arguments": resolved}} if resolved else {})}


TASK_CAPS = {"extensions": {TASKS_EXTENSION: {}}}


def _as_a_task(peer: Peer, name: str, as_tenant: str | None = None) -> dict[str, Any]:
    if peer.era == MODERN:
        return peer.call("tools/call", _tool(name), caps=TASK_CAPS, as_tenant=as_tenant)
    return peer.call("tools/call", {**_tool(name), "task": {"ttl": 60_000}}, as_tenant=as_tenant)


def _rate_limited(method: str, params: dict[str, Any]) -> Callable[[Peer], dict[str, Any]]:
    """``method`` asked once the limit is armed: the one request over it."""
    def ask(peer: Peer) -> dict[str, Any]:
        armed = peer.call("tools/call", _tool("arm_limit"))
        assert armed["result"]["content"][0]["text"] == "armed", armed
        peer.mark = _last_id(peer.db)  # type: ignore[attr-defined]  # (arm_limit's own record is its request's)
        return peer.call(method, params)
    return ask


def _on_a_task(method: str, whose: str, tool: str = "needs_task",
               **params: Any) -> Callable[[Peer], dict[str, Any]]:
    """``method`` on a task: ``whose`` is ``unknown`` (none such), ``own`` (made by this peer; settled
    first unless ``tool`` runs long) or ``other`` (made by another tenant's peer, settled first)."""
    def ask(peer: Peer) -> dict[str, Any]:
        if whose == "unknown":
            task_id = "nope"
        else:
            made = _as_a_task(peer, tool, as_tenant="globex" if whose == "other" else None)
            result = made["result"]
            task_id = result["task"]["taskId"] if "task" in result else result["taskId"]
            if tool != "slow_task":
                _settled(peer.db, task_id)
            peer.mark = _last_id(peer.db)  # type: ignore[attr-defined]  # (the task's making is its own request)
        return peer.call(method, {"taskId": task_id, **params}, caps=TASK_CAPS)
    return ask


Ask = Callable[[Peer], dict[str, Any]]

#: (cell, how to ask, the kind of its one final record; None: a read that leaves none,
#: "error"/"result": what the answer is).  Cells that fit one era or transport only say so.
CELLS: list[tuple[str, Ask, str | None, str]] = [
    ("tools/call success", lambda p: p.call("tools/call", _tool("ok")), "tool.called", "result"),
    ("tools/call tool error", lambda p: p.call("tools/call", _tool("says_no")), "tool.called", "result"),
    ("tools/call refused for scope", lambda p: p.call("tools/call", _tool("admin_only")), "tool.denied", "error"),
    ("tools/call unknown", lambda p: p.call("tools/call", _tool("nope")), "tool.denied", "error"),
    ("tools/call bug", lambda p: p.call("tools/call", _tool("buggy")), "tool.failed", "result"),
    ("tools/call rate limited", _rate_limited("tools/call", _tool("ok")), "tool.rate_limited", "result"),
    ("tools/call task required", lambda p: p.call("tools/call", _tool("needs_task")), "tool.denied", "error"),
    ("tools/call task forbidden", lambda p: _as_a_task(p, "never_task"), "(by era)", "(by era)"),
    ("tools/call as a task", lambda p: _as_a_task(p, "needs_task"), "task.created", "result"),
    # (2025-11-25: a task already completed, whose task.completed is the task's record)
    ("tools/call as a task, answered at once", lambda p: _as_a_task(p, "maybe_task"), "tool.called", "result"),
    # (No tenant refusal for tools/call or prompts/get: a request on the wire names no tenant — its
    # principal's comes from the credential — and a tool or a prompt names none either.  The tenant is
    # checked where a request names one: a resource URI, a template's resolved {tenant}, a task.)
    ("resources/read success", lambda p: p.call("resources/read", {"uri": "note://ok"}), "resource.read", "result"),
    ("resources/read refused for scope", lambda p: p.call("resources/read", {"uri": "note://admin"}),
     "resource.denied", "error"),
    ("resources/read refused for tenant", lambda p: p.call("resources/read", {"uri": "note://tenant/globex"}),
     "resource.denied", "error"),
    ("resources/read of its own tenant", lambda p: p.call("resources/read", {"uri": "note://tenant/acme"}),
     "resource.read", "result"),
    ("resources/read unknown", lambda p: p.call("resources/read", {"uri": "note://missing"}), "resource.denied",
     "error"),
    ("resources/read bug", lambda p: p.call("resources/read", {"uri": "note://buggy"}), "protocol.internal_error",
     "error"),
    ("resources/read rate limited", _rate_limited("resources/read", {"uri": "note://ok"}), "resource.rate_limited",
     "error"),
    ("resources/subscribe success", lambda p: p.call("resources/subscribe", {"uri": "note://ok"}), None, "result"),
    ("resources/subscribe refused for scope", lambda p: p.call("resources/subscribe", {"uri": "note://admin"}),
     "resource.denied", "error"),
    ("resources/subscribe refused for tenant",
     lambda p: p.call("resources/subscribe", {"uri": "note://tenant/globex"}), "resource.denied", "error"),
    ("resources/subscribe unknown", lambda p: p.call("resources/subscribe", {"uri": "note://missing"}),
     "resource.denied", "error"),
    ("prompts/get success", lambda p: p.call("prompts/get", {"name": "greet"}), "prompt.get", "result"),
    ("prompts/get refused for scope", lambda p: p.call("prompts/get", {"name": "admin_prompt"}), "prompt.denied",
     "error"),
    ("prompts/get unknown", lambda p: p.call("prompts/get", {"name": "nope"}), "prompt.denied", "error"),
    ("prompts/get bug", lambda p: p.call("prompts/get", {"name": "buggy_prompt"}), "protocol.internal_error",
     "error"),
    ("prompts/get rate limited", _rate_limited("prompts/get", {"name": "greet"}), "prompt.rate_limited", "error"),
    ("completion/complete success", lambda p: p.call("completion/complete", _prompt_ref("greet")), None, "result"),
    ("completion/complete refused for scope", lambda p: p.call("completion/complete", _prompt_ref("admin_prompt")),
     "prompt.denied", "error"),
    ("completion/complete unknown", lambda p: p.call("completion/complete", _prompt_ref("nope")), "prompt.denied",
     "error"),
    ("completion/complete of a template", lambda p: p.call("completion/complete", _template_ref(
        "note://tenant/{tenant}", tenant="acme")), None, "result"),
    ("completion/complete of a template refused for scope",
     lambda p: p.call("completion/complete", _template_ref("note://admin/{id}")), "resource.denied", "error"),
    ("completion/complete of a template refused for tenant", lambda p: p.call("completion/complete", _template_ref(
        "note://tenant/{tenant}", tenant="globex")), "resource.denied", "error"),
    ("completion/complete of an unknown template",
     lambda p: p.call("completion/complete", _template_ref("note://nowhere/{id}")), "resource.denied", "error"),
    ("completion/complete rate limited", _rate_limited("completion/complete", _prompt_ref("greet")),
     "completion.rate_limited", "error"),
    ("tasks/get success", _on_a_task("tasks/get", "own"), None, "result"),
    ("tasks/get unknown", _on_a_task("tasks/get", "unknown"), "task.denied", "error"),
    ("tasks/get refused for tenant", _on_a_task("tasks/get", "other"), "task.denied", "error"),
    ("tasks/cancel success", _on_a_task("tasks/cancel", "own", "slow_task"), "task.cancel_requested", "result"),
    ("tasks/cancel unknown", _on_a_task("tasks/cancel", "unknown"), "task.denied", "error"),
    ("tasks/cancel refused for tenant", _on_a_task("tasks/cancel", "other"), "task.denied", "error"),
    ("tasks/update success", _on_a_task("tasks/update", "own", inputResponses={}), "task.input", "result"),
    ("tasks/update unknown", _on_a_task("tasks/update", "unknown", inputResponses={}), "task.denied", "error"),
    ("tasks/update refused for tenant", _on_a_task("tasks/update", "other", inputResponses={}), "task.denied",
     "error"),
    ("tasks/result success", _on_a_task("tasks/result", "own"), None, "result"),
    ("tasks/result unknown", _on_a_task("tasks/result", "unknown"), "task.denied", "error"),
    ("tasks/result refused for tenant", _on_a_task("tasks/result", "other"), "task.denied", "error"),
    ("tools/list", lambda p: p.call("tools/list", {}), None, "result"),
    ("ping", lambda p: p.call("ping", {}), None, "result"),
    ("unknown method", lambda p: p.call("nope/nope", {}), "rpc.error", "error"),
]

#: The ``reason`` a refusal's record gives (the answer is the same for all of them: nothing leaks).
REASONS = {
    "resources/read refused for scope": "insufficient_scope",
    "resources/read refused for tenant": "tenant_mismatch",
    "resources/read unknown": "unknown_resource",
    "resources/subscribe refused for scope": "insufficient_scope",
    "resources/subscribe refused for tenant": "tenant_mismatch",
    "resources/subscribe unknown": "unknown_resource",
    "completion/complete of a template refused for scope": "insufficient_scope",
    "completion/complete of a template refused for tenant": "tenant_mismatch",
    "completion/complete of an unknown template": "unknown_resource",
    **{f"tasks/{method} {cell}": reason for method in ("get", "cancel", "update", "result")
       for cell, reason in (("unknown", "unknown_task"), ("refused for tenant", "tenant_mismatch"))},
}

#: What differs by era.  2026-07-28 has no "forbidden" to refuse: a task-capable client's call of such a tool is a plain call.
_EXPECTED_BY_ERA = {("tools/call task forbidden", MODERN): ("tool.called", "result"),
                    ("tools/call task forbidden", LEGACY): ("tool.denied", "error"),
                    ("ping", MODERN): ("rpc.error", "error")}  # (2026-07-28 has no ping)
_ONLY_HTTP = {cell for cell, *_ in CELLS if cell.startswith("tasks/") and cell.endswith("refused for tenant")}
_ONLY_ERA = {**{cell: MODERN for cell, *_ in CELLS if cell.startswith("tasks/update")},  # (2025-11-25 has none)
             **{cell: LEGACY for cell, *_ in CELLS  # (2026-07-28 has none)
                if cell.startswith(("tasks/result", "resources/subscribe"))}}


def _matrix() -> Iterator[Any]:
    for transport in ("stdio", "http"):
        for era in (MODERN, LEGACY):
            for cell, ask, kind, answer in CELLS:
                if cell in _ONLY_HTTP and transport != "http" or _ONLY_ERA.get(cell, era) != era:
                    continue
                kind, answer = _EXPECTED_BY_ERA.get((cell, era), (kind, answer))
                yield pytest.param(transport, era, ask, kind, answer, REASONS.get(cell),
                                   id=f"{transport}-{era}-{cell}")


@pytest.mark.parametrize(("transport", "era", "ask", "kind", "answer", "reason"), list(_matrix()))
def test_a_request_leaves_exactly_one_final_record(peers: dict[tuple[str, str], Peer], transport: str, era: str,
                                                   ask: Ask, kind: str | None, answer: str,
                                                   reason: str | None) -> None:
    peer = peers[(transport, era)]
    peer.mark = _last_id(peer.db)  # type: ignore[attr-defined]
    response = ask(peer)
    mark: int = peer.mark  # type: ignore[attr-defined]  # (moved on by a cell that does work first)
    assert answer in response, response
    rows = _rows(peer.db, mark)
    # A record naming another request is that one's: a task's work goes on after the call that made it,
    # and what it records when it ends (tool.cancelled when tasks/cancel stops it) carries that call's id.
    final = [(k, outcome, f.get("reason")) for _, k, outcome, f in rows
             if k not in NON_FINAL and f.get("requestId", response["id"]) == response["id"]]
    expected = [] if kind is None else [kind]
    assert [k for k, _, _ in final] == expected, (response, rows)
    if reason is not None:
        assert final[0][2] == reason, (response, rows)
    task = (response.get("result") or {}).get("task") or (response.get("result") or {})
    if isinstance(task, dict) and "taskId" in task:  # the task's own records come later: not the next cell's
        _settled(peer.db, task["taskId"])


def test_the_wire_test_counts_what_the_trail_calls_final() -> None:
    from truecall.audit import FINAL_KINDS

    expected = {kind for _, _, kind, _ in CELLS if kind is not None and kind.count(".") == 1}
    expected |= {kind for kind, _ in _EXPECTED_BY_ERA.values()}
    assert expected <= FINAL_KINDS
    assert not FINAL_KINDS & NON_FINAL

