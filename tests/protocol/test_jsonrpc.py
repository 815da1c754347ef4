"""JSON-RPC framing: ``jsonrpc.decode`` classifies or refuses every input, and says so exactly.

Every refusal is a :class:`MessageError` with the right code and, when the id could be read,
that id; the error message built from it is a valid MCP error response in all our versions.
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_schema import check
from truecall.protocol import jsonrpc
from truecall.protocol.jsonrpc import NOTIFICATION, REQUEST, RESPONSE, Limits, MessageError

VERSIONS = ("2026-07-28", "2025-11-25", "2025-06-18")


def refused(data: bytes | str, limits: Limits = jsonrpc.DEFAULT_LIMITS) -> MessageError:
    with pytest.raises(MessageError) as info:
        jsonrpc.decode(data, limits)
    err = info.value
    # what a transport would send back must be a valid error response in every version we speak
    message = jsonrpc.error_message(err.id, err)
    for version in VERSIONS:
        if err.id is None and version == "2025-06-18":
            continue  # that schema requires an id even when none could be read (2025-11-25 made it optional)
        check(message, version)
    assert ("id" in message) == (err.id is not None)
    return err


def dumps(value: object) -> bytes:
    return orjson.dumps(value)


# -- parse errors and batches ---------------------------------------------------------------


@pytest.mark.parametrize("data", [b"{", b"not json", b'{"jsonrpc": "2.0", "id": 1,}', b"\xff\xfe{}", b"", b"   ",
                                  b'{"jsonrpc":"2.0","id":1,"method":"x"} trailing'])
def test_unparseable_input_is_a_parse_error_without_id(data):
    err = refused(data)
    assert err.code == -32700
    assert err.id is None
    assert err.http_status == 400


def test_parse_error_message_omits_id():
    err = refused(b'{"jsonrpc":"2.0","id":7,"method":')
    assert jsonrpc.error_message(err.id, err) == {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}}


@pytest.mark.parametrize("batch", [
    [{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
    [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}],
    [],
])
def test_batches_are_refused(batch):
    err = refused(dumps(batch))
    assert err.code == -32600
    assert "batch" in err.message.lower()
    assert err.id is None


@pytest.mark.parametrize("value", [1, "x", None, True, 2.5])
def test_a_non_object_message_is_an_invalid_request(value):
    err = refused(dumps(value))
    assert err.code == -32600
    assert err.id is None


# -- the jsonrpc member ----------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, "1.0", "2", 2.0, 2, "2.0 ", True])
def test_wrong_or_missing_jsonrpc_member_keeps_the_id(version):
    msg: dict = {"id": 41, "method": "tools/list"}
    if version is not None:
        msg["jsonrpc"] = version
    err = refused(dumps(msg))
    assert err.code == -32600
    assert err.id == 41
    assert "jsonrpc" in err.message


def test_wrong_jsonrpc_member_with_an_unreadable_id_has_no_id():
    err = refused(dumps({"jsonrpc": "1.0", "id": 1.5, "method": "tools/list"}))
    assert err.code == -32600 and err.id is None


# -- ids of every JSON type ---------------------------------------------------------------------


@pytest.mark.parametrize("id", ["abc", "", "0", 0, -1, 2**53, 2**63 - 1, "🦊"])
def test_string_and_integer_ids_are_accepted(id):
    msg = jsonrpc.decode(dumps({"jsonrpc": "2.0", "id": id, "method": "tools/list"}))
    assert msg.kind == REQUEST
    assert msg.id == id and type(msg.id) is type(id)


@pytest.mark.parametrize("id", [1.0, 1.5, -0.0, True, False, None, {"a": 1}, [1], []])
def test_other_ids_make_an_invalid_request_without_echoing_them(id):
    err = refused(dumps({"jsonrpc": "2.0", "id": id, "method": "tools/list"}))
    assert err.code == -32600
    assert err.id is None  # never echo an id that is not a legal RequestId


@pytest.mark.parametrize("id", [1.0, True, None, {"a": 1}, [1]])
def test_responses_with_bad_ids_are_refused(id):
    err = refused(dumps({"jsonrpc": "2.0", "id": id, "result": {}}))
    assert err.code == -32600 and err.id is None


def test_a_response_without_an_id_is_refused():
    err = refused(dumps({"jsonrpc": "2.0", "error": {"code": -32603, "message": "x"}}))
    assert err.code == -32600


# -- method and params ----------------------------------------------------------------------------


def test_missing_method_is_an_invalid_request_with_the_id():
    err = refused(dumps({"jsonrpc": "2.0", "id": "r1", "params": {}}))
    assert err.code == -32600
    assert err.id == "r1"


@pytest.mark.parametrize("method", ["", 1, True, ["tools/list"], {"m": 1}])
def test_method_must_be_a_non_empty_string(method):
    err = refused(dumps({"jsonrpc": "2.0", "id": 3, "method": method}))
    assert err.code == -32600
    assert err.id == 3


@pytest.mark.parametrize("params", [[], [1, 2], "x", 1, True, 1.5])
def test_params_of_the_wrong_type_keep_the_id(params):
    err = refused(dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}))
    assert err.code == -32600
    assert err.id == 9
    assert "params" in err.message


def test_params_of_the_wrong_type_on_a_notification():
    err = refused(dumps({"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]}))
    assert err.code == -32600 and err.id is None


def test_null_params_are_the_same_as_absent_params():
    msg = jsonrpc.decode(dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": None}))
    assert msg.kind == REQUEST and msg.params is None


# -- limits -----------------------------------------------------------------------------------------


def test_a_message_over_max_bytes_is_refused_before_parsing():
    limits = Limits(max_bytes=1024)
    body = dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"pad": "x" * 2000}})
    err = refused(body, limits)
    assert err.code == -32600
    assert "large" in err.message.lower()
    # exactly at the limit it is fine
    fits = dumps({"jsonrpc": "2.0", "id": 5, "method": "x", "params": {"pad": ""}})
    fits = fits.replace(b'"pad":""', b'"pad":"' + b"y" * (1024 - len(fits)) + b'"')
    assert len(fits) == 1024
    assert jsonrpc.decode(fits, limits).id == 5
    too_big = fits.replace(b'"y', b'"yy', 1)
    assert refused(too_big, limits).code == -32600


def test_default_max_bytes_is_enforced():
    limit = jsonrpc.DEFAULT_LIMITS.max_bytes
    body = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"pad":"' + b"z" * limit + b'"}}'
    err = refused(body)
    assert err.code == -32600


def _nested(depth: int) -> object:
    value: object = 1
    for i in range(depth):
        value = {"a": value} if i % 2 else [value]
    return value


def test_nesting_deeper_than_max_depth_is_an_invalid_request_with_the_id():
    limits = Limits(max_depth=10)
    # the message object is level 1, params level 2: 8 more levels fit exactly
    ok = {"jsonrpc": "2.0", "id": "deep", "method": "tools/call", "params": {"x": _nested(7)}}
    assert jsonrpc.decode(dumps(ok), limits).kind == REQUEST
    too_deep = {"jsonrpc": "2.0", "id": "deep", "method": "tools/call", "params": {"x": _nested(9)}}
    err = refused(dumps(too_deep), limits)
    assert err.code == -32600
    assert err.id == "deep"
    assert "deep" in err.message.lower()


def test_default_max_depth_with_id():
    msg = {"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"x": _nested(100)}}
    err = refused(dumps(msg))
    assert err.code == -32600 and err.id == 12


def test_nesting_beyond_the_parser_recursion_limit_is_still_an_invalid_request():
    # valid JSON nested deeper than orjson will go: too deep, not a parse error
    data = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":' + b"[" * 3000 + b"]" * 3000 + b"}}"
    err = refused(data)
    assert err.code == -32600
    assert "deep" in err.message.lower()


def test_deep_nesting_in_a_response_is_refused_too():
    err = refused(dumps({"jsonrpc": "2.0", "id": 2, "result": {"x": _nested(100)}}))
    assert err.code == -32600 and err.id == 2


# -- classification -----------------------------------------------------------------------------------


def test_request_classification():
    msg = jsonrpc.decode(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}')
    assert (msg.kind, msg.id, msg.method, msg.params) == (REQUEST, 1, "tools/call", {"name": "t"})


def test_notifications_have_no_id():
    msg = jsonrpc.decode(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}')
    assert (msg.kind, msg.id, msg.method, msg.params) == (NOTIFICATION, None, "notifications/cancelled",
                                                          {"requestId": 3})
    bare = jsonrpc.decode('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert bare.kind == NOTIFICATION and bare.params is None


def test_null_id_is_not_a_notification():
    # "id": null is present: an invalid request, never silently a notification
    err = refused(b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}')
    assert err.code == -32600


@pytest.mark.parametrize("body", [{"result": {}}, {"result": {"action": "accept"}},
                                  {"error": {"code": -1, "message": "no"}}, {"result": None}])
def test_responses_are_classified(body):
    msg = jsonrpc.decode(dumps({"jsonrpc": "2.0", "id": "s-1", **body}))
    assert msg.kind == RESPONSE
    assert msg.id == "s-1" and msg.method is None and msg.params is None
    assert msg.raw == {"jsonrpc": "2.0", "id": "s-1", **body}


def test_a_message_with_neither_method_nor_result_keeps_the_id():
    err = refused(b'{"jsonrpc":"2.0","id":77}')
    assert err.code == -32600 and err.id == 77


def test_decode_accepts_str_and_bytes_alike():
    text = '{"jsonrpc":"2.0","id":"é","method":"ping"}'
    assert jsonrpc.decode(text).id == jsonrpc.decode(text.encode()).id == "é"


# -- the builders -------------------------------------------------------------------------------------


def test_builders_produce_schema_valid_messages():
    for version in VERSIONS:
        check(jsonrpc.result_message(1, {"resultType": "complete"} if version == "2026-07-28" else {}), version)
        check(jsonrpc.notification("notifications/progress", {"progressToken": "t", "progress": 1}), version)
        check(jsonrpc.error_message("x", {"code": -32601, "message": "Method not found"}), version)
    assert jsonrpc.error_message(None, {"code": 1, "message": "m"}) == {"jsonrpc": "2.0",
                                                                        "error": {"code": 1, "message": "m"}}
    assert jsonrpc.request("s-1", "elicitation/create") == {"jsonrpc": "2.0", "id": "s-1",
                                                            "method": "elicitation/create"}
    assert orjson.loads(jsonrpc.encode({"a": "é"})) == {"a": "é"}


# -- property: decode raises MessageError or nothing --------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=30,
)

message_like = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]) | json_values,
        "id": json_values,
        "method": st.sampled_from(["tools/call", "ping", ""]) | json_values,
        "params": json_values,
        "result": json_values,
        "error": json_values,
    },
)


def _decode_or_message_error(data: bytes | str, limits: Limits = jsonrpc.DEFAULT_LIMITS) -> None:
    try:
        msg = jsonrpc.decode(data, limits)
    except MessageError as err:
        assert err.code in (-32700, -32600)
        assert err.id is None or isinstance(err.id, (str, int)) and not isinstance(err.id, bool)
        return
    assert msg.kind in (REQUEST, NOTIFICATION, RESPONSE)
    if msg.kind == REQUEST:
        assert isinstance(msg.method, str) and msg.method
        assert isinstance(msg.id, (str, int)) and not isinstance(msg.id, bool)
        assert msg.params is None or isinstance(msg.params, dict)
    elif msg.kind == NOTIFICATION:
        assert msg.id is None and "id" not in msg.raw
    else:
        assert msg.method is None and ("result" in msg.raw or "error" in msg.raw)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_arbitrary_json_values_never_escape_as_other_exceptions(value):
    _decode_or_message_error(orjson.dumps(value))


@settings(max_examples=150, deadline=None)
@given(message_like)
def test_message_shaped_objects_are_classified_or_refused(value):
    _decode_or_message_error(orjson.dumps(value))
    _decode_or_message_error(orjson.dumps(value), Limits(max_bytes=64, max_depth=3))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_escape_as_other_exceptions(data):
    _decode_or_message_error(data)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=100))
def test_arbitrary_text_never_escapes_as_other_exceptions(data):
    # includes lone surrogates, which cannot even be encoded as UTF-8
    _decode_or_message_error(data)
