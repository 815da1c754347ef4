"""The tool on the official SDK's low-level server (``mcp`` 2.3, ``mcp.server.Server``).

    python mcp_lowlevel.py stdio
    python mcp_lowlevel.py http --port N [--json]

Runs in bench/.venv-peers.  HTTP: the SDK's own Streamable HTTP app (stateful
sessions for the handshake era; 2026-07-28 requests are served statelessly by
the same endpoint), SSE responses unless ``--json``.
"""

import sys

import anyio
import mcp_types as types
from mcp.server import Server

import _tool

TOOL = types.Tool(name=_tool.NAME, description=_tool.DESCRIPTION, input_schema=_tool.INPUT_SCHEMA,
                  output_schema=_tool.OUTPUT_SCHEMA)


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[TOOL])


async def call_tool(ctx, params):
    if params.name != _tool.NAME:
        raise ValueError(f"unknown tool {params.name}")
    text, structured = _tool.search((params.arguments or {}).get("service", ""))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)


server = Server("bench-mcp-lowlevel", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def run_stdio() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main() -> None:
    mode, port, json_response = _tool.parse_args(sys.argv)
    if mode == "stdio":
        anyio.run(run_stdio)
    else:
        _tool.uvicorn_run(server.streamable_http_app(json_response=json_response, host="127.0.0.1"), port)


if __name__ == "__main__":
    main()
