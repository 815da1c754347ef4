"""Streamable HTTP as a plain ASGI app (served by uvicorn).

One endpoint (``/mcp`` by default):

- ``POST`` carries one JSON-RPC message.  A request with a 2026-07-28 version in
  its header or ``_meta`` is served statelessly; ``initialize`` opens a
  handshake-era session (``Mcp-Session-Id``) used by later POSTs.
- ``GET`` opens a handshake-era session's stream for unsolicited notifications.
- ``DELETE`` ends a handshake-era session.

Answers are JSON, or an SSE stream when messages may precede the response
(progress, logs, server-to-client requests, ``subscriptions/listen``).  The
client closing a response stream cancels the work behind it.  ``Host`` and
``Origin`` are checked against DNS rebinding; bodies are size-limited; the bearer
token becomes the core's :class:`~truecall.auth.Principal`.

This module is the ASGI entry point: it routes each request to the private modules that do
the work, one job each —

- ``_http_wire``: ASGI plumbing (refusals, bodies, answering, running until the client leaves);
- ``_http_gate``: Host/Origin against DNS rebinding, the bearer token as a Principal;
- ``_http_headers``: media types and each era's routing headers;
- ``_http_stateless``: the 2026-07-28 stateless POST;
- ``_http_sessions``: the handshake era's sessions and their POST/GET/DELETE;
- ``_http_answers`` and ``_http_sse``: writing an answer as JSON or as an SSE stream.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterable

import orjson

from ..auth._principals import Principal
from ..protocol import jsonrpc
from ..protocol.engine import Engine
from ..protocol.jsonrpc import DEFAULT_LIMITS, Limits, MessageError
from ._session_store import SessionStore
from ..protocol.versions import HANDSHAKE_VERSIONS, META_VERSION
from ..storage import off_loop
from ._http_answers import Answers
from ._http_gate import LOOPBACK_HOSTS, Gate
from ._http_headers import HeaderChecks
from ._http_sessions import SessionPaths
from ._http_stateless import StatelessPost
from ._http_wire import (BODY_FOLLOWS, DISCONNECT_HOOK, JSON, ClientGone, DisconnectHook, HttpError, Receive, Scope,
                         Send, declared_length_ok, headers_of, read_rest, respond, whole_body)
from ._http_wire import until_disconnect as _until_disconnect  # (the name tests and older callers import)

__all__ = ["HttpTransport", "LOOPBACK_HOSTS", "BODY_FOLLOWS", "DISCONNECT_HOOK", "DisconnectHook"]


class HttpTransport:
    """The ASGI application serving one engine: checks who asks, then routes to the era's path."""

    def __init__(
        self,
        engine: Engine,
        *,
        path: str = "/mcp",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        authenticate: Callable[[str | None], Principal] | None = None,
        anonymous: Principal | None = None,
        limits: Limits = DEFAULT_LIMITS,
        max_sessions: int = 10_000,
        max_sessions_per_principal: int = 100,
        session_idle_s: float = 3600.0,
        metrics: bool = True,
    ) -> None:
        self.engine = engine.start()  # (once: ``truecall serve`` started it already)
        self.server = engine.server
        self.path = path
        hosts = frozenset(h.lower() for h in (allowed_hosts or LOOPBACK_HOSTS))
        self._gate = Gate(self.server, hosts, frozenset(h.lower() for h in (allowed_origins or hosts)),
                          authenticate, anonymous)
        self._checks = HeaderChecks(self.engine)
        answers = Answers(self.engine, self._gate)
        self._stateless = StatelessPost(self.engine, self._checks, answers)
        self.session_store = SessionStore(self.server.db, idle_s=session_idle_s)
        self._sessions = SessionPaths(self.engine, self.session_store, self._gate, self._checks, answers,
                                      max_sessions=max_sessions, max_sessions_per_principal=max_sessions_per_principal,
                                      session_idle_s=session_idle_s)
        self._plain_path = path not in ("/healthz", "/readyz", "/metrics") and \
            not path.startswith("/.well-known/oauth-protected-resource")  # (those paths win, as below)
        self.limits = limits
        self.sessions = self._sessions.sessions  # (the live table)
        if metrics:
            from ..server._metrics import Metrics

            self.metrics: Any = Metrics(self.server)
        else:
            self.metrics = None

    # -- configuration, kept by the part that uses it ---------------------------------

    @property
    def allowed_hosts(self) -> frozenset[str]:
        return self._gate.allowed_hosts

    @allowed_hosts.setter
    def allowed_hosts(self, value: frozenset[str]) -> None:
        self._gate.allowed_hosts = value

    @property
    def allowed_origins(self) -> frozenset[str]:
        return self._gate.allowed_origins

    @allowed_origins.setter
    def allowed_origins(self, value: frozenset[str]) -> None:
        self._gate.allowed_origins = value

    @property
    def anonymous(self) -> Principal | None:
        return self._gate.anonymous

    @anonymous.setter
    def anonymous(self, value: Principal | None) -> None:
        self._gate.anonymous = value

    @property
    def max_sessions(self) -> int:
        return self._sessions.max_sessions

    @max_sessions.setter
    def max_sessions(self, value: int) -> None:
        self._sessions.max_sessions = value

    @property
    def max_sessions_per_principal(self) -> int:
        return self._sessions.max_sessions_per_principal

    @max_sessions_per_principal.setter
    def max_sessions_per_principal(self, value: int) -> None:
        self._sessions.max_sessions_per_principal = value

    @property
    def session_idle_s(self) -> float:
        return self._sessions.session_idle_s

    @session_idle_s.setter
    def session_idle_s(self, value: float) -> None:
        self._sessions.session_idle_s = value
        self.session_store.idle_s = value  # (what other replicas' rows are judged by, and purged at)

    # -- ASGI entry ---------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = scope.get("path", "")
        headers = headers_of(scope)
        try:
            self._gate.check_origin(headers)  # every path, /metrics and /readyz included
        except HttpError as exc:
            await respond(send, exc.status, orjson.dumps(jsonrpc.error_message(None, exc.error)), JSON)
            return
        if path == self.path and scope["method"] == "POST" and self._plain_path:  # the hot path
            try:
                await self._post(scope, headers, receive, send)
            except HttpError as exc:
                await self._refuse(send, exc)
            except ClientGone:
                pass
            return
        if path == "/healthz":
            await respond(send, 200, b'{"status":"ok"}')
            return
        if path == "/readyz":  # ready = the database answers (asked off the loop: /healthz answers meanwhile) and the audit trail can be written
            try:
                await off_loop(self.server.db, self.server.db.fetchone, "SELECT 1")
            except Exception:
                await respond(send, 503, b'{"status":"database unavailable"}')
                return
            why = self.server.events.unwritable
            if why is not None:
                await respond(send, 503, orjson.dumps({"status": "audit trail unavailable", "reason": why}))
                return
            await respond(send, 200, b'{"status":"ready"}')
            return
        if path == "/metrics" and self.metrics is not None:
            try:
                await off_loop(self.server.db, self.metrics.read)
            except Exception:  # the task gauges are left out; what the process counts itself is still served
                pass
            await respond(send, 200, self.metrics.render(), [(b"content-type", b"text/plain; version=0.0.4")])
            return
        if path.startswith("/.well-known/oauth-protected-resource"):
            resource = getattr(self.server.tokens, "protected_resource", None)
            if resource is None or scope["method"] != "GET":
                await respond(send, 404, b'{"error":"not found"}')
            else:
                await respond(send, 200, orjson.dumps(resource.document()))
            return
        if path != self.path:
            await respond(send, 404, b'{"error":"not found"}')
            return
        try:
            method = scope["method"]
            if method == "POST":
                await self._post(scope, headers, receive, send)
            elif method == "GET":
                await self._sessions.get(headers, receive, send)
            elif method == "DELETE":
                await self._sessions.delete(headers, send)
            else:
                await respond(send, 405, b"", [(b"allow", b"GET, POST, DELETE")])
        except HttpError as exc:
            await self._refuse(send, exc)
        except ClientGone:
            return

    async def _refuse(self, send: Send, exc: HttpError) -> None:
        await self.engine.refused()  # a refusal, too, leaves after its records (auth.denied …)
        await respond(send, exc.status, orjson.dumps(jsonrpc.error_message(exc.id, exc.error)), exc.headers + JSON)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.server.task_runtime.start()  # settle orphans of dead replicas, even while idle
                self.engine.attach(asyncio.get_running_loop())
                await self.server.start_lifespan()  # the app's own (Server(lifespan=...))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.server.task_runtime.stop()
                self._sessions.close()
                self.engine.flush()
                await self.server.stop_lifespan()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- POST: which era --------------------------------------------------------------

    async def _post(self, scope: Scope, headers: dict[str, str], receive: Receive, send: Send) -> None:
        limit = self.limits.max_bytes  # (the body read inline: one coroutine less per request)
        declared_length_ok(headers, limit)
        first = await receive()
        body = whole_body(first, limit)
        if body is None:
            body = await read_rest(first, receive, limit)
        try:
            message = jsonrpc.decode(body, self.limits)
        except MessageError as exc:
            # Authenticated first: a caller without a credential learns nothing about the parser.
            self._gate.principal(headers, None)
            self._checks.check_media(headers, exc.id)
            raise HttpError(400, exc, exc.id) from None
        principal = self._gate.principal(headers, message.id)
        self._checks.check_media(headers, message.id)
        session_id = headers.get("mcp-session-id")
        params = message.params or {}
        meta = params.get("_meta")
        has_meta_version = isinstance(meta, dict) and META_VERSION in meta
        header_version = (headers.get("mcp-protocol-version") or "").strip()
        legacy_header = header_version in HANDSHAKE_VERSIONS
        # A request whose _meta names its version is stateless whatever Mcp-Session-Id it carries:
        # 2026-07-28 ignores that header, and its routing-header checks must not be skippable.
        stateless = has_meta_version or bool(session_id is None and header_version and not legacy_header)
        plan = self.engine.plan(message, stateless=stateless)  # (an initialize's plan is the same either way)
        if stateless and not plan.opens_session:
            await self._stateless.post(message, plan, headers, principal, scope, receive, send)
            return
        await self._sessions.post(message, plan, headers, session_id, principal, scope, receive, send)
