"""The retention sweep's CPU per record dropped (SQLite, or a PostgreSQL URL), export on and off.

    python bench/sweep_cost.py [--records 100000] [--keep 2000] [--age] [--db URL] [--profile] [--every N] [--idle K]

Fills ``audit_events`` with ``--records`` synthetic records shaped like a served call's (a
``tool.called`` document of ~200 bytes), then times ``Sweeper.sweep()`` — the export (JSON lines,
gzip, ``fsync``), the ``.sha256`` seal, the deletes and the space given back — with
``time.process_time`` (this process's CPU: the PostgreSQL server's own work is not in it).
``--every N``: sweep after every N records inserted instead of once at the end, as a server
sweeping at a steady rate does (many small sweeps: their fixed costs show).  ``--idle K`` (with
``--every``): after every K of those sweeps, two sweeps with no arrivals between them, as a server
whose load comes and goes sees (bench/run.py's rounds serve another system meanwhile): what the
space given back and taken again costs.  ``--age`` (SQLite, with ``--every``): the policy is an age
instead of a number — ``--every`` records arrive per second of a clock of the test's, and the age
is ``--keep`` records' worth of them — so the sweep seals segments and drops them whole
(truecall.audit._segments) where a number deletes rows.  Prints µs of CPU per record dropped, and the
pages given back; ``--profile`` adds the sweep's top functions (cProfile).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# (bench/profile.py would shadow the standard library's profile, which cProfile imports)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT / "src"))

import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import orjson  # noqa: E402

from truecall.audit._retention import Retention, Sweeper  # noqa: E402
from truecall.audit import AuditLog  # noqa: E402
from truecall.storage import open_database  # noqa: E402

_INSERT = "INSERT INTO audit_events (ts, kind, tenant, subject, tool, outcome, fields) VALUES (?, ?, ?, ?, ?, ?, ?)"


def _fill(db: object, first: int, count: int, ts0: float, step: float = 1e-4) -> None:
    rows = []
    for i in range(first, first + count):
        doc = {"requestId": i, "client": "bench/1.0", "transport": "http", "durationMs": 0.42,
               "arguments": {"service": {"sha256": f"{i:064x}"[:43]}}, "session": f"s-{i % 97:08d}"}
        rows.append((ts0 + i * step, "tool.called", "acme", "operator", "incident.search", "ok", orjson.dumps(doc)))
    with db.transaction():  # type: ignore[attr-defined]
        for row in rows:
            db.execute(_INSERT, row)  # type: ignore[attr-defined]


def run(target: str, records: int, keep: int, export: bool, every: int, profile: bool, workdir: Path,
        idle: int = 0, age: bool = False) -> float:
    db = open_database(target)
    try:
        AuditLog(db, key=b"k" * 32, journal=False, retain="all")
        step = 1.0 / every if age else 1e-4  # (an age: --every records a second of the test's clock)
        policy = Retention(max_age_s=keep * step) if age else Retention(max_records=keep)
        sweeper = Sweeper(db, policy, (workdir / "export") if export else None, period_s=3600, interval_s=1)
        ts0 = time.time() - records * step
        cpu = 0.0
        dropped = 0
        prof = cProfile.Profile(time.process_time) if profile else None
        made = sweeps = 0
        while made < records:
            n = min(every, records - made)
            _fill(db, made, n, ts0, step)
            made += n
            sweeps += 1
            if prof is not None:
                prof.enable()
            t0 = time.process_time()
            clock = ts0 + made * step if age else None
            dropped += sweeper.sweep(clock)
            if idle and sweeps % idle == 0:  # the load stops for two sweeps
                dropped += sweeper.sweep(clock) + sweeper.sweep(clock)
            cpu += time.process_time() - t0
            if prof is not None:
                prof.disable()
        per = cpu / max(1, dropped) * 1e6
        print(f"{'export' if export else 'no export':>9}{' (age)' if age else ''}: {dropped} dropped, {cpu * 1000:.0f} ms CPU, "
              f"{per:.2f} µs/record (sweeps of {min(every, records)} arrivals"
              f"{f', two idle sweeps after every {idle}' if idle else ''}; "
              f"{getattr(sweeper, 'vacuumed', '?')} pages given back)")
        if prof is not None:
            pstats.Stats(prof).sort_stats("tottime").print_stats(14)
        return per
    finally:
        db.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--keep", type=int, default=2000)
    parser.add_argument("--every", type=int, default=0, help="sweep after every N records (0: once at the end)")
    parser.add_argument("--idle", type=int, default=0, help="two sweeps without arrivals after every K sweeps")
    parser.add_argument("--age", action="store_true", help="an age of --keep records' worth (see above)")
    parser.add_argument("--db", help="a PostgreSQL URL (?schema=… recommended); default a fresh SQLite file")
    parser.add_argument("--profile", action="store_true")
    ns = parser.parse_args()
    for export in (False, True):
        with tempfile.TemporaryDirectory(prefix="truecall-sweep-cost-") as tmp:
            target = ns.db or os.path.join(tmp, "a.db")
            run(target, ns.records, ns.keep, export, ns.every or ns.records, ns.profile, Path(tmp), ns.idle, ns.age)
            if ns.db:
                db = open_database(ns.db)
                try:
                    db.execute("DROP TABLE IF EXISTS audit_events CASCADE")
                    db.execute("DROP TABLE IF EXISTS audit_export")
                    db.execute("DELETE FROM _migrations WHERE name LIKE 'audit%'")
                finally:
                    db.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
