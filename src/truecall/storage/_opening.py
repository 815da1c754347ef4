"""A database made now and opened later: what both backends share about opening.

A :class:`~truecall.Server` is built without I/O (issue 27): it makes its database with
``connect=False`` and opens it at ``server.start()``.  Meanwhile the stores built on it (the audit
trail, the task store, an app's own stores) ask it for what they would otherwise do at once:
their migrations (:meth:`Opening.migrate` keeps them, in order) and the work that needs the
database readable (:meth:`Opening.when_open`: loading audit journals, reading a key file).  The
database does all of it, in the order asked, when it opens; a database already open does it at
once, so a store behaves the same on either.

Before it opens, a statement is refused in one line that says what opens it
(:class:`NotOpen`): a stand-in (:class:`Unopened`) holds the place of the connection or pool,
so the statements' own code carries no check.
"""

from __future__ import annotations

from typing import Callable, NoReturn, Self, Sequence

from ._interface import Migration
from ._target import shown_target

__all__ = ["NotOpen", "Unopened", "Opening"]


class NotOpen(RuntimeError):
    """A statement on a database made with ``connect=False`` before its :meth:`~Opening.open`.

    The line names what opens the database (:attr:`opener`); a server's database raises the
    subclass :class:`truecall.ServerNotStarted`, which names ``server.start()``."""

    #: What opens the database, as the line says it.
    opener = "its open()"

    @classmethod
    def of(cls, target: str) -> "NotOpen":
        return cls(f"database {shown_target(target)} is not open yet: {cls.opener} opens it")


class Unopened:
    """Stands where a database's connection (or pool) will be until it opens: any use raises."""

    __slots__ = ("_target", "_error")

    def __init__(self, target: str, error: type[NotOpen]) -> None:
        self._target = target
        self._error = error

    def __getattr__(self, name: str) -> NoReturn:
        raise self._error.of(self._target)


class Opening:
    """Opening, shared by both backends: each implements ``_connect`` and ``_migrate_now``."""

    def __init__(self) -> None:
        #: The connection or pool was made (:meth:`open`); until then statements raise :class:`NotOpen`.
        self.connected = False
        #: What was asked of the database before it opened, in order (see the module's docstring).
        self._waiting: list[Callable[[], None]] = []

    def _connect(self) -> None:
        raise NotImplementedError

    def _migrate_now(self, migrations: Sequence[Migration]) -> None:
        raise NotImplementedError

    def open(self) -> Self:
        """Connect (once; later calls change nothing), do what was asked meanwhile — migrations and
        each store's :meth:`when_open` work — in the order it was asked, and return the database.
        A failure stops there and is raised; what is left stays asked, for the next call."""
        if not self.connected:
            self._connect()
            self.connected = True
        waiting = self._waiting
        while waiting:
            waiting[0]()
            del waiting[0]
        return self

    def migrate(self, migrations: Sequence[Migration]) -> None:
        """Apply the migrations not applied yet (by any process), each exactly once, in order;
        on a database not open yet, when it opens."""
        if self.connected:
            self._migrate_now(migrations)
        else:
            self._waiting.append(lambda: self._migrate_now(migrations))

    def when_open(self, work: Callable[[], None]) -> None:
        """Run ``work`` once the database is open and the migrations asked before it are applied:
        now if it is open, else at :meth:`open` (a store's first reads, a key file it needs)."""
        if self.connected:
            work()
        else:
            self._waiting.append(work)
