"""stdin → lines: however the bytes are chunked, every line arrives once, whole and in order; an
over-long line is answered once and skipped; a last line without its newline still counts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from truecall.transports.stdio import _LineReader

LIMIT = 64


class _Conn:
    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.written: list[dict[str, Any]] = []

    def receive_line(self, line: bytes) -> None:
        self.lines.append(line)

    def write(self, message: dict[str, Any]) -> None:
        self.written.append(message)

    def too_large(self) -> None:
        self.write({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Message too large"}})


def _feed(chunks: list[bytes], eof: bool = True) -> _Conn:
    async def run() -> _Conn:
        conn = _Conn()
        reader = _LineReader(conn, LIMIT)  # type: ignore[arg-type]
        for chunk in chunks:
            reader.data_received(chunk)
        if eof:
            reader.eof_received()
            assert reader.closed.done()
        return conn

    return asyncio.run(run())


def _chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


_line = st.binary(max_size=LIMIT).map(lambda b: b.replace(b"\n", b" "))
_long = st.binary(min_size=LIMIT + 1, max_size=3 * LIMIT).map(lambda b: b.replace(b"\n", b" "))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_line, _long), max_size=12), st.lists(st.integers(min_value=0), max_size=20),
       st.booleans())
def test_lines_arrive_whole_once_and_in_order_however_chunked(lines: list[bytes], cuts: list[int],
                                                              last_newline: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    conn = _feed(_chunked(data, cuts))
    *expected, last = data.split(b"\n")
    if last:  # the last line without its newline, at end of input
        expected.append(last)
    short = [line for line in expected if len(line) <= LIMIT]
    assert conn.lines == short
    too_large = [m for m in conn.written if m["error"]["message"] == "Message too large"]
    assert len(too_large) == len(expected) - len(short)
    assert all(m.get("id") is None and m["error"]["code"] == -32600 for m in too_large)


def test_a_last_line_without_newline_counts_and_an_open_one_waits() -> None:
    assert _feed([b'{"a":1}\n{"b"', b":2}"]).lines == [b'{"a":1}', b'{"b":2}']
    assert _feed([b'{"a":1}\n{"b"'], eof=False).lines == [b'{"a":1}']


def test_an_over_long_line_is_answered_once_while_it_is_still_arriving() -> None:
    conn = _feed([b"x" * (LIMIT + 1), b"y" * 500, b"z" * 500], eof=False)
    assert len(conn.written) == 1 and conn.lines == []
    conn = _feed([b"x" * (LIMIT + 1), b"y" * 10 + b"\nok\n"])
    assert len(conn.written) == 1 and conn.lines == [b"ok"]


# -- a request whose first step ran outside any task, then waited ---------------------------------------------

import contextvars  # noqa: E402

from truecall.transports.stdio import _resume  # noqa: E402

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="unset")


def _eager(coro: Any) -> tuple[asyncio.Task[Any] | None, Any]:
    """What the connection does: the first step here, the rest (if any) in a task."""
    context = contextvars.copy_context()
    try:
        waiting = context.run(coro.send, None)
    except StopIteration as stop:
        return None, stop.value
    return asyncio.get_running_loop().create_task(_resume(coro, waiting), context=context), None


def test_a_request_that_waits_after_its_first_step_goes_on_in_a_task_with_its_context() -> None:
    async def run() -> None:
        gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        seen: list[str] = []

        async def request() -> str:
            _VAR.set("request")
            value = await gate
            seen.append(_VAR.get())
            await asyncio.sleep(0)  # and waits again
            return value + "!"

        task, done = _eager(request())
        assert task is not None and done is None
        assert _VAR.get() == "unset"  # the first step's context is its own
        gate.set_result("answer")
        assert await task == "answer!" and seen == ["request"]

        task, done = _eager(_instant())
        assert task is None and done == 42

    asyncio.run(run())


async def _instant() -> int:
    return 42


def test_cancelling_a_request_that_waits_reaches_it_and_errors_pass_through() -> None:
    async def run() -> None:
        gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        cleaned: list[str] = []

        async def request() -> None:
            try:
                await gate
            except asyncio.CancelledError:
                cleaned.append("cancelled")
                raise

        task, _ = _eager(request())
        assert task is not None
        await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        assert cleaned == ["cancelled"] and gate.cancelled()

        async def failing() -> None:
            await asyncio.sleep(0)
            raise LookupError("boom")

        task, _ = _eager(failing())
        assert task is not None
        try:
            await task
        except LookupError as exc:
            assert str(exc) == "boom"
        else:
            raise AssertionError("the error did not pass through")

    asyncio.run(run())


_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
         "io.modelcontextprotocol/clientInfo": {"name": "stdio-reader", "version": "1"}}


def _echo_over_stdio(db: str, calls: list[dict[str, Any]], *, journal: bool = True,
                     waiting: int | None = None) -> tuple[Any, list[dict[str, Any]]]:
    """An app with a synchronous ``echo`` tool; ``calls`` (tools/call params) sent at once on one
    connection; returns the app and the answers.  ``waiting``: how many must be in flight after."""
    import io

    import orjson

    from truecall import Principal, Server
    from truecall.protocol import Engine
    from truecall.transports.stdio import StdioConnection

    app = Server("echo", db=db, audit_journal=journal)

    @app.tool("echo", description="Echoes.")
    def echo(ctx: Any, text: str = "") -> str:
        return text

    async def run() -> list[dict[str, Any]]:
        out = io.BytesIO()
        app.events.defer(asyncio.get_running_loop())
        conn = StdioConnection(Engine(app), Principal("tester", "t1"), out)
        for rid, params in enumerate(calls):
            conn.receive_line(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                            "params": {**params, "_meta": _META}}))
        if waiting is not None:
            assert len(conn.inflight) == waiting
        await conn.drain(5.0)
        conn.flush()
        return [orjson.loads(line) for line in out.getvalue().splitlines()]

    return app, asyncio.run(run())


def test_stdio_answers_every_pipelined_sync_call_once_when_records_wait_for_a_commit(tmp_path: Any) -> None:
    """Without the journal a record waits for its commit, so every eagerly started call waits."""
    calls = [{"name": "echo", "arguments": {"text": str(rid)}} for rid in range(50)]
    app, answers = _echo_over_stdio(str(tmp_path / "e.db"), calls, journal=False, waiting=50)
    assert sorted(a["id"] for a in answers) == list(range(50))
    assert all(a["result"]["content"] == [{"type": "text", "text": str(a["id"])}] for a in answers)
    assert len(app.events.query(kind="tool.called", limit=100)) == 50


@pytest.mark.parametrize("name", [["incident"], {"a": 1}, 7, None, "missing-tool"])
def test_a_tools_call_with_any_name_is_answered_once(tmp_path: Any, name: Any) -> None:
    _, [answer] = _echo_over_stdio(str(tmp_path / "n.db"), [{"name": name, "arguments": {}}])
    assert answer["id"] == 0 and answer["error"]["code"] in (-32602, -32601)
