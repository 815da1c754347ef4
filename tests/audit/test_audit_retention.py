"""Audit retention (truecall.audit._retention): the trail kept within a budget, every dropped record exported first.

Contract: a policy (age, records, size) drops the oldest records in batches; with an export folder, a
record leaves the table only in the transaction that records its export's length and checksum, after
the file is durable; an export cut short by a crash is cut back and written again (never lost, never
twice); a damaged export stops the deleting; exported records are the stored ones, byte for byte.
The trail that cannot be written is a state: calls are refused up front and served again once it can.
(Under load, with a real kill and a real full file system: tests/reliability/test_retention.py.)
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from truecall import Principal, Server
from truecall.audit._journal import Journal
from truecall._misuse import SettingError
from truecall.audit._segments import Segments, segments
from truecall.audit._retention import (_SPAN, BATCH, ExportError, Retention, Sweeper, _span, _sqlite_chunks, read_export,
                                       sweep_once, verify_export)
from truecall.audit import AuditLog, TrailUnavailable
from truecall.cli._commands import app
from truecall.storage import Database

DAY = 86400.0


def _filled(tmp_path: Path, count: int, *, start: float | None = None, step: float = 0.0) -> tuple[Database, AuditLog]:
    db = Database(tmp_path / "a.db")
    log = AuditLog(db, key=b"k" * 32, journal=False, retain="all")
    for i in range(count):
        log.record("tool.called", tool="t", tenant="acme", subject="u", outcome="ok",
                   arguments={"n": i, "password": "hunter2"}, n=i, note="token=sk-abcdefghijklmnop1234")
    if start is not None:
        db.execute("UPDATE audit_events SET ts = ? + (id - 1) * ?", (start, step))
    return db, log


def _table(db: Database) -> dict[int, bytes]:
    return {int(r[0]): bytes(r[1]) for r in db.fetchall("SELECT id, fields FROM audit_events")}


@pytest.mark.parametrize("text,expected", [
    ("90d", Retention(90 * DAY, None, None)),
    ("5000", Retention(None, 5000, None)),
    ("2GB", Retention(None, None, 2 * 1000 ** 3)),
    ("12h, 100000 500MiB", Retention(12 * 3600, 100000, 500 * 1024 ** 2)),
    ("all", Retention()),
])
def test_a_retention_is_an_age_a_count_a_size_or_all(text: str, expected: Retention) -> None:
    assert Retention.parse(text) == expected


@pytest.mark.parametrize("text", ["90 parsecs", "-3d", "0d", "lots"])
def test_a_retention_that_cannot_work_names_its_setting(text: str) -> None:
    with pytest.raises(SettingError, match="TRUECALL_AUDIT_RETAIN"):
        Retention.parse(text)


def test_the_default_keeps_ninety_days_and_two_gigabytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRUECALL_AUDIT_RETAIN", raising=False)
    assert Retention.from_setting(None) == Retention(90 * DAY, None, 2 * 1000 ** 3)
    monkeypatch.setenv("TRUECALL_AUDIT_RETAIN", "1h")
    assert Retention.from_setting(None) == Retention(3600, None, None)
    assert Retention.from_setting("10") == Retention(None, 10, None)  # the server argument wins


def test_every_dropped_record_is_exported_first_as_it_was_stored(tmp_path: Path) -> None:
    db, _ = _filled(tmp_path, 1700)
    stored = _table(db)
    sweeper = Sweeper(db, Retention.parse("400"), tmp_path / "export", period_s=DAY)
    assert sweeper.sweep() == 1300
    kept = _table(db)
    assert sorted(kept) == list(range(1301, 1701))  # the newest 400
    exported = read_export(tmp_path / "export")
    assert [r["id"] for r in exported] == list(range(1, 1301))
    for record in exported:  # the stored document, byte for byte: redacted then, hashes as they were
        assert orjson.dumps(record["fields"]) == stored[record["id"]]
        assert "hunter2" not in orjson.dumps(record).decode() and "sk-abcdef" not in orjson.dumps(record).decode()
    assert verify_export(tmp_path / "export") == {name: True for name in verify_export(tmp_path / "export")}
    assert len(verify_export(tmp_path / "export")) == 1
    # the checksum file is what sha256sum -c reads
    out = subprocess.run(["sha256sum", "-c", *[p.name for p in (tmp_path / "export").glob("*.sha256")]],
                         cwd=tmp_path / "export", capture_output=True, text=True)
    assert out.returncode == 0 and ": OK" in out.stdout, out.stdout + out.stderr


def test_an_exported_line_is_its_columns_as_json_then_the_stored_document_whatever_they_hold(tmp_path: Path) -> None:
    """Lines are made from cached parts or by SQLite (a batch at a time): the bytes are still each record's
    columns rendered as JSON, in order, then its stored document as it is; nulls, quotes, controls and
    non-ASCII included, one combination of columns or many, one period file or two."""
    db = Database(tmp_path / "a.db")
    log = AuditLog(db, key=b"k" * 32, journal=False, retain="all")
    odd = [None, "acme", 'a"b\\c\n\x01\u00e9\u2028\t', "日本", ""]
    for i in range(2500):
        log.record("tool.called" if i % 3 else "task.created", tool=odd[i % 5], tenant=odd[(i + 1) % 5] or "acme",
                   subject=odd[(i + 2) % 5], outcome=odd[(i // 5) % 5], arguments={"n": i}, n=i)
    db.execute("UPDATE audit_events SET ts = ? + id * 0.37", (DAY * 20000 - 500,))  # a period's edge mid-trail
    stored = {int(r[0]): r for r in db.fetchall("SELECT id, ts, kind, tenant, subject, tool, outcome, fields "
                                                  "FROM audit_events")}
    assert Sweeper(db, Retention.parse("100"), tmp_path / "export", period_s=DAY).sweep() == 2400
    files = sorted((tmp_path / "export").glob("*.jsonl.gz"))
    assert len(files) == 2
    lines = [line for path in files for line in gzip.decompress(path.read_bytes()).splitlines()]
    assert len(lines) == 2400
    for line in lines:
        row = stored[orjson.loads(line)["id"]]
        head = dict(zip(("id", "ts", "kind", "tenant", "subject", "tool", "outcome"), row[:7]))
        # The columns as JSON, in order, the time the same float (SQLite writes it with 17 digits,
        # orjson with the fewest that read back), then the stored document byte for byte.
        tail = b',"fields":' + bytes(row[7]) + b"}"
        assert line.endswith(tail) and line.startswith(b'{"id":%d,"ts":' % row[0]), line
        assert list(orjson.loads(line[:-len(tail)] + b"}").items()) == list(head.items())
    db.close()


def test_records_past_their_age_go_and_younger_ones_stay(tmp_path: Path) -> None:
    now = 1_800_000_000.0
    db, _ = _filled(tmp_path, 100, start=now - 100 * 60, step=60)  # one a minute, the last a minute ago
    assert sweep_once(db, Retention.parse("30m"), None, now=now) == 70
    assert db.fetchone("SELECT MIN(ts) FROM audit_events")[0] >= now - 30 * 60  # type: ignore[index]


def test_a_sweep_with_nothing_due_reads_only_the_oldest_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Most sweeps drop nothing; they run in the serving process every few seconds, so learning that
    costs one row, not a batch of them."""
    now = 1_800_000_000.0
    db, _ = _filled(tmp_path, 100, start=now - 100 * 60, step=60)
    fetched: list[int] = []
    fetchall = db.fetchall

    def counted(sql: str, params: Any = ()) -> Any:
        rows = fetchall(sql, params)
        fetched.append(len(rows))
        return rows

    monkeypatch.setattr(db, "fetchall", counted)
    for policy in ("1d", "1000", "1GB", "1d,1000,1GB"):
        fetched.clear()
        assert sweep_once(db, Retention.parse(policy), None, now=now) == 0
        assert fetched == [1], policy
    assert sweep_once(db, Retention.parse("30m"), None, now=now) == 70  # one due: the batch is read
    assert fetched[-1] == 100



def test_an_exported_batch_reaches_python_as_one_value_not_a_row_per_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite makes a batch's export lines itself: Python is handed one value per batch, so the sweep
    thread does not take the interpreter's lock back for every record (``sqlite3`` releases it around
    each row it steps) while the serving thread wants it.  The lines are still every record, in id order."""
    now = 1_800_000_000.0
    db, _ = _filled(tmp_path, 2 * BATCH + 300, start=now - 3600, step=1.0)
    rows = 0
    fetchall = db.fetchall

    def counted(sql: str, params: Any = ()) -> Any:
        nonlocal rows
        out = fetchall(sql, params)
        rows += len(out)
        return out

    monkeypatch.setattr(db, "fetchall", counted)
    assert Sweeper(db, Retention.parse("100"), tmp_path / "export", period_s=DAY).sweep() == 2 * BATCH + 200
    assert rows <= 1  # (the oldest record's id and time: is anything due)
    assert [r["id"] for r in read_export(tmp_path / "export")] == list(range(1, 2 * BATCH + 201))
    assert all(verify_export(tmp_path / "export").values())
    db.close()
    # an age, counted by SQLite too: the records older than it, up to the first that is not
    (tmp_path / "age").mkdir()
    db, _ = _filled(tmp_path / "age", 300, start=now - 3600, step=10.0)
    db.execute("UPDATE audit_events SET ts = ? WHERE id = 250", (now - 7200,))  # an old one among the young: kept
    # (the rows' path: sweep_once without the segments a Sweeper seals on SQLite, tested below)
    writer = Sweeper(db, Retention.parse("30m"), tmp_path / "age" / "export", period_s=DAY).writer
    assert sweep_once(db, Retention.parse("30m"), writer, now=now) == 180
    assert [r["id"] for r in read_export(tmp_path / "age" / "export")] == list(range(1, 181))
    db.close()


def test_counting_the_records_reads_the_ends_of_the_table_not_all_of_it(tmp_path: Path) -> None:
    """The span of ids is read every sweep: it must not grow with the trail (``SELECT MIN(id), MAX(id)``
    scanned the whole table on SQLite)."""
    db, _ = _filled(tmp_path, 10)
    plan = " ".join(str(r[-1]) for r in db.fetchall(f"EXPLAIN QUERY PLAN {_SPAN}"))
    assert "SCAN audit_events" not in plan and "SEARCH audit_events" in plan, plan
    assert _span(db) == 10


def test_a_size_budget_shrinks_the_file(tmp_path: Path) -> None:
    db, _ = _filled(tmp_path, 6000)
    db.forget()  # checkpointed: the file holds every page
    before = os.path.getsize(tmp_path / "a.db")
    sweeper = Sweeper(db, Retention(max_bytes=before // 3), None)
    assert sweeper.sweep() > 3000
    for _ in range(5):  # (the size of a record is estimated: a sweep or two more may drop a few)
        if sweeper.sweep() == 0:
            break
    sweeper.sweep()  # the pages freed a sweep ago, taken by no new record, are given back now
    db.forget()
    assert os.path.getsize(tmp_path / "a.db") < before // 2  # given back: auto_vacuum=INCREMENTAL
    # The trail of before was sealed whole at the first sweep (SQLite: truecall.audit._segments): over
    # the size it went by rows, the newest kept — not dropped whole, everything with it.
    kept = sorted(r.id for r in AuditLog(db, key=b"k" * 32, journal=False, retain="all").query(limit=10_000))
    assert 1000 < len(kept) < 3000 and kept[-1] == 6000, (len(kept), kept[-1:])


def test_one_file_per_period(tmp_path: Path) -> None:
    db, _ = _filled(tmp_path, 300, start=1_800_000_000.0, step=60)  # five hours
    Sweeper(db, Retention.parse("1"), tmp_path / "export", period_s=3600).sweep()
    files = sorted(verify_export(tmp_path / "export"))
    assert len(files) in (5, 6) and all(verify_export(tmp_path / "export").values())
    assert len(read_export(tmp_path / "export")) == 299


def test_a_sweep_killed_after_exporting_and_before_deleting_exports_those_records_again_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db, _ = _filled(tmp_path, 2 * BATCH + 200)
    sweeper = Sweeper(db, Retention.parse("100"), tmp_path / "export", period_s=DAY)
    real = db.transaction
    batches = {"n": 0}

    def dying_transaction() -> Any:
        batches["n"] += 1
        if batches["n"] == 2:  # the second batch is in the file, durably; its transaction never commits
            raise KeyboardInterrupt("killed")
        return real()

    monkeypatch.setattr(db, "transaction", dying_transaction)
    with pytest.raises(KeyboardInterrupt):
        sweeper.sweep()
    monkeypatch.setattr(db, "transaction", real)
    assert db.fetchone("SELECT MIN(id) FROM audit_events")[0] == BATCH + 1  # type: ignore[index]
    assert not all(verify_export(tmp_path / "export").values())  # the file holds an unrecorded batch
    # the next process: a new sweeper finds the file longer than recorded, cuts it back, exports again
    assert Sweeper(db, Retention.parse("100"), tmp_path / "export", period_s=DAY).sweep() == BATCH + 100
    ids = [r["id"] for r in read_export(tmp_path / "export")]
    assert ids == list(range(1, 2 * BATCH + 101))  # each once
    assert all(verify_export(tmp_path / "export").values())


def test_an_export_that_is_not_what_was_recorded_stops_the_deleting(tmp_path: Path) -> None:
    db, log = _filled(tmp_path, 800)
    folder = tmp_path / "export"
    Sweeper(db, Retention.parse("600"), folder, period_s=DAY).sweep()
    (path,) = folder.glob("*.jsonl.gz")
    data = bytearray(path.read_bytes())
    data[20] ^= 0xFF
    path.write_bytes(bytes(data))
    for i in range(100):
        log.record("tool.called", tool="t", outcome="ok", n=i)
    with pytest.raises(ExportError, match="checksum"):
        Sweeper(db, Retention.parse("600"), folder, period_s=DAY).sweep()
    assert db.fetchone("SELECT COUNT(*) FROM audit_events")[0] == 700  # type: ignore[index]
    path.unlink()
    with pytest.raises(ExportError, match="missing"):
        Sweeper(db, Retention.parse("600"), folder, period_s=DAY).sweep()


def test_the_export_command_writes_a_range_in_the_same_format(tmp_path: Path) -> None:
    db, _ = _filled(tmp_path, 50, start=1_800_000_000.0, step=60)
    stored = _table(db)
    db.close()
    out = CliRunner().invoke(app, ["audit", "export", "--db", str(tmp_path / "a.db"), "--to", str(tmp_path / "x"),
                                   "--since", "1800000600", "--until", "1800001200"])
    assert out.exit_code == 0, out.output
    records = read_export(tmp_path / "x")
    assert [r["id"] for r in records] == list(range(11, 21))
    assert all(orjson.dumps(r["fields"]) == stored[r["id"]] for r in records)
    assert all(verify_export(tmp_path / "x").values())
    (name,) = verify_export(tmp_path / "x")
    assert hashlib.sha256((tmp_path / "x" / name).read_bytes()).hexdigest() in out.output
    again = CliRunner().invoke(app, ["audit", "export", "--db", str(tmp_path / "a.db"), "--to", str(tmp_path / "x")])
    assert again.exit_code == 2 and "exists" in again.output  # an export never overwrites one
    assert CliRunner().invoke(app, ["audit", "--db", str(tmp_path / "a.db"), "--json", "--limit", "1"]).exit_code == 0


def test_each_gzip_member_is_one_batch_and_the_file_reads_as_one(tmp_path: Path) -> None:
    db, _ = _filled(tmp_path, 1100)
    Sweeper(db, Retention.parse("1"), tmp_path / "e", period_s=DAY).sweep()
    (path,) = (tmp_path / "e").glob("*.jsonl.gz")
    assert len(gzip.decompress(path.read_bytes()).splitlines()) == 1099


# -- the trail cannot be written: a state -----------------------------------------------------------------


def _server(tmp_path: Path) -> Server:
    server = Server("full", db=str(tmp_path / "s.db"), audit_key=b"k" * 32, audit_retain="all").start()

    @server.tool()
    def ping(n: int) -> str:
        """Answers pong."""
        ran.append(n)
        return "pong"

    ran: list[int] = []
    server.state.ran = ran
    return server


def test_a_full_disk_refuses_calls_before_they_run_and_service_resumes_when_space_returns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import truecall.audit._log as audit_module

    monkeypatch.setattr(audit_module, "PROBE_S", 0.01)
    server = _server(tmp_path)
    principal = Principal("acme", "u", frozenset())
    real = Journal.append_line
    full = {"on": False}

    def append_line(self: Journal, line: bytes, row: Any) -> None:
        if full["on"]:
            raise OSError(28, "No space left on device")
        real(self, line, row)

    monkeypatch.setattr(Journal, "append_line", append_line)
    real_append = Journal.append

    def append(self: Journal, data: bytes, rows: Any = None) -> None:
        if full["on"]:
            raise OSError(28, "No space left on device")
        real_append(self, data, rows)

    monkeypatch.setattr(Journal, "append", append)

    async def scenario() -> None:
        log = server.events
        log.defer(asyncio.get_running_loop())

        async def call(n: int) -> Any:
            log.begin()
            result = await server.acall_tool(principal, "ping", {"n": n})
            await log.durable()
            return result

        await asyncio.create_task(call(1))
        full["on"] = True
        with pytest.raises(Exception):  # the record behind this answer could not be written: refused
            await asyncio.create_task(call(2))
        assert log.unwritable == "no space left on the device"
        for n in (3, 4):
            with pytest.raises(TrailUnavailable, match="Nothing was done"):
                await asyncio.create_task(call(n))
        assert server.state.ran == [1, 2]  # 3 and 4 never ran
        full["on"] = False
        for _ in range(200):
            if log.unwritable is None:
                break
            await asyncio.sleep(0.01)
        assert log.unwritable is None
        await asyncio.create_task(call(5))

    asyncio.run(scenario())
    server.events.flush()
    rows = server.db.fetchall("SELECT kind, fields FROM audit_events ORDER BY id")
    kinds = [k for k, _ in rows]
    assert kinds.count("tool.called") == 3  # 1, 2 (held, written when space returned) and 5
    assert kinds.count("tool.refused") == 2  # 3 and 4, held and written too
    assert kinds.index("tool.refused") > kinds.index("tool.called")  # in the order they were made
    (refused,) = [orjson.loads(f) for k, f in rows if k == "audit.refused"]
    assert refused["count"] == 2 and refused["reason"] == "no space left on the device"


# -- both backends: the size levels off -------------------------------------------------------------------

from pg_support import backend, db_target, db_targets, pg_schemas, pg_url  # noqa: E402,F401


def _size(db: Any, target: str) -> int:
    if db.dialect == "sqlite":
        db.forget()  # checkpointed: what the file holds
        return os.path.getsize(target)
    return int(db.fetchone("SELECT SUM(pg_total_relation_size(relid)) FROM pg_partition_tree('audit_events')")[0])


def test_under_steady_arrivals_the_trail_levels_off_and_every_dropped_record_is_exported(
        db_target: str, tmp_path: Path) -> None:
    from truecall.storage import open_database

    db = open_database(db_target)
    try:
        log = AuditLog(db, key=b"k" * 32, journal=False, retain="all")
        sweeper = Sweeper(db, Retention.parse("2000"), tmp_path / "export", period_s=DAY)
        sizes = []
        for round_ in range(8):
            for i in range(1500):
                log.record("tool.called", tool="t", tenant="acme", subject="u", outcome="ok",
                           arguments={"n": i}, n=round_ * 1500 + i)
            sweeper.sweep()
            sizes.append(_size(db, db_target))
        print(db.dialect, sizes)
        assert db.fetchone("SELECT COUNT(*) FROM audit_events")[0] == 2000  # type: ignore[index]
        assert max(sizes[4:]) <= max(sizes[:4]) * 1.1, sizes  # 12,000 records made, the size of ~3,500
        exported = [r["id"] for r in read_export(tmp_path / "export")]
        kept = [r[0] for r in db.fetchall("SELECT id FROM audit_events ORDER BY id")]
        assert sorted(exported + kept) == list(range(1, 12001)) and len(set(exported)) == len(exported)
        assert all(verify_export(tmp_path / "export").values())
    finally:
        db.close()


def _pages(db: Database) -> int:
    return int(db.fetchone("PRAGMA page_count")[0])  # type: ignore[index]


def _arrivals(log: AuditLog, count: int) -> None:
    for i in range(count):
        log.record("tool.called", tool="t", tenant="acme", subject="u", outcome="ok", arguments={"n": i}, n=i)


def test_space_freed_while_arrivals_come_and_go_is_kept_for_them_not_given_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrivals that pause for a sweep or two (a quiet second; bench/run.py serving another system) take
    the pages the sweep freed when they resume: giving them back in between only moves every page
    twice (incremental_vacuum, then the file grown again)."""
    import truecall.audit._retention as retention

    given: list[int] = []
    vacuum = retention.vacuum_some
    monkeypatch.setattr(retention, "vacuum_some", lambda *a, **k: given.append(vacuum(*a, **k)) or given[-1])
    db = Database(tmp_path / "a.db")
    log = AuditLog(db, key=b"k" * 32, journal=False, retain="all")
    sweeper = Sweeper(db, Retention.parse("2000"), tmp_path / "export", period_s=DAY, interval_s=1)
    pages = []
    for round_ in range(12):
        _arrivals(log, 1500)
        sweeper.sweep()
        if round_ % 3 == 2:  # the arrivals stop for two sweeps
            sweeper.sweep()
            sweeper.sweep()
        pages.append(_pages(db))
    assert sum(given) == 0, given
    assert max(pages[4:]) <= max(pages[:4]) * 1.1, pages  # the file levels off all the same
    assert db.fetchone("SELECT COUNT(*) FROM audit_events")[0] == 2000  # type: ignore[index]
    db.close()


def test_once_arrivals_stop_for_good_the_space_kept_for_them_is_given_back(tmp_path: Path) -> None:
    """The pages kept for arrivals are kept only as long as arrivals that took them were seen (RESERVE_S:
    here two sweeps at a 30 s interval); then the file shrinks to what the trail holds."""
    db = Database(tmp_path / "a.db")
    log = AuditLog(db, key=b"k" * 32, journal=False, retain="all")
    sweeper = Sweeper(db, Retention.parse("500"), None, interval_s=30)
    for _ in range(6):
        _arrivals(log, 3000)
        sweeper.sweep()
    busy = _pages(db)
    assert sweeper.vacuumed == 0  # kept for the next arrivals while they come
    for _ in range(4):
        sweeper.sweep()
    assert sweeper.vacuumed > 0
    assert _pages(db) < busy // 2, (busy, _pages(db))
    db.close()


# -- other tables whose rows are only history ---------------------------------------------------------------


def test_the_desk_forgets_only_what_is_history_and_keeps_what_guards_its_keys(tmp_path: Path) -> None:
    from truecall.incidents.tickets import TicketStore
    from truecall.tasks import TaskStore

    db = Database(tmp_path / "desk.db")
    TaskStore(db)
    store = TicketStore(db)
    now, old, young = 1_800_000_000.0, 1_800_000_000.0 - 40 * DAY, 1_800_000_000.0 - DAY
    for tid, when in (("t-gone-old", old), ("t-gone-young", young), ("t-live-old", old)):
        db.execute("INSERT INTO handle_requests VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   ("acme", tid, "u", f"k-{tid}", "INC-1", None, f"d-{tid}", when))
        db.execute("INSERT INTO settlements VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   ("acme", tid, f"d-{tid}", f"k-{tid}", "nothing_happened", None, "x", "op", when))
    db.execute("INSERT INTO tasks (task_id, status, created_at, updated_at, ttl_ms, expires_at, poll_interval_ms) "
               "VALUES ('t-live-old', 'working', ?, ?, 1000, ?, 100)", (old, old, now + 60))
    for did, state, when in (("d-failed-old", "failed", old), ("d-failed-young", "failed", young),
                             ("d-t-gone-old", "abandoned", old), ("d-done-old", "done", old)):
        db.execute("INSERT INTO dispatches VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   ("acme", did, f"key-{did}", "INC-1", None, state, None, None, None, when, when))
    db.execute("INSERT INTO tickets VALUES ('acme', 'T-1', 'INC-1', 'key-d-done-old', 'd-done-old', ?)", (old,))
    db.execute("INSERT INTO idempotency_keys VALUES ('acme', 'key-d-done-old', x'00', 'INC-1', ?)", (old,))
    assert store.forget_history(now, 30 * DAY) == 1 + 1 + 2  # a request and a settlement (old, task gone), 2 dispatches

    def ids(sql: str) -> list[str]:
        return sorted(r[0] for r in db.fetchall(sql))

    assert ids("SELECT task_id FROM handle_requests") == ["t-gone-young", "t-live-old"]
    assert ids("SELECT task_id FROM settlements") == ["t-gone-young", "t-live-old"]
    assert ids("SELECT dispatch_id FROM dispatches") == ["d-done-old", "d-failed-young"]
    assert ids("SELECT ticket_id FROM tickets") == ["T-1"]  # kept: one ticket per key, ever
    assert ids("SELECT idempotency_key FROM idempotency_keys") == ["key-d-done-old"]
    assert store.forget_history(now, None) == 0  # no age: nothing


def test_expired_tasks_go_with_the_sweep(tmp_path: Path) -> None:
    server = Server("s", db=str(tmp_path / "s.db"), audit_retain="30d").start()
    db = server.db
    for tid, expires in (("expired", 1.0), ("live", 4_000_000_000.0)):
        db.execute("INSERT INTO tasks (task_id, status, created_at, updated_at, ttl_ms, expires_at, "
                   "poll_interval_ms) VALUES (?, 'completed', 0, 0, 1, ?, 100)", (tid, expires))
    sweeper = Sweeper(db, server.events.retention, None, history=server.events.history)
    sweeper.sweep()
    assert [r[0] for r in db.fetchall("SELECT task_id FROM tasks")] == ["live"]


def test_an_export_on_demand_of_many_batches_keeps_every_batch(tmp_path: Path) -> None:
    from truecall.audit._retention import export_range

    db, _ = _filled(tmp_path, 50)
    files = export_range(db, tmp_path / "x", None, None, period_s=DAY, batch=7)
    assert [r["id"] for r in read_export(tmp_path / "x")] == list(range(1, 51))
    assert all(verify_export(tmp_path / "x").values()) and len(files) == 1


# -- PostgreSQL: partitions by time, dropped whole ----------------------------------------------------------

_ROW = ("INSERT INTO audit_events (ts, kind, tenant, subject, tool, outcome, fields) "
        "VALUES (?, 'tool.called', 'acme', 'u', 't', 'ok', ?)")


def _tables(db: Any) -> set[str]:
    return {r[0] for r in db.fetchall("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}


def test_postgresql_partitions_are_made_ahead_and_an_old_one_is_dropped_whole_after_its_export(
        pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An audit table from before partitions is migrated (its records kept, ids going on); partitions
    are made ahead of the clock; one whose records are all past the age is exported, then dropped
    whole (no row deleted); a sweep killed between its export and its drop loses nothing and exports
    nothing twice."""
    from truecall.audit._partitions import AHEAD, Partitions
    from truecall.storage import open_database

    db = open_database(pg_url)
    try:
        log = AuditLog(db, key=b"k" * 32, journal=False, retain="all")
        for i in range(100):  # an existing, unpartitioned trail
            log.record("tool.called", tool="t", tenant="acme", subject="u", outcome="ok", n=i)
        start = time.time()
        db.execute("UPDATE audit_events SET ts = ? + id", (start - 200,))
        assert db.fetchone("SELECT relkind FROM pg_class WHERE oid = 'audit_events'::regclass")[0] == "r"  # type: ignore[index]
        export = tmp_path / "export"
        sweeper = Sweeper(db, Retention.parse("1h"), export, period_s=3600)
        parts = sweeper.partitions
        assert isinstance(parts, Partitions) and parts.span_s == 360  # a tenth of the age
        assert db.fetchone("SELECT relkind FROM pg_class WHERE oid = 'audit_events'::regclass")[0] == "p"  # type: ignore[index]
        (legacy, low, edge), *ahead = parts.ranges()  # the old table, then what the sweeper made ahead
        assert legacy == "audit_events_legacy" and low is None and edge is not None and edge > start
        last_end = ahead[-1][2] if ahead else None
        assert edge % 360 == 0 and ahead[0][1] == edge and last_end is not None and last_end >= time.time() + AHEAD * 360
        db.execute(_ROW, (edge + 1, b"{}"))  # the id sequence goes on
        assert db.fetchone("SELECT MAX(id) FROM audit_events")[0] == 101  # type: ignore[index]

        # made ahead: every span up to AHEAD spans past the clock, from where the old table's range ends
        now = edge + 5
        assert sweeper.sweep(now=now) == 0
        ranges = parts.ranges()
        assert [r[1] for r in ranges[1:]] == [r[2] for r in ranges[:-1]]  # contiguous
        assert ranges[-1][2] is not None and ranges[-1][2] >= now + AHEAD * 360 and len(ranges) == 4
        first = ranges[1][0]
        for i in range(249):  # the first partition of the new table: ids 102..350
            db.execute(_ROW, (edge + 2 + i, orjson.dumps({"n": i})))

        # an hour later: the old table's records and the first partition are all past the age
        deletes: list[str] = []
        real_execute = db.execute

        def watching(sql: str, params: Any = ()) -> Any:
            if sql.lstrip().upper().startswith("DELETE FROM AUDIT_EVENTS"):
                deletes.append(sql)
            return real_execute(sql, params)

        monkeypatch.setattr(db, "execute", watching)
        now = edge + 3600 + 361
        assert sweeper.sweep(now=now) == 350
        monkeypatch.setattr(db, "execute", real_execute)
        assert not deletes, "records were deleted row by row"
        assert legacy not in _tables(db) and first not in _tables(db)
        assert parts.ranges()[0][1] == edge + 360 and parts.ranges()[-1][2] >= now + AHEAD * 360  # type: ignore[operator]
        assert [r["id"] for r in read_export(export)] == list(range(1, 351))
        assert all(verify_export(export).values())

        # killed between the export and the drop: the partition stays detached, its records unlost
        second = parts.ranges()[0][0]
        for i in range(120):  # ids 351..470
            db.execute(_ROW, (edge + 361 + i, orjson.dumps({"n": i})))

        def dying(sql: str, params: Any = ()) -> Any:
            if sql.startswith("DROP TABLE"):
                raise KeyboardInterrupt("killed")
            return real_execute(sql, params)

        monkeypatch.setattr(db, "execute", dying)
        with pytest.raises(KeyboardInterrupt):
            sweeper.sweep(now=now + 360)
        monkeypatch.setattr(db, "execute", real_execute)
        assert db.fetchall("SELECT name FROM audit_detached") == [(second,)]
        assert db.fetchone(f"SELECT COUNT(*) FROM {second}")[0] == 120  # type: ignore[index]
        assert not all(verify_export(export).values())  # the file holds an export not yet recorded
        # the next process finishes it: cut back, exported again (once), dropped
        again = Sweeper(db, Retention.parse("1h"), export, period_s=3600)
        assert again.sweep(now=now + 360) == 120
        assert second not in _tables(db) and not db.fetchall("SELECT name FROM audit_detached")
        exported = [r["id"] for r in read_export(export)]
        assert exported == list(range(1, 471)) and all(verify_export(export).values())
        assert db.fetchone("SELECT COUNT(*) FROM audit_events")[0] == 0  # type: ignore[index]
        # a record for a time no partition covers waits in the default partition; the partition made
        # for its time takes it over
        late = parts.ranges()[-1][2] + 10  # type: ignore[operator]
        db.execute(_ROW, (late, b"{}"))
        assert db.fetchone("SELECT COUNT(*) FROM audit_events_default")[0] == 1  # type: ignore[index]
        parts.ensure_ahead(late)
        assert db.fetchone("SELECT COUNT(*) FROM audit_events_default")[0] == 0  # type: ignore[index]
        assert db.fetchone("SELECT MAX(id) FROM audit_events")[0] == 471  # type: ignore[index]
    finally:
        db.close()


def test_postgresql_a_number_budget_inside_the_newest_partition_deletes_rows(pg_url: str, tmp_path: Path) -> None:
    """Partitions older than the records a number budget drops go whole; the rest by rows, exported."""
    from truecall.storage import open_database

    db = open_database(pg_url)
    try:
        AuditLog(db, key=b"k" * 32, journal=False, retain="all")
        sweeper = Sweeper(db, Retention.parse("300"), tmp_path / "export", period_s=60)
        parts = sweeper.partitions
        assert parts is not None and parts.span_s == 60
        base = (time.time() // 60 + 10) * 60  # a clock ten minutes ahead (partitions made ahead exist)
        sweeper.sweep(now=base)
        for minute in range(4):  # 250 records a minute, the last minute's the newest
            for i in range(250):
                db.execute(_ROW, (base + minute * 60 + 5 + i * 0.1, b"{}"))
        assert sweeper.sweep(now=base + 3 * 60 + 30) == 700
        kept = [r[0] for r in db.fetchall("SELECT id FROM audit_events ORDER BY id")]
        assert kept == list(range(701, 1001))
        assert [r["id"] for r in read_export(tmp_path / "export")] == list(range(1, 701))
        assert parts.last_whole == 500  # two minutes' partitions whole, then 200 rows of the third
    finally:
        db.close()


def test_postgresql_over_a_size_the_oldest_partitions_go_whole(pg_url: str, tmp_path: Path) -> None:
    """Rows deleted from an old partition would give no space back (new records go to the newest):
    over a size budget the oldest partitions are dropped whole, the current one kept."""
    from truecall.audit._retention import _db_bytes
    from truecall.storage import open_database

    db = open_database(pg_url)
    try:
        AuditLog(db, key=b"k" * 32, journal=False, retain="all")
        base = (time.time() // 60 + 10) * 60
        sweeper = Sweeper(db, Retention(max_bytes=10 ** 12), tmp_path / "export", period_s=60)
        assert sweeper.partitions is not None
        sweeper.partitions.ensure_ahead(base + 240)
        for minute in range(4):
            for i in range(300):
                db.execute(_ROW, (base + minute * 60 + i * 0.1, orjson.dumps({"pad": "x" * 200, "i": i})))
        used = _db_bytes(db)
        assert used is not None
        smaller = Sweeper(db, Retention(max_bytes=used // 2), tmp_path / "export", period_s=60)
        dropped = smaller.sweep(now=base + 3 * 60 + 30)
        assert smaller.partitions is not None and smaller.partitions.last_whole == dropped
        assert dropped % 300 == 0 and 300 <= dropped <= 900, dropped  # whole minutes, the current one kept
        assert (_db_bytes(db) or 0) <= used // 2 or dropped == 900
        assert [r["id"] for r in read_export(tmp_path / "export")] == list(range(1, dropped + 1))
    finally:
        db.close()


def _timed(db: Database, log: AuditLog, count: int, ts: float, first: int) -> None:
    """``count`` records, all at ``ts`` (a clock of the test's: records made now are moved to it)."""
    for i in range(count):
        log.record("tool.called", tool="t", tenant="acme", subject="u", outcome="ok", arguments={"n": i},
                   n=first + i)
    db.execute("UPDATE audit_events SET ts = ? WHERE ts < ?", (ts, 1_900_000_000.0))


def test_sqlite_an_age_seals_segments_and_drops_them_whole_each_after_its_export(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite has no partitions: a sweep seals the live table as a segment once its oldest record is a
    span old (a tenth of the age), and drops a sealed segment whole once its newest record is past the
    age — its export durable first, no record deleted row by row.  Ids go on across segments, and
    queries read every segment."""
    db = Database(tmp_path / "a.db")
    log = AuditLog(db, key=b"k" * 32, journal=False, retain="all")
    sweeper = Sweeper(db, Retention.parse("100s"), tmp_path / "export", period_s=DAY, interval_s=1)
    assert isinstance(sweeper.partitions, Segments) and sweeper.partitions.span_s == 10
    statements: list[str] = []
    execute = db.execute

    def spied(sql: str, params: Any = ()) -> Any:
        statements.append(sql)
        return execute(sql, params)

    monkeypatch.setattr(db, "execute", spied)
    start, made, pages, held = 2_000_000_000.0, 0, [], []
    for round_ in range(80):  # 20 records every 5 s: 400 s, four times the age
        now = start + 5 * round_
        _timed(db, log, 20, now, made)
        made += 20
        sweeper.sweep(now=now)
        pages.append(_pages(db))
        held.append(sum(int(db.fetchone(f"SELECT COUNT(*) FROM {t}")[0]) for t in segments(db)))  # type: ignore[index]
    assert sweeper.partitions.sealed >= 20
    assert not [s for s in statements if s.startswith("DELETE FROM audit_events")], "a record was deleted by rows"
    assert len(segments(db)) > 2
    # what is kept: the age and at most a segment more (sealed at a sweep: a span and an interval)
    assert max(held[40:]) <= (100 + 15) / 5 * 20 + 20, held
    assert max(pages[40:]) <= max(pages[:40]) * 1.1, pages  # the file levels off
    exported = [r["id"] for r in read_export(tmp_path / "export")]
    kept = sorted(r.id for r in log.query(limit=10_000))
    assert exported == list(range(1, len(exported) + 1)) and len(exported) > 1000
    assert sorted(exported + kept) == list(range(1, made + 1))
    assert all(verify_export(tmp_path / "export").values())
    assert db.fetchone("PRAGMA secure_delete")[0] == 1  # type: ignore[index]  # (off only for a drop)
    plan = " ".join(str(r[-1]) for r in db.fetchall(
        "EXPLAIN QUERY PLAN SELECT id FROM audit_events WHERE tenant = ? AND ts >= ?", ("acme", start)))
    assert "INDEX audit_events_tenant_ts_" in plan, plan  # the new live segment has the trail's index
    db.close()


def test_sqlite_a_sweep_killed_between_a_segments_export_and_its_drop_exports_it_again_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = Database(tmp_path / "a.db")
    log = AuditLog(db, key=b"k" * 32, journal=False, retain="all")
    start = 2_000_000_000.0
    _timed(db, log, 300, start, 0)
    sweeper = Sweeper(db, Retention.parse("100s"), tmp_path / "export", period_s=DAY, interval_s=1)
    assert sweeper.sweep(now=start + 20) == 0 and len(segments(db)) == 2  # sealed, not yet past the age
    _timed(db, log, 300, start + 100, 300)
    execute = db.execute

    def dies(sql: str, params: Any = ()) -> Any:
        if sql.startswith("DROP TABLE"):
            raise KeyboardInterrupt("killed")  # (the transaction that records the export never commits)
        return execute(sql, params)

    monkeypatch.setattr(db, "execute", dies)
    with pytest.raises(KeyboardInterrupt):
        sweeper.sweep(now=start + 150)
    monkeypatch.setattr(db, "execute", execute)
    assert len(segments(db)) == 3  # the segment is still there (and the live one was sealed too)
    restarted = Sweeper(db, Retention.parse("100s"), tmp_path / "export", period_s=DAY, interval_s=1)
    assert restarted.sweep(now=start + 150) == 300
    exported = [r["id"] for r in read_export(tmp_path / "export")]
    assert exported == list(range(1, 301))  # once each
    assert all(verify_export(tmp_path / "export").values())
    db.close()


def test_sqlite_a_query_while_another_process_seals_the_live_segment_still_reads_every_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A statement over the segments listed before another process's seal would read the new, empty
    live table and miss the one just renamed: the trail is read again when its list changed."""
    db = Database(tmp_path / "a.db")
    log = AuditLog(db, key=b"k" * 32, journal=False, retain="all")
    _timed(db, log, 50, 2_000_000_000.0, 0)
    other = Database(tmp_path / "a.db")
    sealing = Segments(other, 10, Retention.parse("100s"), 1, _sqlite_chunks)
    sealed: list[str | None] = []
    fetchall = db.fetchall

    def racing(sql: str, params: Any = ()) -> Any:
        if "ORDER BY id DESC" in sql and not sealed:  # listed, about to be read: the other process seals
            sealed.append(sealing.seal(now=2_000_000_020.0))
        return fetchall(sql, params)

    monkeypatch.setattr(db, "fetchall", racing)
    assert [r.id for r in log.query(limit=100)] == list(range(50, 0, -1))
    assert sealed and sealed[0] == "audit_events_s0000000000000000001"
    other.close()
    db.close()


def test_sqlite_a_query_while_another_process_drops_a_segment_reads_what_is_left(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A statement naming a segment another process's sweep dropped meanwhile fails ("no such table"):
    the trail is listed and read again, and a query answers with what is left instead of an error."""
    start = 2_000_000_000.0
    db = Database(tmp_path / "a.db")
    log = AuditLog(db, key=b"k" * 32, journal=False, retain="all")
    _timed(db, log, 30, start, 0)
    other = Database(tmp_path / "a.db")
    sweeper = Sweeper(other, Retention.parse("100s"), None, interval_s=1)
    sweeper.sweep(now=start + 20)  # the first 30 sealed
    _timed(db, log, 20, start + 100, 30)
    assert len(segments(db)) == 2
    dropped: list[int] = []
    fetchall = db.fetchall

    def racing(sql: str, params: Any = ()) -> Any:
        if "ORDER BY id DESC" in sql and not dropped:  # listed, about to be read: the other one drops
            dropped.append(sweeper.sweep(now=start + 150))
        return fetchall(sql, params)

    monkeypatch.setattr(db, "fetchall", racing)
    assert [r.id for r in log.query(limit=100)] == list(range(50, 30, -1))
    assert dropped == [30]
    other.close()
    db.close()
