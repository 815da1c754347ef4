"""Which exceptions of a database mean "unavailable right now" (an outage), as opposed to a bug.

An outage is answered honestly ("the database is busy") and counted; a SQL mistake or a broken
constraint is not one.  One classifier per backend (each backend's ``unavailable`` method), and
:func:`unavailable` for an exception whose backend the caller does not know.
"""

from __future__ import annotations

import sqlite3
import sys

__all__ = ["unavailable", "sqlite_unavailable", "postgres_unavailable"]

# SQLite primary result codes that mean "the database is unavailable right now", not "this
# statement is wrong": BUSY, LOCKED, NOMEM, READONLY, IOERR, FULL, CANTOPEN, PROTOCOL.
_SQLITE_UNAVAILABLE = {5: "busy (locked by another connection)", 6: "locked", 7: "out of memory",
                       8: "read-only", 10: "disk I/O error", 13: "full (disk or size limit)",
                       14: "cannot be opened", 15: "locking protocol error"}
_POSTGRES_UNAVAILABLE = ("the database server is unreachable or refused the statement (connection lost, restart, "
                         "timeout or out of resources)")


def sqlite_unavailable(exc: BaseException) -> str | None:
    """SQLite: an ``OperationalError`` whose primary result code is one of the outages above."""
    if isinstance(exc, sqlite3.OperationalError):
        why = _SQLITE_UNAVAILABLE.get(getattr(exc, "sqlite_errorcode", 0) & 0xFF)
        return f"the database is {why}" if why else None
    return None


def postgres_unavailable(exc: BaseException) -> str | None:
    """PostgreSQL: any ``psycopg.OperationalError`` (the pool's ``PoolTimeout`` is one)."""
    psycopg = sys.modules.get("psycopg")  # loaded only when a PostgreSQL database is in use
    if psycopg is not None and isinstance(exc, psycopg.OperationalError):
        return _POSTGRES_UNAVAILABLE
    return None


def unavailable(exc: BaseException) -> str | None:
    """Why ``exc`` means the database is unavailable (locked, full, unreachable, restarted), or ``None``.

    ``None`` for everything else, SQL mistakes and constraint violations included (those are bugs
    or answers, not outages).  The reason is fixed text, safe for a client.
    """
    return sqlite_unavailable(exc) or postgres_unavailable(exc)
