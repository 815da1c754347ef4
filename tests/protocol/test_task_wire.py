"""Tasks on the wire, both shapes, validated against the official schemas.

- The user-input run of examples/02_user_input.py, made real with the tasks extension (2026-07-28): a
  task waits in ``input_required`` with an elicitation form in ``inputRequests``; an answer missing the
  required field keeps it waiting with the message examples/02 prints; a valid one moves it on; the
  taskId never changes.
- 2025-11-25 core tasks: the ``task`` request parameter, ``tasks/get|result|list|cancel``,
  ``notifications/tasks/status`` and ``execution.taskSupport``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

import mcp_schema
from truecall import Principal, Server, ToolResult, text
from truecall.protocol import jsonrpc
from truecall.protocol.engine import Engine, Session

EXT = "io.modelcontextprotocol/tasks"
MODERN, LEGACY = "2026-07-28", "2025-11-25"
ME = Principal("newton@acme", "acme", frozenset({"ops"}))
OTHER = Principal("grace@globex", "globex", frozenset({"ops"}))
SERVICE_FORM = {"type": "object", "properties": {"service": {"type": "string", "minLength": 1}},
                "required": ["service"]}


class Outbox:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        self.messages.append(message)


def make_server(tmp_path) -> Server:
    server = Server("task-wire", db=str(tmp_path / "t.db"))

    @server.tool(description="Diagnose a service; asks which one inside the task", scopes={"ops"},
                 output_schema={"type": "object", "properties": {"service": {"type": "string"}},
                                "required": ["service"]},
                 task_support="required")
    async def diagnose(ctx) -> ToolResult:
        await ctx.accept_as_task("diagnosis accepted")
        answer = await ctx.elicit("Which service should be diagnosed?", SERVICE_FORM, key="service")
        if not answer.accepted:
            from truecall import tool_error

            return tool_error("declined", "no service given; nothing was diagnosed")
        return ToolResult([text(f"diagnosed {answer.content['service']}")], {"service": answer.content["service"]})

    @server.tool(description="A slow job that runs as a task when it can", scopes={"ops"}, task_support="optional")
    async def slow(ctx, seconds: float = 0.05) -> ToolResult:
        await ctx.accept_as_task()
        await asyncio.sleep(seconds)
        return ToolResult([text(f"slept {seconds}")])

    return server


def modern_meta(ext: bool = True) -> dict[str, Any]:
    caps: dict[str, Any] = {"elicitation": {}}
    if ext:
        caps["extensions"] = {EXT: {}}
    return {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": caps}


async def call(engine: Engine, principal: Principal, id: int, method: str, params: dict[str, Any],
               **kw: Any) -> dict[str, Any]:
    message = jsonrpc.decode(orjson.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    response = await engine.handle(message, principal, **kw)
    assert response is not None and response["id"] == id
    return response


def ext_check(result: dict[str, Any], definition: str) -> None:
    mcp_schema.check_result(result, definition, "ext-tasks")


async def wait_status(engine: Engine, task_id: str, status: str, params: dict[str, Any]) -> dict[str, Any]:
    for i in range(200):
        got = (await call(engine, ME, 1000 + i, "tasks/get", {"taskId": task_id, **params}))["result"]
        if got["status"] == status:
            return got
        await asyncio.sleep(0.01)
    raise AssertionError(f"task never reached {status}: {got}")


def test_the_examples_02_input_flow_on_the_wire(tmp_path) -> None:
    async def run() -> None:
        engine = Engine(make_server(tmp_path)).start()
        meta = {"_meta": modern_meta()}
        created = await call(engine, ME, 1, "tools/call", {"name": "diagnose", **meta})
        mcp_schema.check(created, MODERN)
        result = created["result"]
        assert result["resultType"] == "task" and result["status"] == "working"
        ext_check(result, "CreateTaskResult")
        task_id = result["taskId"]

        waiting = await wait_status(engine, task_id, "input_required", meta)
        ext_check(waiting, "GetTaskResult")
        request = waiting["inputRequests"]["service"]
        assert request["method"] == "elicitation/create"
        assert request["params"]["requestedSchema"] == SERVICE_FORM
        assert waiting["taskId"] == task_id

        for bad in ({}, {"service": ""}):  # missing, then empty: refused, still waiting
            ack = await call(engine, ME, 2, "tasks/update",
                             {"taskId": task_id, "inputResponses": {"service": {"action": "accept", "content": bad}},
                              **meta})
            assert ack["result"] == {"resultType": "complete", "_meta": ack["result"]["_meta"]}
            still = (await call(engine, ME, 3, "tasks/get", {"taskId": task_id, **meta}))["result"]
            assert still["status"] == "input_required"
            assert still["statusMessage"] == "required task input is missing"
            assert still["taskId"] == task_id and "service" in still["inputRequests"]

        await call(engine, ME, 4, "tasks/update",
                   {"taskId": task_id, "inputResponses": {"service": {"action": "accept",
                                                                      "content": {"service": "payments"}}}, **meta})
        done = await wait_status(engine, task_id, "completed", meta)
        ext_check(done, "GetTaskResult")
        assert done["taskId"] == task_id
        assert done["result"]["structuredContent"] == {"service": "payments"}
        mcp_schema.check_result(done["result"], "CallToolResult", MODERN)

        # Another principal asking about this task hears exactly what an unknown id gets.
        foreign = await call(engine, OTHER, 5, "tasks/get", {"taskId": task_id, **meta})
        unknown = await call(engine, OTHER, 6, "tasks/get", {"taskId": "t-no-such-task", **meta})
        assert foreign["error"] == unknown["error"] and foreign["error"]["code"] == -32602

    asyncio.run(run())


def test_a_client_without_the_extension_cannot_start_a_task_only_tool(tmp_path) -> None:
    async def run() -> None:
        engine = Engine(make_server(tmp_path)).start()
        refused = await call(engine, ME, 1, "tools/call", {"name": "diagnose", "_meta": modern_meta(ext=False)})
        mcp_schema.check(refused, MODERN)
        assert refused["error"]["code"] == -32021
        assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {EXT: {}}}}
        plain = await call(engine, ME, 2, "tools/call", {"name": "slow", "_meta": modern_meta(ext=False)})
        assert plain["result"]["resultType"] == "complete" and plain["result"]["content"][0]["text"] == "slept 0.05"

    asyncio.run(run())


def legacy_session(engine: Engine, outbox: Outbox) -> Session:
    session = Session(principal=ME)
    session.stream = outbox
    return session


def test_core_tasks_of_2025_11_25(tmp_path) -> None:
    async def run() -> None:
        engine = Engine(make_server(tmp_path)).start()
        outbox = Outbox()
        session = legacy_session(engine, outbox)
        feed = asyncio.get_running_loop().create_task(engine.session_feed(session))
        init = await call(engine, ME, 1, "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                                        "clientInfo": {"name": "t", "version": "1"}},
                          session=session)
        mcp_schema.check(init, LEGACY, "InitializeResult")
        assert init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"] == {}
        await engine.handle(jsonrpc.decode(b'{"jsonrpc":"2.0","method":"notifications/initialized"}'), ME,
                            session=session)

        listed = await call(engine, ME, 2, "tools/list", {}, session=session)
        mcp_schema.check(listed, LEGACY, "ListToolsResult")
        support = {t["name"]: t.get("execution", {}).get("taskSupport") for t in listed["result"]["tools"]}
        assert support == {"diagnose": "required", "slow": "optional"}

        required = await call(engine, ME, 3, "tools/call", {"name": "diagnose"}, session=session)
        assert required["error"]["code"] == -32601  # the 2025-11-25 rule for a task-required tool

        created = await call(engine, ME, 4, "tools/call", {"name": "slow", "arguments": {"seconds": 0.05},
                                                            "task": {"ttl": 60000}}, session=session)
        mcp_schema.check(created, LEGACY, "CreateTaskResult")
        task = created["result"]["task"]
        assert task["status"] == "working" and task["ttl"] == 60000

        got = await call(engine, ME, 5, "tasks/get", {"taskId": task["taskId"]}, session=session)
        mcp_schema.check(got, LEGACY, "GetTaskResult")

        payload = await call(engine, ME, 6, "tasks/result", {"taskId": task["taskId"]}, session=session)
        mcp_schema.check(payload, LEGACY, "CallToolResult")
        assert payload["result"]["content"][0]["text"] == "slept 0.05"
        assert payload["result"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}

        listing = await call(engine, ME, 7, "tasks/list", {}, session=session)
        mcp_schema.check(listing, LEGACY, "ListTasksResult")
        assert [t["taskId"] for t in listing["result"]["tasks"]] == [task["taskId"]]
        assert listing["result"]["tasks"][0]["status"] == "completed"

        terminal = await call(engine, ME, 8, "tasks/cancel", {"taskId": task["taskId"]}, session=session)
        assert terminal["error"]["code"] == -32602  # a finished task cannot be cancelled (2025-11-25)

        long = (await call(engine, ME, 9, "tools/call", {"name": "slow", "arguments": {"seconds": 30},
                                                          "task": {}}, session=session))["result"]["task"]
        cancelled = await call(engine, ME, 10, "tasks/cancel", {"taskId": long["taskId"]}, session=session)
        mcp_schema.check(cancelled, LEGACY, "CancelTaskResult")
        assert cancelled["result"]["status"] == "cancelled"

        await asyncio.sleep(0.05)
        statuses = [m for m in outbox.messages if m.get("method") == "notifications/tasks/status"]
        assert statuses, outbox.messages
        for note in statuses:
            mcp_schema.check(note, LEGACY, "TaskStatusNotification")
        assert {n["params"]["status"] for n in statuses} >= {"completed", "cancelled"}
        feed.cancel()

    asyncio.run(run())


@pytest.mark.parametrize("answer", [{"action": "decline"}, {"action": "cancel"}])
def test_declined_task_input_never_reads_as_consent(tmp_path, answer) -> None:
    async def run() -> None:
        engine = Engine(make_server(tmp_path)).start()
        meta = {"_meta": modern_meta()}
        task_id = (await call(engine, ME, 1, "tools/call", {"name": "diagnose", **meta}))["result"]["taskId"]
        await wait_status(engine, task_id, "input_required", meta)
        await call(engine, ME, 2, "tasks/update", {"taskId": task_id, "inputResponses": {"service": answer}, **meta})
        done = await wait_status(engine, task_id, "completed", meta)
        assert done["result"]["isError"] is True
        assert done["result"]["structuredContent"]["error"]["kind"] == "declined"

    asyncio.run(run())


def _legacy_init(engine: Engine, session: Session, caps: dict[str, Any]):
    async def run() -> None:
        init = await call(engine, ME, 1, "initialize", {"protocolVersion": LEGACY, "capabilities": caps,
                                                        "clientInfo": {"name": "t", "version": "1"}},
                          session=session)
        assert init["result"]["protocolVersion"] == LEGACY
        await engine.handle(jsonrpc.decode(b'{"jsonrpc":"2.0","method":"notifications/initialized"}'), ME,
                            session=session)
    return run()


async def _diagnosis_waiting_for_input(engine: Engine, session: Session) -> str:
    """A 2025-11-25 ``diagnose`` task, created on ``session`` and now ``input_required``: its id."""
    created = await call(engine, ME, 2, "tools/call", {"name": "diagnose", "task": {"ttl": 60000}}, session=session)
    mcp_schema.check(created, LEGACY, "CreateTaskResult")
    task_id = created["result"]["task"]["taskId"]
    for i in range(200):
        got = (await call(engine, ME, 100 + i, "tasks/get", {"taskId": task_id}, session=session))["result"]
        if got["status"] != "working":
            break
        await asyncio.sleep(0.01)
    assert got["status"] == "input_required", got
    return task_id


async def _asked(outbox: Outbox) -> dict[str, Any]:
    """The one ``elicitation/create`` a ``tasks/result`` sent on ``outbox`` (waited for)."""
    for _ in range(500):
        asked = [m for m in outbox.messages if m.get("method") == "elicitation/create"]
        if asked:
            break
        await asyncio.sleep(0.01)
    (question,) = asked
    return question


@pytest.mark.parametrize("caps", [{"elicitation": {"form": {}}}, {"elicitation": {}}])
def test_a_2025_11_25_task_asks_after_acceptance_through_tasks_result(tmp_path, caps) -> None:
    """The question goes to the client as ``elicitation/create`` on the ``tasks/result`` stream, with
    the related-task ``_meta``; the answer moves the task on (2025-11-25 "Input Required Status")."""
    async def run() -> None:
        engine = Engine(make_server(tmp_path)).start()
        session = Session(principal=ME)
        await _legacy_init(engine, session, caps)
        task_id = await _diagnosis_waiting_for_input(engine, session)
        outbox = Outbox()
        result = asyncio.ensure_future(call(engine, ME, 3, "tasks/result", {"taskId": task_id}, session=session,
                                            outbox=outbox))
        question = await _asked(outbox)
        mcp_schema.check(orjson.loads(orjson.dumps(question)), LEGACY)
        assert question["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        assert question["params"]["requestedSchema"] == SERVICE_FORM
        reply = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept",
                                                                   "content": {"service": "payments"}}}
        assert await engine.handle(jsonrpc.decode(orjson.dumps(reply)), ME, session=session) is None
        final = await asyncio.wait_for(result, 5)
        mcp_schema.check(final, LEGACY, "CallToolResult")
        assert final["result"]["structuredContent"] == {"service": "payments"}
        assert final["result"].get("isError") is not True

    asyncio.run(run())


def test_a_2025_11_25_task_call_answered_at_once_is_still_a_task(tmp_path) -> None:
    """params.task asks for a CreateTaskResult: invalid arguments (or a tool that never accepts its
    work) give a task already finished with that result; tasks/result returns exactly the plain
    call's answer; a task-forbidden tool is refused with -32601 and does not run."""
    async def run() -> None:
        server = make_server(tmp_path)
        ran: list[str] = []

        @server.tool(description="Answers without accepting", scopes={"ops"}, task_support="optional")
        async def quick(ctx, n: int) -> ToolResult:
            ran.append("quick")
            return ToolResult([text(f"n={n}")])

        @server.tool(description="Never a task", scopes={"ops"})
        def plain(ctx) -> str:
            ran.append("plain")
            return "ran"

        engine = Engine(server).start()
        session = Session(principal=ME)
        await _legacy_init(engine, session, {})
        for i, (name, args, kind) in enumerate([("slow", {"seconds": "soon"}, "invalid_input"),
                                                ("diagnose", [], None), ("quick", {}, "invalid_input"),
                                                ("quick", {"n": 2}, None)]):
            created = await call(engine, ME, 10 + i, "tools/call", {"name": name, "arguments": args,
                                                                   "task": {"ttl": 60000}}, session=session)
            if args == []:  # not an object: a protocol error, no task
                assert created["error"]["code"] == -32602
                continue
            mcp_schema.check(created, LEGACY, "CreateTaskResult")
            task = created["result"]["task"]
            got = await call(engine, ME, 30 + i, "tasks/get", {"taskId": task["taskId"]}, session=session)
            mcp_schema.check(got, LEGACY, "GetTaskResult")
            assert got["result"]["status"] == ("failed" if kind else "completed")
            payload = await call(engine, ME, 50 + i, "tasks/result", {"taskId": task["taskId"]}, session=session)
            mcp_schema.check(payload, LEGACY, "CallToolResult")
            if kind:
                assert payload["result"]["isError"] is True
                assert payload["result"]["structuredContent"]["error"]["kind"] == kind
            else:
                assert payload["result"]["content"] == [{"type": "text", "text": "n=2"}]
        assert ran == ["quick"]
        refused = await call(engine, ME, 70, "tools/call", {"name": "plain", "task": {}}, session=session)
        assert refused["error"]["code"] == -32601 and ran == ["quick"]
        plain_call = await call(engine, ME, 71, "tools/call", {"name": "plain"}, session=session)
        assert plain_call["result"]["content"][0]["text"] == "ran"

    asyncio.run(run())


def test_a_task_question_relayed_on_a_session_that_ends_stays_open(tmp_path) -> None:
    """The session a task's question was relayed on ends (``DELETE``, idle expiry) before the client
    answered: nobody answered, so nothing is recorded for the user — the task still waits in
    ``input_required`` and a later ``tasks/result`` asks again.  (An ended session is not the user's
    "cancel": that would have ended the task as declined.)"""
    async def run() -> None:
        engine = Engine(make_server(tmp_path)).start()
        session = Session(principal=ME)
        await _legacy_init(engine, session, {"elicitation": {}})
        task_id = await _diagnosis_waiting_for_input(engine, session)
        outbox = Outbox()
        result = asyncio.ensure_future(call(engine, ME, 3, "tasks/result", {"taskId": task_id}, session=session,
                                            outbox=outbox))
        await _asked(outbox)
        session.close()
        await asyncio.sleep(0.2)  # what the relay does with the ended session, done
        result.cancel()
        later = Session(principal=ME)
        await _legacy_init(engine, later, {"elicitation": {}})
        got = (await call(engine, ME, 300, "tasks/get", {"taskId": task_id}, session=later))["result"]
        assert got["status"] == "input_required", got
        again = Outbox()
        result = asyncio.ensure_future(call(engine, ME, 301, "tasks/result", {"taskId": task_id}, session=later,
                                            outbox=again))
        question = await _asked(again)
        reply = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept",
                                                                   "content": {"service": "payments"}}}
        assert await engine.handle(jsonrpc.decode(orjson.dumps(reply)), ME, session=later) is None
        final = await asyncio.wait_for(result, 5)
        assert final["result"]["structuredContent"] == {"service": "payments"}

    asyncio.run(run())
