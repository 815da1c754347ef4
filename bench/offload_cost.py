"""What keeping PostgreSQL off the event loop costs per statement: a bounded thread pool against an async driver.

    python bench/offload_cost.py [--statements 3000] [--concurrency 1,8]

Issue 28 asked for both to be measured before one was chosen.  ``bench/run.py`` serves SQLite, whose
one connection runs every statement inline either way, so this measures what ``run.py`` cannot: one
``SELECT 1`` on a private PostgreSQL (``tests/pg_server.py``), timed in this process's CPU (user +
system, all threads) and wall time per statement, ``--concurrency`` statements in flight at once:

- ``inline``: ``PostgresDatabase.fetchone`` on the loop (what blocked the loop before);
- ``thread pool``: ``await storage.off_loop(db, db.fetchone, ...)`` (what truecall does now: the
  statement in one of the database's worker threads, its client-side deadline included);
- ``async driver``: ``await psycopg.AsyncConnection.execute`` on a ``psycopg_pool.AsyncConnectionPool``
  of the same size (no thread, no deadline: a rewrite of every store would be needed to use it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


async def _run(concurrency: int, n: int, one: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    async def lane(count: int) -> None:
        for _ in range(count):
            await one()

    for _ in range(50):  # warm-up
        await one()
    cpu, wall = _cpu(), time.perf_counter()
    await asyncio.gather(*(lane(n // concurrency) for _ in range(concurrency)))
    done = (n // concurrency) * concurrency
    return (_cpu() - cpu) / done * 1e6, (time.perf_counter() - wall) / done * 1e6


async def _measure(url: str, n: int, concurrencies: list[int]) -> None:
    from psycopg_pool import AsyncConnectionPool

    from truecall.storage import PostgresDatabase, off_loop

    db = PostgresDatabase(url, max_size=10)
    db.bound_waits(15_000)
    pool = AsyncConnectionPool(url, min_size=10, max_size=10, kwargs={"autocommit": True}, open=False)
    await pool.open()

    async def inline() -> Any:
        return db.fetchone("SELECT 1")

    async def threaded() -> Any:
        return (await off_loop(db, db.fetchone, "SELECT 1"))[0]

    async def driver() -> Any:
        async with pool.connection() as conn:
            cur = await conn.execute("SELECT 1")
            return await cur.fetchone()

    print(f"{'concurrency':>11}  {'way':<13} {'CPU µs/stmt':>12} {'wall µs/stmt':>13}")
    for concurrency in concurrencies:
        for name, one in (("inline", inline), ("thread pool", threaded), ("async driver", driver)):
            if name == "inline" and concurrency > 1:
                continue  # (on the loop, one at a time whatever is asked)
            cpu, wall = await _run(concurrency, n, one)
            print(f"{concurrency:>11}  {name:<13} {cpu:>12.1f} {wall:>13.1f}")
    await pool.close()
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", type=int, default=3000)
    parser.add_argument("--concurrency", default="1,8")
    ns = parser.parse_args()
    import pg_server

    server = pg_server.start()
    try:
        try:
            import uvloop

            runner: Any = uvloop.run
        except ImportError:  # pragma: no cover
            runner = asyncio.run
        print(f"load average {os.getloadavg()[0]:.2f}")
        runner(_measure(server.url, ns.statements, [int(c) for c in ns.concurrency.split(",")]))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
