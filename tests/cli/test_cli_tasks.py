"""Operators' view: ``truecall tasks list|show|cancel`` and ``truecall reconcile``, as tables and as JSON."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from truecall import Principal, Server, StaticTokens, TaskStore
from truecall.cli._commands import app
from truecall.incidents import DEMO_TOKENS, build_desk
from truecall.incidents.dispatch_state import DispatchState

OPERATOR = DEMO_TOKENS["demo-acme-operator"]
LEASE_S = 0.05


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, list(args), env=env)


def as_json(result: Any) -> Any:
    return orjson.loads(result.stdout)


@pytest.fixture
def desk_db(tmp_path: Path) -> dict[str, Any]:
    """A desk database holding one task of each ending, plus three still working: two whose server process
    died (their runner's lease ran out) and one a live server process still runs (its lease holds)."""
    db = tmp_path / "desk.db"
    server = build_desk(str(db), faults={"sequence": ["none", "drop", "crash", "stall"], "stall": {"ms": 40}},
                        ack_timeout_s=0.02, claim_lease_s=LEASE_S, audit=False).start()
    ids: dict[str, str] = {}

    async def main() -> None:
        for name, key in (("ok", "k-ok"), ("unavailable", "k-drop"), ("crashed", "k-crash"), ("stalled", "k-stall")):
            task = await server.acall_tool(OPERATOR, "incident.handle", {"incidentId": "INC-1001",
                                                                         "idempotencyKey": key}, task_mode="ext")
            ids[name] = task.task_id
            await server.task_runtime.wait(task.task_id)
        assert await server.state.upstream.drain()

    asyncio.run(main())
    t = server.state.tickets
    for name, key, lease in (("queued", "k-queued", 0.001), ("claimed", "k-claimed", 0.001),
                             ("live", "k-live", 3600)):
        task = server.tasks.create(owner=OPERATOR, tool="incident.handle",
                                   request={"tool": "incident.handle", "era": "ext"}, runner_id="some-runner",
                                   lease_s=lease)
        t.bind_key("acme", key, "INC-1002", None)
        t.open_request("acme", OPERATOR.subject, task.task_id, key, "INC-1002", None)
        ids[name] = task.task_id
    t.claim("acme", t.dispatches("acme", "k-claimed")[0].dispatch_id, lease_s=3600)
    ids["ticket"] = t.ticket_for_key("acme", "k-ok").ticket_id
    ids["stall_ticket"] = t.ticket_for_key("acme", "k-stall").ticket_id
    server.db.close()
    time.sleep(LEASE_S * 1.5)  # the crashed worker's claim has run out
    return {"db": str(db), "ids": ids}


def test_list_as_json_shows_every_task_with_its_outcome(desk_db: dict[str, Any]) -> None:
    result = run("tasks", "list", "--db", desk_db["db"], "--json")
    assert result.exit_code == 0, result.output
    data = as_json(result)
    ids = desk_db["ids"]
    by_id = {t["taskId"]: t for t in data["tasks"]}
    assert data["count"] == data["total"] == 7
    assert set(by_id) == {ids[n] for n in ("ok", "unavailable", "crashed", "stalled", "queued", "claimed", "live")}
    assert by_id[ids["ok"]]["outcome"] == "ok" and by_id[ids["ok"]]["ticketId"] == ids["ticket"]
    assert by_id[ids["unavailable"]]["outcome"] == "dependency_unavailable"
    for name in ("crashed", "stalled"):
        assert by_id[ids[name]]["outcome"] == "outcome_unknown"
        assert by_id[ids[name]]["settlement"] is None  # unknown, not settled yet
    assert by_id[ids["queued"]]["status"] == "working"
    assert by_id[ids["ok"]]["owner"] == {"tenant": "acme", "subject": "newton@acme"}
    assert by_id[ids["ok"]]["tool"] == "incident.handle"
    working = as_json(run("tasks", "list", "--db", desk_db["db"], "--json", "--status", "working"))
    assert {t["taskId"] for t in working["tasks"]} == {ids["queued"], ids["claimed"], ids["live"]}
    newest = as_json(run("tasks", "list", "--db", desk_db["db"], "--json", "--limit", "2"))
    assert [t["taskId"] for t in newest["tasks"]] == [ids["claimed"], ids["live"]] and newest["total"] == 7
    bad = run("tasks", "list", "--db", desk_db["db"], "--status", "sleeping")
    assert bad.exit_code == 2 and "unknown status" in bad.stderr


def test_list_as_a_table(desk_db: dict[str, Any]) -> None:
    result = run("tasks", "list", "--db", desk_db["db"], "--wide")
    assert result.exit_code == 0, result.output
    out = result.stdout
    for name in ("ok", "unavailable", "crashed", "queued"):
        assert desk_db["ids"][name] in out
    assert "task" in out and "status" in out and "outcome" in out
    assert f"ok (ticket {desk_db['ids']['ticket']})" in out
    assert "outcome_unknown — unsettled: run `truecall reconcile`" in out
    assert "7 task(s)" in out
    assert "2 task(s) (the newest of 7)" in run("tasks", "list", "--db", desk_db["db"], "--limit", "2").stdout
    assert max(len(line) for line in out.splitlines()) > 120  # --wide: one line per row, nothing folded


def test_reconcile_settles_the_unknowns_and_is_idempotent(desk_db: dict[str, Any]) -> None:
    ids = desk_db["ids"]
    table = run("reconcile", "--db", desk_db["db"])
    assert table.exit_code == 0, table.output
    assert "examined 2 task(s)" in table.stdout and "2 settled now" in table.stdout
    assert "nothing_happened" in table.stdout and "ticket_exists" in table.stdout
    assert ids["stall_ticket"] in table.stdout
    assert "task results are unchanged" in table.stdout

    again = as_json(run("reconcile", "--db", desk_db["db"], "--json"))
    assert again["settled"] == [] and len(again["alreadySettled"]) == 2 and again["pending"] == []
    assert {s["outcome"] for s in again["alreadySettled"]} == {"ticket_exists", "nothing_happened"}

    listed = {t["taskId"]: t for t in as_json(run("tasks", "list", "--db", desk_db["db"], "--json"))["tasks"]}
    assert listed[ids["crashed"]]["settlement"]["outcome"] == "nothing_happened"
    assert listed[ids["stalled"]]["settlement"] == listed[ids["stalled"]]["settlement"] | {
        "outcome": "ticket_exists", "ticketId": ids["stall_ticket"], "settledBy": "truecall reconcile"}
    assert listed[ids["stalled"]]["outcome"] == "outcome_unknown"  # the result itself is unchanged
    table = run("tasks", "list", "--db", desk_db["db"], "--wide").stdout
    assert f"outcome_unknown — settled: ticket {ids['stall_ticket']} exists" in table
    assert sorted(_audit(desk_db["db"], "desk.settled")) == sorted([
        ("desk.settled", "acme", "operator (truecall cli)", "nothing_happened"),
        ("desk.settled", "acme", "operator (truecall cli)", "ticket_exists")])
    assert "outcome_unknown — settled: nothing happened" in table


def test_reconcile_json_on_a_fresh_unknown(tmp_path: Path) -> None:
    db = tmp_path / "desk.db"
    server = build_desk(str(db), faults={"sequence": ["crash"]}, ack_timeout_s=0.02, claim_lease_s=3600,
                        audit=False).start()

    async def main() -> str:
        task = await server.acall_tool(OPERATOR, "incident.handle", {"incidentId": "INC-1003",
                                                                     "idempotencyKey": "held"}, task_mode="ext")
        await server.task_runtime.wait(task.task_id)
        return task.task_id

    task_id = asyncio.run(main())
    server.db.close()
    data = as_json(run("reconcile", "--db", str(db), "--json"))
    assert data["examined"] == 1 and data["settled"] == []
    [pending] = data["pending"]
    assert pending["taskId"] == task_id and "still holds the claim" in pending["reason"]
    table = run("reconcile", "--db", str(db))
    assert "1 still pending" in table.stdout and "pending (still unknown)" in table.stdout


def test_show_table_and_json(desk_db: dict[str, Any], lang: Any) -> None:
    ids = desk_db["ids"]
    run("reconcile", "--db", desk_db["db"])
    data = as_json(run("tasks", "show", "--db", desk_db["db"], "--json", "--", ids["stalled"]))
    assert data["taskId"] == ids["stalled"] and data["status"] == "completed"
    assert data["view"]["result"]["structuredContent"]["error"]["kind"] == "outcome_unknown"
    assert data["request"]["idempotencyKey"] == "k-stall" and data["dispatch"]["state"] == "done"
    assert data["ticket"]["ticketId"] == ids["stall_ticket"]
    assert data["settlement"]["outcome"] == "ticket_exists"
    assert data["describe"].startswith("Not successful: outcome unknown")
    assert "Settled" in data["describe"] and f"ticket {ids['stall_ticket']} exists" in data["describe"]
    lang("zh")  # the setting is read once per process: the fixture makes this test a new one
    zh = as_json(run("tasks", "show", "--db", desk_db["db"], "--json", "--", ids["stalled"]))
    lang("en")
    assert zh["describe"].startswith("未成功：结果未知")
    assert "已核对" in zh["describe"] and f"工单 {ids['stall_ticket']} 已存在" in zh["describe"]

    table = run("tasks", "show", "--db", desk_db["db"], "--", ids["crashed"])
    assert table.exit_code == 0, table.output
    out = table.stdout
    assert ids["crashed"] in out and "outcome_unknown" in out and "k-crash" in out
    assert "abandoned" in out and "nothing_happened" in out and "tell the user" in out
    assert "nothing happened" in out and "未" not in out  # English by default
    lang("zh")
    assert "未产生任何变更" in run("tasks", "show", "--db", desk_db["db"], "--", ids["crashed"]).stdout
    lang("en")

    ok = as_json(run("tasks", "show", "--db", desk_db["db"], "--json", "--", ids["ok"]))
    assert ok["ticket"]["ticketId"] == ids["ticket"] and ok["ticketId"] == ids["ticket"]
    assert ids["ticket"] in ok["describe"] and "settlement" not in ok

    missing = run("tasks", "show", "--db", desk_db["db"], "--json", "no-such-task")
    assert missing.exit_code == 1 and as_json(missing) == {"taskId": "no-such-task", "error": "Task not found"}


def test_cancel_withdraws_a_queued_job_and_refuses_what_cannot_be_stopped(desk_db: dict[str, Any]) -> None:
    ids = desk_db["ids"]
    done = run("tasks", "cancel", "--db", desk_db["db"], "--", ids["queued"])
    assert done.exit_code == 0, done.output
    assert "cancelled" in done.stdout and "nothing was written" in done.stdout
    shown = as_json(run("tasks", "show", "--db", desk_db["db"], "--json", "--", ids["queued"]))
    assert shown["status"] == "cancelled" and shown["dispatch"]["state"] == DispatchState.ABANDONED.value

    claimed = run("tasks", "cancel", "--db", desk_db["db"], "--json", "--", ids["claimed"])
    assert claimed.exit_code == 1
    assert as_json(claimed) == {"taskId": ids["claimed"], "cancelled": False, "status": "working",
                                "error": "task cannot be cancelled: its dispatch is claimed (a worker holds the job "
                                         "and may still write the ticket)"}

    # a live server process runs this one: the job is withdrawn now, the process is asked to stop the task
    live = as_json(run("tasks", "cancel", "--db", desk_db["db"], "--json", "--", ids["live"]))
    assert live["cancelled"] is False and live["cancelRequested"] is True and live["status"] == "working"
    assert "withdrawn" in live["note"] and "asked to stop" in live["note"]
    shown = as_json(run("tasks", "show", "--db", desk_db["db"], "--json", "--", ids["live"]))
    assert shown["dispatch"]["state"] == "abandoned" and shown["status"] == "working"
    text = run("tasks", "cancel", "--db", desk_db["db"], "--", ids["live"])
    assert text.exit_code == 0 and f"cancel requested for {ids['live']} (still working)" in text.stdout

    completed = run("tasks", "cancel", "--db", desk_db["db"], "--", ids["ok"])
    assert completed.exit_code == 1
    assert "refused: task cannot be cancelled: completed" in completed.stderr
    again = run("tasks", "cancel", "--db", desk_db["db"], "--json", "--", ids["queued"])
    assert again.exit_code == 1 and as_json(again)["error"] == "task cannot be cancelled: cancelled"
    kinds = [k for k, *_ in _audit(desk_db["db"], "task.%")]
    assert kinds.count("task.cancelled") == 1 and kinds.count("task.cancel_requested") == 2
    assert kinds.count("task.cancel_refused") == 3


def test_cancel_on_a_plain_server_database_uses_the_task_table(tmp_path: Path) -> None:
    db = tmp_path / "plain.db"
    server = Server("plain", db=str(db), tokens=StaticTokens()).start()
    owner = Principal("a@x", "x", frozenset())
    task = server.tasks.create(owner=owner, tool="anything")
    server.db.close()
    data = as_json(run("tasks", "cancel", "--db", str(db), "--json", "--", task.task_id))
    assert data == {"taskId": task.task_id, "cancelled": True, "status": "cancelled"}
    assert "settlement" not in as_json(run("tasks", "show", "--db", str(db), "--json", "--", task.task_id))
    refused = run("reconcile", "--db", str(db))
    assert refused.exit_code == 2 and "no incident desk tables" in refused.stderr


def test_default_database_comes_from_the_environment(desk_db: dict[str, Any], tmp_path: Path) -> None:
    listed = run("tasks", "list", "--json", env={"TRUECALL_DB": desk_db["db"]})
    assert listed.exit_code == 0 and as_json(listed)["database"] == desk_db["db"]
    missing = run("tasks", "list", env={"TRUECALL_DB": str(tmp_path / "nowhere.db")})
    assert missing.exit_code == 2 and "no database at" in missing.stderr
    assert not (tmp_path / "nowhere.db").exists()  # never created by looking


def test_reading_never_changes_the_task_store(desk_db: dict[str, Any]) -> None:
    store_before = _snapshot(desk_db["db"])
    run("tasks", "list", "--db", desk_db["db"])
    run("tasks", "show", "--db", desk_db["db"], "--", desk_db["ids"]["ok"])
    assert _snapshot(desk_db["db"]) == store_before


def _audit(path: str, kind_like: str) -> list[tuple[Any, ...]]:
    import sqlite3

    from truecall.audit._journal import wait_loaded

    assert wait_loaded(path), "the server did not load its audit journal into the table"
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT kind, tenant, subject, outcome FROM audit_events WHERE kind LIKE ? "
                            "AND subject = 'operator (truecall cli)' ORDER BY id", (kind_like,)).fetchall()
    finally:
        conn.close()


def _snapshot(path: str) -> list[tuple[Any, ...]]:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT task_id, status, updated_at FROM tasks ORDER BY task_id").fetchall()
    finally:
        conn.close()


def test_help_lists_the_operator_commands() -> None:
    out = run("--help").stdout
    assert "tasks" in out and "reconcile" in out and "serve" in out
    sub = run("tasks", "--help").stdout
    assert "list" in sub and "show" in sub and "cancel" in sub
    assert TaskStore  # the commands use the public store


@pytest.mark.parametrize("value", ["fr", "zh_CN.UTF-8"])
def test_a_bad_locale_setting_is_one_clear_line(tmp_path: Path, value: str) -> None:
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "truecall.cli", "tasks", "list", "--db", str(tmp_path / "x.db")],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "TRUECALL_LANG": value})
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == f"truecall: TRUECALL_LANG must be one of en, zh, not {value!r}"
