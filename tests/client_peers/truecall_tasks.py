"""truecall's own server with one task tool: the client interop's "killed while waiting on a task"
case in both eras (the ``mcp`` 2.3 and FastMCP 4.2.3 servers have no tasks to accept).

    truecall serve tests/client_peers/truecall_tasks.py:server [--http --port N]
"""

import asyncio
import os

from truecall import Server

server = Server("peer-truecall-tasks", "1.0.0", db=os.environ.get("TRUECALL_DB", "peer-tasks.db"))


@server.tool("research", description="Accepted at once, then works for a minute.", task_support="optional")
async def research(ctx) -> str:
    await ctx.accept_as_task("accepted")
    await asyncio.sleep(60)
    return "finished"
