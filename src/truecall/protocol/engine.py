"""The MCP engine: decoded messages in, result/error messages out.

Transports own the I/O (reading lines or HTTP bodies, writing to stdout or an
SSE stream) and hand each decoded message to :meth:`Engine.handle` together
with the caller's :class:`~truecall.auth.Principal`, the handshake-era
:class:`Session` when there is one, and an :class:`Outbox` for messages that
belong to the request (progress, logs, server-to-client requests).

Eras are chosen per message: a request whose ``_meta`` names a protocol version
is served statelessly (2026-07-28); ``initialize`` opens a handshake-era session
(2025-11-25, 2025-06-18) whose state table lives in :mod:`._state`.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from typing import Any, Awaitable, Callable, Protocol

from ..auth import Principal
from ..context import ElicitationUnavailable, InputRequired
from ..errors import (
    AccessDenied,
    TaskRequired,
    UnknownTool,
    InternalError,
    InvalidParams,
    MethodNotFound,
    MissingCapability,
    NotFound,
    ProtocolError,
    UnsupportedVersion,
)
from ..redact import redact_text
from ..server import Server
from ..storage import unavailable
from . import jsonrpc
from ._state import SessionEvent, SessionState, SessionStateError, accepts_request, next_session_state
from .jsonrpc import Incoming
from .sealing import InvalidRequestState, Sealer, digest
from .versions import (
    LATEST_LEGACY,
    LEGACY,
    LOG_LEVELS,
    META_CAPS,
    META_CLIENT,
    META_LOG_LEVEL,
    META_SERVER,
    META_SUBSCRIPTION,
    META_VERSION,
    MODERN,
    SUPPORTED,
    TASKS_EXTENSION,
)
from ..tasks import Task, TaskStatus
from .taskwire import core_task, ext_detailed, ext_task

__all__ = ["Engine", "Session", "Outbox", "RequestContext", "MODERN_METHODS", "LEGACY_METHODS"]

_RELATED_TASK = "io.modelcontextprotocol/related-task"

_USED_STATE_MIGRATIONS = [
    ("request-state-1", "CREATE TABLE used_request_states (jti TEXT PRIMARY KEY, expires_at REAL NOT NULL)"),
]

#: resultType-bearing results that are cacheable in 2026-07-28 carry these hints.
_LIST_TTL_MS = 60_000


class Outbox(Protocol):
    """Where messages related to one request go (stdout, or that request's SSE stream)."""

    async def send(self, message: dict[str, Any]) -> None: ...


class _NullOutbox:
    async def send(self, message: dict[str, Any]) -> None:
        return None


NULL_OUTBOX = _NullOutbox()


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
        self._feed: asyncio.Queue[Any] | None = None
        self.announced_tasks: set[str] = set()

    def changed(self) -> None:
        if self.persist is not None:
            self.persist(self)

    def transition(self, event: SessionEvent) -> None:
        self.state = next_session_state(self.state, event)
        self.changed()

    async def request(self, outbox: Outbox, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send a server-to-client request on ``outbox`` and wait for its response."""
        if self.hung_up:
            raise _ClientError({"message": "the client closed its input"})
        request_id = f"s-{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        try:
            await outbox.send(jsonrpc.request(request_id, method, params))
            async with asyncio.timeout(timeout):
                return await future
        finally:
            self.pending.pop(request_id, None)

    def resolve(self, message: Incoming) -> None:
        future = self.pending.get(message.id)
        if future is None or future.done():
            return  # a late or unknown response is dropped, never answered
        if "error" in message.raw:
            err = message.raw.get("error")
            future.set_exception(_ClientError(err if isinstance(err, dict) else {}))
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
                    if feed.full():
                        feed.get_nowait()
                    feed.put_nowait(("task", task_id))

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
                future.set_exception(_ClientError({"message": "the client closed its input"}))

    def close(self) -> None:
        self.state = SessionState.CLOSED
        for future in self.pending.values():
            if not future.done():
                future.cancel()
        self.pending.clear()


class _ClientError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message", "client error"))[:200])
        self.error = error


class RequestContext:
    """What the engine knows about one request while serving it."""

    __slots__ = ("id", "method", "params", "era", "version", "caps", "client_info", "log_level", "progress_token",
                 "principal", "session", "outbox", "meta", "input_responses", "prior_responses", "consumed", "asked")

    def __init__(self, message: Incoming, principal: Principal, session: Session | None, outbox: Outbox) -> None:
        self.id = message.id
        self.method = message.method
        self.params = message.params or {}
        self.principal = principal
        self.session = session
        self.outbox = outbox
        meta = self.params.get("_meta")
        self.meta: dict[str, Any] = meta if isinstance(meta, dict) else {}
        self.progress_token = self.meta.get("progressToken")
        self.era = "legacy"
        self.version: str | None = None
        self.caps: dict[str, Any] = {}
        self.client_info: dict[str, Any] = {}
        self.log_level: str | None = None
        self.input_responses: dict[str, Any] = {}
        self.prior_responses: dict[str, Any] = {}
        #: Answers the tool actually used in this round; carried forward in the next state.
        self.consumed: dict[str, Any] = {}
        #: key → digest of the question this server asked under it (from an authentic requestState).
        self.asked: dict[str, str] = {}


class _Peer:
    """The engine's side of :class:`~truecall.context.Peer` for one request."""

    __slots__ = ("ctx", "engine", "client_capabilities", "version")

    def __init__(self, engine: "Engine", ctx: RequestContext) -> None:
        self.engine = engine
        self.ctx = ctx
        self.client_capabilities = ctx.caps
        self.version = ctx.version

    async def request(self, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
        ctx = self.ctx
        if ctx.era == "modern":
            request = {"method": method}
            if params:
                request["params"] = params
            # An answer counts only for a question this server asked, in these words, in the round
            # whose sealed state came back: volunteered answers (no state, a key never asked, a
            # question that changed since) are not consent, and the question is asked (again).
            answer = None
            if ctx.asked.get(key) == digest(request):
                answer = ctx.prior_responses.get(key)  # sealed: a retry cannot change an earlier answer
                if answer is None:
                    answer = ctx.input_responses.get(key)
            if answer is not None and not isinstance(answer, dict):
                raise InvalidParams(f"inputResponses[{key!r}] must be an object")
            if answer is not None:
                ctx.consumed[key] = answer
                return answer
            raise InputRequired({key: request})
        if ctx.session is None or ctx.outbox is NULL_OUTBOX:
            # No stream to this client (a JSON-only answer): nobody can be asked, say so now.
            raise ElicitationUnavailable(capability=method)
        try:
            return await ctx.session.request(ctx.outbox, method, params, self.engine.client_request_timeout)
        except _ClientError as exc:
            raise ElicitationUnavailable(capability=method) from exc

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        token = self.ctx.progress_token
        if token is None or isinstance(token, bool):
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.ctx.outbox.send(jsonrpc.notification("notifications/progress", params))

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        threshold = self.ctx.log_level
        if threshold is None or level not in LOG_LEVELS:
            return
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger:
            params["logger"] = logger
        await self.ctx.outbox.send(jsonrpc.notification("notifications/message", params))


Handler = Callable[[RequestContext], Awaitable[dict[str, Any]]]

MODERN_METHODS = frozenset({
    "server/discover", "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list",
    "prompts/list", "prompts/get", "completion/complete", "subscriptions/listen",
    "tasks/get", "tasks/update", "tasks/cancel",
})
LEGACY_METHODS = frozenset({
    "initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list",
    "resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete",
    "logging/setLevel", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel",
})
_CACHEABLE = frozenset({"server/discover", "tools/list", "resources/list", "resources/read",
                        "resources/templates/list", "prompts/list"})
_INPUT_CAPABLE = frozenset({"tools/call", "prompts/get", "resources/read"})


class Engine:
    """Serves MCP requests for one :class:`~truecall.server.Server`, in both eras."""

    def __init__(
        self,
        server: Server,
        *,
        sealer: Sealer | None = None,
        client_request_timeout: float = 300.0,
        legacy_default_log_level: str | None = "debug",
        recover_on_start: bool = True,
    ) -> None:
        self.server = server
        self.sealer = sealer or Sealer.from_env()
        self.client_request_timeout = client_request_timeout
        self.legacy_default_log_level = legacy_default_log_level
        self.server_info = {"name": server.name, "version": server.version}
        if server.title:
            self.server_info["title"] = server.title
        self._modern_meta = {META_SERVER: self.server_info}
        server.db.migrate(_USED_STATE_MIGRATIONS)
        self._handlers: dict[str, Handler] = {
            "ping": self._ping,
            "server/discover": self._discover,
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
            "resources/list": self._resources_list,
            "resources/templates/list": self._templates_list,
            "resources/read": self._resources_read,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "prompts/list": self._prompts_list,
            "prompts/get": self._prompts_get,
            "completion/complete": self._complete,
            "logging/setLevel": self._set_level,
            "subscriptions/listen": self._listen,
            "tasks/get": self._tasks_get,
            "tasks/update": self._tasks_update,
            "tasks/cancel": self._tasks_cancel,
            "tasks/result": self._tasks_result,
            "tasks/list": self._tasks_list,
        }
        self.modern_methods = MODERN_METHODS
        #: How often a listen stream re-reads the tasks it watches (changes made by other replicas).
        self.task_poll_s = 1.0
        # Alone on its database (SQLite), whatever another runner left unfinished is orphaned;
        # replicas sharing a server database rely on leases instead (TaskRuntime.recover_at_start).
        if recover_on_start:
            server.task_runtime.recover_at_start()

    # -- capabilities -------------------------------------------------------------

    def capabilities(self, era: str, version: str | None = None) -> dict[str, Any]:
        caps: dict[str, Any] = {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "completions": {},
            "logging": {},
        }
        if era == "modern":
            caps["extensions"] = {TASKS_EXTENSION: {}}
        elif version == "2025-11-25":
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        return caps

    # -- entry point ----------------------------------------------------------------

    async def handle(
        self,
        message: Incoming,
        principal: Principal,
        *,
        session: Session | None = None,
        outbox: Outbox = NULL_OUTBOX,
        modern_hint: bool = False,
    ) -> dict[str, Any] | None:
        """The response message for a request; ``None`` for notifications and responses.

        ``modern_hint`` is set by HTTP when the ``MCP-Protocol-Version`` header names a
        stateless version, so a request missing its ``_meta`` is refused with -32602
        instead of being treated as a handshake-era request.
        """
        if message.kind == jsonrpc.RESPONSE:
            if session is not None:
                session.resolve(message)
            return None
        if message.kind == jsonrpc.NOTIFICATION:
            self._notification(message, session)
            return None
        return (await self.handle_with_status(message, principal, session=session, outbox=outbox,
                                              modern_hint=modern_hint))[0]

    async def handle_with_status(
        self,
        message: Incoming,
        principal: Principal,
        *,
        session: Session | None = None,
        outbox: Outbox = NULL_OUTBOX,
        modern_hint: bool = False,
    ) -> tuple[dict[str, Any] | None, int]:
        """Like :meth:`handle`, plus the HTTP status the error class calls for (200 otherwise)."""
        if message.kind != jsonrpc.REQUEST:
            await self.handle(message, principal, session=session, outbox=outbox)
            return None, 202
        self.server.events.begin()  # the transport's durable() covers every record made from here on
        ctx = RequestContext(message, principal, session, outbox)
        try:
            try:
                result = await self._serve(ctx, modern_hint)
            except Exception as exc:
                if isinstance(exc, ProtocolError):
                    raise
                # Outside any handler (a session's state, housekeeping), e.g. the database failed:
                # a JSON-RPC error like any other, never an exception out of the engine (a bare 500).
                raise InternalError() from None
        except ProtocolError as exc:
            status = exc.http_status if (ctx.era == "modern" or exc.http_status in (401, 403)) else 200
            if not isinstance(exc, _RECORDED_BY_SERVER):
                client = ctx.client_info.get("name") if ctx.client_info else None
                self.server.events.record("rpc.error", method=str(message.method)[:100], tenant=principal.tenant,
                                          subject=principal.subject, outcome=str(exc.code),
                                          client=redact_text(client)[:128] if isinstance(client, str) else None)
            return jsonrpc.error_message(message.id, exc), status
        return jsonrpc.result_message(message.id, result), 200

    async def _serve(self, ctx: RequestContext, modern_hint: bool) -> dict[str, Any]:
        method = ctx.method
        version = ctx.meta.get(META_VERSION)
        if version is not None or modern_hint or (method == "server/discover"):
            self._admit_modern(ctx, version)
            if method not in MODERN_METHODS:
                raise MethodNotFound(f"Method not found: {method[:100]}")
        else:
            self._admit_legacy(ctx)
            if method == "initialize":
                return self._initialize(ctx)
            if method not in LEGACY_METHODS:
                raise MethodNotFound(f"Method not found: {method[:100]}")
        handler = self._handlers[method]
        try:
            result = await handler(ctx)
        except InputRequired as need:
            if ctx.era != "modern" or method not in _INPUT_CAPABLE:
                raise InternalError() from None
            result = self._input_required(ctx, need)
        except (ProtocolError, asyncio.CancelledError):
            raise
        except Exception:  # never let internals reach the client
            self.server.events.record("protocol.internal_error", method=method, tenant=ctx.principal.tenant,
                                      subject=ctx.principal.subject, outcome="-32603")
            raise InternalError() from None
        if ctx.era == "modern":
            result.setdefault("resultType", "complete")
            meta = result.get("_meta")
            result["_meta"] = {**meta, **self._modern_meta} if meta else self._modern_meta
            if method in _CACHEABLE and result["resultType"] == "complete":
                result.setdefault("ttlMs", 0 if method == "resources/read" else _LIST_TTL_MS)
                result.setdefault("cacheScope", "public" if method == "server/discover" else "private")
        return result

    def _admit_modern(self, ctx: RequestContext, version: Any) -> None:
        ctx.era = "modern"
        meta = ctx.meta
        if version is None or not isinstance(version, str):
            raise InvalidMeta(f"_meta[{META_VERSION!r}] is required")
        if version not in MODERN:
            raise UnsupportedVersion(data={"supported": list(SUPPORTED), "requested": version[:64]})
        caps = meta.get(META_CAPS)
        if not isinstance(caps, dict):
            raise InvalidMeta(f"_meta[{META_CAPS!r}] is required")
        ctx.version = version
        ctx.caps = caps
        info = meta.get(META_CLIENT)
        ctx.client_info = info if isinstance(info, dict) else {}
        level = meta.get(META_LOG_LEVEL)
        if level is not None:
            if level not in LOG_LEVELS:
                raise InvalidMeta("unknown log level")
            ctx.log_level = level

    def _admit_legacy(self, ctx: RequestContext) -> None:
        session = ctx.session
        if session is None:
            raise InvalidParams(f"_meta[{META_VERSION!r}] is required (or initialize a session first)")
        if not accepts_request(session.state, ctx.method):  # type: ignore[arg-type]
            raise SessionStateError(session.state, str(ctx.method)[:100])
        session.last_seen = time.monotonic()
        ctx.version = session.version
        ctx.caps = session.client_capabilities
        ctx.client_info = session.client_info
        ctx.log_level = session.log_level

    def _notification(self, message: Incoming, session: Session | None) -> None:
        if message.method == "notifications/initialized" and session is not None:
            try:
                session.transition(SessionEvent.INITIALIZED)
            except SessionStateError:
                pass  # notifications are never answered; a stray one changes nothing

    # -- handshake era ----------------------------------------------------------------

    def _initialize(self, ctx: RequestContext) -> dict[str, Any]:
        session = ctx.session
        assert session is not None
        params = ctx.params
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise InvalidParams("protocolVersion is required")
        caps = params.get("capabilities", {})
        if not isinstance(caps, dict):
            raise InvalidParams("capabilities must be an object")
        info = params.get("clientInfo", {})
        session.transition(SessionEvent.INITIALIZE)
        session.version = requested if requested in LEGACY else LATEST_LEGACY
        session.client_capabilities = caps
        session.client_info = info if isinstance(info, dict) else {}
        session.log_level = self.legacy_default_log_level
        session.changed()
        result: dict[str, Any] = {
            "protocolVersion": session.version,
            "capabilities": self.capabilities("legacy", session.version),
            "serverInfo": self.server_info,
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    async def _ping(self, ctx: RequestContext) -> dict[str, Any]:
        return {}

    async def _set_level(self, ctx: RequestContext) -> dict[str, Any]:
        level = ctx.params.get("level")
        if level not in LOG_LEVELS:
            raise InvalidParams("unknown log level")
        assert ctx.session is not None
        ctx.session.log_level = level
        ctx.session.changed()
        return {}

    async def _subscribe(self, ctx: RequestContext) -> dict[str, Any]:
        uri = _str_param(ctx.params, "uri")
        if self.server.registry.find_resource(uri) is None:
            raise NotFound("Resource not found", {"uri": _shown(uri)})
        assert ctx.session is not None
        if len(ctx.session.subscriptions) >= 1000:
            raise InvalidParams("too many subscriptions")
        ctx.session.subscriptions.add(uri)
        ctx.session.changed()
        return {}

    async def _unsubscribe(self, ctx: RequestContext) -> dict[str, Any]:
        uri = _str_param(ctx.params, "uri")
        assert ctx.session is not None
        ctx.session.subscriptions.discard(uri)
        ctx.session.changed()
        return {}

    # -- both eras ------------------------------------------------------------------------

    async def _discover(self, ctx: RequestContext) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(SUPPORTED),
            "capabilities": self.capabilities("modern"),
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    async def _tools_list(self, ctx: RequestContext) -> dict[str, Any]:
        _check_cursor(ctx.params)
        tools = self.server.visible_tools(ctx.principal)
        if ctx.era == "modern" or ctx.version != "2025-11-25":
            return {"tools": [_without_execution(t.definition) for t in tools]}
        return {"tools": [t.definition for t in tools]}

    async def _tools_call(self, ctx: RequestContext) -> dict[str, Any]:
        params = ctx.params
        name = params.get("name")
        if not isinstance(name, str):
            raise InvalidParams("name must be a string")
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise InvalidParams("arguments must be an object")
        if ctx.era == "modern":
            self._open_state(ctx, "tools/call", name, arguments or {})
        peer = _Peer(self, ctx)
        client = ctx.client_info.get("name") if ctx.client_info else None
        task_mode, ttl_ms = None, None
        if ctx.era == "modern":
            if _has_tasks_extension(ctx.caps):
                task_mode = "ext"
        elif isinstance(params.get("task"), dict) and ctx.version == "2025-11-25":
            task_mode = "core"
            ttl = params["task"].get("ttl")
            ttl_ms = min(int(ttl), 7 * 24 * 3600 * 1000) if isinstance(ttl, int) and ttl > 0 else None
            tool = self.server.registry.tools.get(name)
            if tool is not None and tool.task_support == "forbidden" and tool.scopes <= ctx.principal.scopes:
                # 2025-11-25: a client MUST NOT call such a tool as a task; the server SHOULD say -32601
                # (run as a plain call, the answer would not be the CreateTaskResult that was asked for).
                raise MethodNotFound("This tool does not run as a task (execution.taskSupport is forbidden)")
        try:
            result = await self.server.acall_tool(ctx.principal, name, arguments, peer=peer, request_id=ctx.id,
                                                  meta=ctx.meta, client=client if isinstance(client, str) else None,
                                                  task_mode=task_mode, task_ttl_ms=ttl_ms, from_json=True)
        except TaskRequired:
            if ctx.era == "modern":
                raise _tasks_capability_error() from None
            raise MethodNotFound("Task augmentation required for this tool") from None
        if task_mode == "core" and not isinstance(result, Task):
            # Asked for a task, answered at once (invalid arguments, a rate limit, a tool that never
            # accepted its work): still a CreateTaskResult, of a task already finished with that
            # result — tasks/result returns exactly what the plain call would have.
            result = self._finished_task(ctx, name, result.to_dict(), ttl_ms)
        if isinstance(result, Task):
            return ext_task(result) | {"resultType": "task"} if task_mode == "ext" else {"task": core_task(result)}
        return result.to_dict()

    def _finished_task(self, ctx: RequestContext, tool: str, result: dict[str, Any], ttl_ms: int | None) -> Task:
        tasks = self.server.tasks
        task = tasks.complete(tasks.create(owner=ctx.principal, tool=tool, ttl_ms=ttl_ms,
                                           request={"tool": tool, "era": "core"}).task_id, result)
        error = (result.get("structuredContent") or {}).get("error") if result.get("isError") else None
        self.server.events.record("task.completed", tool=tool, tenant=ctx.principal.tenant,
                                  subject=ctx.principal.subject, taskId=task.task_id, settledAtOnce=True,
                                  outcome=(error.get("kind", "error") if isinstance(error, dict) else "error")
                                  if result.get("isError") else "ok")
        self.server.changes.publish("task", task.task_id)
        return task

    async def _resources_list(self, ctx: RequestContext) -> dict[str, Any]:
        _check_cursor(ctx.params)
        return {"resources": [r.definition for r in self.server.visible_resources(ctx.principal)]}

    async def _templates_list(self, ctx: RequestContext) -> dict[str, Any]:
        _check_cursor(ctx.params)
        return {"resourceTemplates": [t.definition for t in self.server.visible_templates(ctx.principal)]}

    async def _resources_read(self, ctx: RequestContext) -> dict[str, Any]:
        uri = _str_param(ctx.params, "uri")
        if ctx.era == "modern":
            self._open_state(ctx, "resources/read", uri, {})
        try:
            contents = await self.server.read_resource(ctx.principal, uri, peer=_Peer(self, ctx))
        except NotFound as exc:
            if ctx.era == "legacy":  # the handshake era's resource-not-found code
                exc.code = -32002
            raise
        return {"contents": contents}

    async def _prompts_list(self, ctx: RequestContext) -> dict[str, Any]:
        _check_cursor(ctx.params)
        return {"prompts": [p.definition for p in self.server.visible_prompts(ctx.principal)]}

    async def _prompts_get(self, ctx: RequestContext) -> dict[str, Any]:
        name = _str_param(ctx.params, "name")
        if ctx.era == "modern":
            self._open_state(ctx, "prompts/get", name, ctx.params.get("arguments") or {})
        return await self.server.get_prompt(ctx.principal, name, ctx.params.get("arguments"), peer=_Peer(self, ctx))

    async def _complete(self, ctx: RequestContext) -> dict[str, Any]:
        ref, argument = ctx.params.get("ref"), ctx.params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise InvalidParams("ref and argument are required")
        values = self.server.complete(ctx.principal, ref, argument)
        return {"completion": {"values": values, "total": len(values), "hasMore": False}}

    async def _listen(self, ctx: RequestContext) -> dict[str, Any]:
        """``subscriptions/listen``: ack, then the requested change notifications until cancelled."""
        wanted = ctx.params.get("notifications")
        if not isinstance(wanted, dict):
            raise InvalidParams("notifications must be an object")
        honored: dict[str, Any] = {}
        for flag in ("toolsListChanged", "promptsListChanged", "resourcesListChanged"):
            if wanted.get(flag) is True:
                honored[flag] = True
        uris = wanted.get("resourceSubscriptions")
        if uris is not None:
            if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris) or len(uris) > 1000:
                raise InvalidParams("resourceSubscriptions must be a list of URIs")
            honored["resourceSubscriptions"] = uris
        task_ids = wanted.get("taskIds")
        if task_ids is not None:
            if not _has_tasks_extension(ctx.caps):
                raise _tasks_capability_error()
            if not isinstance(task_ids, list) or not all(isinstance(t, str) for t in task_ids) or len(task_ids) > 1000:
                raise InvalidParams("taskIds must be a list of task ids")
            honored["taskIds"] = task_ids
        watched_tasks = set(task_ids or ())
        sub_meta = {META_SUBSCRIPTION: ctx.id}
        feed = self.server.changes
        queue = feed.listen()
        try:
            await ctx.outbox.send(jsonrpc.notification("notifications/subscriptions/acknowledged",
                                                       {"_meta": sub_meta, "notifications": honored}))
            watched = set(honored.get("resourceSubscriptions", ()))
            last_update: dict[str, float] = {}
            while True:
                if watched_tasks:
                    # Tasks may change in another process (replicas share the database):
                    # look at them now and then, not only when this process announces a change.
                    try:
                        kind, value = await asyncio.wait_for(queue.get(), timeout=self.task_poll_s)
                    except TimeoutError:
                        for task_id in watched_tasks:
                            await self._notify_task(ctx, task_id, sub_meta, last_update)
                        continue
                else:
                    kind, value = await queue.get()
                if kind == "task":
                    if value in watched_tasks:
                        await self._notify_task(ctx, value, sub_meta, last_update)
                elif kind == "resource":
                    if value in watched:
                        await ctx.outbox.send(jsonrpc.notification(
                            "notifications/resources/updated", {"_meta": sub_meta, "uri": value}))
                elif honored.get(f"{kind}ListChanged"):
                    await ctx.outbox.send(jsonrpc.notification(f"notifications/{kind}/list_changed",
                                                               {"_meta": sub_meta}))
        finally:
            feed.unlisten(queue)

    async def _notify_task(self, ctx: RequestContext, task_id: str, sub_meta: dict[str, Any],
                           last_update: dict[str, float]) -> None:
        try:
            task = self.server.tasks.get(task_id, owner=ctx.principal)
        except NotFound:
            return
        if last_update.get(task_id) == task.updated_at:
            return
        last_update[task_id] = task.updated_at
        await ctx.outbox.send(jsonrpc.notification(
            "notifications/tasks", {**ext_detailed(task, result_type=False), "_meta": sub_meta}))

    async def session_feed(self, session: Session) -> None:
        """Forward changes to a handshake-era session's stream until cancelled."""
        feed = self.server.changes
        queue = feed.listen()
        session._feed = queue
        try:
            while session.state is not SessionState.CLOSED:
                kind, value = await queue.get()
                stream = session.stream
                if stream is None or session.state is SessionState.NEW:
                    continue
                if kind == "task":
                    if session.version != "2025-11-25" or session.principal is None:
                        continue
                    if session.task_note_waits(value):
                        continue
                    try:
                        task = self.server.tasks.get(value, owner=session.principal)
                    except NotFound:
                        continue
                    await stream.send(jsonrpc.notification("notifications/tasks/status", core_task(task)))
                elif kind == "resource":
                    if value in session.subscriptions:
                        await stream.send(jsonrpc.notification("notifications/resources/updated", {"uri": value}))
                else:
                    await stream.send(jsonrpc.notification(f"notifications/{kind}/list_changed"))
        finally:
            if session._feed is queue:
                session._feed = None
            feed.unlisten(queue)

    # -- tasks ------------------------------------------------------------------------

    def _task_for(self, ctx: RequestContext) -> Task:
        if ctx.era == "modern" and not _has_tasks_extension(ctx.caps):
            raise _tasks_capability_error()
        task_id = ctx.params.get("taskId")
        if not isinstance(task_id, str):
            raise InvalidParams("taskId must be a string")
        # Another tenant's or subject's task answers exactly like an unknown one.
        return self.server.tasks.get(task_id, owner=ctx.principal)

    async def _tasks_get(self, ctx: RequestContext) -> dict[str, Any]:
        task = self._task_for(ctx)
        return ext_detailed(task) if ctx.era == "modern" else core_task(task)

    async def _tasks_update(self, ctx: RequestContext) -> dict[str, Any]:
        task = self._task_for(ctx)
        responses = ctx.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise InvalidParams("inputResponses must be an object")
        if any(not isinstance(v, dict) for v in responses.values()):
            raise InvalidParams("each input response must be an object")
        self.server.tasks.answer(task.task_id, responses, owner=ctx.principal)
        self.server.task_runtime.answered(task.task_id)
        self.server.events.record("task.input", tenant=ctx.principal.tenant, subject=ctx.principal.subject,
                                  outcome="ok", taskId=task.task_id, arguments=responses,
                                  argument_names=frozenset(task.input_requests or ()))  # keys nobody asked: [undeclared]
        return {}

    async def _tasks_cancel(self, ctx: RequestContext) -> dict[str, Any]:
        task = self._task_for(ctx)
        if task.terminal:
            if ctx.era == "modern":
                return {}  # cancelling a finished task is acknowledged and changes nothing
            raise InvalidParams(f"Task is already {task.status.value}")
        task = await self.server.task_runtime.cancel(task)
        self.server.events.record("task.cancel_requested", tenant=ctx.principal.tenant,
                                  subject=ctx.principal.subject, outcome=task.status.value, taskId=task.task_id)
        return {} if ctx.era == "modern" else core_task(task)

    async def _tasks_result(self, ctx: RequestContext) -> dict[str, Any]:
        task = self._task_for(ctx)
        queue = self.server.changes.listen()
        asking: dict[str, asyncio.Task[None]] = {}
        try:
            while not task.terminal:
                if task.status is TaskStatus.INPUT_REQUIRED and ctx.era == "legacy":
                    self._ask_for_task(ctx, task, asking)
                try:
                    async with asyncio.timeout(5.0):
                        while True:
                            kind, value = await queue.get()
                            if kind == "task" and value == task.task_id:
                                break
                except TimeoutError:
                    pass
                task = self.server.tasks.get(task.task_id, owner=ctx.principal)
        finally:
            self.server.changes.unlisten(queue)
            for asked in asking.values():
                asked.cancel()
        related = {_RELATED_TASK: {"taskId": task.task_id}}
        if task.status is TaskStatus.FAILED:
            error = task.error or {}
            raise ProtocolError(str(error.get("message", "Task failed"))[:500], {"taskId": task.task_id}) \
                if not isinstance(error.get("code"), int) else _stored_error(error)
        if task.status is TaskStatus.CANCELLED:
            raise InvalidParams("Task was cancelled", {"taskId": task.task_id})
        return {**(task.result or {"content": []}), "_meta": related}

    def _ask_for_task(self, ctx: RequestContext, task: Task, asking: dict[str, "asyncio.Task[None]"]) -> None:
        """2025-11-25: a task's open questions go to the client as requests on the ``tasks/result``
        stream (or the session's GET stream), marked with the related task; each answer is stored
        as ``tasks/update`` would store it.  Each question is sent once per ``tasks/result``."""
        session = ctx.session
        outbox = ctx.outbox if ctx.outbox is not NULL_OUTBOX else (session.stream if session else None)
        if session is None or outbox is None:
            return
        for key, request in (task.input_requests or {}).items():
            if key in asking or not isinstance(request, dict) or not isinstance(request.get("method"), str):
                continue
            asking[key] = asyncio.get_running_loop().create_task(
                self._relay_question(ctx, session, outbox, task.task_id, key, request))

    async def _relay_question(self, ctx: RequestContext, session: Session, outbox: Outbox, task_id: str, key: str,
                              request: dict[str, Any]) -> None:
        params = dict(request.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), _RELATED_TASK: {"taskId": task_id}}
        try:
            answer: dict[str, Any] = await session.request(outbox, request["method"], params,
                                                           self.client_request_timeout)
        except (_ClientError, TimeoutError):
            answer = {"action": "cancel"}  # no answer is never consent
        try:
            self.server.tasks.answer(task_id, {key: answer}, owner=ctx.principal)
        except NotFound:
            return  # the task ended or expired meanwhile
        self.server.task_runtime.answered(task_id)
        self.server.events.record("task.input", tenant=ctx.principal.tenant, subject=ctx.principal.subject,
                                  outcome="ok", taskId=task_id, arguments={key: answer})

    async def _tasks_list(self, ctx: RequestContext) -> dict[str, Any]:
        _check_cursor(ctx.params)
        return {"tasks": [core_task(t) for t in self.server.tasks.list(owner=ctx.principal, limit=1000)]}

    # -- stateless multi-round-trip input ----------------------------------------------

    def _binding(self, ctx: RequestContext, method: str, name: str, arguments: Any) -> dict[str, Any]:
        return {"sub": ctx.principal.subject, "ten": ctx.principal.tenant, "m": method, "n": name,
                "h": digest(arguments)}

    def _open_state(self, ctx: RequestContext, method: str, name: str, arguments: Any) -> None:
        """Check ``requestState``/``inputResponses`` of a retry and load earlier answers."""
        params = ctx.params
        responses = params.get("inputResponses")
        if responses is not None and not isinstance(responses, dict):
            raise InvalidParams("inputResponses must be an object")
        ctx.input_responses = responses or {}
        token = params.get("requestState")
        if token is None:
            return
        body = self.sealer.open(token, self._binding(ctx, method, name, arguments))
        jti = body.get("jti")
        try:
            self.server.db.execute("INSERT INTO used_request_states VALUES (?, ?)", (jti, body.get("exp", 0)))
        except Exception as exc:
            if unavailable(exc) is not None:
                raise  # the database failed, not the client's state: an internal error, never "invalid state"
            raise InvalidRequestState() from None
        prior, asked = body.get("r"), body.get("q")
        ctx.prior_responses = prior if isinstance(prior, dict) else {}
        ctx.asked = asked if isinstance(asked, dict) else {}

    def _input_required(self, ctx: RequestContext, need: InputRequired) -> dict[str, Any]:
        name = ctx.params.get("name") or ctx.params.get("uri") or ""
        answered = ctx.consumed
        # The questions this state answers: the ones asked now, and those whose answers it carries.
        asked = {key: ctx.asked[key] for key in answered if key in ctx.asked}
        asked.update((key, digest(request)) for key, request in need.requests.items())
        state = self.sealer.seal({**self._binding(ctx, str(ctx.method), str(name), ctx.params.get("arguments") or {}),
                                  "r": answered, "q": asked})
        try:  # housekeeping: the answer does not depend on it
            self.server.db.execute("DELETE FROM used_request_states WHERE expires_at < ?", (time.time(),))
        except Exception:
            pass
        return {"resultType": "input_required", "inputRequests": need.requests, "requestState": state,
                "_meta": self._modern_meta}  # every result names the server, interim ones too


def _without_execution(definition: dict[str, Any]) -> dict[str, Any]:
    if "execution" not in definition:
        return definition
    return {k: v for k, v in definition.items() if k != "execution"}


def _str_param(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"{name} must be a non-empty string")
    return value


def _check_cursor(params: dict[str, Any]) -> None:
    cursor = params.get("cursor")
    if cursor is not None:  # everything fits on one page: any cursor is one we never issued
        raise InvalidParams("Invalid cursor")


# The pipeline already wrote these to the audit trail (tool.denied).
_RECORDED_BY_SERVER = (AccessDenied, UnknownTool)


def _has_tasks_extension(caps: dict[str, Any]) -> bool:
    extensions = caps.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def _tasks_capability_error() -> MissingCapability:
    return MissingCapability(f"This request needs the {TASKS_EXTENSION} extension",
                             {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})


def _stored_error(error: dict[str, Any]) -> ProtocolError:
    exc = ProtocolError(str(error.get("message", "Task failed"))[:500], error.get("data"))
    exc.code = int(error["code"])
    return exc


class InvalidMeta(InvalidParams):
    """A request's ``_meta`` lacks what the stateless protocol requires (HTTP 400)."""

    http_status = 400


def capability_error(name: str) -> MissingCapability:
    return MissingCapability(data={"requiredCapabilities": {name: {}}})


def _shown(uri: str) -> str:
    """A client's URI as an answer or a record may repeat it: redacted first, then cut (a cut first
    could leave a piece of a secret too short for any pattern)."""
    return redact_text(uri)[:256]
