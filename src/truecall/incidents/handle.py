"""``incident.handle``: accept, hand the job to the upstream, and say only what the ticket table proves.

The tool's whole life, and what each ending may claim:

1. validate (unknown incident, key used with other arguments → ``invalid_input``,
   no task);
2. ``await ctx.accept_as_task()`` — the caller now holds a task: *accepted, not done*;
3. record the request and a dispatch in one transaction (or attach to the key's
   live dispatch, or find the key's ticket);
4. wait for the upstream's ack, at most ``timeout``;
5. ask the database, fenced (:meth:`TicketStore.settle_wait`):

   ======================================  ==========================================
   the truth after waiting                 the task's result
   ======================================  ==========================================
   a ticket exists for the key             success: ticketId, ``notified: true``, link
   still queued → abandoned now            ``dependency_unavailable``: nothing written
   abandoned / failed                      ``dependency_unavailable``: nothing written
   claimed (a worker holds it)             ``outcome_unknown``, reference = the key
   ======================================  ==========================================

The ack only decides how long we wait, never what we say.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any, Callable

from truecall import ErrorKind, LeaseLost, ToolResult, resource_link, text, tool_error
from truecall.audit.redaction import redact_text
from truecall.storage import Storage, off_loop, off_loop_result, unavailable

from .dispatch_state import DispatchState
from .tickets import KeyConflict, Ticket, TicketStore
from .upstream import Job, Upstream

__all__ = ["HANDLE_INPUT", "HANDLE_OUTPUT", "TOOL", "Handler", "new_key", "ticket_result", "unavailable_result",
           "unknown_result", "CHECK_HINT"]

TOOL = "incident.handle"

KEY_PATTERN = r"^[A-Za-z0-9._:\-]{1,128}$"

HANDLE_INPUT = {
    "type": "object",
    "properties": {
        "incidentId": {"type": "string", "minLength": 1, "maxLength": 64, "description": "The incident to handle"},
        "idempotencyKey": {"type": "string", "pattern": KEY_PATTERN,
                           "description": "Your key for this request: the same key with the same arguments never "
                                          "makes a second ticket. Omit it and one is generated and returned."},
        "note": {"type": "string", "maxLength": 500, "description": "A note for the ticket and the notification"},
    },
    "required": ["incidentId"],
    "additionalProperties": False,
}

HANDLE_OUTPUT = {
    "type": "object",
    "properties": {
        "incidentId": {"type": "string"},
        "ticketId": {"type": "string"},
        "notified": {"type": "boolean", "const": True},
        "idempotencyKey": {"type": "string"},
        "replayed": {"type": "boolean", "description": "The ticket existed before this call (same key)"},
    },
    "required": ["incidentId", "ticketId", "notified", "idempotencyKey", "replayed"],
    "additionalProperties": False,
}

CHECK_HINT = ("check whether a ticket exists for this idempotencyKey: run incident.reconcile (or `truecall "
              "reconcile`), or call incident.handle again with the SAME idempotencyKey — it returns the ticket if "
              "one exists and never creates a second; do not retry with a new key")


def new_key() -> str:
    return "ik-" + secrets.token_urlsafe(18)


def ticket_result(ticket: Ticket, *, replayed: bool) -> ToolResult:
    channels = ", ".join(sorted({n.channel for n in ticket.notifications}))
    said = (f"Ticket {ticket.ticket_id} already existed for {ticket.incident_id} (same idempotencyKey); "
            f"on-call was notified ({channels}) when it was opened." if replayed else
            f"Ticket {ticket.ticket_id} opened for {ticket.incident_id}; on-call notified ({channels}).")
    return ToolResult(
        [text(said), resource_link(ticket.uri(), ticket.ticket_id, title=f"Ticket {ticket.ticket_id} for "
                                   f"{ticket.incident_id}", mime_type="application/json")],
        {"incidentId": ticket.incident_id, "ticketId": ticket.ticket_id, "notified": True,
         "idempotencyKey": ticket.idempotency_key, "replayed": replayed},
    )


def unavailable_result(incident_id: str | None, key: str | None, dispatch_id: str | None, why: str) -> ToolResult:
    details: dict[str, Any] = {}
    if incident_id is not None:
        details["incidentId"] = incident_id
    if key is not None:
        details["idempotencyKey"] = key
    if dispatch_id is not None:
        details["dispatchId"] = dispatch_id
    subject = f" for {incident_id}" if incident_id else ""
    return tool_error(
        ErrorKind.DEPENDENCY_UNAVAILABLE,
        f"No ticket was opened{subject}: {why}. Nothing was written and nothing can be written for this "
        "attempt any more; retry later" + (" with the same idempotencyKey." if key else "."),
        **details,
    )


def unknown_result(incident_id: str, key: str, dispatch_id: str, why: str) -> ToolResult:
    return tool_error(
        ErrorKind.OUTCOME_UNKNOWN,
        f"Whether a ticket was opened for {incident_id} is unknown: {why}. A worker holds the job "
        f"(dispatch {dispatch_id}) and may still write the ticket; {CHECK_HINT}.",
        reference=key, incidentId=incident_id, idempotencyKey=key, dispatchId=dispatch_id, check=CHECK_HINT,
    )


class Handler:
    """The tool's logic, bound to the desk's stores and upstream."""

    def __init__(self, incidents: Any, tickets: TicketStore, upstream: Upstream, *, timeout_s: float,
                 tasks: Any) -> None:
        self.incidents = incidents
        self.tickets = tickets
        self.upstream = upstream
        self.timeout_s = timeout_s
        self.tasks = tasks

    async def __call__(self, ctx: Any, incidentId: str, idempotencyKey: str | None = None,
                       note: str | None = None) -> ToolResult:
        tenant = ctx.tenant
        key = idempotencyKey or new_key()
        started = time.time()

        try:
            # The first statements too run off the event loop (a server database): one that stops answering
            # holds up this call, which ends as the outage once the wait's bound passes, not the process.
            found = await off_loop_result(self.incidents.db, self.incidents.get, tenant, incidentId)
            if found is None:  # another tenant's incident reads exactly like a missing one
                return tool_error(ErrorKind.INVALID_INPUT, "no such incident for this tenant", field="incidentId")
            await off_loop_result(self.tickets.db, self.tickets.bind_key, tenant, key, incidentId, note)
            task = await ctx.accept_as_task(f"ticket requested for {incidentId}; accepted, not done yet")
        except KeyConflict:
            return tool_error(ErrorKind.INVALID_INPUT, "this idempotencyKey was already used with other arguments "
                              "(incidentId or note); use a new key for a different request", field="idempotencyKey")
        except Exception as exc:  # the database did not answer in time: nothing was accepted, nothing written
            why = unavailable(exc)
            if why is None:
                raise
            return unavailable_result(incidentId, key, None, why)
        task_id = task.task_id if task is not None else "inline-" + secrets.token_hex(8)
        # The note is a business field, kept as written in the request, the dispatch and the ticket's
        # notification — less any secret redaction recognises in it (its fingerprint hashed the note as sent).
        note = redact_text(note) if note is not None else None
        # Every write made for this task checks its lease first, in the same transaction: once
        # another process took the task over (this one froze past its lease), nothing is written.
        fence = ctx.lease_check()

        def still_wanted() -> bool:
            if task is None:
                return True
            try:
                return not self.tasks.get(task_id).terminal
            except LookupError:
                return False

        try:
            opened, cancelled = await off_loop(self.tickets.db, self.tickets.open_request, tenant,
                                               ctx.principal.subject, task_id, key, incidentId, note,
                                               still_wanted=still_wanted, fence=fence)
        except LeaseLost:
            raise
        except Exception as exc:  # the transaction rolled back: nothing was handed over, nothing written
            why = unavailable(exc) or "the desk could not record the request"
            return unavailable_result(incidentId, key, None, why)
        if opened.gone:
            raise asyncio.CancelledError()
        if opened.ticket is not None:
            return ticket_result(opened.ticket, replayed=True)
        dispatch_id = opened.dispatch_id
        assert dispatch_id is not None
        # Handed over: from here on any failure means "it may have happened".
        try:
            if cancelled:  # cancelled while the request was being recorded: the job never went out
                return await self._on_cancel(tenant, incidentId, key, dispatch_id, started, fence)
            if opened.new:
                ack = self.upstream.submit(Job(tenant, dispatch_id, incidentId, found.title, note, fence, key))
            else:
                ack = self.upstream.waiter(dispatch_id)
            try:
                try:
                    await asyncio.wait({ack}, timeout=self.timeout_s)
                except asyncio.CancelledError:
                    return await self._on_cancel(tenant, incidentId, key, dispatch_id, started, fence)
                return await self.conclude(tenant, incidentId, key, dispatch_id, started=started, fence=fence)
            finally:
                self.upstream.forget(dispatch_id)
        except (LeaseLost, asyncio.CancelledError):
            raise
        except Exception as exc:
            why = unavailable(exc) or "the desk could not read the outcome back"
            return unknown_result(incidentId, key, dispatch_id, f"{why} after the job was handed to the upstream")

    async def conclude(self, tenant: str, incident_id: str, key: str, dispatch_id: str, *, started: float,
                       why_unknown: str | None = None, fence: Callable[[], None] | None = None) -> ToolResult:
        """What may be said now, from the fenced database state."""
        (state, ticket), _ = await off_loop(self.tickets.db, self.tickets.settle_wait, tenant, dispatch_id, key, fence)
        if ticket is not None and ticket.notified:
            return ticket_result(ticket, replayed=ticket.created_at < started)
        if ticket is not None:  # cannot happen: ticket and notification share one transaction
            return unknown_result(incident_id, key, dispatch_id, "the ticket exists but its notification is missing")
        ms = round(self.timeout_s * 1000)
        if state is DispatchState.ABANDONED:
            withdrawn, _ = await off_loop(self.tickets.db, self.tickets.dispatch, tenant, dispatch_id)
            detail = withdrawn.detail if withdrawn is not None and withdrawn.detail else "withdrawn"
            return unavailable_result(incident_id, key, dispatch_id,
                                      f"the upstream did not complete the job within {ms} ms and it was withdrawn "
                                      f"before anything was written ({detail})")
        if state is DispatchState.FAILED:
            return unavailable_result(incident_id, key, dispatch_id,
                                      "the ticket system reported an error before writing anything")
        if state is DispatchState.CLAIMED:
            return unknown_result(incident_id, key, dispatch_id,
                                  why_unknown or f"a worker claimed the job but did not confirm within {ms} ms")
        return unknown_result(incident_id, key, dispatch_id, f"the dispatch is {state.value} but no ticket was found")

    async def _on_cancel(self, tenant: str, incident_id: str, key: str, dispatch_id: str, started: float,
                         fence: Callable[[], None] | None) -> ToolResult:
        """Cancelled while waiting: stop only what can be stopped, and say what could not."""
        (state, ticket), _ = await off_loop(self.tickets.db, self.tickets.settle_wait, tenant, dispatch_id, key, fence)
        if ticket is not None or state is DispatchState.CLAIMED or state is DispatchState.DONE:
            # Too late to stop: the ticket exists, or a worker holds the job. The task completes with that truth.
            return await self.conclude(tenant, incident_id, key, dispatch_id, started=started, fence=fence,
                                       why_unknown="the task was cancelled after a worker had claimed the job; "
                                                   "cancelling cannot stop it")
        raise asyncio.CancelledError()  # withdrawn (or failed): nothing was written → the task is cancelled


def recover_hook(tickets: TicketStore) -> Callable[[Any], ToolResult]:
    """The ``recover=`` of ``incident.handle``: settle a task whose process died.

    The in-memory queue died with the process, so a job still ``queued`` is abandoned.  It runs
    after the task was taken over (its lease epoch moved on), so a runner that was only frozen
    can no longer add a request, claim the job or write the ticket: what it finds is final.
    """

    def recover(task: Any) -> ToolResult:
        tenant = task.owner_tenant or ""
        req = tickets.request(tenant, task.task_id)
        if req is None or req.dispatch_id is None:  # and never will be: the task was taken over first
            return unavailable_result(None, None, None,
                                      "the server stopped (or stopped responding) before the job was handed to the "
                                      "upstream queue")
        state, ticket = tickets.settle_wait(tenant, req.dispatch_id, req.idempotency_key)
        if ticket is not None and ticket.notified:
            return ticket_result(ticket, replayed=ticket.created_at < req.created_at)
        if state is DispatchState.ABANDONED:
            return unavailable_result(req.incident_id, req.idempotency_key, req.dispatch_id,
                                      "the server stopped before any worker claimed the job (the queue lost it)")
        if state is DispatchState.FAILED:
            return unavailable_result(req.incident_id, req.idempotency_key, req.dispatch_id,
                                      "the ticket system reported an error before writing anything")
        return unknown_result(req.incident_id, req.idempotency_key, req.dispatch_id,
                              "the server stopped while a worker held the job")

    return recover
