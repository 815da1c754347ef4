"""A client-side deadline on every wait for a database server's answer.

``statement_timeout`` is enforced by the server: when its answers stop arriving (a network that
holds or drops bytes, a proxy that hangs, a host that froze) nothing ends the wait on our side,
and TCP's own timers do not help while the kernel at the other end acknowledges the bytes
(keepalives are answered, nothing sent stays unacknowledged).  :class:`Deadlines` is the
missing bound: one thread per database that shuts a connection's socket down when the
operation on it (a statement, the ``COMMIT`` of a transaction) has waited past its deadline.
The waiting thread then fails at once with the driver's "connection lost" error — an outage,
answered as one — and the connection, now broken, is discarded by the pool instead of reused.

Registering an operation is a dict entry under a lock (no system call unless it is due before the
thread's next wake-up); the thread sleeps until the earliest deadline.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Callable

__all__ = ["Deadlines", "Watch"]


class Watch:
    """One operation being waited on: its connection's socket and when the wait must end."""

    __slots__ = ("fileno", "deadline", "fired")

    def __init__(self, fileno: Callable[[], int], deadline: float) -> None:
        self.fileno = fileno
        self.deadline = deadline
        #: The deadline passed and the socket was shut down: the operation's error is this bound's.
        self.fired = False


class Deadlines:
    """The watchdog of one database's connections (a daemon thread, started on first use)."""

    def __init__(self, name: str = "truecall-db-deadlines") -> None:
        self._name = name
        self._watches: dict[int, Watch] = {}
        self._cond = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        self._wake_at = float("inf")  # when the thread wakes next: a watch due earlier must wake it
        self._closed = False

    def watch(self, fileno: Callable[[], int], seconds: float) -> Watch:
        """Start bounding an operation: ``fileno()`` names its socket (read only if the deadline passes)."""
        entry = Watch(fileno, time.monotonic() + seconds)
        with self._cond:
            self._watches[id(entry)] = entry
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            elif entry.deadline < self._wake_at:
                self._cond.notify()
        return entry

    def extend(self, entry: Watch, seconds: float) -> None:
        """A next operation on the same connection (the next statement of a transaction, its COMMIT)."""
        entry.deadline = time.monotonic() + seconds  # (later than before: the thread finds it when it wakes)

    def done(self, entry: Watch) -> None:
        with self._cond:
            self._watches.pop(id(entry), None)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        cond = self._cond
        with cond:
            while not self._closed:
                now = time.monotonic()
                due = [w for w in self._watches.values() if w.deadline <= now]
                for entry in due:
                    del self._watches[id(entry)]
                    entry.fired = True
                    _shut(entry.fileno)  # under the lock: the operation cannot have ended and its connection moved on
                if self._watches:
                    self._wake_at = min(w.deadline for w in self._watches.values())
                    cond.wait(max(0.001, self._wake_at - now))
                else:
                    self._wake_at = float("inf")
                    cond.wait()


def _shut(fileno: Callable[[], int]) -> None:
    """Shut the socket down (both ways): a thread blocked reading it wakes with end-of-file."""
    try:
        fd = os.dup(fileno())
    except Exception:  # noqa: BLE001 - already closed: nothing waits on it any more
        return
    sock = socket.socket(fileno=fd)
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()  # (the duplicate only: the connection's own descriptor stays until it is discarded)
