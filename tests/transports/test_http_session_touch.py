"""A handshake-era session's row in the shared store: refreshed often enough, and not on every request.

Two replicas (two servers on one SQLite file, each with its own ``HttpTransport``) and a fake clock
(``time.time``/``time.monotonic`` as seen by the session modules), so hours pass in milliseconds.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from http_support import LEGACY, request
from truecall import Principal, Server
from truecall.protocol import _session
from truecall.transports import _session_store as _sessions
from truecall.protocol.engine import Engine
from truecall.transports import _http_sessions
from truecall.transports.http import HttpTransport

ME = Principal("tester", "t1", frozenset())
INIT = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "touch", "version": "0"}}
IDLE_S = 3600.0


class Clock:
    """Stands in for the ``time`` module in the session modules: ``time()`` and
    ``monotonic()`` are one settable value, starting at the real time; everything else is the real
    module's."""

    def __init__(self) -> None:
        self.now = time.time()

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    for module in (_session, _sessions, _http_sessions):
        monkeypatch.setattr(module, "time", fake)
    return fake


async def _post(app: HttpTransport, body: dict[str, Any], session: str | None = None) -> tuple[int, dict[bytes, bytes]]:
    headers = {"host": "127.0.0.1", "content-type": "application/json", "accept": "application/json"}
    if session is not None:
        headers |= {"mcp-session-id": session, "mcp-protocol-version": LEGACY}
    scope = {"type": "http", "method": "POST", "path": "/mcp",
             "headers": [(k.encode(), v.encode()) for k, v in headers.items()]}
    sent = False
    head: dict[bytes, bytes] = {}
    status = [0]

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": orjson.dumps(body), "more_body": False}
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status[0] = message["status"]
            head.update(message["headers"])

    await app(scope, receive, send)
    return status[0], head


def _replicas(tmp_path: Path) -> tuple[HttpTransport, HttpTransport]:
    db = str(tmp_path / "shared.db")
    a, b = Server("touch-a", db=db, audit=False), Server("touch-b", db=db, audit=False)
    return (HttpTransport(Engine(a), anonymous=ME, metrics=False, session_idle_s=IDLE_S),
            HttpTransport(Engine(b), anonymous=ME, metrics=False, session_idle_s=IDLE_S))


async def _open(app: HttpTransport) -> str:
    status, head = await _post(app, request(1, "initialize", INIT))
    assert status == 200
    session = head[b"mcp-session-id"].decode()
    status, _ = await _post(app, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    assert status == 202
    return session


def _ping(n: int) -> dict[str, Any]:
    return request(100 + n, "ping")


def test_an_active_session_stays_alive_for_the_other_replica(tmp_path: Path, clock: Clock,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # was: the row was refreshed only after a gap of more than 60 s between two requests, so a session
    # in steady use kept its initialize-time last_seen and was "not found" on the other replica an hour in
    a, b = _replicas(tmp_path)
    touches: list[float] = []
    real_touch = a.session_store.touch

    def touch(session_id: str) -> None:
        touches.append(clock.now)
        real_touch(session_id)

    monkeypatch.setattr(a.session_store, "touch", touch)

    async def run() -> None:
        session = await _open(a)
        start = clock.now
        for n in range(2 * 3600 // 5):  # a request every 5 s for two hours
            clock.now += 5
            assert (await _post(a, _ping(n), session))[0] == 200
        assert (await _post(b, _ping(-1), session))[0] == 200  # served by B from the shared row
        # ...and A refreshed the row about once a minute, not on each of its 1,440 requests
        assert 100 <= len(touches) <= (clock.now - start) / 60 + 1
        assert all(later - earlier >= 60 for earlier, later in zip(touches, touches[1:]))

    asyncio.run(run())


def test_an_abandoned_session_still_expires_on_both_replicas(tmp_path: Path, clock: Clock) -> None:
    a, b = _replicas(tmp_path)

    async def run() -> None:
        session = await _open(a)
        for n in range(100):  # busy for a while (the row is refreshed now and then) ...
            clock.now += 7
            assert (await _post(a, _ping(n), session))[0] == 200
        clock.now += IDLE_S + 1  # ... then abandoned for longer than the idle time
        assert (await _post(b, _ping(-1), session))[0] == 404
        assert (await _post(a, _ping(-2), session))[0] == 404  # expired here too, swept or not
        assert session not in a.sessions
        # the refreshed row never lets a session outlive its idle time by more than the interval
        other = await _open(a)
        clock.now += IDLE_S * 0.9 - 1
        assert (await _post(b, _ping(-3), other))[0] == 200

    asyncio.run(run())


def test_session_idle_s_set_on_the_transport_applies_to_the_store(tmp_path: Path, clock: Clock) -> None:
    # was: only the in-memory table took the new value; other replicas judged rows by the old one
    a, b = _replicas(tmp_path)
    a.session_idle_s = b.session_idle_s = 30.0
    assert a.session_store.idle_s == 30.0

    async def run() -> None:
        session = await _open(a)
        clock.now += 31
        assert (await _post(b, _ping(0), session))[0] == 404

    asyncio.run(run())


def test_a_session_idle_here_but_served_by_the_other_replica_stays_alive(tmp_path: Path, clock: Clock) -> None:
    # was (in this branch's first take, and in the sweep before it): a replica that had not seen the
    # session for the idle time ended it, shared row and all, though the other replica served it meanwhile
    a, b = _replicas(tmp_path)

    async def run() -> None:
        session = await _open(a)
        for n in range(IDLE_S_STEPS):  # B serves it every 5 minutes for longer than the idle time
            clock.now += 300
            assert (await _post(b, _ping(n), session))[0] == 200
        assert (await _post(a, _ping(-1), session))[0] == 200  # idle in A's table, alive in the store
        for n in range(IDLE_S_STEPS):
            clock.now += 300
            assert (await _post(b, _ping(n), session))[0] == 200
        await _open(a)  # a new session sweeps A's table: the session is idle there, not in the store
        assert session not in a.sessions and a.session_store.load(session, ME) is not None
        assert (await _post(a, _ping(-2), session))[0] == 200

    asyncio.run(run())


IDLE_S_STEPS = int(IDLE_S * 1.5 // 300)


def test_the_rows_of_a_replica_that_died_are_purged_by_a_live_one(tmp_path: Path, clock: Clock) -> None:
    # was: SessionStore.purge_idle had no caller; a row only the dead replica's table knew stayed forever
    a, b = _replicas(tmp_path)

    def rows() -> set[str]:
        return {r[0] for r in b.engine.server.db.fetchall("SELECT session_id FROM mcp_sessions")}

    async def run() -> None:
        dead = await _open(a)  # then A dies: nothing of it sweeps again
        clock.now += IDLE_S / 2
        alive = await _open(b)
        assert rows() == {dead, alive}
        clock.now += IDLE_S / 2 + 1
        assert (await _post(b, _ping(0), alive))[0] == 200
        await _open(b)  # B's sweep, on its next new session
        assert dead not in rows() and alive in rows()

    asyncio.run(run())
