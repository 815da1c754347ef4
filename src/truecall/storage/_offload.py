"""Database work off the event loop: a transaction on a server database runs in a worker thread.

On a server database (a connection per thread: ``Storage.pooled``) the event loop keeps serving
everything else — health, metrics, other requests — while a statement waits for a lock or for a
server that stopped answering (each wait bounded: see ``_deadline``).  SQLite's one connection
serialises every statement of the process anyway, so there the work runs inline.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ._interface import Storage

__all__ = ["off_loop", "off_loop_result", "in_thread"]

#: How many threads wait on one database at most: as many as its pool has connections (more would only
#: queue for a connection), and never the loop's default executor, which others need meanwhile.
DEFAULT_THREADS = 10

_executors: "weakref.WeakKeyDictionary[Any, ThreadPoolExecutor]" = weakref.WeakKeyDictionary()


def in_thread(db: Storage, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> "asyncio.Future[Any]":
    """``fn(*args, **kwargs)`` in one of ``db``'s worker threads (a bounded pool of its own), in the
    caller's context (as ``asyncio.to_thread``): a future of the running loop."""
    executor = _executors.get(db)
    if executor is None:
        threads = getattr(db, "max_connections", DEFAULT_THREADS)
        executor = _executors[db] = ThreadPoolExecutor(threads, thread_name_prefix="truecall-db")
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return asyncio.get_running_loop().run_in_executor(executor, call)


async def off_loop(db: Storage, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, bool]:
    """``fn(*args, **kwargs)`` — one database transaction — in a worker thread: (its result, cancelled?).

    On a server database (its own connection per thread) the event loop keeps serving everything
    else while the transaction waits (a lock held elsewhere, a slow server).  A cancellation that
    arrives meanwhile does not abandon it half way: the transaction runs to its end, so what it
    did is known, and the caller is told it was cancelled along with the result.  SQLite's one
    connection serialises every statement of the process anyway (and its waits are bounded and
    then fail fast): there the thread hop would only cost, so it runs inline.
    """
    if not db.pooled:
        return fn(*args, **kwargs), False
    work = in_thread(db, fn, *args, **kwargs)
    cancelled = False
    while not work.done():
        try:
            await asyncio.wait({work})
        except asyncio.CancelledError:
            cancelled = True
    return work.result(), cancelled


async def off_loop_result(db: Storage, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """:func:`off_loop` for work that stops when cancelled: the transaction still runs to its end (what it
    did is known), then a cancellation that arrived meanwhile is raised instead of returning its result."""
    result, cancelled = await off_loop(db, fn, *args, **kwargs)
    if cancelled:
        raise asyncio.CancelledError()
    return result
