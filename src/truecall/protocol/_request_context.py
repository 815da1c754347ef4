"""One request as the engine serves it, and its channel back to the client (the tool's peer)."""

from __future__ import annotations

from typing import Any

from ..audit._log import Ledger
from ..auth._principals import Principal
from ..server.context import ElicitationUnavailable
from . import jsonrpc
from ._request_state import answer_for
from ._session import NULL_OUTBOX, ClientError, Outbox, Session
from .jsonrpc import Incoming
from .versions import LOG_LEVELS, UNNEGOTIATED, Features

__all__ = ["RequestContext", "Peer"]


#: The fields of a request that has none of them: read, never filled in place (see RequestContext).
_EMPTY: dict[str, Any] = {}
#: No question changed (shared: a ``frozenset()`` call per request is a cost every call pays).
_NONE_CHANGED: frozenset[str] = frozenset()


class RequestContext(Ledger):
    """What the engine knows about one request while serving it; also the request's audit
    :class:`~truecall.audit.Ledger` (opened by ``server.events.begin(ctx)``)."""

    __slots__ = ("id", "method", "params", "features", "version", "caps", "client_info", "log_level",
                 "progress_token", "principal", "session", "outbox", "meta", "input_responses", "prior_responses",
                 "consumed", "asked", "changed", "changing")

    def __init__(self, message: Incoming, principal: Principal, session: Session | None, outbox: Outbox) -> None:
        self.id = message.id
        self.method: str = message.method or ""  # (a request always names one: jsonrpc.decode checks)
        self.params = message.params or {}
        self.principal = principal
        self.session = session
        self.outbox = outbox
        meta = self.params.get("_meta")
        self.meta: dict[str, Any] = meta if isinstance(meta, dict) else {}
        self.progress_token = self.meta.get("progressToken")
        #: What this request's version does (set on admission; see :mod:`.versions`).
        self.features: Features = UNNEGOTIATED
        self.version: str | None = None
        # (These five start as one shared empty dict: admission and the request state replace them,
        # nothing fills them in place; five dicts made and freed per request were a cost every call paid.)
        self.caps: dict[str, Any] = _EMPTY
        self.client_info: dict[str, Any] = _EMPTY
        self.log_level: str | None = None
        self.input_responses: dict[str, Any] = _EMPTY
        self.prior_responses: dict[str, Any] = _EMPTY
        #: Answers the tool actually used in this round; carried forward in the next state.
        self.consumed: dict[str, Any] = {}
        #: key → digest of the question this server asked under it (from an authentic requestState).
        self.asked: dict[str, str] = _EMPTY
        #: Keys whose question read differently in the last round than in the one answered before it.
        self.changed: frozenset[str] = _NONE_CHANGED
        #: Keys whose question reads differently now than in the round the client answered (made
        #: when there is one: most requests ask nothing).
        self.changing: set[str] | None = None


class Peer:
    """The engine's side of :class:`~truecall.server.context.Peer` for one request."""

    __slots__ = ("ctx", "timeout", "client_capabilities", "version")

    def __init__(self, ctx: RequestContext, timeout: float) -> None:
        self.ctx = ctx
        #: How long a server-to-client request waits for its answer (handshake era).
        self.timeout = timeout
        self.client_capabilities = ctx.caps
        self.version = ctx.version

    async def request(self, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
        ctx = self.ctx
        if ctx.features.request_state:
            return answer_for(ctx, method, params, key)  # or InputRequired: the round ends with the question
        if ctx.session is None or ctx.outbox is NULL_OUTBOX:
            # No stream to this client (a JSON-only answer): nobody can be asked, say so now.
            raise ElicitationUnavailable(capability=method)
        try:
            return await ctx.session.request(ctx.outbox, method, params, self.timeout)
        except ClientError as exc:
            raise ElicitationUnavailable(capability=method, why=exc.reason) from exc

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
