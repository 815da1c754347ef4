"""The incident desk's MCP surface: tools, resources and prompts.

Built like any user's server: ``truecall.Server`` plus decorators, nothing private.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from truecall import ErrorKind, Principal, Server, StaticTokens, ToolResult, resource_link, text, tool_error

from .store import IncidentStore

__all__ = ["build_desk", "DEMO_TOKENS", "READ", "WRITE"]

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


def build_desk(db: str | None = None, *, tokens: StaticTokens | None = None, audit: bool = True) -> Server:
    """The desk on ``db`` (default: ``$TRUECALL_DB`` or ``.truecall/desk.db``)."""
    path = db or os.environ.get("TRUECALL_DB") or os.path.join(".truecall", "desk.db")
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

    @server.tool(
        "incident.search",
        title="Search incidents",
        description="Summaries of the caller's tenant's incidents for one service.",
        input_schema=SEARCH_INPUT,
        output_schema=SEARCH_OUTPUT,
        annotations={"readOnlyHint": True, "openWorldHint": False},
        scopes={READ},
    )
    def incident_search(ctx, service: str, includeLinks: bool = False) -> ToolResult:
        found = incidents.search(ctx.tenant, service)
        content = [text(f"{service}: {len(found)} 个已授权事件摘要")]
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
    )
    async def incident_escalate(ctx, incidentId: str) -> ToolResult:
        found = incidents.get(ctx.tenant, incidentId)
        if found is None:  # another tenant's incident reads exactly like a missing one
            return tool_error(ErrorKind.INVALID_INPUT, f"no incident {incidentId} for this tenant", field="incidentId")
        answer = await ctx.elicit(f"Escalate {found.incident_id} ({found.title}, now {found.severity})?",
                                  ESCALATE_FORM, key="escalation")
        if not answer.accepted:
            return tool_error(ErrorKind.DECLINED, f"the user did not accept ({answer.action.value}); "
                              f"{found.incident_id} is unchanged", incidentId=found.incident_id)
        updated = incidents.escalate(ctx.tenant, found.incident_id, answer.content["severity"],
                                     answer.content["reason"], ctx.principal.subject)
        assert updated is not None
        return ToolResult(
            [text(f"{updated.incident_id} escalated from {found.severity} to {updated.severity}"),
             resource_link(incident_uri(ctx.tenant, updated.incident_id), updated.incident_id, title=updated.title,
                           mime_type="application/json")],
            {"incidentId": updated.incident_id, "previousSeverity": found.severity, "severity": updated.severity},
        )

    @server.resource_template(
        "incident://{tenant}/{incident_id}",
        name="incident",
        title="Incident",
        description="One incident of the caller's tenant, as JSON.",
        mime_type="application/json",
        scopes={READ},
    )
    def read_incident(ctx, uri: str, tenant: str, incident_id: str) -> Any:
        if tenant != ctx.tenant:  # another tenant's incident reads exactly like a missing one
            return None
        found = incidents.get(ctx.tenant, incident_id)
        return None if found is None else orjson.dumps(found.to_dict()).decode()

    @server.prompt(
        "incident.triage",
        title="Triage an incident",
        description="Ask the assistant to triage the open incidents of a service.",
        arguments=[{"name": "service", "description": "Service name", "required": True}],
        scopes={READ},
        completions={"service": lambda prefix: [s for s in ("checkout", "payments", "search") if s.startswith(prefix)]},
    )
    def triage(ctx, service: str) -> list[dict[str, Any]]:
        return [{
            "role": "user",
            "content": {"type": "text", "text": f"Triage the open incidents of {service}. Use incident.search first; "
                        "report only what the tools confirm."},
        }]

    server.incidents = incidents  # type: ignore[attr-defined]
    return server
