"""The official ``mcp`` 2.3 high-level server (``mcp.server.MCPServer``) with the shared tools."""

from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

import _common


class Found(BaseModel):
    service: str
    count: int


class Escalation(BaseModel):
    severity: str = Field(description="P1, P2 or P3")
    reason: str


mcp = MCPServer("peer-mcp-highlevel")


@mcp.tool(description="Count incidents")
def search(service: str) -> Annotated[CallToolResult, Found]:
    text, structured = _common.search(service)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


@mcp.tool(description="Always a tool error")
def fail() -> str:
    raise ToolError("upstream down")


@mcp.tool(description="Submit a job (the seed's accident: says accepted, nothing to check)", structured_output=False)
def submit(language: str) -> str:
    return _common.submit(language)


@mcp.tool(description="Sync (a success flag over a failure text)", structured_output=False)
def sync() -> str:
    return _common.SYNC_FAILED


@mcp.tool(description="Ask the user for a severity and a reason")
async def ask(ctx: Context) -> str:
    answer = await ctx.elicit("Escalate? Choose a severity and give a reason.", Escalation)
    if answer.action == "accept":
        return f"the user chose {answer.data.severity}: {answer.data.reason}"
    return answer.action


if __name__ == "__main__":
    kind, port = _common.mode()
    if kind == "stdio":
        mcp.run("stdio")
    else:
        _common.serve_asgi(mcp.streamable_http_app(host="127.0.0.1"), port)
