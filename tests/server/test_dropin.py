"""FastMCP's surface on truecall's server (issue 26): each case a ported FastMCP or ``MCPServer``
file ran into, in-process.  (Over the wire, with the official client: tests/interop/test_fastmcp_dropin.py.)"""

import asyncio
import json
from contextlib import asynccontextmanager
from datetime import date, datetime
from typing import Annotated, Any, TypedDict

import pytest
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field

import truecall
from truecall import Context, FastMCP, Image, MCPServer, RegistrationError, SettingError, ToolResult


def call(server: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = asyncio.run(server.acall_tool(server.local_user(), name, arguments))
    return result.to_dict()


def definition(server: Any, name: str) -> dict[str, Any]:
    return server.registry.tools[name].definition


def test_the_fastmcp_names_are_truecalls_own() -> None:
    assert FastMCP is truecall.Server and MCPServer is truecall.Server and Context is truecall.ToolContext


def test_a_server_needs_no_name_and_takes_fastmcps_settings() -> None:
    server = FastMCP(instructions="hi", host="127.0.0.1", port=9, dependencies=["x"], log_level="INFO")
    assert server.name == "test_dropin" and server.instructions == "hi" and server.settings["port"] == 9
    assert callable(server.run)


def test_a_setting_that_cannot_work_fails_at_construction_naming_it() -> None:
    with pytest.raises(SettingError, match=r"Server\(auth=\.\.\.\) is FastMCP's and not supported"):
        FastMCP("x", auth=object())
    with pytest.raises(TypeError, match="'colour'"):
        FastMCP("x", colour="red")


def test_run_refuses_the_sse_transport_naming_its_replacement() -> None:
    with pytest.raises(SettingError, match="transport='http'"):
        FastMCP("x").run(transport="sse")


def test_a_resource_uri_with_variables_is_a_template() -> None:
    server = FastMCP("t").start()

    @server.resource("item://{item_id}")
    def item(item_id: str) -> str:
        """One item."""
        return f"item {item_id}"

    assert [t.uri_template for t in server.registry.templates] == ["item://{item_id}"]
    contents = asyncio.run(server.read_resource(server.local_user(), "item://7"))
    assert contents == [{"uri": "item://7", "text": "item 7"}]


def test_a_resource_returning_data_sends_its_json_not_malformed_contents() -> None:
    server = FastMCP("t").start()

    @server.resource("data://config")
    def config() -> dict[str, Any]:
        return {"debug": True}

    @server.resource("data://list")
    def listing() -> list[str]:
        return ["a", "b"]

    user = server.local_user()
    assert asyncio.run(server.read_resource(user, "data://config")) == [
        {"uri": "data://config", "mimeType": "application/json", "text": '{"debug":true}'}]
    assert asyncio.run(server.read_resource(user, "data://list"))[0]["text"] == '["a","b"]'


def test_a_prompt_without_a_docstring_registers_without_a_description() -> None:
    server = FastMCP("t").start()

    @server.prompt
    def review(code: str) -> str:
        return f"Review {code}"

    assert review.definition == {"name": "review", "arguments": [{"name": "code", "required": True}]}
    got = asyncio.run(server.get_prompt(server.local_user(), "review", {"code": "x"}))
    assert "description" not in got and got["messages"][0]["content"]["text"] == "Review x"


def test_pydantic_field_defaults_are_defaults_with_their_descriptions() -> None:
    server = FastMCP("t").start()

    @server.tool
    def greet(name: str = Field(description="Who"), title: str = Field(description="A title", default=""),
              times: Annotated[int, Field(default=2, ge=1, description="How often")] = 2,
              tags: list[str] = Field(default_factory=list)) -> str:
        """Greet."""
        return f"{title}{name}x{times}{tags}"

    schema = definition(server, "greet")["inputSchema"]
    assert schema["required"] == ["name"]
    assert schema["properties"]["title"] == {"description": "A title", "type": "string", "default": ""}
    assert schema["properties"]["times"] == {"description": "How often", "type": "integer", "minimum": 1,
                                             "default": 2}
    assert call(server, "greet", {"name": "Ada"})["structuredContent"] == {"result": "Adax2[]"}
    assert call(server, "greet", {"name": "Ada", "times": 0})["isError"] is True


def test_a_model_with_aliases_is_sent_by_its_aliases() -> None:
    server = FastMCP("t").start()

    class Person(BaseModel):
        model_config = ConfigDict(populate_by_name=True)
        full_name: str = Field(alias="fullName")

    @server.tool
    def who() -> Person:
        """Who."""
        return Person(full_name="Ada")

    assert call(server, "who", {})["structuredContent"] == {"fullName": "Ada"}


def test_str_and_primitive_returns_are_published_as_fastmcp_does() -> None:
    server = FastMCP("t").start()

    @server.tool
    def say() -> str:
        """Say."""
        return "hi"

    @server.tool
    def two() -> int:
        """Two."""
        return 2

    @server.tool
    def when() -> datetime:
        """When."""
        return datetime(2020, 1, 2, 3, 4, 5)

    assert definition(server, "say")["outputSchema"] == {
        "type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}
    assert call(server, "say", {}) == {"content": [{"type": "text", "text": "hi"}], "structuredContent": {"result": "hi"}}
    assert call(server, "two", {})["content"] == [{"type": "text", "text": "2"}]
    assert definition(server, "when")["outputSchema"]["properties"]["result"] == {"format": "date-time",
                                                                                  "type": "string"}
    assert call(server, "when", {})["content"][0]["text"] == "2020-01-02T03:04:05"


def test_call_tool_result_passes_through_with_its_meta_and_is_not_a_data_model() -> None:
    server = FastMCP("t").start()

    class Echo(BaseModel):
        text: str

    @server.tool
    def direct() -> CallToolResult:
        """Direct."""
        return CallToolResult(content=[TextContent(type="text", text="d")], _meta={"k": 1})

    @server.tool
    def validated() -> Annotated[CallToolResult, Echo]:
        """Validated."""
        return CallToolResult(content=[TextContent(type="text", text="v")], structuredContent={"text": "v"})

    assert "outputSchema" not in definition(server, "direct")
    assert call(server, "direct", {}) == {"content": [{"type": "text", "text": "d"}], "_meta": {"k": 1}}
    assert definition(server, "validated")["outputSchema"]["required"] == ["text"]
    assert call(server, "validated", {})["structuredContent"] == {"text": "v"}


def test_a_truecall_tool_result_carries_meta() -> None:
    assert ToolResult([], meta={"ui": 1}).to_dict() == {"content": [], "_meta": {"ui": 1}}


def test_an_image_return_is_an_image_block() -> None:
    server = FastMCP("t").start()

    @server.tool
    def pixel() -> Image:
        """Pixel."""
        return Image(data=b"\x89PNG", format="png")

    assert "outputSchema" not in definition(server, "pixel")
    assert call(server, "pixel", {})["content"] == [{"type": "image", "data": "iVBORw==", "mimeType": "image/png"}]


def test_the_lifespan_context_is_what_lifespan_yielded_while_serving() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(server: Any) -> Any:
        events.append("start")
        yield {"db": "inventory"}
        events.append("stop")

    server = FastMCP("t", lifespan=lifespan).start()

    @server.tool
    def db(ctx: Context) -> str:
        """Which db."""
        return ctx.request_context.lifespan_context["db"]

    async def main() -> dict[str, Any]:
        await server.start_lifespan()
        try:
            return (await server.acall_tool(server.local_user(), "db", {})).to_dict()
        finally:
            await server.stop_lifespan()

    assert asyncio.run(main())["structuredContent"] == {"result": "inventory"}
    assert events == ["start", "stop"] and server.lifespan_context is None


def test_closed_input_schemas_stay_with_an_opt_out() -> None:
    closed, open_ = FastMCP("c").start(), FastMCP("o", extra_arguments="ignore").start()
    for server in (closed, open_):
        @server.tool
        def add(a: int) -> int:
            """Add."""
            return a

    assert definition(closed, "add")["inputSchema"]["additionalProperties"] is False
    assert call(closed, "add", {"a": 1, "b": 2})["structuredContent"]["error"]["kind"] == "invalid_input"
    assert "additionalProperties" not in definition(open_, "add")["inputSchema"]
    assert call(open_, "add", {"a": 1, "b": 2})["structuredContent"] == {"result": 1}
    with pytest.raises(SettingError, match="extra_arguments"):
        FastMCP("x", extra_arguments="maybe")


def test_mistakes_that_cannot_work_still_fail_at_registration_naming_the_function() -> None:
    server = FastMCP("t")
    with pytest.raises(RegistrationError, match=r"tool 'nodoc' \(function .*nodoc\): needs a description"):
        @server.tool
        def nodoc(a: int) -> int:
            return a
    with pytest.raises(RegistrationError, match=r"resource template 'item'.*\{other\}"):
        @server.resource("item://{other}")
        def item(item_id: str) -> str:
            return item_id


def test_the_context_logs_at_every_level_and_reports_progress() -> None:
    sent: list[tuple[str, Any]] = []

    class Peer:
        client_capabilities: dict[str, Any] = {}
        version = None

        async def request(self, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
            raise AssertionError

        async def progress(self, progress: float, total: float | None, message: str | None) -> None:
            sent.append(("progress", (progress, total, message)))

        async def log(self, level: str, data: Any, logger: str | None) -> None:
            sent.append((level, data))

    ctx = truecall.ToolContext(truecall.Principal("a", "b", frozenset()), None, None, Peer())  # type: ignore[arg-type]

    async def main() -> None:
        await ctx.debug("d")
        await ctx.info("i")
        await ctx.warning("w")
        await ctx.error("e", extra={"n": 1})
        await ctx.log("fastmcp order", level="notice")
        await ctx.log("info", "truecall order")
        await ctx.report_progress(1, 2, "half")

        assert await ctx.get_state("k") is None
        await ctx.set_state("k", 1)
        assert await ctx.get_state("k") == 1

    asyncio.run(main())
    assert sent == [("debug", "d"), ("info", "i"), ("warning", "w"), ("error", {"msg": "e", "extra": {"n": 1}}),
                    ("notice", "fastmcp order"), ("info", "truecall order"), ("progress", (1, 2, "half"))]
    assert ctx.session_id is None and ctx.transport is None


def test_elicit_with_a_response_type_answers_action_and_data() -> None:
    asked: list[dict[str, Any]] = []
    answers = iter([{"action": "accept", "content": {"value": "Ada"}},
                    {"action": "accept", "content": {"value": "b"}},
                    {"action": "decline"},
                    {"action": "accept", "content": {}}])

    class Peer:
        client_capabilities: dict[str, Any] = {"elicitation": {}}
        version = "2025-06-18"

        async def request(self, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
            asked.append(params["requestedSchema"])
            return next(answers)

    ctx = truecall.ToolContext(truecall.Principal("a", "b", frozenset()), None, None, Peer())  # type: ignore[arg-type]

    async def main() -> list[Any]:
        return [await ctx.elicit("Name?", response_type=str), await ctx.elicit("Pick", response_type=["a", "b"]),
                await ctx.elicit("Age?", int), await ctx.elicit("Go on?")]

    name, pick, age, go = asyncio.run(main())
    assert (name.action, name.data) == ("accept", "Ada") and pick.data == "b"
    assert age.action == "decline" and age.data is None and go.action == "accept" and go.data is None
    assert asked[0] == {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
    assert asked[1]["properties"]["value"] == {"type": "string", "enum": ["a", "b"]}
    assert asked[3] == {"type": "object", "properties": {}}


def test_a_module_that_parses_argv_at_import_gets_its_own(tmp_path: Any, monkeypatch: Any) -> None:
    app = tmp_path / "argv_app.py"
    app.write_text("import argparse, sys\nSEEN = list(sys.argv)\nargparse.ArgumentParser().parse_args()\n"
                   "from truecall import FastMCP\nmcp = FastMCP('argv')\n")
    monkeypatch.setattr("sys.argv", ["truecall", "serve", f"{app}:mcp", "--http", "--port", "8123"])
    from truecall.cli.serving import load_app

    server = load_app(f"{app}:mcp")
    assert server.name == "argv"
    import sys

    assert sys.modules["_truecall_app_argv_app"].SEEN == [str(app)]
    assert sys.argv[1] == "serve"


def test_fastmcps_tool_result_passes_through_with_its_meta() -> None:
    from fastmcp.tools import ToolResult as FastMCPToolResult

    server = FastMCP("t").start()

    @server.tool
    def echo() -> FastMCPToolResult:
        """Echo."""
        return FastMCPToolResult(content="said", structured_content={"said": True}, meta={"at": 1})

    assert "outputSchema" not in definition(server, "echo")
    assert call(server, "echo", {}) == {"content": [{"type": "text", "text": "said"}],
                                        "structuredContent": {"said": True}, "_meta": {"at": 1}}


class Profile:
    name: str
    email: "str | None" = None

    def __init__(self, name: str, email: "str | None" = None) -> None:
        self.name, self.email = name, email


class Opaque:
    def __init__(self, setting: str) -> None:
        self.setting = setting


def test_a_plain_class_as_the_return_type() -> None:
    server = FastMCP("t").start()

    @server.tool
    def profile() -> Profile:
        """With annotated attributes: an object schema."""
        return Profile("Ada")

    @server.tool
    def opaque() -> Opaque:
        """Without: no schema, its attributes as JSON text."""
        return Opaque("x")

    schema = definition(server, "profile")["outputSchema"]
    assert schema["required"] == ["name"] and set(schema["properties"]) == {"name", "email"}
    assert call(server, "profile", {})["structuredContent"] == {"name": "Ada", "email": None}
    assert "outputSchema" not in definition(server, "opaque")
    assert call(server, "opaque", {}) == {"content": [{"type": "text", "text": '{"setting":"x"}'}]}


def test_a_completion_handler_answers_for_prompts() -> None:
    from mcp.types import Completion

    server = FastMCP("t").start()

    @server.prompt
    def review(language: str) -> str:
        return language

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Completion:
        return Completion(values=[v for v in ("python", "perl") if v.startswith(argument.value)])

    found = server.complete(server.local_user(), {"type": "ref/prompt", "name": "review"},
                            {"name": "language", "value": "py"})
    assert asyncio.run(found) == ["python"]  # type: ignore[arg-type]


def test_the_sdks_url_elicitation_required_error_is_the_32042_protocol_error() -> None:
    from mcp.shared.exceptions import UrlElicitationRequiredError
    from mcp.types import ElicitRequestURLParams

    from truecall.errors import UrlElicitationRequired

    server = FastMCP("t").start()

    @server.tool
    def connect() -> str:
        """Needs the user to authorise first."""
        raise UrlElicitationRequiredError([ElicitRequestURLParams(mode="url", message="Authorise",
                                                                  url="https://example.com/a", elicitation_id="e1")])

    with pytest.raises(UrlElicitationRequired) as raised:
        call(server, "connect", {})
    assert raised.value.to_error()["code"] == -32042
    assert raised.value.to_error()["data"]["elicitations"][0]["elicitationId"] == "e1"


class Event(TypedDict):
    at: datetime
    day: "date | None"


def test_datetime_fields_keep_their_format_inside_classes_too() -> None:
    server = FastMCP("t").start()

    @server.tool
    def event() -> Event:
        """An event."""
        return {"at": datetime(2020, 1, 2), "day": None}

    props = definition(server, "event")["outputSchema"]["properties"]
    assert props["at"] == {"type": "string", "format": "date-time"}
    assert props["day"]["anyOf"][0] == {"type": "string", "format": "date"}
    assert call(server, "event", {})["structuredContent"] == {"at": "2020-01-02T00:00:00", "day": None}


def test_an_in_process_client_runs_the_lifespan_while_connected() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(server: Any) -> Any:
        events.append("start")
        yield {"db": "memory"}
        events.append("stop")

    server = FastMCP("t", lifespan=lifespan)

    @server.tool
    def db(ctx: Context) -> str:
        """Which db."""
        return ctx.lifespan_context["db"]

    async def main() -> Any:
        async with truecall.Client(server) as client:
            return await client.call("db", {})

    assert asyncio.run(main()).result["structuredContent"] == {"result": "memory"}
    assert events == ["start", "stop"]
