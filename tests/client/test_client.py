"""truecall.Client against the incident desk (in process, stdio, Streamable HTTP; both eras) and
against a server that lies about its outcomes (tests/rogue_server.py).

Every call ends in exactly one outcome type; only Done is truthy; protocol errors raise typed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from truecall import (Accept, Accepted, Cancel, Cancelled, Client, Decline, Done, Failed, FormRequest,
                      InsufficientScope, InvalidCredential, Unknown, UnknownTool, describe)
from truecall.client import ClientStateError, NotSent
from truecall.incidents import build_desk

from http_support import OPERATOR, READER, served

from _paths import TESTS as HERE
ROGUE = [sys.executable, str(HERE / "rogue_server.py")]
ERAS = [None, "2025-11-25", "2025-06-18"]  # None: server/discover, so 2026-07-28 with truecall
ERA_IDS = ["2026-07-28", "2025-11-25", "2025-06-18"]


def run(coro: Any, timeout: float = 30.0) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


def stdio_desk(tmp_path: Path, principal: str = "newton@acme,acme,incidents:read incidents:write") -> dict[str, Any]:
    env = {"TRUECALL_DB": str(tmp_path / "desk.db"), "TRUECALL_PRINCIPAL": principal}
    return {"target": [sys.executable, "-m", "truecall", "serve"], "env": env, "cwd": str(tmp_path)}


async def _exercise_desk(client: Client, version: str | None) -> None:
    """List, a success, a tool error, a missing argument, an unknown tool, a task to its end."""
    assert client.version == (version or "2026-07-28")
    names = [t["name"] for t in await client.list_tools()]
    assert names[:3] == ["incident.search", "incident.escalate", "incident.handle"]

    done = await client.call("incident.search", {"service": "payments"})
    assert isinstance(done, Done) and done
    assert done.structured["count"] == 2
    assert describe(done, "en").startswith("payments: 2")

    nothing = await client.call("incident.search", {"service": "nothing-here"})
    assert isinstance(nothing, Done) and nothing.structured["count"] == 0
    assert "no matching data" in describe(nothing, "en") and "没有匹配数据" in describe(nothing, "zh")

    missing = await client.call("incident.search", {})
    assert isinstance(missing, Failed) and not missing
    assert missing.kind == "invalid_input"
    assert missing.result["isError"] is True and missing.structured["error"]["kind"] == "invalid_input"
    assert describe(missing, "zh").startswith("未成功")

    tool_error = await client.call("incident.escalate", {"incidentId": "INC-9999"})
    assert isinstance(tool_error, Failed) and tool_error.kind == "invalid_input"

    with pytest.raises(UnknownTool):
        await client.call("incident.nope", {})

    if version == "2025-06-18":  # no tasks in that version: a task-only tool is refused, typed
        from truecall import MethodNotFound

        with pytest.raises(MethodNotFound):
            await client.call("incident.handle", {"incidentId": "INC-1001"})
        return
    accepted = await client.call("incident.handle", {"incidentId": "INC-1001", "idempotencyKey": "k-1"})
    assert isinstance(accepted, Accepted) and not accepted
    assert not hasattr(accepted, "result")
    assert "accepted, not yet done" in describe(accepted, "en") and "已受理" in describe(accepted, "zh")
    final = await accepted.wait()
    assert isinstance(final, Done), final
    assert final.task_id == accepted.task_id and final.structured["notified"] is True
    assert final.structured["ticketId"].startswith("TKT-")


@pytest.mark.parametrize("version", ERAS, ids=ERA_IDS)
def test_in_process_desk(tmp_path: Path, version: str | None) -> None:
    desk = build_desk(str(tmp_path / "desk.db"))

    async def go() -> None:
        async with Client(desk, token=OPERATOR, version=version) as client:
            await _exercise_desk(client, version)

    run(go())


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=ERA_IDS[:2])
def test_stdio_desk(tmp_path: Path, version: str | None) -> None:
    spec = stdio_desk(tmp_path)

    async def go() -> None:
        async with Client(spec["target"], env=spec["env"], cwd=spec["cwd"], version=version) as client:
            await _exercise_desk(client, version)

    run(go(), 60)


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=ERA_IDS[:2])
def test_http_desk(tmp_path: Path, version: str | None) -> None:
    with served(tmp_path) as server:
        async def go() -> None:
            async with Client(server.url, token=OPERATOR, version=version) as client:
                await _exercise_desk(client, version)

        run(go(), 60)


def test_http_credentials_raise_typed(tmp_path: Path) -> None:
    """A bad token is InvalidCredential; a missing scope is InsufficientScope naming the scope."""
    with served(tmp_path) as server:
        async def go() -> None:
            with pytest.raises(InvalidCredential):
                async with Client(server.url, token="not-a-token"):
                    pass
            for version in (None, "2025-11-25"):
                async with Client(server.url, token=READER, version=version) as client:
                    with pytest.raises(InsufficientScope) as caught:
                        await client.call("incident.handle", {"incidentId": "INC-1001"})
                    assert caught.value.required == ("incidents:write",)

        run(go(), 60)


def test_in_process_scope_and_credential(tmp_path: Path) -> None:
    desk = build_desk(str(tmp_path / "desk.db"))

    async def go() -> None:
        async with Client(desk, token=READER) as client:
            with pytest.raises(InsufficientScope) as caught:
                await client.call("incident.escalate", {"incidentId": "INC-1001"})
            assert caught.value.required == ("incidents:write",)
        with pytest.raises(InvalidCredential):
            async with Client(desk, token="wrong"):
                pass

    run(go())


# -- elicitation -------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=ERA_IDS[:2])
@pytest.mark.parametrize("transport", ["inprocess", "stdio", "http"])
def test_elicitation_accept_decline_cancel(tmp_path: Path, version: str | None, transport: str) -> None:
    seen: list[FormRequest] = []
    answers = iter([Accept({"severity": "P1", "reason": "customers affected"}), Decline(), Cancel(),
                    Accept({"severity": "P9", "reason": "not an allowed value"})])

    def handler(request: Any) -> Any:
        assert isinstance(request, FormRequest)
        seen.append(request)
        return next(answers)

    async def go(target: Any, **options: Any) -> None:
        token = None if isinstance(target, list) else OPERATOR  # stdio: the principal is local configuration
        async with Client(target, token=token, version=version, elicitation=handler, **options) as client:
            accepted = await client.call("incident.escalate", {"incidentId": "INC-1002"})
            assert isinstance(accepted, Done), accepted
            assert accepted.structured == {"incidentId": "INC-1002", "previousSeverity": "P3", "severity": "P1"}
            declined = await client.call("incident.escalate", {"incidentId": "INC-1001"})
            assert isinstance(declined, Failed) and declined.kind == "declined"
            assert "decline" in declined.message
            cancelled = await client.call("incident.escalate", {"incidentId": "INC-1001"})
            assert isinstance(cancelled, Failed) and cancelled.kind == "declined" and "cancel" in cancelled.message
            # An answer outside the form's schema is never sent as consent: it goes as cancel.
            invalid = await client.call("incident.escalate", {"incidentId": "INC-1001"})
            assert isinstance(invalid, Failed) and invalid.kind == "declined" and "cancel" in invalid.message
        assert len(seen) == 4 and seen[0].schema["required"] == ["severity", "reason"]

    if transport == "inprocess":
        run(go(build_desk(str(tmp_path / "desk.db"))))
    elif transport == "stdio":
        spec = stdio_desk(tmp_path)
        run(go(spec["target"], env=spec["env"], cwd=spec["cwd"]), 60)
    else:
        with served(tmp_path) as server:
            run(go(server.url), 60)


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=ERA_IDS[:2])
def test_credential_form_never_reaches_the_handler(version: str | None, caplog: pytest.LogCaptureFixture) -> None:
    shown: list[Any] = []

    async def go(allow: bool) -> str:
        async with Client(ROGUE, version=version, elicitation=lambda r: shown.append(r) or Accept({"password": "x"}),
                          allow_credential_forms=allow) as client:
            outcome = await client.call("credential_form", {})
            assert isinstance(outcome, Done)
            return outcome.text

    assert run(go(False)) == "client said decline"
    assert shown == [] and "credential" in caplog.text
    assert run(go(True)) == "client said accept"  # explicitly opted out: the handler decides
    assert len(shown) == 1


# -- faults --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=ERA_IDS[:2])
def test_rogue_results(version: str | None) -> None:
    async def go() -> None:
        async with Client(ROGUE, version=version) as client:
            broken = await client.call("broken", {})
            assert isinstance(broken, Failed) and not broken
            assert broken.kind == "contract_broken"
            assert broken.result["structuredContent"] == {"count": "three"}  # kept as sent
            assert "count" in broken.message
            assert describe(broken, "en").startswith("Not successful")
            assert describe(broken, "zh").startswith("未成功")

            unstructured = await client.call("no_structure", {})
            assert isinstance(unstructured, Failed) and unstructured.kind == "contract_broken"

            honest = await client.call("honest", {})
            assert isinstance(honest, Done) and honest.structured == {"count": 1}

            with pytest.raises(UnknownTool):
                await client.call("nothing", {})
            with pytest.raises(UnknownTool):  # folded into isError by the server: still nothing ran
                await client.call("fold_unknown", {})

            # A completed task with an isError result: Failed, structured content intact.
            task = await client.call("task_error", {})
            assert isinstance(task, Accepted)
            failed = await task.wait()
            assert isinstance(failed, Failed) and failed.kind == "dependency_unavailable"
            assert failed.structured["error"]["message"] == "upstream refused" and failed.structured["count"] == 0
            assert failed.task_id == task.task_id

            # A failed task: the JSON-RPC error, typed.
            task = await client.call("task_failed", {})
            with pytest.raises(InsufficientScope) as caught:
                await task.wait()
            assert caught.value.required == ("jobs:run",)

    run(go())


def test_each_input_round_retries_with_its_own_request_state_only() -> None:
    """2026-07-28: a second ``input_required`` without a ``requestState`` is retried without one — never with
    the first round's, which the server already spent — for a tool, a prompt and a resource alike."""
    async def go() -> None:
        async with Client(ROGUE, elicitation=lambda r: Accept({"v": "x"})) as client:
            done = await client.call("two_rounds", {})
            assert isinstance(done, Done) and done.text == "both answered"
            prompt = await client.get_prompt("two_rounds")
            assert prompt["messages"][0]["content"]["text"] == "both answered"
            contents = await client.read_resource("rogue://two-rounds")
            assert contents[0]["text"] == "both answered"

    run(go())


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=ERA_IDS[:2])
def test_a_transport_of_the_callers_own_needs_only_the_four_methods(version: str | None) -> None:
    """A transport that does not inherit TransportHooks (open, send, cancel, aclose: nothing else) serves
    both eras: the session gives it do-nothing hooks instead of probing it for attributes."""
    from truecall.client._inprocess import InProcessTransport

    class Mine:  # wraps truecall's in-process transport, exposing only the four methods
        def __init__(self) -> None:
            self.inner = InProcessTransport(build_desk(":memory:"), token="demo-acme-reader")

        async def open(self, receive: Any, lost: Any) -> None:
            await self.inner.open(receive, lost)

        async def send(self, message: dict[str, Any]) -> None:
            await self.inner.send(message)

        async def cancel(self, request_id: Any) -> None:
            await self.inner.cancel(request_id)

        async def aclose(self) -> None:
            await self.inner.aclose()

    async def go() -> None:
        async with Client(Mine(), version=version) as client:
            found = await client.call("incident.search", {"service": "payments"})
            assert isinstance(found, Done) and found.structured["count"] >= 1

    run(go())


def test_task_input_required_answered_through_the_handler() -> None:
    async def go() -> None:
        async with Client(ROGUE, elicitation=lambda r: Accept({"count": 7})) as client:
            task = await client.call("task_input", {})
            assert isinstance(task, Accepted)
            final = await task.wait()
            assert isinstance(final, Done) and final.structured == {"count": 7}

    run(go())


def test_server_killed_mid_call_is_unknown() -> None:
    async def go() -> None:
        async with Client(ROGUE) as client:
            call = asyncio.ensure_future(client.call("hang", {}))
            await asyncio.sleep(0.2)
            pid = client.transport.pid  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)
            outcome = await call
            assert isinstance(outcome, Unknown) and not outcome
            assert outcome.reason == "server_exited" and outcome.request_id is not None
            text = describe(outcome, "en")
            assert "may have happened" in text and "do not retry blindly" in text
            assert "结果未知" in describe(outcome, "zh")
            with pytest.raises(NotSent):  # afterwards nothing can be sent: nothing can have happened
                await client.call("honest", {})

    run(go())


def test_call_timeout_is_unknown() -> None:
    async def go() -> None:
        async with Client(ROGUE) as client:
            outcome = await client.call("hang", {}, timeout=0.2)
            assert isinstance(outcome, Unknown) and outcome.reason == "timeout"

    run(go())


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_desk_killed_while_asking_is_unknown(tmp_path: Path, transport: str) -> None:
    """The desk dies while its call waits for the user (handshake era): the call may have happened."""
    kill: dict[str, Any] = {}

    async def handler(request: Any) -> Any:
        kill["now"]()
        await asyncio.sleep(0.5)
        return Decline()

    async def go(client: Client) -> None:
        async with client:
            outcome = await client.call("incident.escalate", {"incidentId": "INC-1001"})
            assert isinstance(outcome, Unknown), outcome
            assert outcome.reason in ("server_exited", "connection_lost")

    if transport == "stdio":
        spec = stdio_desk(tmp_path)
        client = Client(spec["target"], env=spec["env"], cwd=spec["cwd"], version="2025-11-25", elicitation=handler)
        kill["now"] = lambda: os.kill(client.transport.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        run(go(client), 60)
    else:
        with served(tmp_path) as server:
            kill["now"] = lambda: (os.kill(server.proc.pid, signal.SIGKILL), server.proc.wait(5))
            run(go(Client(server.url, token=OPERATOR, version="2025-11-25", elicitation=handler)), 60)


def test_cancel_an_accepted_task(tmp_path: Path) -> None:
    desk = build_desk(str(tmp_path / "desk.db"), faults={"delay": 1.0}, ack_timeout_s=5.0)

    async def go() -> None:
        async with Client(desk, token=OPERATOR) as client:
            accepted = await client.call("incident.handle", {"incidentId": "INC-1001"})
            assert isinstance(accepted, Accepted)
            after = await accepted.cancel()
            final = after if isinstance(after, (Cancelled, Done, Failed)) else await accepted.wait()
            assert isinstance(final, Cancelled), final
            assert "cancelled, not done" in describe(final, "en")

    run(go())


def test_outcomes_are_never_truthy_except_done() -> None:
    from truecall.client._outcomes import judge
    from truecall.schema import Validator

    v = Validator({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert judge("t", {"content": [], "structuredContent": {"n": 1}}, v)
    assert not judge("t", {"content": [], "structuredContent": {"n": "1"}}, v)
    assert not judge("t", {"content": [], "isError": "false", "structuredContent": {"n": 1}}, v)
    assert not judge("t", {"content": [], "isError": True}, None)
    # was: Done — "no schema: the flag decides", the seed's accident (tests/client/test_client_claims.py)
    assert not judge("t", {"content": [{"type": "text", "text": "已受理"}]}, None)
    assert judge("t", {"content": [{"type": "text", "text": "payments: 2 open incidents"}]}, None)


def test_connection_state_table_refuses_illegal_moves() -> None:
    from truecall.client import ClientConnection

    conn = ClientConnection(client_info={"name": "t", "version": "0"}, capabilities={})
    with pytest.raises(ClientStateError, match="client state: new"):
        conn.send_request("tools/list")
    conn.start()
    with pytest.raises(ClientStateError, match="client state: discovering"):
        conn.send_request("tools/call", {"name": "x"})
    assert [m["method"] for m in conn.data_to_send()] == ["server/discover"]
    conn.fall_back()
    assert [m["method"] for m in conn.data_to_send()] == ["initialize"]
    events = conn.receive_data(b'{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-06-18",'
                               b'"capabilities":{},"serverInfo":{"name":"s","version":"1"}}}')
    assert conn.era == "legacy" and conn.version == "2025-06-18" and len(events) == 1
    assert [m["method"] for m in conn.data_to_send()] == ["notifications/initialized"]
    rid = conn.send_request("tools/list")
    assert "_meta" not in conn.data_to_send()[0].get("params", {})
    assert conn.receive_data(b'{"jsonrpc":"2.0","id":99,"result":{}}') == []  # nobody asked: dropped
    assert conn.receive_data(f'{{"jsonrpc":"2.0","id":{rid},"result":{{"tools":[]}}}}'.encode())[0].result == \
        {"tools": []}
    conn.close()
    with pytest.raises(ClientStateError, match="client state: closed"):
        conn.send_request("tools/list")


def test_import_truecall_loads_neither_the_client_nor_httpx() -> None:
    import subprocess

    code = ("import sys, truecall; assert 'httpx' not in sys.modules and 'truecall.client' not in sys.modules; "
            "truecall.Client; assert 'truecall.client' in sys.modules and 'httpx' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


# -- resources, prompts, callbacks, pages ------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=ERA_IDS[:2])
def test_resources_prompts_and_completion(tmp_path: Path, version: str | None) -> None:
    from truecall import NotFound

    desk = build_desk(str(tmp_path / "desk.db"))

    async def go() -> None:
        async with Client(desk, token=OPERATOR, version=version) as client:
            templates = {t["name"]: t["uriTemplate"] for t in await client.list_resource_templates()}
            assert templates["incident"] == "incident://{tenant}/{incident_id}"
            contents = await client.read_resource("incident://acme/INC-1001")
            assert contents[0]["uri"] == "incident://acme/INC-1001" and '"severity":"P2"' in contents[0]["text"]
            with pytest.raises(NotFound):  # another tenant's incident reads exactly like a missing one
                await client.read_resource("incident://globex/INC-2001")
            with pytest.raises(NotFound):  # and the caller's own, named under another tenant, too
                await client.read_resource("incident://globex/INC-1001")
            assert isinstance(await client.list_resources(), list)
            prompts = [p["name"] for p in await client.list_prompts()]
            assert prompts == ["incident.triage"]
            prompt = await client.get_prompt("incident.triage", {"service": "payments"})
            assert "Triage the open incidents of payments" in prompt["messages"][0]["content"]["text"]
            assert await client.complete({"type": "ref/prompt", "name": "incident.triage"},
                                         {"name": "service", "value": "pa"}) == ["payments"]

    run(go())


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=ERA_IDS[:2])
def test_progress_and_log_callbacks(make_server: Any, version: str | None) -> None:
    from conftest import ACME_ALL

    server = make_server()

    @server.tool("work", description="Reports progress and a log line.", input_schema={"type": "object"})
    async def work(ctx: Any) -> Any:
        from truecall import ToolResult, text

        for step in (1, 2, 3):
            await ctx.progress(step, 3, f"step {step}")
        await ctx.log("warning", {"note": "disk nearly full"}, "work")
        await ctx.log("debug", "too chatty to be shown")
        return ToolResult([text("worked")])

    progress: list[tuple[Any, ...]] = []
    logs: list[tuple[Any, ...]] = []

    async def go() -> None:
        async with Client(server, token=ACME_ALL, version=version, log_level="info",
                          on_log=lambda *a: logs.append(a)) as client:
            outcome = await client.call("work", {}, on_progress=lambda *a: progress.append(a))
            assert isinstance(outcome, Done) and outcome.text == "worked"

    run(go())
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert logs == [("warning", {"note": "disk nearly full"}, "work")]


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=ERA_IDS[:2])
def test_resource_subscription_reaches_the_callback(make_server: Any, version: str | None) -> None:
    from conftest import ACME_ALL

    server = make_server()

    @server.resource("memo://today", name="today", description="Today's memo.")
    def today(ctx: Any) -> str:
        return "nothing yet"

    seen: list[tuple[str, dict[str, Any]]] = []

    async def go() -> None:
        async with Client(server, token=ACME_ALL, version=version,
                          on_notification=lambda m, p: seen.append((m, p))) as client:
            await client.subscribe("memo://today")
            await asyncio.sleep(0.05)
            server.resource_updated("memo://today")
            for _ in range(100):
                if any(m == "notifications/resources/updated" for m, _ in seen):
                    break
                await asyncio.sleep(0.02)

    run(go())
    updates = [p for m, p in seen if m == "notifications/resources/updated"]
    assert updates and updates[0]["uri"] == "memo://today"


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=ERA_IDS[:2])
def test_a_resource_out_of_scope_sends_its_subscriber_nothing(make_server: Any, version: str | None) -> None:
    """Subscribing is the policy stage's, as reading is: 2025-11-25's resources/subscribe to a resource out
    of the caller's scopes is refused like an unknown one (it succeeded: the URI's existence showed), and
    no update of it reaches a 2026-07-28 listen stream that names it (it did: when it changed showed)."""
    from conftest import ACME_READ
    from truecall import InvalidParams

    server = make_server()

    @server.resource("memo://today", name="today", description="Today's memo.")
    def today(ctx: Any) -> str:
        return "nothing yet"

    @server.resource("memo://board", name="board", description="The board's memo.", scopes=("write",))
    def board(ctx: Any) -> str:
        return "secret"

    seen: list[tuple[str, dict[str, Any]]] = []

    async def go() -> None:
        async with Client(server, token=ACME_READ, version=version,
                          on_notification=lambda m, p: seen.append((m, p))) as client:
            if version is None:
                await client.subscribe("memo://board")
            else:
                for uri in ("memo://board", "memo://nowhere"):
                    with pytest.raises(InvalidParams) as refused:  # (-32602, as an unknown URI always was)
                        await client.subscribe(uri)
                    assert str(refused.value) == "Resource not found"
            await client.subscribe("memo://today")
            await asyncio.sleep(0.05)
            server.resource_updated("memo://board")
            server.resource_updated("memo://today")
            for _ in range(100):
                if any(m == "notifications/resources/updated" for m, _ in seen):
                    break
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.05)

    run(go())
    assert [p["uri"] for m, p in seen if m == "notifications/resources/updated"] == ["memo://today"]
    if version is not None:
        denied = sorted(server.events.query(kind="resource.denied"), key=lambda r: r.id)
        assert [r.fields["reason"] for r in denied] == ["insufficient_scope", "unknown_resource"]


def test_list_tools_follows_every_page() -> None:
    async def go() -> None:
        async with Client(ROGUE) as client:
            names = [t["name"] for t in await client.list_tools()]
            assert names[:4] == ["broken", "no_structure", "honest", "hang"] and "credential_form" in names

    run(go())


@pytest.mark.parametrize("transport", ["inprocess", "http"])
def test_a_task_change_wakes_the_waiter_before_its_poll_interval(make_server: Any, tmp_path: Path,
                                                                 transport: str) -> None:
    """2026-07-28: wait() listens for notifications/tasks, so a task that finishes in 0.3 s is seen
    then, not at the server's 30 s pollIntervalMs."""
    import time

    async def go(target: Any, token: str | None) -> float:
        async with Client(target, token=token) as client:
            accepted = await client.call("nap", {})
            assert isinstance(accepted, Accepted) and accepted.task["pollIntervalMs"] == 30_000
            started = time.monotonic()
            final = await accepted.wait()
            assert isinstance(final, Done) and final.text == "rested"
            return time.monotonic() - started

    if transport == "inprocess":
        from conftest import ACME_ALL

        server = make_server()
        server.tasks.poll_interval_ms = 30_000

        @server.tool("nap", description="Accepts, naps 0.3 s, then finishes.", input_schema={"type": "object"},
                     task_support="optional")
        async def nap(ctx: Any) -> Any:
            from truecall import ToolResult, text

            await ctx.accept_as_task()
            await asyncio.sleep(0.3)
            return ToolResult([text("rested")])

        assert run(go(server, ACME_ALL)) < 10
    else:
        app = tmp_path / "napper.py"
        app.write_text(
            "import asyncio\nfrom truecall import Principal, Server, ToolResult, text\n"
            "server = Server('napper', db='napper.db')\nserver.tasks.poll_interval_ms = 30_000\n"
            "server.local_principal = Principal('me', 'acme', frozenset())\n"
            "@server.tool('nap', description='Accepts, naps 0.3 s.', input_schema={'type': 'object'}, "
            "task_support='optional')\n"
            "async def nap(ctx):\n    await ctx.accept_as_task()\n    await asyncio.sleep(0.3)\n"
            "    return ToolResult([text('rested')])\n")
        with served(tmp_path, f"{app}:server") as server:
            assert run(go(server.url, None), 60) < 10  # no tokens: loopback callers are the local principal


def test_a_server_without_2026_falls_back_to_the_handshake() -> None:
    async def go() -> None:
        async with Client([*ROGUE, "--legacy-only"]) as client:
            assert client.era == "legacy" and client.version == "2025-11-25"
            assert isinstance(await client.call("honest", {}), Done)

    run(go())


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=ERA_IDS[:2])
def test_a_truecall_task_that_asks_after_acceptance(make_server: Any, version: str | None) -> None:
    """The question of an accepted task reaches the handler: tasks/get input_required + tasks/update
    (2026-07-28), elicitation on the tasks/result stream (2025-11-25); the answer is checked first."""
    from conftest import ACME_ALL

    server = make_server()
    form = {"type": "object", "properties": {"site": {"type": "string", "enum": ["eu", "us"]}},
            "required": ["site"]}

    @server.tool("deploy", description="Accepts, then asks which site.", input_schema={"type": "object"},
                 output_schema={"type": "object", "properties": {"site": {"type": "string"}}, "required": ["site"]},
                 task_support="optional")
    async def deploy(ctx: Any) -> Any:
        from truecall import ToolResult, text

        await ctx.accept_as_task()
        answer = await ctx.elicit("Which site?", form, key="site")
        site = answer.content["site"] if answer.accepted else "none"
        return ToolResult([text(f"deployed to {site}")], {"site": site})

    shown: list[Any] = []

    def handler(request: Any) -> Any:
        shown.append(request)
        return Accept({"site": "eu"})

    async def go() -> None:
        async with Client(server, token=ACME_ALL, version=version, elicitation=handler) as client:
            accepted = await client.call("deploy", {})
            assert isinstance(accepted, Accepted)
            final = await accepted.wait()
            assert isinstance(final, Done), final
            assert final.structured == {"site": "eu"} and final.task_id == accepted.task_id

    run(go())
    assert len(shown) == 1 and shown[0].message == "Which site?"


def test_wire_errors_become_the_typed_exceptions() -> None:
    import httpx

    from truecall import (AccessDenied, HeaderMismatch, InternalError, InvalidParams, ServiceUnavailable, MethodNotFound,
                          MissingCapability, NotFound, ProtocolError, TenantMismatch, UnsupportedVersion)
    from truecall.client._errors import from_wire
    from truecall.client._http import _status_error

    cases = [
        ({"code": -32601, "message": "Method not found"}, MethodNotFound),
        ({"code": -32020, "message": "Mcp-Name header does not match"}, HeaderMismatch),
        ({"code": -32021, "message": "needs tasks"}, MissingCapability),
        ({"code": -32022, "message": "Unsupported", "data": {"supported": ["2025-06-18"]}}, UnsupportedVersion),
        ({"code": -32001, "message": "Invalid or missing credential"}, InvalidCredential),
        ({"code": -32003, "message": "Credential is not valid for this tenant"}, TenantMismatch),
        ({"code": -32003, "message": "Forbidden"}, AccessDenied),
        ({"code": -32002, "message": "Resource not found"}, NotFound),
        ({"code": -32602, "message": "arguments must be an object"}, InvalidParams),
        ({"code": -32603, "message": "Internal error"}, InternalError),
        ({"code": -32603, "message": "Service unavailable: the database is busy", "data": {"retryable": True}},
         ServiceUnavailable),
        ({"code": -32603, "message": "Internal error", "data": {"retryable": "yes"}}, InternalError),
        ("not an error object", InternalError),
    ]
    for wire, expected in cases:
        assert type(from_wire(wire)) is expected, wire
    scope = from_wire({"code": -32003, "message": "Insufficient scope", "data": {"requiredScopes": ["a:w"]}})
    assert isinstance(scope, InsufficientScope) and scope.required == ("a:w",)
    assert isinstance(from_wire({"code": -32602, "message": "Unknown tool: x"}, tool="x"), UnknownTool)
    odd = from_wire({"code": -31999, "message": "custom", "data": {"k": 1}})
    assert type(odd) is ProtocolError and odd.code == -31999 and odd.data == {"k": 1}
    # HTTP refusals without a JSON-RPC body (a gateway in front of the server)
    request = httpx.Request("POST", "http://127.0.0.1/mcp")
    assert isinstance(_status_error(httpx.Response(401, request=request)), InvalidCredential)
    stepped = _status_error(httpx.Response(403, request=request, headers={
        "www-authenticate": 'Bearer error="insufficient_scope", scope="files:read files:write"'}))
    assert isinstance(stepped, InsufficientScope) and stepped.required == ("files:read", "files:write")
    # (a 5xx like these is raised only for the negotiation, where nothing can have happened; after any
    # other request left it is a loss, and a tools/call Unknown: tests/client/test_client_claims.py)
    assert type(_status_error(httpx.Response(502, request=request))) is InternalError
    assert type(_status_error(httpx.Response(503, request=request))) is ServiceUnavailable


@pytest.mark.parametrize("version", [None, "2025-11-25"], ids=ERA_IDS[:2])
def test_url_mode_elicitation_reaches_the_handler(version: str | None) -> None:
    from truecall import UrlRequest

    shown: list[Any] = []

    def handler(request: Any) -> Any:
        shown.append(request)
        return Accept() if len(shown) == 1 else Decline()

    async def go() -> list[str]:
        async with Client(ROGUE, version=version, elicitation=handler) as client:
            return [(await client.call("url_consent", {})).text for _ in range(2)]  # type: ignore[union-attr]

    assert run(go()) == ["client said accept", "client said decline"]
    assert isinstance(shown[0], UrlRequest) and shown[0].url == "https://billing.example/login"


def test_http_handshake_headers_on_every_message_after_initialize() -> None:
    """Against a scripted HTTP server (httpx.MockTransport): the fall-back from server/discover, then
    the session id and the negotiated version on every later message, the initialized notification
    included."""
    import httpx
    import orjson

    seen: list[tuple[str, dict[str, str]]] = []

    def server(request: httpx.Request) -> httpx.Response:
        body = orjson.loads(request.content) if request.content else {}
        method = body.get("method", request.method)
        seen.append((method, dict(request.headers)))
        if request.method != "POST":
            return httpx.Response(405)
        if method == "server/discover":
            return httpx.Response(400, json={"jsonrpc": "2.0", "id": None,
                                             "error": {"code": -32600, "message": "Bad Request: not initialized"}})
        if method == "initialize":
            return httpx.Response(200, headers={"mcp-session-id": "sess-1"}, json={"jsonrpc": "2.0", "id": body["id"],
                                  "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                             "serverInfo": {"name": "scripted", "version": "1"}}})
        if "id" not in body:
            return httpx.Response(202)
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": {"tools": []}})

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(server)) as http:
            async with Client("http://127.0.0.1:1/mcp", http_client=http) as client:
                assert client.era == "legacy" and client.version == "2025-06-18"
                assert await client.list_tools() == []

    run(go())
    after = [(m, h) for m, h in seen if m not in ("server/discover", "initialize", "DELETE", "GET")]
    assert [m for m, _ in after][:2] == ["notifications/initialized", "tools/list"]
    for method, headers in after:
        assert headers.get("mcp-session-id") == "sess-1" and headers.get("mcp-protocol-version") == "2025-06-18", method
    assert ("DELETE" in [m for m, _ in seen])  # the session is ended on close


def test_an_in_process_client_without_a_token_is_the_local_user_as_over_stdio(tmp_path: Path) -> None:
    from truecall import Server

    server = Server("local", db=tmp_path / "local.db")

    @server.tool(scopes={"notes:write"})
    def note(text: str) -> str:
        """Keep a note."""
        return f"kept: {text}"

    async def main() -> Any:
        async with Client(server) as client:  # no token, no local_principal: the user of this process
            return await client.call("note", {"text": "hi"})

    try:
        outcome = run(main())
        assert isinstance(outcome, Done), outcome
        assert outcome.result["content"][0]["text"] == "kept: hi"
        principal = server.local_user()
        assert principal.tenant == "local" and principal.scopes == frozenset({"notes:write"})
        rows = server.events.query(tool="note")
        assert rows and rows[-1].tenant == "local"
    finally:
        server.db.close()
