"""truecall's HTTP/1.1 protocol (``transports/guarded.py``) on a fake transport (no sockets).

It writes a promised head together with its body (one write, with a content-length), carries
the head/body/keep-alive deadlines on one lazily re-armed timer per connection, and offers a
disconnect hook in ``scope["extensions"]`` instead of making the application watch for
``http.disconnect`` with a task; ``transports/_http_wire.py:until_disconnect`` uses that hook, or a
watcher task under other servers.  The rest is HTTP/1.1 framed as uvicorn frames it (pipelining,
100-continue, HTTP/1.0, errors, back-pressure).  These tests pin the wire bytes and the limits.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from truecall.transports import guarded
from truecall.transports.guarded import GuardedHttpToolsProtocol
from truecall.transports.http import BODY_FOLLOWS as _BODY_FOLLOWS, _until_disconnect

JSON = [(b"content-type", b"application/json")]


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self.protocol: Any = None

    def write(self, data: Any) -> None:
        assert not self.closed, "write after close"
        self.writes.append(bytes(data))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.protocol is not None:
                asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)

    reading = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    @property
    def data(self) -> bytes:
        return b"".join(self.writes)


def connect(app: Callable[..., Any], **limits: float) -> tuple[GuardedHttpToolsProtocol, FakeTransport]:
    config = Config(app, lifespan="off", proxy_headers=False, access_log=False, log_level="warning",
                    timeout_keep_alive=limits.pop("keep_alive", 5))
    config.load()
    state = ServerState()
    state.default_headers = [(b"date", b"Thu, 01 Jan 2026 00:00:00 GMT"), (b"server", b"uvicorn")]
    protocol = GuardedHttpToolsProtocol(config, state, {}, _loop=asyncio.get_running_loop())
    for name, value in limits.items():
        setattr(protocol, name, value)
    transport = FakeTransport()
    transport.protocol = protocol
    protocol.connection_made(transport)
    return protocol, transport


def post(body: bytes = b'{"x":1}', path: str = "/mcp", extra: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def settle(n: int = 20) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers the request body, the way HttpTransport answers JSON (head promised, then the body)."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": JSON, _BODY_FOLLOWS: True})
    await send({"type": "http.response.body", "body": b"echo:" + body})


def test_json_answer_is_one_write_with_content_length() -> None:
    async def main() -> None:
        protocol, transport = connect(echo)
        for i in range(3):  # kept alive: each answer is one write
            transport.writes.clear()
            protocol.data_received(post(b'{"n":%d}' % i))
            await settle()
            assert len(transport.writes) == 1, transport.writes
            expected = b'echo:{"n":%d}' % i
            assert transport.writes[0] == (
                b"HTTP/1.1 200 OK\r\ndate: Thu, 01 Jan 2026 00:00:00 GMT\r\nserver: uvicorn\r\n"
                b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(expected) + expected)
        assert not transport.closed
        protocol.connection_lost(None)

    asyncio.run(main())


def test_answers_without_the_promise_go_uvicorns_way() -> None:
    """No promise, a streamed body, HEAD, connection: close, 204, an app's own content-length:
    uvicorn's framing, exactly as before."""
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        kind = scope["path"]
        if kind == "/plain":
            await send({"type": "http.response.start", "status": 200, "headers": JSON})
            await send({"type": "http.response.body", "body": b"abc"})
        elif kind == "/stream":  # SSE: the head leaves with the first event, the rest chunked
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream")], _BODY_FOLLOWS: True})
            await send({"type": "http.response.body", "body": b"event: a\n\n", "more_body": True})
            await send({"type": "http.response.body", "body": b"event: b\n\n", "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        elif kind == "/nocontent":
            await send({"type": "http.response.start", "status": 204, "headers": [], _BODY_FOLLOWS: True})
            await send({"type": "http.response.body", "body": b""})
        elif kind == "/length":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-length", b"3")], _BODY_FOLLOWS: True})
            await send({"type": "http.response.body", "body": b"xyz"})

    async def main() -> None:
        protocol, transport = connect(app)
        protocol.data_received(post(path="/plain"))
        await settle()
        assert transport.data.endswith(b"transfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")

        transport.writes.clear()
        protocol.data_received(post(path="/stream"))
        await settle()
        first = transport.writes[0]
        assert first.startswith(b"HTTP/1.1 200 OK\r\n") and first.endswith(b"\r\n\r\na\r\nevent: a\n\n\r\n"), first
        assert b"transfer-encoding: chunked" in first
        assert transport.writes[1:] == [b"a\r\nevent: b\n\n\r\n", b"0\r\n\r\n"]

        transport.writes.clear()
        protocol.data_received(post(path="/nocontent"))
        await settle()
        assert transport.data.startswith(b"HTTP/1.1 204 No Content\r\n")
        assert b"content-length" not in transport.data and b"chunked" not in transport.data

        transport.writes.clear()
        protocol.data_received(post(path="/length"))
        await settle()
        assert transport.data.endswith(b"content-length: 3\r\n\r\nxyz") and transport.data.count(b"content-length") == 1

        transport.writes.clear()
        protocol.data_received(b"HEAD /length HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await settle()
        assert transport.data.startswith(b"HTTP/1.1 200 OK\r\n") and transport.data.endswith(b"\r\n\r\n")

        transport.writes.clear()
        protocol.data_received(post(path="/plain", extra="Connection: close\r\n"))
        await settle()
        assert b"connection: close\r\n" in transport.data and transport.closed

    asyncio.run(main())


def test_a_head_without_the_promise_leaves_at_once() -> None:
    """A stream opened for later events (the GET stream) must show its head before any event."""
    async def main() -> None:
        release = asyncio.Event()

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
            await release.wait()
            await send({"type": "http.response.body", "body": b""})

        protocol, transport = connect(app)
        protocol.data_received(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await settle()
        assert transport.data.startswith(b"HTTP/1.1 200 OK\r\n") and transport.data.endswith(b"\r\n\r\n")
        release.set()
        await settle()
        assert transport.data.endswith(b"0\r\n\r\n")

    asyncio.run(main())


def test_invalid_headers_are_still_refused() -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"x-evil", b"a\r\nset-cookie: b")], _BODY_FOLLOWS: True})
        await send({"type": "http.response.body", "body": b"no"})

    async def main() -> None:
        protocol, transport = connect(app)
        protocol.data_received(post())
        await settle()
        assert b"set-cookie" not in transport.data
        assert transport.closed  # uvicorn: exception after the head was started -> connection closed

    asyncio.run(main())


def test_no_timer_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests that arrive whole only move deadlines: the connection's one timer is armed
    once, not once per request (head, body and keep-alive timers used to be three)."""
    async def main() -> None:
        loop = asyncio.get_running_loop()
        armed = []
        real_call_at, real_call_later = loop.call_at, loop.call_later
        monkeypatch.setattr(loop, "call_at", lambda *a, **k: armed.append(a) or real_call_at(*a, **k))
        monkeypatch.setattr(loop, "call_later", lambda *a, **k: armed.append(a) or real_call_later(*a, **k))
        protocol, transport = connect(echo)
        for i in range(50):
            protocol.data_received(post(b'{"n":%d}' % i))
            await settle()
        assert transport.data.count(b"HTTP/1.1 200 OK") == 50
        assert len(armed) <= 2, armed
        protocol.connection_lost(None)
        assert protocol._guard is None

    asyncio.run(main())


def test_keep_alive_timeout_closes_quietly() -> None:
    async def main() -> None:
        protocol, transport = connect(echo, keep_alive=0.05)
        protocol.data_received(post())
        await settle()
        answered = transport.data
        await asyncio.sleep(0.15)
        assert transport.closed and transport.data == answered  # no 408 for an idle kept-alive connection

    asyncio.run(main())


def test_keep_alive_is_reset_by_each_request() -> None:
    async def main() -> None:
        protocol, transport = connect(echo, keep_alive=0.2)
        for _ in range(6):  # 0.3 s in all, each gap well under the timeout
            protocol.data_received(post())
            await asyncio.sleep(0.05)
        assert not transport.closed
        await asyncio.sleep(0.35)
        assert transport.closed

    asyncio.run(main())


def test_head_and_body_deadlines_answer_408() -> None:
    async def main() -> None:
        protocol, transport = connect(echo, head_timeout=0.05, keep_alive=10)
        protocol.data_received(b"POST /mcp HTTP/1.1\r\nHost: 1")  # a head that never ends
        await asyncio.sleep(0.15)
        assert transport.closed and transport.data.startswith(b"HTTP/1.1 408 ")

        protocol, transport = connect(echo, body_timeout=0.05, keep_alive=10)
        protocol.data_received(post(b"12345678")[:-4])  # a body that never ends
        await asyncio.sleep(0.15)
        assert transport.closed and transport.data.startswith(b"HTTP/1.1 408 ")

        # the first request's head deadline starts at connecting; after an answer, at the next bytes
        protocol, transport = connect(echo, head_timeout=0.1, keep_alive=10)
        await asyncio.sleep(0.05)
        protocol.data_received(post())
        await settle()
        await asyncio.sleep(0.15)
        assert not transport.closed
        answered = transport.data
        protocol.data_received(b"POST /mcp HTTP/1.1\r\n")
        await asyncio.sleep(0.05)
        assert not transport.closed
        await asyncio.sleep(0.15)
        # the second request's head stalled: it is told so, after the first one's answer
        assert transport.closed and transport.data[len(answered):].startswith(b"HTTP/1.1 408 ")

    asyncio.run(main())


def test_oversized_head_gets_431() -> None:
    async def main() -> None:
        protocol, transport = connect(echo, max_head_bytes=1024)
        protocol.data_received(post(extra="X-Big: " + "a" * 2000 + "\r\n"))
        await settle()
        assert transport.data.startswith(b"HTTP/1.1 431 ") and transport.closed

        protocol, transport = connect(echo, max_head_bytes=1024)
        for _ in range(30):  # the same, dripped: counted before httptools completes the header
            protocol.data_received(b"POST /mcp HTTP/1.1\r\nX-Big: " if not transport.writes and _ == 0 else b"a" * 100)
            if transport.closed:
                break
        assert transport.data.startswith(b"HTTP/1.1 431 ")

    asyncio.run(main())


def test_disconnect_cancels_through_the_hook() -> None:
    """Under truecall's protocol the request task is cancelled through the disconnect hook: no watcher task."""
    async def main() -> None:
        outcome: list[Any] = []
        started = asyncio.Event()

        async def slow() -> str:
            started.set()
            await asyncio.sleep(30)
            return "done"

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await receive()
            before = len(asyncio.all_tasks())
            work = slow()
            outcome.append(("tasks during the call", before))
            outcome.append(("result", await _until_disconnect(work, scope, receive)))
            outcome.append(("cancelling", asyncio.current_task().cancelling()))  # type: ignore[union-attr]

        protocol, transport = connect(app)
        protocol.data_received(post())
        await started.wait()
        assert len(asyncio.all_tasks()) == outcome[0][1]  # no task was added for the call
        protocol.connection_lost(None)
        await settle()
        assert outcome[1:] == [("result", None), ("cancelling", 0)]

    asyncio.run(main())


def test_until_disconnect_under_another_server() -> None:
    """A plain ASGI receive: a watcher task only once the work yields; a disconnect cancels the work."""
    async def main() -> None:
        gone = asyncio.Event()

        async def receive() -> dict[str, Any]:
            await gone.wait()
            return {"type": "http.disconnect"}

        async def quick() -> int:
            return 7

        before = len(asyncio.all_tasks())
        assert await _until_disconnect(quick(), {}, receive) == 7
        assert len(asyncio.all_tasks()) == before
        await settle()
        assert len(asyncio.all_tasks()) == before  # the deferred watcher never started

        cancelled = []

        async def slow() -> int:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.append(True)
                raise
            return 1

        async def leave_soon() -> None:
            await asyncio.sleep(0.01)
            gone.set()

        leaver = asyncio.ensure_future(leave_soon())
        assert await _until_disconnect(slow(), {}, receive) is None
        assert cancelled == [True] and asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
        await leaver

        gone.clear()

        async def medium() -> int:
            await asyncio.sleep(0.01)
            return 2

        assert await _until_disconnect(medium(), {}, receive) == 2
        await settle()
        assert len(asyncio.all_tasks()) == before  # the watcher was cancelled with the call

    asyncio.run(main())


def test_header_block_cache_stays_bounded() -> None:
    async def main() -> None:
        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await receive()
            sid = scope["path"].encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [*JSON, (b"mcp-session-id", sid)], _BODY_FOLLOWS: True})
            await send({"type": "http.response.body", "body": b"{}"})

        protocol, transport = connect(app)
        for i in range(300):
            protocol.data_received(post(path=f"/s{i}"))
            await settle()
        assert transport.data.count(b"HTTP/1.1 200 OK") == 300
        assert b"mcp-session-id: /s299\r\ncontent-length: 2\r\n\r\n{}" in transport.data
        assert len(guarded._BLOCKS) <= 256

    asyncio.run(main())


def test_request_targets_are_parsed_once_and_the_cache_stays_bounded() -> None:
    async def main() -> None:
        seen: list[tuple[str, bytes, bytes]] = []

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await receive()
            seen.append((scope["path"], scope["raw_path"], scope["query_string"]))
            await send({"type": "http.response.start", "status": 200, "headers": JSON, _BODY_FOLLOWS: True})
            await send({"type": "http.response.body", "body": b"{}"})

        protocol, transport = connect(app)
        targets = ["/mcp", "/a%20b?x=1&y=%20", "/mcp", "/a%20b?x=1&y=%20"] + [f"/t{i}?q={i}" for i in range(300)]
        for target in targets:
            protocol.data_received(post(path=target))
            await settle()
        assert seen[:4] == [("/mcp", b"/mcp", b""), ("/a b", b"/a%20b", b"x=1&y=%20")] * 2
        assert seen[-1] == ("/t299", b"/t299", b"q=299") and len(seen) == len(targets)
        assert len(guarded._TARGETS) <= 256
        protocol.root_path = "/root"  # (a cached target is keyed by the root path it was parsed under too)
        protocol.data_received(post(path="/mcp"))
        await settle()
        assert seen[-1] == ("/root/mcp", b"/root/mcp", b"")

    asyncio.run(main())


def test_a_json_answer_is_written_without_awaited_sends_and_waits_when_writes_are_paused(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from truecall import Principal, Server
    from truecall.protocol.engine import Engine
    from truecall.transports.http import HttpTransport

    server = Server("whole", db=str(tmp_path / "w.db"))
    app = HttpTransport(Engine(server), anonymous=Principal("tester", "t1", frozenset()), metrics=False)
    body = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
            b'"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}')
    used: list[bool] = []
    real = guarded._Cycle.answer_whole

    def spy(self: Any, status: int, headers: Any, payload: bytes) -> bool:
        used.append(done := real(self, status, headers, payload))
        return done

    monkeypatch.setattr(guarded._Cycle, "answer_whole", spy)

    async def main() -> None:
        server.events.defer(asyncio.get_running_loop())
        protocol, transport = connect(app)
        protocol.data_received(post(body, extra="Accept: application/json\r\n"))
        await settle(50)
        assert used == [True] and transport.data.count(b"HTTP/1.1 200 OK") == 1
        head, _, answer = transport.data.partition(b"\r\n\r\n")
        assert b"content-length: %d" % len(answer) in head and b"mcp-session-id: " in head
        assert b'"protocolVersion":"2025-11-25"' in answer
        protocol.pause_writing()  # the client reads nothing: the answer waits for the drain
        protocol.data_received(post(body, extra="Accept: application/json\r\n"))
        await settle(50)
        assert used == [True, False] and transport.data.count(b"HTTP/1.1 200 OK") == 1
        protocol.resume_writing()
        await settle(50)
        assert transport.data.count(b"HTTP/1.1 200 OK") == 2
        server.db.close()

    asyncio.run(main())


def test_pipelined_requests_are_answered_in_order() -> None:
    async def main() -> None:
        order: list[str] = []

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await receive()
            order.append(scope["path"])
            if scope["path"] == "/first":
                await asyncio.sleep(0.02)  # the second request waits for this answer
            await send({"type": "http.response.start", "status": 200, "headers": JSON, _BODY_FOLLOWS: True})
            await send({"type": "http.response.body", "body": scope["path"].encode()})

        protocol, transport = connect(app)
        protocol.data_received(post(path="/first") + post(path="/second"))
        await asyncio.sleep(0.1)
        assert order == ["/first", "/second"]
        assert transport.data.index(b"\r\n\r\n/first") < transport.data.index(b"\r\n\r\n/second")
        assert transport.reading and not transport.closed

    asyncio.run(main())


def test_expect_100_continue_http_1_0_and_an_upgrade() -> None:
    async def main() -> None:
        protocol, transport = connect(echo)
        protocol.data_received(b"POST /mcp HTTP/1.1\r\nHost: 1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        await settle()
        assert transport.data == b"HTTP/1.1 100 Continue\r\n\r\n"  # asked for by the application's receive
        protocol.data_received(b"{}")
        await settle()
        assert transport.data.endswith(b"content-length: 7\r\n\r\necho:{}") and not transport.closed

        protocol, transport = connect(echo)  # HTTP/1.0: answered, then closed
        protocol.data_received(b"POST /mcp HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}")
        await settle()
        assert transport.data.startswith(b"HTTP/1.1 200 OK\r\n") and b"connection: close\r\n" in transport.data
        assert transport.closed

        protocol, transport = connect(echo)  # no WebSocket here: a plain answer, then closed
        protocol.data_received(b"GET /mcp HTTP/1.1\r\nHost: 1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        await settle()
        assert transport.data.startswith(b"HTTP/1.1 200 OK\r\n") and b"connection: close\r\n" in transport.data
        assert transport.data.endswith(b"\r\n\r\n5\r\necho:\r\n0\r\n\r\n")
        assert transport.closed

    asyncio.run(main())


def test_errors_and_limits_answered_as_uvicorn_does() -> None:
    async def boom(scope: dict[str, Any], receive: Any, send: Any) -> None:
        raise ValueError("boom")

    async def main() -> None:
        protocol, transport = connect(boom)
        protocol.data_received(post())
        await settle()
        assert transport.data.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
        assert transport.data.endswith(b"\r\n\r\nInternal Server Error") and transport.closed

        protocol, transport = connect(echo)
        protocol.data_received(b"NOT HTTP\r\n\r\n")
        assert transport.data.startswith(b"HTTP/1.1 400 Bad Request\r\n") and transport.closed

        protocol, transport = connect(echo)
        protocol.limit_concurrency = 1  # (uvicorn's limit_concurrency: this connection is the one)
        protocol.data_received(post())
        await settle()
        assert transport.data.startswith(b"HTTP/1.1 503 Service Unavailable\r\n") and transport.closed

    asyncio.run(main())


def test_back_pressure_both_ways() -> None:
    """A body the application does not read stops the socket being read; a paused socket write
    holds the application's next send until the transport drains."""
    async def main() -> None:
        release = asyncio.Event()

        async def late_reader(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await release.wait()
            await echo(scope, receive, send)

        protocol, transport = connect(late_reader)
        big = b"x" * 100_000
        protocol.data_received(post(big)[:-30_000])
        assert not transport.reading
        release.set()
        await settle()
        assert transport.reading
        protocol.data_received(big[-30_000:])
        await settle()
        assert transport.data.endswith(b"echo:" + big)

        sent: list[str] = []

        async def two_events(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await receive()
            await send({"type": "http.response.start", "status": 200, "headers": JSON})
            sent.append("head")
            await send({"type": "http.response.body", "body": b"a", "more_body": True})
            sent.append("a")
            await send({"type": "http.response.body", "body": b"b"})
            sent.append("b")

        protocol, transport = connect(two_events)
        protocol.pause_writing()
        protocol.data_received(post())
        await settle()
        assert sent == []
        protocol.resume_writing()
        await settle()
        assert sent == ["head", "a", "b"] and transport.data.endswith(b"1\r\nb\r\n0\r\n\r\n")

    asyncio.run(main())


def test_a_stream_paused_for_writing_is_released_when_its_peer_leaves() -> None:
    """A stream's send waiting for a peer that never reads (write paused) returns when that peer
    goes, and the application ends: nothing waits forever on a dead connection.  (stress/slow_peers.py's
    sse_never_read rarely reaches a paused write since the change feed coalesces: here it is direct.)"""
    async def main() -> None:
        sends: list[str] = []
        paused, ended = asyncio.Event(), asyncio.Event()

        async def stream(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await receive()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream")]})
            await send({"type": "http.response.body", "body": b"data: 0\n\n", "more_body": True})
            sends.append("sent 0")
            await paused.wait()
            await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
            sends.append("sent 1")
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            ended.set()

        protocol, transport = connect(stream)
        protocol.data_received(post())
        await settle()
        protocol.pause_writing()  # the peer's buffers are full
        paused.set()
        await settle()
        assert sends == ["sent 0"] and not ended.is_set()  # the next send waits
        written = transport.data
        protocol.connection_lost(None)
        await asyncio.wait_for(ended.wait(), 5)
        assert sends == ["sent 0", "sent 1"] and transport.data == written  # returned, wrote nothing
        assert not protocol.write_paused

    asyncio.run(main())


def test_a_finished_request_leaves_no_garbage() -> None:
    """Cycle, scope and disconnect hook hold no reference cycle: each request is freed by its
    reference count, not left for the collector."""
    import gc

    async def main() -> None:
        protocol, transport = connect(echo)
        protocol.data_received(post())
        await settle()
        gc.collect()
        gc.disable()
        try:
            for _ in range(100):
                protocol.data_received(post())
                await settle()
            assert gc.collect() == 0
        finally:
            gc.enable()

    asyncio.run(main())


def test_metrics_exposition_is_prometheus_clients(tmp_path: Any) -> None:
    """The call counter and latency histogram, kept as plain numbers, write exactly what
    prometheus_client's Counter and Histogram write for the same observations."""
    import re

    from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

    from truecall import Server
    from truecall.server._metrics import BUCKETS, Metrics

    server = Server("m", "1", db=str(tmp_path / "m.db"), audit=False).start()
    metrics = Metrics(server)
    registry = CollectorRegistry()
    calls = Counter("truecall_tool_calls", "Tool calls by tool and outcome class", ["tool", "outcome"],
                    registry=registry)
    latency = Histogram("truecall_tool_call_seconds", "Tool call latency", ["tool"], registry=registry,
                        buckets=BUCKETS)
    samples = [("a", "ok", 0.0004), ("a", "ok", 0.0005), ("a", "error", 0.003), ("b", "ok", 11.0),
               ("b", "denied", 1.0), ("a", "ok", 0.25), ("c.d", "ok", 0.0)]
    for tool, outcome, seconds in samples:
        observe = server.observers[-1]
        observe(tool, outcome, seconds)
        calls.labels(tool, outcome).inc()
        latency.labels(tool).observe(seconds)

    def ours_only(text: bytes) -> str:
        lines = [line for line in text.decode().splitlines() if "truecall_tool_call" in line]
        return "\n".join(re.sub(r"_created(\{.*\}) \S+$", r"_created\1 T", line) for line in lines)

    assert ours_only(metrics.render()) == ours_only(generate_latest(registry))
    assert 'truecall_tool_call_seconds_bucket{le="+Inf",tool="b"} 2.0' in metrics.render().decode()
