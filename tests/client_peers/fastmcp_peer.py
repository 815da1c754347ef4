"""FastMCP 4.2.3 with the shared tools."""

from dataclasses import dataclass

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import ToolResult
from mcp_types import TextContent

import _common

mcp = FastMCP("peer-fastmcp")


@mcp.tool(description="Count incidents", output_schema=_common.OUTPUT_SCHEMA)
def search(service: str) -> ToolResult:
    text, structured = _common.search(service)
    return ToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


@mcp.tool(description="Always a tool error")
def fail() -> str:
    raise ToolError("upstream down")


@mcp.tool(description="Submit a job (the seed's accident: says accepted, nothing to check)", output_schema=None)
def submit(language: str) -> str:
    return _common.submit(language)


@mcp.tool(description="Sync (a success flag over a failure text)", output_schema=None)
def sync() -> str:
    return _common.SYNC_FAILED


@dataclass
class Escalation:
    severity: str
    reason: str


@mcp.tool(description="Ask the user for a severity and a reason")
async def ask(ctx: Context) -> str:
    answer = await ctx.elicit("Escalate? Choose a severity and give a reason.", response_type=Escalation)
    if answer.action == "accept":
        return f"the user chose {answer.data.severity}: {answer.data.reason}"
    return answer.action


if __name__ == "__main__":
    kind, port = _common.mode()
    if kind == "stdio":
        mcp.run(transport="stdio", show_banner=False)
    else:
        mcp.run(transport="http", host="127.0.0.1", port=port, show_banner=False, log_level="WARNING")
