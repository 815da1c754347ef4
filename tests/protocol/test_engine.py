"""The sans-IO engine, in process: both eras, MRTR, elicitation, progress, logging, session states.

Every message the engine produces (responses and whatever it puts on the outbox) is
validated against the official schema of the protocol version in force.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import time
from typing import Any

import orjson
import pytest

import mcp_schema
from pg_support import backend, db_targets, pg_schemas  # noqa: F401  (fixtures)
from truecall import ErrorKind, Principal, Server, ToolResult, text, tool_error
from truecall.incidents import DEMO_TOKENS, build_desk
from truecall.protocol import Engine, Sealer, Session, jsonrpc
from truecall.protocol.engine import EngineNotStarted
from truecall.protocol._session import ClientError
from truecall.protocol._session_state import (
    SESSION_TRANSITIONS,
    SessionEvent,
    SessionState,
    SessionStateError,
    accepts_request,
    next_session_state,
)

MODERN = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
META_LOG = "io.modelcontextprotocol/logLevel"
META_SERVER = "io.modelcontextprotocol/serverInfo"

P = Principal("tester@acme", "acme", frozenset({"read"}))
P_OTHER_SUBJECT = Principal("mallory@acme", "acme", frozenset({"read"}))
P_OTHER_TENANT = Principal("tester@acme", "globex", frozenset({"read"}))
OPERATOR = DEMO_TOKENS["demo-acme-operator"]

ELICIT = {"elicitation": {}}
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]}
COLOUR_FORM = {"type": "object", "properties": {"colour": {"type": "string", "enum": ["red", "blue"]}},
               "required": ["colour"]}

RESULT_TYPES = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
}
ERROR_TYPES = {-32022: "UnsupportedProtocolVersionError"}
ERROR_BODY_TYPES = {-32602: "InvalidParamsError", -32601: "MethodNotFoundError", -32600: "InvalidRequestError"}
CACHEABLE = {"server/discover", "tools/list", "resources/list", "resources/templates/list", "resources/read",
             "prompts/list"}

_ids = itertools.count(1)


def aio(fn):
    """Run an ``async def`` test on a fresh event loop (no async plugin needed)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return asyncio.run(asyncio.wait_for(fn(*args, **kwargs), 20))

    return wrapper


class CollectingOutbox:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        # what a transport would write: it must survive the wire
        self.messages.append(orjson.loads(orjson.dumps(message)))

    def methods(self) -> list[str]:
        return [m.get("method") for m in self.messages]

    async def wait_for(self, method: str, timeout: float = 5.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in self.messages:
                if m.get("method") == method:
                    return m
            await asyncio.sleep(0.002)
        raise AssertionError(f"no {method} on the outbox: {self.messages}")


def validate(response: dict[str, Any] | None, version: str, method: str | None) -> None:
    assert response is not None
    mcp_schema.check(response, version)
    if "result" in response:
        result = response["result"]
        definition = RESULT_TYPES.get(method or "")
        if version == MODERN and result.get("resultType") == "input_required":
            definition = "InputRequiredResult"
        if definition:
            mcp_schema.check_result(result, definition, version)
    elif version == MODERN:
        code = response["error"]["code"]
        if code in ERROR_TYPES:
            mcp_schema.check_result(response, ERROR_TYPES[code], version)
        if code in ERROR_BODY_TYPES:
            mcp_schema.check_result(response["error"], ERROR_BODY_TYPES[code], version)


async def send(engine: Engine, message: dict[str, Any], *, version: str, principal: Principal = P,
               session: Session | None = None, outbox: CollectingOutbox | None = None,
               hint: bool = False) -> tuple[dict[str, Any] | None, int, CollectingOutbox]:
    """Encode, decode and serve one request; validate everything the engine sent."""
    outbox = outbox if outbox is not None else CollectingOutbox()
    incoming = jsonrpc.decode(orjson.dumps(message))
    response, status = await engine.serve(incoming, principal, session=session, outbox=outbox, modern_hint=hint)
    if incoming.kind == jsonrpc.REQUEST:
        validate(orjson.loads(orjson.dumps(response)), version, incoming.method)
        assert response["id"] == message["id"]
    for m in outbox.messages:
        mcp_schema.check(m, version)
    return response, status, outbox


def meta(caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    m = {META_VERSION: MODERN, META_CAPS: ELICIT if caps is None else caps,
         META_CLIENT: {"name": "engine-tests", "version": "1.0"}}
    m.update(extra)
    return m


async def modern(engine: Engine, method: str, params: dict[str, Any] | None = None, *,
                 caps: dict[str, Any] | None = None, principal: Principal = P, outbox: CollectingOutbox | None = None,
                 **meta_extra: Any) -> tuple[dict[str, Any], int, CollectingOutbox]:
    body = dict(params or {})
    body["_meta"] = meta(caps, **meta_extra)
    return await send(engine, {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": body},
                      version=MODERN, principal=principal, outbox=outbox)


async def legacy(engine: Engine, session: Session, method: str, params: dict[str, Any] | None = None, *,
                 outbox: CollectingOutbox | None = None, principal: Principal = P,
                 version: str | None = None) -> tuple[dict[str, Any], int, CollectingOutbox]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": next(_ids), "method": method}
    if params is not None:
        msg["params"] = params
    return await send(engine, msg, version=version or session.version or "2025-11-25", principal=principal,
                      session=session, outbox=outbox)


async def notify(engine: Engine, session: Session | None, method: str, params: dict[str, Any] | None = None,
                 principal: Principal = P) -> None:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    incoming = jsonrpc.decode(orjson.dumps(msg))
    assert await engine.handle(incoming, principal, session=session) is None
    assert await engine.serve(incoming, principal, session=session) == (None, 202)


async def handshake(engine: Engine, version: str = "2025-11-25", caps: dict[str, Any] | None = None,
                    principal: Principal = P) -> Session:
    session = Session(principal=principal)
    response, status, _ = await legacy(engine, session, "initialize", {
        "protocolVersion": version, "capabilities": ELICIT if caps is None else caps,
        "clientInfo": {"name": "engine-tests", "version": "1.0"}}, version=version, principal=principal)
    assert status == 200 and response["result"]["protocolVersion"] == version
    await notify(engine, session, "notifications/initialized", principal=principal)
    assert session.state is SessionState.READY
    return session


def error_of(response: dict[str, Any]) -> dict[str, Any]:
    assert "error" in response and "result" not in response, response
    return response["error"]


def result_of(response: dict[str, Any]) -> dict[str, Any]:
    assert "result" in response and "error" not in response, response
    return response["result"]


# -- the server under test -----------------------------------------------------------------------


def build_server(path: Any) -> Server:
    server = Server("engine-test", "1.2.3", title="Engine test server", instructions="Test instructions.", db=path)

    @server.tool("echo", description="Echo the text back.", output_schema={
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    def echo(ctx, text: str) -> dict[str, Any]:
        return {"text": text}

    @server.tool("fail", description="Always an honest isError result.")
    def fail(ctx) -> ToolResult:
        return tool_error(ErrorKind.DEPENDENCY_UNAVAILABLE, "the backend is down; nothing happened")

    @server.tool("ask", description="Ask the user for their name.",
                 input_schema={"type": "object", "properties": {"greeting": {"type": "string"}}})
    async def ask(ctx, greeting: str = "Hello") -> ToolResult:
        answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
        if not answer.accepted:
            return tool_error(ErrorKind.DECLINED, f"no name given ({answer.action.value})")
        name = answer.content["name"]
        return ToolResult([text(f"{greeting}, {name}!")], {"greeting": greeting, "name": name})

    @server.tool("ask_twice", description="Ask two questions, one after the other.")
    async def ask_twice(ctx) -> dict[str, Any]:
        first = await ctx.elicit("Name?", NAME_FORM, key="first")
        second = await ctx.elicit("Colour?", COLOUR_FORM, key="second")
        return {"name": first.content["name"], "colour": second.content["colour"]}

    @server.tool("steps", description="Report progress three times.")
    async def steps(ctx) -> str:
        for i in (1, 2, 3):
            await ctx.progress(i, 3, f"step {i}")
        await ctx.progress(2, 3, "a step back is never sent")
        return "done"

    @server.tool("chatty", description="Log at four levels.")
    async def chatty(ctx) -> str:
        for level in ("debug", "info", "warning", "error"):
            await ctx.log(level, {"said": level}, logger="chatty")
        return "logged"

    @server.resource("memo://welcome", name="welcome", mime_type="text/plain", description="A welcome memo")
    def welcome(ctx, uri: str) -> str:
        return "hello"

    @server.resource("memo://guarded", name="guarded", mime_type="text/plain")
    async def guarded(ctx, uri: str) -> str:
        answer = await ctx.elicit("Who is reading?", NAME_FORM, key="reader")
        return f"for {answer.content['name']}" if answer.accepted else "nobody"

    @server.resource_template("memo://notes/{note}", name="note", mime_type="text/plain")
    def note(ctx, uri: str, note: str) -> str | None:
        return f"note {note}" if note.startswith("n") else None

    @server.prompt("greet", description="Greet somebody.", arguments=[{"name": "who", "required": True}],
                   completions={"who": lambda p: [n for n in ("ada", "alan", "grace") if n.startswith(p)]})
    def greet(ctx, who: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": {"type": "text", "text": f"Greet {who}."}}]

    @server.prompt("personal", description="A prompt that asks first.")
    async def personal(ctx) -> list[dict[str, Any]]:
        answer = await ctx.elicit("Your name?", NAME_FORM, key="who")
        return [{"role": "user", "content": {"type": "text", "text": f"Hi {answer.content['name']}"}}]

    return server


@pytest.fixture
def server(db_targets):
    """On each backend (a SQLite file, a PostgreSQL schema): see pg_support."""
    s = build_server(db_targets())
    yield s
    s.db.close()


@pytest.fixture
def engine(server) -> Engine:
    return Engine(server).start()


@pytest.fixture
def desk(db_targets):
    s = build_desk(db_targets())
    yield s
    s.db.close()


def severity(desk: Server, incident: str = "INC-1001") -> str:
    row = desk.db.fetchone("SELECT severity FROM incidents WHERE tenant = 'acme' AND incident_id = ?", (incident,))
    assert row is not None
    return row[0]


# =================================================================================================
# Handshake era (2025-11-25, 2025-06-18)
# =================================================================================================


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
@aio
async def test_initialize_echoes_a_supported_version(engine, version):
    session = Session(principal=P)
    response, status, _ = await legacy(engine, session, "initialize", {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}, version=version)
    result = result_of(response)
    assert status == 200
    assert result["protocolVersion"] == version
    assert result["serverInfo"] == {"name": "engine-test", "version": "1.2.3", "title": "Engine test server"}
    assert result["instructions"] == "Test instructions."
    assert {"tools", "resources", "prompts", "completions", "logging"} <= set(result["capabilities"])
    assert "resultType" not in result  # handshake-era results have none
    assert session.state is SessionState.INITIALIZING and session.version == version


@pytest.mark.parametrize("requested", ["2099-01-01", "2024-11-05", "2026-07-28", "garbage"])
@aio
async def test_initialize_with_an_unknown_version_answers_the_latest_handshake_version(engine, requested):
    session = Session(principal=P)
    response, _, _ = await legacy(engine, session, "initialize", {
        "protocolVersion": requested, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
        version="2025-11-25")
    assert result_of(response)["protocolVersion"] == "2025-11-25"
    assert session.version == "2025-11-25"


@aio
async def test_initialize_without_a_version_is_refused_and_changes_nothing(engine):
    session = Session(principal=P)
    response, _, _ = await legacy(engine, session, "initialize", {"capabilities": {}}, version="2025-11-25")
    assert error_of(response)["code"] == -32602
    assert session.state is SessionState.NEW
    response, _, _ = await legacy(engine, session, "initialize", {"protocolVersion": "2025-11-25",
                                                                  "capabilities": []}, version="2025-11-25")
    assert error_of(response)["code"] == -32602
    assert session.state is SessionState.NEW
    response, _, _ = await legacy(engine, session, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}},
                                  version="2025-11-25")
    assert result_of(response)["protocolVersion"] == "2025-11-25"


@aio
async def test_a_second_initialize_is_refused_naming_the_session_state(engine):
    session = Session(principal=P)
    init = {"protocolVersion": "2025-11-25", "capabilities": {}}
    result_of((await legacy(engine, session, "initialize", init, version="2025-11-25"))[0])
    err = error_of((await legacy(engine, session, "initialize", init))[0])
    assert err["code"] == -32600
    assert "initializing" in err["message"]
    await notify(engine, session, "notifications/initialized")
    err = error_of((await legacy(engine, session, "initialize", init))[0])
    assert err["code"] == -32600
    assert "ready" in err["message"]
    assert session.version == "2025-11-25" and session.state is SessionState.READY


@pytest.mark.parametrize("method", ["tools/list", "tools/call", "resources/read", "prompts/list", "logging/setLevel",
                                    "completion/complete"])
@aio
async def test_requests_before_initialize_are_refused(engine, method):
    session = Session(principal=P)
    response, status, _ = await legacy(engine, session, method, {"name": "echo", "arguments": {"text": "x"}},
                                       version="2025-11-25")
    err = error_of(response)
    assert err["code"] == -32600
    assert "new" in err["message"]
    assert session.state is SessionState.NEW


@aio
async def test_ping_is_served_before_initialize(engine):
    session = Session(principal=P)
    response, status, _ = await legacy(engine, session, "ping", version="2025-11-25")
    assert result_of(response) == {} and status == 200


@aio
async def test_initialized_before_initialize_changes_nothing(engine):
    session = Session(principal=P)
    await notify(engine, session, "notifications/initialized")
    assert session.state is SessionState.NEW


@aio
async def test_a_closed_session_serves_nothing(engine):
    session = await handshake(engine)
    session.close()
    for method in ("ping", "tools/list", "initialize"):
        err = error_of((await legacy(engine, session, method, {"protocolVersion": "2025-11-25"}))[0])
        assert err["code"] == -32600 and "closed" in err["message"]


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
@aio
async def test_empty_results_are_exactly_empty(engine, version):
    session = await handshake(engine, version)
    for method, params in [("ping", None), ("ping", {}), ("logging/setLevel", {"level": "warning"}),
                           ("resources/subscribe", {"uri": "memo://welcome"}),
                           ("resources/unsubscribe", {"uri": "memo://welcome"})]:
        response, status, outbox = await legacy(engine, session, method, params)
        assert result_of(response) == {}, method
        assert status == 200 and outbox.messages == []
    assert session.log_level == "warning"


@aio
async def test_subscribe_and_set_level_validate_their_params(engine):
    session = await handshake(engine)
    assert error_of((await legacy(engine, session, "logging/setLevel", {"level": "loud"}))[0])["code"] == -32602
    assert error_of((await legacy(engine, session, "logging/setLevel", {}))[0])["code"] == -32602
    err = error_of((await legacy(engine, session, "resources/subscribe", {"uri": "memo://nope"}))[0])
    assert err["code"] in (-32002, -32602)
    assert error_of((await legacy(engine, session, "resources/subscribe", {}))[0])["code"] == -32602
    assert session.subscriptions == set()


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
@aio
async def test_legacy_lists(engine, version):
    session = await handshake(engine, version)
    tools = result_of((await legacy(engine, session, "tools/list"))[0])["tools"]
    assert [t["name"] for t in tools] == ["echo", "fail", "ask", "ask_twice", "steps", "chatty"]
    assert tools[0]["inputSchema"]["required"] == ["text"] and "outputSchema" in tools[0]
    resources = result_of((await legacy(engine, session, "resources/list"))[0])["resources"]
    assert {r["uri"] for r in resources} == {"memo://welcome", "memo://guarded"}
    templates = result_of((await legacy(engine, session, "resources/templates/list"))[0])["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["memo://notes/{note}"]
    prompts = result_of((await legacy(engine, session, "prompts/list"))[0])["prompts"]
    assert [p["name"] for p in prompts] == ["greet", "personal"]
    for method in ("tools/list", "resources/list", "prompts/list"):
        result = result_of((await legacy(engine, session, method))[0])
        assert "ttlMs" not in result and "cacheScope" not in result and "resultType" not in result
        assert error_of((await legacy(engine, session, method, {"cursor": "bogus"}))[0])["code"] == -32602


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
@aio
async def test_legacy_tools_call(engine, version):
    session = await handshake(engine, version)
    ok = result_of((await legacy(engine, session, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}))[0])
    assert ok["structuredContent"] == {"text": "hi"} and "isError" not in ok
    bad = result_of((await legacy(engine, session, "tools/call", {"name": "fail"}))[0])
    assert bad["isError"] is True and bad["structuredContent"]["error"]["kind"] == "dependency_unavailable"
    missing = result_of((await legacy(engine, session, "tools/call", {"name": "echo", "arguments": {}}))[0])
    assert missing["isError"] is True
    err = error_of((await legacy(engine, session, "tools/call", {"name": "nope", "arguments": {}}))[0])
    assert err["code"] == -32602 and "nope" in err["message"]
    for params in ({"arguments": {}}, {"name": 3}, {"name": "echo", "arguments": [1]}):
        assert error_of((await legacy(engine, session, "tools/call", params))[0])["code"] == -32602


@aio
async def test_legacy_resources_read(engine):
    session = await handshake(engine)
    result = result_of((await legacy(engine, session, "resources/read", {"uri": "memo://welcome"}))[0])
    assert result == {"contents": [{"uri": "memo://welcome", "mimeType": "text/plain", "text": "hello"}]}
    note = result_of((await legacy(engine, session, "resources/read", {"uri": "memo://notes/n1"}))[0])
    assert note["contents"][0]["text"] == "note n1"
    for uri in ("memo://missing", "memo://notes/x1"):
        err = error_of((await legacy(engine, session, "resources/read", {"uri": uri}))[0])
        assert err["code"] == -32002  # the handshake era's resource-not-found code
        assert err["data"] == {"uri": uri}
    assert error_of((await legacy(engine, session, "resources/read", {}))[0])["code"] == -32602


@aio
async def test_legacy_prompts_and_completion(engine):
    session = await handshake(engine)
    got = result_of((await legacy(engine, session, "prompts/get", {"name": "greet", "arguments": {"who": "ada"}}))[0])
    assert got["messages"] == [{"role": "user", "content": {"type": "text", "text": "Greet ada."}}]
    assert got["description"] == "Greet somebody."
    for params in ({"name": "greet"}, {"name": "greet", "arguments": {"who": 1}}, {"name": "nope"}, {}):
        assert error_of((await legacy(engine, session, "prompts/get", params))[0])["code"] == -32602
    done = result_of((await legacy(engine, session, "completion/complete", {
        "ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "a"}}))[0])
    assert done["completion"] == {"values": ["ada", "alan"], "total": 2, "hasMore": False}
    for params in ({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "who", "value": ""}},
                   {"ref": {"type": "ref/other"}, "argument": {"name": "who", "value": ""}}, {}):
        assert error_of((await legacy(engine, session, "completion/complete", params))[0])["code"] == -32602


@pytest.mark.parametrize("method", ["foo/bar", "server/discover_", "subscriptions/listen", "tasks/update"])
@aio
async def test_legacy_unknown_methods(engine, method):
    session = await handshake(engine)
    response, status, _ = await legacy(engine, session, method, {"notifications": {}})
    assert error_of(response)["code"] == -32601


@aio
async def test_a_request_without_meta_and_without_session_is_refused(engine):
    response, _, _ = await send(engine, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, version=MODERN)
    assert error_of(response)["code"] == -32602


# =================================================================================================
# Stateless era (2026-07-28)
# =================================================================================================


@pytest.mark.parametrize("params", [None, {}, {"_meta": None}, {"_meta": {}}, {"_meta": [1]},
                                    {"_meta": {META_CAPS: {}}}, {"_meta": {META_VERSION: 20260728, META_CAPS: {}}}])
@aio
async def test_missing_meta_or_version_is_invalid_params_with_400(engine, params):
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    if params is not None:
        msg["params"] = params
    response, status, outbox = await send(engine, msg, version=MODERN, hint=True)
    err = error_of(response)
    assert err["code"] == -32602 and status == 400
    assert "protocolVersion" in err["message"]
    assert outbox.messages == []


@pytest.mark.parametrize("caps", [None, [], "x", 1])
@aio
async def test_missing_client_capabilities_is_invalid_params_with_400(engine, caps):
    m: dict[str, Any] = {META_VERSION: MODERN}
    if caps is not None:
        m[META_CAPS] = caps
    for hint in (False, True):
        response, status, _ = await send(engine, {"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                                                  "params": {"_meta": m}}, version=MODERN, hint=hint)
        err = error_of(response)
        assert err["code"] == -32602 and status == 400
        assert "clientCapabilities" in err["message"]


@aio
async def test_discover_without_meta_is_invalid_params_even_without_a_hint(engine):
    for params in (None, {}):
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": "d", "method": "server/discover"}
        if params is not None:
            msg["params"] = params
        response, status, _ = await send(engine, msg, version=MODERN)
        assert error_of(response)["code"] == -32602 and status == 400


@pytest.mark.parametrize("requested", ["1900-01-01", "2026-07-29", "", "x" * 300])
@aio
async def test_unsupported_version_is_32022_with_supported_and_requested(engine, requested):
    response, status, _ = await send(engine, {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {
        "_meta": {META_VERSION: requested, META_CAPS: {}}}}, version=MODERN)
    err = error_of(response)
    assert err["code"] == -32022 and status == 400
    assert "2026-07-28" in err["data"]["supported"]
    assert err["data"]["requested"] == requested[:64]
    assert requested[:64] not in err["data"]["supported"]


@pytest.mark.parametrize("method", ["foo/bar", "initialize", "ping", "logging/setLevel", "resources/subscribe",
                                    "resources/unsubscribe", "tasks/list", "notifications/initialized"])
@aio
async def test_unknown_and_removed_methods_are_32601_with_404(engine, method):
    response, status, _ = await modern(engine, method, {"protocolVersion": "2025-11-25", "capabilities": {},
                                                        "level": "info", "uri": "memo://welcome"})
    assert error_of(response)["code"] == -32601 and status == 404


@aio
async def test_a_modern_initialize_does_not_touch_the_session(engine):
    session = Session(principal=P)
    response, status, _ = await send(engine, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "_meta": meta()}}, version=MODERN, session=session)
    assert error_of(response)["code"] == -32601 and status == 404
    assert session.state is SessionState.NEW
    # and a stateless request on a fresh stdio session is served without any handshake
    response, status, _ = await send(engine, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {
        "_meta": meta()}}, version=MODERN, session=session)
    assert status == 200 and result_of(response)["tools"]
    assert session.state is SessionState.NEW


@aio
async def test_every_modern_result_has_result_type_server_info_and_cache_hints(engine):
    calls = [
        ("server/discover", {}),
        ("tools/list", {}),
        ("tools/call", {"name": "echo", "arguments": {"text": "x"}}),
        ("tools/call", {"name": "fail"}),
        ("tools/call", {"name": "ask"}),  # input_required
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "memo://welcome"}),
        ("resources/read", {"uri": "memo://guarded"}),  # input_required
        ("prompts/list", {}),
        ("prompts/get", {"name": "greet", "arguments": {"who": "ada"}}),
        ("prompts/get", {"name": "personal"}),  # input_required
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                 "argument": {"name": "who", "value": "g"}}),
    ]
    seen_input_required = 0
    for method, params in calls:
        response, status, _ = await modern(engine, method, params)
        result = result_of(response)
        assert status == 200
        assert result["resultType"] in ("complete", "input_required"), (method, result)
        assert result["_meta"][META_SERVER] == {"name": "engine-test", "version": "1.2.3",
                                                "title": "Engine test server"}, (method, result)
        if result["resultType"] == "input_required":
            seen_input_required += 1
            assert "ttlMs" not in result and "cacheScope" not in result
            continue
        if method in CACHEABLE:
            assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0, method
            assert result["cacheScope"] in ("public", "private"), method
        else:
            assert "ttlMs" not in result and "cacheScope" not in result, method
    assert seen_input_required == 3


@aio
async def test_discover(engine):
    result = result_of((await modern(engine, "server/discover", caps={}))[0])
    assert "2026-07-28" in result["supportedVersions"]
    assert {"tools", "resources", "prompts"} <= set(result["capabilities"])
    assert result["instructions"] == "Test instructions."
    assert result["cacheScope"] == "public"


@aio
async def test_modern_resource_not_found_is_32602_with_the_uri(engine):
    for uri in ("memo://missing", "memo://notes/x9"):
        response, status, _ = await modern(engine, "resources/read", {"uri": uri})
        err = error_of(response)
        assert err["code"] == -32602  # never the removed -32002
        assert err["data"] == {"uri": uri}
    result = result_of((await modern(engine, "resources/read", {"uri": "memo://notes/n2"}))[0])
    assert result["contents"] == [{"uri": "memo://notes/n2", "mimeType": "text/plain", "text": "note n2"}]


@aio
async def test_modern_tools(engine):
    ok = result_of((await modern(engine, "tools/call", {"name": "echo", "arguments": {"text": "é"}}))[0])
    assert ok["structuredContent"] == {"text": "é"} and "isError" not in ok
    bad = result_of((await modern(engine, "tools/call", {"name": "fail", "arguments": {}}))[0])
    assert bad["isError"] is True
    err = error_of((await modern(engine, "tools/call", {"name": "nope"}))[0])
    assert err["code"] == -32602
    assert error_of((await modern(engine, "tools/list", {"cursor": "c"}))[0])["code"] == -32602
    assert error_of((await modern(engine, "prompts/get", {"name": "nope"}))[0])["code"] == -32602


@aio
async def test_modern_unknown_log_level_is_refused(engine):
    response, status, _ = await modern(engine, "tools/list", **{META_LOG: "loud"})
    assert error_of(response)["code"] == -32602 and status == 400


@aio
async def test_notifications_and_responses_get_no_answer(engine):
    for msg in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
                {"jsonrpc": "2.0", "id": "s-99", "result": {}}):
        incoming = jsonrpc.decode(orjson.dumps(msg))
        assert await engine.handle(incoming, P) is None
        assert await engine.serve(incoming, P) == (None, 202)


# =================================================================================================
# MRTR: stateless multi-round-trip requests
# =================================================================================================

ACCEPT_ADA = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}


async def first_round(engine: Engine, tool: str = "ask", arguments: dict[str, Any] | None = None,
                      principal: Principal = P) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool}
    if arguments is not None:
        params["arguments"] = arguments
    result = result_of((await modern(engine, "tools/call", params, principal=principal))[0])
    assert result["resultType"] == "input_required"
    assert isinstance(result["requestState"], str) and result["requestState"]
    return result


@aio
async def test_input_required_then_retry_completes(engine, server):
    result = await first_round(engine, arguments={"greeting": "Hi"})
    request = result["inputRequests"]["user_name"]
    assert request["method"] == "elicitation/create"
    assert request["params"]["mode"] == "form"
    assert request["params"]["requestedSchema"] == NAME_FORM
    assert "content" not in result and "isError" not in result
    # no audit record of a call that has not happened yet
    assert server.db.fetchone("SELECT COUNT(*) FROM audit_events WHERE kind = 'tool.called'")[0] == 0
    done = result_of((await modern(engine, "tools/call", {
        "name": "ask", "arguments": {"greeting": "Hi"}, "inputResponses": ACCEPT_ADA,
        "requestState": result["requestState"]}))[0])
    assert done["resultType"] == "complete"
    assert done["content"] == [{"type": "text", "text": "Hi, Ada!"}]
    assert done["structuredContent"] == {"greeting": "Hi", "name": "Ada"}
    assert server.db.fetchone("SELECT COUNT(*) FROM audit_events WHERE kind = 'tool.called'")[0] == 1


@aio
async def test_a_retry_without_the_answer_asks_again(engine):
    state = (await first_round(engine))["requestState"]
    again = result_of((await modern(engine, "tools/call", {
        "name": "ask", "inputResponses": {"other": {"action": "accept", "content": {}}},
        "requestState": state}))[0])
    assert again["resultType"] == "input_required" and "user_name" in again["inputRequests"]
    assert again["requestState"] != state


def _tamper(state: str) -> str:
    i = len(state) // 2
    return state[:i] + ("A" if state[i] != "A" else "B") + state[i + 1:]


@pytest.mark.parametrize("bad", ["tampered", "garbage", "empty", "number", "truncated", "other-key"])
@aio
async def test_a_bad_request_state_is_refused(engine, server, bad):
    state = (await first_round(engine))["requestState"]
    if bad == "other-key":
        other = Engine(server).start()  # a fresh random key: its states do not open here
        state = (await first_round(other))["requestState"]
    forged = {"tampered": _tamper(state), "garbage": "not a state", "empty": "", "number": 12345,
              "truncated": state[:20], "other-key": state}[bad]
    response, status, _ = await modern(engine, "tools/call", {
        "name": "ask", "inputResponses": ACCEPT_ADA, "requestState": forged})
    err = error_of(response)
    assert err["code"] == -32602 and status == 200
    assert "requestState" in err["message"]


@aio
async def test_a_request_state_is_single_use(engine):
    state = (await first_round(engine))["requestState"]
    params = {"name": "ask", "inputResponses": ACCEPT_ADA, "requestState": state}
    assert result_of((await modern(engine, "tools/call", params))[0])["resultType"] == "complete"
    err = error_of((await modern(engine, "tools/call", params))[0])
    assert err["code"] == -32602


@pytest.mark.parametrize("principal", [P_OTHER_SUBJECT, P_OTHER_TENANT], ids=["other-subject", "other-tenant"])
@aio
async def test_a_request_state_is_bound_to_the_principal(engine, principal):
    state = (await first_round(engine))["requestState"]
    response, _, _ = await modern(engine, "tools/call", {"name": "ask", "inputResponses": ACCEPT_ADA,
                                                         "requestState": state}, principal=principal)
    assert error_of(response)["code"] == -32602
    # the refusal did not burn the state for its owner
    done = result_of((await modern(engine, "tools/call", {"name": "ask", "inputResponses": ACCEPT_ADA,
                                                          "requestState": state}))[0])
    assert done["resultType"] == "complete"


@aio
async def test_a_request_state_is_bound_to_the_tool_and_its_arguments(engine):
    state = (await first_round(engine, arguments={"greeting": "Hi"}))["requestState"]
    for params in ({"name": "ask_twice"}, {"name": "ask", "arguments": {"greeting": "Bye"}},
                   {"name": "ask", "arguments": {}}, {"name": "ask"}):
        response, _, _ = await modern(engine, "tools/call", {**params, "inputResponses": ACCEPT_ADA,
                                                             "requestState": state})
        assert error_of(response)["code"] == -32602, params
    # a state from tools/call does not open a prompt or a resource either
    for method, params in (("prompts/get", {"name": "ask"}), ("resources/read", {"uri": "ask"})):
        response, _, _ = await modern(engine, method, {**params, "inputResponses": ACCEPT_ADA, "requestState": state})
        assert error_of(response)["code"] == -32602


@aio
async def test_an_expired_request_state_is_refused(server):
    engine = Engine(server, sealer=Sealer(ttl_s=0.01)).start()
    state = (await first_round(engine))["requestState"]
    await asyncio.sleep(0.05)
    response, _, _ = await modern(engine, "tools/call", {"name": "ask", "inputResponses": ACCEPT_ADA,
                                                         "requestState": state})
    assert error_of(response)["code"] == -32602


@aio
async def test_an_expired_request_state_is_refused_with_a_moved_clock(engine, monkeypatch):
    state = (await first_round(engine))["requestState"]
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 3600)
    response, _, _ = await modern(engine, "tools/call", {"name": "ask", "inputResponses": ACCEPT_ADA,
                                                         "requestState": state})
    assert error_of(response)["code"] == -32602


@aio
async def test_multi_round_states_differ_and_earlier_answers_are_carried_forward(engine):
    r1 = await first_round(engine, "ask_twice")
    assert list(r1["inputRequests"]) == ["first"]
    r2 = result_of((await modern(engine, "tools/call", {
        "name": "ask_twice", "inputResponses": {"first": {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": r1["requestState"]}))[0])
    assert r2["resultType"] == "input_required"
    assert list(r2["inputRequests"]) == ["second"]
    assert r2["inputRequests"]["second"]["params"]["requestedSchema"] == COLOUR_FORM
    assert r2["requestState"] != r1["requestState"]
    # round 3 answers only the second question: the first answer rides in the sealed state
    r3 = result_of((await modern(engine, "tools/call", {
        "name": "ask_twice", "inputResponses": {"second": {"action": "accept", "content": {"colour": "blue"}}},
        "requestState": r2["requestState"]}))[0])
    assert r3["resultType"] == "complete"
    assert r3["structuredContent"] == {"name": "Ada", "colour": "blue"}
    # the round-1 state was used up by round 2
    response, _, _ = await modern(engine, "tools/call", {
        "name": "ask_twice", "inputResponses": {"first": {"action": "accept", "content": {"name": "Eve"}}},
        "requestState": r1["requestState"]})
    assert error_of(response)["code"] == -32602


@aio
async def test_mrtr_for_prompts_and_resources(engine):
    first = result_of((await modern(engine, "prompts/get", {"name": "personal"}))[0])
    assert list(first["inputRequests"]) == ["who"]
    done = result_of((await modern(engine, "prompts/get", {
        "name": "personal", "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": first["requestState"]}))[0])
    assert done["messages"][0]["content"]["text"] == "Hi Ada"
    first = result_of((await modern(engine, "resources/read", {"uri": "memo://guarded"}))[0])
    assert list(first["inputRequests"]) == ["reader"]
    done = result_of((await modern(engine, "resources/read", {
        "uri": "memo://guarded", "inputResponses": {"reader": {"action": "accept", "content": {"name": "Bo"}}},
        "requestState": first["requestState"]}))[0])
    assert done["contents"][0]["text"] == "for Bo"
    assert isinstance(done["ttlMs"], int) and done["cacheScope"] in ("public", "private")


@pytest.mark.parametrize("responses", [
    {"user_name": "Ada"}, {"user_name": 12345}, {"user_name": ["accept"]}, {"user_name": True}])
@aio
async def test_an_input_response_that_is_not_an_object_is_invalid_params(engine, responses):
    state = (await first_round(engine))["requestState"]
    response, _, _ = await modern(engine, "tools/call", {"name": "ask", "inputResponses": responses,
                                                         "requestState": state})
    err = error_of(response)
    assert err["code"] == -32602 and "user_name" in err["message"]


@pytest.mark.parametrize("responses", [[ACCEPT_ADA], "x", 1, True])
@aio
async def test_input_responses_that_are_not_an_object_are_invalid_params(engine, responses):
    response, _, _ = await modern(engine, "tools/call", {"name": "ask", "inputResponses": responses})
    assert error_of(response)["code"] == -32602


@aio
async def test_an_unusable_answer_is_an_invalid_input_result(engine):
    state = (await first_round(engine))["requestState"]
    result = result_of((await modern(engine, "tools/call", {
        "name": "ask", "inputResponses": {"user_name": {"action": "accept", "content": {"name": 7}}},
        "requestState": state}))[0])
    assert result["isError"] is True and result["structuredContent"]["error"]["kind"] == "invalid_input"
    state = (await first_round(engine))["requestState"]
    result = result_of((await modern(engine, "tools/call", {
        "name": "ask", "inputResponses": {"user_name": {"action": "sure"}}, "requestState": state}))[0])
    assert result["isError"] is True and result["structuredContent"]["error"]["kind"] == "invalid_input"


@pytest.mark.parametrize("caps", [{}, {"sampling": {}}, {"elicitation": {"url": {}}}])
@aio
async def test_without_the_elicitation_capability_the_result_names_the_missing_field(engine, caps):
    response, status, _ = await modern(engine, "tools/call", {"name": "ask"}, caps=caps)
    result = result_of(response)
    assert result["resultType"] == "complete" and result["isError"] is True
    error = result["structuredContent"]["error"]
    assert error["kind"] == "invalid_input"
    assert error["missing"] == ["name"]
    assert "name" in result["content"][0]["text"]


@pytest.mark.parametrize("action", ["decline", "cancel"])
@aio
async def test_desk_decline_and_cancel_are_never_consent(desk, action):
    engine = Engine(desk).start()
    args = {"incidentId": "INC-1001"}
    first = await first_round(engine, "incident.escalate", args, principal=OPERATOR)
    form = first["inputRequests"]["escalation"]
    assert form["method"] == "elicitation/create" and form["params"]["mode"] == "form"
    answer: dict[str, Any] = {"action": action}
    if action == "decline":  # content sent along with a decline must not be read as an answer either
        answer["content"] = {"severity": "P1", "reason": "sneaky"}
    result = result_of((await modern(engine, "tools/call", {
        "name": "incident.escalate", "arguments": args, "inputResponses": {"escalation": answer},
        "requestState": first["requestState"]}, principal=OPERATOR))[0])
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["kind"] == "declined"
    assert action in result["content"][0]["text"]
    assert severity(desk) == "P2"
    events = desk.db.fetchone("SELECT COUNT(*) FROM incident_events")[0]
    assert events == 0


@aio
async def test_desk_accept_changes_the_severity(desk):
    engine = Engine(desk).start()
    args = {"incidentId": "INC-1001"}
    first = await first_round(engine, "incident.escalate", args, principal=OPERATOR)
    assert severity(desk) == "P2"
    result = result_of((await modern(engine, "tools/call", {
        "name": "incident.escalate", "arguments": args,
        "inputResponses": {"escalation": {"action": "accept", "content": {"severity": "P1", "reason": "outage"}}},
        "requestState": first["requestState"]}, principal=OPERATOR))[0])
    assert "isError" not in result
    assert result["structuredContent"] == {"incidentId": "INC-1001", "previousSeverity": "P2", "severity": "P1"}
    assert severity(desk) == "P1"


@aio
async def test_desk_a_forged_state_changes_nothing(desk):
    engine = Engine(desk).start()
    args = {"incidentId": "INC-1001"}
    first = await first_round(engine, "incident.escalate", args, principal=OPERATOR)
    accept = {"escalation": {"action": "accept", "content": {"severity": "P1", "reason": "outage"}}}
    response, _, _ = await modern(engine, "tools/call", {
        "name": "incident.escalate", "arguments": {"incidentId": "INC-1002"}, "inputResponses": accept,
        "requestState": first["requestState"]}, principal=OPERATOR)
    assert error_of(response)["code"] == -32602
    response, _, _ = await modern(engine, "tools/call", {
        "name": "incident.escalate", "arguments": args, "inputResponses": accept,
        "requestState": _tamper(first["requestState"])}, principal=OPERATOR)
    assert error_of(response)["code"] == -32602
    assert severity(desk, "INC-1001") == "P2" and severity(desk, "INC-1002") == "P3"


# =================================================================================================
# Progress and logging
# =================================================================================================


def _progress_values(outbox: CollectingOutbox, token: Any) -> list[float]:
    notes = [m for m in outbox.messages if m.get("method") == "notifications/progress"]
    assert all(m["params"]["progressToken"] == token for m in notes)
    return [m["params"]["progress"] for m in notes]


@pytest.mark.parametrize("token", ["tok-1", 7])
@aio
async def test_modern_progress_notifications(engine, token):
    response, _, outbox = await modern(engine, "tools/call", {"name": "steps"}, progressToken=token)
    assert result_of(response)["content"][0]["text"] == "done"
    assert _progress_values(outbox, token) == [1, 2, 3]
    assert outbox.messages[0]["params"] == {"progressToken": token, "progress": 1, "total": 3, "message": "step 1"}
    assert outbox.methods() == ["notifications/progress"] * 3


@aio
async def test_no_progress_without_a_token(engine):
    response, _, outbox = await modern(engine, "tools/call", {"name": "steps"})
    assert result_of(response)["content"][0]["text"] == "done"
    assert outbox.messages == []
    response, _, outbox = await modern(engine, "tools/call", {"name": "steps"}, progressToken=True)
    assert outbox.messages == []  # a boolean is not a progress token


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
@aio
async def test_legacy_progress_notifications(engine, version):
    session = await handshake(engine, version)
    response, _, outbox = await legacy(engine, session, "tools/call", {"name": "steps",
                                                                       "_meta": {"progressToken": "p"}})
    assert result_of(response)["content"][0]["text"] == "done"
    assert _progress_values(outbox, "p") == [1, 2, 3]
    response, _, outbox = await legacy(engine, session, "tools/call", {"name": "steps"})
    assert _progress_values(outbox, None) == []


def _logged(outbox: CollectingOutbox) -> list[str]:
    return [m["params"]["level"] for m in outbox.messages if m.get("method") == "notifications/message"]


@aio
async def test_modern_logging_only_when_asked_and_at_or_above_the_level(engine):
    _, _, outbox = await modern(engine, "tools/call", {"name": "chatty"})
    assert outbox.messages == []
    _, _, outbox = await modern(engine, "tools/call", {"name": "chatty"}, **{META_LOG: "warning"})
    assert _logged(outbox) == ["warning", "error"]
    assert outbox.messages[0]["params"] == {"level": "warning", "data": {"said": "warning"}, "logger": "chatty"}
    _, _, outbox = await modern(engine, "tools/call", {"name": "chatty"}, **{META_LOG: "debug"})
    assert _logged(outbox) == ["debug", "info", "warning", "error"]
    _, _, outbox = await modern(engine, "tools/call", {"name": "chatty"}, **{META_LOG: "emergency"})
    assert outbox.messages == []


@aio
async def test_legacy_logging_follows_set_level(server):
    engine = Engine(server, legacy_default_log_level=None).start()
    session = await handshake(engine)
    _, _, outbox = await legacy(engine, session, "tools/call", {"name": "chatty"})
    assert outbox.messages == []
    result_of((await legacy(engine, session, "logging/setLevel", {"level": "info"}))[0])
    _, _, outbox = await legacy(engine, session, "tools/call", {"name": "chatty"})
    assert _logged(outbox) == ["info", "warning", "error"]
    result_of((await legacy(engine, session, "logging/setLevel", {"level": "error"}))[0])
    _, _, outbox = await legacy(engine, session, "tools/call", {"name": "chatty"})
    assert _logged(outbox) == ["error"]
    # a modern request on the same connection does not inherit the session's level
    _, _, outbox = await send(engine, {"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {
        "name": "chatty", "_meta": meta()}}, version=MODERN, session=session)
    assert outbox.messages == []


# =================================================================================================
# The session state table
# =================================================================================================


def test_every_state_event_pair_follows_the_table_or_names_the_state():
    expected = {
        (SessionState.NEW, SessionEvent.INITIALIZE): SessionState.INITIALIZING,
        (SessionState.INITIALIZING, SessionEvent.INITIALIZED): SessionState.READY,
        (SessionState.READY, SessionEvent.INITIALIZED): SessionState.READY,
        (SessionState.NEW, SessionEvent.CLOSE): SessionState.CLOSED,
        (SessionState.INITIALIZING, SessionEvent.CLOSE): SessionState.CLOSED,
        (SessionState.READY, SessionEvent.CLOSE): SessionState.CLOSED,
    }
    assert SESSION_TRANSITIONS == expected
    refused = 0
    for state in SessionState:
        for event in SessionEvent:
            if (state, event) in SESSION_TRANSITIONS:
                assert next_session_state(state, event) is SESSION_TRANSITIONS[(state, event)]
                session = Session()
                session.state = state
                session.transition(event)
                assert session.state is SESSION_TRANSITIONS[(state, event)]
                continue
            refused += 1
            with pytest.raises(SessionStateError) as info:
                next_session_state(state, event)
            assert info.value.state is state
            assert f"session state: {state.value}" in info.value.message
            assert event.value in info.value.message
            assert info.value.code == -32600
            session = Session()
            session.state = state
            with pytest.raises(SessionStateError):
                session.transition(event)
            assert session.state is state  # a refused event changes nothing
    assert refused == len(SessionState) * len(SessionEvent) - len(SESSION_TRANSITIONS) == 6


def test_which_requests_each_state_serves():
    assert accepts_request(SessionState.NEW, "initialize") and accepts_request(SessionState.NEW, "ping")
    for method in ("tools/list", "tools/call", "logging/setLevel", "x"):
        assert not accepts_request(SessionState.NEW, method)
        assert accepts_request(SessionState.INITIALIZING, method)
        assert accepts_request(SessionState.READY, method)
    for method in ("initialize", "ping", "tools/list"):
        assert not accepts_request(SessionState.CLOSED, method)


@aio
async def test_closing_a_session_fails_what_it_waits_for_without_cancelling_it():
    """Nobody can answer a question of an ended session: it fails as the client's (``ClientError``),
    at once.  Not a cancellation: the request waiting was cancelled by nobody, and a ``CancelledError``
    raised in it read as its caller's (the server logged it as a crash)."""
    session = Session()
    outbox = CollectingOutbox()
    waiting = asyncio.ensure_future(session.request(outbox, "elicitation/create", {"message": "m"}, 5))
    await outbox.wait_for("elicitation/create")
    session.close()
    with pytest.raises(ClientError, match="session ended"):
        await waiting
    assert not waiting.cancelled()
    assert session.state is SessionState.CLOSED and session.pending == {}
    with pytest.raises(ClientError, match="session ended"):  # and a later question is not even sent
        await session.request(outbox, "elicitation/create", {"message": "again"}, 5)
    assert [m["params"]["message"] for m in outbox.messages if m.get("method") == "elicitation/create"] == ["m"]


@aio
async def test_a_client_error_says_its_code_to_the_caller_never_its_text():
    """What a tool's error result says of a client's error answer is the server's own words: the client's
    text is its data (the secrets test planted a key there and found it echoed in the result)."""
    session = Session()
    outbox = CollectingOutbox()
    waiting = asyncio.ensure_future(session.request(outbox, "elicitation/create", {"message": "m"}, 5))
    question = await outbox.wait_for("elicitation/create")
    session.resolve(jsonrpc.decode(orjson.dumps({"jsonrpc": "2.0", "id": question["id"], "error": {
        "code": -32000, "message": "no: sk-live-0123456789abcdef"}})))
    with pytest.raises(ClientError) as raised:
        await waiting
    assert raised.value.reason == "the client answered with an error (-32000)"


def test_close_goes_through_the_state_table_from_every_open_state():
    for state in (SessionState.NEW, SessionState.INITIALIZING, SessionState.READY):
        session = Session()
        session.state = state
        assert not session.closed
        session.close()
        assert session.closed and session.state is SESSION_TRANSITIONS[(state, SessionEvent.CLOSE)]
        session.close()  # closing a closed session changes nothing
        assert session.closed


def test_an_engine_has_no_side_effects_until_started(tmp_path):
    server = build_server(str(tmp_path / "e.db"))
    engine = Engine(server)
    tables = "SELECT name FROM sqlite_master WHERE name = 'used_request_states'"
    assert not (tmp_path / "e.db").exists()  # constructing it (and its server) created nothing
    request = jsonrpc.decode(orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                                          "params": {"_meta": {META_VERSION: MODERN, META_CAPS: {}}}}))
    with pytest.raises(EngineNotStarted):
        asyncio.run(engine.handle(request, P))
    assert engine.start() is engine and engine.start() is engine  # once; a second call changes nothing
    assert server.db.fetchone(tables) is not None
    assert asyncio.run(engine.handle(request, P))["result"]["supportedVersions"][0] == MODERN
    server.db.close()


# =================================================================================================
# Handshake-era elicitation: a real server-to-client request on the outbox
# =================================================================================================


async def _answer(engine: Engine, session: Session, request_id: Any, body: dict[str, Any],
                  principal: Principal = P) -> None:
    message = jsonrpc.decode(orjson.dumps({"jsonrpc": "2.0", "id": request_id, **body}))
    assert message.kind == jsonrpc.RESPONSE
    assert await engine.handle(message, principal, session=session) is None


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
@aio
async def test_legacy_elicitation_round_trip(engine, version):
    session = await handshake(engine, version)
    outbox = CollectingOutbox()
    call = asyncio.ensure_future(legacy(engine, session, "tools/call", {"name": "ask"}, outbox=outbox))
    request = await outbox.wait_for("elicitation/create")
    mcp_schema.check(request, version)
    assert request["params"]["requestedSchema"] == NAME_FORM
    assert ("mode" in request["params"]) == (version == "2025-11-25")
    assert not call.done()
    await _answer(engine, session, request["id"], {"result": {"action": "accept", "content": {"name": "Ada"}}})
    response, status, _ = await call
    assert result_of(response)["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert session.pending == {}
    # a late duplicate answer is dropped, never answered
    await _answer(engine, session, request["id"], {"result": {"action": "accept", "content": {"name": "Eve"}}})


@aio
async def test_legacy_elicitation_answers_are_matched_by_id(engine):
    session = await handshake(engine)
    out1, out2 = CollectingOutbox(), CollectingOutbox()
    call1 = asyncio.ensure_future(legacy(engine, session, "tools/call", {"name": "ask"}, outbox=out1))
    call2 = asyncio.ensure_future(legacy(engine, session, "tools/call", {"name": "ask"}, outbox=out2))
    req1 = await out1.wait_for("elicitation/create")
    req2 = await out2.wait_for("elicitation/create")
    assert req1["id"] != req2["id"]
    await _answer(engine, session, "s-unknown", {"result": {"action": "accept", "content": {"name": "X"}}})
    await _answer(engine, session, req2["id"], {"result": {"action": "accept", "content": {"name": "Two"}}})
    await _answer(engine, session, req1["id"], {"result": {"action": "accept", "content": {"name": "One"}}})
    assert result_of((await call1)[0])["structuredContent"]["name"] == "One"
    assert result_of((await call2)[0])["structuredContent"]["name"] == "Two"


@aio
async def test_legacy_desk_accept_and_decline(desk):
    engine = Engine(desk).start()
    session = await handshake(engine, principal=OPERATOR)
    outbox = CollectingOutbox()
    call = asyncio.ensure_future(legacy(engine, session, "tools/call", {
        "name": "incident.escalate", "arguments": {"incidentId": "INC-1001"}}, outbox=outbox, principal=OPERATOR))
    request = await outbox.wait_for("elicitation/create")
    await _answer(engine, session, request["id"], {"result": {"action": "decline"}}, OPERATOR)
    result = result_of((await call)[0])
    assert result["isError"] is True and result["structuredContent"]["error"]["kind"] == "declined"
    assert severity(desk) == "P2"

    outbox = CollectingOutbox()
    call = asyncio.ensure_future(legacy(engine, session, "tools/call", {
        "name": "incident.escalate", "arguments": {"incidentId": "INC-1001"}}, outbox=outbox, principal=OPERATOR))
    request = await outbox.wait_for("elicitation/create")
    await _answer(engine, session, request["id"],
                  {"result": {"action": "accept", "content": {"severity": "P1", "reason": "outage"}}}, OPERATOR)
    result = result_of((await call)[0])
    assert "isError" not in result and result["structuredContent"]["severity"] == "P1"
    assert severity(desk) == "P1"


@aio
async def test_legacy_elicitation_timeout_reads_as_cancel(desk):
    engine = Engine(desk, client_request_timeout=0.05).start()
    session = await handshake(engine, principal=OPERATOR)
    outbox = CollectingOutbox()
    started = time.monotonic()
    response, _, _ = await legacy(engine, session, "tools/call", {
        "name": "incident.escalate", "arguments": {"incidentId": "INC-1001"}}, outbox=outbox, principal=OPERATOR)
    assert time.monotonic() - started < 2
    assert outbox.methods() == ["elicitation/create"]
    result = result_of(response)
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["kind"] == "declined"
    assert "cancel" in result["content"][0]["text"]
    assert severity(desk) == "P2"
    assert session.pending == {}
    # the answer that arrives too late changes nothing
    await _answer(engine, session, outbox.messages[0]["id"],
                  {"result": {"action": "accept", "content": {"severity": "P1", "reason": "late"}}}, OPERATOR)
    assert severity(desk) == "P2"


@aio
async def test_legacy_elicitation_error_answer_is_an_invalid_input_result(engine):
    session = await handshake(engine)
    outbox = CollectingOutbox()
    call = asyncio.ensure_future(legacy(engine, session, "tools/call", {"name": "ask"}, outbox=outbox))
    request = await outbox.wait_for("elicitation/create")
    await _answer(engine, session, request["id"], {"error": {"code": -32601, "message": "no elicitation here"}})
    result = result_of((await call)[0])
    assert result["isError"] is True and result["structuredContent"]["error"]["kind"] == "invalid_input"


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
@aio
async def test_legacy_without_elicitation_capability_never_asks(engine, version):
    session = await handshake(engine, version, caps={})
    response, _, outbox = await legacy(engine, session, "tools/call", {"name": "ask"})
    result = result_of(response)
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["kind"] == "invalid_input"
    assert result["structuredContent"]["error"]["missing"] == ["name"]
    assert outbox.messages == []


@aio
async def test_legacy_prompt_elicitation_is_a_server_request_not_mrtr(engine):
    # the stateless answer path (InputRequiredResult) never appears in the handshake era
    session = await handshake(engine)
    outbox = CollectingOutbox()
    call = asyncio.ensure_future(legacy(engine, session, "prompts/get", {"name": "personal"}, outbox=outbox))
    request = await outbox.wait_for("elicitation/create")
    await _answer(engine, session, request["id"], {"result": {"action": "accept", "content": {"name": "Ada"}}})
    result = result_of((await call)[0])
    assert "resultType" not in result and result["messages"][0]["content"]["text"] == "Hi Ada"
