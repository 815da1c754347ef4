"""The tool on FastMCP 4 (``fastmcp`` 4.2.3).

    python fastmcp_server.py stdio
    python fastmcp_server.py http --port N [--json]

Runs in bench/.venv-peers.  Served by FastMCP's own runners (``run`` for stdio,
``run_http_async`` for Streamable HTTP with uvicorn on httptools + uvloop, as
truecall is); only the start-up banner is turned off.
"""

import sys
from typing import Annotated

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from mcp_types import TextContent
from pydantic import Field

import _tool

mcp = FastMCP("bench-fastmcp")


@mcp.tool(name=_tool.NAME, description=_tool.DESCRIPTION, output_schema=_tool.OUTPUT_SCHEMA)
def incident_search(
    service: Annotated[str, Field(min_length=1, max_length=128, description="Service name, e.g. payments")],
) -> ToolResult:
    text, structured = _tool.search(service)
    return ToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def main() -> None:
    mode, port, json_response = _tool.parse_args(sys.argv)
    if mode == "stdio":
        mcp.run(transport="stdio", show_banner=False)
    else:
        mcp.run(transport="http", host="127.0.0.1", port=port, json_response=json_response, show_banner=False,
                log_level="WARNING", uvicorn_config={"http": "httptools", "loop": "uvloop", "access_log": False})


if __name__ == "__main__":
    main()
