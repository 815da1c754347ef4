"""The audit trail within a budget, under load (issue 29): real servers, real kills, a real full disk.

1. A server keeping 2,000 records (``TRUECALL_AUDIT_RETAIN=2000``, a sweep every half second, export
   on) under steady load from 8 HTTP clients, on SQLite and on PostgreSQL: the database (SQLite: file
   + WAL; PostgreSQL: the audit table's relation sizes) levels off; every record that
   left the table is in the export, once, with a valid checksum; no call fails and the p99 stays under
   the 500 ms the reliability battery allows a normal client (tests/reliability/test_reliability.py).
2. The same server killed (SIGKILL) while it sweeps, three times, restarted each time: no record is
   lost or exported twice, and every acknowledged call has its record.
3. A 32 MiB tmpfs filled under load: calls are refused (503, the audit trail named), none is acknowledged
   without its record, ``/readyz`` says why, and service resumes by itself once space is freed.

These measure latency and race kills: they run in the serial phase (tests/conftest.py SERIAL).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

import psycopg

from pg_support import backend, pg_schemas  # noqa: F401
from stress.common import MODERN, OPERATOR, RawHttp, ServerProcess, modern_meta, percentile
from stress.load import AsyncHttp
from truecall.audit._retention import read_export, verify_export
from truecall.audit._segments import segments
from truecall.storage import open_database, split_schema

P99_BOUND_S = 0.5  # what test_reliability's hostile-peers run allows the normal client


class Load:
    """``clients`` stateless HTTP clients calling ``incident.search`` until stopped; what they heard."""

    def __init__(self, port: int, clients: int = 8) -> None:
        self.port = port
        self.clients = clients
        self.acked: list[int] = []  # request ids answered with a result
        self.refused: list[tuple[int, int, str]] = []  # (id, HTTP status, message)
        self.failures: list[str] = []  # transport failures (a killed server)
        self.latencies: list[float] = []
        self._ids = iter(range(1, 10 ** 9))
        self.stop_at = 0.0

    async def _client(self, n: int) -> None:
        conn = AsyncHttp(self.port)
        try:
            while time.monotonic() < self.stop_at:
                rid = next(self._ids)
                body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
                    "name": "incident.search", "arguments": {"service": ("payments", "checkout")[rid % 2]},
                    "_meta": modern_meta()}})
                headers = [("Content-Type", "application/json"), ("Accept", "application/json"),
                           ("Authorization", f"Bearer {OPERATOR}"), ("MCP-Protocol-Version", MODERN),
                           ("Mcp-Method", "tools/call"), ("Mcp-Name", "incident.search")]
                started = time.monotonic()
                try:
                    status, _, raw = await conn.request("POST", "/mcp", headers, body, timeout=10)
                except (ConnectionError, OSError, TimeoutError) as exc:
                    self.failures.append(f"{type(exc).__name__}: {exc}")
                    await conn.close()
                    await asyncio.sleep(0.05)
                    continue
                self.latencies.append(time.monotonic() - started)
                answer = orjson.loads(raw)
                if "result" in answer and not answer["result"].get("isError"):
                    self.acked.append(rid)
                else:
                    self.refused.append((rid, status, str(answer.get("error", answer))[:300]))
        finally:
            await conn.close()

    async def run(self, seconds: float) -> None:
        self.stop_at = time.monotonic() + seconds
        await asyncio.gather(*(self._client(n) for n in range(self.clients)))


def _size(db: Path | str) -> tuple[int, int]:
    """SQLite: the file, and its WAL; PostgreSQL: the audit table with its indexes and TOAST, and 0."""
    if isinstance(db, str):
        with psycopg.connect(split_schema(db)[0], autocommit=True) as conn:
            # (partitioned: the partitions', the parent holds nothing)
            row = conn.execute("SELECT SUM(pg_total_relation_size(relid)) FROM "
                               f"pg_partition_tree('\"{split_schema(db)[1]}\".audit_events')").fetchone()
        return (int(row[0]) if row else 0), 0
    wal = Path(f"{db}-wal")
    return os.path.getsize(db), (os.path.getsize(wal) if wal.exists() else 0)


def _rows(db: Path | str, sql: str) -> list[tuple[Any, ...]]:
    """``sql``; over the whole trail where it reads ``{trail}`` (SQLite: every segment, truecall.audit._segments)."""
    opened = open_database(str(db))
    try:
        if "{trail}" in sql:
            sql = " UNION ALL ".join(sql.replace("{trail}", t) for t in segments(opened))
        return opened.fetchall(sql)
    finally:
        opened.close()


def _table_ids(db: Path | str) -> list[int]:
    return sorted(r[0] for r in _rows(db, "SELECT id FROM {trail}"))


def _recorded_request_ids(db: Path | str, exported: list[dict[str, Any]]) -> set[Any]:
    rows = _rows(db, "SELECT fields FROM {trail} WHERE kind = 'tool.called'")
    ids = {orjson.loads(bytes(r[0])).get("requestId") for r in rows}
    ids |= {r["fields"].get("requestId") for r in exported if r["kind"] == "tool.called"}
    return ids


def _assert_exported_once_and_whole(db: Path | str, export: Path, kills: int = 0) -> list[dict[str, Any]]:
    """Every id from 1 to the newest is in the table or in the export, never both, never twice; every
    export file matches its checksum.  ``kills``: PostgreSQL hands out ids outside transactions, so a
    process killed while inserting a batch never uses that batch's ids: up to one run of ids missing
    per kill (the acknowledged calls' records are checked apart)."""
    checks = verify_export(export)
    assert checks and all(checks.values()), checks
    exported = read_export(export)
    out_ids = [r["id"] for r in exported]
    assert len(out_ids) == len(set(out_ids)), "a record was exported twice"
    kept = _table_ids(db)
    assert not set(out_ids) & set(kept), "a record is both exported and kept"
    everything = sorted(out_ids + kept)
    if isinstance(db, str) and kills:
        gaps = [(a, b) for a, b in zip(everything, everything[1:]) if b != a + 1] + (
            [(0, everything[0])] if everything[0] != 1 else [])
        print(f"ids never used (killed inserts): {[(a + 1, b - 1) for a, b in gaps]}")
        assert len(gaps) <= kills, gaps
        return exported
    assert everything == list(range(1, everything[-1] + 1)), "a record is neither kept nor exported"
    return exported


def _caught_mid_sweep(db: Path | str, export: Path) -> str:
    """What the kill left (for the log): export files longer than their recorded length (killed between
    an append and its transaction) or whose .sha256 lags (killed before the seal); PostgreSQL: partitions
    detached and not dropped yet (killed between a detach and the drop that records the export)."""
    try:
        recorded = dict(_rows(db, "SELECT name, bytes FROM audit_export"))
    except Exception:  # (not made yet: killed before the first sweep)
        recorded = {}
    longer = [p.name for p in export.glob("*.jsonl.gz") if p.stat().st_size > recorded.get(p.name, 0)]
    stale = [name for name, ok in verify_export(export).items() if not ok]
    said = f"{len(longer)} files with an unrecorded tail, {len(stale)} unsealed"
    if isinstance(db, str):
        try:
            said += f", {len(_rows(db, 'SELECT name FROM audit_detached'))} partitions detached"
        except Exception:
            pass
    return said


def _env(workdir: Path, **extra: str) -> dict[str, str]:
    return {"TRUECALL_AUDIT_RETAIN": "2000", "TRUECALL_AUDIT_EXPORT": str(workdir / "export"),
            "TRUECALL_AUDIT_SWEEP_S": "0.5", "TRUECALL_AUDIT_EXPORT_PERIOD": "5s", **extra}


def test_a_small_retention_under_steady_load_levels_off_exports_everything_and_delays_no_call(
        tmp_path: Path, backend: str, pg_schemas: Any) -> None:
    """On SQLite and on PostgreSQL (the same server, ``TRUECALL_DB`` a schema of the suite's server)."""
    db: Path | str = tmp_path / "truecall.db" if backend == "sqlite" else pg_schemas().url
    seconds = 24.0
    env = _env(tmp_path, TRUECALL_DB=str(db))
    if backend == "postgresql":  # partitions of a second (the export period): see truecall.audit._partitions
        env["TRUECALL_AUDIT_EXPORT_PERIOD"] = "1s"
    with ServerProcess(tmp_path, http=True, env=env) as server:
        load = Load(server.port or 0)
        sizes: list[tuple[float, int, int, int]] = []

        async def main() -> None:
            async def sample() -> None:
                start = time.monotonic()
                while time.monotonic() < load.stop_at:
                    sizes.append((time.monotonic() - start, *_size(db), len(load.acked)))
                    await asyncio.sleep(0.5)

            runner = asyncio.ensure_future(load.run(seconds))
            await asyncio.sleep(0.1)
            await asyncio.gather(runner, sample())

        asyncio.run(main())
        assert server.alive(), server.stderr()[-2000:]
    print(f"calls {len(load.acked)}, p99 {percentile(load.latencies, 99) * 1000:.1f} ms, "
          f"sizes (s, bytes, WAL bytes, calls): {sizes[::6]}")
    # Bytes a record takes: SQLite's 230 (docs/guide/operations.md).  PostgreSQL's are measured here, at
    # the end: what the partitions hold per record kept (its rows are larger — a 24-byte header, the
    # (id, ts) key — and a partition's rows deleted for the number budget are given back only with the
    # partition: the size moves by up to a partition, a second of calls here, between two drops).
    per_record = 230.0
    if isinstance(db, str):
        parts = _rows(db, "SELECT relid::text, pg_total_relation_size(relid) FROM pg_partition_tree('audit_events') "
                          "WHERE isleaf")
        per_record = max(230.0, sum(int(r[1]) for r in parts) / max(1, len(_table_ids(db))))
        print(f"PostgreSQL: {len(parts)} partitions, {per_record:.0f} bytes per record kept")
    assert not load.failures and not load.refused, (load.failures[:3], load.refused[:3])
    calls = len(load.acked)
    assert calls > 6000, f"the load was too light to show anything ({calls} calls)"
    # Levels off: over the last third of the run the database grows by less than a tenth of what the
    # calls made meanwhile would take kept (230 bytes each): it holds 2,000 records plus what arrives
    # between two sweeps, so its size follows the rate of calls, not their number.  (Measured from the
    # first third instead, SQLite's indexes were still settling to their steady fill — 2.3 -> 5.1 MB
    # over 16 s at 7k calls/s on an idle machine — a creep this bound does not hide: see the second
    # assertion, and the closing note.)  SQLite's WAL is bounded apart: it holds what was
    # written between two checkpoints.
    third = seconds / 3
    middle = max(s for t, s, _, _ in sizes if t <= 2 * third)
    calls_middle = max(n for t, _, _, n in sizes if t <= 2 * third)
    late = max(s for t, s, _, _ in sizes if t >= 2 * third)
    kept_would_take = (sizes[-1][3] - calls_middle) * per_record
    assert late <= middle + kept_would_take / 10, (middle, late, kept_would_take)
    if not isinstance(db, str):
        # (SQLite: against the 230 bytes a call measured apart.  On PostgreSQL per_record is read from the
        # same partitions, the empty ones made ahead included, so this bound would measure the size against
        # itself: there the row count below says the trail does not hold every call — at 10,902 calls in
        # the fresh-clone run the partitions made ahead alone took it past a quarter.)
        assert late < calls * per_record / 4, "the database holds a good part of every call ever made"
    assert max(w for _, _, w, _ in sizes) < 32 * 1024 * 1024
    assert percentile(load.latencies, 99) < P99_BOUND_S
    exported = _assert_exported_once_and_whole(db, tmp_path / "export")
    assert len(_table_ids(db)) <= 2000 + 5 * calls / seconds  # plus what arrived since the last sweep
    assert set(load.acked) <= _recorded_request_ids(db, exported)
    assert len(verify_export(tmp_path / "export")) >= 3  # a file per 5 s period


def test_an_age_under_steady_load_goes_a_segment_at_a_time_levels_off_and_exports_everything(
        tmp_path: Path) -> None:
    """SQLite, ``TRUECALL_AUDIT_RETAIN=2s``: the serving process's live segment is sealed about every
    second (a tenth of the age, at least one) while the journal's loads keep writing into the one made
    after it, and a sealed segment goes whole once past the age (truecall.audit._segments): the trail
    holds the age's worth of calls and little more, the file follows what it holds (not what was
    made), every other record is in the export once, and no call fails or waits."""
    db = tmp_path / "truecall.db"
    seconds, age, margin = 16.0, 2.0, 2 * 1.0 + 0.5  # (margin: two spans of a second and a sweep interval)
    env = _env(tmp_path, TRUECALL_DB=str(db), TRUECALL_AUDIT_RETAIN=f"{age:g}s")
    with ServerProcess(tmp_path, http=True, env=env) as server:
        load = Load(server.port or 0)
        samples: list[tuple[float, int, int, int]] = []  # (s, file bytes, records held, calls acknowledged)
        sealed: set[str] = set()

        async def main() -> None:
            async def sample() -> None:
                start = time.monotonic()
                while time.monotonic() < load.stop_at:
                    conn = sqlite3.connect(db)
                    try:
                        tables = [r[0] for r in conn.execute(
                            "SELECT name FROM sqlite_master WHERE name LIKE 'audit_events%' AND type = 'table'")]
                        held = sum(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables)
                    except sqlite3.OperationalError:  # (a segment dropped between the two statements)
                        held = -1
                    finally:
                        conn.close()
                    sealed.update(t for t in tables if t != "audit_events")
                    if held >= 0:
                        samples.append((time.monotonic() - start, _size(db)[0], held, len(load.acked)))
                    await asyncio.sleep(0.5)

            runner = asyncio.ensure_future(load.run(seconds))
            await asyncio.sleep(0.1)
            await asyncio.gather(runner, sample())

        asyncio.run(main())
        ended = time.time()
        assert server.alive(), server.stderr()[-2000:]
    calls = len(load.acked)
    print(f"calls {calls}, p99 {percentile(load.latencies, 99) * 1000:.1f} ms, {len(sealed)} segments sealed, "
          f"samples (s, bytes, held, calls): {samples[::4]}")
    assert not load.failures and not load.refused, (load.failures[:3], load.refused[:3])
    assert calls > 5000, f"the load was too light to show anything ({calls} calls)"
    assert len(sealed) >= 5, sealed  # about one a second (a sweep every half second)
    exported = _assert_exported_once_and_whole(db, tmp_path / "export")
    assert set(load.acked) <= _recorded_request_ids(db, exported)
    # Held: the age, the margin, and what arrived since the last sweep — at the fastest rate seen.
    rate = max((b[3] - a[3]) / (b[0] - a[0]) for a, b in zip(samples, samples[2:]))
    assert max(h for _, _, h, _ in samples) <= (age + margin + 1.0) * rate, (samples, rate)
    kept = _rows(db, "SELECT ts FROM {trail}")
    assert min(r[0] for r in kept) >= ended - (age + margin + 2.0)
    # The file follows what the trail holds (pages freed by a drop are taken by the next records), not
    # what was made: past the first age, never more than twice what the most held so far takes
    # (230 bytes a record, docs/guide/operations.md), and some room; at the end, well under what every
    # call would take kept.
    for i, (t, size, _, _) in enumerate(samples):
        if t >= 2 * (age + margin):
            most = max(h for _, _, h, _ in samples[:i + 1])
            assert size <= 2 * most * 230 + 2 * 1024 * 1024, (t, size, most)
    assert samples[-1][1] < calls * 230 / 2, (samples[-1], calls)
    assert percentile(load.latencies, 99) < P99_BOUND_S


def test_a_kill_during_a_sweep_loses_no_record_that_was_not_exported(
        tmp_path: Path, rng_seed: int, backend: str, pg_schemas: Any) -> None:
    """On PostgreSQL the 1 s partitions (the export period) go whole, the newest by rows: a kill
    lands in either."""
    rng = random.Random(rng_seed)
    db: Path | str = tmp_path / "truecall.db" if backend == "sqlite" else pg_schemas().url
    env = _env(tmp_path, TRUECALL_AUDIT_SWEEP_S="0.05", TRUECALL_AUDIT_RETAIN="300", TRUECALL_DB=str(db))
    if backend == "postgresql":
        env["TRUECALL_AUDIT_EXPORT_PERIOD"] = "1s"
    acked: list[int] = []
    for round_ in range(3):
        server = ServerProcess(tmp_path, http=True, env=env).start()
        try:
            load = Load(server.port or 0, clients=4)
            load._ids = iter(range(round_ * 10 ** 6 + 1, (round_ + 1) * 10 ** 6))
            kill_after = rng.uniform(2.0, 4.0)

            async def main() -> None:
                runner = asyncio.ensure_future(load.run(kill_after + 1.0))
                await asyncio.sleep(kill_after)
                os.kill(server.pid, signal.SIGKILL)  # sweeps run every 50 ms, each ~tens of ms: mid-sweep
                await runner

            asyncio.run(main())
        finally:
            server.stop()
        acked += load.acked
        assert load.acked, server.stderr()[-2000:]
        print(f"kill {round_ + 1} after {kill_after:.2f} s: {_caught_mid_sweep(db, tmp_path / 'export')}")
    # A last start recovers the journal of the killed one, repairs the export a kill left mid-batch
    # and sweeps; then it is stopped gracefully.
    with ServerProcess(tmp_path, http=True, env=env):
        time.sleep(1.0)
    exported = _assert_exported_once_and_whole(db, tmp_path / "export", kills=3)
    missing = set(acked) - _recorded_request_ids(db, exported)
    assert not missing, f"{len(missing)} acknowledged calls have no record"
    assert len(exported) > 1000


def _mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"this test needs to mount a small tmpfs (run as root, as CI does): {done.stderr.strip()}")


def test_a_full_file_system_refuses_calls_honestly_and_service_resumes_when_space_is_freed(tmp_path: Path) -> None:
    small = tmp_path / "small"
    _mount_tmpfs(small, "32m")  # room for the WAL (up to ~8 MB under load) once space returns
    try:
        db = small / "truecall.db"
        env = {"TRUECALL_DB": str(db), "TRUECALL_AUDIT_RETAIN": "all"}
        with ServerProcess(tmp_path / "work", http=True, env=env) as server:
            port = server.port or 0
            filler = small / "filler"
            with open(filler, "wb") as f:  # all but ~256 KiB: a few thousand records' journal
                free = os.statvfs(small).f_bavail * os.statvfs(small).f_frsize
                f.write(b"\0" * max(0, free - 256 * 1024))
            load = Load(port, clients=4)

            def readyz() -> tuple[int, bytes]:
                with RawHttp(port, timeout=5) as conn:
                    answer = conn.request("GET", "/readyz")
                    return answer.status, answer.body

            async def until_refused() -> None:
                runner = asyncio.ensure_future(load.run(60.0))
                while not load.refused and time.monotonic() < load.stop_at - 50:
                    await asyncio.sleep(0.1)
                await asyncio.sleep(1.0)  # refusals go on while the disk stays full
                status, body = await asyncio.to_thread(readyz)
                assert status == 503 and b"audit trail" in body and b"no space" in body, (status, body)
                load.stop_at = 0.0
                await runner

            asyncio.run(until_refused())
            assert load.refused, "the file system never filled"
            assert not load.failures, load.failures[:3]
            for _, status, message in load.refused:  # honest: what is wrong, and whether anything ran
                assert "audit trail cannot be written" in message, (status, message)
                # refused before the tool ran: 503 and "nothing was done"; a call in flight when the disk
                # filled ran, and its answer, replaced after the fact, says it may not have completed
                assert (status == 503 and "Nothing was done" in message) or "may not have completed" in message
            assert sum("Nothing was done" in m for _, _, m in load.refused) > len(load.refused) / 2
            acked_while_full = list(load.acked)
            filler.unlink()  # space returns: the server notices by itself
            deadline = time.monotonic() + 10
            while readyz()[0] != 200:
                assert time.monotonic() < deadline, readyz()
                time.sleep(0.1)
            after = Load(port, clients=2)
            asyncio.run(after.run(2.0))
            assert after.acked and not after.refused and not after.failures, (after.refused[:3], after.failures[:3])
            assert server.alive()
        exported: list[dict[str, Any]] = []
        recorded = _recorded_request_ids(db, exported)
        missing = (set(acked_while_full) | set(after.acked)) - recorded
        assert not missing, f"{len(missing)} acknowledged calls have no record"
        conn = sqlite3.connect(db)
        try:
            (refused,) = conn.execute("SELECT fields FROM audit_events WHERE kind = 'audit.refused'").fetchone()
        finally:
            conn.close()
        assert orjson.loads(refused)["count"] >= 1
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)
