"""The handshake era (2025-11-25, 2025-06-18 and before): sessions named by ``Mcp-Session-Id``.

``initialize`` opens a session; later POSTs name it (and may not be another principal's: that
answers like a missing one), ``GET`` opens its stream of unsolicited notifications, ``DELETE``
ends it.  The table is bounded (per principal too: its least recently used session goes), idle
sessions expire, and sessions negotiated on another replica load from the shared store.

On a server database the store's statements run off the event loop (``storage.off_loop``): a
load, and the writes an answer depends on (a session's negotiated state, a ``DELETE``), are
awaited before that answer, and a database that does not answer them is said as the outage (503,
retry later); housekeeping (``last_seen``, idle rows) is not waited for.  On SQLite they run
inline, as every statement there does.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from ..auth._principals import Principal
from ..errors import InvalidRequest, ServiceUnavailable
from ..protocol import jsonrpc
from ..protocol.engine import Engine, Plan, Session
from ..protocol.jsonrpc import Incoming
from ._session_store import SessionStore
from ..protocol._session_state import SessionState
from ._http_answers import Answers
from ._http_gate import Gate
from ._http_headers import CLIENTS_ACCEPT, SSE_ONLY, HeaderChecks, check_legacy_version
from ._http_sse import SseOutbox
from ._http_wire import HttpError, Receive, Scope, Send, respond
from ..storage import in_thread, off_loop_result, unavailable


#: A session's row in the shared store has its ``last_seen`` refreshed by a request at most once per
#: ``min(TOUCH_EVERY_S, idle × TOUCH_FRACTION)`` (an UPDATE per request would be a database write per
#: call).  So another replica may see an active session's row that much older than its last request:
#: an abandoned session expires there between 90 % and 100 % of the idle time after its last request,
#: and an active one never does.
TOUCH_EVERY_S = 60.0
TOUCH_FRACTION = 0.1
_CLOSED = SessionState.CLOSED


class SessionPaths:
    """The session table and the POST/GET/DELETE of the handshake era."""

    def __init__(self, engine: Engine, store: SessionStore, gate: Gate, checks: HeaderChecks, answers: Answers, *,
                 max_sessions: int, max_sessions_per_principal: int, session_idle_s: float) -> None:
        self.engine = engine
        self.store = store
        self.gate = gate
        self.checks = checks
        self.answers = answers
        self.sessions: dict[str, Session] = {}
        self.feeds: dict[str, asyncio.Task[None]] = {}
        self.max_sessions = max_sessions
        self.max_sessions_per_principal = max_sessions_per_principal
        self.session_idle_s = session_idle_s
        self.stored = StoredSessions(store)
        self.saving = self.stored.saving

    def close(self) -> None:
        """At shutdown: stop every stream's feed and close every session."""
        for task in self.feeds.values():
            task.cancel()
        for session in self.sessions.values():
            session.close()

    # -- POST -----------------------------------------------------------------------

    async def post(self, message: Incoming, plan: Plan, headers: dict[str, str], session_id: str | None,
                   principal: Principal, scope: Scope, receive: Receive, send: Send) -> None:
        """A POST of the handshake era; ``plan`` is the engine's (:meth:`Engine.plan`) for ``message``."""
        extra: list[tuple[bytes, bytes]] = []
        if plan.opens_session and session_id is None:
            await self._initialize(message, headers, principal, send)
            return
        if session_id is None:
            raise HttpError(400, InvalidRequest("Mcp-Session-Id header is required"), message.id)
        session = (self._session(session_id, principal, message.id)
                   or await self._load(session_id, principal, message.id))
        check_legacy_version(headers, session, message.id)
        if message.kind != jsonrpc.REQUEST:
            _, status = await self.engine.serve(message, principal, session=session)
            if session.id in self.saving:  # (notifications/initialized: the state it completed is stored first)
                await self.stored.saved(session, message.id)
            await respond(send, status, b"")
            return
        answer: list[dict[str, Any] | None] | None = None
        if plan.may_be_task:
            # Its answer may be a task handle: the session's stream says nothing of that task before it.
            session.hold_task_notes()
            answer = [None]
        try:
            accept = headers.get("accept")
            if (plan.may_stream and accept is not None and "text/event-stream" in accept) \
                    or self._sse_only(accept):  # (an Accept that allows only SSE gets even a plain answer as one event)
                await self.answers.stream(message, plan, principal, session, extra, scope, receive, send, answer)
            else:
                reply = await self.engine.serve(message, principal, session=session)
                if session.id in self.saving:  # (logging/setLevel, subscriptions: stored before they are answered)
                    await self.stored.saved(session, message.id)
                await self.answers.json(send, reply, principal, extra, answer)
        finally:
            if answer is not None:
                session.release_task_notes(answer[0])

    async def _initialize(self, message: Incoming, headers: dict[str, str], principal: Principal,
                          send: Send) -> None:
        """A new session's ``initialize``: the session (and its ``Mcp-Session-Id``) exists only
        if the engine accepted it.  A refused one leaves nothing behind, where a half-made session
        (no version) would refuse every later request for a reason the client cannot act on."""
        session = self._new_session(principal)
        reply = await self.engine.serve(message, principal, session=session)
        if session.version is not None and session.id in self.saving:
            try:  # another replica finds the session as soon as its id is known: stored before it is said
                await self.stored.saved(session, message.id)
            except HttpError:
                self._end_session(session.id)
                raise
        if session.version is None:
            self._end_session(session.id)
        extra = [(b"mcp-session-id", session.id.encode())] if session.version is not None else []
        response, status = reply
        if status == 200 and self._sse_only(headers.get("accept")):
            await SseOutbox(send, extra).finish(response)
            return
        await self.answers.json(send, reply, principal, extra, None)

    def _sse_only(self, accept: str | None) -> bool:
        """The client's ``Accept`` allows only ``text/event-stream`` (checked, and cached, before)."""
        return accept is not None and accept != CLIENTS_ACCEPT and self.checks.accepts.get(accept) == SSE_ONLY

    # -- the table --------------------------------------------------------------------

    def _new_session(self, principal: Principal) -> Session:
        self._expire_sessions()
        if len(self.sessions) >= self.max_sessions:
            raise HttpError(503, InvalidRequest("Too many sessions"))
        mine = [sid for sid, sess in self.sessions.items() if sess.principal is not None
                and (sess.principal.tenant, sess.principal.subject) == (principal.tenant, principal.subject)]
        if len(mine) >= self.max_sessions_per_principal:
            # One principal cannot fill the table for everyone: its least recently used session goes.
            self._end_session(min(mine, key=lambda sid: self.sessions[sid].last_seen))
        session = Session(principal=principal)
        session.transport = "streamable-http"
        session.persist = self.stored.persist
        self.sessions[session.id] = session
        return session

    def _session(self, session_id: str, principal: Principal, id: Any) -> Session | None:
        """The session of this table (checked), or ``None``: the shared store may have it (:meth:`_load`)."""
        session = self.sessions.get(session_id)
        now = time.monotonic()
        if session is not None and now - session.last_seen > self.session_idle_s:
            # Idle here, whether or not anyone swept yet; still alive if another replica kept its row fresh.
            self._forget_idle(session_id)
            session = None
        if session is None:
            if len(session_id) <= 128:
                return None
            raise HttpError(404, InvalidRequest("Session not found"), id)
        return self._admit(session, session_id, principal, id, now)

    async def _load(self, session_id: str, principal: Principal, id: Any) -> Session:
        """A session negotiated on another replica (or before a restart), from the shared store."""
        session = await self.stored.db(id, self.store.load, session_id, principal)
        if session is not None:
            known = self.sessions.get(session_id)
            if known is not None:  # loaded meanwhile by another request of the session: that one is it
                session = known
            else:
                session.stored_seen = -math.inf  # the row may be one touch interval old: refreshed at once
                session.persist = self.stored.persist
                self.sessions[session_id] = session
        if session is None:
            raise HttpError(404, InvalidRequest("Session not found"), id)
        return self._admit(session, session_id, principal, id, time.monotonic())

    def _admit(self, session: Session, session_id: str, principal: Principal, id: Any, now: float) -> Session:
        # Another principal's session answers exactly like a missing one.
        if session.state is _CLOSED:
            raise HttpError(404, InvalidRequest("Session not found"), id)
        owner = session.principal
        if owner is not principal:  # (the same Principal object: the same principal)
            if owner is None or (owner.tenant, owner.subject) != (principal.tenant, principal.subject):
                raise HttpError(404, InvalidRequest("Session not found"), id)
            session.principal = principal  # a refreshed token may carry other scopes
        since = now - session.stored_seen
        if since >= TOUCH_EVERY_S or since >= self.session_idle_s * TOUCH_FRACTION:
            # The shared row's last_seen, written at most this often per session (not on every request):
            # other replicas see it idle at most that long before it is.
            self.stored.aside(self.store.touch, session_id)
            session.stored_seen = now
        session.last_seen = now
        return session

    def _expire_sessions(self) -> None:
        cutoff = time.monotonic() - self.session_idle_s
        for sid in [s for s, sess in self.sessions.items() if sess.last_seen < cutoff]:
            self._forget_idle(sid)
        # Rows no replica refreshed within the idle time, such as those of a replica that died: nobody
        # can resume them (SessionStore.load refuses them), so they go, whoever made them.
        self.stored.aside(self.store.purge_idle)

    def _forget_idle(self, session_id: str) -> None:
        """A session idle here leaves this replica's table; its shared row goes only if it is idle
        there too (another replica serving the session keeps the row fresh, and it stays alive)."""
        self.stored.aside(self.store.delete_if_idle, session_id)
        self._drop(session_id)

    def _end_session(self, session_id: str) -> None:
        self.stored.aside(self.store.delete, session_id)
        self._drop(session_id)

    def _drop(self, session_id: str) -> None:
        """The session leaves this replica's table: closed, its feed stopped."""
        session = self.sessions.pop(session_id, None)
        self.saving.pop(session_id, None)  # (a write in flight ends on its own; nobody waits for it now)
        if session is not None:
            session.close()
        feed = self.feeds.pop(session_id, None)
        if feed is not None:
            feed.cancel()

    # -- GET, DELETE ------------------------------------------------------------------

    async def get(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        session_id = headers.get("mcp-session-id")
        if session_id is None or "text/event-stream" not in headers.get("accept", ""):
            await respond(send, 405, b"", [(b"allow", b"POST, DELETE")])
            return
        principal = self.gate.principal(headers, None)
        session = self._session(session_id, principal, None) or await self._load(session_id, principal, None)
        check_legacy_version(headers, session, None)
        if session.stream is not None:
            raise HttpError(409, InvalidRequest("A stream is already open for this session"))
        outbox = SseOutbox(send, [])
        session.stream = outbox
        await outbox.start()
        feed = asyncio.get_running_loop().create_task(self.engine.session_feed(session))
        self.feeds[session.id] = feed
        try:
            while True:
                msg = await receive()
                if msg["type"] == "http.disconnect":
                    break
        finally:
            feed.cancel()
            self.feeds.pop(session.id, None)
            if session.stream is outbox:
                session.stream = None
            outbox.closed = True

    async def delete(self, headers: dict[str, str], send: Send) -> None:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            await respond(send, 405, b"", [(b"allow", b"GET, POST")])
            return
        principal = self.gate.principal(headers, None)
        session = self._session(session_id, principal, None) or await self._load(session_id, principal, None)
        check_legacy_version(headers, session, None)
        self._drop(session_id)
        await self.stored.db(None, self.store.delete, session_id)  # ended for every replica before it is said
        await respond(send, 200, b"")


class StoredSessions:
    """The shared store as the session paths use it: which of its statements an answer waits for."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        #: Session id → the write of its negotiated state in flight (a server database), awaited before
        #: the next answer of that session goes out (see :meth:`persist`).
        self.saving: dict[str, asyncio.Task[None]] = {}

    async def db(self, id: Any, fn: Any, *args: Any) -> Any:
        """One statement of the store an answer depends on (off the event loop on a server database);
        a database that does not answer it is said as the outage (503, retry later)."""
        try:
            return await off_loop_result(self.store.db, fn, *args)
        except Exception as exc:
            why = unavailable(exc)
            if why is None:
                raise
            raise HttpError(503, ServiceUnavailable.because(why), id) from None

    def aside(self, fn: Any, *args: Any) -> None:
        """Housekeeping of the store no answer waits for: off the event loop on a server database (a
        failure leaves the row to the next sweep or touch), inline on SQLite."""
        if not self.store.db.pooled:
            fn(*args)
            return
        in_thread(self.store.db, fn, *args).add_done_callback(_retrieved)

    def persist(self, session: Session) -> None:
        """``session.persist``: store what the negotiation decided.  On a server database the row (taken
        now) is written off the event loop, after the session's previous write (the last one stands), and
        the session's next answer waits for it (:meth:`saved`)."""
        if not self.store.db.pooled:
            self.store.save(session)
            return
        row = self.store.row(session)
        before = self.saving.get(session.id)

        async def write() -> None:
            if before is not None:
                await asyncio.wait({before})
            await off_loop_result(self.store.db, self.store.write, row)

        sid = session.id
        saving = self.saving[sid] = asyncio.get_running_loop().create_task(write())

        def written(done: "asyncio.Task[None]") -> None:
            _retrieved(done)  # (a failure stays for the session's next answer to say)
            if not done.cancelled() and done.exception() is None and self.saving.get(sid) is done:
                del self.saving[sid]

        saving.add_done_callback(written)

    async def saved(self, session: Session, id: Any) -> None:
        """The session's stored state is written (or the outage is said: 503, retry later)."""
        saving = self.saving.get(session.id)
        if saving is None:
            return
        try:
            await asyncio.wait({saving})
        finally:
            if self.saving.get(session.id) is saving:
                del self.saving[session.id]
        exc = saving.exception() if not saving.cancelled() else None
        if exc is not None:
            why = unavailable(exc)
            if why is None:
                raise exc
            raise HttpError(503, ServiceUnavailable.because(why), id)


def _retrieved(done: "asyncio.Future[Any]") -> None:
    """(A background write's failure is seen where it matters — :meth:`StoredSessions.saved`, the next sweep:
    retrieved here so that asyncio does not report it as lost.)"""
    if not done.cancelled():
        done.exception()
