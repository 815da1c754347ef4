"""A small app for the hostile-peer runs: a quick tool, and one that makes the server
announce list changes over and over (so that stream readers that never read have
something piling up).

Public truecall API only.  No tokens are configured: on loopback the transport serves
``local_principal`` anonymously.  The database path comes from ``$TRUECALL_DB``.
"""

from __future__ import annotations

import asyncio
import os

import truecall

app = truecall.Server("churn-app", "1.0.0", db=os.environ.get("TRUECALL_DB", "churn.db"), audit=False)
app.local_principal = truecall.Principal("stress@local", "local", frozenset())

_running: set[asyncio.Task] = set()


@app.tool("quick", description="Answers at once.",
          input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def quick(ctx):
    return {"ok": True}


@app.tool("churn", description="In the background, announce tools/prompts/resources list changes `count` times, "
                               "`burst` at a time, pausing `pause` seconds between bursts. Returns at once.",
          input_schema={"type": "object", "properties": {
              "count": {"type": "integer", "minimum": 1, "maximum": 10_000_000},
              "burst": {"type": "integer", "minimum": 1, "maximum": 100_000},
              "pause": {"type": "number", "minimum": 0, "maximum": 10}},
              "required": ["count"], "additionalProperties": False})
async def churn(ctx, count: int, burst: int = 200, pause: float = 0.01):
    async def run() -> None:
        sent = 0
        kinds = ("tools", "prompts", "resources")
        while sent < count:
            for _ in range(min(burst, count - sent)):
                app.list_changed(kinds[sent % 3])
                sent += 1
            await asyncio.sleep(pause)

    task = asyncio.get_running_loop().create_task(run())
    _running.add(task)
    task.add_done_callback(_running.discard)
    return {"started": count}


@app.tool("churning", description="How many churn runs are still going.",
          input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def churning(ctx):
    return {"running": len(_running), "listeners": app.changes.listeners}
