"""A FastMCP file runs on truecall with its import line changed (issue 26, "What was seen").

``fastmcp_style_app.py`` uses, in one file, each thing that stopped a real FastMCP file: it is run
the two ways such a file is run (``python app.py``, whose last line is ``mcp.run()``, and
``truecall serve app.py:mcp``) and driven by the official ``mcp`` client in both eras; every
message the server sends is checked against the official schema of the negotiated version.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from test_interop_sdk import MODES, VERSION, Recorded, check_all

APP = Path(__file__).with_name("fastmcp_style_app.py")
LEGACY_MODE = MODES[0]


def _transport(how: str, tmp_path: Path, errlog: Any = None) -> Recorded:
    args = [str(APP)] if how == "python" else ["-m", "truecall", "serve", f"{APP}:mcp"]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(tmp_path),
                                   env={"TRUECALL_PRINCIPAL": "dev@local,local,"})
    return Recorded(stdio_client(params, errlog=errlog) if errlog is not None else stdio_client(params))


async def _answer(context: Any, params: Any) -> types.ElicitResult:
    schema = params.requested_schema
    if "value" in schema.get("properties", {}):
        return types.ElicitResult(action="accept", content={"value": "Ada"})
    return types.ElicitResult(action="accept", content={"name": "Bo", "age": 7})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["python", "serve"])
def test_a_fastmcp_file_ported_by_its_import_line_serves_every_feature(how: str, mode: str, tmp_path: Path) -> None:
    recorded = _transport(how, tmp_path)
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    async def main() -> None:
        async with Client(recorded, mode=mode, read_timeout_seconds=30, elicitation_callback=_answer,
                          logging_callback=on_log, log_level="debug") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            # pydantic Field as a default, and inside Annotated: optional, described, defaulted
            greet = tools["greet"].input_schema
            assert greet["required"] == ["name"]
            assert greet["properties"]["name"]["description"] == "Who to greet"
            assert greet["properties"]["times"] == {"description": "How often", "type": "integer", "default": 2}
            assert (await client.call_tool("greet", {"name": "x"})).structured_content == {"result": "hi x hi x"}
            # str returns publish {"result": ...} as FastMCP does; the text block is the string
            assert tools["greet"].output_schema == {"type": "object", "properties": {"result": {"type": "string"}},
                                                    "required": ["result"]}
            # CallToolResult passes through with its _meta; it is not a data model
            assert tools["direct"].output_schema is None
            direct = await client.call_tool("direct", {})
            assert direct.content[0].text == "direct" and direct.meta and direct.meta.get("trace") == "abc"
            # an Image return is an image block
            pixel = await client.call_tool("pixel", {})
            assert isinstance(pixel.content[0], types.ImageContent) and pixel.content[0].mime_type == "image/png"
            assert base64.b64decode(pixel.content[0].data).startswith(b"\x89PNG")
            # the lifespan context
            assert (await client.call_tool("which_db", {})).content[0].text == "inventory"
            # elicit with response_type=str and with a model: .action / .data
            assert (await client.call_tool("ask_name", {})).content[0].text == "hello Ada"
            assert (await client.call_tool("ask_person", {})).content[0].text == "Bo is 7"
            # ctx.info/debug/warning/error reach the client as log messages
            await client.call_tool("chatty", {"text": "t"}, progress_callback=_ignore)
            # a template given to @resource, a prompt without a docstring
            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["item://{item_id}"]
            read = await client.read_resource("item://7")
            assert read.contents[0].text == "item 7"
            prompt = await client.get_prompt("review", {"code": "x = 1"})
            assert prompt.messages[0].content.text == "Review this: x = 1"
            if mode == LEGACY_MODE:  # per-session state needs a session
                session = (await client.call_tool("remember", {"key": "k", "value": "v"})).content[0].text
                assert session != "no session"
                assert (await client.call_tool("recall", {"key": "k"})).content[0].text == "v"

    anyio.run(main)
    levels = [getattr(p, "level", None) for p in logs]
    assert {"debug", "info", "warning", "error"} <= set(levels)
    assert check_all(recorded.messages, VERSION[mode]) > 0


def test_a_url_question_that_differs_every_round_is_recognised_not_asked_until_the_client_gives_up(
        tmp_path: Path) -> None:
    """2026-07-28: the answer to a question counts only if the question reads the same in the round
    that was answered; a tool whose URL has a fresh uuid each round was asked again and again until
    the client gave up after 10 rounds, and the server said nothing.  A question that changed once
    is asked again (the world may have changed: tests/test_redlines.py); one that changes twice
    running ends the call: an ``internal`` result, and a line in the server's log naming the tool."""
    stderr = (tmp_path / "stderr.txt").open("w+")
    recorded = _transport("serve", tmp_path, stderr)
    rounds: list[str] = []

    async def accept(context: Any, params: Any) -> types.ElicitResult:
        rounds.append(params.url)
        return types.ElicitResult(action="accept")

    async def main() -> Any:
        async with Client(recorded, mode=MODES[1], read_timeout_seconds=30, elicitation_callback=accept) as client:
            return await client.call_tool("pay", {})

    result = anyio.run(main)
    assert len(rounds) == 2 and rounds[0] != rounds[1]
    assert result.is_error is True and result.structured_content["error"]["kind"] == "internal"
    assert "in other words" in result.content[0].text
    stderr.seek(0)
    assert "tool pay: the question 'elicit-1' (elicitation/create) read differently" in stderr.read()


async def _ignore(progress: float, total: float | None, message: str | None) -> None:
    return None
