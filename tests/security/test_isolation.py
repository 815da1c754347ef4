"""Tenant and owner isolation, property-tested: random principals against every desk tool, the
incident resources and the task methods, in process through the engine, over the 2026-07-28 wire
and in a handshake-era session.

Invariants, for every principal and call:

- search only ever counts the caller's tenant's incidents (checked against the table itself);
- another tenant's incident (resource or tool argument) answers exactly like a missing one;
- another principal's task answers ``tasks/get|update|cancel`` exactly like an unknown id, and the
  task itself is left alone;
- no call changes, adds or removes a row of another tenant in any table that names a tenant;
- nothing another tenant owns (an incident title) appears in any answer;
- the audit query filtered by tenant returns exactly that tenant's records.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import secrets
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mcp_schema
from truecall import AuditLog, Principal, Server
from truecall.incidents import build_desk
from truecall.protocol import Engine, Session, jsonrpc

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
TASKS_EXT = "io.modelcontextprotocol/tasks"
READ, WRITE = "incidents:read", "incidents:write"
TENANTS = ("acme", "globex", "initech")
#: Capabilities of the random clients: tasks and elicitation, so nothing is refused for lack of them.
CAPS = {"elicitation": {"form": {}}, "extensions": {TASKS_EXT: {}}}
LEGACY_CAPS = {"elicitation": {"form": {}}, "tasks": {"requests": {"tools": {"call": {}}}}}
#: Never created by the strategy below (its subjects have no digits), so never one of theirs.
OWNER = Principal("owner-1@acme", "acme", frozenset({READ, WRITE}))
OTHER_OWNER = Principal("owner-2@globex", "globex", frozenset({READ, WRITE}))

principals = st.builds(
    lambda tenant, name, scopes: Principal(f"{name}@{tenant}", tenant, frozenset(scopes)),
    st.sampled_from(TENANTS),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz.-_", min_size=1, max_size=12),
    st.sets(st.sampled_from([READ, WRITE])),
)

_ids = itertools.count(1)


# -- wire helpers ----------------------------------------------------------------------------------------


class Outbox:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        self.messages.append(orjson.loads(orjson.dumps(message)))


async def modern(engine: Engine, principal: Principal, method: str, params: dict[str, Any] | None = None,
                 caps: dict[str, Any] = CAPS) -> dict[str, Any]:
    body = {**(params or {}), "_meta": {META_VERSION: MODERN, META_CAPS: caps,
                                        META_CLIENT: {"name": "isolation", "version": "0"}}}
    message = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": body}
    response, _ = await engine.serve(jsonrpc.decode(orjson.dumps(message)), principal)
    response = orjson.loads(orjson.dumps(response))
    mcp_schema.check(response, MODERN)
    return response


async def legacy(engine: Engine, principal: Principal, session: Session, method: str,
                 params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(_ids), "method": method}
    if params is not None:
        message["params"] = params
    outbox = Outbox()
    response, _ = await engine.serve(jsonrpc.decode(orjson.dumps(message)), principal,
                                                  session=session, outbox=outbox)
    response = orjson.loads(orjson.dumps(response))
    mcp_schema.check(response, LEGACY)
    assert outbox.messages == [], outbox.messages  # nothing here ever needs to ask the client
    return response


async def open_session(engine: Engine, principal: Principal) -> Session:
    session = Session(principal=principal)
    init = await legacy(engine, principal, session, "initialize", {
        "protocolVersion": LEGACY, "capabilities": LEGACY_CAPS, "clientInfo": {"name": "isolation", "version": "0"}})
    assert init["result"]["protocolVersion"] == LEGACY
    await engine.handle(jsonrpc.decode(b'{"jsonrpc":"2.0","method":"notifications/initialized"}'), principal,
                        session=session)
    return session


class Caller:
    """One principal on one era: ``call(method, params)`` → the response message (without its id)."""

    def __init__(self, engine: Engine, principal: Principal, session: Session | None) -> None:
        self.engine, self.principal, self.session = engine, principal, session

    @property
    def era(self) -> str:
        return "legacy" if self.session else "modern"

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if self.session is None:
            response = await modern(self.engine, self.principal, method, params)
        else:
            response = await legacy(self.engine, self.principal, self.session, method, params)
        response.pop("id")
        return response


def masked(response: dict[str, Any], *values: str) -> Any:
    """``response`` with each of ``values`` replaced by one placeholder (for like-for-like comparison)."""
    raw = orjson.dumps(response).decode()
    for value in values:
        raw = raw.replace(value, "<ID>")
    return orjson.loads(raw)


# -- database helpers ----------------------------------------------------------------------------------------


def tenant_tables(path: Path) -> dict[str, str]:
    """Every table with a tenant column → that column's name."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out = {}
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            for column in ("tenant", "owner_tenant"):
                if column in columns:
                    out[table] = column
                    break
        return out
    finally:
        conn.close()


def rows_not_of(path: Path, tables: dict[str, str], tenant: str) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {t: sorted(conn.execute(f"SELECT * FROM {t} WHERE {c} IS NOT NULL AND {c} != ?", (tenant,)).fetchall(),
                          key=repr)
                for t, c in tables.items()}
    finally:
        conn.close()


# -- the servers -------------------------------------------------------------------------------------------------


def build_task_server(path: Path) -> Server:
    """Conformance-like: an optional-task tool that accepts its work, then sleeps."""
    server = Server("isolation-tasks", db=str(path)).start()

    @server.tool("slow", description="Accepts the work as a task, then sleeps for an hour.", task_support="optional")
    async def slow(ctx: Any) -> str:
        await ctx.accept_as_task("accepted; sleeping")
        await asyncio.sleep(3600)
        return "woke up"

    return server


class World:
    """The desk and the task server on one event loop, with tasks owned by somebody else."""

    def __init__(self, tmp: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.desk_path = tmp / "desk.db"
        self.desk = build_desk(str(self.desk_path)).start()
        self.desk_engine = Engine(self.desk).start()
        self.task_server = build_task_server(tmp / "tasks.db")
        self.task_engine = Engine(self.task_server).start()
        self.tables = tenant_tables(self.desk_path)
        assert {"incidents", "audit_events", "tasks"} <= set(self.tables)
        self.incidents = self.desk.db.fetchall("SELECT tenant, incident_id, service, title FROM incidents")
        self.owner_tasks: list[tuple[Principal, str, str]] = []  # (owner, task id, where)
        self.run(self._create_owner_tasks())

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, 30))

    async def _create_owner_tasks(self) -> None:
        for owner in (OWNER, OTHER_OWNER):
            response = await modern(self.task_engine, owner, "tools/call", {"name": "slow", "arguments": {}})
            result = response["result"]
            assert result["resultType"] == "task" and result["status"] == "working", result
            self.owner_tasks.append((owner, result["taskId"], "server"))
            session = await open_session(self.task_engine, owner)
            core = await legacy(self.task_engine, owner, session, "tools/call",
                                {"name": "slow", "arguments": {}, "task": {"ttl": 60000}})
            self.owner_tasks.append((owner, core["result"]["task"]["taskId"], "server"))
            # and a finished incident.handle-like task in the desk's own store
            desk_task = self.desk.tasks.create(owner=owner, tool="incident.handle")
            self.desk.tasks.complete(desk_task.task_id, {"content": [], "isError": True, "structuredContent": {
                "error": {"kind": "outcome_unknown", "message": "unknown", "reference": "k"}}})
            self.owner_tasks.append((owner, desk_task.task_id, "desk"))

    def close(self) -> None:
        for task in asyncio.all_tasks(self.loop):
            task.cancel()
        self.loop.run_until_complete(asyncio.sleep(0.01))
        self.loop.close()
        self.desk.db.close()
        self.task_server.db.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    w = World(tmp_path_factory.mktemp("isolation"))
    yield w
    w.close()


# -- the properties ----------------------------------------------------------------------------------------------


async def check_desk(world: World, caller: Caller) -> None:
    p = caller.principal
    desk = world.desk
    foreign = [(t, i, title) for t, i, _, title in world.incidents if t != p.tenant]
    own = [(t, i) for t, i, _, _ in world.incidents if t == p.tenant]
    foreign_titles = [title for _, _, title in foreign]
    answers: list[dict[str, Any]] = []

    async def call(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        answer = await caller.call(method, params)
        answers.append(answer)
        return answer

    # tools/list shows only what the scopes allow
    listed = await call("tools/list")
    visible = {t["name"] for t in listed["result"]["tools"]}
    assert visible == {t.name for t in desk.registry.tools.values() if t.scopes <= p.scopes}

    # search: only ever the caller's tenant's count
    for service in ("payments", "checkout", "search", "ghost"):
        answer = await call("tools/call", {"name": "incident.search",
                                           "arguments": {"service": service, "includeLinks": True}})
        if READ not in p.scopes:
            assert answer["error"]["code"] == -32003 and answer["error"]["data"] == {"requiredScopes": [READ]}
            continue
        expected = desk.db.fetchone("SELECT COUNT(*) FROM incidents WHERE tenant = ? AND service = ?",
                                    (p.tenant, service))[0]
        result = answer["result"]
        assert result["structuredContent"] == {"service": service, "count": expected, "tenant": p.tenant}
        links = [c["uri"] for c in result["content"] if c["type"] == "resource_link"]
        assert len(links) == expected and all(u.startswith(f"incident://{p.tenant}/") for u in links)

    # resources: another tenant's incident reads exactly like a missing one
    missing_uri = f"incident://{p.tenant}/INC-{secrets.token_hex(4)}"
    missing = await call("resources/read", {"uri": missing_uri})
    assert "error" in missing
    for tenant, incident_id, _ in foreign:
        uri = f"incident://{tenant}/{incident_id}"
        answer = await call("resources/read", {"uri": uri})
        assert masked(answer, uri) == masked(missing, missing_uri), (answer, missing)
    for tenant in TENANTS:  # a tenant segment naming nobody's data, and the caller's own ids under it
        if tenant != p.tenant:
            for _, incident_id in own:
                uri = f"incident://{tenant}/{incident_id}"
                assert masked(await call("resources/read", {"uri": uri}), uri) == masked(missing, missing_uri)
    for _, incident_id in own:
        answer = await call("resources/read", {"uri": f"incident://{p.tenant}/{incident_id}"})
        if READ in p.scopes:
            assert orjson.loads(answer["result"]["contents"][0]["text"])["incidentId"] == incident_id
        else:
            assert masked(answer, f"incident://{p.tenant}/{incident_id}") == masked(missing, missing_uri)
    if "ticket://{tenant}/{ticket_id}" in {t.uri_template for t in desk.registry.templates}:
        mine, theirs = f"ticket://{p.tenant}/TCK-nope", f"ticket://{'globex' if p.tenant != 'globex' else 'acme'}/TCK-1"
        assert masked(await call("resources/read", {"uri": theirs}), theirs) == \
            masked(await call("resources/read", {"uri": mine}), mine)

    # every tool that takes an incident id or a task id: theirs answers like a missing one
    missing_incident = f"INC-{secrets.token_hex(3)}"
    theirs_tasks = [tid for owner, tid, where in world.owner_tasks
                    if where == "desk" and (owner.tenant, owner.subject) != (p.tenant, p.subject)]
    for tool in desk.registry.tools.values():
        props = tool.input_schema.get("properties") or {}
        if "incidentId" in props:
            base = await call("tools/call", {"name": tool.name, "arguments": {"incidentId": missing_incident}})
            for _, incident_id, _ in foreign:
                answer = await call("tools/call", {"name": tool.name, "arguments": {"incidentId": incident_id}})
                assert masked(answer, incident_id) == masked(base, missing_incident), (tool.name, answer, base)
                if "result" in answer:
                    assert answer["result"].get("resultType", "complete") == "complete"  # nothing was asked
                    assert answer["result"].get("isError") is True
        if "taskId" in props:
            unknown = secrets.token_urlsafe(24)
            base = await call("tools/call", {"name": tool.name, "arguments": {"taskId": unknown}})
            for task_id in theirs_tasks:
                answer = await call("tools/call", {"name": tool.name, "arguments": {"taskId": task_id}})
                assert masked(answer, task_id) == masked(base, unknown), (tool.name, answer, base)
        if not {"incidentId", "taskId"} & set(props) and tool.name != "incident.search" and \
                not tool.input_validator.required:
            await call("tools/call", {"name": tool.name, "arguments": {}})

    # a stateless retry cannot carry an answer over to another tenant's incident
    if caller.era == "modern" and WRITE in p.scopes and own and foreign:
        first = await caller.call("tools/call", {"name": "incident.escalate", "arguments": {"incidentId": own[0][1]}})
        assert first["result"]["resultType"] == "input_required"
        replay = await caller.call("tools/call", {
            "name": "incident.escalate", "arguments": {"incidentId": foreign[0][1]},
            "requestState": first["result"]["requestState"],
            "inputResponses": {"escalation": {"action": "accept", "content": {"severity": "P1", "reason": "x"}}}})
        assert "error" in replay or replay["result"].get("isError") is True

    # nothing of theirs in anything we heard
    heard = orjson.dumps(answers).decode()
    for title in foreign_titles:
        assert title not in heard


async def check_tasks(world: World, caller: Caller, engine: Engine, where: str) -> None:
    p = caller.principal
    unknown = secrets.token_urlsafe(24)
    methods = ["tasks/get", "tasks/update", "tasks/cancel"] if caller.era == "modern" else \
        ["tasks/get", "tasks/cancel", "tasks/result"]

    def params(task_id: str, method: str) -> dict[str, Any]:
        if method == "tasks/update":
            return {"taskId": task_id, "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}}}
        return {"taskId": task_id}

    for owner, task_id, task_where in world.owner_tasks:
        if task_where != where or (owner.tenant, owner.subject) == (p.tenant, p.subject):
            continue
        for method in methods:
            theirs = await caller.call(method, params(task_id, method))
            missing = await caller.call(method, params(unknown, method))
            assert "error" in theirs, theirs
            assert masked(theirs, task_id) == masked(missing, unknown), (method, theirs, missing)
    if caller.era == "legacy":
        listed = await caller.call("tasks/list")
        ids = {t["taskId"] for t in listed["result"]["tasks"]}
        assert not ids & {tid for _, tid, _ in world.owner_tasks}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(principal=principals)
def test_no_principal_reaches_another_tenants_data(world: World, principal: Principal) -> None:
    before = rows_not_of(world.desk_path, world.tables, principal.tenant)
    task_rows_before = {tid: world.task_server.tasks.get(tid) for o, tid, w in world.owner_tasks if w == "server"}

    async def scenario() -> None:
        for session in (None, await open_session(world.desk_engine, principal)):
            caller = Caller(world.desk_engine, principal, session)
            await check_desk(world, caller)
            await check_tasks(world, caller, world.desk_engine, "desk")
        for session in (None, await open_session(world.task_engine, principal)):
            await check_tasks(world, Caller(world.task_engine, principal, session), world.task_engine, "server")

    world.run(scenario())
    assert rows_not_of(world.desk_path, world.tables, principal.tenant) == before
    for task_id, task in task_rows_before.items():
        now = world.task_server.tasks.get(task_id)
        assert now.status.value == "working" and now.responses == task.responses and now.updated_at == task.updated_at


def test_owners_still_reach_their_own_tasks(world: World) -> None:
    async def scenario() -> None:
        for owner, task_id, where in world.owner_tasks:
            engine = world.task_engine if where == "server" else world.desk_engine
            got = await modern(engine, owner, "tools/list")
            assert "result" in got
            answer = await modern(engine, owner, "tasks/get", {"taskId": task_id})
            assert answer["result"]["taskId"] == task_id

    world.run(scenario())


def test_audit_query_is_tenant_filtered(world: World) -> None:
    async def calls() -> None:  # records of its own under two tenants (the test stands alone, in any order)
        for tenant in TENANTS[:2]:
            answer = await modern(world.desk_engine, Principal(f"reader@{tenant}", tenant, frozenset({READ})),
                                  "tools/call", {"name": "incident.search", "arguments": {"service": "payments"}})
            assert "result" in answer, answer

    world.run(calls())
    log = AuditLog(world.desk.db)
    conn = sqlite3.connect(f"file:{world.desk_path}?mode=ro", uri=True)
    try:
        for tenant in TENANTS:
            records = log.query(tenant=tenant, limit=10 ** 6)
            raw = conn.execute("SELECT COUNT(*) FROM audit_events WHERE tenant = ?", (tenant,)).fetchone()[0]
            assert len(records) == raw
            assert all(r.tenant == tenant for r in records)
            # subjects named in one tenant's records all belong to that tenant
            assert all(r.subject is None or r.subject.endswith(f"@{tenant}") for r in records)
        assert log.query(tenant="no-such-tenant") == []
        assert log.query(tenant="acme' OR '1'='1") == []
        # the random principals left records under every tenant they used
        assert conn.execute("SELECT COUNT(DISTINCT tenant) FROM audit_events WHERE tenant IS NOT NULL").fetchone()[0] \
            >= 2
    finally:
        conn.close()


def test_escalate_by_another_tenant_never_changes_the_row(world: World) -> None:
    """Explicitly, with full scopes, both eras and a consent that would otherwise apply."""
    globex_op = Principal("op@globex", "globex", frozenset({READ, WRITE}))
    row = "SELECT severity, title, status FROM incidents WHERE tenant = 'acme' AND incident_id = 'INC-1001'"
    events = "SELECT COUNT(*) FROM incident_events WHERE tenant = 'acme'"
    before, events_before = world.desk.db.fetchone(row), world.desk.db.fetchone(events)

    async def scenario() -> None:
        call = {"name": "incident.escalate", "arguments": {"incidentId": "INC-1001"},
                "inputResponses": {"escalation": {"action": "accept", "content": {"severity": "P1", "reason": "r"}}}}
        answer = await modern(world.desk_engine, globex_op, "tools/call", call)
        assert answer["result"]["isError"] is True
        session = await open_session(world.desk_engine, globex_op)
        answer = await legacy(world.desk_engine, globex_op, session, "tools/call",
                              {"name": "incident.escalate", "arguments": {"incidentId": "INC-1001"}})
        assert answer["result"]["isError"] is True
        assert re.search("no such incident for this tenant", orjson.dumps(answer).decode())

    world.run(scenario())
    assert world.desk.db.fetchone(row) == before
    assert world.desk.db.fetchone(events) == events_before
