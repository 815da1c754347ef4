"""An app with one tool, resource, prompt for every outcome a request can have (public API only).

Served by tests/audit/test_audit_one_record.py over stdio and Streamable HTTP: each request it answers
must leave exactly one final audit record.
"""

from __future__ import annotations

import asyncio
import os

from truecall import RateLimit, Server
from truecall.results import ErrorKind, tool_error


class ArmedLimit(RateLimit):
    """Never limits, except the one call after ``arm_limit`` (so one process serves every cell)."""

    armed = False

    def take(self, tenant: str, subject: str) -> float:
        if self.armed:
            self.armed = False
            return 1500.0
        return 0.0


LIMIT = ArmedLimit(1000.0, 1000)
app = Server("one-record", "0.1.0", db=os.environ["TRUECALL_DB"], rate_limit=LIMIT)


@app.tool("ok", description="Answers.")
def ok(ctx) -> str:
    return "ok"


@app.tool("says_no", description="A tool error.")
def says_no(ctx):
    return tool_error(ErrorKind.INVALID_INPUT, "not like that")


@app.tool("admin_only", description="Needs a scope nobody here has.", scopes=("admin",))
def admin_only(ctx) -> str:
    return "secret"


@app.tool("buggy", description="A bug in the handler.")
def buggy(ctx) -> str:
    raise RuntimeError("a bug")


@app.tool("arm_limit", description="The next call is over the rate limit.")
def arm_limit(ctx) -> str:
    LIMIT.armed = True
    return "armed"


@app.tool("needs_task", description="Runs as a task only.", task_support="required")
async def needs_task(ctx) -> str:
    await ctx.accept_as_task("accepted")
    await asyncio.sleep(0.2)
    return "done"


@app.tool("slow_task", description="Runs as a task only, for a while (long enough to be cancelled).",
          task_support="required")
async def slow_task(ctx) -> str:
    await ctx.accept_as_task("accepted")
    await asyncio.sleep(30)
    return "done"


@app.tool("maybe_task", description="May run as a task, answers at once.", task_support="optional")
def maybe_task(ctx) -> str:
    return "at once"


@app.tool("never_task", description="Never runs as a task.", task_support="forbidden")
def never_task(ctx) -> str:
    return "plain"


@app.resource("note://ok")
def note_ok() -> str:
    return "hello"


@app.resource("note://admin", scopes=("admin",))
def note_admin() -> str:
    return "secret"


@app.resource("note://buggy")
def note_buggy() -> str:
    raise RuntimeError("a bug")


@app.resource_template("note://tenant/{tenant}")
def note_of_tenant(ctx, uri, tenant):
    return f"{tenant}'s note"  # (no check of its own: another tenant's URI never gets here)


@app.resource_template("note://admin/{id}", scopes=("admin",))
def admin_note(id):  # noqa: A002 - the template's variable is named id
    return "secret"


@app.prompt("greet", description="A greeting.")
def greet(ctx) -> str:
    return "hello"


@app.prompt("admin_prompt", description="Needs a scope nobody here has.", scopes=("admin",))
def admin_prompt(ctx) -> str:
    return "secret"


@app.prompt("buggy_prompt", description="A bug in the handler.")
def buggy_prompt(ctx) -> str:
    raise RuntimeError("a bug")
