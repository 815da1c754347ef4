"""ToolResult's three channels and the content/error builders."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest

from truecall import (
    MISSING_INPUT_TEXT,
    ErrorKind,
    ToolResult,
    audio,
    embedded_resource,
    image,
    resource_link,
    text,
    tool_error,
)

# -- to_dict: exact shapes ------------------------------------------------------------


def test_to_dict_content_only():
    result = ToolResult([{"type": "text", "text": "hi"}])
    assert result.to_dict() == {"content": [{"type": "text", "text": "hi"}]}
    assert list(result.to_dict()) == ["content"]


def test_to_dict_with_structured_content():
    result = ToolResult([text("payments: 2 个已授权事件摘要")], {"service": "payments", "count": 2, "tenant": "acme"})
    assert result.to_dict() == {
        "content": [{"type": "text", "text": "payments: 2 个已授权事件摘要"}],
        "structuredContent": {"service": "payments", "count": 2, "tenant": "acme"},
    }
    assert "isError" not in result.to_dict()


def test_to_dict_error_only_when_true():
    err = ToolResult([text(MISSING_INPUT_TEXT)], is_error=True)
    assert err.to_dict() == {"content": [{"type": "text", "text": "required input is missing"}], "isError": True}
    assert err.to_dict()["isError"] is True
    ok = ToolResult([text("x")], is_error=False)
    assert "isError" not in ok.to_dict()


def test_to_dict_empty_structured_content_is_still_sent():
    # Only None means "no structured content"; an empty object is a fact.
    assert ToolResult([], {}).to_dict() == {"content": [], "structuredContent": {}}


def test_to_dict_all_three_channels_in_order():
    result = ToolResult([text("no")], {"error": {"kind": "internal"}}, is_error=True)
    assert list(result.to_dict()) == ["content", "structuredContent", "isError"]


def test_defaults():
    result = ToolResult([])
    assert result.structured_content is None
    assert result.is_error is False
    assert result.error is None


def test_tool_result_is_frozen():
    result = ToolResult([text("x")])
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.is_error = True  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.structured_content = {"a": 1}  # type: ignore[misc]
    assert result.is_error is False


def test_missing_input_text_is_exact():
    assert MISSING_INPUT_TEXT == "required input is missing"


# -- structured() -----------------------------------------------------------------------


def test_structured_mirrors_json_as_text_without_narrative():
    data = {"service": "payments", "count": 2, "tenant": "acme", "nested": {"ok": [1, 2]}, "zh": "事件"}
    result = ToolResult.structured(data)
    assert result.structured_content == data
    assert result.is_error is False
    assert len(result.content) == 1
    block = result.content[0]
    assert block["type"] == "text"
    assert json.loads(block["text"]) == data


def test_structured_with_narrative_uses_it():
    data = {"count": 0}
    result = ToolResult.structured(data, "nothing found")
    assert result.to_dict() == {"content": [{"type": "text", "text": "nothing found"}], "structuredContent": {"count": 0}}


def test_structured_empty_narrative_is_kept_not_replaced():
    result = ToolResult.structured({"a": 1}, "")
    assert result.content == [{"type": "text", "text": ""}]


# -- content builders ---------------------------------------------------------------------


def test_text_block():
    assert text("hello") == {"type": "text", "text": "hello"}
    assert text("x", annotations={"audience": ["user"]}, meta={"k": 1}) == {
        "type": "text",
        "text": "x",
        "annotations": {"audience": ["user"]},
        "_meta": {"k": 1},
    }


def test_image_bytes_become_base64():
    raw = bytes(range(256))
    block = image(raw, "image/png")
    assert block == {"type": "image", "data": base64.b64encode(raw).decode(), "mimeType": "image/png"}
    assert base64.b64decode(block["data"]) == raw


def test_image_base64_text_is_kept_as_is():
    encoded = base64.b64encode(b"\x89PNG").decode()
    assert image(encoded, "image/png")["data"] == encoded


def test_image_annotations():
    block = image(b"x", "image/gif", annotations={"priority": 0.5})
    assert block["annotations"] == {"priority": 0.5}


def test_audio_bytes_become_base64():
    raw = b"RIFF\x00\x01\x02wave"
    block = audio(raw, "audio/wav")
    assert block == {"type": "audio", "data": base64.b64encode(raw).decode(), "mimeType": "audio/wav"}
    assert audio("AAAA", "audio/mpeg")["data"] == "AAAA"


def test_resource_link_minimal_and_full():
    assert resource_link("incident://acme/INC-1", "INC-1") == {
        "type": "resource_link",
        "uri": "incident://acme/INC-1",
        "name": "INC-1",
    }
    full = resource_link(
        "incident://acme/INC-1",
        "INC-1",
        title="Card failures",
        description="P2",
        mime_type="application/json",
        size=42,
        annotations={"audience": ["assistant"]},
    )
    assert full == {
        "type": "resource_link",
        "uri": "incident://acme/INC-1",
        "name": "INC-1",
        "title": "Card failures",
        "description": "P2",
        "mimeType": "application/json",
        "size": 42,
        "annotations": {"audience": ["assistant"]},
    }


def test_resource_link_size_zero_is_kept():
    assert resource_link("file:///empty", "empty", size=0)["size"] == 0


def test_embedded_resource_text():
    assert embedded_resource("incident://acme/INC-1", text="{}", mime_type="application/json") == {
        "type": "resource",
        "resource": {"uri": "incident://acme/INC-1", "mimeType": "application/json", "text": "{}"},
    }


def test_embedded_resource_empty_text_counts_as_text():
    assert embedded_resource("file:///e", text="") == {"type": "resource", "resource": {"uri": "file:///e", "text": ""}}


def test_embedded_resource_blob_bytes_become_base64():
    raw = b"\x00\xffbinary"
    block = embedded_resource("file:///b.bin", blob=raw)
    assert block == {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": base64.b64encode(raw).decode()}}
    assert "text" not in block["resource"]


def test_embedded_resource_blob_base64_string_kept():
    assert embedded_resource("file:///b", blob="AAEC")["resource"]["blob"] == "AAEC"


@pytest.mark.parametrize("kwargs", [{}, {"text": "a", "blob": b"b"}, {"text": "", "blob": ""}])
def test_embedded_resource_exactly_one_of_text_or_blob(kwargs):
    with pytest.raises(ValueError, match="exactly one"):
        embedded_resource("file:///x", **kwargs)


# -- tool_error -----------------------------------------------------------------------------

EXPECTED_RETRYABLE = {
    "invalid_input": False,
    "dependency_unavailable": True,
    "outcome_unknown": False,
    "internal": False,
    "declined": False,
    "rate_limited": True,
    "cancelled": False,
}


def test_error_kinds_are_the_documented_set():
    assert {k.value for k in ErrorKind} == set(EXPECTED_RETRYABLE)


@pytest.mark.parametrize("kind", sorted(EXPECTED_RETRYABLE))
def test_tool_error_shape_and_retryable_default(kind):
    extra = {"reference": "op-123"} if kind == "outcome_unknown" else {}
    result = tool_error(kind, "it did not work", **extra)
    assert result.is_error is True
    assert result.content == [{"type": "text", "text": "it did not work"}]
    expected_error = {"kind": kind, "message": "it did not work", "retryable": EXPECTED_RETRYABLE[kind], **extra}
    assert result.structured_content == {"error": expected_error}
    assert result.error == expected_error
    assert result.to_dict() == {
        "content": [{"type": "text", "text": "it did not work"}],
        "structuredContent": {"error": expected_error},
        "isError": True,
    }


def test_tool_error_accepts_enum_and_overrides_retryable():
    result = tool_error(ErrorKind.DEPENDENCY_UNAVAILABLE, "upstream down", retryable=False, retryAfterMs=500)
    assert result.error == {
        "kind": "dependency_unavailable",
        "message": "upstream down",
        "retryable": False,
        "retryAfterMs": 500,
    }
    assert tool_error("invalid_input", "fix it", retryable=True).error["retryable"] is True


def test_tool_error_unknown_kind_is_refused():
    with pytest.raises(ValueError):
        tool_error("exploded", "nope")


@pytest.mark.parametrize("details", [{}, {"reference": ""}, {"reference": None}])
def test_outcome_unknown_requires_a_reference(details):
    with pytest.raises(ValueError, match="reference"):
        tool_error(ErrorKind.OUTCOME_UNKNOWN, "timed out after sending", **details)


def test_outcome_unknown_with_reference():
    result = tool_error("outcome_unknown", "timed out after sending", reference="ticket-create/8f2c")
    assert result.error["reference"] == "ticket-create/8f2c"
    assert result.error["retryable"] is False


def test_error_property_only_for_error_results():
    assert ToolResult([text("ok")], {"error": {"kind": "internal"}}).error is None  # not an error result
    assert ToolResult([text("x")], is_error=True).error is None  # no structured error
    assert ToolResult([text("x")], {"error": "flat"}, is_error=True).error is None  # not a typed error
