"""stdin → lines: however the bytes are chunked, every line arrives once, whole and in order; an
over-long line is answered once and skipped; a last line without its newline still counts."""

from __future__ import annotations

import asyncio
from typing import Any

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
