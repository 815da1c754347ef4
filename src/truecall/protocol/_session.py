"""A handshake-era session, and the outbox a request's messages go to.

The session's state changes only through the table in :mod:`._session_state` (``transition`` and
``close``); everything else here is what the session carries between requests (the negotiated
version, the client's capabilities, subscriptions), the server-to-client requests waiting for
their answer, and the hold that keeps a task's status notifications behind its handle.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from typing import Any, Callable, Protocol

from ..server._changes import ChangeQueue
from ..auth._principals import Principal
from . import jsonrpc
from ._session_state import SessionEvent, SessionState, next_session_state
from .jsonrpc import Incoming

__all__ = ["Session", "Outbox", "NULL_OUTBOX", "ClientError", "SessionEnded"]


class Outbox(Protocol):
    """Where messages related to one request go (stdout, or that request's SSE stream)."""

    async def send(self, message: dict[str, Any]) -> None: ...


class _NullOutbox:
    async def send(self, message: dict[str, Any]) -> None:
        return None


#: No stream to the client (a JSON-only answer): nothing related to the request can be sent.
NULL_OUTBOX = _NullOutbox()


class ClientError(Exception):
    """The client answered a server-to-client request with an error (or can answer nothing).

    ``reason`` is what may be told to the caller (a tool's error result says it): the server's own
    words, never the client's error text, which is the client's data and may hold anything (a
    secret included)."""

    def __init__(self, error: dict[str, Any], reason: str | None = None) -> None:
        super().__init__(str(error.get("message", "client error"))[:200])
        self.error = error
        if reason is None:
            code = error.get("code")
            shown = f" ({code})" if isinstance(code, int) and not isinstance(code, bool) else ""
            reason = f"the client answered with an error{shown}"
        self.reason = reason

    @classmethod
    def ours(cls, reason: str) -> "ClientError":
        """The client can answer nothing, for a cause the server itself saw (``reason``)."""
        return cls({"message": reason}, reason)


class SessionEnded(ClientError):
    """The session ended while a server-to-client request waited (or before it was sent): nobody
    answered it.  Not the user's answer: a task's question relayed on it stays open."""

    def __init__(self) -> None:
        reason = "the session ended before the client answered"
        super().__init__({"message": reason}, reason)


_HUNG_UP = "the client closed its input"


class Session:
    """A handshake-era session: negotiated once, then shared by its requests."""

    def __init__(self, session_id: str | None = None, principal: Principal | None = None) -> None:
        self.id = session_id or secrets.token_urlsafe(24)
        self.principal = principal
        self.state = SessionState.NEW
        self.version: str | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] = {}
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        self.pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self.last_seen = time.monotonic()
        #: When the shared store's ``last_seen`` of this session was last written (``time.monotonic()``).
        self.stored_seen = self.last_seen
        #: Where unsolicited notifications go (stdout, or the session's GET stream).
        self.stream: Outbox | None = None
        #: Called after the negotiated state changes (HTTP stores it for other replicas).
        self.persist: Callable[["Session"], None] | None = None
        #: The client can answer nothing any more (see :meth:`hang_up`).
        self.hung_up = False
        #: Task-augmented calls whose answer (the task handle) is not written yet: while there
        #: are any, task status notifications wait (see :meth:`hold_task_notes`).
        self._handles_due = 0
        self._held_notes: set[str] = set()
        self._feed: ChangeQueue | None = None
        self.announced_tasks: set[str] = set()
        #: What the application keeps for this session (``ctx.set_state``); lives as long as it does.
        self.app_state: dict[str, Any] = {}
        #: ``"stdio"`` or ``"streamable-http"``: set by the transport that made the session.
        self.transport: str | None = None

    @property
    def closed(self) -> bool:
        """The session ended (``DELETE``, idle expiry, the end of the input): it serves nothing more."""
        return self.state is SessionState.CLOSED

    def changed(self) -> None:
        if self.persist is not None:
            self.persist(self)

    def transition(self, event: SessionEvent) -> None:
        self.state = next_session_state(self.state, event)
        self.changed()

    async def request(self, outbox: Outbox, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send a server-to-client request on ``outbox`` and wait for its response.

        Raises :class:`ClientError` when the client answers with an error or can answer nothing
        (its input ended, or the session ended while the request waited), ``TimeoutError`` when no
        answer comes within ``timeout``."""
        if self.hung_up:
            raise ClientError.ours(_HUNG_UP)
        if self.closed:
            raise SessionEnded()
        request_id = f"s-{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        try:
            await outbox.send(jsonrpc.request(request_id, method, params))
            async with asyncio.timeout(timeout):
                return await future
        finally:
            self.pending.pop(request_id, None)
            if future.done() and not future.cancelled():
                future.exception()  # failed while the send was still under way: seen, not logged at exit

    def resolve(self, message: Incoming) -> None:
        future = self.pending.get(message.id)
        if future is None or future.done():
            return  # a late or unknown response is dropped, never answered
        if "error" in message.raw:
            err = message.raw.get("error")
            future.set_exception(ClientError(err if isinstance(err, dict) else {}))
        else:
            result = message.raw.get("result")
            future.set_result(result if isinstance(result, dict) else {})

    def hold_task_notes(self) -> None:
        """A transport is about to serve a task-augmented ``tools/call``: until it calls
        :meth:`release_task_notes` (after writing the answer), no ``notifications/tasks/status``
        leaves for a task this session was not told about yet, so a status never reaches the
        client before the handle of its task.  (Which id the call will create is known only
        once it is accepted, so every unannounced task waits: only for the few milliseconds a
        handle takes.)"""
        self._handles_due += 1

    def release_task_notes(self, response: dict[str, Any] | None) -> None:
        """The answer of a held call is written: the task it announces is known from now on, and
        the status changes that waited are sent (each task's current status, once)."""
        self._handles_due -= 1
        result = response.get("result") if response is not None else None
        task = result.get("task") if isinstance(result, dict) else None
        if isinstance(task, dict) and isinstance(task.get("taskId"), str):
            self.announced_tasks.add(task["taskId"])
            if len(self.announced_tasks) > 10_000:  # a bound: a forgotten one only waits like an unknown one
                self.announced_tasks.pop()
        if self._handles_due == 0 and self._held_notes:
            held, self._held_notes = self._held_notes, set()
            feed = self._feed
            for task_id in held:
                if feed is not None:
                    feed.offer(("task", task_id))

    def task_note_waits(self, task_id: str) -> bool:
        """Whether a status change of ``task_id`` must wait for a handle still being written."""
        if self._handles_due and task_id not in self.announced_tasks:
            self._held_notes.add(task_id)
            return True
        return False

    def hang_up(self) -> None:
        """The client can send nothing more (stdin ended): requests waiting for its answer fail
        now, as later ones will, instead of waiting out their timeout."""
        self.hung_up = True
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ClientError.ours(_HUNG_UP))

    def close(self) -> None:
        """End the session (through the state table; closing a closed session changes nothing).
        Server-to-client requests still waiting fail with :class:`SessionEnded`: nobody can answer
        them now, and the tool that asked decides what that means (an elicitation: an error result
        that says so).  They are not cancelled: the request that waits was not cancelled by anyone,
        and a ``CancelledError`` raised in it would read as its caller's cancellation (the server
        logged it as a crash).  Not persisted: whoever ends a stored session deletes its record (a
        closed session is never loaded again anyway)."""
        if not self.closed:
            self.state = next_session_state(self.state, SessionEvent.CLOSE)
        for future in self.pending.values():
            if not future.done():
                future.set_exception(SessionEnded())
        self.pending.clear()
