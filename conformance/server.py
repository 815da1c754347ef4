"""The conformance fixture: what ``@modelcontextprotocol/conformance`` calls, served by truecall.

Built only on the public ``truecall`` API, like any user's server.  Names, payloads
and registration order follow what the suite checks (see the conformance notes):
``test_simple_text`` is the first tool (http-header-validation calls ``tools[0]``)
and ``test://static-text`` the first resource (caching reads ``resources[0]``).

Tools that ask the client for something (``ctx.elicit``, ``ctx.sample``,
``ctx.roots``) read as straight-line code: on the handshake wire (2025-x) the
engine sends the request and waits; on the stateless wire (2026-07-28) a missing
answer becomes an ``InputRequiredResult`` with a sealed ``requestState`` and the
tool is replayed on the retry with the answers, so the ``key=`` names below are
the ``inputRequests`` keys the suite sees.

The tasks-extension tools (greet, slow_compute, ...) are not here yet.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any, Awaitable

import truecall
from truecall import ElicitationUnavailable, ToolResult, audio, embedded_resource, image, text

__all__ = ["app", "IMG", "WAV"]

#: A 1x1 PNG and a minimal WAV, base64 (the reference fixture's constants).
IMG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

#: ``inputSchema`` of a tool without arguments.
NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}

JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

app = truecall.Server("mcp-conformance-test-server", "1.0.0", db=":memory:")
# No credentials: the HTTP transport serves an unauthenticated loopback server as this principal.
app.local_principal = truecall.Principal("conformance", "conformance", frozenset())


# -- small pure helpers ------------------------------------------------------------


def _form(**properties: dict[str, Any]) -> dict[str, Any]:
    """A flat elicitation form where every field is required."""
    return {"type": "object", "properties": properties, "required": list(properties)}


def _user(prompt: str) -> list[dict[str, Any]]:
    """One user text message, for ``ctx.sample``."""
    return [{"role": "user", "content": {"type": "text", "text": prompt}}]


def _sampled_text(result: dict[str, Any]) -> str:
    """The text of a ``sampling/createMessage`` result (content is a block or a list of blocks)."""
    content = result.get("content")
    if isinstance(content, list):
        content = next((c for c in content if isinstance(c, dict) and c.get("type") == "text"), None)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return "(no text)"


def _answer(answer: truecall.Elicitation) -> str:
    content = answer.content if answer.accepted else {}
    return f"action={answer.action.value}, content={json.dumps(content, separators=(',', ':'))}"


# -- core tools (every wire) ----------------------------------------------------------


@app.tool("test_simple_text", description="Tests simple text content response", input_schema=NO_ARGS)
def test_simple_text(ctx) -> ToolResult:
    return ToolResult([text("This is a simple text response for testing.")])


@app.tool("test_image_content", description="Tests image content response", input_schema=NO_ARGS)
def test_image_content(ctx) -> ToolResult:
    return ToolResult([image(IMG, "image/png")])


@app.tool("test_audio_content", description="Tests audio content response", input_schema=NO_ARGS)
def test_audio_content(ctx) -> ToolResult:
    return ToolResult([audio(WAV, "audio/wav")])


@app.tool("test_embedded_resource", description="Tests embedded resource content response", input_schema=NO_ARGS)
def test_embedded_resource(ctx) -> ToolResult:
    return ToolResult([embedded_resource("test://embedded-resource", text="This is an embedded resource content.",
                                         mime_type="text/plain")])


@app.tool("test_multiple_content_types", input_schema=NO_ARGS,
          description="Tests response with multiple content types (text, image, resource)")
def test_multiple_content_types(ctx) -> ToolResult:
    return ToolResult([
        text("Multiple content types test:"),
        image(IMG, "image/png"),
        embedded_resource("test://mixed-content-resource", text='{"test":"data","value":123}',
                          mime_type="application/json"),
    ])


@app.tool("test_error_handling", description="Tests error response handling (an isError result)",
          input_schema=NO_ARGS)
def test_error_handling(ctx) -> ToolResult:
    return ToolResult([text("This tool intentionally returns an error for testing")], is_error=True)


@app.tool("test_tool_with_progress", description="Tests tool that reports progress notifications",
          input_schema=NO_ARGS)
async def test_tool_with_progress(ctx) -> ToolResult:
    for step in (0, 50, 100):
        if step:
            await asyncio.sleep(0.05)
        await ctx.progress(step, 100, f"Completed step {step} of 100")
    token = ctx.progress_token
    return ToolResult([text(f"Progress test completed (progressToken {token})" if token is not None
                            else "Progress test completed")])


@app.tool("json_schema_2020_12_tool", input_schema=JSON_SCHEMA_2020_12,
          description="Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)")
def json_schema_2020_12_tool(ctx, **arguments: Any) -> ToolResult:
    return ToolResult([text("JSON Schema 2020-12 tool called with: "
                            + json.dumps(arguments, separators=(",", ":"), sort_keys=True))])


# -- handshake-wire tools (2025-x) ------------------------------------------------------


@app.tool("test_tool_with_logging", description="Tests tool that emits log messages during execution",
          input_schema=NO_ARGS)
async def test_tool_with_logging(ctx) -> ToolResult:
    for i, message in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        if i:
            await asyncio.sleep(0.05)
        await ctx.log("info", message)
    return ToolResult([text("Tool with logging executed successfully")])


@app.tool(
    "test_sampling",
    description="Tests server-initiated sampling (LLM completion request)",
    input_schema={
        "type": "object",
        "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
        "required": ["prompt"],
    },
)
async def test_sampling(ctx, prompt: str) -> ToolResult:
    result = await ctx.sample(_user(prompt), 100)
    return ToolResult([text(f"LLM response: {_sampled_text(result)}")])


@app.tool(
    "test_elicitation",
    description="Tests server-initiated elicitation (user input request)",
    input_schema={
        "type": "object",
        "properties": {"message": {"type": "string", "description": "The message to show the user"}},
        "required": ["message"],
    },
)
async def test_elicitation(ctx, message: str) -> ToolResult:
    answer = await ctx.elicit(message, _form(
        username={"type": "string", "description": "User's response"},
        email={"type": "string", "description": "User's email address"},
    ))
    return ToolResult([text(f"User response: {_answer(answer)}")])


SEP1034_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"],
                   "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}


@app.tool("test_elicitation_sep1034_defaults", description="Tests elicitation with default values per SEP-1034",
          input_schema=NO_ARGS)
async def test_elicitation_sep1034_defaults(ctx) -> ToolResult:
    answer = await ctx.elicit("Please review and update the form fields with defaults", SEP1034_FORM)
    return ToolResult([text(f"Elicitation completed: {_answer(answer)}")])


SEP1330_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "description": "Select one option",
                           "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
            {"const": "value1", "title": "First Option"},
            {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"},
        ]},
        "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
                          "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1,
                        "maxItems": 3, "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]}},
    },
    "required": [],
}


@app.tool("test_elicitation_sep1330_enums", description="Tests elicitation with enum schema improvements per SEP-1330",
          input_schema=NO_ARGS)
async def test_elicitation_sep1330_enums(ctx) -> ToolResult:
    answer = await ctx.elicit("Please select options from the enum fields", SEP1330_FORM)
    return ToolResult([text(f"Elicitation completed: {_answer(answer)}")])


@app.tool("test_reconnection", input_schema=NO_ARGS,
          description="Tests SSE stream disconnection and client reconnection (SEP-1699)")
async def test_reconnection(ctx) -> ToolResult:
    # TODO(sse-polling): close the response stream mid-call once the HTTP transport can.
    return ToolResult([text("Reconnection test completed successfully. If you received this, the client "
                            "properly reconnected after stream closure.")])


# -- stateless-wire tools (2026-07-28) ---------------------------------------------------


@app.tool("test_missing_capability", description="Test tool requiring the client's sampling capability",
          input_schema=NO_ARGS)
def test_missing_capability(ctx) -> ToolResult:
    if "sampling" not in ctx.client_capabilities:
        raise truecall.MissingCapability(data={"requiredCapabilities": {"sampling": {}}})
    return ToolResult([text("Success")])


@app.tool("test_streaming_elicitation", description="Diagnostic tool validating response progress streams",
          input_schema=NO_ARGS)
def test_streaming_elicitation(ctx) -> ToolResult:
    return ToolResult([text("Streaming complete")])


@app.tool("test_logging_tool", description="Diagnostic logging validator tool (logs only at the requested level)",
          input_schema=NO_ARGS)
async def test_logging_tool(ctx) -> ToolResult:
    await ctx.log("info", "test_logging_tool ran")
    return ToolResult([text("Logging tool complete")])


@app.tool("test_trigger_tool_change", description="Announces a tools list change to listeners (the set is unchanged)",
          input_schema=NO_ARGS)
def test_trigger_tool_change(ctx) -> ToolResult:
    app.list_changed("tools")
    return ToolResult([text("Tool list change notification sent")])


@app.tool("test_trigger_prompt_change", input_schema=NO_ARGS,
          description="Announces a prompts list change to listeners (the set is unchanged)")
def test_trigger_prompt_change(ctx) -> ToolResult:
    app.list_changed("prompts")
    return ToolResult([text("Prompt list change notification sent")])


@app.tool(
    "test_custom_header",
    description="Echoes a region that the client also sends as the Mcp-Param-Region header",
    input_schema={
        "type": "object",
        "properties": {"region": {"type": "string", "description": "Region name", "x-mcp-header": "Region"}},
        "required": ["region"],
    },
)
def test_custom_header(ctx, region: str) -> ToolResult:
    return ToolResult([text(f"Region: {region}")])


# -- multi-round-trip input (SEP-2322) -----------------------------------------------------


@app.tool("test_input_required_result_elicitation", input_schema=NO_ARGS,
          description="MRTR: asks the user's name by elicitation, then greets them")
async def test_input_required_result_elicitation(ctx) -> ToolResult:
    answer = await ctx.elicit("What is your name?", _form(name={"type": "string"}), key="user_name")
    name = answer.content.get("name", "friend") if answer.accepted else "friend"
    return ToolResult([text(f"Hello, {name}!")])


@app.tool("test_input_required_result_sampling", input_schema=NO_ARGS,
          description="MRTR: asks the client's model a question by sampling")
async def test_input_required_result_sampling(ctx) -> ToolResult:
    result = await ctx.sample(_user("What is the capital of France?"), 100, key="capital_question")
    return ToolResult([text(f"Sampling result: {_sampled_text(result)}")])


@app.tool("test_input_required_result_list_roots", input_schema=NO_ARGS,
          description="MRTR: asks the client for its roots")
async def test_input_required_result_list_roots(ctx) -> ToolResult:
    roots = await ctx.roots(key="client_roots")
    return ToolResult([text(f"Found {len(roots)} root(s)")])


@app.tool("test_input_required_result_request_state", input_schema=NO_ARGS,
          description="MRTR: asks for a confirmation; the answer comes back with a sealed requestState")
async def test_input_required_result_request_state(ctx) -> ToolResult:
    answer = await ctx.elicit("Please confirm", _form(ok={"type": "boolean"}), key="confirm")
    if answer.confirmed("ok"):
        return ToolResult([text("state-ok: requestState validated")])
    return ToolResult([text("state-ok: requestState validated, but the user did not confirm")])


@app.tool("test_input_required_result_multiple_inputs", input_schema=NO_ARGS,
          description="MRTR: asks for a name, a sampled greeting and the client's roots in one round")
async def test_input_required_result_multiple_inputs(ctx) -> ToolResult:
    answer, greeting, roots = await ctx.gather(
        ctx.elicit("What is your name?", _form(name={"type": "string"}), key="user_name"),
        ctx.sample(_user("Generate a greeting"), 50, key="greeting"),
        ctx.roots(key="client_roots"),
    )
    name = answer.content.get("name", "friend") if answer.accepted else "friend"
    return ToolResult([text(f"Name: {name}; Greeting: {_sampled_text(greeting)}; Roots: {len(roots)}")])


@app.tool("test_input_required_result_multi_round", input_schema=NO_ARGS,
          description="MRTR: asks two questions in two rounds (name, then favorite color)")
async def test_input_required_result_multi_round(ctx) -> ToolResult:
    first = await ctx.elicit("Step 1: What is your name?", _form(name={"type": "string"}), key="step1")
    name = first.content.get("name", "friend") if first.accepted else "friend"
    second = await ctx.elicit("Step 2: What is your favorite color?", _form(color={"type": "string"}), key="step2")
    color = second.content.get("color", "no color") if second.accepted else "no color"
    return ToolResult([text(f"Multi-round complete for {name} who likes {color}")])


@app.tool("test_input_required_result_tampered_state", input_schema=NO_ARGS,
          description="MRTR: asks for a confirmation; a tampered requestState is refused")
async def test_input_required_result_tampered_state(ctx) -> ToolResult:
    answer = await ctx.elicit("Please confirm", _form(ok={"type": "boolean"}), key="confirm")
    return ToolResult([text(f"integrity-ok: state verified (confirmed={answer.confirmed('ok')})")])


@app.tool("test_input_required_result_capabilities", input_schema=NO_ARGS,
          description="MRTR: asks only through the capabilities the client declared")
async def test_input_required_result_capabilities(ctx) -> ToolResult:
    caps = ctx.client_capabilities
    asks: list[Awaitable[Any]] = []
    labels: list[str] = []
    if "elicitation" in caps:
        asks.append(ctx.elicit("Elicitation input", _form(value={"type": "string"}), key="elicit_input"))
        labels.append("elicit_input")
    if "sampling" in caps:
        asks.append(ctx.sample(_user("Sample request"), 50, key="sample_input"))
        labels.append("sample_input")
    if "roots" in caps:
        asks.append(ctx.roots(key="roots_input"))
        labels.append("roots_input")
    if not asks:
        return ToolResult([text("No supported capabilities declared")])
    await ctx.gather(*asks)
    return ToolResult([text(f"capabilities-ok: received {','.join(labels)}")])


# -- resources ------------------------------------------------------------------------------


@app.resource("test://static-text", name="static-text", title="Static Text Resource",
              description="A static text resource for testing", mime_type="text/plain")
def static_text(ctx, uri: str) -> str:
    return "This is the content of the static text resource."


@app.resource("test://static-binary", name="static-binary", title="Static Binary Resource",
              description="A static binary resource (image) for testing", mime_type="image/png")
def static_binary(ctx, uri: str) -> bytes:
    return base64.b64decode(IMG)


@app.resource("test://watched-resource", name="watched-resource", title="Watched Resource",
              description="A resource clients can subscribe to", mime_type="text/plain")
def watched_resource(ctx, uri: str) -> str:
    return "Watched resource content"


@app.resource_template("test://template/{id}/data", name="template", title="Resource Template",
                       description="A resource template with parameter substitution", mime_type="application/json")
def template_data(ctx, uri: str, id: str) -> str:  # noqa: A002 - the template's variable is named id
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":"))


# -- prompts ------------------------------------------------------------------------------------


def _say(content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": content}


@app.prompt("test_simple_prompt", title="Simple Test Prompt", description="A simple prompt without arguments")
def test_simple_prompt(ctx) -> list[dict[str, Any]]:
    return [_say(text("This is a simple prompt for testing."))]


ARG1_VALUES = ("testValue1", "testValue2", "test-default")


@app.prompt(
    "test_prompt_with_arguments",
    title="Prompt With Arguments",
    description="A prompt with required arguments",
    arguments=[
        {"name": "arg1", "description": "First test argument", "required": True},
        {"name": "arg2", "description": "Second test argument", "required": True},
    ],
    completions={"arg1": lambda prefix: [v for v in ARG1_VALUES if v.startswith(prefix)]},
)
def test_prompt_with_arguments(ctx, arg1: str, arg2: str) -> list[dict[str, Any]]:
    return [_say(text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"))]


@app.prompt(
    "test_prompt_with_embedded_resource",
    title="Prompt With Embedded Resource",
    description="A prompt that includes an embedded resource",
    arguments=[{"name": "resourceUri", "description": "URI of the resource to embed", "required": True}],
)
def test_prompt_with_embedded_resource(ctx, resourceUri: str) -> list[dict[str, Any]]:  # noqa: N803 - wire name
    return [
        _say(embedded_resource(resourceUri, text="Embedded resource content for testing.", mime_type="text/plain")),
        _say(text("Please process the embedded resource above.")),
    ]


@app.prompt("test_prompt_with_image", title="Prompt With Image", description="A prompt that includes image content")
def test_prompt_with_image(ctx) -> list[dict[str, Any]]:
    return [_say(image(IMG, "image/png")), _say(text("Please analyze the image above."))]


@app.prompt("test_input_required_result_prompt", description="MRTR: prompt that requires elicitation input")
async def test_input_required_result_prompt(ctx) -> list[dict[str, Any]]:
    try:
        answer = await ctx.elicit("What context should the prompt use?", _form(context={"type": "string"}),
                                  key="user_context")
        context = answer.content.get("context", "") if answer.accepted else ""
    except ElicitationUnavailable:
        context = ""
    return [_say(text(f"Use this context: {context}" if context else "No context was given."))]


# -- tasks extension (io.modelcontextprotocol/tasks) ----------------------------------------
# A tool accepts its work with ``await ctx.accept_as_task()``: a client that declared
# the extension gets the task handle at that point and the rest runs in the background.


@app.tool("greet", description="Greets synchronously (never a task)",
          input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
def greet(ctx, name: str) -> ToolResult:
    return ToolResult([text(f"Hello, {name}!")])


@app.tool("slow_compute", description="Computes slowly; runs as a task when the client can take one",
          input_schema={"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0, "maximum": 600},
                                                         "label": {"type": "string"}}},
          task_support="optional")
async def slow_compute(ctx, seconds: float = 1, label: str = "job") -> ToolResult:
    if seconds > 0:
        await ctx.accept_as_task(f"computing {label}")
    await asyncio.sleep(seconds)
    return ToolResult([text(f"Computed {label} in {seconds} s")])


@app.tool("failing_job", description="A task whose tool result is an error (the task still completes)",
          input_schema=NO_ARGS, task_support="required")
async def failing_job(ctx) -> ToolResult:
    await ctx.accept_as_task("starting a job that will fail")
    await asyncio.sleep(0.5)
    return truecall.tool_error("dependency_unavailable", "the job failed: its upstream was unavailable")


@app.tool("protocol_error_job", description="A task that ends with a protocol error (status failed)",
          input_schema=NO_ARGS, task_support="required")
async def protocol_error_job(ctx) -> ToolResult:
    await ctx.accept_as_task("starting a job that will hit a protocol error")
    await asyncio.sleep(0.2)
    raise truecall.InternalError("the job hit a protocol-level failure")


@app.tool("confirm_delete", description="Asks for confirmation inside a task, then deletes (nothing real)",
          input_schema={"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]},
          task_support="required")
async def confirm_delete(ctx, filename: str) -> ToolResult:
    await ctx.accept_as_task(f"deleting {filename} once confirmed")
    answer = await ctx.elicit(f"Delete {filename}?", _form(confirm={"type": "boolean"}), key="confirm_delete")
    if not answer.confirmed("confirm"):
        return truecall.tool_error("declined", f"{filename} was not deleted: not confirmed")
    return ToolResult([text(f"Deleted {filename}")])


@app.tool("multi_input", description="Asks two questions at once inside a task", input_schema=NO_ARGS,
          task_support="required")
async def multi_input(ctx) -> ToolResult:
    await ctx.accept_as_task("collecting two answers")
    first, second = await ctx.gather(
        ctx.elicit("First name?", _form(name={"type": "string"}), key="first"),
        ctx.elicit("Second name?", _form(name={"type": "string"}), key="second"),
    )
    values = [a.content.get("name", "") if a.accepted else "(declined)" for a in (first, second)]
    return ToolResult([text(f"Got {values[0]} and {values[1]}")])


@app.tool("test_tool_with_task", description="Asks for a name synchronously, then runs as a task",
          input_schema=NO_ARGS, task_support="required")
async def test_tool_with_task(ctx) -> ToolResult:
    answer = await ctx.elicit("What is your name?", _form(name={"type": "string"}), key="user_name")
    name = answer.content.get("name", "friend") if answer.accepted else "friend"
    await ctx.accept_as_task(f"greeting {name}")
    await asyncio.sleep(0.2)
    return ToolResult([text(f"Hello, {name}, from a task!")])
