"""Operator output stays readable: tables fit 80 columns without cutting a value, ``--wide`` puts
every column of a row on one line, no cell says ``None``, and ``truecall migrate`` says what it did."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from truecall.cli._commands import app
from truecall.incidents import DEMO_TOKENS, build_desk

OPERATOR = DEMO_TOKENS["demo-acme-operator"]


def run(*args: str, columns: int = 80, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns), **(env or {})})


def assert_fits(out: str, width: int = 80) -> None:
    for line in out.splitlines():  # tables and messages alike (messages wrap between words)
        assert len(line) <= width, f"{len(line)} columns: {line!r}"
    assert "…" not in out  # nothing cut
    assert "None" not in out


@pytest.fixture
def desk_db(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "a-rather-long-folder-name-for-the-operator-database-to-live-in" / "desk.db"
    path.parent.mkdir()
    server = build_desk(str(path), faults={"sequence": ["none", "drop", "crash"]}, ack_timeout_s=0.02,
                        claim_lease_s=0.05).start()
    server.call_tool("incident.search", {"service": "payments"}, "demo-acme-operator", "acme")
    server.call_tool("incident.search", {}, "demo-acme-operator", "acme")
    for token, tool in (("not-a-token", "incident.search"), ("demo-acme-reader", "incident.escalate")):
        with pytest.raises(PermissionError):
            server.call_tool(tool, {"service": "x"} if tool == "incident.search" else {"incidentId": "INC-1"},
                             token, "acme")
    ids = []

    async def main() -> None:
        for key in ("k-ok", "k-drop", "k-crash"):
            task = await server.acall_tool(OPERATOR, "incident.handle", {"incidentId": "INC-1001",
                                                                         "idempotencyKey": key}, task_mode="ext")
            ids.append(task.task_id)
            await server.task_runtime.wait(task.task_id)
        assert await server.state.upstream.drain()

    asyncio.run(main())
    server.db.close()
    time.sleep(0.1)  # past the crashed worker's claim (lease_until = claim time + 0.05 s): reconcile may fence it
    return {"db": str(path), "ids": ids}


def records(db: str) -> list[dict[str, Any]]:
    result = run("audit", "--db", db, "--json")
    assert result.exit_code == 0, result.output
    return [orjson.loads(line) for line in result.stdout.splitlines()]


def test_audit_fits_80_columns_and_cuts_nothing(desk_db: dict[str, Any]) -> None:
    result = run("audit", "--db", desk_db["db"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert_fits(out)
    assert "--wide" in out  # says how to get every column
    words = set(re.findall(r"[^\s,]+", out))
    for r in records(desk_db["db"]):
        for value in (r["kind"], r["tool"], r["subject"], r["tenant"], r["outcome"]):
            assert value is None or value in words, value
        date, _, clock = datetime.fromtimestamp(r["ts"], timezone.utc).isoformat(timespec="seconds") \
            .replace("+00:00", "Z").partition("T")
        assert date in words and clock in words
    assert "reason=invalid_credential" in words and "detail=" not in out  # a null field is left out


def test_audit_wide_has_every_column_of_a_row_on_one_line(desk_db: dict[str, Any]) -> None:
    result = run("audit", "--db", desk_db["db"], "--wide")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "…" not in out and "None" not in out and "--wide" not in out
    lines = out.splitlines()
    header = next(line for line in lines if "kind" in line and "details" in line)
    for column in ("time", "tenant", "subject", "tool", "outcome", "ms"):
        assert column in header
    for r in records(desk_db["db"]):
        when = datetime.fromtimestamp(r["ts"], timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        assert any(when in line and r["kind"] in line and r["outcome"] in line and (r["tool"] or "-") in line
                   for line in lines), r
    denied = next(line for line in lines if "reason=invalid_credential" in line)
    assert re.search(r"│ - +│ - +│ - +│ denied", denied)  # no tenant, subject or tool: '-', never None


def test_a_wide_terminal_gets_the_wide_table(desk_db: dict[str, Any]) -> None:
    out = run("audit", "--db", desk_db["db"], columns=400).stdout
    assert out == run("audit", "--db", desk_db["db"], "--wide").stdout


def test_tasks_list_fits_80_columns_and_every_id_is_whole(desk_db: dict[str, Any]) -> None:
    result = run("tasks", "list", "--db", desk_db["db"])
    assert result.exit_code == 0, result.output
    assert_fits(result.stdout)
    words = set(result.stdout.split())
    for task_id in desk_db["ids"]:
        assert task_id in words
    assert {"incident.handle", "newton@acme", "completed", "dependency_unavailable", "outcome_unknown"} <= words
    wide = run("tasks", "list", "--db", desk_db["db"], "--wide").stdout
    assert "outcome_unknown — unsettled: run `truecall reconcile`" in wide
    assert all(any(task_id in line and "incident.handle" in line and "newton@acme (acme)" in line
                   for line in wide.splitlines()) for task_id in desk_db["ids"])


def test_reconcile_and_show_fit_80_columns(desk_db: dict[str, Any]) -> None:
    settled = run("reconcile", "--db", desk_db["db"])
    assert settled.exit_code == 0, settled.output
    assert_fits(settled.stdout)
    assert desk_db["ids"][2] in settled.stdout.split() and "nothing_happened" in settled.stdout.split()
    shown = run("tasks", "show", "--db", desk_db["db"], "--", desk_db["ids"][2])
    assert shown.exit_code == 0, shown.output
    assert_fits(shown.stdout)


def test_a_task_nobody_owns_shows_no_none(tmp_path: Path) -> None:
    from truecall import Database, TaskStore

    db = Database(tmp_path / "plain.db")
    task = TaskStore(db).create()
    db.close()
    for args in (("tasks", "list"), ("tasks", "list", "--wide"), ("tasks", "show", "--", task.task_id)):
        result = run(*args[:2], "--db", str(tmp_path / "plain.db"), *args[2:])
        assert result.exit_code == 0, result.output
        assert task.task_id in result.stdout and "None" not in result.stdout, result.stdout


# -- migrate --------------------------------------------------------------------------------------------------


ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def test_migrate_lists_what_it_applied_then_says_up_to_date(tmp_path: Path) -> None:
    db = tmp_path / "fresh.db"
    first = run("migrate", "--db", str(db), env={"TRUECALL_DB": str(tmp_path / "not-this.db")})
    assert first.exit_code == 0, first.output
    lines = first.stdout.splitlines()
    assert re.fullmatch(rf"applied (\d+) migrations to {re.escape(str(db))} \(sqlite\):", lines[0])
    count = int(lines[0].split()[1])
    assert count == len(lines) - 1 and count >= 5
    assert all(re.fullmatch(rf"  {ISO}  [\w-]+", line) for line in lines[1:]), lines
    assert {"audit-1", "tasks-1", "desk-1"} <= {line.split()[-1] for line in lines[1:]}
    assert db.exists() and not (tmp_path / "not-this.db").exists()  # --db wins over $TRUECALL_DB

    again = run("migrate", "--db", str(db))
    assert again.exit_code == 0, again.output
    assert re.fullmatch(rf"{re.escape(str(db))} \(sqlite\) is up to date: {count} migrations, the last applied "
                        rf"{ISO}\n", again.stdout), again.stdout
    assert "\t" not in first.stdout + again.stdout  # no raw epoch columns


def test_migrate_with_the_database_from_the_environment(tmp_path: Path) -> None:
    db = tmp_path / "env.db"
    result = run("migrate", env={"TRUECALL_DB": str(db)})
    assert result.exit_code == 0 and result.stdout.startswith(f"applied ") and db.exists()


def test_migrate_refuses_to_pretend_for_an_app_with_its_own_database(tmp_path: Path) -> None:
    own = str(tmp_path / "own.db")
    (tmp_path / "own.py").write_text(f"from truecall import Server\nserver = Server('own', db={own!r})\n")
    result = run("migrate", f"{tmp_path / 'own.py'}:server", "--db", str(tmp_path / "other.db"))
    assert result.exit_code == 2
    assert "opens its own database" in result.output and "own.db" in result.output
    assert not (tmp_path / "other.db").exists()
