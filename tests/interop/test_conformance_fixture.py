"""The conformance fixture (conformance/server.py) serves what the official suite checks.

In-process, through the public API only: names and order of the listings, the
exact payloads of the core tools, resources and prompts, and what the
client-facing tools ask for (with a recording peer standing in for the engine).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import truecall

from _paths import CONFORMANCE

FIXTURE = CONFORMANCE / "server.py"

IMG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

# Written out independently of the fixture, as the notes give it.
SCHEMA_2020_12 = json.loads("""
{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
 "$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
 "properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},
 "allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],
 "if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},
 "then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}
""")

CORE_PAYLOADS: dict[str, dict[str, Any]] = {
    "test_simple_text": {"content": [{"type": "text", "text": "This is a simple text response for testing."}]},
    "test_image_content": {"content": [{"type": "image", "data": IMG, "mimeType": "image/png"}]},
    "test_audio_content": {"content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]},
    "test_embedded_resource": {"content": [{"type": "resource", "resource": {
        "uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}}]},
    "test_multiple_content_types": {"content": [
        {"type": "text", "text": "Multiple content types test:"},
        {"type": "image", "data": IMG, "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json",
                                          "text": "{\"test\":\"data\",\"value\":123}"}},
    ]},
    "test_error_handling": {"isError": True, "content": [
        {"type": "text", "text": "This tool intentionally returns an error for testing"}]},
}

EXPECTED_TOOLS = {
    *CORE_PAYLOADS, "test_tool_with_progress", "json_schema_2020_12_tool",
    "test_tool_with_logging", "test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums", "test_reconnection",
    "test_missing_capability", "test_streaming_elicitation", "test_logging_tool", "test_trigger_tool_change",
    "test_trigger_prompt_change", "test_custom_header",
    *(f"test_input_required_result_{s}" for s in ("elicitation", "sampling", "list_roots", "request_state",
                                                  "multiple_inputs", "multi_round", "tampered_state", "capabilities")),
    # the tasks extension's fixtures
    "greet", "slow_compute", "failing_job", "protocol_error_job", "confirm_delete", "multi_input",
    "test_tool_with_task",
}
EXPECTED_PROMPTS = ["test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource",
                    "test_prompt_with_image", "test_input_required_result_prompt"]


@pytest.fixture(scope="module")
def app() -> truecall.Server:
    spec = importlib.util.spec_from_file_location("truecall_conformance_fixture", FIXTURE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        server = module.app
        assert isinstance(server, truecall.Server)
        yield server.start()  # (these tests call it directly: serving would start it)
        server.db.close()
    finally:
        sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def me(app: truecall.Server) -> truecall.Principal:
    assert app.local_principal == truecall.Principal("conformance", "conformance", frozenset())
    return app.local_principal


class RecordingPeer:
    """Stands in for the engine's peer: records what a tool sends, answers by key, else asks for input."""

    def __init__(self, caps: dict[str, Any] | None = None, answers: dict[str, Any] | None = None,
                 version: str = "2026-07-28") -> None:
        self.client_capabilities = caps if caps is not None else {"sampling": {}, "elicitation": {}, "roots": {}}
        self.version = version
        self.answers = answers or {}
        self.requests: list[tuple[str, dict[str, Any], str]] = []
        self.progress_calls: list[tuple[float, float, float | None, str | None]] = []
        self.logs: list[tuple[str, Any]] = []

    async def request(self, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
        self.requests.append((method, params, key))
        if key in self.answers:
            return self.answers[key]
        raise truecall.InputRequired({key: {"method": method, "params": params}})

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress_calls.append((time.monotonic(), progress, total, message))

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        self.logs.append((level, data))


def call(app: truecall.Server, me: truecall.Principal, name: str, arguments: Any = None,
         peer: RecordingPeer | None = None, meta: dict[str, Any] | None = None) -> truecall.ToolResult:
    kwargs: dict[str, Any] = {"meta": meta}
    if peer is not None:
        kwargs["peer"] = peer
    return asyncio.run(app.acall_tool(me, name, arguments, **kwargs))


def accept(content: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": content}


# -- listings ---------------------------------------------------------------------------


def test_server_identity(app: truecall.Server) -> None:
    assert (app.name, app.version) == ("mcp-conformance-test-server", "1.0.0")


def test_tools_listing(app: truecall.Server, me: truecall.Principal) -> None:
    tools = app.visible_tools(me)
    names = [t.name for t in tools]
    assert names[0] == "test_simple_text"
    assert set(names) == EXPECTED_TOOLS
    assert len(names) == len(set(names))
    for tool in tools:
        d = tool.definition
        assert isinstance(d.get("description"), str) and d["description"].strip(), tool.name
        assert d["inputSchema"]["type"] == "object", tool.name
        assert re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", tool.name)


def test_json_schema_2020_12_tool_is_verbatim(app: truecall.Server, me: truecall.Principal) -> None:
    tool = next(t for t in app.visible_tools(me) if t.name == "json_schema_2020_12_tool")
    assert tool.definition["inputSchema"] == SCHEMA_2020_12


def test_custom_header_tool_marks_a_string_property(app: truecall.Server, me: truecall.Principal) -> None:
    tool = next(t for t in app.visible_tools(me) if t.name == "test_custom_header")
    region = tool.definition["inputSchema"]["properties"]["region"]
    assert region == {"type": "string", "description": "Region name", "x-mcp-header": "Region"}
    assert call(app, me, "test_custom_header", {"region": "Hello"}).to_dict() == {
        "content": [{"type": "text", "text": "Region: Hello"}]}


def test_resources_listing(app: truecall.Server, me: truecall.Principal) -> None:
    resources = [r.definition for r in app.visible_resources(me)]
    assert [r["uri"] for r in resources] == ["test://static-text", "test://static-binary", "test://watched-resource"]
    assert all(r.get("name") for r in resources)
    templates = [t.definition for t in app.visible_templates(me)]
    assert templates == [{"uriTemplate": "test://template/{id}/data", "name": "template", "title": "Resource Template",
                          "description": "A resource template with parameter substitution",
                          "mimeType": "application/json"}]


def test_prompts_listing(app: truecall.Server, me: truecall.Principal) -> None:
    prompts = [p.definition for p in app.visible_prompts(me)]
    assert [p["name"] for p in prompts] == EXPECTED_PROMPTS
    for p in prompts:
        assert isinstance(p.get("description"), str) and p["description"].strip(), p["name"]
    with_args = next(p for p in prompts if p["name"] == "test_prompt_with_arguments")
    assert [(a["name"], a.get("required")) for a in with_args["arguments"]] == [("arg1", True), ("arg2", True)]


# -- core tools ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CORE_PAYLOADS))
def test_core_tool_payload(app: truecall.Server, me: truecall.Principal, name: str) -> None:
    arguments = None if name == "test_simple_text" else {}  # simple-text is called without "arguments"
    assert call(app, me, name, arguments).to_dict() == CORE_PAYLOADS[name]


def test_progress_tool_reports_three_steps(app: truecall.Server, me: truecall.Principal) -> None:
    peer = RecordingPeer()
    result = call(app, me, "test_tool_with_progress", {}, peer, meta={"progressToken": "progress-test-1"})
    assert not result.is_error and result.content[0]["type"] == "text" and result.content[0]["text"]
    assert [(p, t) for _, p, t, _ in peer.progress_calls] == [(0, 100), (50, 100), (100, 100)]
    times = [at for at, *_ in peer.progress_calls]
    assert all(b - a >= 0.04 for a, b in zip(times, times[1:]))


def test_logging_tool_logs_three_infos(app: truecall.Server, me: truecall.Principal) -> None:
    peer = RecordingPeer(version="2025-11-25")
    result = call(app, me, "test_tool_with_logging", {}, peer)
    assert not result.is_error
    assert peer.logs == [("info", "Tool execution started"), ("info", "Tool processing data"),
                         ("info", "Tool execution completed")]


# -- resources and prompts ----------------------------------------------------------------------


@pytest.mark.parametrize("uri, expected", [
    ("test://static-text", {"uri": "test://static-text", "mimeType": "text/plain",
                            "text": "This is the content of the static text resource."}),
    ("test://static-binary", {"uri": "test://static-binary", "mimeType": "image/png", "blob": IMG}),
    ("test://watched-resource", {"uri": "test://watched-resource", "mimeType": "text/plain",
                                 "text": "Watched resource content"}),
    ("test://template/123/data", {"uri": "test://template/123/data", "mimeType": "application/json",
                                  "text": "{\"id\":\"123\",\"templateTest\":true,\"data\":\"Data for ID: 123\"}"}),
])
def test_resource_contents(app: truecall.Server, me: truecall.Principal, uri: str, expected: dict[str, Any]) -> None:
    assert asyncio.run(app.read_resource(me, uri)) == [expected]


def test_unknown_resource_is_invalid_params_with_uri(app: truecall.Server, me: truecall.Principal) -> None:
    uri = "test://nonexistent-resource-for-conformance-testing"
    with pytest.raises(truecall.NotFound) as caught:
        asyncio.run(app.read_resource(me, uri))
    assert caught.value.code == -32602 and caught.value.data == {"uri": uri}


def user(content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": content}


@pytest.mark.parametrize("name, arguments, messages", [
    ("test_simple_prompt", None, [user({"type": "text", "text": "This is a simple prompt for testing."})]),
    ("test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"},
     [user({"type": "text", "text": "Prompt with arguments: arg1='testValue1', arg2='testValue2'"})]),
    ("test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"}, [
        user({"type": "resource", "resource": {"uri": "test://example-resource", "mimeType": "text/plain",
                                               "text": "Embedded resource content for testing."}}),
        user({"type": "text", "text": "Please process the embedded resource above."}),
    ]),
    ("test_prompt_with_image", None, [
        user({"type": "image", "data": IMG, "mimeType": "image/png"}),
        user({"type": "text", "text": "Please analyze the image above."}),
    ]),
])
def test_prompt_messages(app: truecall.Server, me: truecall.Principal, name: str, arguments: Any,
                         messages: list[dict[str, Any]]) -> None:
    assert asyncio.run(app.get_prompt(me, name, arguments))["messages"] == messages


def test_prompt_argument_completion(app: truecall.Server, me: truecall.Principal) -> None:
    values = app.complete(me, {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                          {"name": "arg1", "value": "test"})
    assert values and all(v.startswith("test") for v in values)


# -- what the client-facing tools ask for ------------------------------------------------------


def test_missing_capability_needs_sampling(app: truecall.Server, me: truecall.Principal) -> None:
    with pytest.raises(truecall.MissingCapability) as caught:
        call(app, me, "test_missing_capability", {}, RecordingPeer(caps={}))
    assert caught.value.code == -32021
    assert caught.value.data == {"requiredCapabilities": {"sampling": {}}}
    assert call(app, me, "test_missing_capability", {}, RecordingPeer()).to_dict() == {
        "content": [{"type": "text", "text": "Success"}]}


def test_sampling_tool_sends_the_prompt(app: truecall.Server, me: truecall.Principal) -> None:
    answer = {"role": "assistant", "content": {"type": "text", "text": "This is a test response from the client"},
              "model": "test-model", "stopReason": "endTurn"}
    peer = RecordingPeer(answers={"sample-1": answer}, version="2025-11-25")
    result = call(app, me, "test_sampling", {"prompt": "Test prompt for sampling"}, peer)
    assert peer.requests == [("sampling/createMessage", {"messages": [
        {"role": "user", "content": {"type": "text", "text": "Test prompt for sampling"}}], "maxTokens": 100},
        "sample-1")]
    assert result.to_dict() == {"content": [{"type": "text", "text": "LLM response: This is a test response from "
                                                                      "the client"}]}


def test_sep1034_defaults_form(app: truecall.Server, me: truecall.Principal) -> None:
    peer = RecordingPeer(version="2025-11-25")
    with pytest.raises(truecall.InputRequired):
        call(app, me, "test_elicitation_sep1034_defaults", {}, peer)
    (method, params, _), = peer.requests
    assert method == "elicitation/create"
    assert params["message"] == "Please review and update the form fields with defaults"
    props = params["requestedSchema"]["properties"]
    assert {k: (v["type"], v["default"]) for k, v in props.items()} == {
        "name": ("string", "John Doe"), "age": ("integer", 30), "score": ("number", 95.5),
        "status": ("string", "active"), "verified": ("boolean", True)}
    assert props["status"]["enum"] == ["active", "inactive", "pending"]
    assert params["requestedSchema"]["required"] == []


def test_mrtr_elicitation_round_trip(app: truecall.Server, me: truecall.Principal) -> None:
    with pytest.raises(truecall.InputRequired) as need:
        call(app, me, "test_input_required_result_elicitation", {}, RecordingPeer())
    assert list(need.value.requests) == ["user_name"]
    assert need.value.requests["user_name"]["params"]["requestedSchema"] == {
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    peer = RecordingPeer(answers={"user_name": accept({"name": "Alice"})})
    assert call(app, me, "test_input_required_result_elicitation", {}, peer).content[0]["text"] == "Hello, Alice!"


def test_mrtr_multiple_inputs_in_one_round(app: truecall.Server, me: truecall.Principal) -> None:
    with pytest.raises(truecall.InputRequired) as need:
        call(app, me, "test_input_required_result_multiple_inputs", {}, RecordingPeer())
    methods = {k: v["method"] for k, v in need.value.requests.items()}
    assert methods == {"user_name": "elicitation/create", "greeting": "sampling/createMessage",
                       "client_roots": "roots/list"}
    assert need.value.requests["greeting"]["params"]["maxTokens"] == 50


def test_mrtr_request_state_tool_says_state_ok(app: truecall.Server, me: truecall.Principal) -> None:
    peer = RecordingPeer(answers={"confirm": accept({"ok": True})})
    assert "state-ok" in call(app, me, "test_input_required_result_request_state", {}, peer).content[0]["text"]


def test_mrtr_capabilities_asks_only_what_was_declared(app: truecall.Server, me: truecall.Principal) -> None:
    with pytest.raises(truecall.InputRequired) as need:
        call(app, me, "test_input_required_result_capabilities", {}, RecordingPeer(caps={"sampling": {}}))
    assert need.value.requests
    assert {v["method"] for v in need.value.requests.values()} == {"sampling/createMessage"}
