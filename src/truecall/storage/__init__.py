"""Storage shared by the audit trail, the task store, the sessions and apps: one interface, two backends.

:class:`Storage` is the interface everything above speaks to; :func:`open_database` picks the
backend from one setting and returns it.  The backends are private modules that never import
each other or this package's ``__init__`` (what they share lives in ``_settings``, ``_target``,
``_faults``, ``_deadline``, ``_opening`` and ``_interface``):

- ``_sqlite``: :class:`Database`, a SQLite file (or memory), the default;
- ``_postgres``: ``PostgresDatabase``, for replicas sharing one server.  It is imported only when
  a ``postgresql://`` URL is opened, so a server on SQLite never pays for it (nor for psycopg).

Either may be made now and opened later (``connect=False``; ``_opening``): a server is built
without I/O and opens its database at ``server.start()``.

What a store keeps of a caller's data is sealed or keyed-hashed here too (``_at_rest``, with the keys
read from configuration by ``_keys``): the stores above never hold it in clear.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ._at_rest import AtRest, at_rest_for
from ._batched import BATCH, PAUSE_S, delete_batched
from ._faults import unavailable
from ._interface import Cursor, Migration, Row, Storage
from ._offload import in_thread, off_loop, off_loop_result
from ._opening import NotOpen
from ._settings import (DEFAULT_BUSY_MS, DEFAULT_CACHE_KIB, DEFAULT_STATEMENT_MS, ENV_BUSY_MS, ENV_CACHE_KIB,
                        ENV_STATEMENT_MS, FAST_FAIL_MS)
from ._sqlite import Database
from ._target import DEFAULT_PATH, ENV_DB, CannotOpenDatabase, default_path, shown_target

if TYPE_CHECKING:
    from ._postgres import PostgresDatabase, split_schema, to_postgres

__all__ = ["Storage", "Cursor", "Row", "Database", "PostgresDatabase", "Migration", "open_database", "unavailable", "NotOpen",
           "off_loop", "off_loop_result", "in_thread",
           "CannotOpenDatabase", "ENV_DB", "DEFAULT_PATH", "default_path", "shown_target", "ENV_BUSY_MS",
           "DEFAULT_BUSY_MS", "ENV_CACHE_KIB", "DEFAULT_CACHE_KIB", "ENV_STATEMENT_MS", "DEFAULT_STATEMENT_MS",
           "FAST_FAIL_MS", "split_schema", "to_postgres", "AtRest", "at_rest_for", "delete_batched", "BATCH",
           "PAUSE_S"]

#: Names of the PostgreSQL backend, imported on first use (see the module's docstring).
_POSTGRES = frozenset({"PostgresDatabase", "split_schema", "to_postgres"})


def __getattr__(name: str) -> Any:
    if name in _POSTGRES:
        from . import _postgres

        return getattr(_postgres, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_database(target: str | os.PathLike[str] | Storage | None = None, *, connect: bool = True,
                  **options: Any) -> Storage:
    """One setting picks the backend: a ``postgresql://`` URL, or a SQLite path (default in-memory).

    A PostgreSQL URL may carry ``?schema=NAME``: every table then lives in that schema
    (created if missing), e.g. ``postgresql://app@db/truecall?schema=desk_eu``.  A database
    already made is returned as it is.  ``connect=False``: the setting is read now (a malformed
    one raises here), nothing is opened until the database's ``open()`` (see ``_opening``).
    """
    if target is not None and not isinstance(target, (str, os.PathLike)):
        return target  # already a database
    text = str(target) if target is not None else ":memory:"
    if text.startswith(("postgresql://", "postgres://")):
        from ._postgres import PostgresDatabase

        return PostgresDatabase(text, connect=connect, **options)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///"):]
    return Database(text, connect=connect, **options)
