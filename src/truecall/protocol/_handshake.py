"""The handshake era's own methods (2025-11-25, 2025-06-18): ``initialize``, the notification that
completes it, ``logging/setLevel`` and resource (un)subscription, all state of the :class:`Session`.

A session's state changes only through the table in :mod:`._session_state`; what the negotiation
decided is stored with ``session.changed()`` (HTTP keeps it for other replicas).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..server._policy import admit_subscription
from ..errors import InvalidParams
from ._params import str_param
from ._session import Session
from ._session_state import SessionEvent, SessionStateError
from .jsonrpc import Incoming
from .versions import LATEST_LEGACY, LEGACY, LOG_LEVELS, features_of

if TYPE_CHECKING:
    from ._request_context import RequestContext
    from .engine import Engine

__all__ = ["HandshakeMethods"]


class HandshakeMethods:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.server = engine.server

    def initialize(self, ctx: RequestContext) -> dict[str, Any]:
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
        session.log_level = self.engine.legacy_default_log_level
        session.changed()
        result: dict[str, Any] = {
            "protocolVersion": session.version,
            "capabilities": self.engine.capabilities(features_of(session.version)),
            "serverInfo": self.engine.server_info,
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    @staticmethod
    def notify(message: Incoming, session: Session | None) -> None:
        """A notification from the client: ``notifications/initialized`` completes the handshake."""
        if message.method == "notifications/initialized" and session is not None:
            try:
                session.transition(SessionEvent.INITIALIZED)
            except SessionStateError:
                pass  # notifications are never answered; a stray one changes nothing

    async def ping(self, ctx: RequestContext) -> dict[str, Any]:
        return {}

    async def set_level(self, ctx: RequestContext) -> dict[str, Any]:
        level = ctx.params.get("level")
        if level not in LOG_LEVELS:
            raise InvalidParams("unknown log level")
        assert ctx.session is not None
        ctx.session.log_level = level
        ctx.session.changed()
        return {}

    async def subscribe(self, ctx: RequestContext) -> dict[str, Any]:
        uri = str_param(ctx.params, "uri")
        admit_subscription(self.server, ctx.principal, uri)
        assert ctx.session is not None
        if len(ctx.session.subscriptions) >= 1000:
            raise InvalidParams("too many subscriptions")
        ctx.session.subscriptions.add(uri)
        ctx.session.changed()
        return {}

    async def unsubscribe(self, ctx: RequestContext) -> dict[str, Any]:
        uri = str_param(ctx.params, "uri")
        assert ctx.session is not None
        ctx.session.subscriptions.discard(uri)
        ctx.session.changed()
        return {}
