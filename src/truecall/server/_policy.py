"""The policy stage: what a caller may do, decided in one place for every request that names something.

Every request that acts on a named thing passes here after authentication and before anything runs:

    tools/call            tenant → tool → scopes → rate limit → task support
    resources/read        resource → tenant → scopes → rate limit
    resources/subscribe   resource → tenant → scopes  (a listen stream's updates: the same, unrecorded)
    prompts/get           prompt → scopes → rate limit
    completion/complete   (a prompt's: prompt → scopes; a template's: template → scopes) → rate limit
    tasks/get|update|cancel|result      task → tenant → owner

A refusal is settled here: its record — the request's one final record (``audit.FINAL_KINDS``) —
is written, then the error is raised, so the way on carries no check.  What a request may see in a
listing (``Server.visible_*``) uses the same rule, ``scopes <= principal.scopes``; nothing else
tests a scope.

Refusals that would tell a caller something it may not know are answered alike: an unknown and a
forbidden resource are both "not found", so are an unknown prompt and one out of scope, so is a
task of another tenant or subject and one that never was (the record's ``reason`` tells them apart
for the operator).  A tool is the exception the protocol makes: its scope refusal names the scopes.

Why the wire never reaches some refusals: a request carries no tenant of its own — the principal's
tenant comes from its credential — so a tenant can only mismatch where a request *names* one: an
in-process ``call_tool(..., tenant=...)``, a resource URI with a ``{tenant}`` variable, a task (whose
owner is stored with it).  A prompt or a completion names no tenant, so none is checked for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from ..auth._principals import Principal
from ..errors import (InsufficientScope, InvalidParams, MethodNotFound, NotFound, ProtocolError, RateLimitExceeded,
                      TaskRequired, TenantMismatch, UnknownTool)
from ..audit.redaction import shown_uri
from ..tasks import Task
from ..tasks.task_store import TaskNotFound
from .tools import Prompt, Resource, ResourceTemplate, Tool

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["admit_tool", "admit_resource", "admit_subscription", "may_read", "admit_prompt", "admit_completion", "admit_task", "OverBudget",
           "TENANT_VARIABLE"]

#: A resource template variable of this name holds a tenant: a URI naming another tenant than the
#: caller's reads as not found (``resource.denied``, reason ``tenant_mismatch``), before the reader runs.
TENANT_VARIABLE = "tenant"


class OverBudget(Exception):
    """A tool call over the caller's rate limit: the pipeline settles it as a ``rate_limited`` tool
    error (``tool.rate_limited``), which a model can act on — unlike the other methods' refusals,
    a tool call's answer has a result that says so.  Raised, not returned: the admitted call (the
    hot path) then pays nothing for this way out."""

    __slots__ = ("tool", "retry_ms")

    def __init__(self, tool: Tool, retry_ms: int) -> None:
        self.tool, self.retry_ms = tool, retry_ms


# -- tools/call -------------------------------------------------------------------------------

def admit_tool(server: "Server", principal: Principal, name: Any, tenant: str | None, task_mode: str | None) -> Tool:
    """The tool ``name``, if ``principal`` may call it now: tenant, existence and scopes in an order
    that leaks nothing, then the rate limit (:class:`OverBudget`), then task support — whether the
    caller can take the task a ``task_support="required"`` tool answers with, and that a
    ``"forbidden"`` one is not asked for as a 2025-11-25 task.  Every other refusal is recorded,
    then raised."""
    if tenant is not None and tenant != principal.tenant:
        _deny_tool(server, TenantMismatch(), "tenant_mismatch", principal, name)
    tool = server.registry.tools.get(name) if isinstance(name, str) else None
    if tool is None:
        _deny_tool(server, UnknownTool(str(name)), "unknown_tool", principal, name)
    if not tool.scopes <= principal.scopes:
        _deny_tool(server, InsufficientScope(tool.scopes - principal.scopes), "insufficient_scope", principal, name)
    limit = server.rate_limit
    if limit is not None:
        wait_ms = limit.take(principal.tenant, principal.subject)
        if wait_ms:
            raise OverBudget(tool, int(wait_ms) + 1)
    if task_mode is None:
        if tool.task_support == "required":
            _deny_tool(server, TaskRequired(), "task_required", principal, name)
    elif task_mode == "core" and tool.task_support == "forbidden":
        # 2025-11-25: a client MUST NOT call such a tool as a task; the server SHOULD say -32601
        # (run as a plain call, the answer would not be the CreateTaskResult that was asked for).
        _deny_tool(server, MethodNotFound("This tool does not run as a task (execution.taskSupport is forbidden)"),
                   "task_forbidden", principal, name)
    return tool


def _deny_tool(server: "Server", error: ProtocolError, reason: str, principal: Principal, name: Any) -> NoReturn:
    server.events.record("tool.denied", tool=str(name)[:128], tenant=principal.tenant, subject=principal.subject,
                         reason=reason, outcome="denied")
    raise error


# -- resources/read ---------------------------------------------------------------------------

def admit_resource(server: "Server", principal: Principal,
                   uri: str) -> tuple[Resource | ResourceTemplate, dict[str, str]]:
    """The resource (and the template's variables) ``uri`` names, if ``principal`` may read it now.
    Unknown, another tenant's and out of scope are answered alike (:class:`NotFound`)."""
    found, refusal = _resource_verdict(server, principal, uri)
    if found is None or refusal is not None:
        _deny_resource(server, principal, uri, refusal or "unknown_resource")
    _spend(server, principal, "resource.rate_limited")
    return found


def admit_subscription(server: "Server", principal: Principal, uri: str) -> None:
    """``resources/subscribe``: only to a resource ``principal`` may read (unknown and forbidden
    alike, as for a read: a subscription that succeeded for a forbidden URI would say it exists,
    and its updates when it changes).  No rate limit: a subscription reads nothing."""
    refusal = _resource_verdict(server, principal, uri)[1]
    if refusal is not None:
        _deny_resource(server, principal, uri, refusal)


def may_read(server: "Server", principal: Principal, uri: str) -> bool:
    """Whether ``principal`` may read ``uri`` (nothing recorded): a change notification for a
    resource goes only to those who may (``subscriptions/listen`` takes any list of URIs)."""
    return _resource_verdict(server, principal, uri)[1] is None


def _resource_verdict(server: "Server", principal: Principal, uri: str
                      ) -> tuple[tuple[Resource | ResourceTemplate, dict[str, str]] | None, str | None]:
    """What ``uri`` names and why ``principal`` may not read it (``None``: it may)."""
    found = server.registry.find_resource(uri)
    if found is None:
        return None, "unknown_resource"
    res, params = found
    named = params.get(TENANT_VARIABLE)
    if named is not None and named != principal.tenant:
        return found, "tenant_mismatch"
    if not res.scopes <= principal.scopes:
        return found, "insufficient_scope"
    return found, None


def _deny_resource(server: "Server", principal: Principal, uri: str, reason: str) -> NoReturn:
    server.events.record("resource.denied", tenant=principal.tenant, subject=principal.subject, outcome="not_found",
                         reason=reason, arguments={"uri": uri})  # names nothing: only its keyed hash
    raise NotFound("Resource not found", {"uri": shown_uri(uri)})


# -- prompts/get, completion/complete ---------------------------------------------------------

def admit_prompt(server: "Server", principal: Principal, name: Any) -> Prompt:
    """The prompt ``name``, if ``principal`` may get it now (unknown and forbidden alike)."""
    prompt = _prompt_for(server, principal, name, f"Unknown prompt: {str(name)[:128]}")
    _spend(server, principal, "prompt.rate_limited", prompt=prompt.name)
    return prompt


def admit_completion(server: "Server", principal: Principal, ref: dict[str, Any],
                     context: dict[str, Any] | None) -> Prompt | None:
    """Whether ``principal`` may ask for completions of ``ref`` now, then the rate limit: a prompt's
    are the prompt's (unknown and forbidden alike, ``prompt.denied``), a resource template's the
    template's (``resource.denied``: its values — incident ids, say — are the template's data), and
    a ``{tenant}`` the ``context`` already resolved must be the caller's.  The prompt, if ``ref``
    names one."""
    kind = ref.get("type")
    prompt = None
    if kind == "ref/prompt":
        prompt = _prompt_for(server, principal, ref.get("name"), "Unknown prompt")
    elif kind == "ref/resource":
        uri = ref.get("uri")
        refusal = _template_refusal(server, principal, uri) if isinstance(uri, str) else "unknown_resource"
        resolved = context.get("arguments") if context is not None else None
        named = resolved.get(TENANT_VARIABLE) if isinstance(resolved, dict) else None
        if refusal is None and named is not None and named != principal.tenant:
            refusal = "tenant_mismatch"
        if refusal is not None:
            server.events.record("resource.denied", tenant=principal.tenant, subject=principal.subject,
                                 outcome="not_found", reason=refusal, arguments={"uri": str(uri)[:4096]})
            raise InvalidParams("Unknown resource")
    _spend(server, principal, "completion.rate_limited")
    return prompt


def _template_refusal(server: "Server", principal: Principal, uri: str) -> str | None:
    """Why ``principal`` may not complete the template (or resource) ``uri`` names (``None``: it may)."""
    for template in server.registry.templates:
        if template.uri_template == uri:
            return None if template.scopes <= principal.scopes else "insufficient_scope"
    return _resource_verdict(server, principal, uri)[1]


def _prompt_for(server: "Server", principal: Principal, name: Any, said: str) -> Prompt:
    prompt = server.registry.prompts.get(name) if isinstance(name, str) else None
    if prompt is None or not prompt.scopes <= principal.scopes:
        server.events.record("prompt.denied", tenant=principal.tenant, subject=principal.subject, outcome="denied",
                             reason="unknown_prompt" if prompt is None else "insufficient_scope",
                             prompt=str(name)[:128])
        raise InvalidParams(said)
    return prompt


# -- tasks/get, tasks/update, tasks/cancel, tasks/result ---------------------------------------

def admit_task(server: "Server", principal: Principal, task_id: str, task: Task | None) -> Task:
    """``task`` (read by ``task_id``, ``None``: no such task, or it expired), if it is ``principal``'s:
    of its tenant, then of its subject.  Another's answers exactly like an unknown one
    (:class:`~truecall.tasks.task_store.TaskNotFound`); the record says which (``task.denied``)."""
    if task is None:
        _deny_task(server, principal, task_id, "unknown_task")
    if task.owner_tenant != principal.tenant:
        _deny_task(server, principal, task_id, "tenant_mismatch")
    if task.owner_subject != principal.subject:
        _deny_task(server, principal, task_id, "not_owner")
    return task


def _deny_task(server: "Server", principal: Principal, task_id: str, reason: str) -> NoReturn:
    server.events.record("task.denied", tenant=principal.tenant, subject=principal.subject, outcome="not_found",
                         reason=reason, arguments={"taskId": task_id})  # another's id: only its keyed hash
    raise TaskNotFound()


# -- the rate limit ---------------------------------------------------------------------------

def _spend(server: "Server", principal: Principal, kind: str, **what: Any) -> None:
    """One request's worth of ``principal``'s budget (the same limiter as tool calls); over it, the
    refusal is recorded as ``kind`` and raised (:class:`RateLimitExceeded`, with ``retryAfterMs``)."""
    limit = server.rate_limit
    if limit is None:
        return
    wait_ms = limit.take(principal.tenant, principal.subject)
    if wait_ms:
        retry = int(wait_ms) + 1
        server.events.record(kind, tenant=principal.tenant, subject=principal.subject, outcome="rate_limited",
                             retryAfterMs=retry, **what)
        raise RateLimitExceeded.after(retry)
