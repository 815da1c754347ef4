"""server.call_tool end to end: the results examples/ prints, the faults that are raised, the output contract."""

from __future__ import annotations

import asyncio

import pytest

from truecall import (
    ErrorKind,
    InsufficientScope,
    InvalidCredential,
    InvalidParams,
    LocaleError,
    Principal,
    ProtocolError,
    TenantMismatch,
    ToolResult,
    UnknownTool,
    text,
    tool_error,
)
from mcp_schema import check_result
from truecall.incidents import build_desk

#: The line examples/01_search.py prints (Chinese: TRUECALL_LANG=zh) and the same facts in English, the default.
CHAPTER_04 = {
    "content": [{"type": "text", "text": "payments: 2 个已授权事件摘要"}],
    "structuredContent": {"service": "payments", "count": 2, "tenant": "acme"},
}
CHAPTER_04_EN = CHAPTER_04 | {"content": [{"type": "text", "text": "payments: 2 authorized incident summaries"}]}
#: The narrative for a missing required field (examples/03_injection_a.py; truecall.MISSING_INPUT_TEXT), with
#: the kind and the field names for programs.
MISSING_RESULT = {"content": [{"type": "text", "text": "required input is missing"}], "isError": True}


def missing(*fields: str) -> dict:
    return MISSING_RESULT | {"structuredContent": {"error": {
        "kind": "invalid_input", "message": "required input is missing", "retryable": False,
        "field": fields[0], "missing": list(fields)}}}


MISSING = missing("service")

ACME_RW = "tok-acme-rw"
ACME_R = "tok-acme-r"
ACME_NONE = "tok-acme-none"
TOKENS = {
    ACME_RW: Principal("root@acme", "acme", frozenset({"read", "write"})),
    ACME_R: Principal("reader@acme", "acme", frozenset({"read"})),
    ACME_NONE: Principal("nobody@acme", "acme", frozenset()),
}


# -- the incident desk: the lines examples/ prints ------------------------------------------------


def test_chapter_04_result_in_english_by_default(desk, operator_token):
    result = desk.call_tool("incident.search", {"service": "payments"}, operator_token, "acme")
    assert isinstance(result, ToolResult)
    assert result.to_dict() == CHAPTER_04_EN
    assert result.is_error is False
    one = desk.call_tool("incident.search", {"service": "checkout"}, operator_token, "acme")
    count = one.structured_content["count"]
    assert one.content[0]["text"] == f"checkout: {count} authorized incident summar{'y' if count == 1 else 'ies'}"


def test_chapter_04_result_exactly_in_chinese(lang, desk_db_path, operator_token):
    lang("zh")
    desk = build_desk(desk_db_path).start()
    try:
        result = desk.call_tool("incident.search", {"service": "payments"}, operator_token, "acme")
        assert result.to_dict() == CHAPTER_04
    finally:
        desk.db.close()


def test_a_bad_locale_stops_the_desk_from_starting(lang, desk_db_path):
    lang("klingon")
    with pytest.raises(LocaleError, match="TRUECALL_LANG must be one of en, zh, not 'klingon'"):
        build_desk(desk_db_path)


def test_reader_gets_the_same_facts(desk, reader_token):
    assert desk.call_tool("incident.search", {"service": "payments"}, reader_token, "acme").to_dict() == CHAPTER_04_EN


def test_tenant_is_optional_and_data_is_per_tenant(desk):
    result = desk.call_tool("incident.search", {"service": "payments"}, "demo-globex-reader")
    assert result.structured_content == {"service": "payments", "count": 1, "tenant": "globex"}


def test_success_is_audited(desk, operator_token):
    desk.call_tool("incident.search", {"service": "payments"}, operator_token, "acme")
    [rec] = desk.events.query(kind="tool.called")
    assert (rec.tool, rec.tenant, rec.subject, rec.outcome) == ("incident.search", "acme", "newton@acme", "ok")
    assert rec.fields["argKeys"] == ["service"]


@pytest.mark.parametrize("arguments", [{}, {"service": ""}, {"service": None}, None, {"includeLinks": True}])
def test_missing_or_empty_service_is_the_missing_input_result(desk, operator_token, arguments):
    result = desk.call_tool("incident.search", arguments, operator_token, "acme")
    assert result.to_dict() == MISSING
    assert {k: v for k, v in result.to_dict().items() if k != "structuredContent"} == MISSING_RESULT
    assert result.is_error is True
    assert result.error["kind"] == "invalid_input" and result.error["missing"] == ["service"]
    for version in ("2025-06-18", "2025-11-25"):
        check_result(result.to_dict(), "CallToolResult", version)
    rejected = desk.events.query(kind="tool.rejected")
    assert len(rejected) == 1
    rec = rejected[0]
    assert rec.fields["reason"] == "invalid_input"
    assert rec.tool == "incident.search"
    assert rec.tenant == "acme" and rec.subject == "newton@acme"
    assert rec.fields.get("field") == "service"
    assert desk.events.query(kind="tool.called") == []  # the tool never ran


def test_every_missing_field_is_named_and_client_keys_are_not_echoed(make_server):
    server = make_server(tokens=TOKENS)
    schema = {"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "integer"},
        "box": {"type": "object", "properties": {"inner": {"type": "string"}}, "required": ["inner"]},
        "bag": {"type": "object", "additionalProperties": {"type": "object", "required": ["v"]}}},
        "required": ["a", "b"]}

    @server.tool("many", description="needs a and b", input_schema=schema)
    def many(ctx, **kwargs):
        return "ran"

    result = server.call_tool("many", {"a": ""}, ACME_RW, "acme")
    assert result.to_dict() == missing("b", "a") or result.to_dict() == missing("a", "b")
    assert sorted(result.error["missing"]) == ["a", "b"]
    nested = server.call_tool("many", {"a": "x", "b": 1, "box": {}}, ACME_RW, "acme")
    assert nested.to_dict() == missing("box/inner")
    secret_key = "sk-live-" + "k" * 24
    keyed = server.call_tool("many", {"a": "x", "b": 1, "bag": {secret_key: {}}}, ACME_RW, "acme")
    assert keyed.error["missing"] == ["bag/[undeclared]/v"]
    assert secret_key not in str(keyed.to_dict())
    for r in (result, nested, keyed):
        assert r.content == MISSING_RESULT["content"]
        check_result(r.to_dict(), "CallToolResult", "2025-11-25")


def test_missing_input_on_the_wire_is_a_valid_typed_call_tool_result(desk):
    import orjson

    from mcp_schema import check
    from truecall.incidents import DEMO_TOKENS
    from truecall.protocol import Engine, jsonrpc

    engine = Engine(desk).start()
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "incident.search", "arguments": {}, "_meta": meta}}
    response, status = asyncio.run(engine.serve(jsonrpc.decode(orjson.dumps(msg)), DEMO_TOKENS["demo-acme-operator"]))
    assert status == 200
    check(response, "2026-07-28", "CallToolResult")
    result = response["result"]
    assert result["isError"] is True and result["content"] == MISSING_RESULT["content"]
    assert result["structuredContent"]["error"]["kind"] == "invalid_input"
    assert result["structuredContent"]["error"]["missing"] == ["service"]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"service": 12345}, "service"),
        ({"service": ["payments"]}, "service"),
        ({"service": "payments", "includeLinks": "yes-PLANTED-7f3a"}, "includeLinks"),
        ({"service": "x" * 129}, "service"),
    ],
)
def test_wrong_type_names_the_field_without_the_value(desk, operator_token, arguments, field):
    result = desk.call_tool("incident.search", arguments, operator_token, "acme")
    assert result.is_error is True
    err = result.error
    assert err is not None
    assert err["kind"] == "invalid_input"
    assert err["retryable"] is False
    assert err["field"] == field
    assert field in err["message"]
    assert field in result.content[0]["text"]
    rendered = repr(result.to_dict())
    assert "PLANTED-7f3a" not in rendered
    assert "12345" not in rendered
    assert "x" * 129 not in rendered
    [rec] = desk.events.query(kind="tool.rejected")
    assert rec.fields["reason"] == "invalid_input"
    assert rec.fields["field"] == field


def test_unknown_field_is_invalid_input_naming_the_declared_ones_not_the_callers(desk, operator_token):
    result = desk.call_tool("incident.search", {"service": "payments", "limt": "VALUE-PLANTED-91ab"},
                            operator_token, "acme")
    assert result.is_error is True
    assert result.error["kind"] == "invalid_input"
    # neither the caller's key nor its value comes back; how many, and the fields the tool takes, do
    assert "limt" not in repr(result.to_dict()) and "[undeclared]" in result.error["message"]
    assert "it takes: service, includeLinks" in result.error["message"]
    assert "VALUE-PLANTED-91ab" not in repr(result.to_dict())
    [rec] = desk.events.query(kind="tool.rejected")
    assert rec.fields["reason"] == "invalid_input"


def test_resource_links_on_request(desk, operator_token):
    result = desk.call_tool("incident.search", {"service": "payments", "includeLinks": True}, operator_token, "acme")
    links = [b for b in result.content if b["type"] == "resource_link"]
    assert [b["uri"] for b in links] == ["incident://acme/INC-1001", "incident://acme/INC-1002"]
    assert result.structured_content == CHAPTER_04["structuredContent"]


# -- faults the model cannot fix are raised ------------------------------------------------------


@pytest.mark.parametrize("token", ["wrong-token", "", None, "demo-acme-operator " * 500])
def test_invalid_token_no_existence_oracle(desk, token):
    signatures = []
    for name in ("incident.search", "no.such.tool"):
        with pytest.raises(PermissionError) as info:
            desk.call_tool(name, {"service": "payments"}, token, "acme")
        exc = info.value
        assert isinstance(exc, InvalidCredential) and isinstance(exc, ProtocolError)
        signatures.append((type(exc), str(exc), exc.to_error()))
    assert signatures[0] == signatures[1]
    assert "incident" not in signatures[0][1] and "no.such" not in signatures[0][1]
    denied = desk.events.query(kind="tool.denied")
    assert len(denied) == 2
    assert [(r.tool, r.tenant, r.subject, r.fields) for r in denied][0] == \
        [(r.tool, r.tenant, r.subject, r.fields) for r in denied][1]
    assert desk.events.query(kind="tool.called") == []


def test_tenant_mismatch_is_raised(desk, operator_token):
    with pytest.raises(PermissionError) as info:
        desk.call_tool("incident.search", {"service": "payments"}, operator_token, "globex")
    assert isinstance(info.value, TenantMismatch)
    [rec] = desk.events.query(kind="tool.denied")
    assert rec.fields["reason"] == "tenant_mismatch"
    assert desk.events.query(kind="tool.called") == []


@pytest.fixture
def guarded(make_server):
    server = make_server(tokens=TOKENS)
    calls = []

    @server.tool("notes.read", description="Read notes.", scopes={"read"},
                 input_schema={"type": "object", "properties": {"q": {"type": "string"}}})
    def read(ctx, q: str = ""):
        calls.append(("read", ctx.principal.subject))
        return ToolResult.structured({"q": q, "tenant": ctx.tenant})

    @server.tool("notes.write", description="Write a note.", scopes={"read", "write"})
    def write(ctx, **kwargs):
        calls.append(("write", ctx.principal.subject))
        return "written"

    server.calls = calls  # type: ignore[attr-defined]
    return server


def test_custom_server_happy_path(guarded):
    result = guarded.call_tool("notes.read", {"q": "x"}, ACME_R, "acme")
    assert result.to_dict() == {"content": [{"type": "text", "text": '{"q":"x","tenant":"acme"}'}],
                                "structuredContent": {"q": "x", "tenant": "acme"}}
    assert guarded.call_tool("notes.write", {}, ACME_RW).to_dict() == {"content": [{"type": "text", "text": "written"}]}


def test_tenant_mismatch_custom_server(guarded):
    with pytest.raises(PermissionError) as info:
        guarded.call_tool("notes.read", {}, ACME_RW, "globex")
    assert type(info.value) is TenantMismatch
    assert guarded.calls == []


@pytest.mark.parametrize(("token", "tool", "missing"), [(ACME_R, "notes.write", ["write"]),
                                                        (ACME_NONE, "notes.read", ["read"]),
                                                        (ACME_NONE, "notes.write", ["read", "write"])])
def test_missing_scope_is_raised(guarded, token, tool, missing):
    with pytest.raises(PermissionError) as info:
        guarded.call_tool(tool, {}, token, "acme")
    exc = info.value
    assert type(exc) is InsufficientScope
    assert list(exc.required) == missing
    assert exc.to_error()["data"] == {"requiredScopes": missing}
    assert guarded.calls == []
    [rec] = guarded.events.query(kind="tool.denied")
    assert rec.fields["reason"] == "insufficient_scope"


def test_invalid_token_custom_server(guarded):
    with pytest.raises(InvalidCredential):
        guarded.call_tool("notes.read", {}, "tok-acme-rw-but-wrong", "acme")
    assert guarded.calls == []


def test_unknown_tool_with_valid_token(guarded):
    with pytest.raises(UnknownTool) as info:
        guarded.call_tool("notes.delete", {}, ACME_RW, "acme")
    exc = info.value
    assert isinstance(exc, InvalidParams) and isinstance(exc, LookupError)
    assert not isinstance(exc, PermissionError)
    assert "notes.delete" in str(exc)
    [rec] = guarded.events.query(kind="tool.denied")
    assert rec.fields["reason"] == "unknown_tool"


def test_unknown_tool_on_the_desk(desk, operator_token):
    with pytest.raises(UnknownTool):
        desk.call_tool("incident.delete", {}, operator_token, "acme")


# -- the output contract ----------------------------------------------------------------------

OUT_SCHEMA = {
    "type": "object",
    "properties": {"count": {"type": "integer", "minimum": 0}},
    "required": ["count"],
    "additionalProperties": False,
}


@pytest.fixture
def contract(make_server):
    server = make_server(tokens=TOKENS)

    @server.tool("count.ok", description="ok", output_schema=OUT_SCHEMA)
    def ok(ctx):
        return ToolResult([text("2 found")], {"count": 2})

    @server.tool("count.wrong_type", description="breaks its schema", output_schema=OUT_SCHEMA)
    def wrong_type(ctx):
        return ToolResult([text("two found")], {"count": "two"})

    @server.tool("count.extra", description="breaks its schema", output_schema=OUT_SCHEMA)
    def extra(ctx):
        return {"count": 1, "leaked": "internal-detail"}

    @server.tool("count.none", description="no structured content", output_schema=OUT_SCHEMA)
    def none(ctx):
        return ToolResult([text("1 found")])

    @server.tool("count.error", description="fails honestly", output_schema=OUT_SCHEMA)
    def error(ctx):
        return tool_error(ErrorKind.DEPENDENCY_UNAVAILABLE, "search backend unavailable", retryAfterMs=1000)

    @server.tool("count.bare_error", description="fails with no structure", output_schema=OUT_SCHEMA)
    def bare_error(ctx):
        return ToolResult([text("nope")], is_error=True)

    return server


def test_output_that_fits_its_schema_passes(contract):
    assert contract.call_tool("count.ok", {}, ACME_RW).to_dict() == {
        "content": [{"type": "text", "text": "2 found"}], "structuredContent": {"count": 2}}


@pytest.mark.parametrize("tool", ["count.wrong_type", "count.extra", "count.none"])
def test_output_breaking_its_schema_is_withheld(contract, tool):
    result = contract.call_tool(tool, {}, ACME_RW)
    assert result.is_error is True
    assert result.error["kind"] == "internal"
    assert result.structured_content == {"error": result.error}
    rendered = repr(result.to_dict())
    assert "two found" not in rendered and "internal-detail" not in rendered
    [rec] = contract.events.query(kind="tool.failed")
    assert rec.fields["reason"] == "output_schema_violation"
    assert rec.tool == tool
    assert contract.events.query(kind="tool.called") == []


def test_error_results_are_not_checked_against_the_output_schema(contract):
    result = contract.call_tool("count.error", {}, ACME_RW)
    assert result.to_dict() == {
        "content": [{"type": "text", "text": "search backend unavailable"}],
        "structuredContent": {"error": {"kind": "dependency_unavailable", "message": "search backend unavailable",
                                        "retryable": True, "retryAfterMs": 1000}},
        "isError": True,
    }
    assert contract.call_tool("count.bare_error", {}, ACME_RW).to_dict() == {
        "content": [{"type": "text", "text": "nope"}], "isError": True}
    assert contract.events.query(kind="tool.failed") == []
    outcomes = sorted(r.outcome for r in contract.events.query(kind="tool.called"))
    assert outcomes == ["dependency_unavailable", "error"]


# -- tool faults -------------------------------------------------------------------------------


def test_exception_in_tool_is_an_internal_error_without_its_text(make_server):
    server = make_server(tokens=TOKENS)

    @server.tool("explode", description="raises", input_schema={"type": "object"})
    def explode(ctx, **kwargs):
        raise RuntimeError("connect to postgres://admin:hunter2@db.internal:5432 failed in /srv/app/secret.py")

    result = server.call_tool("explode", {"x": 1}, ACME_RW, "acme")
    assert result.is_error is True
    assert result.error["kind"] == "internal"
    assert result.error["retryable"] is False
    rendered = repr(result.to_dict())
    for fragment in ("hunter2", "postgres", "db.internal", "secret.py", "RuntimeError", "Traceback", "/srv"):
        assert fragment not in rendered
    [rec] = server.events.query(kind="tool.failed")
    assert rec.fields["exception"] == "RuntimeError"
    assert "hunter2" not in repr(rec.to_dict())


def test_protocol_errors_raised_by_a_tool_propagate(make_server):
    server = make_server(tokens=TOKENS)

    @server.tool("lookup", description="raises a typed fault")
    def lookup(ctx):
        raise InvalidParams("no such incident")

    with pytest.raises(InvalidParams, match="no such incident"):
        server.call_tool("lookup", {}, ACME_RW)


def test_async_tools_work_through_call_tool(make_server):
    server = make_server(tokens=TOKENS)

    @server.tool("slow.count", description="async", output_schema=OUT_SCHEMA,
                 input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    async def slow_count(ctx, n: int):
        await asyncio.sleep(0.001)
        return {"count": n}

    assert server.call_tool("slow.count", {"n": 3}, ACME_RW, "acme").to_dict() == {
        "content": [{"type": "text", "text": '{"count":3}'}], "structuredContent": {"count": 3}}
    # the same pipeline guards async tools
    assert server.call_tool("slow.count", {}, ACME_RW, "acme").to_dict() == missing("n")
    broken = server.call_tool("slow.count", {"n": -1}, ACME_RW, "acme")
    assert broken.is_error and broken.error["kind"] == "internal"


def test_async_tool_exception_is_internal(make_server):
    server = make_server(tokens=TOKENS)

    @server.tool("slow.explode", description="async raises")
    async def slow_explode(ctx):
        await asyncio.sleep(0)
        raise ValueError("token=abc123 leaked")

    result = server.call_tool("slow.explode", {}, ACME_RW)
    assert result.error["kind"] == "internal"
    assert "abc123" not in repr(result.to_dict())


def test_elicit_without_a_client_names_the_missing_field(make_server):
    server = make_server(tokens=TOKENS)
    reached = []

    @server.tool("ask.service", description="asks the user")
    async def ask(ctx):
        answer = await ctx.elicit(
            "Which service?",
            {"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]},
        )
        reached.append(answer)
        return {"service": answer.content["service"]}

    result = server.call_tool("ask.service", {}, ACME_RW, "acme")
    assert result.is_error is True
    assert result.error["kind"] == "invalid_input"
    assert "service" in result.error["message"]
    assert result.error["missing"] == ["service"]
    assert reached == []  # the tool did not go on as if the user had answered
    [rec] = server.events.query(kind="tool.called")
    assert rec.outcome == "invalid_input"


def test_confirm_without_a_client_is_no(make_server):
    server = make_server(tokens=TOKENS)

    @server.tool("danger.delete", description="needs a yes")
    async def delete(ctx):
        if not await ctx.confirm("Delete everything?"):
            return tool_error(ErrorKind.DECLINED, "not confirmed; nothing was deleted")
        return "deleted"

    result = server.call_tool("danger.delete", {}, ACME_RW)
    assert result.error["kind"] == "declined"
    assert "deleted" not in [b.get("text") for b in result.content]


def test_tool_returning_an_unsupported_type_is_internal_not_a_crash(make_server):
    server = make_server(tokens=TOKENS)

    @server.tool("odd", description="returns a number")
    def odd(ctx):
        return 42

    try:
        result = server.call_tool("odd", {}, ACME_RW)
    except ProtocolError:
        return  # a typed fault is acceptable
    assert result.is_error is True
    assert result.error["kind"] == "internal"
