"""A clean FastMCP 4.2.3 server (``truecall probe`` must find nothing but FastMCP's own unknown-tool fold).

    python fastmcp_clean.py http PORT | stdio
"""

import sys

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

mcp = FastMCP("fastmcp-clean")
RO = {"readOnlyHint": True}
COUNTS = {"payments": 2, "checkout": 1}


@mcp.tool(description="Open incidents of a service", annotations=RO)
def search(service: str, limit: int = 10) -> dict:
    return {"service": service, "count": COUNTS.get(service, 0)}


@mcp.tool(description="Always a tool error", annotations=RO)
def down() -> str:
    raise ToolError("the status page is unavailable; try again later")


@mcp.tool(description="Writes: never called without --allow-writes")
def escalate(incident: str) -> str:
    raise RuntimeError("a write tool was called by a read-only probe")


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False, log_level="WARNING")
    else:
        mcp.run(transport="stdio", show_banner=False)
