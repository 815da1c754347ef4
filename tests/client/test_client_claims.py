"""What a success's words claim, and what a silence after the request left means (issue #24).

- A result with ``isError: false``, no task, and a text that says the work was only accepted ("已受理",
  the seed's accident) or that it failed is :class:`Unconfirmed` (falsy), unless checked facts prove
  it was done; ``describe()`` says so in en and zh.
- The claim is read once per success result, never for an error or a task.
- A request about an accepted task that cannot leave, or is lost, ends :class:`Unknown` with the task
  id, never ``NotSent``; an HTTP 5xx without the server's JSON-RPC answer after a ``tools/call`` left
  is :class:`Unknown`, while the server's own "nothing happened" (truecall's ``ServiceUnavailable``)
  is still raised as it is.

The peers written with other SDKs are in tests/interop/test_client_interop.py.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any, Callable

import httpx
import orjson
import pytest

from truecall import Accepted, Client, Done, NotSent, ServiceUnavailable, Unconfirmed, Unknown, describe
from truecall.client import _outcomes
from truecall.client._outcomes import judge
from truecall.client._silence import LOSSES, NOTHING_HAPPENED, SILENCE, Stage, after_loss
from truecall.schema import Validator

from _paths import TESTS as HERE

ROGUE = [sys.executable, str(HERE / "rogue_server.py")]
TICKET = Validator({"type": "object", "properties": {"ticket": {"type": "string"}, "status": {"type": "string"}},
                    "required": ["ticket"]})


def run(coro: Any, timeout: float = 30.0) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], **extra}


# -- the verdict on a success ---------------------------------------------------------------------------


@pytest.mark.parametrize("words", ["accepted", "已受理", "Your request has been queued"])
def test_a_success_that_says_accepted_is_unconfirmed(words: str) -> None:
    # was: Done (truthy), and describe() repeated the words
    outcome = judge("submit", text(words), None, request_id=7)
    assert isinstance(outcome, Unconfirmed) and not outcome
    assert outcome.claim == "accepted" and outcome.request_id == 7 and outcome.result == text(words)
    assert outcome.evidence and outcome.evidence in words


def test_a_success_flag_over_a_failure_text_is_unconfirmed() -> None:
    outcome = judge("sync", text("Sync failed: the upstream timed out"), None)
    assert isinstance(outcome, Unconfirmed) and not outcome and outcome.claim == "failed"


def test_an_honest_success_is_done() -> None:
    assert isinstance(judge("search", text("payments: 2 open incidents"), None), Done)
    assert isinstance(judge("search", {"content": []}, None), Done)


def test_checked_facts_prove_completion_unless_their_status_says_otherwise() -> None:
    proven = judge("t", text("Ticket T-2 accepted", structuredContent={"ticket": "T-2", "status": "created"}), TICKET)
    assert isinstance(proven, Done)
    no_status = judge("t", text("Ticket T-3 accepted", structuredContent={"ticket": "T-3"}), TICKET)
    assert isinstance(no_status, Done)
    queued = judge("t", text("Ticket T-1 accepted", structuredContent={"ticket": "T-1", "status": "queued"}), TICKET)
    assert isinstance(queued, Unconfirmed) and queued.claim == "accepted"
    # FastMCP's wrap of a str return ({"result": text}, schema declared) proves nothing
    wrap = Validator({"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]})
    wrapped = judge("t", text("已受理", structuredContent={"result": "已受理"}), wrap)
    assert isinstance(wrapped, Unconfirmed)
    # structure without a declared schema is only more narrative
    unchecked = judge("t", text("accepted", structuredContent={"ticket": "T-4", "status": "created"}), None)
    assert isinstance(unchecked, Unconfirmed)


def test_the_claim_is_read_once_per_success_and_never_for_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real = _outcomes.claim_in_result

    def counting(result: Any) -> Any:
        seen.append(result)
        return real(result)

    monkeypatch.setattr(_outcomes, "claim_in_result", counting)
    judge("t", text("accepted", isError=True), None)
    judge("t", text("accepted", isError="no"), None)
    judge("t", text("accepted", structuredContent={"n": "x"}), Validator({"type": "object", "properties": {
        "n": {"type": "integer"}}}))
    # checked facts that prove it done: the words cannot change the verdict, so they are not read
    judge("t", text("Ticket T-2 accepted", structuredContent={"ticket": "T-2", "status": "created"}), TICKET)
    assert seen == []
    judge("t", text("accepted"), None)
    assert len(seen) == 1


def test_describe_says_it_is_not_done_in_both_languages() -> None:
    accepted = judge("submit", text("已受理"), None)
    en, zh = describe(accepted, "en"), describe(accepted, "zh")
    assert en.startswith("Not done") and "accepted" in en and "no way to check" in en and "已受理" in en
    assert zh.startswith("未完成") and "已受理" in zh and "核对" in zh
    failed = judge("sync", text("Sync failed: the upstream timed out"), None)
    assert describe(failed, "en").startswith("Not confirmed") and "failed" in describe(failed, "en")
    assert describe(failed, "zh").startswith("未确认")


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=["2026-07-28", "2025-11-25"])
def test_rogue_lies_over_stdio(version: str | None) -> None:
    async def go() -> None:
        async with Client(ROGUE, version=version) as client:
            accepted = await client.call("says_accepted", {})
            assert isinstance(accepted, Unconfirmed) and accepted.claim == "accepted" and not accepted
            failed = await client.call("says_failed", {})
            assert isinstance(failed, Unconfirmed) and failed.claim == "failed"
            queued = await client.call("queued_status", {})
            assert isinstance(queued, Unconfirmed) and queued.structured == {"ticket": "T-1", "status": "queued"}
            created = await client.call("ticket_created", {})
            assert isinstance(created, Done) and created

    run(go())


# -- silence ---------------------------------------------------------------------------------------------


def test_the_silence_table() -> None:
    assert after_loss(Stage.CALLING, "not_sent") == NOTHING_HAPPENED
    assert [loss for loss in LOSSES if SILENCE[(Stage.CALLING, loss)] == NOTHING_HAPPENED] == ["not_sent"]
    assert all(SILENCE[(Stage.ACCEPTED, loss)] != NOTHING_HAPPENED for loss in LOSSES)
    assert after_loss(Stage.ACCEPTED, "not_sent") == "unreachable"
    assert after_loss(Stage.ACCEPTED, "not_sent", "server_exited") == "server_exited"
    assert after_loss(Stage.CALLING, "http_502") == "http_502"


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=["2026-07-28", "2025-11-25"])
@pytest.mark.parametrize("how", ["wait", "cancel"])
def test_rogue_killed_after_accepting_a_task_is_unknown_with_the_task(version: str | None, how: str) -> None:
    # was: NotSent ("nothing can have happened") from wait() and cancel()
    async def go() -> None:
        async with Client(ROGUE, version=version) as client:
            accepted = await client.call("task_input", {})  # waits for input that never comes
            assert isinstance(accepted, Accepted)
            os.kill(client.transport.pid, signal.SIGKILL)  # type: ignore[attr-defined]
            await asyncio.sleep(0.3)
            outcome = await (accepted.wait() if how == "wait" else accepted.cancel())
            assert isinstance(outcome, Unknown) and not outcome, outcome
            assert outcome.task_id == accepted.task_id and outcome.reason == "server_exited"
            assert accepted.task_id in describe(outcome, "en") and accepted.task_id in describe(outcome, "zh")
            with pytest.raises(NotSent):  # a new call after the death never left: that one is "not sent"
                await client.call("honest", {})

    run(go())


class Faulty:
    """A caller's own transport around stdio (no TransportHooks) that, once told, fails every send
    with a plain OSError or swallows it (no answer ever comes)."""

    def __init__(self) -> None:
        from truecall.client._stdio import StdioTransport

        self.inner = StdioTransport(ROGUE)
        self.fault: str | None = None

    async def open(self, receive: Any, lost: Any) -> None:
        await self.inner.open(receive, lost)

    async def send(self, message: dict[str, Any]) -> None:
        if self.fault == "oserror":
            raise OSError(5, "Input/output error")
        if self.fault != "silent":
            await self.inner.send(message)

    async def cancel(self, request_id: Any) -> None:
        await self.inner.cancel(request_id)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.parametrize("fault", ["oserror", "silent"])
def test_every_way_the_connection_ends_while_waiting_is_unknown_with_the_task(fault: str) -> None:
    async def go() -> None:
        transport = Faulty()
        async with Client(transport, timeout=0.5) as client:
            accepted = await client.call("task_input", {})
            assert isinstance(accepted, Accepted)
            transport.fault = fault
            outcome = await accepted.wait()
            assert isinstance(outcome, Unknown) and outcome.task_id == accepted.task_id, outcome
            assert outcome.reason == ("timeout" if fault == "silent" else "connection_lost")

    run(go())


# -- HTTP: a gateway's 5xx after the request left ------------------------------------------------------------

LEGACY = "2025-06-18"
TOOLS = [{"name": "book", "inputSchema": {"type": "object"}},
         {"name": "job", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}]


def fake_server(on_call: Callable[[dict[str, Any]], httpx.Response],
                on_task: Callable[[dict[str, Any]], httpx.Response] | None = None) -> httpx.AsyncClient:
    """A handshake-era Streamable HTTP server in a function: ``on_call`` answers ``tools/call``,
    ``on_task`` the task requests."""

    def answer(rid: Any, result: dict[str, Any]) -> httpx.Response:
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": rid, "result": result})

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method != "POST":
            return httpx.Response(405)
        message = orjson.loads(request.content)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            return httpx.Response(202)
        if method == "initialize":
            return answer(rid, {"protocolVersion": LEGACY, "capabilities": {"tools": {}},
                                "serverInfo": {"name": "fake", "version": "1"}})
        if method == "tools/list":
            return answer(rid, {"tools": TOOLS})
        if method == "tools/call":
            return on_call(message)
        if method.startswith("tasks/") and on_task is not None:
            return on_task(message)
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def _call_through(http: httpx.AsyncClient, tool: str = "book") -> Any:
    async with Client("http://127.0.0.1:9/mcp", version=LEGACY, http_client=http) as client:
        return await client.call(tool, {})


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_a_bare_5xx_after_the_call_left_is_unknown(status: int) -> None:
    # was: InternalError (502) / ServiceUnavailable(retryable, "retry later") (503) — a blind retry's invitation
    http = fake_server(lambda m: httpx.Response(status, text="<html>Bad Gateway</html>",
                                                headers={"content-type": "text/html"}))
    outcome = run(_call_through(http))
    assert isinstance(outcome, Unknown) and outcome.reason == f"http_{status}" and outcome.request_id is not None
    assert f"HTTP {status}" in describe(outcome, "en") and "do not retry blindly" in describe(outcome, "en")
    assert f"HTTP {status}" in describe(outcome, "zh")


def test_a_reset_after_the_call_left_is_unknown_and_a_refused_connect_is_not_sent() -> None:
    def reset(message: dict[str, Any]) -> httpx.Response:
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.")

    outcome = run(_call_through(fake_server(reset)))
    assert isinstance(outcome, Unknown) and outcome.reason == "connection_lost"

    def refused(message: dict[str, Any]) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    with pytest.raises(NotSent):
        run(_call_through(fake_server(refused)))


def test_the_servers_own_nothing_happened_is_still_raised() -> None:
    """truecall's own ServiceUnavailable: HTTP 503 with a JSON-RPC error, -32603 and data.retryable."""
    said = ServiceUnavailable.because("the database is busy")

    def unavailable(message: dict[str, Any]) -> httpx.Response:
        return httpx.Response(503, json={"jsonrpc": "2.0", "id": message["id"], "error": said.to_error()})

    with pytest.raises(ServiceUnavailable) as caught:
        run(_call_through(fake_server(unavailable)))
    assert caught.value.data == {"retryable": True}


@pytest.mark.parametrize("failure", ["502", "refused"])
def test_a_task_whose_server_goes_away_over_http_is_unknown_with_the_task(failure: str) -> None:
    # was: InternalError (502 on tasks/get) / NotSent (the server no longer accepts connections)
    task = {"taskId": "t-1", "status": "working", "createdAt": "2026-12-01T00:00:00Z",
            "lastUpdatedAt": "2026-12-01T00:00:00Z", "ttl": 60000, "pollInterval": 10}

    def on_task(message: dict[str, Any]) -> httpx.Response:
        if failure == "502":
            return httpx.Response(502, text="Bad Gateway")
        raise httpx.ConnectError("connection refused")

    async def go() -> None:
        http = fake_server(lambda m: httpx.Response(200, json={"jsonrpc": "2.0", "id": m["id"],
                                                                "result": {"task": task}}), on_task)
        async with Client("http://127.0.0.1:9/mcp", version=LEGACY, http_client=http) as client:
            accepted = await client.call("job", {})
            assert isinstance(accepted, Accepted), accepted
            for outcome in (await accepted.wait(), await accepted.cancel()):
                assert isinstance(outcome, Unknown) and outcome.task_id == "t-1", outcome
                assert outcome.reason == ("http_502" if failure == "502" else "unreachable")

    run(go())
