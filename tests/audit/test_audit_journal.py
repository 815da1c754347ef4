"""The audit journal (truecall.audit._journal): where a served call's audit record becomes durable.

Contract: an answer leaves only after its records are written to the journal; every journaled
record reaches ``audit_events`` exactly once — loaded by the process that wrote it, or, if that
process was killed, by the next one to open the database — and a journal write that fails
refuses the answer, as a failed commit does.
"""

from __future__ import annotations

import asyncio
import io
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest

import truecall.audit._loading as loading_module  # when the journal is loaded (LOAD_*, ROTATE_BYTES)
import truecall.audit._log as audit_module
from truecall import Principal, Server
from truecall.audit import AuditLog, AuditUnavailable
from truecall.audit._journal import Journal, encode_rows, journal_dir, recover_journals, unloaded_bytes, wait_loaded
from truecall.storage import Database

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "journal", "version": "1"}}
from _paths import ROOT


def _ids(db: Database) -> list[Any]:
    rows = db.fetchall("SELECT fields FROM audit_events WHERE kind = 'tool.called' ORDER BY id")
    return [orjson.loads(r[0]).get("requestId") for r in rows]


def _journals(db_path: Path) -> list[str]:
    directory = Path(str(db_path) + "-audit")
    return sorted(os.listdir(directory)) if directory.is_dir() else []


async def _served(log: AuditLog, request_id: str) -> None:
    """What a transport does for one request: mark, record, wait for durability."""
    log.begin()
    log.record("tool.called", tool="t", tenant="acme", outcome="ok", requestId=request_id,
               arguments={"password": "hunter2-secret"})
    await log.durable()


def test_which_databases_take_a_journal(tmp_path: Path) -> None:
    assert journal_dir(Database(tmp_path / "a.db")) == Path(str(tmp_path / "a.db") + "-audit")
    assert journal_dir(Database(":memory:")) is None
    assert AuditLog(Database(tmp_path / "b.db"), journal=False)._journal_dir is None
    assert AuditLog(Database(tmp_path / "c.db"), enabled=False)._journal_dir is None


def test_records_are_journaled_before_durable_returns_and_loaded_soon_after(tmp_path: Path) -> None:
    db = Database(tmp_path / "a.db")
    log = AuditLog(db, key=b"k" * 32)

    async def scenario() -> None:
        log.defer(asyncio.get_running_loop())
        for n in range(5):
            await _served(log, f"r{n}")
        # durable: in the journal (one line each), not yet in the table
        [name] = _journals(tmp_path / "a.db")
        lines = (Path(str(tmp_path / "a.db") + "-audit") / name).read_bytes().splitlines()
        assert [orjson.loads(line)[6]["requestId"] for line in lines] == [f"r{n}" for n in range(5)]
        assert b"hunter2" not in b"".join(lines)  # redacted before it is written anywhere
        assert _ids(db) == []
        assert unloaded_bytes(tmp_path / "a.db") == sum(len(line) + 1 for line in lines)
        await asyncio.sleep(audit_module.LOAD_DELAY_S * 5)
        assert _ids(db) == [f"r{n}" for n in range(5)]
        assert unloaded_bytes(tmp_path / "a.db") == 0

    asyncio.run(scenario())
    log.flush()
    assert _ids(db) == [f"r{n}" for n in range(5)]  # exactly once
    assert _journals(tmp_path / "a.db") == []  # fully loaded at shutdown: deleted
    assert db.fetchall("SELECT * FROM audit_journal") == []


def test_a_query_in_the_serving_process_sees_what_was_just_journaled(tmp_path: Path) -> None:
    log = AuditLog(Database(tmp_path / "a.db"))

    async def scenario() -> list[str]:
        log.defer(asyncio.get_running_loop())
        await _served(log, "r1")
        return [r.fields["requestId"] for r in log.query(kind="tool.called")]

    assert asyncio.run(scenario()) == ["r1"]
    log.flush()


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The rows of every load transaction the journal makes from now on (one entry each)."""
    import truecall.audit._journal as journal_module

    loads: list[int] = []
    real = journal_module._load_rows

    def counted(db: Any, name: str, rows: Any, end: int) -> None:
        real(db, name, rows, end)
        loads.append(len(rows))

    monkeypatch.setattr(journal_module, "_load_rows", counted)
    return loads


def test_a_quiet_server_loads_a_few_records_in_one_transaction_not_one_each(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A load is a transaction, as costly as ten rows: records that arrive 30 ms apart wait for
    each other (``LOAD_DELAY_S``) instead of being loaded one transaction each."""
    db = Database(tmp_path / "a.db")
    log = AuditLog(db, key=b"k" * 32)
    loads = _count_loads(monkeypatch)

    async def scenario() -> None:
        log.defer(asyncio.get_running_loop())
        for n in range(5):
            await _served(log, f"r{n}")
            await asyncio.sleep(0.03)
        while unloaded_bytes(tmp_path / "a.db"):
            await asyncio.sleep(0.02)

    asyncio.run(scenario())
    assert _ids(db) == [f"r{n}" for n in range(5)]
    assert sum(loads) == 5 and len(loads) <= 3, loads  # (one, unless the machine stalls a while)
    log.flush()
    assert _ids(db) == [f"r{n}" for n in range(5)]


def test_a_busy_journal_is_loaded_once_load_bytes_wait_without_waiting_out_the_delay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loading_module, "LOAD_DELAY_S", 3600.0)
    monkeypatch.setattr(loading_module, "LOAD_BYTES", 2000)
    db = Database(tmp_path / "a.db")
    log = AuditLog(db, key=b"k" * 32)

    async def scenario() -> int:
        log.defer(asyncio.get_running_loop())
        n = 0
        while n == 0 or unloaded_bytes(tmp_path / "a.db") < 2000:
            await _served(log, f"r{n}")
            n += 1
        await asyncio.sleep(0.05)  # a loop turn or two, not the hour
        assert unloaded_bytes(tmp_path / "a.db") == 0
        assert _ids(db) == [f"r{k}" for k in range(n)]
        await _served(log, "after")  # the next batch waits for its own delay again
        await asyncio.sleep(0.05)
        assert _ids(db) == [f"r{k}" for k in range(n)]
        return n

    n = asyncio.run(scenario())
    log.flush()
    assert _ids(db) == [*(f"r{k}" for k in range(n)), "after"]


def test_a_load_that_failed_waits_for_its_retry_however_many_records_arrive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the database refuses, records keep arriving past ``LOAD_BYTES``: they wait for the
    retry (``LOAD_RETRY_S``) instead of bringing another failing transaction forward."""
    monkeypatch.setattr(loading_module, "LOAD_DELAY_S", 0.01)
    monkeypatch.setattr(loading_module, "LOAD_BYTES", 500)
    monkeypatch.setattr(loading_module, "LOAD_RETRY_S", 30.0)
    db = Database(tmp_path / "a.db", busy_timeout_ms=1)
    log = AuditLog(db, key=b"k" * 32)
    holder = sqlite3.connect(tmp_path / "a.db", isolation_level=None, timeout=10)
    attempts: list[int] = []
    real = Journal.load

    def counted(self: Journal, target: Any) -> int:
        attempts.append(1)
        return real(self, target)

    monkeypatch.setattr(Journal, "load", counted)

    async def scenario() -> None:
        log.defer(asyncio.get_running_loop())
        holder.execute("BEGIN EXCLUSIVE")
        await _served(log, "r0")
        while not attempts:  # the first load fails: its retry is due in 30 s
            await asyncio.sleep(0.01)
        for n in range(1, 40):  # ~7 KiB: past LOAD_BYTES many times over
            await _served(log, f"r{n}")
            await asyncio.sleep(0)
        await asyncio.sleep(0.05)
        assert len(attempts) == 1, attempts
        holder.execute("ROLLBACK")
        log.sync()  # (what a query does; the retry would, 30 s later)
        assert _ids(db) == [f"r{n}" for n in range(40)]

    try:
        asyncio.run(scenario())
    finally:
        holder.close()
    log.flush()
    assert _ids(db) == [f"r{n}" for n in range(40)]


def test_a_served_call_record_is_journaled_as_the_line_of_its_row(tmp_path: Path) -> None:
    """record_call writes its line from the head's cached part: the same bytes encode_line makes
    of the row it keeps for the table (first and cached heads, nulls, quotes, non-ASCII)."""
    from truecall.audit._journal import encode_line

    log = AuditLog(Database(tmp_path / "a.db"), key=b"k" * 32)
    heads = [("acme", "alice@acme", "ok"), (None, None, "internal"), ('q"uo\\te', "Bearer abcdefgh12345678", "ok"),
             ("ünï\u2028", 7, "invalid_input")]

    async def scenario() -> None:
        log.defer(asyncio.get_running_loop())
        for n, (tenant, subject, outcome) in enumerate(heads * 2):  # the second time from the cache
            log.begin()
            log.record_call("tool.called", "tool\u00e9", tenant, subject, outcome, {"a": n, "b": [n]}, 1.25,
                            "client", n if n % 2 else f"id-{n}")
            await log.durable()
        journal = log._journal
        assert journal is not None and journal._rows is not None
        lines = journal.path.read_bytes().splitlines(keepends=True)
        assert len(lines) == 2 * len(heads)
        assert lines == [encode_line(row) for row in journal._rows]

    asyncio.run(scenario())
    log.flush()


def test_a_locked_database_no_longer_refuses_answers_and_the_records_arrive_once_it_is_free(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from truecall.protocol import Engine
    from truecall.transports.stdio import StdioConnection

    monkeypatch.setattr(loading_module, "LOAD_RETRY_S", 0.05)
    monkeypatch.setattr(loading_module, "LOAD_DELAY_S", 0.02)  # the first loads fail while the lock is held
    app = Server("locked", db=Database(tmp_path / "s.db", busy_timeout_ms=20))
    holder = sqlite3.connect(tmp_path / "s.db", isolation_level=None, timeout=10)

    @app.tool("echo", description="Echoes.", annotations={"readOnlyHint": True})
    def echo(ctx, text: str = "") -> str:
        return text

    async def scenario() -> list[dict[str, Any]]:
        out = io.BytesIO()
        app.events.defer(asyncio.get_running_loop())
        conn = StdioConnection(Engine(app), Principal("tester", "t1"), out)
        holder.execute("BEGIN EXCLUSIVE")
        for rid in (1, 2):
            conn.receive_line(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                            "params": {"name": "echo", "arguments": {"text": "x"}, "_meta": META}}))
        await asyncio.sleep(0.2)  # loads fail meanwhile (locked) and are retried
        assert _ids(app.db) == []
        holder.execute("ROLLBACK")
        await asyncio.sleep(0.3)
        assert sorted(_ids(app.db)) == [1, 2]
        await conn.drain(0.1)
        return [orjson.loads(line) for line in out.getvalue().splitlines()]

    try:
        answers = asyncio.run(scenario())
    finally:
        holder.close()
    assert sorted(a["id"] for a in answers) == [1, 2]
    assert all(a["result"]["content"] == [{"type": "text", "text": "x"}] for a in answers)
    app.events.flush()
    assert sorted(_ids(app.db)) == [1, 2]


def test_a_failed_journal_write_refuses_the_answer_and_the_record_is_written_with_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = Database(tmp_path / "a.db")
    log = AuditLog(db, key=b"k" * 32)
    real_append = Journal.append
    full = {"on": False}

    def append(self: Journal, data: bytes, rows: Any = None) -> None:
        if full["on"]:
            raise OSError(28, "No space left on device")
        real_append(self, data, rows)

    monkeypatch.setattr(Journal, "append", append)

    async def scenario() -> None:
        log.defer(asyncio.get_running_loop())
        full["on"] = True
        with pytest.raises(AuditUnavailable):
            await _served(log, "r1")
        full["on"] = False

        async def later() -> None:  # a request that began after the failure is not blamed for it
            await _served(log, "r2")

        await asyncio.create_task(later())

    asyncio.run(scenario())
    log.flush()
    assert _ids(db) == ["r1", "r2"]  # the refused record was kept and written with the next batch


def test_a_write_cut_short_is_cut_off_so_the_next_line_stays_whole(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import truecall.audit._journal as journal_module

    db = Database(tmp_path / "a.db")
    AuditLog(db)  # tables
    journal = Journal(journal_dir(db))  # type: ignore[arg-type]
    row = (1.0, "tool.called", "acme", "u", "t", "ok", orjson.dumps({"requestId": "r1"}))
    journal.append(encode_rows([row]))
    real_write = os.write
    calls = {"n": 0}

    def short_then_fail(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data)[:10])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(journal_module.os, "write", short_then_fail)
    with pytest.raises(OSError):
        journal.append(encode_rows([(*row[:6], orjson.dumps({"requestId": "lost"}))]))
    monkeypatch.setattr(journal_module.os, "write", real_write)
    assert os.path.getsize(journal.path) == journal.size  # the partial line is gone
    journal.append(encode_rows([(*row[:6], orjson.dumps({"requestId": "r2"}))]))
    assert journal.load(db) == 2
    assert _ids(db) == ["r1", "r2"]
    journal.close(db)


def test_a_live_journal_is_left_to_its_process_and_an_orphan_is_loaded_exactly_once(tmp_path: Path) -> None:
    db = Database(tmp_path / "a.db")
    AuditLog(db)
    rows = [(float(n), "tool.called", "acme", "u", "t", "ok", orjson.dumps({"requestId": f"r{n}"})) for n in range(4)]
    journal = Journal(journal_dir(db))  # type: ignore[arg-type]
    journal.append(encode_rows(rows[:2]))
    assert journal.load(db) == 2
    journal.append(encode_rows(rows[2:]))
    # Another process opening the database now must not touch it: its writer holds the lock.
    assert recover_journals(Database(tmp_path / "a.db"), journal_dir(db)) == 0  # type: ignore[arg-type]
    assert _ids(db) == ["r0", "r1"]
    # The writer dies after its first load (its file stays, the lock goes with the descriptor).
    os.close(journal.fd)
    with open(journal.path, "ab") as f:
        f.write(b'[5.0,"tool.called","acme","u","t","ok",{"requestId":"to')  # torn by the crash
    assert AuditLog(Database(tmp_path / "a.db"))._journal_dir is not None  # opening recovers
    assert _ids(db) == ["r0", "r1", "r2", "r3"]  # the loaded two not again, the torn one never
    assert _journals(tmp_path / "a.db") == []
    assert db.fetchall("SELECT * FROM audit_journal") == []
    assert recover_journals(db, journal_dir(db)) == 0  # type: ignore[arg-type]


def test_a_full_journal_is_replaced_once_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loading_module, "ROTATE_BYTES", 600)
    db = Database(tmp_path / "a.db")
    log = AuditLog(db)

    async def scenario() -> set[str]:
        log.defer(asyncio.get_running_loop())
        seen: set[str] = set()
        for n in range(20):
            await _served(log, f"r{n}")
            seen.update(_journals(tmp_path / "a.db"))
            if n % 4 == 3:
                log._load()
        return seen

    seen = asyncio.run(scenario())
    log.flush()
    assert len(seen) > 2  # rotated
    assert _ids(db) == [f"r{n}" for n in range(20)]
    assert _journals(tmp_path / "a.db") == [] and db.fetchall("SELECT * FROM audit_journal") == []


_KILLED_WRITER = textwrap.dedent("""
    import asyncio, sys
    import truecall.audit._loading as loading_module
    from truecall.audit import AuditLog
    from truecall.storage import Database

    loading_module.LOAD_DELAY_S = 3600  # never loads: only the journal holds what it acknowledges
    log = AuditLog(Database(sys.argv[1]))

    async def main():
        log.defer(asyncio.get_running_loop())
        for n in range(50):
            log.begin()
            log.record("tool.called", tool="t", tenant="acme", outcome="ok", requestId=n)
            await log.durable()
            print(n, flush=True)  # acknowledged
        await asyncio.sleep(3600)

    asyncio.run(main())
""")


def test_records_acknowledged_by_a_killed_process_are_loaded_by_the_next_one(tmp_path: Path) -> None:
    path = tmp_path / "k.db"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(path)], stdout=subprocess.PIPE,
                            cwd=ROOT, text=True)
    try:
        acked = [int(proc.stdout.readline()) for _ in range(50)]  # type: ignore[union-attr]
        assert not wait_loaded(path, timeout=0.1)  # journaled, not loaded, and the writer is alive
        assert recover_journals(Database(path), Path(str(path) + "-audit")) == 0  # alive: not touched
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()  # type: ignore[union-attr]
    db = Database(path)
    assert _ids(db) == []
    [record] = [r for r in AuditLog(db).query(kind="tool.called", limit=1)]  # opening recovers
    assert sorted(_ids(db)) == acked and record.fields["requestId"] == 49
    assert wait_loaded(path, timeout=0.1)


def test_a_journal_whose_end_is_lost_takes_no_more_records_and_the_next_one_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import truecall.audit._journal as journal_module

    db = Database(tmp_path / "a.db")
    log = AuditLog(db)
    real_write, real_truncate = os.write, os.ftruncate

    async def scenario() -> None:
        log.defer(asyncio.get_running_loop())
        await _served(log, "r1")
        first = log._journal
        # A write cut short whose tail cannot be cut off either (the disk went read-only, say).
        writes = {"n": 0}

        def short_then_fail(fd: int, data: Any) -> int:
            writes["n"] += 1
            if writes["n"] > 1:
                raise OSError(30, "Read-only file system")
            return real_write(fd, bytes(data)[:7])

        monkeypatch.setattr(journal_module.os, "write", short_then_fail)
        monkeypatch.setattr(journal_module.os, "ftruncate", lambda fd, n: (_ for _ in ()).throw(OSError(30, "ro")))
        with pytest.raises(AuditUnavailable):
            await _served(log, "r2")
        assert first.broken
        monkeypatch.setattr(journal_module.os, "write", real_write)
        monkeypatch.setattr(journal_module.os, "ftruncate", real_truncate)
        await _served(log, "r3")  # a new journal; the refused r2 goes with it
        assert log._journal is not first

    asyncio.run(scenario())
    log.flush()
    assert _ids(db) == ["r1", "r2", "r3"]
    assert _journals(tmp_path / "a.db") == []


@pytest.mark.parametrize("count", [1, 5, 17, 300, 777])
def test_a_load_keeps_the_journal_order_whatever_the_batch_size(tmp_path: Path, count: int) -> None:
    db = Database(tmp_path / "a.db")
    AuditLog(db)
    journal = Journal(journal_dir(db))  # type: ignore[arg-type]
    rows = [(float(n), "tool.called", "acme", "u", "t", "ok", orjson.dumps({"requestId": n})) for n in range(count)]
    journal.append(encode_rows(rows[: count // 2]), rows[: count // 2])
    journal.append(encode_rows(rows[count // 2:]))  # without its rows: read back from the file
    assert journal.load(db) == count
    assert _ids(db) == list(range(count))
    journal.close(db)


_LIVE_WRITER = textwrap.dedent("""
    import asyncio, sys
    import truecall.audit._loading as loading_module
    from truecall.audit import AuditLog
    from truecall.storage import Database

    loading_module.LOAD_DELAY_S = float(sys.argv[2])
    log = AuditLog(Database(sys.argv[1]))

    async def main():
        log.defer(asyncio.get_running_loop())
        log.begin()
        log.record("tool.called", tool="t", tenant="acme", outcome="ok", requestId="just-now")
        await log.durable()
        print("acknowledged", flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
""")


@pytest.mark.parametrize("delay, shown", [(0.3, True), (60.0, False)], ids=["loads-soon", "stuck"])
def test_the_audit_command_shows_what_a_running_server_acknowledged_a_moment_ago(
        tmp_path: Path, delay: float, shown: bool) -> None:
    path = tmp_path / "live.db"
    proc = subprocess.Popen([sys.executable, "-c", _LIVE_WRITER, str(path), str(delay)], stdout=subprocess.PIPE,
                            cwd=ROOT, text=True)
    try:
        assert proc.stdout.readline().strip() == "acknowledged"  # type: ignore[union-attr]
        out = subprocess.run([sys.executable, "-m", "truecall", "audit", "--db", str(path), "--json"],
                             capture_output=True, text=True, timeout=60, cwd=ROOT)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()  # type: ignore[union-attr]
    assert out.returncode == 0, out.stderr
    ids = [orjson.loads(line).get("requestId") for line in out.stdout.splitlines()]
    if shown:  # the command waited for the server's load
        assert ids == ["just-now"] and out.stderr == ""
    else:  # it says so instead of pretending the trail is complete
        assert ids == [] and "not in the table yet" in out.stderr
