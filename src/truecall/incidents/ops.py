"""Operator commands over a server's database: ``truecall tasks list|show|cancel`` and ``truecall reconcile``.

Tasks are read and changed through the public :class:`truecall.TaskStore` (a
cancel goes through its transition table, and a refusal names the current
status).  When the database is the incident desk's, the desk's records are shown
next to each task — its request, dispatch, ticket and settlement — and a cancel
of ``incident.handle`` first withdraws the job (see
:func:`~truecall.incidents.reconcile.fenced_cancel`).  Nothing here creates a
database: a missing path is an error.
"""

from __future__ import annotations

import os
import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from truecall import AuditLog, Database, InvalidTransition, Storage, Task, TaskNotFound, TaskStore

from .reconcile import CancelRefused, describe_settlement, describe_with_settlement, fenced_cancel, is_unknown, reconcile
from .tickets import TicketStore

__all__ = ["default_db", "open_db", "tasks_list", "tasks_show", "tasks_cancel", "run_reconcile", "OpsError"]


class OpsError(Exception):
    """A refusal or lookup failure, with the exit status it calls for."""

    def __init__(self, message: str, payload: dict[str, Any] | None = None, status: int = 1) -> None:
        super().__init__(message)
        self.payload = payload or {"error": message}
        self.status = status


def default_db() -> str:
    return os.environ.get("TRUECALL_DB") or os.path.join(".truecall", "desk.db")


def open_db(path: str | None) -> tuple[Storage, TaskStore, TicketStore | None, str]:
    """The database at ``path`` (a SQLite file, or a server URL such as ``postgresql://…``); never created."""
    resolved = path or default_db()
    if resolved.startswith("sqlite:///"):
        resolved = resolved[len("sqlite:///"):]
    if "://" in resolved:
        from truecall.storage import open_database  # the backend named by the URL

        db = open_database(resolved)
    elif not Path(resolved).is_file():
        raise OpsError(f"no database at {resolved} (set --db or TRUECALL_DB)", status=2)
    else:
        db = Database(resolved)
    resolved = shown(resolved)
    tickets = TicketStore(db, migrate=False) if TicketStore.present(db) else None
    return db, TaskStore(db), tickets, resolved


def shown(target: str) -> str:
    """A database name fit for output: a URL's password is never printed."""
    return re.sub(r"(://[^/:@]*):[^/@]*@", r"\1:***@", target)


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _outcome(task: Task) -> str:
    if task.status.value != "completed":
        return task.status.value
    result = task.result or {}
    if not result.get("isError"):
        return "ok"
    error = (result.get("structuredContent") or {}).get("error") or {}
    return str(error.get("kind") or "error")


def _summary(task: Task, tickets: TicketStore | None) -> dict[str, Any]:
    tenant = task.owner_tenant or ""
    out: dict[str, Any] = {
        "taskId": task.task_id,
        "status": task.status.value,
        "tool": task.tool,
        "owner": {"tenant": task.owner_tenant, "subject": task.owner_subject},
        "createdAt": iso(task.created_at),
        "updatedAt": iso(task.updated_at),
        "outcome": _outcome(task),
    }
    if task.status_message:
        out["statusMessage"] = task.status_message
    structured = (task.result or {}).get("structuredContent") or {}
    if isinstance(structured.get("ticketId"), str):
        out["ticketId"] = structured["ticketId"]
    if tickets is not None:
        settlement = tickets.settlement(tenant, task.task_id)
        if settlement is not None:
            out["settlement"] = settlement.to_dict()
        elif is_unknown(task):
            out["settlement"] = None  # unknown and not settled yet: run `truecall reconcile`
    return out


def _owner(owner: dict[str, Any]) -> str:
    """``subject (tenant)``, or ``-`` for a task nobody owns (never ``None``)."""
    if not owner.get("tenant") and not owner.get("subject"):
        return "-"
    return f"{cell(owner.get('subject'))} ({cell(owner.get('tenant'))})"


def _outcome_cell(row: dict[str, Any]) -> str:
    outcome = str(row["outcome"])
    if "ticketId" in row:
        outcome += f" (ticket {row['ticketId']})"
    if "settlement" in row:
        s = row["settlement"]
        if s is None:
            outcome += " — unsettled: run `truecall reconcile`"
        elif s["outcome"] == "ticket_exists":
            outcome += f" — settled: ticket {s['ticketId']} exists"
        else:
            outcome += " — settled: nothing happened"
    return outcome


# -- commands ----------------------------------------------------------------------------------


def tasks_list(path: str | None, *, status: str | None, tool: str | None, limit: int) -> dict[str, Any]:
    db, store, tickets, resolved = open_db(path)
    try:
        try:
            found = store.list(None, status=status, limit=100_000)
        except ValueError:
            raise OpsError(f"unknown status {status!r}: working, input_required, completed, failed or cancelled",
                           status=2) from None
        matching = [t for t in found if tool is None or t.tool == tool]
        shown = matching[-max(1, limit):]  # the newest ones, oldest first
        rows = [_summary(t, tickets) for t in shown]
        return {"database": resolved, "count": len(rows), "total": len(matching), "tasks": rows}
    finally:
        db.close()


def tasks_show(path: str | None, task_id: str) -> dict[str, Any]:
    db, store, tickets, resolved = open_db(path)
    try:
        try:
            task = store.get(task_id)
        except TaskNotFound:
            raise OpsError(f"no task {task_id} in {resolved}", {"taskId": task_id, "error": "Task not found"}) \
                from None
        out = _summary(task, tickets)
        view = task.to_dict()
        out["view"] = view
        out["expiresAt"] = iso(task.created_at + task.ttl_ms / 1000)
        settlement = None
        if tickets is not None:
            tenant = task.owner_tenant or ""
            req = tickets.request(tenant, task.task_id)
            if req is not None:
                out["request"] = {"idempotencyKey": req.idempotency_key, "incidentId": req.incident_id,
                                  "note": req.note, "dispatchId": req.dispatch_id}
                dispatch = tickets.dispatch(tenant, req.dispatch_id) if req.dispatch_id else None
                if dispatch is not None:
                    out["dispatch"] = dispatch.to_dict() | {"leaseUntil": iso(dispatch.lease_until),
                                                            "createdAt": iso(dispatch.created_at),
                                                            "updatedAt": iso(dispatch.updated_at)}
                ticket = tickets.ticket_for_key(tenant, req.idempotency_key)
                out["ticket"] = ticket.to_dict() | {"createdAt": iso(ticket.created_at)} if ticket else None
            settlement = tickets.settlement(tenant, task.task_id)
        out["describe"] = describe_with_settlement(view, settlement)  # what to tell the user, in TRUECALL_LANG
        return out
    finally:
        db.close()


def tasks_cancel(path: str | None, task_id: str) -> dict[str, Any]:
    db, store, tickets, resolved = open_db(path)
    try:
        try:
            done = fenced_cancel(store, tickets, task_id, message="cancelled by an operator (truecall tasks cancel)")
        except TaskNotFound:
            raise OpsError(f"no task {task_id} in {resolved}", {"taskId": task_id, "cancelled": False,
                                                                "error": "Task not found"}) from None
        except (InvalidTransition, CancelRefused) as exc:
            found = store.get(task_id)
            current = found.status.value
            _audit(db, "task.cancel_refused", found, outcome=current, reason=str(exc))
            raise OpsError(f"refused: {exc}", {"taskId": task_id, "cancelled": False, "status": current,
                                               "error": str(exc)}) from None
        task = done.task
        _audit(db, "task.cancel_requested" if done.requested else "task.cancelled", task,
               outcome=task.status.value, withdrawn=done.withdrawn)
        out: dict[str, Any] = {"taskId": task.task_id, "cancelled": not done.requested, "status": task.status.value}
        notes = []
        if done.withdrawn:
            notes.append("its job was withdrawn before any worker claimed it: nothing was written")
        if done.requested:
            out["cancelRequested"] = True
            notes.append("a live server process runs it and was asked to stop it; it settles the task itself "
                         "(check with `truecall tasks show`)")
        if notes:
            out["note"] = "; ".join(notes)
        return out
    finally:
        db.close()


def tasks_reseal(path: str | None) -> dict[str, Any]:
    """Seal every task's stored values again under the first key of ``TRUECALL_STATE_KEYS`` (after a
    rotation, before the old key is dropped); rows written in clear before sealing are sealed too."""
    db, store, _tickets, _resolved = open_db(path)
    try:
        return {"resealed": store.reseal()}
    finally:
        db.close()


def render_reseal(data: dict[str, Any], wide: bool = False) -> None:
    print(f"{data['resealed']} task(s) sealed again under the first key of TRUECALL_STATE_KEYS")


def run_reconcile(path: str | None) -> dict[str, Any]:
    db, store, tickets, resolved = open_db(path)
    try:
        if tickets is None:
            raise OpsError(f"{resolved} holds no incident desk tables: nothing to reconcile", status=2)
        report = reconcile(store, tickets, settled_by="truecall reconcile")
        log = AuditLog(db)
        for s in report.settled:
            log.record("desk.settled", tenant=s.tenant, subject=OPERATOR_SUBJECT, tool="incident.handle",
                       outcome=s.outcome, taskId=s.task_id, ticketId=s.ticket_id, dispatchId=s.dispatch_id)
        out = report.to_dict()
        out["database"] = resolved
        for item, s in zip(out["settled"], report.settled):
            item["describe"] = describe_settlement(s)
        return out
    finally:
        db.close()


OPERATOR_SUBJECT = "operator (truecall cli)"


def _audit(db: Any, kind: str, task: Task, **fields: Any) -> None:
    AuditLog(db).record(kind, tenant=task.owner_tenant, subject=OPERATOR_SUBJECT, tool=task.tool,
                        taskId=task.task_id, **fields)


# -- rendering -------------------------------------------------------------------------------------


#: Wide enough for any row: with ``--wide`` a table is as wide as its content, never cut.
_UNLIMITED = 100_000


def console(wide: bool = False) -> Any:
    """The operator console: the terminal's width (``$COLUMNS``, else 80 when not a terminal), or
    with ``wide`` as wide as the content needs (every column, nothing wrapped)."""
    from rich.console import Console

    return Console(width=_UNLIMITED if wide else None, highlight=False, soft_wrap=False, markup=False)


def print_table(wide_table: Any, narrow: Any, *, wide: bool = False, out: Any = None) -> None:
    """Print ``wide_table`` (every column on one line per row) when asked to or when it fits the
    console; else ``narrow()``, the same facts stacked in fewer columns that fold instead of
    cutting.  Nothing is ever truncated with an ellipsis."""
    from rich.measure import Measurement

    out = out or console(wide)
    needs = Measurement.get(out, out.options.update(max_width=_UNLIMITED), wide_table).maximum
    if not wide and needs > out.width:
        out.print(narrow())
        out.print("(narrow layout: --wide prints one line per row with every column)", style="dim")
        return
    out.print(wide_table)


def cell(value: Any) -> str:
    """A table cell: ``-`` for nothing (never ``None``), lists in brackets, mappings as compact JSON."""
    if value is None or value == "":
        return "-"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, dict):
        return orjson.dumps(value).decode()
    return str(value)


def fitted(values: Any, cap: int = 40) -> int:
    """A narrow column's width: its longest value (up to ``cap``), so that identifiers such as task
    ids or ``dependency_unavailable`` stay whole and the free-text column gives way instead."""
    return min(cap, max((len(line) for v in values for line in str(v).splitlines()), default=1))


def stacked(*lines: Any) -> str:
    """Several facts in one cell, one per line (missing ones left out)."""
    return "\n".join(str(line) for line in lines if line not in (None, ""))


def print_json(data: Any) -> None:
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")


def render_list(data: dict[str, Any], wide: bool = False) -> None:
    from rich import box
    from rich.table import Table

    title = f"tasks in {data['database']} (times UTC)"
    rows = []
    for row in data["tasks"]:
        owner = _owner(row["owner"])
        rows.append((row, owner))
    table = Table()
    for column in ("task", "tool", "owner", "status", "outcome", "updated"):
        table.add_column(column, no_wrap=True)
    for row, owner in rows:
        table.add_row(row["taskId"], cell(row["tool"]), owner, row["status"], _outcome_cell(row),
                      cell(row["updatedAt"]))

    def narrow() -> Any:
        stack = Table(box=box.SIMPLE_HEAD, leading=1, pad_edge=False)
        stack.add_column("task, tool, owner", overflow="fold",
                         width=fitted(v for row, owner in rows for v in (row["taskId"], row["tool"], owner)))
        stack.add_column("status, updated", no_wrap=True)
        stack.add_column("outcome", overflow="fold", ratio=1)
        for row, owner in rows:
            date, _, clock = cell(row["updatedAt"]).partition("T")
            stack.add_row(stacked(row["taskId"], cell(row["tool"]), owner), stacked(row["status"], date, clock),
                          _outcome_cell(row))
        return stack

    out = console(wide)
    out.print(title)
    print_table(table, narrow, wide=wide, out=out)
    more = f" (the newest of {data['total']})" if data["total"] > data["count"] else ""
    out.print(f"{data['count']} task(s){more}")


def render_show(data: dict[str, Any], wide: bool = False) -> None:
    from rich.table import Table

    table = Table(title=f"task {data['taskId']}", title_justify="left", show_header=False)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    rows: list[tuple[str, Any]] = [
        ("status", data["status"]),
        ("tool", data["tool"]),
        ("owner", _owner(data["owner"])),
        ("created", data["createdAt"]),
        ("updated", data["updatedAt"]),
        ("expires", data["expiresAt"]),
        ("status message", data.get("statusMessage")),
        ("outcome", _outcome_cell(data)),
    ]
    result = data["view"].get("result") or {}
    texts = [b.get("text") for b in result.get("content") or [] if b.get("type") == "text"]
    if texts:
        rows.append(("result text", " ".join(t for t in texts if t)))
    error = (result.get("structuredContent") or {}).get("error") if result.get("isError") else None
    if isinstance(error, dict):
        rows.append(("error kind", error.get("kind")))
        if error.get("reference"):
            rows.append(("reference", error["reference"]))
    if "request" in data:
        req = data["request"]
        rows.append(("idempotency key", req["idempotencyKey"]))
        rows.append(("incident", req["incidentId"] + (f" — note: {req['note']}" if req.get("note") else "")))
    if "dispatch" in data:
        d = data["dispatch"]
        rows.append(("dispatch", f"{d['dispatchId']}: {d['state']}" + (f" ({d['detail']})" if d.get("detail") else "")))
    if "ticket" in data:
        t = data["ticket"]
        rows.append(("ticket", f"{t['ticketId']} (notified: {', '.join(n['channel'] for n in t['notifications'])})"
                     if t else "none for this key"))
    if "settlement" in data:
        s = data["settlement"]
        rows.append(("settlement", "none yet — run `truecall reconcile`" if s is None else
                     f"{s['outcome']}" + (f" (ticket {s['ticketId']})" if s.get("ticketId") else "")
                     + f" — {s['detail']}; by {s['settledBy']} at {iso(s['settledAt'])}"))
    rows.append(("tell the user", data["describe"]))
    for name, value in rows:
        if value is not None:
            table.add_row(name, str(value))
    console(wide).print(table)


def render_cancel(data: dict[str, Any], wide: bool = False) -> None:
    line = f"cancelled {data['taskId']}" if data["cancelled"] else f"cancel requested for {data['taskId']} " \
        f"(still {data['status']})"
    if data.get("note"):
        line += f": {data['note']}"
    console(wide).print(line)


def render_reconcile(data: dict[str, Any], wide: bool = False) -> None:
    from rich import box
    from rich.table import Table

    out = console(wide)
    out.print(f"reconcile {data['database']}")
    out.print(f"examined {data['examined']} task(s) with an unknown outcome")
    out.print(f"{len(data['settled'])} settled now, {len(data['alreadySettled'])} settled before, "
              f"{len(data['pending'])} still pending")
    if data["settled"]:
        title = "settled (task results are unchanged; settlements are kept beside them)"
        table = Table(title=title, title_justify="left")
        for column in ("task", "outcome", "ticket", "detail"):
            table.add_column(column, no_wrap=True)
        for s in data["settled"]:
            table.add_row(s["taskId"], s["outcome"], cell(s.get("ticketId")), s["detail"])

        def narrow_settled() -> Any:
            stack = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, leading=1, pad_edge=False)
            stack.add_column("task, outcome, ticket", overflow="fold", width=fitted(
                v for s in data["settled"] for v in (s["taskId"], s["outcome"], s.get("ticketId") or "")))
            stack.add_column("detail", overflow="fold", ratio=1)
            for s in data["settled"]:
                stack.add_row(stacked(s["taskId"], s["outcome"], s.get("ticketId")), s["detail"])
            return stack

        print_table(table, narrow_settled, wide=wide, out=out)
    if data["pending"]:
        title = "pending (still unknown)"
        table = Table(title=title, title_justify="left")
        table.add_column("task", no_wrap=True)
        table.add_column("reason", no_wrap=True)
        for p in data["pending"]:
            table.add_row(p["taskId"], p["reason"])

        def narrow_pending() -> Any:
            stack = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
            stack.add_column("task", overflow="fold", width=fitted(p["taskId"] for p in data["pending"]))
            stack.add_column("reason", overflow="fold", ratio=1)
            for p in data["pending"]:
                stack.add_row(p["taskId"], p["reason"])
            return stack

        print_table(table, narrow_pending, wide=wide, out=out)
