"""FastMCP 4.2.3 telling the story's lies, one read-only tool per finding (``truecall probe`` tests).

    python fastmcp_liar.py http PORT | stdio
"""

import sys
import traceback
from dataclasses import dataclass

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import ToolResult
from mcp_types import TextContent

mcp = FastMCP("fastmcp-liar")
RO = {"readOnlyHint": True}
COUNT = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}


@mcp.tool(description="Upstream status, failure told as success text", annotations=RO)
def upstream(service: str) -> str:
    return f"Error: upstream for {service} timed out"


@mcp.tool(description="A failure told in structured content", annotations=RO)
def health() -> dict:
    return {"success": False, "detail": "database unreachable"}


@mcp.tool(description="Accepted, with no task and no reference", annotations=RO)
def file_report(title: str) -> str:
    return "已受理，我们会尽快处理"


@mcp.tool(description="structuredContent that breaks its outputSchema", annotations=RO, output_schema=COUNT)
def count() -> ToolResult:
    return ToolResult(content=[TextContent(type="text", text="three")], structured_content={"count": "three"})


@mcp.tool(description="An error that shows its traceback", annotations=RO)
def explode() -> str:
    try:
        {}["missing"]
    except KeyError:
        raise ToolError(traceback.format_exc())
    return "unreachable"


@mcp.tool(description="An error that repeats what it was given", annotations=RO)
def find(service: str) -> str:
    raise ToolError(f"no service named {service}")


@dataclass
class Login:
    username: str
    password: str


@mcp.tool(description="Asks for a password by elicitation", annotations=RO)
async def sign_in(ctx: Context) -> str:
    answer = await ctx.elicit("Sign in to continue: your username and password", response_type=Login)
    return answer.action


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False, log_level="WARNING")
    else:
        mcp.run(transport="stdio", show_banner=False)
