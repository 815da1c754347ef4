"""Every outcome of a tool call is recorded exactly once, by the pipeline's one audit point.

One scenario per outcome kind: make the call on a fresh server, then read the whole audit trail
and compare the kinds (and outcomes) it holds with the one record that outcome has.  A second
record (a stage that also wrote its own) or none (a path that forgot) fails here, whichever
stage the call ended in.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from truecall import (InsufficientScope, InvalidCredential, InvalidParams, Principal, RateLimit, Server,
                      StaticTokens, TaskRequired, TenantMismatch, ToolContext, ToolError, ToolResult, UnknownTool)
from truecall.tasks import Task

ALICE = Principal("alice@acme", "acme", frozenset({"read"}))
TOKENS = StaticTokens.from_plain({"tok": ALICE})
OUT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def make_server(tmp_path: Path, **options: Any) -> Server:
    server = Server("outcomes", db=str(tmp_path / "audit.db"), tokens=TOKENS, **options).start()

    @server.tool(description="Counts.")
    def ok(n: int) -> ToolResult:
        return ToolResult([], {"n": n})

    @server.tool(description="Says no.")
    def no(n: int) -> ToolResult:
        raise ToolError("not that one", field="n")

    @server.tool(description="A bug.")
    def boom(n: int) -> ToolResult:
        raise RuntimeError("bug")

    @server.tool(description="The database is locked.", annotations={"readOnlyHint": True})
    def locked(n: int) -> ToolResult:
        exc = sqlite3.OperationalError("database is locked")
        exc.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]  # (as sqlite3 sets it)
        raise exc

    @server.tool(description="Not a result.")
    def junk(n: int) -> Any:
        return object()

    @server.tool(description="Breaks its contract.", output_schema=OUT)
    def liar(n: int) -> ToolResult:
        return ToolResult([], {"n": "many"})

    @server.tool(description="Asks for a password.")
    async def phish(ctx: ToolContext, n: int) -> ToolResult:
        await ctx.elicit("Your password?", {"type": "object", "properties": {"password": {"type": "string"}}})
        return ToolResult([], {"n": n})

    @server.tool(description="Asks; nobody can answer in-process.")
    async def ask(ctx: ToolContext, n: int) -> ToolResult:
        await ctx.elicit("Which one?", {"type": "object", "properties": {"pick": {"type": "string"}},
                                         "required": ["pick"]})
        return ToolResult([], {"n": n})

    @server.tool(description="Hangs.")
    async def hang(n: int) -> ToolResult:
        await asyncio.sleep(60)
        return ToolResult([], {"n": n})

    @server.tool(description="A protocol error.")
    def protocol(n: int) -> ToolResult:
        raise InvalidParams("no")

    @server.tool(description="Accepts as a task.", task_support="optional")
    async def later(ctx: ToolContext, n: int) -> ToolResult:
        await ctx.accept_as_task("accepted")
        return ToolResult([], {"n": n})

    @server.tool(description="Only as a task.", task_support="required")
    async def only_task(ctx: ToolContext, n: int) -> ToolResult:
        await ctx.accept_as_task()
        return ToolResult([], {"n": n})

    @server.tool(description="Needs a scope.", scopes={"admin"})
    def admin(n: int) -> ToolResult:
        return ToolResult([], {"n": n})

    return server


def trail(server: Server) -> list[tuple[str, str | None]]:
    """Every record, oldest first, as (kind, outcome)."""
    return [(r.kind, r.outcome) for r in reversed(server.events.query(limit=1000))]


RESULTS = [  # (tool, arguments, the records of that call)
    ("ok", {"n": 1}, [("tool.called", "ok")]),
    ("no", {"n": 1}, [("tool.called", "invalid_input")]),
    ("ok", {"n": "one"}, [("tool.rejected", "invalid_input")]),
    ("ok", {}, [("tool.rejected", "invalid_input")]),
    ("ok", [1], [("tool.rejected", "invalid_input")]),
    ("boom", {"n": 1}, [("tool.failed", "internal")]),
    ("locked", {"n": 1}, [("tool.failed", "dependency_unavailable")]),
    ("junk", {"n": 1}, [("tool.failed", "internal")]),
    ("liar", {"n": 1}, [("tool.failed", "internal")]),
    ("ask", {"n": 1}, [("tool.called", "invalid_input")]),
    # a red line held at run time: its own record, then the call's
    ("phish", {"n": 1}, [("tool.form_refused", "refused"), ("tool.called", "declined")]),
]


@pytest.mark.parametrize(("tool", "arguments", "records"), RESULTS, ids=[f"{t}-{i}" for i, (t, _, _) in
                                                                         enumerate(RESULTS)])
def test_each_answered_outcome_leaves_exactly_its_records(tmp_path: Path, tool: str, arguments: Any,
                                                          records: list[tuple[str, str]]) -> None:
    server = make_server(tmp_path)
    result = asyncio.run(server.acall_tool(ALICE, tool, arguments))
    assert isinstance(result, ToolResult)
    assert trail(server) == records


DENIED = [  # (token, tool, tenant, the error, reason)
    ("bad", "ok", None, InvalidCredential, "invalid_credential"),
    ("tok", "ok", "globex", TenantMismatch, "tenant_mismatch"),
    ("tok", "missing", None, UnknownTool, "unknown_tool"),
    ("tok", "admin", None, InsufficientScope, "insufficient_scope"),
    ("tok", "only_task", None, TaskRequired, "task_required"),
]


@pytest.mark.parametrize(("token", "tool", "tenant", "error", "reason"), DENIED, ids=[d[4] for d in DENIED])
def test_each_refusal_leaves_exactly_one_record(tmp_path: Path, token: str, tool: str, tenant: str | None,
                                                 error: type[Exception], reason: str) -> None:
    server = make_server(tmp_path)
    with pytest.raises(error):
        server.call_tool(tool, {"n": 1}, token, tenant)
    assert trail(server) == [("tool.denied", "denied")]
    assert server.events.query()[0].fields["reason"] == reason


def test_a_rate_limited_call_leaves_exactly_one_record(tmp_path: Path) -> None:
    server = make_server(tmp_path, rate_limit=RateLimit(0.001, 1))
    server.call_tool("ok", {"n": 1}, "tok")
    before = trail(server)
    result = server.call_tool("ok", {"n": 1}, "tok")
    assert result.is_error and result.error is not None and result.error["kind"] == "rate_limited"
    assert trail(server)[len(before):] == [("tool.rate_limited", "rate_limited")]


def test_a_cancelled_call_leaves_exactly_one_record(tmp_path: Path) -> None:
    server = make_server(tmp_path)

    async def main() -> None:
        call = asyncio.ensure_future(server.acall_tool(ALICE, "hang", {"n": 1}))
        await asyncio.sleep(0.05)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(main())
    assert trail(server) == [("tool.cancelled", "cancelled")]


def test_an_accepted_call_records_its_acceptance_once_and_its_end_once(tmp_path: Path) -> None:
    server = make_server(tmp_path)

    async def main() -> Task:
        task = await server.acall_tool(ALICE, "later", {"n": 1}, task_mode="inproc")
        assert isinstance(task, Task)
        return await server.task_runtime.wait(task.task_id, timeout=5)

    done = asyncio.run(main())
    assert done.result is not None and done.result["structuredContent"] == {"n": 1}
    assert trail(server) == [("task.created", "accepted"), ("tool.called", "ok"), ("task.completed", "ok")]


def test_a_task_capable_call_answered_at_once_is_recorded_once(tmp_path: Path) -> None:
    server = make_server(tmp_path)
    result = asyncio.run(server.acall_tool(ALICE, "ok", {"n": 1}, task_mode="inproc"))
    assert isinstance(result, ToolResult)
    assert trail(server) == [("tool.called", "ok")]


def test_a_protocol_error_from_the_tool_is_not_a_call_outcome(tmp_path: Path) -> None:
    """It goes to the engine, which answers it as a JSON-RPC error and records it there."""
    server = make_server(tmp_path)
    with pytest.raises(InvalidParams):
        asyncio.run(server.acall_tool(ALICE, "protocol", {"n": 1}))
    assert trail(server) == []
