"""One exchange (issue 27): ``Engine.serve`` takes a message and gives back a :class:`Reply` a
transport writes as it is; ``Engine.plan`` tells the transport, as data, how to carry the message.

- ``serve`` waits for the request's audit records itself, once: when it returns, the final record
  is in the table (the trail batches records per loop turn, so without that wait it would not be);
  a record that could not be committed turns the answer into an error;
- a notification or a client's response gives ``(None, 202)`` and waits for nothing;
- the plan of ``tools/call`` (answered at once or not, a possible task handle), ``initialize``,
  ``notifications/cancelled`` and the streaming methods in each era is what the transports need,
  and a request's plan is a shared instance (asking costs no allocation);
- what HTTP's routing headers need (``named_param``, ``Engine.header_params``) comes from here too.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from truecall import Principal, Server, ToolContext
from truecall.audit import AuditUnavailable
from truecall.protocol import Engine, Plan, Reply, Session, jsonrpc, named_param

P = Principal("tester@acme", "acme", frozenset())
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}


def _server() -> Server:
    # No journal: a record made on the serving loop waits in a batch committed at the loop's next
    # turn, so "in the table when serve returns" means serve waited for it.
    server = Server("exchange", audit_journal=False)

    @server.tool
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.tool
    async def slow(text: str) -> str:
        """Say it back, later."""
        await asyncio.sleep(0)
        return text

    @server.tool(task_support="optional")
    async def job(ctx: ToolContext) -> str:
        """A long job."""
        return "done"

    @server.tool(input_schema={"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}, "note": {"type": "string"}}})
    def routed(region: str, note: str = "") -> str:
        """Routed by region."""
        return region

    return server


@pytest.fixture
def engine() -> Engine:
    return Engine(_server()).start()


def message(method: str, params: dict[str, Any] | None = None, *, id: int | None = 1) -> jsonrpc.Incoming:
    raw: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        raw["id"] = id
    if params is not None:
        raw["params"] = params
    return jsonrpc.decode(orjson.dumps(raw))


def call(name: str, *, meta: dict[str, Any] | None = None, **extra: Any) -> jsonrpc.Incoming:
    return message("tools/call", {"name": name, "arguments": {"text": "hi"}, "_meta": meta or MODERN_META, **extra})


# -- serve: a released reply --------------------------------------------------------------------

def test_serve_returns_a_reply_whose_final_record_is_already_in_the_table(engine: Engine) -> None:
    events = engine.server.events

    async def scenario() -> None:
        engine.attach(asyncio.get_running_loop())  # records batch per loop turn, as under a transport
        response, status = await engine.serve(call("echo"), P)
        # (no await between serve's return and these reads: what is in the table, serve waited for)
        assert status == 200
        assert response is not None and response["result"]["content"][0]["text"] == "hi"
        assert [r.tool for r in events.query(kind="tool.called")] == ["echo"]
        # The control: a record made now, outside any exchange, is not in the table yet — so the
        # one above is there because serve waited, not because records go in at once here.
        events.record("test.marker", outcome="ok")
        assert events.query(kind="test.marker") == []
        await events.durable()
        assert len(events.query(kind="test.marker")) == 1

    asyncio.run(scenario())


def test_serve_waits_for_the_trail_exactly_once_per_request_and_never_for_a_notification(engine: Engine,
                                                                                         monkeypatch) -> None:
    events = engine.server.events
    waits: list[int] = []
    real = events.durable

    async def counted() -> None:
        waits.append(len(events.query(kind="tool.called")))
        await real()

    monkeypatch.setattr(events, "durable", counted)

    async def scenario() -> None:
        engine.attach(asyncio.get_running_loop())
        await engine.serve(call("echo"), P)
        assert len(waits) == 1
        await engine.serve(call("slow"), P)
        assert len(waits) == 2
        assert await engine.serve(message("notifications/initialized", id=None), P) == (None, 202)
        assert len(waits) == 2  # a notification records nothing, and waits for nothing

    asyncio.run(scenario())


def test_a_record_that_could_not_be_committed_turns_the_answer_into_an_error(engine: Engine, monkeypatch) -> None:
    async def broken() -> None:
        raise AuditUnavailable("the database did not take it")

    monkeypatch.setattr(engine.server.events, "durable", broken)
    response, _ = asyncio.run(engine.serve(call("echo"), P))
    assert response is not None and "result" not in response
    assert response["id"] == 1 and response["error"]["code"] < 0
    assert "audit record" in response["error"]["message"] + str(response["error"].get("data"))


def test_refused_waits_for_the_trail_and_never_raises(engine: Engine, monkeypatch) -> None:
    waited: list[bool] = []

    async def broken() -> None:
        waited.append(True)
        raise AuditUnavailable("down")

    monkeypatch.setattr(engine.server.events, "durable", broken)
    asyncio.run(engine.refused())  # a refusal says nothing happened: it goes out all the same
    assert waited == [True]


def test_a_notification_or_a_response_gives_an_empty_202(engine: Engine) -> None:
    session = Session(principal=P)
    assert asyncio.run(engine.serve(message("notifications/cancelled", {"requestId": 3}, id=None), P,
                                    session=session)) == (None, 202)
    response = jsonrpc.decode(orjson.dumps({"jsonrpc": "2.0", "id": 9, "result": {}}))
    assert asyncio.run(engine.serve(response, P, session=session)) == (None, 202)


def test_an_error_keeps_its_http_status_in_the_reply(engine: Engine) -> None:
    response, status = asyncio.run(engine.serve(message("tools/call", {"name": "echo", "arguments": {"text": "hi"}}), P,
                                     modern_hint=True))  # a stateless request without its _meta
    assert status == 400 and response is not None and response["error"]["code"] == -32602


def test_handle_is_the_response_of_serve(engine: Engine) -> None:
    response = asyncio.run(engine.handle(call("echo"), P))
    assert response is not None and response["result"]["content"][0]["text"] == "hi"


# -- plan: what a transport needs to know, as data -------------------------------------------------

def test_the_plan_of_a_call_says_whether_it_is_answered_at_once(engine: Engine) -> None:
    at_once = engine.plan(call("echo"))
    assert at_once.at_once and not at_once.may_wait and not at_once.may_be_task and not at_once.opens_session
    for name in ("slow", "job", "no-such-tool"):  # async, task-capable, unknown: may wait on the loop
        plan = engine.plan(call(name))
        assert plan.may_wait and not plan.at_once, name
    assert engine.plan(message("tools/call", {"name": ["not", "hashable"]})).may_wait


def test_the_plan_of_a_call_asking_for_a_task_holds_the_task_notes(engine: Engine) -> None:
    assert engine.plan(call("job", task={})).may_be_task
    assert not engine.plan(call("job")).may_be_task
    # answered at once, still possibly a task handle (2025-11-25: a task already finished)
    plan = engine.plan(call("echo", task={"ttl": 1000}))
    assert plan.at_once and plan.may_be_task
    assert not engine.plan(call("job", task="yes")).may_be_task  # (params.task must be an object)


def test_the_plan_of_initialize_opens_a_session_in_either_routing(engine: Engine) -> None:
    init = message("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert engine.plan(init).opens_session and engine.plan(init, stateless=True).opens_session
    assert not engine.plan(message("ping")).opens_session
    assert not engine.plan(call("echo")).opens_session


def test_the_plan_of_a_cancellation_names_the_request_it_withdraws(engine: Engine) -> None:
    def cancels(params: Any) -> Any:
        return engine.plan(message("notifications/cancelled", params, id=None)).cancels

    assert cancels({"requestId": 7}) == 7
    assert cancels({"requestId": "r-1", "reason": "user"}) == "r-1"
    for invalid in ({"requestId": True}, {"requestId": 1.5}, {"requestId": None}, {}, None):
        assert cancels(invalid) is None, invalid  # no request could have that id: ignored
    assert engine.plan(message("notifications/initialized", id=None)).cancels is None
    assert engine.plan(message("notifications/initialized", id=None)) == Plan()


def test_the_plan_says_what_may_precede_an_answer_in_each_era(engine: Engine) -> None:
    progress = {**MODERN_META, "progressToken": "p"}
    logs = {**MODERN_META, "io.modelcontextprotocol/logLevel": "info"}
    read = message("resources/read", {"uri": "x://y", "_meta": MODERN_META})
    # handshake era: the server's own requests may precede any streaming method's answer
    assert engine.plan(read).may_stream and engine.plan(call("echo")).may_stream
    # 2026-07-28: only progress or logs can
    assert not engine.plan(read, stateless=True).may_stream
    assert engine.plan(message("resources/read", {"uri": "x://y", "_meta": progress}), stateless=True).may_stream
    assert engine.plan(call("slow", meta=logs), stateless=True).may_stream
    assert not engine.plan(call("slow"), stateless=True).may_stream
    assert not engine.plan(message("tools/list", {"_meta": progress}), stateless=True).may_stream
    listen = message("subscriptions/listen", {"_meta": MODERN_META})
    assert engine.plan(listen, stateless=True).must_stream
    assert engine.plan(listen) == Plan()  # (not a handshake-era method: the engine refuses it there)


def test_a_requests_plan_is_a_shared_instance(engine: Engine) -> None:
    """Asking costs no allocation: requests of one shape share one plan."""
    assert engine.plan(call("echo")) is engine.plan(message("tools/call", {"name": "routed", "arguments": {}}, id=2))
    assert engine.plan(message("ping", id=3)) is engine.plan(message("tools/list", id=4))
    assert engine.plan(call("slow", task={})) is engine.plan(call("job", task={"ttl": 5}))


# -- what HTTP's routing headers need ------------------------------------------------------------

def test_the_parameter_naming_a_requests_target() -> None:
    assert named_param("tools/call") == "name" and named_param("prompts/get") == "name"
    assert named_param("resources/read") == "uri" and named_param("tasks/cancel") == "taskId"
    assert named_param("tools/list") is None and named_param(None) is None


def test_header_params_come_from_the_tools_schema(engine: Engine) -> None:
    assert list(engine.header_params(message("tools/call", {"name": "routed"}))) == [("region", "Region")]
    assert list(engine.header_params(call("echo"))) == []
    assert list(engine.header_params(message("tools/call", {"name": "nope"}))) == []
    assert list(engine.header_params(message("tools/call", {"name": {"a": 1}}))) == []
    assert list(engine.header_params(message("prompts/get", {"name": "routed"}))) == []
    tool = engine.server.registry.tools["routed"]
    assert tool.header_params == (("region", "Region"),) and not hasattr(tool, "_header_params")


def test_a_reply_is_a_plain_pair_and_a_plan_reads_its_fields_from_slots(engine: Engine) -> None:
    """What every request pays for: a reply is an exact ``tuple`` (made by a tuple display and
    unpacked by the interpreter's specialised two-item unpack; a named tuple cost a
    ``tuple.__new__`` call and an unspecialised descriptor per field read, 1.6 % of an HTTP
    call's instructions with the rest of the exchange), and a plan's fields are slots."""
    reply: Reply = asyncio.run(engine.serve(call("echo"), P))
    assert type(reply) is tuple and len(reply) == 2 and reply[1] == 200
    plan = engine.plan(call("echo"))
    assert not hasattr(plan, "__dict__") and plan.at_once is True
    with pytest.raises(AttributeError, match="immutable"):
        plan.at_once = False  # type: ignore[misc]  # (the point: a shared plan cannot be changed)
    assert plan == Plan(at_once=True, may_stream=True) and repr(plan) == "Plan(at_once=True, may_stream=True)"
    assert plan != Plan(at_once=True) and hash(plan) == hash(Plan(at_once=True, may_stream=True))
