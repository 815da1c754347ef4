"""What truecall's HTTP protocol needs of uvicorn, checked against the installed uvicorn.

``transports/guarded.py`` is an ``asyncio.Protocol`` of its own on httptools; uvicorn runs it
through its public ``http=`` setting (which takes a protocol class).  What the two share is the
contract uvicorn has with every protocol class it is given: it builds the class as
``cls(config=, server_state=, app_state=)``; the protocol keeps ``server_state.connections`` and
``server_state.tasks`` (uvicorn's graceful shutdown calls ``shutdown()`` on each connection and
waits for both to empty), reads ``server_state.default_headers`` (the ``date`` and ``server``
headers uvicorn refreshes every second) and counts ``server_state.total_requests``
(``limit_max_requests``).  These tests run a real ``uvicorn.Server`` with the protocol and fail,
saying which part of that contract moved, if a uvicorn release changes it.  Nothing private of
uvicorn is used, and a test below keeps it that way.
"""

from __future__ import annotations

import asyncio
import re
import socket
from typing import Any

import uvicorn
from _paths import ROOT

from truecall.transports.guarded import GuardedHttpToolsProtocol
from truecall.transports.http import BODY_FOLLOWS, DISCONNECT_HOOK

SRC = ROOT / "src" / "truecall"
CONTRACT = ("uvicorn runs an http= protocol class as cls(config=, server_state=, app_state=) and shares "
            "ServerState.connections/tasks/default_headers/total_requests with it; "
            "src/truecall/transports/guarded.py relies on that")


def test_no_private_uvicorn_names_in_src() -> None:
    """No uvicorn internals: its protocol modules, private names, a swapped class."""
    borrowed = re.compile(r"uvicorn\.protocols|httptools_impl|_start_asgi_task|__class__\s*=|uvicorn\._|"
                          r"from uvicorn[\w.]* import _")
    found = [f"{path.relative_to(SRC)}:{n}: {line.strip()}"
             for path in sorted(SRC.rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if borrowed.search(line)]
    assert found == []


async def _exchange(port: int, request: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    return reader, writer, head


def test_uvicorn_serves_the_protocol_through_its_public_setting() -> None:
    release = asyncio.Event()
    seen: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await receive()
        seen["extensions"] = sorted(scope.get("extensions", {}))
        if scope["path"] == "/slow":
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")],
                    BODY_FOLLOWS: True})
        await send({"type": "http.response.body", "body": b"ok"})

    async def main() -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(app, http=GuardedHttpToolsProtocol, lifespan="off", log_level="warning",
                                access_log=False, proxy_headers=False, timeout_graceful_shutdown=5)
        server = uvicorn.Server(config)
        serving = asyncio.ensure_future(server.serve(sockets=[sock]))
        try:
            for _ in range(1000):  # (10 s: a loaded machine)
                if server.started:
                    break
                await asyncio.sleep(0.01)
            assert server.started
            reader, writer, head = await _exchange(port, b"GET /fast HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 OK\r\n")
            # uvicorn's default headers reach the answer through server_state.default_headers
            assert b"\r\ndate: " in head and b"\r\nserver: uvicorn\r\n" in head and b"content-length: 2\r\n" in head, \
                f"{head!r}: {CONTRACT}"
            assert await reader.readexactly(2) == b"ok"
            assert seen["extensions"] == [DISCONNECT_HOOK]
            state = server.server_state
            assert [type(c) for c in state.connections] == [GuardedHttpToolsProtocol], CONTRACT
            assert state.total_requests == 1, CONTRACT
            writer.close()

            # uvicorn's graceful shutdown: it calls shutdown() on the connection whose answer is
            # under way and waits for its task; the answer then closes the connection.
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            for _ in range(1000):  # (10 s: a loaded machine)
                if state.tasks:
                    break
                await asyncio.sleep(0.01)
            assert len(state.tasks) == 1, CONTRACT
            server.should_exit = True
            await asyncio.sleep(0.2)
            assert not serving.done()  # waiting for the answer under way
            release.set()
            answer = await asyncio.wait_for(reader.read(), 5)  # read to EOF: the connection closes
            assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and b"connection: close\r\n" in answer, answer
            await asyncio.wait_for(serving, 5)
            assert not state.connections and not state.tasks, CONTRACT
            writer.close()
        finally:
            server.should_exit = True
            await asyncio.wait_for(serving, 10)
            sock.close()

    asyncio.run(main())
