"""Planted secrets: distinct random markers, bearer-shaped and JWT-shaped secrets in every input
channel a client controls, against a real ``truecall serve --http`` desk (and the engine in process
for the stateless multi-round-trip and task-input parts).  Afterwards every persisted byte (the
SQLite database with its -wal/-shm files, the server's stderr log) and every error sent back to a
client is scanned: no secret may appear, not even in part.

Channels: tool arguments of valid and invalid calls (values, nested values, secret-shaped keys),
``_meta``, elicitation answers (2026-07-28 ``inputResponses`` and handshake-era answers over SSE),
task input (``tasks/update``), HTTP headers (custom ones, ``Cookie``, a wrong ``Authorization``,
``Mcp-Session-Id``, ``Mcp-Name``) and wrong bearer tokens of every shape.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import secrets
from pathlib import Path
from typing import Any, Iterator

import httpx
import orjson
import pytest

import mcp_schema
from http_support import LEGACY, MODERN, OPERATOR, meta, modern_call, modern_headers, request, served, sse_messages
from truecall import Principal, Server
from truecall.incidents.app import ESCALATE_FORM
from truecall.protocol import Engine, jsonrpc

TASKS_EXT = "io.modelcontextprotocol/tasks"


# -- secrets --------------------------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Planted:
    """Every secret planted so far, with where it went; scanned for in bytes and messages."""

    def __init__(self) -> None:
        self.secrets: dict[str, str] = {}  # secret → channel
        #: Planted where an answer may name it back to the caller who sent it (a URI asked for, a request
        #: id); never persisted all the same.  (An undeclared argument key is not among them: the answer
        #: says how many and which fields the tool takes, never the caller's key — issue 25, case 4.)
        self.echoable: set[str] = set()

    def _add(self, value: str, channel: str) -> str:
        assert value not in self.secrets
        self.secrets[value] = channel
        return value

    def marker(self, channel: str) -> str:
        return self._add(f"mk{secrets.token_hex(12)}", channel)

    def bearer(self, channel: str) -> str:
        return self._add(f"tc_{secrets.token_urlsafe(32)}", channel)

    def jwt(self, channel: str) -> str:
        header = _b64(orjson.dumps({"alg": "RS256", "typ": "JWT", "kid": secrets.token_hex(4)}))
        body = _b64(orjson.dumps({"sub": secrets.token_hex(8), "exp": 4102444800}))
        return self._add(f"{header}.{body}.{_b64(secrets.token_bytes(32))}", channel)

    def every_shape(self, channel: str) -> list[str]:
        return [self.marker(channel), self.bearer(channel), self.jwt(channel)]

    @staticmethod
    def cores(value: str) -> list[str]:
        """The secret and its random parts (a truncated or split copy is a leak too)."""
        parts = [value]
        if value.startswith("tc_"):
            parts.append(value[3:27])
        elif value.count(".") == 2:
            parts += [p[:24] for p in value.split(".")[1:]]
        else:
            parts.append(value[2:18])
        return parts

    def found_in(self, haystack: bytes | str, *, told_the_caller: bool = False) -> dict[str, str]:
        raw = haystack if isinstance(haystack, bytes) else haystack.encode()
        return {v: c for v, c in self.secrets.items() if any(p.encode() in raw for p in self.cores(v))
                and not (told_the_caller and v in self.echoable)}


def persisted(db: Path, *extra: Path) -> bytes:
    """Every byte of every file under the data directory: the database, its -wal and -shm, the
    audit journals (``<db>-audit/``), and whatever else anything wrote there."""
    assert db.exists()
    files = [p for p in sorted(db.parent.rglob("*")) if p.is_file()] + [p for p in extra if p.exists()]
    assert any(p.name.endswith("-wal") for p in files) or not db.with_name(db.name + "-wal").exists()
    return b"".join(p.read_bytes() for p in files)


def errors_of(message: dict[str, Any]) -> list[Any]:
    """What a client hears as an error: JSON-RPC errors and isError tool results."""
    out: list[Any] = []
    if "error" in message:
        out.append(message["error"])
    result = message.get("result")
    if isinstance(result, dict) and result.get("isError"):
        out.append(result)
    return out


# =================================================================================================
# Against a real `truecall serve --http` desk
# =================================================================================================


@pytest.fixture(scope="module")
def planted() -> Planted:
    return Planted()


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with served(tmp_path_factory.mktemp("secrets-desk")) as server:
        server.extra["heard"] = []  # every error sent back
        yield server


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(10.0)) as client:
        yield client


def heard(desk: Any, resp: httpx.Response) -> dict[str, Any] | None:
    """Record what the client heard (errors only) and return the JSON-RPC message, if any."""
    if not resp.content:
        return None
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        messages = sse_messages(resp.content)
    else:
        try:
            messages = [orjson.loads(resp.content)]
        except orjson.JSONDecodeError:
            desk.extra["heard"].append(resp.text)
            return None
    for m in messages:
        desk.extra["heard"].extend(errors_of(m))
    return messages[-1]


def assert_nothing_leaked(desk: Any, planted: Planted) -> None:
    assert planted.secrets
    assert planted.found_in(persisted(desk.db, desk.log)) == {}, "a planted secret was persisted"
    assert planted.found_in(desk.stderr()) == {}
    assert planted.found_in(orjson.dumps(desk.extra["heard"], default=str), told_the_caller=True) == {}, \
        "an error message echoed a secret"


def test_tool_arguments_valid_and_invalid(desk: Any, http: httpx.Client, planted: Planted) -> None:
    ids = itertools.count(1)
    calls: list[dict[str, Any]] = []
    # valid calls: the secret is an argument value the tool uses
    for secret in planted.every_shape("valid search argument"):
        calls.append({"name": "incident.search", "arguments": {"service": secret[:128]}})
    # invalid calls: wrong types, undeclared fields, too long, nested, secret-shaped keys
    for secret in planted.every_shape("invalid search argument"):
        calls += [
            {"name": "incident.search", "arguments": {"service": "payments", "apiKey": secret}},
            {"name": "incident.search", "arguments": {"service": {"password": secret}}},
            {"name": "incident.search", "arguments": {"service": [secret]}},
            {"name": "incident.search", "arguments": {"service": secret * 8}},
            {"name": "incident.search", "arguments": {"service": "payments", "includeLinks": secret}},
            {"name": "incident.escalate", "arguments": {"incidentId": secret * 3}},
            {"name": "incident.escalate", "arguments": {"incidentId": 7, "note": {"deep": [{"deeper": secret}]}}},
        ]
    # a key that is itself a JWT (keys are client data too; the audit keeps key names)
    calls.append({"name": "incident.search", "arguments": {"service": "payments", planted.jwt("JWT as a key"): "x"}})
    # keys no pattern recognises: an undeclared key is client data, whatever it looks like, and is not
    # named back in the answer either
    for key in (planted.marker("undeclared key"), planted.marker("undeclared nested key"),
                planted._add(f"sk-live-{secrets.token_hex(4)}", "short sk-live key")):
        calls.append({"name": "incident.search", "arguments": {"service": "payments", key: 1}})
        calls.append({"name": "incident.escalate", "arguments": {"incidentId": "INC-1001", key: {"n": 1}}})
        calls.append({"name": "incident.search", "arguments": {"service": {key: 1}}})
    for call in calls:
        resp = modern_call(http, desk.url, next(ids), "tools/call", call)
        message = heard(desk, resp)
        assert message is not None and resp.status_code in (200, 400), resp.text
    # a valid call still answers what it should
    ok = heard(desk, modern_call(http, desk.url, 0, "tools/call",
                                 {"name": "incident.search", "arguments": {"service": "payments"}}))
    assert ok["result"]["structuredContent"]["count"] == 2
    assert_nothing_leaked(desk, planted)


def test_meta_and_unknown_params(desk: Any, http: httpx.Client, planted: Planted) -> None:
    secret, bearer, jwt_ = planted.every_shape("_meta / extra params")
    params = {"name": "incident.search", "arguments": {"service": "payments"},
              "_meta": meta(authorization=f"Bearer {bearer}", note=secret, progressToken=jwt_),
              "extra": {"token": bearer}}
    heard(desk, modern_call(http, desk.url, 1, "tools/call", params))
    heard(desk, modern_call(http, desk.url, 2, "tools/list", {"cursor": secret}))
    assert_nothing_leaked(desk, planted)


def test_elicitation_answers_stateless(desk: Any, http: httpx.Client, planted: Planted) -> None:
    """2026-07-28 inputResponses: declined content, invalid content, extra fields, unasked keys."""
    caps = {"elicitation": {"form": {}}}
    call = {"name": "incident.escalate", "arguments": {"incidentId": "INC-1002"}}

    def first() -> dict[str, Any]:
        message = heard(desk, modern_call(http, desk.url, 1, "tools/call", {**call, "_meta": meta(caps=caps)}))
        assert message["result"]["resultType"] == "input_required", message
        return message["result"]

    answers = []
    for secret in planted.every_shape("stateless elicitation answer"):
        answers += [
            {"escalation": {"action": "decline", "content": {"severity": "P1", "reason": secret}}},
            {"escalation": {"action": "cancel", "content": {"reason": secret}}},
            {"escalation": {"action": "accept", "content": {"severity": secret, "reason": "x"}}},
            {"escalation": {"action": "accept", "content": {"severity": "P1", "reason": ""}}, "unasked": {
                "action": "accept", "content": {"password": secret}}},
            {"escalation": {"action": secret}},
            {"escalation": secret},
        ]
    for answer in answers:
        state = first()["requestState"]
        resp = modern_call(http, desk.url, 2, "tools/call",
                           {**call, "_meta": meta(caps=caps), "inputResponses": answer, "requestState": state})
        message = heard(desk, resp)
        assert message is not None
        assert "error" in message or message["result"].get("isError") is True, message
    # an accepted answer with extra fields escalates; the extra field goes nowhere
    extra = planted.marker("extra field of an accepted answer")
    state = first()["requestState"]
    message = heard(desk, modern_call(http, desk.url, 3, "tools/call", {
        **call, "_meta": meta(caps=caps), "requestState": state,
        "inputResponses": {"escalation": {"action": "accept", "content": {
            "severity": "P1", "reason": "customer impact confirmed", "apiToken": extra}}}}))
    assert message["result"]["structuredContent"]["severity"] == "P1"
    # a state from an earlier round cannot be replayed with a secret answer
    message = heard(desk, modern_call(http, desk.url, 4, "tools/call", {
        **call, "_meta": meta(caps=caps), "requestState": state,
        "inputResponses": {"escalation": {"action": "accept", "content": {
            "severity": "P3", "reason": planted.bearer("replayed state")}}}}))
    assert message["error"]["code"] == -32602
    # the scan does see what is persisted: the accepted reason is in the incident's history
    assert b"customer impact confirmed" in persisted(desk.db)
    assert_nothing_leaked(desk, planted)


def _legacy_session(http: httpx.Client, url: str) -> dict[str, str]:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "authorization": f"Bearer {OPERATOR}"}
    init = http.post(url, headers=headers, content=orjson.dumps(request(1, "initialize", {
        "protocolVersion": LEGACY, "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "secrets", "version": "0"}})))
    assert init.status_code == 200, init.text
    headers = {**headers, "mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
    assert http.post(url, headers=headers, content=orjson.dumps(
        {"jsonrpc": "2.0", "method": "notifications/initialized"})).status_code == 202
    return headers


def _answer_over_sse(desk: Any, http: httpx.Client, headers: dict[str, str], incident: str,
                     answer: dict[str, Any] | str) -> dict[str, Any]:
    """tools/call on an SSE stream; answer the elicitation request it carries; return the final response."""
    body = orjson.dumps(request(10, "tools/call", {"name": "incident.escalate", "arguments": {"incidentId": incident}}))
    with http.stream("POST", desk.url, headers=headers, content=body) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        buffer, asked, final = "", None, None
        for chunk in resp.iter_text():
            buffer += chunk
            while "\n\n" in buffer:
                event, buffer = buffer.split("\n\n", 1)
                for message in sse_messages(event + "\n\n"):
                    mcp_schema.check(message, LEGACY)
                    if message.get("method") == "elicitation/create":
                        asked = message
                        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
                        if isinstance(answer, str):
                            reply["error"] = {"code": -32603, "message": answer}
                        else:
                            reply["result"] = answer
                        posted = http.post(desk.url, headers=headers, content=orjson.dumps(reply))
                        assert posted.status_code == 202, posted.text
                    elif "id" in message and message.get("id") == 10:
                        final = message
            if final is not None:
                break
    assert asked is not None and final is not None
    desk.extra["heard"].extend(errors_of(final))
    return final


def test_elicitation_answers_handshake_era_over_sse(desk: Any, http: httpx.Client, planted: Planted) -> None:
    headers = _legacy_session(http, desk.url)
    answers: list[dict[str, Any] | str] = []
    for secret in planted.every_shape("handshake-era elicitation answer"):
        answers += [
            {"action": "decline", "content": {"severity": "P1", "reason": secret}},
            {"action": "cancel", "content": {"reason": secret}},
            {"action": "accept", "content": {"severity": secret, "reason": "x"}},
            {"action": "accept", "content": {"severity": "P1"}, "password": secret},
            secret,  # a JSON-RPC error whose message is the secret
        ]
    for answer in answers:
        final = _answer_over_sse(desk, http, headers, "INC-1003", answer)
        assert "error" in final or final["result"].get("isError") is True, final
    extra = planted.jwt("extra field of an accepted handshake-era answer")
    final = _answer_over_sse(desk, http, headers, "INC-1003", {
        "action": "accept", "content": {"severity": "P2", "reason": "routine follow-up", "session_token": extra}})
    assert final["result"]["structuredContent"]["severity"] == "P2"
    assert_nothing_leaked(desk, planted)


def test_client_info_capabilities_and_subscriptions(desk: Any, http: httpx.Client, planted: Planted) -> None:
    """What a handshake-era client declares is stored for other replicas (``mcp_sessions``): its
    clientInfo, capabilities and resource subscriptions are capped and redacted first."""
    for shape in ("bearer", "jwt", "sk"):
        name = planted._add(f"sk-live-{secrets.token_hex(12)}", "clientInfo.name") if shape == "sk" else \
            getattr(planted, shape)("clientInfo.name")
        info = {"name": name, "version": planted.bearer("clientInfo.version"), "title": planted.jwt("clientInfo.title"),
                "websiteUrl": f"https://x.example/?access_token={planted.bearer('clientInfo.websiteUrl')}",
                "extra": {"token": planted.jwt("clientInfo extra field")}}
        caps = {"elicitation": {}, "experimental": {"auth": {"apiKey": planted.bearer("capabilities.experimental")},
                                                    "note": planted.jwt("capabilities value")},
                planted.jwt("capability name"): {}}
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                   "authorization": f"Bearer {OPERATOR}"}
        init = http.post(desk.url, headers=headers, content=orjson.dumps(request(1, "initialize", {
            "protocolVersion": LEGACY, "capabilities": caps, "clientInfo": info})))
        assert init.status_code == 200, init.text
        heard(desk, init)
        headers = {**headers, "mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
        http.post(desk.url, headers=headers, content=orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        # a resource URI the template matches, carrying a secret, subscribed to (and so stored)
        uri = f"incident://acme/{planted.bearer('subscribed resource URI')}"
        heard(desk, http.post(desk.url, headers=headers, content=orjson.dumps(request(2, "resources/subscribe",
                                                                                      {"uri": uri}))))
        heard(desk, http.post(desk.url, headers=headers, content=orjson.dumps(request(3, "resources/read",
                                                                                      {"uri": uri}))))
        # the session still works: search answers
        ok = heard(desk, http.post(desk.url, headers=headers, content=orjson.dumps(request(4, "tools/call", {
            "name": "incident.search", "arguments": {"service": "payments"}}))))
        assert ok["result"]["structuredContent"]["count"] == 2
    assert_nothing_leaked(desk, planted)


def test_task_ids_request_states_and_request_ids(desk: Any, http: httpx.Client, planted: Planted) -> None:
    """Task ids (every tasks/* method, both eras), a forged requestState, resources/read URIs and
    secret-shaped JSON-RPC ids: none of them is kept where a client put them."""
    ext = meta(caps={"extensions": {TASKS_EXT: {}}, "elicitation": {"form": {}}})
    for secret in planted.every_shape("task id (2026-07-28)"):
        for method, extra in (("tasks/get", {}), ("tasks/cancel", {}),
                              ("tasks/update", {"inputResponses": {"x": {"action": "accept"}}})):
            message = heard(desk, modern_call(http, desk.url, 1, method, {"taskId": secret, "_meta": ext, **extra}))
            assert message is not None and "error" in message, message
    headers = _legacy_session(http, desk.url)
    for secret in planted.every_shape("task id (2025-11-25)"):
        for method in ("tasks/get", "tasks/cancel", "tasks/result"):
            resp = http.post(desk.url, headers=headers, content=orjson.dumps(request(2, method, {"taskId": secret})))
            assert "error" in heard(desk, resp)
    call = {"name": "incident.escalate", "arguments": {"incidentId": "INC-1002"}}
    for secret in planted.every_shape("forged requestState"):
        message = heard(desk, modern_call(http, desk.url, 3, "tools/call", {
            **call, "_meta": meta(caps={"elicitation": {"form": {}}}), "requestState": secret,
            "inputResponses": {"escalation": {"action": "accept", "content": {"severity": "P1", "reason": "r"}}}}))
        assert message["error"]["code"] == -32602
    for secret in planted.every_shape("resources/read URI"):
        planted.echoable.add(secret)  # "Resource not found" names the URI asked for (redacted), as the spec does
        heard(desk, modern_call(http, desk.url, 4, "resources/read", {"uri": f"incident://acme/{secret}"}))
        heard(desk, modern_call(http, desk.url, 5, "resources/read", {"uri": f"https://x.example/?token={secret}"}))
    for shape in ("bearer", "jwt"):
        rpc_id = getattr(planted, shape)("JSON-RPC id")
        planted.echoable.add(rpc_id)  # a response carries its request's id back, as it must
        heard(desk, modern_call(http, desk.url, rpc_id, "tools/call", {"name": "incident.search",
                                                                      "arguments": {"service": "payments"}}))
        heard(desk, modern_call(http, desk.url, rpc_id, "tools/call", {"name": "incident.search", "arguments": {}}))
    assert_nothing_leaked(desk, planted)


def test_headers_and_wrong_tokens(desk: Any, http: httpx.Client, planted: Planted) -> None:
    body = orjson.dumps(request(5, "tools/call", {"name": "incident.search", "arguments": {"service": "payments"},
                                                  "_meta": meta()}))
    base = modern_headers("tools/call", "incident.search")
    for secret in planted.every_shape("custom header"):
        h = {**base, "x-api-key": secret, "cookie": f"session={secret}", "x-forwarded-authorization": secret}
        resp = http.post(desk.url, headers=h, content=body)
        assert resp.status_code == 200
        heard(desk, resp)
    for secret in planted.every_shape("wrong bearer token"):
        for value in (f"Bearer {secret}", f"bearer {secret}", secret, f"Basic {secret}", f"Token {secret}"):
            resp = http.post(desk.url, headers={**base, "authorization": value}, content=body)
            assert resp.status_code == 401
            heard(desk, resp)
            assert secret not in resp.headers.get("www-authenticate", "")
        resp = http.post(desk.url + f"?access_token={secret}", headers={**base}, content=body)
        heard(desk, resp)
    for secret in planted.every_shape("routing and session headers"):
        resp = http.post(desk.url, headers={**base, "mcp-name": secret}, content=body)
        assert resp.status_code == 400
        heard(desk, resp)
        resp = http.post(desk.url, headers={**base, "mcp-param-service": secret}, content=body)
        heard(desk, resp)
        legacy = {"content-type": "application/json", "accept": "application/json",
                  "authorization": f"Bearer {OPERATOR}", "mcp-session-id": secret}
        resp = http.post(desk.url, headers=legacy, content=orjson.dumps(request(6, "tools/list")))
        assert resp.status_code == 404
        heard(desk, resp)
        resp = http.delete(desk.url, headers=legacy)
        heard(desk, resp)
        resp = http.get(desk.url, headers={**legacy, "accept": "text/event-stream"})
        heard(desk, resp)
    # the bearer token of a refused request is not in the audit record, whatever its shape
    assert_nothing_leaked(desk, planted)


# =================================================================================================
# In process: stateless answers and task input
# =================================================================================================

ALICE = Principal("alice@acme", "acme", frozenset({"run"}))
MALLORY = Principal("mallory@globex", "globex", frozenset({"run"}))
SERVICE_FORM = {"type": "object", "properties": {"service": {"type": "string", "enum": ["payments", "checkout"]}},
                "required": ["service"]}


NOTE_FORM = {"type": "object", "properties": {"note": {"type": "string", "maxLength": 2000}}, "required": ["note"]}


def task_server(path: Path) -> Server:
    server = Server("secrets-tasks", db=str(path)).start()

    @server.tool("collect", description="Accepts the work, then asks which service.", task_support="optional",
                 scopes={"run"})
    async def collect(ctx: Any) -> dict[str, Any]:
        await ctx.accept_as_task("accepted")
        answer = await ctx.elicit("Which service?", SERVICE_FORM, key="svc")
        if not answer.accepted:
            return {"service": None, "action": answer.action.value}
        return {"service": answer.content["service"], "action": "accept"}

    @server.tool("note", description="Accepts the work, then asks for a free-text note it only counts.",
                 task_support="optional", scopes={"run"})
    async def note(ctx: Any) -> dict[str, Any]:
        await ctx.accept_as_task("accepted")
        answer = await ctx.elicit("Any note for the on-call engineer?", NOTE_FORM, key="note")
        return {"noteLength": len(answer.content["note"]) if answer.accepted else 0}

    @server.tool("ask", description="Asks which service, statelessly.", scopes={"run"})
    async def ask(ctx: Any) -> dict[str, Any]:
        answer = await ctx.elicit("Which service?", SERVICE_FORM, key="svc")
        return {"service": answer.content["service"] if answer.accepted else None}

    @server.tool("escalate_like", description="The desk's escalation form, in process.", scopes={"run"})
    async def escalate_like(ctx: Any) -> dict[str, Any]:
        answer = await ctx.elicit("Escalate INC-1?", ESCALATE_FORM, key="escalation")
        return {"severity": answer.content["severity"] if answer.accepted else None}

    return server


_ids = itertools.count(1)


async def call(engine: Engine, principal: Principal, method: str, params: dict[str, Any],
               heard_errors: list[Any]) -> dict[str, Any]:
    body = {**params, "_meta": meta(caps={"elicitation": {"form": {}}, "extensions": {TASKS_EXT: {}}})}
    message = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": body}
    response = await engine.handle(jsonrpc.decode(orjson.dumps(message)), principal)
    response = orjson.loads(orjson.dumps(response))
    mcp_schema.check(response, MODERN)
    heard_errors.extend(errors_of(response))
    return response


def test_stateless_answers_in_process(tmp_path: Path, planted: Planted) -> None:
    server = task_server(tmp_path / "mrtr.db")
    heard_errors: list[Any] = []

    async def scenario() -> None:
        engine = Engine(server).start()
        for tool in ("ask", "escalate_like"):
            for secret in planted.every_shape(f"in-process inputResponses ({tool})"):
                for answer in ({"action": "decline", "content": {"service": secret, "reason": secret}},
                               {"action": "accept", "content": {"service": secret, "severity": secret}},
                               {"action": "accept", "content": {"service": "payments", "severity": "P1",
                                                                "reason": "r", "secret": secret}},
                               {"action": secret}):
                    first = await call(engine, ALICE, "tools/call", {"name": tool, "arguments": {}}, heard_errors)
                    state = first["result"]["requestState"]
                    key = next(iter(first["result"]["inputRequests"]))
                    await call(engine, ALICE, "tools/call", {
                        "name": tool, "arguments": {}, "requestState": state,
                        "inputResponses": {key: answer, "other": {"action": "accept", "content": {"x": secret}}}},
                        heard_errors)
                # answers sent without any state, and from another principal with this principal's state
                await call(engine, ALICE, "tools/call", {"name": tool, "arguments": {}, "inputResponses": {
                    "svc": {"action": "decline", "content": {"service": secret}}}}, heard_errors)
                first = await call(engine, ALICE, "tools/call", {"name": tool, "arguments": {}}, heard_errors)
                stolen = await call(engine, MALLORY, "tools/call", {
                    "name": tool, "arguments": {}, "requestState": first["result"]["requestState"],
                    "inputResponses": {"svc": {"action": "accept", "content": {"service": secret}}}}, heard_errors)
                assert stolen["error"]["code"] == -32602

    asyncio.run(scenario())
    server.db.close()
    assert planted.found_in(persisted(tmp_path / "mrtr.db")) == {}
    assert planted.found_in(orjson.dumps(heard_errors)) == {}


def test_task_input_in_process(tmp_path: Path, planted: Planted) -> None:
    """tasks/update answers that are not the task's to keep: another principal's, unasked keys,
    malformed ones, and answers after the task ended."""
    server = task_server(tmp_path / "tasks.db")
    heard_errors: list[Any] = []

    async def scenario() -> None:
        engine = Engine(server).start()
        created = await call(engine, ALICE, "tools/call", {"name": "collect", "arguments": {}}, heard_errors)
        task_id = created["result"]["taskId"]
        for _ in range(200):
            got = await call(engine, ALICE, "tasks/get", {"taskId": task_id}, heard_errors)
            if got["result"]["status"] == "input_required":
                break
            await asyncio.sleep(0.005)
        assert list(got["result"]["inputRequests"]) == ["svc"]
        for secret in planted.every_shape("task input that is not the task's"):
            # another principal answering: refused like an unknown task
            theirs = await call(engine, MALLORY, "tasks/update", {
                "taskId": task_id, "inputResponses": {"svc": {"action": "accept", "content": {"service": secret}}}},
                heard_errors)
            assert theirs["error"]["code"] == -32602
            # keys nobody asked for are dropped
            await call(engine, ALICE, "tasks/update", {"taskId": task_id, "inputResponses": {
                "not-asked": {"action": "accept", "content": {"password": secret}}}}, heard_errors)
            # malformed answers are refused whole
            bad = await call(engine, ALICE, "tasks/update", {"taskId": task_id, "inputResponses": {
                "svc": secret, "x": {"action": "accept", "content": {"token": secret}}}}, heard_errors)
            assert bad["error"]["code"] == -32602
            # an unknown task
            await call(engine, ALICE, "tasks/update", {"taskId": secrets.token_urlsafe(24), "inputResponses": {
                "svc": {"action": "accept", "content": {"service": secret}}}}, heard_errors)
        assert (await call(engine, ALICE, "tasks/get", {"taskId": task_id}, heard_errors))["result"]["status"] == \
            "input_required"
        # the real answer (no secret in it) finishes the task
        await call(engine, ALICE, "tasks/update", {"taskId": task_id, "inputResponses": {
            "svc": {"action": "accept", "content": {"service": "payments"}}}}, heard_errors)
        for _ in range(200):
            got = await call(engine, ALICE, "tasks/get", {"taskId": task_id}, heard_errors)
            if got["result"]["status"] == "completed":
                break
            await asyncio.sleep(0.005)
        assert got["result"]["result"]["structuredContent"] == {"service": "payments", "action": "accept"}
        # answers after the end change nothing and are not kept
        for secret in planted.every_shape("task input after the end"):
            await call(engine, ALICE, "tasks/update", {"taskId": task_id, "inputResponses": {
                "svc": {"action": "accept", "content": {"service": secret}}}}, heard_errors)

    asyncio.run(scenario())
    server.db.close()
    assert planted.found_in(persisted(tmp_path / "tasks.db")) == {}
    assert planted.found_in(orjson.dumps(heard_errors)) == {}


def test_a_scrubbed_task_answer_is_gone_from_every_file(tmp_path: Path, planted: Planted) -> None:
    """The runner reads an accepted answer, then the store forgets it: not in the row, and not in
    the -wal file or the database file's free space either (checked while the server still runs,
    before any shutdown checkpoint could hide the difference)."""
    server = task_server(tmp_path / "scrub.db")
    heard_errors: list[Any] = []
    sizes = [40, 900, 1900]  # small, and beyond a page's worth once with the rest of the row

    async def scenario() -> None:
        engine = Engine(server).start()
        for size in sizes:
            secret = planted.marker(f"accepted task answer ({size} bytes)")
            created = await call(engine, ALICE, "tools/call", {"name": "note", "arguments": {}}, heard_errors)
            task_id = created["result"]["taskId"]
            for _ in range(200):
                got = await call(engine, ALICE, "tasks/get", {"taskId": task_id}, heard_errors)
                if got["result"]["status"] == "input_required":
                    break
                await asyncio.sleep(0.005)
            text_ = (secret * (size // len(secret) + 1))[:size]
            await call(engine, ALICE, "tasks/update", {"taskId": task_id, "inputResponses": {
                "note": {"action": "accept", "content": {"note": text_}}}}, heard_errors)
            for _ in range(400):
                got = await call(engine, ALICE, "tasks/get", {"taskId": task_id}, heard_errors)
                if got["result"]["status"] == "completed":
                    break
                await asyncio.sleep(0.005)
            assert got["result"]["result"]["structuredContent"] == {"noteLength": size}
        # still running, nothing closed or checkpointed by a shutdown
        assert planted.found_in(persisted(tmp_path / "scrub.db")) == {}

    asyncio.run(scenario())
    server.db.close()
    assert planted.found_in(persisted(tmp_path / "scrub.db")) == {}
    assert planted.found_in(orjson.dumps(heard_errors)) == {}
