"""The one interface every database behind truecall implements.

The audit trail, the task store, the session table, the desk and the server speak only to
:class:`Storage`; what differs between backends is declared here as a property of the database
(``for_update``, ``shared``, ``pooled``, ``local_file``, ...) instead of being guessed from its
type or probed with ``getattr``.  Both backends (``_sqlite.Database``,
``_postgres.PostgresDatabase``) satisfy it structurally; mypy checks that at ``open_database``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Callable, Protocol, Sequence

__all__ = ["Storage", "Cursor", "Row", "Migration"]

#: One row of a result: a tuple of column values.
Row = tuple[Any, ...]
#: (name, SQL script) pairs; applied once each, in order, recorded in ``_migrations``.
Migration = tuple[str, str]


class Cursor(Protocol):
    """What callers use of a statement's result: its rows and how many rows it changed."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Row | None: ...

    def fetchall(self) -> list[Row]: ...


class Storage(Protocol):
    """A durable SQL database with named, idempotent migrations, whichever backend holds it.

    Statements are written in one portable dialect (``?`` placeholders, SQLite type names,
    ``INSERT OR IGNORE``); a backend that speaks another translates them.
    """

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``: the SQL that the connection of :meth:`transaction` speaks."""

    @property
    def path(self) -> str:
        """What the database was opened on: a file path, ``":memory:"`` or a URL (which may hold a password:
        show it through :func:`~truecall.storage.shown_target`)."""

    @property
    def for_update(self) -> str:
        """What to append to a ``SELECT`` whose rows the current transaction will update, so that another
        process's transaction on those rows waits (``" FOR UPDATE"``; ``""`` where a transaction already
        holds the whole database's write lock)."""

    @property
    def shared(self) -> bool:
        """Whether several processes (replicas, possibly on other hosts) serve from this database at once.

        True for a server database: a task another runner holds may be alive elsewhere.  False for a
        SQLite file, which one serving process owns.
        """

    @property
    def pooled(self) -> bool:
        """Whether each thread gets its own connection, so that a transaction waiting in a worker thread
        leaves the event loop's statements free (a connection pool).  False when one connection
        serialises every statement of the process: moving work to a thread would only cost."""

    @property
    def local_file(self) -> str | None:
        """The file on this host that *is* the database, which any later process opening it finds (a
        SQLite file), or ``None`` (in memory, or a server whose own commit every host shares).  The
        audit journal lives next to this file; without one, the database's commit is the commit point."""

    @property
    def busy_timeout_ms(self) -> int:
        """How long a statement waits for a lock or a connection before it fails (milliseconds)."""

    @property
    def IntegrityError(self) -> type[Exception]:  # noqa: N802 - the DB-API name, as sqlite3 and psycopg spell it
        """Raised for a broken constraint (unique, primary key, check, foreign key)."""

    def unavailable(self, exc: BaseException) -> str | None:
        """Why ``exc``, raised by this database, means it is unavailable right now (locked, full,
        unreachable, restarting), or ``None`` for everything else (SQL mistakes and constraint
        violations are bugs or answers, not outages).  Fixed text, safe for a client."""

    def bound_waits(self, ms: float) -> None:
        """Never let a statement wait (for a lock, a connection) or run longer than ``ms``; only lowers."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor: ...

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    def transaction(self) -> AbstractContextManager[Any]:
        """One transaction on this thread; nested calls join it; rolls back on any exception.

        Statements inside go through :meth:`execute` as usual.  The connection it yields speaks
        :attr:`dialect` untranslated (for code that knows which backend it has).
        """

    @property
    def connected(self) -> bool:
        """Whether :meth:`open` made the connection (or pool); until then every statement raises
        :class:`~truecall.storage.NotOpen` (a database made with ``connect=False``)."""

    def open(self) -> "Storage":
        """Connect (once) and do what was asked meanwhile (:meth:`migrate`, :meth:`when_open`), in order."""

    def migrate(self, migrations: Sequence[Migration]) -> None:
        """Apply the migrations not applied yet (by any process), each exactly once, in order;
        on a database not open yet, when it opens."""

    def when_open(self, work: Callable[[], None]) -> None:
        """Run ``work`` once the database is open (now, if it is): a store's first reads."""

    def forget(self) -> bool:
        """Make content just overwritten or deleted unreadable from every file; ``False`` when this
        cannot be done now (or ever, on this backend)."""

    def integrity_check(self) -> str:
        """``"ok"``, or what is damaged."""

    def close(self) -> None: ...
