"""The official ``mcp`` 2.3 low-level server (``mcp.server.Server``) with the shared tools."""

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.shared.exceptions import NoBackChannelError

import _common

TOOLS = [
    types.Tool(name="search", description="Count incidents", output_schema=_common.OUTPUT_SCHEMA,
               input_schema={"type": "object", "properties": {"service": {"type": "string"}},
                             "required": ["service"]}),
    types.Tool(name="fail", description="Always a tool error", input_schema={"type": "object"}),
    types.Tool(name="ask", description="Ask the user for a severity and a reason", input_schema={"type": "object"}),
    types.Tool(name="submit", description="Submit a job (the seed's accident: says accepted, nothing to check)",
               input_schema={"type": "object", "properties": {"language": {"type": "string"}},
                             "required": ["language"]}),
    types.Tool(name="sync", description="Sync (a success flag over a failure text)", input_schema={"type": "object"}),
]
FORM = {"type": "object", "properties": {"severity": {"type": "string"}, "reason": {"type": "string"}},
        "required": ["severity", "reason"]}
MESSAGE = "Escalate? Choose a severity and give a reason."


def said(answer):
    if answer.action == "accept":
        return f"the user chose {answer.content['severity']}: {answer.content['reason']}"
    return answer.action


def reply(value):
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params):
    args = params.arguments or {}
    if params.name == "search":
        if "service" not in args:  # the low-level server validates nothing: the tool says so itself
            return types.CallToolResult(content=[types.TextContent(type="text", text="service is required")],
                                        is_error=True)
        text, structured = _common.search(args["service"])
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=structured)
    if params.name == "fail":
        return types.CallToolResult(content=[types.TextContent(type="text", text="upstream down")], is_error=True)
    if params.name == "submit":
        return reply(_common.submit(args.get("language", "en")))
    if params.name == "sync":
        return reply(_common.SYNC_FAILED)
    if params.name == "ask":
        # 2026-07-28: ask with an input_required result and read the answer from the retry;
        # the handshake era: a server-initiated elicitation/create on the request's stream.
        answer = (params.input_responses or {}).get("q")
        if answer is not None:
            return reply(said(answer))
        try:
            return reply(said(await ctx.session.elicit_form(MESSAGE, FORM, related_request_id=ctx.request_id)))
        except NoBackChannelError:
            return types.InputRequiredResult(input_requests={"q": types.ElicitRequest(
                params=types.ElicitRequestFormParams(mode="form", message=MESSAGE, requested_schema=FORM))},
                request_state="ask-1")
    raise ValueError(f"Unknown tool: {params.name}")


server = Server("peer-mcp-lowlevel", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def run_stdio():
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    kind, port = _common.mode()
    if kind == "stdio":
        anyio.run(run_stdio)
    else:
        _common.serve_asgi(server.streamable_http_app(host="127.0.0.1"), port)
