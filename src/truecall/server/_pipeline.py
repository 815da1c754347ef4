"""One tool call, from admission to answer, with one audit point.

    admit (the policy stage: tenant, tool, scopes, rate limit, task support)
    → check input → run (or accept as a task) → check output

Admission is :func:`truecall.server._policy.admit_tool`, the stage every method passes; what it refuses it
records and raises itself, except the rate limit, which a tool call answers as a result (settled here).

Each stage returns an *outcome*: a small typed value saying what happened
(:class:`Denied`, :class:`RateLimited`, :class:`Rejected`, :class:`Accepted`, a
:class:`~truecall.results.ToolResult` the tool answered, :class:`Refused`,
:class:`Failed`, :class:`Cancelled`).  :func:`settle` is the only place that
turns the outcome of an admitted call into its audit record and into the answer
(a result, the task, or the error raised), and the only place that tells
``server.observers``; :func:`refuse` does the same for a call refused before
admission (no tool, no arguments).  A rule about what a call records is changed
here, once.

What propagates untouched is not an outcome of the call: :class:`InputRequired`
(the engine answers it with an input round; the retry is the call that is
recorded) and a :class:`~truecall.errors.ProtocolError` the tool raises (the
engine answers and records it).

This module is private: :class:`~truecall.server.Server` wires it, and its
``call_tool`` / ``acall_tool`` / ``authenticate`` are the API (``acall_tool`` and
``authenticate`` *are* :func:`call_tool` and :func:`authenticate`, bound as methods).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, NoReturn, Union, overload

from ._typed import ArgumentError, as_result as _as_result
from ._wire_check import tool_result_problems
from ..auth._principals import Principal
from .context import (NO_PEER, ElicitationUnavailable, InputRequired, InvalidElicitationAnswer, Peer,
                      QuestionChanged, ToolContext)
from ._policy import OverBudget, admit_tool
from ..errors import AccessDenied, ProtocolError
from ..forms import FormError, refused_result
from ..audit.redaction import redact_free_text, redact_text
from ..results import MISSING_INPUT_TEXT, ErrorKind, ToolError, ToolResult, tool_error
from ..storage import unavailable
from ..tasks import Task
from ..tasks.runtime import TaskOffer
from .tools import Tool

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["call_tool", "authenticate", "settle", "refuse", "Outcome", "Denied", "RateLimited", "Rejected",
           "Accepted", "Refused", "Failed", "Cancelled"]

#: Where a tool's unexpected exception goes, traceback redacted (stderr unless configured otherwise).
log = logging.getLogger("truecall.server.tools")
MAX_ARGUMENT_DEPTH = 64


# -- outcomes ---------------------------------------------------------------------------------
#
# Plain slotted classes (not dataclasses): one is made per call that is not a plain result,
# and the hot path (a ToolResult) makes none at all.

class Denied:
    """A credential refused before anything was admitted (``auth.denied``; ``tool.denied`` when a tool
    was named); the error is raised.  (What an authenticated caller may not do is refused, and
    recorded, by the policy stage: :mod:`truecall.server._policy`.)  ``principal`` ``None``: the credential
    itself was refused."""

    __slots__ = ("error", "reason", "principal", "name", "detail")

    def __init__(self, error: ProtocolError, reason: str, principal: Principal | None, name: Any,
                 detail: Any = None) -> None:
        self.error, self.reason, self.principal, self.name, self.detail = error, reason, principal, name, detail


class RateLimited:
    """Over the principal's call budget (``tool.rate_limited``); nothing ran."""

    __slots__ = ("retry_ms",)

    def __init__(self, retry_ms: int) -> None:
        self.retry_ms = retry_ms


class Rejected:
    """The arguments break the input schema (``tool.rejected``); nothing ran.

    ``message`` ``None``: required fields (``field``, a list of paths) are missing or empty.
    """

    __slots__ = ("message", "field")

    def __init__(self, message: str | None, field: str | list[str]) -> None:
        self.message, self.field = message, field


class Accepted:
    """The tool accepted its work as this task (``task.created``); the caller gets the task."""

    __slots__ = ("task",)

    def __init__(self, task: Task) -> None:
        self.task = task


class Refused:
    """A red line held at run time (``tool.form_refused``, then ``tool.called``): nobody was asked."""

    __slots__ = ("error",)

    def __init__(self, error: FormError) -> None:
        self.error = error


class Failed:
    """The tool did not give a usable result (``tool.failed``): the answer is a safe message.

    ``reason``: ``exception`` (a bug), ``dependency_unavailable`` (the database is down;
    ``why`` says how), ``bad_result`` (not a result, or not JSON) or
    ``output_schema_violation`` (``violations``).  ``read_only``: the tool is declared
    read-only, so an outage changed nothing and the answer may say so.
    """

    __slots__ = ("reason", "exception", "why", "violations", "read_only")

    def __init__(self, reason: str, exception: str | None = None, *, why: str | None = None,
                 violations: list[str] | None = None, read_only: bool = False) -> None:
        self.reason, self.exception, self.why = reason, exception, why
        self.violations, self.read_only = violations, read_only


class Cancelled:
    """The caller went away while the tool ran (``tool.cancelled``); the cancellation goes on."""

    __slots__ = ("error",)

    def __init__(self, error: asyncio.CancelledError) -> None:
        self.error = error


#: What one stage can say.  A :class:`ToolResult` is the tool's own answer (``tool.called``):
#: the common case, carried as itself.
Outcome = Union[ToolResult, Denied, RateLimited, Rejected, Accepted, Refused, Failed, Cancelled]


# -- the call ---------------------------------------------------------------------------------

@overload
async def call_tool(server: "Server", principal: Principal, name: str, arguments: Any, *, tenant: str | None = None,
                    peer: Peer = NO_PEER, request_id: Any = None, meta: dict[str, Any] | None = None,
                    client: str | None = None, task_mode: None = None, task_ttl_ms: int | None = None,
                    from_json: bool = False) -> ToolResult: ...


@overload
async def call_tool(server: "Server", principal: Principal, name: str, arguments: Any, *, tenant: str | None = None,
                    peer: Peer = NO_PEER, request_id: Any = None, meta: dict[str, Any] | None = None,
                    client: str | None = None, task_mode: str | None = None, task_ttl_ms: int | None = None,
                    from_json: bool = False) -> ToolResult | Task: ...


async def call_tool(server: "Server", principal: Principal, name: str, arguments: Any, *, tenant: str | None = None,
                    peer: Peer = NO_PEER, request_id: Any = None, meta: dict[str, Any] | None = None,
                    client: str | None = None, task_mode: str | None = None, task_ttl_ms: int | None = None,
                    from_json: bool = False) -> ToolResult | Task:
    """Run one call for an authenticated principal and return an honest result.

    ``task_mode`` ("ext" for the tasks extension, "core" for 2025-11-25 tasks,
    "inproc" for in-process callers) says the caller can take a task: if the tool
    accepts its work (``ctx.accept_as_task()``) the answer is that :class:`Task`,
    and the rest of the handler runs in the background (without ``task_mode`` the
    answer is always a result).  Every outcome is recorded in the audit trail once,
    before it is answered (:func:`settle`).

    (This is :meth:`Server.acall_tool` itself, not a function it calls: a layer here
    would cost every call a frame and the forwarding of ten keywords.)
    """
    started = time.perf_counter()
    events = server.events
    if events.unwritable is not None:  # disk full: nothing runs that could not be recorded
        raise events.refusal(name, principal.tenant, principal.subject, request_id)
    try:
        tool = admit_tool(server, principal, name, tenant, task_mode)
    except OverBudget as over:
        return settle(server, RateLimited(over.retry_ms), principal, over.tool, {} if arguments is None else arguments,
                      request_id, client, started)
    if arguments is None:
        arguments = {}
    rejection = check_input(tool, arguments, from_json)
    if rejection is not None:
        return settle(server, rejection, principal, tool, arguments, request_id, client, started)
    if task_mode is None or tool.task_support == "forbidden":
        ctx = ToolContext(principal, tool, server, peer, request_id, meta)
        return await run(server, tool, ctx, arguments, client, started)
    runtime = server.task_runtime
    offer = TaskOffer(runtime, task_mode, task_ttl_ms, lambda task: settle(
        server, Accepted(task), principal, tool, arguments, request_id, client, started))
    ctx = ToolContext(principal, tool, server, peer, request_id, meta, offer.accept)

    def audit(kind: str, fields: dict[str, Any]) -> None:  # the task's own settlement, later
        server.events.record(kind, tool=name, tenant=principal.tenant, subject=principal.subject, **fields)

    return await runtime.run_or_accept(offer, run(server, tool, ctx, arguments, client, started), audit)


# -- stages -----------------------------------------------------------------------------------

def authenticate(server: "Server", token: str | None, *, tool: str | None = None) -> Principal:
    """The principal for ``token``; a refusal is recorded, then raised."""
    try:
        return server.tokens.authenticate(token)
    except AccessDenied as exc:
        refuse(server, Denied(exc, "invalid_credential", None, tool, exc.reason))


def check_input(tool: Tool, arguments: Any, from_json: bool = False) -> Rejected | None:
    """``None`` when the arguments are valid, else what is wrong with them.

    ``from_json``: the arguments were just decoded from a checked message, so
    they are plain JSON within the depth limit and need not be walked again.
    """
    if not isinstance(arguments, dict):
        return Rejected("arguments must be a JSON object", "(root)")
    if not from_json and not is_json(arguments):
        return Rejected("arguments must be JSON data (UTF-8 text, numbers, booleans, null, arrays, objects) "
                        f"nested at most {MAX_ARGUMENT_DEPTH} deep", "(root)")
    validator = tool.input_validator
    if validator.is_valid(arguments):
        missing = validator.missing_required(arguments) if validator.required else None
        return Rejected(None, missing) if missing else None
    try:
        violations = validator.violations(arguments, 5)
    except (RecursionError, ValueError):
        return Rejected("arguments are too deeply nested", "(root)")
    missing = list(dict.fromkeys([*(v.path for v in violations if v.missing),
                                  *validator.missing_required(arguments)]))
    if missing:
        return Rejected(None, missing)
    return Rejected("; ".join(v.message for v in violations), violations[0].path if violations else "(root)")


async def run(server: "Server", tool: Tool, ctx: ToolContext, arguments: dict[str, Any], client: str | None,
              started: float) -> ToolResult | Task:
    """Run the handler, check what it returned against the tool's output contract, and settle
    the outcome — here, in the same frame, because after an acceptance this is the task's work
    and its outcome is recorded when it ends, in the background.  (``tool`` is ``ctx.tool``, passed
    as known: the context's may be ``None``, for resources and prompts.)"""
    outcome: Outcome
    try:
        if tool.is_async:
            out = await tool.invoke(ctx, arguments)
        else:
            out = tool.invoke(ctx, arguments)
    except (InputRequired, ProtocolError):
        raise  # not an outcome of this call: the engine answers (and records) these
    except ToolError as exc:  # the tool's own, typed "not done"
        outcome = exc.result
    except ArgumentError as exc:  # valid JSON that still is not the parameter's type
        outcome = tool_error(ErrorKind.INVALID_INPUT, f"invalid input: {exc}", field=exc.field)
    except ElicitationUnavailable as exc:
        if exc.why:
            message = f"the client could not be asked ({exc.capability}): {exc.why}"
        elif exc.missing:
            message = f"input needed and the client cannot be asked: {', '.join(exc.missing)}"
        else:
            message = f"the client did not declare the {exc.capability} capability this tool needs"
        outcome = tool_error(ErrorKind.INVALID_INPUT, message, missing=exc.missing, capability=exc.capability)
    except FormError as exc:  # a red line held at run time: nobody was asked
        outcome = Refused(exc)
    except InvalidElicitationAnswer as exc:
        outcome = tool_error(ErrorKind.INVALID_INPUT, f"the user's answer was not usable: {exc}")
    except QuestionChanged as exc:  # a bug in the tool's question (it changes every round): said, not looped
        log.warning("tool %s: %s", tool.name, exc)
        outcome = Failed("question_changed", type(exc).__name__)
    except asyncio.CancelledError as exc:
        outcome = Cancelled(exc)
    except Exception as exc:  # a bug in the tool, or a dependency down: safe message out, type in the audit
        if type(exc).__name__ == "UrlElicitationRequiredError":  # the SDK's way to say "-32042": its meaning kept
            from ..errors import UrlElicitationRequired

            raise UrlElicitationRequired(str(exc), getattr(exc, "data", None)) from None
        why = unavailable(exc)
        if why is None:
            log_failure(tool.name, exc)
            outcome = Failed("exception", type(exc).__name__)
        else:
            # A read-only tool changed nothing whatever point it reached: an honest, retryable
            # "not now".  (A tool that writes may have done part of its work first.)
            outcome = Failed("dependency_unavailable", type(exc).__name__, why=why,
                             read_only=(tool.annotations or {}).get("readOnlyHint") is True)
    else:  # what the handler returned, as the result it stands for — or why it cannot be answered
        try:
            outcome = _as_result(out) if tool.returns is None else tool.returns(out)
        except (TypeError, ValueError) as exc:  # not a result, or not JSON: a bug in the tool
            log_failure(tool.name, exc)
            outcome = Failed("bad_result", type(exc).__name__)
        else:
            checker = tool.output_validator
            # The MCP schema of the era (truecall.server._wire_check).  Its fast path is here, inline (a
            # call for every result cost a frame): one plain text block, a dict of facts or none and
            # no _meta (the result truecall's builders make) is nothing the schema could refuse.
            # (The flag needs no look: to_dict writes isError true or leaves it out.)
            content, sc = outcome.content, outcome.structured_content
            if (type(content) is list and len(content) == 1 and type(block := content[0]) is dict
                    and len(block) == 2 and type(block.get("text")) is str and block.get("type") == "text"
                    and (sc is None or type(sc) is dict) and outcome.meta is None):
                malformed = None
            else:
                malformed = tool_result_problems(outcome, ctx.peer.version)
            if malformed:
                log.warning("tool %s: a result the MCP schema refuses was withheld: %s", tool.name,
                            "; ".join(malformed))
                outcome = Failed("malformed_result", violations=malformed)
            elif checker is not None and not outcome.is_error:
                if sc is None or not checker.is_valid(sc):
                    problems = ["structuredContent is missing"] if sc is None else \
                        [v.message for v in checker.violations(sc, 5)]
                    outcome = Failed("output_schema_violation", violations=problems)
    return settle(server, outcome, ctx.principal, tool, arguments, ctx.request_id, client, started)


# -- the one audit point ----------------------------------------------------------------------

def settle(server: "Server", outcome: Outcome, principal: Principal, tool: Tool, arguments: Any, request_id: Any,
           client: str | None, started: float) -> ToolResult | Task:
    """Record the ``outcome`` of an admitted call (durably, before anyone hears of it) and build
    the answer: a result, or the task an :class:`Accepted` call became; a :class:`Cancelled`
    outcome raises the cancellation.  (The call's facts come as plain arguments, not as an
    object: this runs once per call, and an object per call costs more than the rest of it.)
    """
    if isinstance(outcome, ToolResult):  # the tool's own answer: the one record every such call ends with
        err = outcome.error
        kind = (err.get("kind", "error") if err else "error") if outcome.is_error else "ok"
        elapsed = time.perf_counter() - started
        name = tool.name
        server.events.record_call("tool.called", name, principal.tenant, principal.subject, kind, arguments,
                                  round(elapsed * 1000, 3), client, _audited_id(request_id), tool.declared_fields)
        for observe in server.observers:
            observe(name, kind, elapsed)
        return outcome
    events = server.events
    if isinstance(outcome, Failed):
        result = _failure_answer(outcome)
        fields: dict[str, Any] = {"outcome": (result.error or {}).get("kind", "internal"), "reason": outcome.reason}
        if outcome.violations is not None:
            fields["violations"] = outcome.violations
        else:
            fields["exception"] = outcome.exception
        events.record("tool.failed", tool=tool.name, tenant=principal.tenant, subject=principal.subject,
                      **fields, arguments=arguments, durationMs=_ms_since(started), **_request_ref(request_id))
        return result
    if isinstance(outcome, Rejected):
        field = outcome.field
        missing = [_missing_path(tool, f) for f in field] if isinstance(field, list) else None
        events.record("tool.rejected", tool=tool.name, tenant=principal.tenant, subject=principal.subject,
                      reason="invalid_input", outcome="invalid_input",
                      field=_declared_path(tool, field[0] if isinstance(field, list) else field),
                      arguments=arguments if isinstance(arguments, dict) else {}, **_request_ref(request_id))
        if missing is not None:
            return tool_error(ErrorKind.INVALID_INPUT, MISSING_INPUT_TEXT, field=missing[0], missing=missing)
        return tool_error(ErrorKind.INVALID_INPUT, f"invalid input: {outcome.message}", field=field)
    if isinstance(outcome, RateLimited):
        retry = outcome.retry_ms
        events.record("tool.rate_limited", tool=tool.name, tenant=principal.tenant, subject=principal.subject,
                      outcome="rate_limited", retryAfterMs=retry)
        return tool_error(ErrorKind.RATE_LIMITED, f"too many calls; retry in {retry} ms", retryAfterMs=retry)
    if isinstance(outcome, Refused):
        events.record("tool.form_refused", tool=tool.name, tenant=principal.tenant, subject=principal.subject,
                      outcome="refused", rule=outcome.error.rule, **_request_ref(request_id))
        return settle(server, refused_result(outcome.error), principal, tool, arguments, request_id, client, started)
    if isinstance(outcome, Accepted):
        events.record("task.created", tool=tool.name, tenant=principal.tenant, subject=principal.subject,
                      outcome="accepted", taskId=outcome.task.task_id, arguments=arguments, **_request_ref(request_id))
        # The request is settled; the work goes on as the task's (this runs in the work's asyncio task),
        # and what it records when it ends (tool.called, …) is the task's, not a second answer to the request.
        events.detach()
        return outcome.task
    if isinstance(outcome, Cancelled):
        events.record("tool.cancelled", tool=tool.name, tenant=principal.tenant, subject=principal.subject,
                      outcome="cancelled", arguments=arguments, durationMs=_ms_since(started),
                      **_request_ref(request_id))
        raise outcome.error
    raise TypeError(f"a refusal is settled by refuse(), before admission: {outcome!r}")


def refuse(server: "Server", outcome: Denied) -> NoReturn:
    """Record a refusal made before the call was admitted, then raise it (the other half of the
    audit point: such a call has no tool, arguments or duration to record)."""
    who = outcome.principal
    if who is None:  # the credential itself
        server.events.record("tool.denied" if outcome.name else "auth.denied", reason=outcome.reason,
                             detail=outcome.detail, outcome="denied")
    else:
        server.events.record("tool.denied", tool=str(outcome.name)[:128], tenant=who.tenant, subject=who.subject,
                             reason=outcome.reason, outcome="denied")
    raise outcome.error


# -- answers ----------------------------------------------------------------------------------

def _failure_answer(failed: Failed) -> ToolResult:
    """The safe answer to a :class:`Failed` outcome: what the caller may rely on, nothing more."""
    if failed.reason == "dependency_unavailable":
        if failed.read_only:
            return tool_error(ErrorKind.DEPENDENCY_UNAVAILABLE,
                              f"{failed.why}; this read-only tool changed nothing. Retry later.")
        return tool_error(ErrorKind.INTERNAL, f"the tool stopped part-way: {failed.why}. What it did before "
                          "that is not known; check before retrying.")
    if failed.reason == "bad_result":
        return tool_error(ErrorKind.INTERNAL, "the tool produced something that is not a result; it was withheld")
    if failed.reason == "malformed_result":
        return tool_error(ErrorKind.INTERNAL, "the tool produced a result that is not a valid MCP result; it was "
                          "withheld")
    if failed.reason == "question_changed":
        return tool_error(ErrorKind.INTERNAL, "the tool asked its question in other words after the user answered "
                          "it, so the answer could not be used; nothing was done after the question")
    if failed.reason == "output_schema_violation":
        return tool_error(ErrorKind.INTERNAL, "the tool produced a result that breaks its own output "
                          "contract; it was withheld")
    return tool_error(ErrorKind.INTERNAL, "the tool failed unexpectedly; nothing is known to have happened")


# -- helpers ----------------------------------------------------------------------------------

def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _request_ref(request_id: Any) -> dict[str, Any]:
    """``{"requestId": …}`` for the audit record of a call that came with a JSON-RPC id: the one
    field that ties an answer a client holds to its record (time, tool and outcome do not)."""
    ref = _audited_id(request_id)
    return {} if ref is None else {"requestId": ref}


def _audited_id(request_id: Any) -> int | str | None:
    """The JSON-RPC id as the audit trail keeps it (``None``: no id worth keeping)."""
    if request_id is None or isinstance(request_id, bool):
        return None
    if isinstance(request_id, int):
        return request_id
    # Redacted first, then cut: a cut first could leave a piece of a secret too short for any shape.
    return redact_text(str(request_id))[:128]


def is_json(value: Any) -> bool:
    """Plain JSON data, nested at most ``MAX_ARGUMENT_DEPTH`` deep (in-process callers can pass anything)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_ARGUMENT_DEPTH:
            return False
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return False
        elif isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    return False
                stack.append((key, depth))
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif item is not None and not isinstance(item, (bool, int, float)):
            return False
    return True


def _declared_path(tool: Tool, path: str) -> str:
    """A field path fit for the audit trail: names the schema does not declare are client
    data (possibly a pasted secret) and are not written."""
    declared = tool.declared_fields
    parts = path.split("/") if path and path != "(root)" else []
    return "/".join(p if (p in declared or p.isdigit()) else "[undeclared]" for p in parts) or "(root)"


def _missing_path(tool: Tool, path: str) -> str:
    """A missing field's path fit to echo: the last part is a name the schema requires, the
    parts before it are checked like :func:`_declared_path`."""
    prefix, _, name = path.rpartition("/")
    return f"{_declared_path(tool, prefix)}/{name}" if prefix else name


def log_failure(tool: str, exc: BaseException) -> None:
    """The traceback of a tool's unexpected failure for the operator, redacted first (the client
    only hears a safe message; the audit keeps the exception's type)."""
    import traceback

    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    # Context and randomness as well as shapes: a tool's message may quote a password or a key as is.
    log.error("tool %s failed unexpectedly:\n%s", tool, redact_free_text(trace))

