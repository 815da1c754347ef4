"""Every result is checked against the MCP schema of its era before it leaves (issue 26): a
malformed one is withheld, answered ``internal``, and the reason is logged."""

import asyncio
import logging
import subprocess
import sys
from typing import Any

import pytest

from truecall import FastMCP, InternalError, ToolResult, image, text
from truecall.server._wire_check import tool_result_problems

from _paths import ROOT


def call(server: Any, name: str, version: str | None = None) -> dict[str, Any]:
    return asyncio.run(server.acall_tool(server.local_user(), name, {})).to_dict()


def test_a_tool_result_whose_content_is_a_bare_string_is_withheld_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    server = FastMCP("w").start()

    @server.tool
    def bare() -> ToolResult:
        """Content written as a string, not a list of blocks."""
        return ToolResult("just text")  # type: ignore[arg-type]

    with caplog.at_level(logging.WARNING, logger="truecall.server.tools"):
        result = call(server, "bare")
    assert result["isError"] is True and result["structuredContent"]["error"]["kind"] == "internal"
    assert "not a valid MCP result" in result["content"][0]["text"]
    assert any("tool bare: a result the MCP schema refuses was withheld" in r.getMessage() for r in caplog.records)


def test_a_block_of_an_unknown_type_is_withheld() -> None:
    server = FastMCP("w").start()

    @server.tool
    def odd() -> ToolResult:
        """A block the schema does not know."""
        return ToolResult([{"type": "video", "data": "x"}])

    assert call(server, "odd")["structuredContent"]["error"]["kind"] == "internal"


def test_well_formed_results_of_every_shape_pass() -> None:
    ok = [ToolResult([text("a")]), ToolResult([text("a")], {"k": 1}), ToolResult([], is_error=True),
          ToolResult([image(b"\x89PNG", "image/png")], meta={"ui": {"x": 1}})]
    for result in ok:
        for version in (None, "2025-06-18", "2025-11-25", "2026-07-28"):
            assert tool_result_problems(result, version) == [], (result, version)


def test_a_malformed_resource_is_withheld_as_an_internal_error(caplog: pytest.LogCaptureFixture) -> None:
    server = FastMCP("w").start()

    @server.resource("x://bad")
    def bad() -> dict[str, Any]:
        """Contents whose text is not a string."""
        return {"uri": "x://bad", "text": 5}

    with caplog.at_level(logging.WARNING, logger="truecall.server.tools"), pytest.raises(InternalError):
        asyncio.run(server.read_resource(server.local_user(), "x://bad"))
    assert any("resource bad: a result the MCP schema refuses" in r.getMessage() for r in caplog.records)


def test_a_malformed_prompt_is_withheld_as_an_internal_error() -> None:
    server = FastMCP("w").start()

    @server.prompt
    def robot() -> list[dict[str, Any]]:
        return [{"role": "robot", "content": {"type": "text", "text": "beep"}}]

    with pytest.raises(InternalError):
        asyncio.run(server.get_prompt(server.local_user(), "robot", {}))


def test_prompts_written_with_the_sdks_message_types_are_sent_as_messages() -> None:
    from mcp.server.mcpserver.prompts import base

    server = FastMCP("w").start()

    @server.prompt
    def chat(code: str) -> list[base.Message]:
        return [base.UserMessage("Review:"), base.UserMessage(code), base.AssistantMessage("Sure.")]

    got = asyncio.run(server.get_prompt(server.local_user(), "chat", {"code": "x"}))
    assert [m["role"] for m in got["messages"]] == ["user", "user", "assistant"]
    assert got["messages"][1]["content"] == {"type": "text", "text": "x"}


def test_the_packaged_definitions_are_what_the_vendored_schemas_say() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "vendor_result_schemas.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
