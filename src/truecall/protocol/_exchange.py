"""What a transport learns from the engine about one message: its :class:`Plan` before it is
served, its :class:`Reply` after.

A transport moves bytes; what a message *means* — whether it opens a session, may be answered
with a task handle, may be preceded by progress on a stream, withdraws a request in flight — is
MCP, and MCP is the engine's.  So the transport asks (:meth:`Engine.plan
<truecall.protocol.engine.Engine.plan>`) and reads the answer as data, never comparing a method
name itself; and it writes what :meth:`Engine.serve <truecall.protocol.engine.Engine.serve>`
gives back, which is already safe to write (its audit records are durable).

Both are immutable and cheap: a request's plan is one of a few shared instances (no allocation on
the hot path), and a reply is a plain pair.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from . import jsonrpc
from .jsonrpc import Incoming
from .versions import META_LOG_LEVEL

__all__ = ["Reply", "Plan", "named_param", "STREAMING_METHODS", "NAMED_PARAMS"]

#: The requests whose answer may be preceded by messages of the request (progress, logs, and in the
#: handshake era the server's own requests to the client: elicitation, sampling).
STREAMING_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})

#: A request → the parameter that names what it acts on (2026-07-28 repeats it in ``Mcp-Name``).
NAMED_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
                "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


def named_param(method: str | None) -> str | None:
    """The parameter of ``method``'s request that names its target (``name``, ``uri``, ``taskId``),
    or ``None`` when it names none."""
    return NAMED_PARAMS.get(method) if method is not None else None


#: The engine's answer to one message, ready to be written: ``(response, status)``.
#:
#: ``response`` is the JSON-RPC response (``None``: nothing to answer — a notification, a client's
#: response, a request the client withdrew); ``status`` the HTTP status its error class calls for
#: (200 otherwise; 202 for a message that is not a request).  Whatever the engine recorded for it is
#: durable by the time a transport holds a reply: it may write it at once.  A plain pair, unpacked
#: where it is read (``response, status = await engine.serve(...)``): a named tuple cost every
#: request a call of ``tuple.__new__`` to make it (~175 ns more than a tuple display) and an
#: unpacking the interpreter does not specialise for a subclass (45 ns against 12; timeit, Python 3.11).
Reply: TypeAlias = tuple[dict[str, Any] | None, int]


class Plan:
    """How a transport should carry one message, decided by the engine before serving it.

    Every field is ``False``/``None`` unless it applies:

    ``at_once``
        a ``tools/call`` of a synchronous tool without task support: its handler runs without
        giving the loop a turn, so the call needs no task of its own and no watcher for a
        disconnect that could not interrupt it anyway (stdio runs its first step in place).
    ``may_wait``
        a ``tools/call`` that may wait on the loop (an async or task-capable tool, or a name not
        known): worth running only while the client stays connected.
    ``may_be_task``
        a ``tools/call`` that asks for a task (``params.task``): its answer may be a task handle,
        so the session's task status notifications wait until that answer is written.  (Even
        when it is ``at_once``: 2025-11-25 answers such a call refused before its tool is judged,
        for the rate limit, with a task already finished.)
    ``opens_session``
        ``initialize``: what follows it on a stream belongs to the session it opens.
    ``may_stream``
        messages of the request may precede its answer (progress, logs; in the handshake era the
        server's own requests), so a stream carries it where the client accepts one.
    ``must_stream``
        the answer *is* a stream (``subscriptions/listen``).
    ``cancels``
        for ``notifications/cancelled``: the id of the request it withdraws (a transport owns the
        requests in flight, so it cancels them); ``None`` otherwise, or for an id that no request
        could have (then the notification is ignored).
    """

    # Slots, not a named tuple: a transport reads two or three fields of every request's plan, and
    # the interpreter specialises a slot's read (a named tuple's field is a descriptor it does not).
    __slots__ = ("at_once", "may_wait", "may_be_task", "opens_session", "may_stream", "must_stream", "cancels")

    at_once: bool
    may_wait: bool
    may_be_task: bool
    opens_session: bool
    may_stream: bool
    must_stream: bool
    cancels: str | int | None

    def __init__(self, *, at_once: bool = False, may_wait: bool = False, may_be_task: bool = False,
                 opens_session: bool = False, may_stream: bool = False, must_stream: bool = False,
                 cancels: str | int | None = None) -> None:
        for name, value in zip(self.__slots__, (at_once, may_wait, may_be_task, opens_session, may_stream,
                                                 must_stream, cancels)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a Plan is immutable (it is shared): cannot set {name!r}")

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Plan) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in zip(self.__slots__, self._fields())
                          if value not in (False, None))
        return f"Plan({shown})"


#: The plans of requests, shared (a plan per request would be an allocation per request); chosen by
#: :meth:`Engine.plan <truecall.protocol.engine.Engine.plan>`.
NOTHING = Plan()
STREAMS = Plan(may_stream=True)
LISTEN = Plan(may_stream=True, must_stream=True)
INITIALIZE = Plan(opens_session=True)
#: ``tools/call``, indexed by ``at_once * 4 + may_be_task * 2 + may_stream``.
CALLS = (Plan(may_wait=True), Plan(may_wait=True, may_stream=True),
         Plan(may_wait=True, may_be_task=True), Plan(may_wait=True, may_be_task=True, may_stream=True),
         Plan(at_once=True), Plan(at_once=True, may_stream=True),
         Plan(at_once=True, may_be_task=True), Plan(at_once=True, may_be_task=True, may_stream=True))


def cancellation(message: Incoming) -> Plan:
    """The plan of a notification: for ``notifications/cancelled``, the request it withdraws (if its
    ``requestId`` is one a request could have: a string or an integer); :data:`NOTHING` otherwise."""
    if message.method == "notifications/cancelled" and message.kind == jsonrpc.NOTIFICATION:
        params = message.params
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(request_id, (str, int)) and not isinstance(request_id, bool):
            return Plan(cancels=request_id)
    return NOTHING


def asks_progress(params: Any) -> bool:
    """A 2026-07-28 request whose ``_meta`` asks for progress or logs (only those can precede its
    answer there: the server's own questions end the round as ``input_required`` instead)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and ("progressToken" in meta or META_LOG_LEVEL in meta)
