"""The incident desk plus two plain task tools, served by several replicas in tests and benchmarks.

``truecall serve tests/replica_app.py:build --http`` with ``TRUECALL_DB`` naming a shared
database.  Every run of a task tool records (task id, tool, pid) in ``replica_runs``, so a test
can prove which process executed a task, and that it executed once.

- ``survey`` accepts its work as a task, then asks one question (``input_required`` until answered).
- ``nap`` accepts its work as a task, then sleeps ``seconds``.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from truecall import ErrorKind, tool_error
from truecall.incidents import build_desk
from truecall.incidents.app import WRITE

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string", "title": "Name", "maxLength": 100}},
             "required": ["name"]}

RUNS_MIGRATIONS = [(
    "replica-runs-1",
    "CREATE TABLE replica_runs (task_id TEXT, tool TEXT NOT NULL, pid INTEGER NOT NULL, at REAL NOT NULL)",
)]


def build() -> Any:
    server = build_desk()
    server.db.migrate(RUNS_MIGRATIONS)

    def ran(ctx: Any) -> None:
        task_id = ctx.task.task_id if ctx.task is not None else None
        server.db.execute("INSERT INTO replica_runs VALUES (?, ?, ?, ?)",
                          (task_id, ctx.tool.name, os.getpid(), time.time()))

    @server.tool("survey", description="Accepts the work as a task, then asks for a name and returns it.",
                 input_schema={"type": "object", "properties": {}, "additionalProperties": False},
                 scopes={WRITE}, task_support="optional", forms=[("What is your name?", NAME_FORM)])
    async def survey(ctx: Any) -> Any:
        await ctx.accept_as_task("accepted; a question follows")
        ran(ctx)
        answer = await ctx.elicit("What is your name?", NAME_FORM, key="name")
        if not answer.accepted:
            return tool_error(ErrorKind.DECLINED, f"no name given ({answer.action.value})")
        return {"name": answer.content["name"], "pid": os.getpid()}

    @server.tool("nap", description="Accepts the work as a task, then sleeps for the given seconds.",
                 input_schema={"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0,
                                                                            "maximum": 3600}},
                               "additionalProperties": False},
                 scopes={WRITE}, task_support="optional")
    async def nap(ctx: Any, seconds: float = 0.0) -> Any:
        await ctx.accept_as_task("accepted; sleeping")
        ran(ctx)
        await asyncio.sleep(seconds)
        return {"slept": seconds, "pid": os.getpid()}

    return server
