"""The incident desk's MCP surface: tools, resources and prompts.

Built like any user's server: ``truecall.Server`` plus decorators, nothing private.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import orjson

from truecall import (ErrorKind, Principal, Server, SettingError, StaticTokens, ToolContext, ToolError, ToolResult,
                      resource_link, text, tool_error)
from truecall.storage import ENV_DB, default_path, off_loop_result
from truecall.texts import current_locale, say

from .faults import FaultPlan
from .handle import HANDLE_INPUT, HANDLE_OUTPUT, TOOL as HANDLE_TOOL, Handler, recover_hook
from .reconcile import describe_settlement, reconcile
from .store import IncidentStore
from .tickets import TicketStore, ticket_uri
from .upstream import Upstream

__all__ = ["build_desk", "DEMO_TOKENS", "READ", "WRITE", "ENV_TIMEOUT_MS", "ENV_CLAIM_LEASE_MS", "ENV_WORKERS"]

#: How long incident.handle waits for the upstream's ack (default 5000 ms).
ENV_TIMEOUT_MS = "TRUECALL_DESK_TIMEOUT_MS"
#: How long a worker's claim on a job holds before reconcile may fence it (default 30000 ms).
ENV_CLAIM_LEASE_MS = "TRUECALL_DESK_CLAIM_LEASE_MS"
#: Upstream worker count (default 4).
ENV_WORKERS = "TRUECALL_DESK_WORKERS"

READ = "incidents:read"
WRITE = "incidents:write"

#: Demo credentials for loopback only (the CLI refuses them on other addresses).
DEMO_TOKENS: dict[str, Principal] = {
    "demo-acme-reader": Principal("alice@acme", "acme", frozenset({READ})),
    "demo-acme-operator": Principal("newton@acme", "acme", frozenset({READ, WRITE})),
    "demo-globex-reader": Principal("grace@globex", "globex", frozenset({READ})),
}

SEARCH_INPUT = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "minLength": 1, "maxLength": 128, "description": "Service name, e.g. payments"},
        "includeLinks": {"type": "boolean", "description": "Also return a resource link per incident"},
    },
    "required": ["service"],
    "additionalProperties": False,
}

SEARCH_OUTPUT = {
    "type": "object",
    "properties": {
        "service": {"type": "string"},
        "count": {"type": "integer", "minimum": 0},
        "tenant": {"type": "string"},
    },
    "required": ["service", "count", "tenant"],
    "additionalProperties": False,
}


ESCALATE_INPUT = {
    "type": "object",
    "properties": {"incidentId": {"type": "string", "minLength": 1, "maxLength": 64}},
    "required": ["incidentId"],
    "additionalProperties": False,
}

ESCALATE_OUTPUT = {
    "type": "object",
    "properties": {
        "incidentId": {"type": "string"},
        "previousSeverity": {"type": "string"},
        "severity": {"type": "string"},
    },
    "required": ["incidentId", "previousSeverity", "severity"],
    "additionalProperties": False,
}

#: The elicitation form: flat, primitives only, no credentials (form mode's rules).
ESCALATE_FORM = {
    "type": "object",
    "properties": {
        "severity": {"type": "string", "title": "New severity", "enum": ["P1", "P2", "P3"]},
        "reason": {"type": "string", "title": "Reason", "minLength": 1, "maxLength": 500},
    },
    "required": ["severity", "reason"],
}


def incident_uri(tenant: str, incident_id: str) -> str:
    return f"incident://{tenant}/{incident_id}"


RECONCILE_INPUT = {
    "type": "object",
    "properties": {"taskId": {"type": "string", "minLength": 1, "maxLength": 128,
                              "description": "Only this task (default: all of yours)"}},
    "additionalProperties": False,
}

RECONCILE_OUTPUT = {
    "type": "object",
    "properties": {
        "examined": {"type": "integer", "minimum": 0},
        "settled": {"type": "array", "items": {"type": "object"}},
        "pending": {"type": "array", "items": {"type": "object"}},
        "alreadySettled": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["examined", "settled", "pending", "alreadySettled"],
    "additionalProperties": False,
}


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingError(f"{name} must be a number, not {raw!r}") from None
    if value <= 0:
        raise SettingError(f"{name} must be positive, not {raw!r}")
    return value


def build_desk(db: str | None = None, *, tokens: StaticTokens | None = None, audit: bool = True,
               faults: FaultPlan | dict[str, Any] | str | None = None, ack_timeout_s: float | None = None,
               claim_lease_s: float | None = None, workers: int | None = None) -> Server:
    """The desk on ``db`` (default: ``$TRUECALL_DB`` or ``.truecall/desk.db``).

    The upstream queue's faults, timeout, claim lease and workers come from the
    arguments or, when omitted, from ``$TRUECALL_DESK_FAULTS`` (JSON, see
    :mod:`truecall.incidents.faults`), ``$TRUECALL_DESK_TIMEOUT_MS``,
    ``$TRUECALL_DESK_CLAIM_LEASE_MS`` and ``$TRUECALL_DESK_WORKERS``.
    """
    locale = current_locale()  # TRUECALL_LANG, checked now: a bad value stops the start, not a call
    path = db or os.environ.get(ENV_DB) or default_path()
    plan = faults if isinstance(faults, FaultPlan) else (FaultPlan(faults) if faults is not None
                                                         else FaultPlan.from_env())
    timeout_s = ack_timeout_s if ack_timeout_s is not None else _env_number(ENV_TIMEOUT_MS, 5000) / 1000
    lease_s = claim_lease_s if claim_lease_s is not None else _env_number(ENV_CLAIM_LEASE_MS, 30000) / 1000
    n_workers = workers if workers is not None else int(_env_number(ENV_WORKERS, 4))
    server = Server(
        "truecall-incident-desk",
        "0.1.0",
        title="Incident desk",
        instructions="Search and handle incidents. Results say exactly what happened; accepted work is a task.",
        tokens=tokens if tokens is not None else StaticTokens.from_plain(DEMO_TOKENS),
        db=path,
        audit=audit,
    )
    server.local_principal = DEMO_TOKENS["demo-acme-operator"]
    server.demo_credentials = tokens is None
    incidents = IncidentStore(server.db)
    tickets = TicketStore(server.db)
    desk_db = server.db  # (these tools' statements run off the event loop on a server database: storage.off_loop)
    server.events.history.append(tickets.forget_history)  # with the trail's retention age

    def upstream_event(kind: str, fields: dict[str, Any]) -> None:
        server.events.record(kind, outcome="ok" if kind == "upstream.ticket_written" else "error", **fields)

    upstream = Upstream(tickets, plan, workers=n_workers, claim_lease_s=lease_s, on_event=upstream_event)
    handler = Handler(incidents, tickets, upstream, timeout_s=timeout_s, tasks=server.tasks)

    @server.tool(
        "incident.search",
        title="Search incidents",
        description="Summaries of the caller's tenant's incidents for one service.",
        input_schema=SEARCH_INPUT,
        output_schema=SEARCH_OUTPUT,
        annotations={"readOnlyHint": True, "openWorldHint": False},
        scopes={READ},
    )
    async def incident_search(ctx: ToolContext, service: str, includeLinks: bool = False) -> ToolResult:
        found = await off_loop_result(desk_db, incidents.search, ctx.tenant, service)
        content = [text(say("desk.search.summary", locale, count=len(found), service=service))]
        if includeLinks:
            content += [
                resource_link(incident_uri(i.tenant, i.incident_id), i.incident_id, title=i.title,
                              mime_type="application/json")
                for i in found
            ]
        return ToolResult(content, {"service": service, "count": len(found), "tenant": ctx.tenant})

    @server.tool(
        "incident.escalate",
        title="Escalate an incident",
        description="Change an incident's severity. Asks the user for the new severity and a reason first; "
                    "nothing changes unless the user accepts.",
        input_schema=ESCALATE_INPUT,
        output_schema=ESCALATE_OUTPUT,
        annotations={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False,
                     "openWorldHint": False},
        scopes={WRITE},
        # the question it asks (id and severity filled in at run time), linted at registration
        forms=[("Escalate INC-1001 (now P2)? Choose the new severity and give a reason.", ESCALATE_FORM)],
    )
    async def incident_escalate(ctx: ToolContext, incidentId: str) -> ToolResult:
        found = await off_loop_result(desk_db, incidents.get, ctx.tenant, incidentId)
        if found is None:  # another tenant's incident reads exactly like a missing one
            raise ToolError("no such incident for this tenant", field="incidentId")
        # Only fixed text and the incident's id and severity go into the question: free text
        # (a title) is data, and data must never decide what a form may ask.
        answer = await ctx.elicit(f"Escalate {found.incident_id} (now {found.severity})? Choose the new severity "
                                  "and give a reason.",
                                  ESCALATE_FORM, key="escalation")
        if not answer.accepted:
            return tool_error(ErrorKind.DECLINED, f"the user did not accept ({answer.action.value}); "
                              f"{found.incident_id} is unchanged", incidentId=found.incident_id)
        updated = await off_loop_result(desk_db, incidents.escalate, ctx.tenant, found.incident_id,
                                        answer.content["severity"], answer.content["reason"], ctx.principal.subject)
        assert updated is not None
        return ToolResult(
            [text(f"{updated.incident_id} escalated from {found.severity} to {updated.severity}"),
             resource_link(incident_uri(ctx.tenant, updated.incident_id), updated.incident_id, title=updated.title,
                           mime_type="application/json")],
            {"incidentId": updated.incident_id, "previousSeverity": found.severity, "severity": updated.severity},
        )

    @server.tool(
        HANDLE_TOOL,
        title="Handle an incident: open a ticket and notify on-call",
        description="Opens a ticket for one of your tenant's incidents through the upstream ticket queue and "
                    "notifies on-call. Runs only as a task: the immediate answer is a task handle (accepted, NOT "
                    "done). The task completes with ticketId and notified=true only once the ticket and the "
                    "notification exist; dependency_unavailable means nothing was written (retry later); "
                    "outcome_unknown means check first (reference = the idempotencyKey). Reuse the same "
                    "idempotencyKey to retry safely: it never creates a second ticket.",
        input_schema=HANDLE_INPUT,
        output_schema=HANDLE_OUTPUT,
        annotations={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
                     "openWorldHint": True},
        scopes={WRITE},
        task_support="required",
        recover=recover_hook(tickets),  # a task whose process died: the ticket table says what happened
    )
    async def incident_handle(ctx: ToolContext, incidentId: str, idempotencyKey: str | None = None,
                              note: str | None = None) -> ToolResult:
        return await handler(ctx, incidentId, idempotencyKey, note)

    @server.tool(
        "incident.reconcile",
        title="Reconcile unknown outcomes",
        description="Settles your incident.handle tasks whose result was outcome_unknown against the ticket "
                    "table: 'ticket_exists' (with the ticketId) or 'nothing_happened' (no ticket, and the job is "
                    "withdrawn so none can be written). Task results are never rewritten: each settlement is "
                    "recorded next to its task. A job a worker still holds stays pending.",
        input_schema=RECONCILE_INPUT,
        output_schema=RECONCILE_OUTPUT,
        annotations={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
                     "openWorldHint": False},
        scopes={WRITE},
    )
    async def incident_reconcile(ctx: ToolContext, taskId: str | None = None) -> ToolResult:
        try:
            report = await off_loop_result(desk_db, reconcile, server.tasks, tickets, owner=ctx.principal,
                                           task_id=taskId, settled_by=f"incident.reconcile:{ctx.principal.subject}")
        except LookupError:  # another owner's task reads exactly like an unknown one
            raise ToolError(f"no task {taskId} of yours", field="taskId") from None
        for s in report.settled:
            server.events.record("desk.settled", tenant=s.tenant, subject=ctx.principal.subject, tool=HANDLE_TOOL,
                                 outcome=s.outcome, taskId=s.task_id, ticketId=s.ticket_id, dispatchId=s.dispatch_id)
        lines = [f"{s.task_id}: {describe_settlement(s, locale)}" for s in [*report.settled, *report.already_settled]]
        lines += [f"{p['taskId']}: still unknown — {p['reason']}" for p in report.pending]
        head = (f"Examined {report.examined} task(s) with an unknown outcome: {len(report.settled)} settled now, "
                f"{len(report.already_settled)} settled before, {len(report.pending)} still pending.")
        content = [text("\n".join([head, *lines]))]
        content += [resource_link(ticket_uri(ctx.tenant, s.ticket_id), s.ticket_id, mime_type="application/json")
                    for s in [*report.settled, *report.already_settled] if s.ticket_id]
        return ToolResult(content, report.to_dict())

    @server.resource_template(
        "ticket://{tenant}/{ticket_id}",
        name="ticket",
        title="Ticket",
        description="One ticket of the caller's tenant with its notifications, as JSON.",
        mime_type="application/json",
        scopes={READ},
    )
    async def read_ticket(tenant: str, ticket_id: str, ctx: ToolContext) -> str | None:
        # ({tenant} is the caller's: another tenant's ticket was refused as missing before this runs)
        found = await off_loop_result(desk_db, tickets.ticket, ctx.tenant, ticket_id)
        return None if found is None else orjson.dumps(found.to_dict()).decode()

    @server.resource_template(
        "incident://{tenant}/{incident_id}",
        name="incident",
        title="Incident",
        description="One incident of the caller's tenant, as JSON.",
        mime_type="application/json",
        scopes={READ},
    )
    async def read_incident(tenant: str, incident_id: str, ctx: ToolContext) -> str | None:
        # ({tenant} is the caller's: another tenant's incident was refused as missing before this runs)
        found = await off_loop_result(desk_db, incidents.get, ctx.tenant, incident_id)
        return None if found is None else orjson.dumps(found.to_dict()).decode()

    @server.prompt(
        "incident.triage",
        title="Triage an incident",
        description="Ask the assistant to triage the open incidents of a service.",
        scopes={READ},
        completions={"service": lambda prefix: [s for s in ("checkout", "payments", "search") if s.startswith(prefix)]},
    )
    def triage(service: Annotated[str, "Service name"]) -> str:
        return (f"Triage the open incidents of {service}. Use incident.search first; "
                "report only what the tools confirm.")

    # For operators' tools and tests: the desk's own stores and its upstream queue.
    server.state.incidents = incidents
    server.state.tickets = tickets
    server.state.upstream = upstream
    return server
