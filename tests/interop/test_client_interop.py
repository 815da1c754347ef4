"""Interop: truecall.Client drives third-party servers over stdio and Streamable HTTP, in both eras
where the server has them — the official ``mcp`` 2.3 servers (low-level and MCPServer), FastMCP 4.2.3
and the TypeScript reference server ``@modelcontextprotocol/server-everything`` (npm, pinned in
conformance/package.json).  The incident desk's runs are in test_client.py.

For each: list, a success, a tool error, a missing argument, an unknown tool; tasks to their end where
the server has tasks; elicitation accept / decline / cancel where it has elicitation.  The seed's
accident (issue #24) against each Python peer, both eras, stdio and HTTP: a tool that answers
"accepted" / "已受理" with ``isError: false``, no task and no ``outputSchema`` is ``Unconfirmed``, and
so is a success flag over a failure text; a server killed while the client waits on a task it
accepted is ``Unknown`` with the task id — server-everything's ``simulate-research-query`` (2025-11-25;
the ``mcp`` 2.3 and FastMCP 4.2.3 servers have no tasks) and truecall's own server (both eras).  What a peer does
is asserted as that peer does it (mcp's MCPServer and FastMCP answer a missing argument with an
``isError`` text; the low-level server validates nothing, so its tool says so itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from truecall import (Accept, Accepted, Cancel, Client, Decline, Done, Failed, FormRequest, ProtocolError,
                      Unconfirmed, Unknown, UnknownTool, describe)

from http_support import free_port, served_with_token
from stress.common import terminate

from _paths import CONFORMANCE, TESTS as HERE

PEERS = HERE / "client_peers"
CONF = CONFORMANCE
NODE = CONF / "node_modules" / ".bin" / "node"
EVERYTHING = CONF / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"

#: name -> (command line, eras with elicitation)
PYTHON_PEERS = {
    "mcp-lowlevel": ([sys.executable, str(PEERS / "mcp_lowlevel.py")], {"2026-07-28", "2025-11-25"}),
    "mcp-mcpserver": ([sys.executable, str(PEERS / "mcp_highlevel.py")], {"2025-11-25"}),
    "fastmcp": ([sys.executable, str(PEERS / "fastmcp_peer.py")], {"2025-11-25"}),
}
ERAS = {"2026-07-28": None, "2025-11-25": "2025-11-25"}


def run(coro: Any, timeout: float = 60.0) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


def _wait_port(proc: subprocess.Popen[bytes], port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the peer exited with {proc.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("the peer did not start listening")


@contextlib.contextmanager
def http_peer(command: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run ``command`` (which serves Streamable HTTP on the port it is given) until the block ends."""
    with http_peer_process(command, tmp_path, env) as (url, _):
        yield url


@contextlib.contextmanager
def http_peer_process(command: list[str], tmp_path: Path,
                      env: dict[str, str] | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """:func:`http_peer` with the process too (to kill it)."""
    port = free_port()
    log = open(tmp_path / f"peer-{port}.log", "wb")
    argv = [*command, str(port)] if env is None else command
    proc = subprocess.Popen(argv, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            env={**os.environ, **(env or {}), **({"PORT": str(port)} if env is not None else {})})
    try:
        _wait_port(proc, port)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        terminate(proc, 5)
        log.close()


def answers(*items: Any) -> Any:
    queue = list(items)
    shown: list[Any] = []

    def handler(request: Any) -> Any:
        shown.append(request)
        return queue.pop(0)

    handler.shown = shown  # type: ignore[attr-defined]
    return handler


async def _exercise_python_peer(target: Any, version: str | None, elicits: bool, name: str) -> None:
    handler = answers(Accept({"severity": "P1", "reason": "customers affected"}), Decline(), Cancel())
    options: dict[str, Any] = {"stderr": subprocess.DEVNULL} if isinstance(target, list) else {}
    async with Client(target, version=version, elicitation=handler, **options) as client:
        assert client.version == (version or "2026-07-28")
        tools = {t["name"]: t for t in await client.list_tools()}
        assert {"search", "fail", "ask", "submit", "sync"} <= set(tools)

        done = await client.call("search", {"service": "payments"})
        assert isinstance(done, Done) and done.structured == {"service": "payments", "count": 2}
        assert describe(done, "en") == "payments: 2 open incidents"

        missing = await client.call("search", {})
        assert isinstance(missing, Failed) and missing.kind == "unknown_kind" and "service" in missing.message

        failed = await client.call("fail", {})
        assert isinstance(failed, Failed) and "upstream down" in failed.message
        assert describe(failed, "en").startswith("Not successful")

        with pytest.raises(ProtocolError) as caught:
            await client.call("no-such-tool", {})
        if not (name == "mcp-lowlevel" and version is None):
            assert isinstance(caught.value, UnknownTool)
        # else: the low-level server answers an unknown tool with -32603 (its handler raised): typed too

        # the seed's accident: a success flag over "accepted", nothing to check it by (was: Done)
        assert "outputSchema" not in tools["submit"] and "outputSchema" not in tools["sync"]
        for language, words in (("en", "accepted"), ("zh", "已受理")):
            accepted = await client.call("submit", {"language": language})
            assert isinstance(accepted, Unconfirmed) and not accepted, accepted
            assert accepted.claim == "accepted" and accepted.text == words
            assert describe(accepted, "en").startswith("Not done") and describe(accepted, "zh").startswith("未完成")
        synced = await client.call("sync", {})
        assert isinstance(synced, Unconfirmed) and synced.claim == "failed" and not synced, synced

        if elicits:
            said = [await client.call("ask", {}) for _ in range(3)]
            assert all(isinstance(o, Done) for o in said), said
            assert [o.text for o in said] == ["the user chose P1: customers affected", "decline", "cancel"]
            assert all(isinstance(r, FormRequest) for r in handler.shown)
            assert set(handler.shown[0].schema["properties"]) == {"severity", "reason"}


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize("peer", list(PYTHON_PEERS))
def test_python_peers_over_stdio(peer: str, era: str) -> None:
    command, elicit_eras = PYTHON_PEERS[peer]
    run(_exercise_python_peer([*command, "stdio"], ERAS[era], era in elicit_eras, peer))


@pytest.fixture(scope="module")
def python_peer_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Each Python peer's HTTP server, started the first time a test asks for it and stopped at the
    end of the module: both eras' clients talk to one server (each its own session; the peers keep
    no state between calls), so each peer's interpreter and imports start once, not once per era."""
    with contextlib.ExitStack() as stack:
        class Urls(dict[str, str]):
            def __missing__(self, peer: str) -> str:
                command = PYTHON_PEERS[peer][0]
                url = self[peer] = stack.enter_context(http_peer([*command, "http"], tmp_path_factory.mktemp(peer)))
                return url

        yield Urls()


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize("peer", list(PYTHON_PEERS))
def test_python_peers_over_http(peer: str, era: str, python_peer_urls: dict[str, str]) -> None:
    command, elicit_eras = PYTHON_PEERS[peer]
    run(_exercise_python_peer(python_peer_urls[peer], ERAS[era], era in elicit_eras, peer))


# -- the TypeScript reference server -------------------------------------------------------------------


def _everything() -> list[str]:
    assert NODE.exists() and EVERYTHING.exists(), "run `npm ci` in conformance/ (scripts/test does)"
    return [str(NODE), str(EVERYTHING)]


ELICIT_ACCEPT = Accept({"name": "Ada", "check": True, "email": "ada@example.com", "integer": 7})


async def _exercise_everything(target: Any) -> None:
    options: dict[str, Any] = {"stderr": subprocess.DEVNULL} if isinstance(target, list) else {}
    guarded = answers(Decline())
    async with Client(target, elicitation=guarded, **options) as client:
        assert client.era == "legacy" and client.version == "2025-11-25"  # it has no 2026-07-28
        tools = {t["name"]: t for t in await client.list_tools()}
        assert {"echo", "get-structured-content", "simulate-research-query"} <= set(tools)

        echo = await client.call("echo", {"message": "hi"})
        assert isinstance(echo, Done) and echo.text == "Echo: hi"
        weather = await client.call("get-structured-content", {"location": "New York"})
        assert isinstance(weather, Done) and isinstance(weather.structured["temperature"], (int, float))

        missing = await client.call("echo", {})
        assert isinstance(missing, Failed) and missing.kind == "unknown_kind" and "Invalid" in missing.message
        wrong = await client.call("get-sum", {"a": "one", "b": 2})
        assert isinstance(wrong, Failed)

        with pytest.raises(UnknownTool):
            await client.call("no-such-tool", {})

        # Its form mentions a PIN only to say "do not give us your phone number, pin, or other
        # sensitive info" (a number field, and a negation): no credential ask (issue 24), so the
        # handler is shown it, here to decline it.  The tool's answer to a decline is a success flag
        # over "❌ User declined to provide the requested information": the information was not
        # given, so the client does not call it done (Unconfirmed, claim "failed").
        refused = await client.call("trigger-elicitation-request", {})
        assert isinstance(refused, Unconfirmed) and refused.claim == "failed" and "declined" in refused.text
        assert len(guarded.shown) == 1 and isinstance(guarded.shown[0], FormRequest)

    handler = answers(ELICIT_ACCEPT, Decline(), Cancel())
    async with Client(target, elicitation=handler, allow_credential_forms=True, **options) as client:
        said = [await client.call("trigger-elicitation-request", {}) for _ in range(3)]
        assert isinstance(said[0], Done) and isinstance(said[1], Unconfirmed), said
        assert "provided the requested information" in said[0].text and "Ada" in said[0].text
        assert "declined" in said[1].text and "cancel" in said[2].text.lower()
        # was: the cancel reply ("⚠️ User cancelled the elicitation dialog") gave no claim, so Done, while
        # the decline reply was Unconfirmed: the same statement (the input was not given), the same outcome
        assert isinstance(said[2], Unconfirmed) and said[2].claim == "failed", said[2]


def test_everything_over_stdio() -> None:
    run(_exercise_everything([*_everything(), "stdio"]))


def test_everything_over_http(tmp_path: Path) -> None:
    with http_peer([*_everything(), "streamableHttp"], tmp_path, env={}) as url:
        run(_exercise_everything(url))


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_everything_task_to_its_end_with_input(transport: str, tmp_path: Path) -> None:
    """2025-11-25 core tasks: accepted (not done), then input_required answered through the handler
    on the tasks/result stream, then the report; over stdio and over Streamable HTTP."""
    shown: list[Any] = []

    def handler(request: Any) -> Any:
        shown.append(request)
        options = request.schema["properties"]["interpretation"]["oneOf"]  # the form's own choices
        return Accept({"interpretation": options[0]["const"]})

    async def go(target: Any) -> None:
        options: dict[str, Any] = {"stderr": subprocess.DEVNULL} if isinstance(target, list) else {}
        async with Client(target, elicitation=handler, **options) as client:
            accepted = await client.call("simulate-research-query", {"topic": "mercury", "ambiguous": True})
            assert isinstance(accepted, Accepted) and not accepted and accepted.era == "legacy"
            assert "not yet done" in describe(accepted, "en")
            final = await accepted.wait()
            assert isinstance(final, Done), final
            chosen = shown[0].schema["properties"]["interpretation"]["oneOf"][0]["const"]
            assert len(shown) == 1 and "Research Report" in final.text and chosen in final.text
            assert "cancelled" not in final.text

    if transport == "stdio":
        run(go([*_everything(), "stdio"]))
    else:
        with http_peer([*_everything(), "streamableHttp"], tmp_path, env={}) as url:
            run(go(url))


# -- a server killed while the client waits on a task it accepted (issue #24) -----------------------------
# was: NotSent ("nothing can have happened") from wait() and cancel(), over stdio and HTTP

#: How the end of the connection may be said while waiting: the server's pipe closed (stdio), the
#: stream broke or the next request found nobody listening (HTTP).
GONE = {"server_exited", "connection_lost", "unreachable"}


async def _kill_while_waiting(client: Client, tool: str, arguments: dict[str, Any], kill: Any, how: str) -> None:
    accepted = await client.call(tool, arguments)
    assert isinstance(accepted, Accepted), accepted
    if how == "wait":
        waiting = asyncio.ensure_future(accepted.wait())
        await asyncio.sleep(0.3)
        kill()
        outcome = await waiting
    else:
        kill()
        await asyncio.sleep(0.3)
        outcome = await accepted.cancel()
    assert isinstance(outcome, Unknown) and not outcome, outcome
    assert outcome.task_id == accepted.task_id and outcome.reason in GONE, outcome
    assert accepted.task_id in describe(outcome, "en") and "may have happened" in describe(outcome, "en")


@pytest.mark.parametrize("how", ["wait", "cancel"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_everything_killed_during_a_task_is_unknown_with_the_task(transport: str, how: str, tmp_path: Path) -> None:
    """server-everything's simulate-research-query (2025-11-25 core tasks), SIGKILLed."""
    arguments = {"topic": "mercury"}
    if transport == "stdio":
        async def go() -> None:
            async with Client([*_everything(), "stdio"], stderr=subprocess.DEVNULL) as client:
                pid = client.transport.pid  # type: ignore[attr-defined]
                await _kill_while_waiting(client, "simulate-research-query", arguments,
                                          lambda: os.kill(pid, signal.SIGKILL), how)

        run(go())
        return
    with http_peer_process([*_everything(), "streamableHttp"], tmp_path, env={}) as (url, proc):
        async def go_http() -> None:
            async with Client(url) as client:
                await _kill_while_waiting(client, "simulate-research-query", arguments, proc.kill, how)

        run(go_http())


TRUECALL_TASKS = f"{PEERS / 'truecall_tasks.py'}:server"


@pytest.mark.parametrize("how", ["wait", "cancel"])
@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_truecall_killed_during_a_task_is_unknown_with_the_task(transport: str, era: str, how: str,
                                                                 tmp_path: Path) -> None:
    """truecall's own server, both eras (it has tasks in 2026-07-28 and 2025-11-25), SIGKILLed."""
    if transport == "stdio":
        async def go() -> None:
            async with Client([sys.executable, "-m", "truecall", "serve", TRUECALL_TASKS], version=ERAS[era],
                              env={"TRUECALL_DB": str(tmp_path / "peer.db")}, cwd=str(tmp_path),
                              stderr=subprocess.DEVNULL) as client:
                pid = client.transport.pid  # type: ignore[attr-defined]
                await _kill_while_waiting(client, "research", {}, lambda: os.kill(pid, signal.SIGKILL), how)

        run(go())
        return
    with served_with_token(tmp_path, TRUECALL_TASKS, "peer-token") as server:
        async def go_http() -> None:
            async with Client(server.url, token="peer-token", version=ERAS[era]) as client:
                await _kill_while_waiting(client, "research", {}, server.proc.kill, how)

        run(go_http())
