"""The tool on the official SDK's high-level server (``mcp`` 2.3, ``mcp.server.MCPServer``).

    python mcp_highlevel.py stdio
    python mcp_highlevel.py http --port N [--json]

Runs in bench/.venv-peers.  The return annotation ``Annotated[CallToolResult,
SearchResult]`` gives the tool its outputSchema and makes the SDK validate
``structuredContent`` against it, while the text block stays the same as the
other servers'.
"""

import sys
from typing import Annotated

from mcp.server import MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field

import _tool


class SearchResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service: str
    count: int = Field(ge=0)


mcp = MCPServer("bench-mcp-highlevel")


@mcp.tool(name=_tool.NAME, description=_tool.DESCRIPTION)
def incident_search(
    service: Annotated[str, Field(min_length=1, max_length=128, description="Service name, e.g. payments")],
) -> Annotated[CallToolResult, SearchResult]:
    text, structured = _tool.search(service)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def main() -> None:
    mode, port, json_response = _tool.parse_args(sys.argv)
    if mode == "stdio":
        mcp.run("stdio")
    else:
        _tool.uvicorn_run(mcp.streamable_http_app(json_response=json_response, host="127.0.0.1"), port)


if __name__ == "__main__":
    main()
