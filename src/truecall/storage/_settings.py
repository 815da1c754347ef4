"""The settings every backend reads: how long a statement may wait, how much it may cache.

Each is a keyword of the backend's constructor, else an environment variable, else a default;
both backends read them through the functions here, so they agree on names, units and limits.
"""

from __future__ import annotations

import os

from .._misuse import SettingError

__all__ = ["ENV_BUSY_MS", "DEFAULT_BUSY_MS", "ENV_CACHE_KIB", "DEFAULT_CACHE_KIB", "FAST_FAIL_MS",
           "ENV_STATEMENT_MS", "DEFAULT_STATEMENT_MS", "busy_ms", "cache_kib", "statement_ms"]

#: How long a statement waits for another connection's write lock before failing with
#: ``database is locked`` (milliseconds).  The database is used from the event loop, so this is
#: also how long one statement can hold the whole process up.
ENV_BUSY_MS = "TRUECALL_DB_BUSY_MS"
DEFAULT_BUSY_MS = 10_000
#: SQLite's own page cache per connection, in KiB.  Small on purpose: a server's hot pages are few
#: (the right edge of the audit table, the open tasks), and a miss is one read from the operating
#: system's page cache, which holds the rest; SQLite's default (2 MiB) is that much more memory.
ENV_CACHE_KIB = "TRUECALL_DB_CACHE_KIB"
DEFAULT_CACHE_KIB = 512
#: Once a statement has waited the whole busy timeout in vain, the next ones wait only this long
#: (milliseconds) until a write gets through again: a lock held for minutes must not turn every
#: statement of every request into a full wait on the event loop (that is a hung server, not an
#: honest "unavailable").
FAST_FAIL_MS = 20
#: PostgreSQL: the longest a statement may run, or wait for a lock, before it fails
#: (``statement_timeout`` and ``lock_timeout``, milliseconds).  A serving process lowers it
#: further, to half its task lease (see ``Server``).
ENV_STATEMENT_MS = "TRUECALL_DB_STATEMENT_TIMEOUT_MS"
DEFAULT_STATEMENT_MS = 10_000


def busy_ms(value: int | None) -> int:
    return _whole(value, ENV_BUSY_MS, DEFAULT_BUSY_MS, 0, "milliseconds", "busy_timeout_ms")


def statement_ms(value: int | None) -> int:
    return _whole(value, ENV_STATEMENT_MS, DEFAULT_STATEMENT_MS, 1, "milliseconds", "statement_timeout_ms")


def cache_kib(value: int | None) -> int:
    return _whole(value, ENV_CACHE_KIB, DEFAULT_CACHE_KIB, 64, "KiB", "the SQLite page cache")


def _whole(value: int | None, env: str, default: int, minimum: int, unit: str, what: str) -> int:
    """``value``, else ``$env``, else ``default``: a whole number of ``unit`` >= ``minimum``."""
    if value is None:
        raw = os.environ.get(env, "").strip()
        if not raw:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise SettingError(f"{env} must be a whole number of {unit}, not {raw!r}") from None
        if value < minimum:
            raise SettingError(f"{env} must be a whole number of {unit} >= {minimum}, not {raw!r}")
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be a whole number of {unit} >= {minimum}")
    return value
