"""The replica app plus two tools that say which worker process served them (``truecall serve --workers``).

- ``whoami`` answers the serving process's pid at once: a test opens connections until it holds one
  to each worker (a keep-alive connection stays with the worker that accepted it).
- ``pause`` sleeps ``seconds`` inline (no task) and then answers the pid: calls in flight while a
  graceful stop begins.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from replica_app import build as build_replica_app
from truecall.incidents.app import READ


def build() -> Any:
    server = build_replica_app()

    @server.tool("whoami", description="The pid of the worker process serving this call.",
                 input_schema={"type": "object", "properties": {}, "additionalProperties": False}, scopes={READ})
    async def whoami(ctx: Any) -> Any:
        return {"pid": os.getpid()}

    @server.tool("pause", description="Sleeps for the given seconds, then answers the serving pid.",
                 input_schema={"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0,
                                                                            "maximum": 60}},
                               "additionalProperties": False}, scopes={READ})
    async def pause(ctx: Any, seconds: float = 0.0) -> Any:
        await asyncio.sleep(seconds)
        return {"pid": os.getpid()}

    return server
