"""A server is built without I/O and started explicitly (issue 27: "a constructor without I/O").

Constructing a :class:`~truecall.Server` (or the desk, or a FastMCP-style ``FastMCP(...)``) only
records what it will open: no file, no connection, no migration, no journal replay.  ``start()``
opens the database, applies every store's migrations and loads the audit journals that ended
processes left; serving, ``Engine.start()`` and ``truecall.Client(server)`` call it.  Used before
that, a server says so in one line naming ``server.start()``.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

import truecall
from truecall import Principal, Server, ServerNotStarted, StaticTokens
from truecall.incidents import build_desk
from truecall.protocol.engine import Engine
from truecall.storage import CannotOpenDatabase

from pg_support import PgSchema, pg_schemas  # noqa: F401  (fixture)

TOKENS = {"t": Principal("ann", "acme", frozenset())}


def _refuse_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a constructor connected to a database")

    monkeypatch.setattr(sqlite3, "connect", refused)
    monkeypatch.setattr(psycopg, "connect", refused)


def _built(kind: str, path: Path) -> Server:
    if kind == "server":
        return Server("s", tokens=StaticTokens.from_plain(TOKENS), db=path)
    if kind == "fastmcp":
        mcp = truecall.FastMCP("drop-in", db=str(path))

        @mcp.tool()
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        return mcp
    return build_desk(str(path))


@pytest.mark.parametrize("kind", ["server", "fastmcp", "desk"])
def test_constructing_opens_nothing(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _refuse_connections(monkeypatch)
    path = tmp_path / "app.db"
    _built(kind, path)
    assert sorted(os.listdir(tmp_path)) == []  # no database, no WAL, no key file, no journal folder


def test_an_unreachable_server_database_is_found_at_start_not_at_construction(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _refuse_connections(monkeypatch)
    server = Server("s", db="postgresql://truecall@127.0.0.1:1/none?schema=tc_start")
    monkeypatch.undo()
    with pytest.raises(CannotOpenDatabase):
        server.start()


def test_on_postgresql_the_desk_is_built_without_a_connection_and_its_start_makes_the_schema(
        pg_schemas: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    schema: PgSchema = pg_schemas(create=False)  # a fresh name: opening the URL creates the schema
    _refuse_connections(monkeypatch)
    desk = build_desk(schema.url)
    monkeypatch.undo()
    assert schema.rows("SELECT count(*) FROM information_schema.schemata WHERE schema_name = %s",
                       (schema.name,)) == [(0,)]
    desk.start()
    try:
        applied = {row[0] for row in schema.rows("SELECT name FROM _migrations")}
        assert {"audit-1", "tasks-1"} <= applied
        assert schema.rows("SELECT count(*) FROM incidents")[0][0] > 0  # the desk's demo rows, seeded at start
    finally:
        desk.db.close()


def test_malformed_settings_are_still_refused_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    _refuse_connections(monkeypatch)
    with pytest.raises(ValueError, match="schema name"):
        Server("s", db="postgresql://truecall@127.0.0.1:1/none?schema=1-bad")
    monkeypatch.setenv("TRUECALL_AUDIT_KEY", "not base64!")
    with pytest.raises(truecall.SettingError, match="TRUECALL_AUDIT_KEY"):
        Server("s", db=":memory:")


def test_start_opens_migrates_and_is_idempotent(tmp_path: Path) -> None:
    server = build_desk(str(tmp_path / "desk.db"))
    assert server.start() is server
    assert server.start() is server  # a second call changes nothing
    applied = {row[0] for row in server.db.fetchall("SELECT name FROM _migrations")}
    assert {"audit-1", "tasks-1"} <= applied and any(name.startswith("desk") for name in applied)
    assert server.db.fetchone("SELECT count(*) FROM incidents")[0] > 0  # the desk's demo rows, seeded at start
    server.db.close()


_ENDED_WRITER = """
import asyncio, os, sys
import truecall.audit
from truecall import Server

truecall.audit._log.LOAD_DELAY_S = 3600  # never loaded by this process: only its journal holds the record
server = Server("s", db=sys.argv[1]).start()

async def main():
    server.events.defer(asyncio.get_running_loop())
    server.events.record("app.happened", outcome="ok")  # durable in the journal
    os._exit(0)  # ends without loading it

asyncio.run(main())
"""


def test_start_loads_the_journal_an_ended_process_left(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    subprocess.run([sys.executable, "-c", _ENDED_WRITER, str(path)], check=True, timeout=60)
    assert "app.happened" not in _kinds(path)  # (journaled only)
    server = Server("s", db=path)
    assert "app.happened" not in _kinds(path)  # constructing a server loads nothing
    server.start()
    assert "app.happened" in _kinds(path)
    server.db.close()


def _kinds(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {row[0] for row in conn.execute("SELECT kind FROM audit_events")}
    finally:
        conn.close()


@pytest.mark.parametrize("audit", [True, False])
def test_the_direct_api_of_an_unstarted_server_says_to_start_it_before_anything_runs(
        tmp_path: Path, audit: bool) -> None:
    server = Server("s", tokens=StaticTokens.from_plain(TOKENS), db=tmp_path / "app.db", audit=audit)
    ran: list[str] = []

    @server.tool()
    def echo(word: str) -> str:
        """Say it back."""
        ran.append(word)
        return word

    @server.resource("notes://today")
    def today() -> str:
        ran.append("read")
        return "nothing yet"

    @server.prompt()
    def ask(topic: str) -> str:
        ran.append("prompt")
        return f"Tell me about {topic}"

    me = TOKENS["t"]
    with pytest.raises(ServerNotStarted, match=r"server\.start\(\)"):
        server.call_tool("echo", {"word": "hi"}, "t")
    with pytest.raises(ServerNotStarted, match=r"server\.start\(\)"):
        asyncio.run(server.acall_tool(me, "echo", {"word": "hi"}))
    with pytest.raises(ServerNotStarted, match=r"server\.start\(\)"):
        asyncio.run(server.read_resource(me, "notes://today"))
    with pytest.raises(ServerNotStarted, match=r"server\.start\(\)"):
        asyncio.run(server.get_prompt(me, "ask", {"topic": "x"}))
    assert ran == [] and not os.listdir(tmp_path)  # refused before anything ran or was opened
    server.start()
    assert server.call_tool("echo", {"word": "hi"}, "t").structured_content == {"result": "hi"}
    assert asyncio.run(server.acall_tool(me, "echo", {"word": "ho"})).structured_content == {"result": "ho"}
    assert asyncio.run(server.read_resource(me, "notes://today"))[0]["text"] == "nothing yet"
    assert ran == ["hi", "ho", "read"]
    server.db.close()


def test_an_engine_starts_its_server(tmp_path: Path) -> None:
    server = Server("s", db=tmp_path / "app.db")
    Engine(server)
    assert not os.listdir(tmp_path)  # an engine too is built without I/O
    Engine(server).start()
    assert server.started
    server.db.close()


def test_an_in_process_client_needs_no_start_call(tmp_path: Path) -> None:
    mcp = _built("fastmcp", tmp_path / "app.db")

    async def use() -> Any:
        async with truecall.Client(mcp) as client:
            return await client.call("add", {"a": 2, "b": 3})

    outcome = asyncio.run(use())
    assert outcome.result["structuredContent"] == {"result": 5}
    assert mcp.started
    mcp.db.close()


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="CPython's object layout")
def test_a_started_server_keeps_its_attributes_inline(tmp_path: Path) -> None:
    """``start()`` removes the entry points' refusals without reading ``server.__dict__``: reading it
    would turn CPython's inline attribute values into a dict object for good, and every attribute
    read of the server on the served path (``server.events``, ``.registry``, ``.rate_limit``… dozens
    a call) would then cost about three times as much (measured: 5.9 → 20.8 ns each; ~2,200
    instructions a call under callgrind).  The garbage collector sees an object with inline values
    as its values one by one, and a materialised one as a single dict."""
    server = Server("inline", db=str(tmp_path / "s.db"))
    server.start()
    try:
        referents = gc.get_referents(server)
        assert len(referents) > 2, f"the server's attributes became a dict: {[type(r).__name__ for r in referents]}"
        assert getattr(server.acall_tool, "__func__", None) is Server.acall_tool  # the refusal itself is gone
    finally:
        server.db.close()
