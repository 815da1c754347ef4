"""The MCP engine: decoded messages in, replies out — one exchange per message.

Transports own the I/O (reading lines or HTTP bodies, writing to stdout or an
SSE stream) and hand each decoded message to :meth:`Engine.serve` together
with the caller's :class:`~truecall.auth.Principal`, the handshake-era
:class:`Session` when there is one, and an :class:`Outbox` for messages that
belong to the request (progress, logs, server-to-client requests).  What comes
back is a :class:`~._exchange.Reply` they may write at once: ``serve`` is the one
place that holds an answer until every audit record behind it is durable.  What a
transport must know *before* serving (answer in place, stream, task handle, a new
session, a cancellation) it asks :meth:`Engine.plan`, as data: transports move bytes
and never read a method name.

Versions are chosen per message: a request whose ``_meta`` names a protocol version
is served statelessly (2026-07-28); ``initialize`` opens a handshake-era session
(2025-11-25, 2025-06-18) whose state table lives in :mod:`._session_state`.  What each
version does differently is one entry of the feature table in :mod:`.versions`,
looked up once per message.

The engine is the dispatcher: it owns the method table, admits each request
(its version, the session's state) and shapes results and errors.  The methods'
bodies live by seam in private modules: the handshake (:mod:`._handshake`), the
sealed ``requestState`` of multi round-trip requests (:mod:`._request_state`),
change notifications (:mod:`._feeds`) and the tasks methods (:mod:`._task_methods`).
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Sequence

from ..audit._log import AuditUnavailable, DuplicateFinalRecord
from ..auth._principals import Principal
from ..server.context import InputRequired
from ..errors import (
    InternalError,
    InvalidParams,
    MethodNotFound,
    MissingCapability,
    NotFound,
    ProtocolError,
    ServiceUnavailable,
    TaskRequired,
    UnsupportedVersion,
)
from ..audit.redaction import redact_text
from ..storage import unavailable
from ..server._server import Server
from ..tasks import Task
from . import jsonrpc
from ._request_context import Peer, RequestContext
from ._exchange import CALLS, INITIALIZE, LISTEN, NOTHING, STREAMING_METHODS, STREAMS, Plan, Reply, asks_progress, \
    cancellation
from ._feeds import Feeds
from ._handshake import HandshakeMethods
from ._params import check_cursor, str_param
from ._request_state import RequestStates
from ._session import NULL_OUTBOX, Outbox, Session
from ._session_state import SessionStateError, accepts_request
from ._task_methods import TaskMethods, has_tasks_extension, tasks_capability_error
from .jsonrpc import Incoming
from ._sealing import Sealer
from ._taskwire import core_task, ext_task
from .versions import (
    FEATURES,
    LATEST,
    LEGACY_METHODS,
    LOG_LEVELS,
    META_CAPS,
    META_CLIENT,
    META_LOG_LEVEL,
    META_SERVER,
    META_VERSION,
    MODERN_METHODS,
    SUPPORTED,
    TASKS_EXTENSION,
    UNNEGOTIATED,
    Features,
)

__all__ = ["Engine", "Session", "Outbox", "RequestContext", "MODERN_METHODS", "LEGACY_METHODS", "NULL_OUTBOX",
           "InvalidMeta", "capability_error", "EngineNotStarted", "Reply", "Plan"]

#: resultType-bearing results that are cacheable carry these hints (``list_ttl``).
_LIST_TTL_MS = 60_000

Handler = Callable[[RequestContext], Awaitable[dict[str, Any]]]

_CACHEABLE = frozenset({"server/discover", "tools/list", "resources/list", "resources/read",
                        "resources/templates/list", "prompts/list"})
_INPUT_CAPABLE = frozenset({"tools/call", "prompts/get", "resources/read"})

_REQUEST = jsonrpc.REQUEST
#: The reply to a message that is not a request (a notification, a client's response): nothing to say.
_ACCEPTED: Reply = (None, 202)

#: A stateless request is admitted under this entry until its own version is known (so that an
#: unsupported or missing version is refused the stateless way, with its HTTP status).
_STATELESS_ADMISSION = FEATURES[LATEST]


class EngineNotStarted(RuntimeError):
    """A request reached an engine whose :meth:`Engine.start` was never called."""


class Engine:
    """Serves MCP requests for one :class:`~truecall.server.Server`, in both eras.

    Constructing one has no side effects; :meth:`start` creates the engine's tables and settles
    what an earlier process left unfinished.  The transports call it when they are built
    (:class:`~truecall.transports.stdio.StdioConnection`, :class:`~truecall.transports.http.HttpTransport`,
    the in-process client), and ``truecall serve`` before anything listens; a request served
    by an engine nobody started is refused with :class:`EngineNotStarted` (loudly, not by
    starting then: recovery belongs to start-up, not to whichever request comes first).
    """

    def __init__(
        self,
        server: Server,
        *,
        sealer: Sealer | None = None,
        client_request_timeout: float = 300.0,
        legacy_default_log_level: str | None = "debug",
    ) -> None:
        self.server = server
        self.sealer = sealer or Sealer.from_env()
        self.client_request_timeout = client_request_timeout
        self.legacy_default_log_level = legacy_default_log_level
        self.server_info = {"name": server.name, "version": server.version}
        if server.title:
            self.server_info["title"] = server.title
        self._modern_meta = {META_SERVER: self.server_info}
        self._started = False
        self._answered_at_once = server.registry.answered_at_once  # (the registry's own set, kept up to date)
        self._states = RequestStates(server.db, self.sealer, self._modern_meta)
        self._handshake = HandshakeMethods(self)
        self._feeds = Feeds(server)
        self._tasks = TaskMethods(server, client_request_timeout)
        handshake, tasks = self._handshake, self._tasks
        self._handlers: dict[str, Handler] = {
            "ping": handshake.ping,
            "server/discover": self._discover,
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
            "resources/list": self._resources_list,
            "resources/templates/list": self._templates_list,
            "resources/read": self._resources_read,
            "resources/subscribe": handshake.subscribe,
            "resources/unsubscribe": handshake.unsubscribe,
            "prompts/list": self._prompts_list,
            "prompts/get": self._prompts_get,
            "completion/complete": self._complete,
            "logging/setLevel": handshake.set_level,
            "subscriptions/listen": self._feeds.listen,
            "tasks/get": tasks.get,
            "tasks/update": tasks.update,
            "tasks/cancel": tasks.cancel,
            "tasks/result": tasks.result,
            "tasks/list": tasks.list,
        }
        self.modern_methods = MODERN_METHODS

    # -- life cycle -------------------------------------------------------------------

    def start(self, *, recover: bool = True) -> Engine:
        """Make the engine ready to serve (once; later calls change nothing) and return it.

        Starts the server first (:meth:`~truecall.Server.start`: its database opened, its stores'
        migrations applied, ended processes' audit journals loaded), then creates the engine's
        tables (used ``requestState`` ids).  With ``recover``, whatever
        another runner left unfinished is settled now: alone on its database (SQLite), it is
        orphaned; replicas sharing a server database rely on leases instead
        (``TaskRuntime.recover_at_start``).  An engine beside another one on the same
        :class:`~truecall.Server` (the in-process client, a bench) passes ``recover=False``:
        the other one's tasks are not orphans.
        """
        if self._started:
            return self
        self.server.start()  # its stores first (once: every engine of a server calls it)
        self._states.migrate()
        if recover:
            self.server.task_runtime.recover_at_start()
        self._started = True
        return self

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Serve on ``loop``: the audit records made on it are committed together, once per loop
        turn, and :meth:`serve` waits for that commit (a transport calls this when its loop
        runs).  Without it, every record is committed as it is made."""
        self.server.events.defer(loop)

    def flush(self) -> None:
        """Commit every audit record still pending (a transport calls this when it stops)."""
        self.server.events.flush()

    # -- capabilities -------------------------------------------------------------

    def capabilities(self, features: Features) -> dict[str, Any]:
        caps: dict[str, Any] = {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "completions": {},
            "logging": {},
        }
        if features.tasks == "ext":
            caps["extensions"] = {TASKS_EXTENSION: {}}
        elif features.tasks == "core":
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        return caps

    # -- what a transport asks before serving ---------------------------------------

    def plan(self, message: Incoming, *, stateless: bool = False) -> Plan:
        """How a transport should carry ``message`` (see :class:`~._exchange.Plan`): answered in
        place or watched for a disconnect, streamed, a possible task handle, a new session, a
        cancellation.  ``stateless``: the transport serves it the 2026-07-28 way (an HTTP POST
        routed there), where only progress and logs can precede an answer.

        The transport asks here so that it never reads a method name or the tool registry: what
        a message means is the engine's to say.  (A request's plan is a shared instance: asking
        costs no allocation.)"""
        method = message.method
        if message.kind != _REQUEST:
            return cancellation(message)
        if method == "tools/call":  # (the hot path: a set look-up, a few tests, a shared plan)
            params = message.params  # (a dict or None: jsonrpc.decode)
            if isinstance(params, dict):
                name = params.get("name")  # (any JSON: a list is unhashable)
                index = 4 if type(name) is str and name in self._answered_at_once else 0
                task = params.get("task")
                if task is not None and isinstance(task, dict):
                    index += 2
            else:
                index = 0
            if not stateless or asks_progress(params):
                index += 1
            return CALLS[index]
        if method in STREAMING_METHODS:
            return STREAMS if not stateless or asks_progress(message.params) else NOTHING
        if method == "initialize":
            return INITIALIZE
        if method == "subscriptions/listen" and stateless:
            return LISTEN
        return NOTHING

    def header_params(self, message: Incoming) -> Sequence[tuple[str, str]]:
        """The arguments of a ``tools/call`` that 2026-07-28 repeats in ``Mcp-Param-*`` headers, as
        (argument, header suffix) pairs: its tool's ``x-mcp-header`` properties (none for another
        method or an unknown tool).  Asked here, so that HTTP needs neither the registry nor a tool."""
        if message.method != "tools/call":
            return ()
        return self.server.registry.header_params(message.params)

    # -- the exchange: one message in, one reply out, released once ---------------------

    async def serve(
        self,
        message: Incoming,
        principal: Principal,
        *,
        session: Session | None = None,
        outbox: Outbox = NULL_OUTBOX,
        modern_hint: bool = False,
    ) -> Reply:
        """Serve one message and return the :class:`~._exchange.Reply` a transport writes as it is.

        For a request: its response and HTTP status (200, or what its error class calls for),
        returned only once every audit record made while serving it is durable — *nothing
        leaves before its record is durable*, and this is the one place that waits for it.  If a
        record could not be committed, the response is replaced by an error (the client never
        learns of an outcome the audit trail may lack).  A notification or a client's response
        (:meth:`notify`) gives ``(None, 202)``: it is never answered and records nothing.

        ``modern_hint`` is set by HTTP when the ``MCP-Protocol-Version`` header names a
        stateless version, so a request missing its ``_meta`` is refused with -32602
        instead of being treated as a handshake-era request.
        """
        if message.kind != jsonrpc.REQUEST:
            self.notify(message, session)
            return _ACCEPTED
        if not self._started:
            raise EngineNotStarted("Engine.start() was not called (the transports and `truecall serve` call it)")
        # The request's context is its audit ledger: the wait below covers every record made from here
        # on, and it holds the request's one final record (audit.FINAL_KINDS) — made by whoever settled
        # the outcome (the tool pipeline, a resource's or prompt's read, a task method), else by _failed.
        events = self.server.events
        ctx = RequestContext(message, principal, session, outbox)
        events.begin(ctx)
        try:
            response, status = jsonrpc.result_message(message.id, await self._serve(ctx, modern_hint)), 200
        except _HandlerFailed as failed:
            response, status = self._failed(ctx, failed.error, failed.kind)
        except ProtocolError as exc:
            response, status = self._failed(ctx, exc, "rpc.error")
        except DuplicateFinalRecord:
            raise
        except Exception:
            # Outside any handler (a session's state, housekeeping), e.g. the database failed:
            # a JSON-RPC error like any other, never an exception out of the engine (a bare 500).
            response, status = self._failed(ctx, InternalError(), "rpc.error")
        finally:
            ctx.serving = False  # what is recorded later (a task's work) is not this request's
        try:
            await events.durable()
        except Exception as exc:
            return self._unrecorded(response, exc), status
        return response, status

    async def handle(
        self,
        message: Incoming,
        principal: Principal,
        *,
        session: Session | None = None,
        outbox: Outbox = NULL_OUTBOX,
        modern_hint: bool = False,
    ) -> dict[str, Any] | None:
        """The response of :meth:`serve` alone (released the same way), for callers that need no
        HTTP status: tests, scripts driving an engine by hand."""
        return (await self.serve(message, principal, session=session, outbox=outbox, modern_hint=modern_hint))[0]

    def notify(self, message: Incoming, session: Session | None) -> None:
        """A message from the client that is not a request, and is never answered: a response
        resolves the session's request it answers; ``notifications/initialized`` completes a
        session's handshake; the other notifications change nothing here (a transport carries out
        ``notifications/cancelled`` itself, from :attr:`Plan.cancels`: it owns the requests in
        flight).  Synchronous: a transport reading lines calls it in place."""
        if message.kind == jsonrpc.RESPONSE:
            if session is not None:
                session.resolve(message)
            return
        HandshakeMethods.notify(message, session)

    async def refused(self) -> None:
        """A request a transport refuses before the engine sees it (no credential, a bad header, a
        body too large) leaves, like any answer, after the records it made (``auth.denied``…) are
        durable: a transport awaits this before writing its refusal.  (A refusal says nothing
        happened, so a record that could not be committed does not change it.)"""
        try:
            await self.server.events.durable()
        except Exception:
            pass

    def _unrecorded(self, response: dict[str, Any], exc: Exception) -> dict[str, Any]:
        """The answer in place of ``response`` when a record behind it could not be committed."""
        trail = self.server.events.unwritable
        if trail:
            return jsonrpc.error_message(response["id"], ServiceUnavailable.because(
                f"the audit trail cannot be written ({trail})"))
        # A database that did not take the record (down, stalled, locked) is said as the outage it is:
        # the caller may retry, and knows the request may or may not have taken effect.
        why = unavailable(exc) or ("the database did not take this request's audit record"
                                   if isinstance(exc, AuditUnavailable) else None)
        return jsonrpc.error_message(response["id"], ServiceUnavailable.because(why) if why else InternalError())

    def _failed(self, ctx: RequestContext, exc: ProtocolError, kind: str) -> tuple[dict[str, Any], int]:
        """The error answer to a request, and its HTTP status; its final record unless one was made."""
        if ctx.final is None:  # nothing below settled it: the error is the request's outcome
            self._settle_error(ctx, exc, kind)
        status = exc.http_status if (ctx.features.stateless or exc.http_status in (401, 403)) else 200
        return jsonrpc.error_message(ctx.id, exc), status

    def _settle_error(self, ctx: RequestContext, exc: ProtocolError, kind: str) -> None:
        """The final record of a request answered with an error nobody recorded: ``kind`` is
        ``rpc.error``, or ``protocol.internal_error`` / ``protocol.unavailable`` for a handler that failed."""
        principal = ctx.principal
        client = ctx.client_info.get("name") if ctx.client_info else None
        self.server.events.record(kind, method=str(ctx.method)[:100], tenant=principal.tenant,
                                  subject=principal.subject, outcome=str(exc.code),
                                  client=redact_text(client)[:128] if isinstance(client, str) else None)

    async def _serve(self, ctx: RequestContext, modern_hint: bool) -> dict[str, Any]:
        method = ctx.method
        version = ctx.meta.get(META_VERSION)
        if version is not None or modern_hint or (method == "server/discover"):
            self._admit_stateless(ctx, version)
        else:
            self._admit_handshake(ctx)
            if method == "initialize":
                return self._handshake.initialize(ctx)
        features = ctx.features
        if method not in features.methods:
            raise MethodNotFound(f"Method not found: {method[:100]}")
        handler = self._handlers[method]
        try:
            result = await handler(ctx)
        except InputRequired as need:
            if not features.request_state or method not in _INPUT_CAPABLE:
                raise InternalError() from None
            result = self._states.input_required(ctx, need)
        except (ProtocolError, asyncio.CancelledError, DuplicateFinalRecord):
            raise
        except Exception as exc:  # never let internals reach the client
            why = unavailable(exc)  # a database outage is said as such (retry later); a bug is not
            raise _HandlerFailed("protocol.unavailable" if why else "protocol.internal_error",
                                 ServiceUnavailable.because(why) if why else InternalError()) from None
        if features.result_type:
            result.setdefault("resultType", "complete")
            meta = result.get("_meta")
            result["_meta"] = {**meta, **self._modern_meta} if meta else self._modern_meta
            if features.list_ttl and method in _CACHEABLE and result["resultType"] == "complete":
                result.setdefault("ttlMs", 0 if method == "resources/read" else _LIST_TTL_MS)
                result.setdefault("cacheScope", "public" if method == "server/discover" else "private")
        return result

    def _admit_stateless(self, ctx: RequestContext, version: Any) -> None:
        ctx.features = _STATELESS_ADMISSION
        meta = ctx.meta
        if version is None or not isinstance(version, str):
            raise InvalidMeta(f"_meta[{META_VERSION!r}] is required")
        features = FEATURES.get(version)
        if features is None or not features.stateless:
            raise UnsupportedVersion(data={"supported": list(SUPPORTED), "requested": version[:64]})
        caps = meta.get(META_CAPS)
        if not isinstance(caps, dict):
            raise InvalidMeta(f"_meta[{META_CAPS!r}] is required")
        ctx.features = features
        ctx.version = version
        ctx.caps = caps
        info = meta.get(META_CLIENT)
        ctx.client_info = info if isinstance(info, dict) else {}
        level = meta.get(META_LOG_LEVEL)
        if level is not None:
            if level not in LOG_LEVELS:
                raise InvalidMeta("unknown log level")
            ctx.log_level = level

    def _admit_handshake(self, ctx: RequestContext) -> None:
        session = ctx.session
        if session is None:
            raise InvalidParams(f"_meta[{META_VERSION!r}] is required (or initialize a session first)")
        if not accepts_request(session.state, ctx.method):
            raise SessionStateError(session.state, ctx.method[:100])
        version = session.version
        ctx.features = UNNEGOTIATED if version is None else FEATURES.get(version, UNNEGOTIATED)  # (features_of, inline)
        ctx.version = version
        ctx.caps = session.client_capabilities
        ctx.client_info = session.client_info
        ctx.log_level = session.log_level

    async def session_feed(self, session: Session) -> None:
        """Forward changes to a handshake-era session's stream until cancelled."""
        await self._feeds.session_feed(session)

    # -- served the same way by every version (what differs reads ctx.features) ----------

    async def _discover(self, ctx: RequestContext) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(SUPPORTED),
            "capabilities": self.capabilities(ctx.features),
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    async def _tools_list(self, ctx: RequestContext) -> dict[str, Any]:
        check_cursor(ctx.params)
        tools = self.server.visible_tools(ctx.principal)
        if not ctx.features.tool_execution:
            return {"tools": [_without_execution(t.definition) for t in tools]}
        return {"tools": [t.definition for t in tools]}

    async def _tools_call(self, ctx: RequestContext) -> dict[str, Any]:
        params = ctx.params
        features = ctx.features
        name = params.get("name")
        if not isinstance(name, str):
            raise InvalidParams("name must be a string")
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise InvalidParams("arguments must be an object")
        if features.request_state:
            state = self._states.open(ctx, "tools/call", name, arguments or {})
            if state is not None:  # a retry's state is used up (a database write) before the call goes on
                await self._states.use(state)
        peer = Peer(ctx, self.client_request_timeout)
        client = ctx.client_info.get("name") if ctx.client_info else None
        task_mode, ttl_ms = None, None
        if features.tasks == "ext":
            if has_tasks_extension(ctx.caps):
                task_mode = "ext"
        elif features.tasks == "core" and isinstance(params.get("task"), dict):
            task_mode = "core"
            ttl = params["task"].get("ttl")
            ttl_ms = min(int(ttl), 7 * 24 * 3600 * 1000) if isinstance(ttl, int) and ttl > 0 else None
        try:
            result = await self.server.acall_tool(ctx.principal, name, arguments, peer=peer, request_id=ctx.id,
                                                  meta=ctx.meta, client=client if isinstance(client, str) else None,
                                                  task_mode=task_mode, task_ttl_ms=ttl_ms, from_json=True)
        except TaskRequired:
            if features.tasks == "ext":
                raise tasks_capability_error() from None
            raise MethodNotFound("Task augmentation required for this tool") from None
        if task_mode == "core" and not isinstance(result, Task):
            # Asked for a task, answered at once: still a CreateTaskResult, of a task already finished.
            result = await self._tasks.finished(ctx, name, result.to_dict(), ttl_ms)
        if isinstance(result, Task):
            return ext_task(result) | {"resultType": "task"} if task_mode == "ext" else {"task": core_task(result)}
        return result.to_dict()

    async def _resources_list(self, ctx: RequestContext) -> dict[str, Any]:
        check_cursor(ctx.params)
        return {"resources": [r.definition for r in self.server.visible_resources(ctx.principal)]}

    async def _templates_list(self, ctx: RequestContext) -> dict[str, Any]:
        check_cursor(ctx.params)
        return {"resourceTemplates": [t.definition for t in self.server.visible_templates(ctx.principal)]}

    async def _resources_read(self, ctx: RequestContext) -> dict[str, Any]:
        uri = str_param(ctx.params, "uri")
        if ctx.features.request_state:
            state = self._states.open(ctx, "resources/read", uri, {})
            if state is not None:
                await self._states.use(state)
        try:
            contents = await self.server.read_resource(ctx.principal, uri,
                                                       peer=Peer(ctx, self.client_request_timeout))
        except NotFound as exc:
            code = ctx.features.resource_not_found
            if code is not None:  # the handshake era's resource-not-found code
                exc.code = code
            raise
        return {"contents": contents}

    async def _prompts_list(self, ctx: RequestContext) -> dict[str, Any]:
        check_cursor(ctx.params)
        return {"prompts": [p.definition for p in self.server.visible_prompts(ctx.principal)]}

    async def _prompts_get(self, ctx: RequestContext) -> dict[str, Any]:
        name = str_param(ctx.params, "name")
        if ctx.features.request_state:
            state = self._states.open(ctx, "prompts/get", name, ctx.params.get("arguments") or {})
            if state is not None:
                await self._states.use(state)
        return await self.server.get_prompt(ctx.principal, name, ctx.params.get("arguments"),
                                            peer=Peer(ctx, self.client_request_timeout))

    async def _complete(self, ctx: RequestContext) -> dict[str, Any]:
        ref, argument = ctx.params.get("ref"), ctx.params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise InvalidParams("ref and argument are required")
        context = ctx.params.get("context")
        found = self.server.complete(ctx.principal, ref, argument, context if isinstance(context, dict) else None)
        values = found if isinstance(found, list) else await found  # a @server.completion() handler's
        return {"completion": {"values": values, "total": len(values), "hasMore": False}}


def _without_execution(definition: dict[str, Any]) -> dict[str, Any]:
    if "execution" not in definition:
        return definition
    return {k: v for k, v in definition.items() if k != "execution"}


class _HandlerFailed(Exception):
    """A method's handler failed (a bug, or its database down): ``error`` is the answer, ``kind``
    the request's final record (``protocol.internal_error`` / ``protocol.unavailable``)."""

    def __init__(self, kind: str, error: ProtocolError) -> None:
        self.kind, self.error = kind, error


class InvalidMeta(InvalidParams):
    """A request's ``_meta`` lacks what the stateless protocol requires (HTTP 400)."""

    http_status = 400


def capability_error(name: str) -> MissingCapability:
    return MissingCapability(data={"requiredCapabilities": {name: {}}})
