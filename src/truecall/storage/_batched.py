"""Deleting many rows without holding the write lock long: bounded batches, a pause between them.

The audit trail's retention sweep and an app's own history (the desk's settled requests) delete
this way: each batch is its own transaction, so a call waiting for the lock waits for one batch
(a few milliseconds), never for the whole sweep.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

#: Rows per delete transaction: a few milliseconds of write lock (SQLite: ~3 µs a row deleted inside it).
BATCH = 1000
#: Pause between two batches, so that whatever waits for the lock gets it.
PAUSE_S = 0.01


def delete_batched(db: Any, table: str, key: str, where: str, params: Sequence[Any], *, batch: int = BATCH,
                   pause_s: float = PAUSE_S, max_batches: int = 10_000) -> int:
    """``DELETE FROM table WHERE where``, ``batch`` rows (by ``key``) per transaction; returns the rows
    deleted.  ``where`` may name the table's rows as ``h`` (``FROM table h``).  ``table``, ``key`` and
    ``where`` are SQL written by the caller, never input; the values go in ``params``."""
    total = 0
    sql = f"DELETE FROM {table} WHERE {key} IN (SELECT h.{key} FROM {table} h WHERE {where} LIMIT ?)"
    for _ in range(max_batches):
        n = db.execute(sql, (*params, batch)).rowcount
        total += max(0, n)
        if n < batch:
            break
        if pause_s:
            time.sleep(pause_s)
    return total
