"""Hostile or broken arguments: always a typed answer, never a crash or a leak.

Every call must end in a ToolResult with ``isError`` or a ``truecall.ProtocolError``;
no message may contain a traceback, a file path or the value we planted.
"""

from __future__ import annotations

import re

import pytest

from truecall import Principal, ProtocolError, ToolResult

TOKEN = "tok-bad-input"
PLANTED = "PLANTED-VALUE-c0ffee"

FORBIDDEN_IN_MESSAGES = (
    re.compile(r"Traceback"),
    re.compile(r'File "'),
    re.compile(r"\.py\b"),
    re.compile(r"(^|[\s'\"(])/(?:[\w.-]+/)+[\w.-]*"),  # a POSIX path
    re.compile(r"site-packages"),
    re.compile(r"RecursionError|UnicodeEncodeError|TypeError|KeyError"),
)


def _deep_dict(depth: int, leaf=PLANTED) -> dict:
    root: dict = {}
    cur = root
    for _ in range(depth - 1):
        cur["a"] = {}
        cur = cur["a"]
    cur["a"] = leaf
    return root


def _deep_list(depth: int, leaf=PLANTED) -> list:
    root: list = []
    cur = root
    for _ in range(depth - 1):
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    cur.append(leaf)
    return root


@pytest.fixture
def hostile(make_server):
    """A server with a strict tool and a permissive one."""
    server = make_server(tokens={TOKEN: Principal("fuzzer@acme", "acme")})
    ran = []

    @server.tool(
        "strict",
        description="declares everything",
        input_schema={
            "type": "object",
            "properties": {
                "service": {"type": "string", "minLength": 1, "maxLength": 128},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
            },
            "required": ["service"],
            "additionalProperties": False,
        },
    )
    def strict(ctx, service, limit=10, tags=()):
        ran.append("strict")
        return {"service": service}

    @server.tool("loose", description="accepts any object")
    def loose(ctx, **kwargs):
        ran.append("loose")
        return {"keys": len(kwargs)}

    server.ran = ran  # type: ignore[attr-defined]
    return server


def assert_typed_and_clean(call, planted: str | None = PLANTED) -> ToolResult | ProtocolError:
    """Run ``call``; it must give an error result or raise a ProtocolError, with clean messages."""
    try:
        outcome = call()
    except ProtocolError as exc:
        messages = [str(exc), repr(exc.to_error())]
        result: ToolResult | ProtocolError = exc
    else:
        assert isinstance(outcome, ToolResult), f"not a ToolResult: {type(outcome).__name__}"
        assert outcome.is_error is True, outcome.to_dict()
        messages = [b.get("text", "") for b in outcome.content]
        if outcome.structured_content is not None:
            messages.append(repr(outcome.structured_content))
        result = outcome
    for message in messages:
        for pattern in FORBIDDEN_IN_MESSAGES:
            assert not pattern.search(message), f"{pattern.pattern!r} in {message[:300]!r}"
        if planted is not None:
            assert planted not in message
    return result


# -- not an object -------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments", [[PLANTED], ["service", "payments"], PLANTED, 42, 3.5, True, ("a",)],
                         ids=["list", "pairs", "str", "int", "float", "bool", "tuple"])
@pytest.mark.parametrize("tool", ["strict", "loose"])
def test_non_object_arguments(hostile, tool, arguments):
    result = assert_typed_and_clean(lambda: hostile.call_tool(tool, arguments, TOKEN))
    if isinstance(result, ToolResult):
        assert result.error["kind"] == "invalid_input"
    assert hostile.ran == []


def test_none_arguments_are_an_empty_object(hostile, desk, operator_token):
    assert hostile.call_tool("loose", None, TOKEN).to_dict() == {
        "content": [{"type": "text", "text": '{"keys":0}'}], "structuredContent": {"keys": 0}}
    result = hostile.call_tool("strict", None, TOKEN)
    assert result.content == [{"type": "text", "text": "required input is missing"}] and result.is_error
    assert result.error["kind"] == "invalid_input" and result.error["missing"] == ["service"]
    assert desk.call_tool("incident.search", None, operator_token, "acme").to_dict() == result.to_dict()


def test_non_object_on_the_desk(desk, operator_token):
    for arguments in ([PLANTED], PLANTED, 7):
        result = assert_typed_and_clean(lambda: desk.call_tool("incident.search", arguments, operator_token, "acme"))
        assert isinstance(result, ToolResult) and result.error["kind"] == "invalid_input"


# -- size --------------------------------------------------------------------------------------------


def test_one_megabyte_string(hostile, desk, operator_token):
    huge = PLANTED + "x" * (1 << 20)
    result = assert_typed_and_clean(lambda: hostile.call_tool("strict", {"service": huge}, TOKEN))
    assert isinstance(result, ToolResult)
    assert result.error["kind"] == "invalid_input" and result.error["field"] == "service"
    assert len(repr(result.to_dict())) < 2000
    assert_typed_and_clean(lambda: desk.call_tool("incident.search", {"service": huge}, operator_token, "acme"))
    [rec] = desk.events.query(kind="tool.rejected")
    assert rec.fields["argBytes"] > (1 << 20)
    assert len(repr(rec.to_dict())) < 2000  # the audit keeps the size, not the string


def test_one_megabyte_key(hostile):
    # An unknown field is named (that is the point), but never at full length.
    key = "k" * (1 << 20)
    result = assert_typed_and_clean(lambda: hostile.call_tool("strict", {"service": "p", key: PLANTED}, TOKEN))
    assert len(repr(result.to_dict() if isinstance(result, ToolResult) else result.to_error())) < 4000
    assert hostile.ran == []


def test_many_fields(hostile):
    arguments = {f"f{i}": PLANTED for i in range(20_000)}
    arguments["service"] = "payments"
    result = assert_typed_and_clean(lambda: hostile.call_tool("strict", arguments, TOKEN))
    assert len(repr(result.to_dict() if isinstance(result, ToolResult) else result.to_error())) < 4000


# -- depth ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["strict", "loose"])
@pytest.mark.parametrize("shape", ["dict-root", "dict-in-field", "list-in-field"])
def test_depth_10000_never_crashes(hostile, tool, shape):
    arguments = {
        "dict-root": _deep_dict(10_000),
        "dict-in-field": {"service": "p", "tags": [_deep_dict(10_000)]},
        "list-in-field": {"service": "p", "tags": _deep_list(10_000)},
    }[shape]
    result = assert_typed_and_clean(lambda: hostile.call_tool(tool, arguments, TOKEN))
    if isinstance(result, ToolResult):
        assert result.error["kind"] == "invalid_input"
    assert hostile.ran == []  # nothing that deep reaches a tool


def test_depth_10000_on_the_desk(desk, operator_token):
    for arguments in (_deep_dict(10_000), {"service": _deep_dict(10_000)}):
        result = assert_typed_and_clean(lambda: desk.call_tool("incident.search", arguments, operator_token, "acme"))
        if isinstance(result, ToolResult):
            assert result.error["kind"] == "invalid_input"
    assert desk.events.query(kind="tool.called") == []


def test_moderate_depth_is_still_served(hostile):
    result = hostile.call_tool("loose", {"x": _deep_dict(20, leaf="ok")}, TOKEN)
    assert result.is_error is False
    assert result.structured_content == {"keys": 1}


# -- text that is not valid Unicode ----------------------------------------------------------------------

SURROGATES = ["\ud83d", "\udcff\udcfe" + PLANTED]  # half an emoji; surrogate-escaped bytes


@pytest.mark.parametrize("bad", SURROGATES)
@pytest.mark.parametrize("where", ["value", "key", "nested-value", "nested-key"])
@pytest.mark.parametrize("tool", ["strict", "loose"])
def test_lone_surrogates(hostile, tool, where, bad):
    arguments = {
        "value": {"service": bad},
        "key": {"service": "p", bad: 1},
        "nested-value": {"service": "p", "tags": [bad]},
        "nested-key": {"service": "p", "tags": [{bad: "x"}]},
    }[where]
    # Text with lone surrogates is not JSON: refused whatever the schema, before any tool runs.
    result = assert_typed_and_clean(lambda: hostile.call_tool(tool, arguments, TOKEN), planted=bad)
    assert PLANTED not in repr(result.to_dict() if isinstance(result, ToolResult) else result.to_error())
    assert hostile.ran == []
    assert hostile.events.query(), "the refusal was audited"


def test_lone_surrogate_on_the_desk(desk, operator_token):
    for arguments in ({"service": "\ud800"}, {"service": "p", "\udfff": True}):
        assert_typed_and_clean(lambda: desk.call_tool("incident.search", arguments, operator_token, "acme"),
                               planted="\ud800")
    assert desk.events.query(), "audited"


@pytest.mark.parametrize("value", [b"\xff\xfe" + PLANTED.encode(), bytearray(b"\x80abc"), {1, 2}, object()],
                         ids=["bytes", "bytearray", "set", "object"])
@pytest.mark.parametrize("tool", ["strict", "loose"])
def test_values_that_are_not_json(hostile, value, tool):
    result = assert_typed_and_clean(lambda: hostile.call_tool(tool, {"service": value}, TOKEN))
    if isinstance(result, ToolResult):
        assert result.error["kind"] == "invalid_input"
    assert hostile.ran == []


def test_unknown_tool_names_that_are_not_text(hostile):
    for name in ("\ud800", "x" * 10_000, "a/../../etc/passwd", None, 5):
        with pytest.raises(ProtocolError) as info:
            hostile.call_tool(name, {}, TOKEN)  # type: ignore[arg-type]
        assert len(str(info.value)) <= 300
        assert "Traceback" not in str(info.value)


# -- wrong types --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"service": 5}, "service"),
        ({"service": True}, "service"),
        ({"service": None}, "service"),
        ({"service": {"v": PLANTED}}, "service"),
        ({"service": [PLANTED]}, "service"),
        ({"service": "p", "limit": PLANTED}, "limit"),
        ({"service": "p", "limit": 1.5}, "limit"),
        ({"service": "p", "limit": 10**30}, "limit"),
        ({"service": "p", "limit": float("nan")}, "limit"),
        ({"service": "p", "limit": float("inf")}, "limit"),
        ({"service": "p", "tags": PLANTED}, "tags"),
        ({"service": "p", "tags": [1, 2]}, "tags"),
        ({"service": "p", "tags": [PLANTED] * 11}, "tags"),
    ],
)
def test_wrong_types_name_the_field(hostile, arguments, field):
    result = assert_typed_and_clean(lambda: hostile.call_tool("strict", arguments, TOKEN))
    assert isinstance(result, ToolResult)
    err = result.error
    assert err is not None and err["kind"] == "invalid_input"  # every input error is typed
    if "missing" in err:  # truecall.MISSING_INPUT_TEXT, for a missing/empty required field
        assert result.content == [{"type": "text", "text": "required input is missing"}]
        assert err["missing"] == ["service"] and field == "service"
    else:
        assert err["field"].split("/")[0] == field
    assert hostile.ran == []
