"""The 2026-07-28 POST: one stateless request (no session), its routing headers checked first.

It streams (SSE) for ``subscriptions/listen``, for a call that asked for progress or logs (and
whose ``Accept`` allows SSE), or when ``Accept`` allows only SSE; otherwise it answers JSON.  A
tool that may wait on the loop runs only while the client stays connected.
"""

from __future__ import annotations

from ..auth import Principal
from ..protocol import jsonrpc
from ..protocol.engine import Engine
from ..protocol.jsonrpc import Incoming
from ..protocol.versions import META_LOG_LEVEL
from ..server import Server
from ._http_answers import Answers
from ._http_headers import CLIENTS_ACCEPT, SSE_ONLY, HeaderChecks
from ._http_wire import Receive, Scope, Send, respond, until_disconnect

#: The methods whose answer may be preceded by progress or log notifications.
STREAMING_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})


class StatelessPost:
    """Serves one 2026-07-28 POST."""

    def __init__(self, engine: Engine, server: Server, checks: HeaderChecks, answers: Answers) -> None:
        self.engine = engine
        self.server = server
        self.checks = checks
        self.answers = answers

    async def post(self, message: Incoming, headers: dict[str, str], principal: Principal,
                   scope: Scope, receive: Receive, send: Send) -> None:
        self.checks.check_modern_headers(message, headers)
        if message.kind != jsonrpc.REQUEST:
            await self.engine.handle(message, principal)
            await respond(send, 202, b"")
            return
        meta = (message.params or {}).get("_meta") or {}
        accept = headers.get("accept")
        streaming = message.method == "subscriptions/listen" or (
            message.method in STREAMING_METHODS and isinstance(meta, dict)
            and ("progressToken" in meta or META_LOG_LEVEL in meta)
            and (accept is None or "text/event-stream" in accept)) or (
            accept is not None and accept != CLIENTS_ACCEPT and self.checks.accepts.get(accept) == SSE_ONLY)
        if streaming:
            await self.answers.stream(message, principal, None, [], scope, receive, send)
            return
        if message.method == "tools/call" and not self.server.registry.answers_at_once(message.params):
            result = await until_disconnect(
                self.engine.handle_with_status(message, principal, modern_hint=True), scope, receive)
            if result is None:
                return
            response, status = result
        else:
            response, status = await self.engine.handle_with_status(message, principal, modern_hint=True)
        await self.answers.json(send, response, status, principal)
