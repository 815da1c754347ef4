"""``truecall serve --http --workers N``: N serving processes behind one listening socket.

One process serves on one core; a machine with more of them is used by several processes.  They
share what replicas already share (the database: SQLite in WAL mode or PostgreSQL), so what
holds across replicas holds across workers: tasks, handshake-era sessions and single-use
``requestState`` ids are rows in that database, and each worker keeps its own audit journal
(:mod:`truecall.audit._journal` names it by pid and locks it; a dead worker's is loaded by whichever
process opens the database next: the worker started in its place).

The *supervisor* (the process the operator started) binds the listening sockets itself, so
``--port`` errors stay one line and no worker can race another for the port: on Linux one socket
per worker on the same address (``SO_REUSEPORT``, see :data:`REUSE_PORT`), elsewhere one they
share.  It then starts each worker as a fresh interpreter (``python -m truecall.cli._worker_process``) that
inherits only its listening socket and one end of a socketpair; a worker started again in the
place of a dead one takes over the same socket (connections queued on it meanwhile wait for it).  A fresh interpreter rather than a fork: the app opens database connections,
threads and locks at import, none of which survive a fork, and every worker loads the app itself.

What goes down the socketpair, never through a file or the command line: the serve options and
the keys every worker must share but the operator did not configure (``TRUECALL_STATE_KEYS``
seals ``requestState``, ``TRUECALL_AUDIT_KEY`` keys the argument hashes).  The supervisor makes
them once, at start, so a state sealed by one worker opens on every other one and the audit of
the same arguments hashes the same whichever worker served it.

The socketpair is also each worker's lifeline: the supervisor holds the other end, so the worker
sees end-of-file when the supervisor is gone (killed with SIGKILL included) and stops, draining
like a SIGTERM.  On Linux the worker also asks the kernel for SIGTERM when its parent dies
(``PR_SET_PDEATHSIG``).  No worker outlives its supervisor.

A worker that exits while the supervisor is not stopping is started again (after a back-off that
grows while it keeps failing); the new one's start-up recovery settles what the dead one was running
(:meth:`~truecall.tasks.runtime.TaskRuntime.recover_at_start`: on SQLite at once, the dead pid being
gone; on PostgreSQL when the lease runs out, like a dead replica's).  SIGTERM or SIGINT to the
supervisor stops every worker the same way a single process stops: no new connection is taken,
answers in flight are finished, then the process ends.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .._misuse import ServeError

__all__ = ["WorkerSide", "resolve_workers", "supervise", "worker_pids"]

#: One socket per worker, all bound to the address (Linux): the kernel hashes each new connection to
#: one of them, so connections opened together are spread over the workers.  One shared socket
#: (elsewhere) is accepted by whichever worker wakes first, and an event loop accepts every
#: connection waiting at once: clients that connect together would all land on one worker.
REUSE_PORT = sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")
#: Keys every worker must hold the same of; made by the supervisor when not configured.
SHARED_KEYS = ("TRUECALL_STATE_KEYS", "TRUECALL_AUDIT_KEY")
#: Names the keys of :data:`SHARED_KEYS` the supervisor made (not the operator), while a worker builds.
MADE_KEYS = "_TRUECALL_MADE_KEYS"
#: A worker's restart back-off: the first restart at once, then doubling while it keeps dying early.
RESTART_MIN_S, RESTART_MAX_S = 0.1, 5.0
#: A worker that ran this long before dying was healthy: its next restart is immediate again.
HEALTHY_S = 10.0
_PR_SET_PDEATHSIG = 1


def resolve_workers(value: int | str) -> int:
    """``--workers``: a positive number, or ``auto`` for the cores this process may run on."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - not Linux
            return max(1, os.cpu_count() or 1)
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise ServeError(f"--workers {value}: a number of processes (1 or more) or 'auto'") from None
    if count < 1:
        raise ServeError(f"--workers {value}: a number of processes (1 or more) or 'auto'")
    return count


def _new_key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")


@dataclass
class _Worker:
    """One worker process as the supervisor sees it."""

    slot: int
    proc: subprocess.Popen[bytes]
    line: socket.socket  # the supervisor's end of the socketpair
    started: float = field(default_factory=time.monotonic)
    ready: bool = False


class _Supervisor:
    def __init__(self, options: dict[str, Any], count: int, listeners: list[socket.socket], debug: bool) -> None:
        self.options = options
        self.debug = debug
        self.count = count
        self.listeners = listeners
        #: Made here once, sent to every worker; the configured ones stay in the environment.
        self.keys = {name: _new_key() for name in SHARED_KEYS if not os.environ.get(name, "").strip()}
        self.workers: dict[int, _Worker] = {}
        self.stopping = False
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.wake_w.setblocking(False)
        self.selector.register(self.wake_r, selectors.EVENT_READ, None)
        self.failures: dict[int, int] = {}
        self.restart_at: dict[int, float] = {}

    # -- workers ----------------------------------------------------------------------

    def spawn(self, slot: int) -> _Worker:
        mine, theirs = socket.socketpair()
        config = {"options": self.options, "keys": self.keys, "banner": slot == 0 and slot not in self.failures,
                  "supervisor": os.getpid(), "debug": self.debug}
        listener = self.listeners[slot % len(self.listeners)]
        argv = [sys.executable, "-m", "truecall.cli._worker_process", str(listener.fileno()), str(theirs.fileno())]
        try:
            proc = subprocess.Popen(argv, pass_fds=(listener.fileno(), theirs.fileno()),
                                    stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        mine.sendall(json.dumps(config).encode() + b"\n")
        worker = _Worker(slot, proc, mine)
        self.workers[slot] = worker
        self.selector.register(mine, selectors.EVENT_READ, worker)
        return worker

    def close(self, worker: _Worker) -> None:
        """Forget a worker that has ended (its line closed, out of the selector)."""
        try:
            self.selector.unregister(worker.line)
        except (KeyError, ValueError):
            pass
        worker.line.close()
        self.workers.pop(worker.slot, None)

    def first(self) -> int | None:
        """Start worker 0 and wait until it serves: its start-up errors (a bad APP, bad credentials)
        are the operator's one line, said once, with its exit status, before any other starts."""
        worker = self.spawn(0)
        while not worker.ready:
            if not self._wait(None):
                continue
            if worker.proc.poll() is not None:
                self.close(worker)
                return worker.proc.returncode or 1
            if self.stopping:
                return self.drain()
        return None

    def _wait(self, timeout: float | None) -> bool:
        """Wait for a worker's line (ready, or closed) or a signal; ``True`` when something happened."""
        events = self.selector.select(timeout)
        for key, _ in events:
            if key.data is None:
                try:
                    while self.wake_r.recv(64):
                        pass
                except (BlockingIOError, InterruptedError):
                    pass
                continue
            worker: _Worker = key.data
            try:
                data = worker.line.recv(64)
            except OSError:
                data = b""
            if data.startswith(b"ready"):
                worker.ready = True
                continue
            # End of file: the worker is gone (or about to be).
            try:
                worker.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                worker.proc.kill()
                worker.proc.wait()
        return bool(events)

    def run(self) -> int:
        status = self.first()
        if status is not None:
            return status
        for slot in range(1, self.count):
            self.spawn(slot)
        while not self.stopping:
            now = time.monotonic()
            for worker in list(self.workers.values()):
                if worker.proc.poll() is not None:
                    self._died(worker, now)
            for slot, at in list(self.restart_at.items()):
                if at <= now and not self.stopping:
                    del self.restart_at[slot]
                    self.spawn(slot)
            soonest = min(self.restart_at.values(), default=None)
            self._wait(max(0.0, soonest - time.monotonic()) if soonest is not None else 1.0)
        return self.drain()

    def _died(self, worker: _Worker, now: float) -> None:
        self.close(worker)
        lived = now - worker.started
        failures = 0 if lived >= HEALTHY_S else self.failures.get(worker.slot, 0) + 1
        self.failures[worker.slot] = failures
        delay = 0.0 if failures <= 1 else min(RESTART_MAX_S, RESTART_MIN_S * 2 ** (failures - 1))
        print(f"truecall serve: worker {worker.proc.pid} {_how_it_ended(worker.proc.returncode)}; "
              f"starting another{f' in {delay:.1f}s' if delay else ''}", file=sys.stderr, flush=True)
        self.restart_at[worker.slot] = now + delay

    def drain(self) -> int:
        """Stop every worker as one process stops (SIGTERM: finish what is in flight), then wait."""
        from ..transports.guarded import SHUTDOWN_TIMEOUT_S

        self.stopping = True
        for listener in self.listeners:  # once each worker closes its copy, connections are refused
            listener.close()
        for worker in self.workers.values():
            if worker.proc.poll() is None:
                try:
                    worker.proc.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + SHUTDOWN_TIMEOUT_S + 5
        for worker in list(self.workers.values()):
            try:
                worker.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.proc.kill()
                worker.proc.wait()
            self.close(worker)
        return 0

    # -- signals ------------------------------------------------------------------------

    def on_signal(self, signum: int, frame: Any) -> None:
        self.stopping = True
        self.stopped_by = signum
        try:
            self.wake_w.send(b"x")
        except OSError:
            pass


def _how_it_ended(code: int | None) -> str:
    if code is None:
        return "stopped"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def supervise(options: dict[str, Any], count: int, listeners: list[socket.socket], *, debug: bool = False) -> int:
    """Serve with ``count`` workers on the bound ``listeners`` until SIGTERM/SIGINT; the exit status.

    ``listeners``: one socket per worker (``SO_REUSEPORT``), or one they all share.  ``options`` are
    :func:`truecall.cli.serving.serve`'s keyword arguments (JSON-able)."""
    supervisor = _Supervisor(options, count, listeners, debug)
    previous = {sig: signal.signal(sig, supervisor.on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        status = supervisor.run()
        if getattr(supervisor, "stopped_by", None) == signal.SIGINT:  # Ctrl-C: said in one line, as one process does
            print("truecall serve: stopped (Ctrl-C)", file=sys.stderr, flush=True)
        return status
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for worker in list(supervisor.workers.values()):  # an exception on the way: no worker is left behind
            if worker.proc.poll() is None:
                worker.proc.kill()
                worker.proc.wait()
            supervisor.close(worker)
        supervisor.selector.close()
        supervisor.wake_r.close()
        supervisor.wake_w.close()


def worker_pids(supervisor_pid: int) -> list[int]:
    """The pids of a supervisor's workers (its child processes), from ``/proc`` (Linux)."""
    pids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{supervisor_pid}/task"):
            with open(f"/proc/{supervisor_pid}/task/{task}/children") as f:
                pids.extend(int(p) for p in f.read().split())
    except OSError:
        return []
    return sorted(pids)


# -- the worker side ----------------------------------------------------------------------


def _die_with_parent(supervisor: int) -> None:
    """Ask Linux for SIGTERM when the supervisor dies (the lifeline covers other systems too)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl: the lifeline alone
        return
    if os.getppid() != supervisor:  # it died before the request was made
        os.kill(os.getpid(), signal.SIGTERM)


def _watch_lifeline(line: socket.socket) -> None:
    """End of file on the lifeline: the supervisor is gone; stop as a SIGTERM stops a server."""

    def watch() -> None:
        try:
            while line.recv(64):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="truecall-lifeline", daemon=True).start()


def _read_config(line: socket.socket) -> dict[str, Any]:
    data = b""
    while not data.endswith(b"\n"):
        chunk = line.recv(65536)
        if not chunk:
            raise SystemExit(1)  # the supervisor is gone before saying what to serve
        data += chunk
    config: dict[str, Any] = json.loads(data)
    return config


@dataclass
class WorkerSide:
    """What :func:`truecall.cli.serving.serve` does differently in a worker."""

    #: The supervisor's bound socket, inherited.
    listener: socket.socket
    #: Whether this worker says how to configure credentials (the first one does, once).
    banner: bool
    #: The keys the supervisor made (see :data:`SHARED_KEYS`).
    keys: dict[str, str]
    #: Called once the app is loaded and the engine built: the worker serves from now on.
    ready: Callable[[], None]

    @contextlib.contextmanager
    def shared_keys(self) -> Iterator[None]:
        """The supervisor's keys in the environment only while the app and the engine are built (they
        read them there), then gone: a subprocess a tool starts later does not inherit them."""
        os.environ.update(self.keys)
        # Which of them the supervisor made (they live as long as it does): a SQLite file's at-rest
        # key is then its key file, which outlives the supervisor (truecall.storage._at_rest.at_rest_for).
        os.environ[MADE_KEYS] = ",".join(self.keys)
        try:
            yield
        finally:
            for name in (*self.keys, MADE_KEYS):
                os.environ.pop(name, None)
