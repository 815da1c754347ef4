"""The 2026-07-28 POST: one stateless request (no session), its routing headers checked first.

It streams (SSE) when the engine's plan says the answer is a stream (``subscriptions/listen``), or
that progress or logs may precede it and ``Accept`` allows SSE, or when ``Accept`` allows only
SSE; otherwise it answers JSON.  A tool that may wait on the loop runs only while the client stays
connected.  Which requests those are is the engine's to say (:meth:`Engine.plan`): no method name here.
"""

from __future__ import annotations

from ..auth._principals import Principal
from ..protocol import jsonrpc
from ..protocol.engine import Engine, Plan
from ..protocol.jsonrpc import Incoming
from ._http_answers import Answers
from ._http_headers import CLIENTS_ACCEPT, SSE_ONLY, HeaderChecks
from ._http_wire import Receive, Scope, Send, respond, until_disconnect


class StatelessPost:
    """Serves one 2026-07-28 POST."""

    def __init__(self, engine: Engine, checks: HeaderChecks, answers: Answers) -> None:
        self.engine = engine
        self.checks = checks
        self.answers = answers

    async def post(self, message: Incoming, plan: Plan, headers: dict[str, str], principal: Principal,
                   scope: Scope, receive: Receive, send: Send) -> None:
        self.checks.check_modern_headers(message, headers)
        if message.kind != jsonrpc.REQUEST:
            _, status = await self.engine.serve(message, principal)
            await respond(send, status, b"")
            return
        accept = headers.get("accept")
        streaming = plan.must_stream or (plan.may_stream and (accept is None or "text/event-stream" in accept)) or (
            accept is not None and accept != CLIENTS_ACCEPT and self.checks.accepts.get(accept) == SSE_ONLY)
        if streaming:
            await self.answers.stream(message, plan, principal, None, [], scope, receive, send)
            return
        if plan.may_wait:
            reply = await until_disconnect(self.engine.serve(message, principal, modern_hint=True), scope, receive)
            if reply is None:
                return
        else:
            reply = await self.engine.serve(message, principal, modern_hint=True)
        await self.answers.json(send, reply, principal)
