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
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
import time
from typing import Any, Awaitable, Callable, Iterable, Protocol

import orjson

try:
    # The C one (asyncio.current_task is Python in 3.11); typeshed does not describe _asyncio.
    from _asyncio import current_task as _current_task  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    _current_task = asyncio.current_task

from ..auth import Principal
from ..errors import (AccessDenied, HeaderMismatch, InsufficientScope, InvalidCredential,
                      InvalidRequest, ProtocolError)
from ..protocol import jsonrpc
from ..protocol.engine import MODERN_METHODS, Engine, Session
from ..protocol._sessions import SessionStore
from ..protocol.jsonrpc import DEFAULT_LIMITS, Incoming, Limits, MessageError
from ..protocol.versions import HANDSHAKE_VERSIONS, META_LOG_LEVEL, META_VERSION

__all__ = ["HttpTransport", "LOOPBACK_HOSTS", "BODY_FOLLOWS", "DISCONNECT_HOOK", "DisconnectHook"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
_NAME_METHODS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
                 "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}
_STREAMING_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
_JSON = [(b"content-type", b"application/json")]
_SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")]
_B64 = re.compile(r"^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$")
# A key of http.response.start: the body message follows at once, so a server that knows it
# (truecall's own protocol, transports/guarded.py) writes head and body together.  Others ignore it.
BODY_FOLLOWS = "truecall.body_follows"
#: A ``scope["extensions"]`` key (ASGI's place for what a server offers beyond the spec):
#: truecall's own protocol (transports/guarded.py) puts the request's :class:`DisconnectHook`
#: there, so that :func:`_until_disconnect` needs no watcher task.  Under other servers it is absent.
DISCONNECT_HOOK = "truecall.disconnect_hook"


class DisconnectHook(Protocol):
    """What ``scope["extensions"][DISCONNECT_HOOK]`` offers."""

    #: The client went away before the response was complete.
    disconnected: bool
    #: Called once, from the loop, when the client goes away before the response is complete.
    on_disconnect: Callable[[], None] | None


class _ClientGone(Exception):
    """The client went away before its request was complete: nothing to answer."""


class _HttpError(Exception):
    def __init__(self, status: int, error: ProtocolError, id: Any = None, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        self.status, self.error, self.id, self.headers = status, error, id, headers or []


def _host_of(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _origin_host(origin: str) -> str | None:
    m = re.match(r"^https?://([^/]+)$", origin.strip().lower())
    return _host_of(m.group(1)) if m else None


def _decode_header_value(value: str) -> str:
    """Header values: trim optional whitespace, decode ``=?base64?…?=`` strictly."""
    value = value.strip(" \t")
    if value.startswith("=?base64?") and value.endswith("?="):
        m = _B64.match(value)
        if not m or len(m.group(1)) % 4:
            raise HeaderMismatch("Malformed base64 header value")
        try:
            return base64.b64decode(m.group(1), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise HeaderMismatch("Malformed base64 header value") from None
    return value


def _param_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value
    return None


class _SseOutbox:
    """An SSE response being written; the first message sends the headers."""

    __slots__ = ("send_", "headers", "started", "closed")

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]]) -> None:
        self.send_ = send
        self.headers = headers
        self.started = False
        self.closed = False

    async def start(self, body_follows: bool = False) -> None:
        if not self.started:
            self.started = True
            await self.send_({"type": "http.response.start", "status": 200, "headers": _SSE + self.headers,
                              BODY_FOLLOWS: body_follows})

    async def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        await self.start(True)
        await self.send_({"type": "http.response.body", "body": _event(message), "more_body": True})

    async def finish(self, message: dict[str, Any] | None) -> None:
        if self.closed:
            return
        if not self.started and message is not None:
            # Nothing was streamed before the answer: the whole stream is this one event, sent as
            # one body (one write, with a content-length, under truecall's own protocol).
            await self.start(True)
            self.closed = True
            await self.send_({"type": "http.response.body", "body": _event(message), "more_body": False})
            return
        if message is not None:
            await self.send(message)
        await self.start(True)
        self.closed = True
        await self.send_({"type": "http.response.body", "body": b"", "more_body": False})


def _event(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as an SSE event."""
    return b"event: message\ndata: " + jsonrpc.encode(message) + b"\n\n"


class HttpTransport:
    """The ASGI application serving one engine."""

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
        self.allowed_hosts = frozenset(h.lower() for h in (allowed_hosts or LOOPBACK_HOSTS))
        self.allowed_origins = frozenset(h.lower() for h in (allowed_origins or self.allowed_hosts))
        self._verdicts: dict[str, bool] = {}  # Host / "origin " + Origin value -> allowed
        self._content_types: dict[str, bool] = {}  # Content-Type value -> is JSON
        self._accepts: dict[str, str] = {}  # Accept value -> which answers it allows (_accepted_answers)
        self._plain_path = path not in ("/healthz", "/readyz", "/metrics") and \
            not path.startswith("/.well-known/oauth-protected-resource")  # (those paths win, as below)
        self._authenticate = authenticate
        self.anonymous = anonymous
        self.limits = limits
        self.sessions: dict[str, Session] = {}
        self._feeds: dict[str, asyncio.Task[None]] = {}
        self.max_sessions = max_sessions
        self.max_sessions_per_principal = max_sessions_per_principal
        self.session_idle_s = session_idle_s
        self.session_store = SessionStore(self.server.db, idle_s=session_idle_s)
        if metrics:
            from .._metrics import Metrics

            self.metrics: Any = Metrics(self.server)
        else:
            self.metrics = None

    # -- ASGI entry ---------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = scope.get("path", "")
        headers = _headers(scope)
        try:
            self._check_origin(headers)  # every path, /metrics and /readyz included
        except _HttpError as exc:
            await _respond(send, exc.status, orjson.dumps(jsonrpc.error_message(None, exc.error)), _JSON)
            return
        if path == self.path and scope["method"] == "POST" and self._plain_path:  # the hot path
            try:
                await self._post(scope, headers, receive, send)
            except _HttpError as exc:
                await self._refuse(send, exc)
            except _ClientGone:
                pass
            return
        if path == "/healthz":
            await _respond(send, 200, b'{"status":"ok"}')
            return
        if path == "/readyz":  # ready = the database answers
            try:
                self.server.db.fetchone("SELECT 1")
            except Exception:
                await _respond(send, 503, b'{"status":"database unavailable"}')
                return
            await _respond(send, 200, b'{"status":"ready"}')
            return
        if path == "/metrics" and self.metrics is not None:
            await _respond(send, 200, self.metrics.render(), [(b"content-type", b"text/plain; version=0.0.4")])
            return
        if path.startswith("/.well-known/oauth-protected-resource"):
            resource = getattr(self.server.tokens, "protected_resource", None)
            if resource is None or scope["method"] != "GET":
                await _respond(send, 404, b'{"error":"not found"}')
            else:
                await _respond(send, 200, orjson.dumps(resource.document()))
            return
        if path != self.path:
            await _respond(send, 404, b'{"error":"not found"}')
            return
        try:
            method = scope["method"]
            if method == "POST":
                await self._post(scope, headers, receive, send)
            elif method == "GET":
                await self._get(headers, receive, send)
            elif method == "DELETE":
                await self._delete(headers, send)
            else:
                await _respond(send, 405, b"", [(b"allow", b"GET, POST, DELETE")])
        except _HttpError as exc:
            await self._refuse(send, exc)
        except _ClientGone:
            return

    async def _refuse(self, send: Send, exc: _HttpError) -> None:
        await self.engine.release(None)  # a refusal, too, leaves after its records (auth.denied …)
        await _respond(send, exc.status, orjson.dumps(jsonrpc.error_message(exc.id, exc.error)), exc.headers + _JSON)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.server.task_runtime.start()  # settle orphans of dead replicas, even while idle
                self.engine.attach(asyncio.get_running_loop())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.server.task_runtime.stop()
                for task in self._feeds.values():
                    task.cancel()
                for session in self.sessions.values():
                    session.close()
                self.engine.flush()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- checks -------------------------------------------------------------------

    def _check_origin(self, headers: dict[str, str]) -> None:
        host = headers.get("host")
        ok = self._verdicts.get(host)  # type: ignore[arg-type]
        if ok is None:
            ok = host is not None and _host_of(host) in self.allowed_hosts
            self._remember(host, ok)
        if not ok:
            raise _HttpError(403, InvalidRequest("Host not allowed"))
        origin = headers.get("origin")
        if origin is not None:
            key = "origin " + origin  # (one cache for both: an Origin value has a scheme, a Host value none)
            ok = self._verdicts.get(key)
            if ok is None:
                ok = _origin_host(origin) in self.allowed_origins
                self._remember(key, ok)
            if not ok:
                raise _HttpError(403, InvalidRequest("Origin not allowed"))

    def _remember(self, key: str | None, ok: bool) -> None:
        if key is None:
            return
        if len(self._verdicts) >= 256:  # a client sending many values gets no memory, only the check
            self._verdicts.clear()
        self._verdicts[key] = ok

    def _principal(self, headers: dict[str, str], id: Any) -> Principal:
        auth = headers.get("authorization")
        token = None
        if auth is not None:
            scheme, _, token = auth.partition(" ")
            if scheme.lower() != "bearer":
                token = None
            token = token.strip() if token else None
        if token is None and self.anonymous is not None:
            return self.anonymous
        try:
            if self._authenticate is not None:
                return self._authenticate(token)
            return self.server.authenticate(token)
        except InvalidCredential as exc:
            # RFC 6750: no error code when no credential was sent at all.
            challenge = self._challenge(error="invalid_token" if token else None)
            raise _HttpError(401, exc, id, [(b"www-authenticate", challenge)]) from None

    def _metadata_url(self) -> str | None:
        resource = getattr(self.server.tokens, "protected_resource", None)
        if resource is None:
            return None
        base = resource.resource
        from urllib.parse import urlsplit

        parts = urlsplit(base)
        return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"

    def _challenge(self, *, error: str | None = None, scope: str | None = None) -> bytes:
        params = []
        if error:
            params.append(f'error="{error}"')
        if scope:
            params.append(f'scope="{scope}"')
        metadata = self._metadata_url()
        if metadata:
            params.append(f'resource_metadata="{metadata}"')
        return ("Bearer " + ", ".join(params) if params else 'Bearer realm="mcp"').encode()

    async def _body(self, headers: dict[str, str], receive: Receive) -> bytes:
        limit = self.limits.max_bytes
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            raise _HttpError(413, InvalidRequest("Request body too large"))
        message = await receive()
        if message["type"] == "http.request" and not message.get("more_body"):  # the whole body at once
            chunk: bytes = message.get("body", b"")
            if len(chunk) > limit:
                raise _HttpError(413, InvalidRequest("Request body too large"))
            return chunk
        chunks, size = [], 0
        while True:
            if message["type"] == "http.disconnect":
                raise _ClientGone()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _HttpError(413, InvalidRequest("Request body too large"))
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)
            message = await receive()

    def _check_media(self, headers: dict[str, str], id: Any) -> None:
        """A POST body is JSON (else 415) and its answer must be JSON or SSE (else 406).

        What real clients send (the official SDKs, the conformance suite) costs one comparison
        each: ``application/json`` and ``application/json, text/event-stream``; other values are
        judged once and remembered.  A missing ``Accept`` accepts anything (RFC 9110); a missing
        ``Content-Type`` is taken as JSON (the body must parse as JSON anyway)."""
        content_type = headers.get("content-type")
        if content_type is not None and content_type != "application/json":
            ok = self._content_types.get(content_type)
            if ok is None:
                ok = _is_json_type(content_type)
                _remember(self._content_types, content_type, ok)
            if not ok:
                raise _HttpError(415, InvalidRequest("Content-Type must be application/json"), id)
        accept = headers.get("accept")
        if accept is not None and accept != _CLIENTS_ACCEPT:
            verdict = self._accepts.get(accept)
            if verdict is None:
                verdict = _accepted_answers(accept)
                _remember(self._accepts, accept, verdict)
            if verdict == _NEITHER:
                raise _HttpError(406, InvalidRequest("Accept must allow application/json or text/event-stream"), id)

    def _check_legacy_version(self, headers: dict[str, str], session: Session, id: Any) -> None:
        """On an established session, an ``MCP-Protocol-Version`` header must name the negotiated
        version (transport spec: an invalid or unsupported one is answered 400).  No header at all
        is allowed: clients of 2025-03-26 and before send none."""
        version = headers.get("mcp-protocol-version")
        if version is not None and version.strip() != session.version:
            raise _HttpError(400, InvalidRequest(
                f"MCP-Protocol-Version header does not match this session's version {session.version}"), id)

    def _check_modern_headers(self, message: Incoming, headers: dict[str, str]) -> None:
        """2026-07-28: the routing headers must be present and match the body."""
        header_version = headers.get("mcp-protocol-version")
        if header_version is None:
            raise _HttpError(400, HeaderMismatch("Missing MCP-Protocol-Version header"), message.id)
        meta = (message.params or {}).get("_meta")
        body_version = meta.get(META_VERSION) if isinstance(meta, dict) else None
        if body_version is not None and body_version != header_version.strip():
            raise _HttpError(400, HeaderMismatch("MCP-Protocol-Version header does not match _meta"), message.id)
        if message.kind != jsonrpc.REQUEST or message.method not in self._modern_methods():
            return  # unknown methods get -32601 from the engine
        method_header = headers.get("mcp-method")
        if method_header is None or method_header.strip() != message.method:
            raise _HttpError(400, HeaderMismatch("Mcp-Method header does not match the request"), message.id)
        field = _NAME_METHODS.get(message.method)
        params = message.params or {}
        if field is not None:
            name_header = headers.get("mcp-name")
            try:
                ok = name_header is not None and _decode_header_value(name_header) == params.get(field)
            except HeaderMismatch:
                ok = False
            if not ok:
                raise _HttpError(400, HeaderMismatch(f"Mcp-Name header does not match params.{field}"), message.id)
        if message.method == "tools/call":
            self._check_param_headers(message, params, headers)

    def _modern_methods(self) -> frozenset[str]:
        return getattr(self.engine, "modern_methods", MODERN_METHODS)

    def _check_param_headers(self, message: Incoming, params: dict[str, Any], headers: dict[str, str]) -> None:
        tool = self.server.registry.tools.get(params.get("name"))  # type: ignore[arg-type]
        if tool is None:
            return
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            return
        for prop, suffix in _header_params(tool):
            value = arguments.get(prop)
            if value is None:
                continue
            raw = headers.get(f"mcp-param-{suffix.lower()}")
            try:
                ok = raw is not None and _decode_header_value(raw) == _param_text(value)
            except HeaderMismatch:
                ok = False
            if not ok:
                raise _HttpError(400, HeaderMismatch(f"Mcp-Param-{suffix} header does not match the argument"),
                                 message.id)

    # -- POST -----------------------------------------------------------------------

    async def _post(self, scope: Scope, headers: dict[str, str], receive: Receive, send: Send) -> None:
        body = await self._body(headers, receive)
        try:
            message = jsonrpc.decode(body, self.limits)
        except MessageError as exc:
            # Authenticated first: a caller without a credential learns nothing about the parser.
            self._principal(headers, None)
            self._check_media(headers, exc.id)
            raise _HttpError(400, exc, exc.id) from None
        principal = self._principal(headers, message.id)
        self._check_media(headers, message.id)
        session_id = headers.get("mcp-session-id")
        params = message.params or {}
        meta = params.get("_meta")
        has_meta_version = isinstance(meta, dict) and META_VERSION in meta
        header_version = (headers.get("mcp-protocol-version") or "").strip()
        legacy_header = header_version in HANDSHAKE_VERSIONS
        # A request whose _meta names its version is stateless whatever Mcp-Session-Id it carries:
        # 2026-07-28 ignores that header, and its routing-header checks must not be skippable.
        if message.method != "initialize" and (
                has_meta_version or (session_id is None and header_version and not legacy_header)):
            await self._post_modern(message, headers, principal, scope, receive, send)
            return
        await self._post_legacy(message, headers, session_id, principal, scope, receive, send)

    async def _post_modern(self, message: Incoming, headers: dict[str, str], principal: Principal,
                           scope: Scope, receive: Receive, send: Send) -> None:
        self._check_modern_headers(message, headers)
        if message.kind != jsonrpc.REQUEST:
            await self.engine.handle(message, principal)
            await _respond(send, 202, b"")
            return
        meta = (message.params or {}).get("_meta") or {}
        accept = headers.get("accept")
        streaming = message.method == "subscriptions/listen" or (
            message.method in _STREAMING_METHODS and isinstance(meta, dict)
            and ("progressToken" in meta or META_LOG_LEVEL in meta)
            and (accept is None or "text/event-stream" in accept)) or (
            accept is not None and accept != _CLIENTS_ACCEPT and self._accepts.get(accept) == _SSE_ONLY)
        if streaming:
            await self._stream(message, principal, None, [], scope, receive, send)
            return
        if message.method == "tools/call" and not self.server.registry.answers_at_once(message.params):
            result = await _until_disconnect(
                self.engine.handle_with_status(message, principal, modern_hint=True), scope, receive)
            if result is None:
                return
            response, status = result
        else:
            response, status = await self.engine.handle_with_status(message, principal, modern_hint=True)
        await self._json(send, response, status, principal)

    async def _post_legacy(self, message: Incoming, headers: dict[str, str], session_id: str | None,
                           principal: Principal, scope: Scope, receive: Receive, send: Send) -> None:
        extra: list[tuple[bytes, bytes]] = []
        if message.kind == jsonrpc.REQUEST and message.method == "initialize" and session_id is None:
            session = self._new_session(principal)
            extra = [(b"mcp-session-id", session.id.encode())]
        else:
            if session_id is None:
                raise _HttpError(400, InvalidRequest("Mcp-Session-Id header is required"), message.id)
            session = self._session(session_id, principal, message.id)
            self._check_legacy_version(headers, session, message.id)
        if message.kind != jsonrpc.REQUEST:
            await self.engine.handle(message, principal, session=session)
            await _respond(send, 202, b"")
            return
        params = message.params
        if message.method == "tools/call" and isinstance(params, dict) and isinstance(params.get("task"), dict):
            # Its answer may be a task handle: the session's stream says nothing of that task before it.
            session.hold_task_notes()
            answer: list[dict[str, Any] | None] = [None]
            try:
                await self._answer_legacy(message, headers, session, principal, extra, scope, receive, send, answer)
            finally:
                session.release_task_notes(answer[0])
            return
        await self._answer_legacy(message, headers, session, principal, extra, scope, receive, send, None)

    async def _answer_legacy(self, message: Incoming, headers: dict[str, str], session: Session,
                             principal: Principal, extra: list[tuple[bytes, bytes]], scope: Scope, receive: Receive,
                             send: Send, answer: list[dict[str, Any] | None] | None) -> None:
        accept = headers.get("accept")
        if (message.method in _STREAMING_METHODS and accept is not None and "text/event-stream" in accept) or (
                accept is not None and accept != _CLIENTS_ACCEPT and self._accepts.get(accept) == _SSE_ONLY):
            # (an Accept that allows only SSE gets even a plain answer as one event)
            await self._stream(message, principal, session, extra, scope, receive, send, answer)
            return
        response, status = await self.engine.handle_with_status(message, principal, session=session)
        await self._json(send, response, status, principal, extra, answer)

    async def _stream(self, message: Incoming, principal: Principal, session: Session | None,
                      extra: list[tuple[bytes, bytes]], scope: Scope, receive: Receive, send: Send,
                      answer: list[dict[str, Any] | None] | None = None) -> None:
        outbox = _SseOutbox(send, extra)
        work = self.engine.handle_with_status(message, principal, session=session, outbox=outbox,
                                              modern_hint=session is None)
        result = await (work if message.method == "tools/call" and self.server.registry.answers_at_once(message.params)
                        else _until_disconnect(work, scope, receive))
        if result is None:
            outbox.closed = True
            return
        response, status = result
        if not outbox.started and status != 200:
            await self._json(send, response, status, principal, extra, answer)
            return
        response = await self.engine.release(response)
        await outbox.finish(response)
        if answer is not None:
            answer[0] = response

    async def _json(self, send: Send, response: dict[str, Any] | None, status: int, principal: Principal,
                    extra: list[tuple[bytes, bytes]] | None = None,
                    answer: list[dict[str, Any] | None] | None = None) -> None:
        response = await self.engine.release(response)  # once its audit records are durable
        headers = _JSON
        if extra:
            headers = _JSON + extra
        if status == 403 and response is not None:
            error = response.get("error", {})
            scopes = (error.get("data") or {}).get("requiredScopes") if isinstance(error, dict) else None
            if scopes:
                headers = headers + [(b"www-authenticate",
                                      self._challenge(error="insufficient_scope", scope=" ".join(scopes)))]
        await _respond(send, status, jsonrpc.encode(response) if response is not None else b"", headers)
        if answer is not None:
            answer[0] = response  # written: what it announces may be spoken of now

    # -- sessions -------------------------------------------------------------------

    def _new_session(self, principal: Principal) -> Session:
        self._expire_sessions()
        if len(self.sessions) >= self.max_sessions:
            raise _HttpError(503, InvalidRequest("Too many sessions"))
        mine = [sid for sid, sess in self.sessions.items() if sess.principal is not None
                and (sess.principal.tenant, sess.principal.subject) == (principal.tenant, principal.subject)]
        if len(mine) >= self.max_sessions_per_principal:
            # One principal cannot fill the table for everyone: its least recently used session goes.
            self._end_session(min(mine, key=lambda sid: self.sessions[sid].last_seen))
        session = Session(principal=principal)
        session.persist = self.session_store.save
        self.sessions[session.id] = session
        return session

    def _session(self, session_id: str, principal: Principal, id: Any) -> Session:
        session = self.sessions.get(session_id)
        if session is None and len(session_id) <= 128:
            # Negotiated on another replica (or before a restart): the shared store has it.
            session = self.session_store.load(session_id, principal)
            if session is not None:
                session.persist = self.session_store.save
                self.sessions[session_id] = session
        # Another principal's session answers exactly like a missing one.
        if session is None or session.principal is None or session.closed or \
                (session.principal.tenant, session.principal.subject) != (principal.tenant, principal.subject):
            raise _HttpError(404, InvalidRequest("Session not found"), id)
        session.principal = principal  # a refreshed token may carry other scopes
        now = time.monotonic()
        if now - session.last_seen > 60:
            self.session_store.touch(session_id)
        session.last_seen = now
        return session

    def _expire_sessions(self) -> None:
        cutoff = time.monotonic() - self.session_idle_s
        for sid in [s for s, sess in self.sessions.items() if sess.last_seen < cutoff]:
            self._end_session(sid)

    def _end_session(self, session_id: str) -> None:
        self.session_store.delete(session_id)
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.close()
        feed = self._feeds.pop(session_id, None)
        if feed is not None:
            feed.cancel()

    async def _get(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        session_id = headers.get("mcp-session-id")
        if session_id is None or "text/event-stream" not in headers.get("accept", ""):
            await _respond(send, 405, b"", [(b"allow", b"POST, DELETE")])
            return
        principal = self._principal(headers, None)
        session = self._session(session_id, principal, None)
        self._check_legacy_version(headers, session, None)
        if session.stream is not None:
            raise _HttpError(409, InvalidRequest("A stream is already open for this session"))
        outbox = _SseOutbox(send, [])
        session.stream = outbox
        await outbox.start()
        feed = asyncio.get_running_loop().create_task(self.engine.session_feed(session))
        self._feeds[session.id] = feed
        try:
            while True:
                msg = await receive()
                if msg["type"] == "http.disconnect":
                    break
        finally:
            feed.cancel()
            self._feeds.pop(session.id, None)
            if session.stream is outbox:
                session.stream = None
            outbox.closed = True

    async def _delete(self, headers: dict[str, str], send: Send) -> None:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            await _respond(send, 405, b"", [(b"allow", b"GET, POST")])
            return
        principal = self._principal(headers, None)
        self._check_legacy_version(headers, self._session(session_id, principal, None), None)
        self._end_session(session_id)
        await _respond(send, 200, b"")


#: What the official SDK clients send as Accept on a POST (compared first, as is).
_CLIENTS_ACCEPT = "application/json, text/event-stream"


def _remember(verdicts: dict[str, Any], key: str, ok: Any) -> None:
    if len(verdicts) >= 256:  # a client sending many values gets no memory, only the check
        verdicts.clear()
    verdicts[key] = ok


def _is_json_type(value: str) -> bool:
    """``application/json`` with any parameters (``; charset=utf-8``), any case."""
    return value.split(";", 1)[0].strip().lower() == "application/json"


_NEITHER, _JSON_OK, _SSE_ONLY = "neither", "json", "sse only"


def _accepted_answers(value: str) -> str:
    """What an Accept header allows of truecall's two answer types: a JSON answer (``_JSON_OK``;
    an SSE stream too, when it lists that), only an SSE stream (``_SSE_ONLY``), or neither
    (``_NEITHER``: 406).  Wildcards count; a media range with ``q=0`` excludes."""
    json_ok = sse_ok = False
    for item in value.split(","):
        media, *params = item.split(";")
        media = media.strip().lower()
        if media not in ("application/json", "text/event-stream", "*/*", "application/*", "text/*"):
            continue
        refused = False
        for param in params:
            name, _, q = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    refused = float(q.strip()) <= 0
                except ValueError:
                    refused = False
        if refused:
            continue
        if media in ("application/json", "*/*", "application/*"):
            json_ok = True
        if media in ("text/event-stream", "*/*", "text/*"):
            sse_ok = True
    return _JSON_OK if json_ok else _SSE_ONLY if sse_ok else _NEITHER


def _header_params(tool: Any) -> list[tuple[str, str]]:
    cached = getattr(tool, "_header_params", None)
    if cached is None:
        props = tool.input_schema.get("properties") or {}
        cached = [(name, spec["x-mcp-header"]) for name, spec in props.items()
                  if isinstance(spec, dict) and isinstance(spec.get("x-mcp-header"), str)]
        tool._header_params = cached
    return cached


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", ())}


async def _respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers or _JSON, BODY_FOLLOWS: True})
    await send({"type": "http.response.body", "body": body})


async def _until_disconnect(work: Awaitable[Any], scope: Scope, receive: Receive) -> Any:
    """Run ``work`` here; if the client disconnects first, cancel it and return ``None``.

    No task per request where the server offers :data:`DISCONNECT_HOOK` in
    ``scope["extensions"]`` (truecall's own protocol, ``transports/guarded.py``): the hook calls
    back when the client goes away, which cancels this (the request's own) task.  Under another
    ASGI server a watcher task waits for ``http.disconnect``, started only if the work does not
    finish at once (a synchronous tool never gives the loop a turn, and then nothing can be
    cancelled anyway).
    """
    me = _current_task()
    assert me is not None
    gone = False

    def leave() -> None:
        nonlocal gone
        gone = True
        me.cancel()

    extensions = scope.get("extensions")
    hook: DisconnectHook | None = extensions.get(DISCONNECT_HOOK) if extensions else None
    if hook is not None and hook.disconnected:
        hook = None  # gone already: the watcher sees http.disconnect at once
    watcher: asyncio.Task[None] | None = None
    later: asyncio.Handle | None = None
    if hook is not None:
        hook.on_disconnect = leave
    else:
        async def watch() -> None:
            await _wait_disconnect(receive)
            leave()

        def start_watching() -> None:
            nonlocal watcher
            watcher = loop.create_task(watch())

        loop = asyncio.get_running_loop()
        later = loop.call_soon(start_watching)  # runs only if the work yields to the loop
    try:
        return await work
    except asyncio.CancelledError:
        if gone:
            me.uncancel()
            return None
        raise
    finally:
        if hook is not None:
            hook.on_disconnect = None
        else:
            assert later is not None
            later.cancel()
            if watcher is not None:
                watcher.cancel()


async def _wait_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
