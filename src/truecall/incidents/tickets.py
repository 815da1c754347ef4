"""The ticket system and its upstream queue's records, in the desk's database.

Tables (every query takes the tenant):

- ``tickets`` — the ground truth: a ticket exists or it does not.
  ``UNIQUE (tenant, idempotency_key)``: one ticket per key, ever.
- ``notifications_outbox`` — the on-call notification, written in the same
  transaction as its ticket (a ticket without its notification cannot exist).
- ``dispatches`` — the upstream queue's jobs; states move only through
  :mod:`.dispatch_state`.  A partial unique index allows at most one dispatch per
  key that is live or done, so two callers with one key can never start two jobs.
- ``idempotency_keys`` — what each key was first used for: the same key with
  other arguments is refused.
- ``handle_requests`` — the desk's own record of an ``incident.handle`` task
  (task id → key, arguments, dispatch), written when the job is handed over; the
  task row itself only knows the tool's name.
- ``settlements`` — what reconcile found out about a task whose result was
  ``outcome_unknown``.  A completed task's result is never rewritten: the
  settlement is a separate, dated row next to it.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any, Callable

import orjson

from truecall import Storage
from truecall.storage import at_rest_for, delete_batched

from .dispatch_state import DispatchEvent, DispatchState, InvalidDispatchTransition, next_dispatch_state

__all__ = [
    "TICKET_MIGRATIONS",
    "Ticket",
    "Notification",
    "Dispatch",
    "HandleRequest",
    "Settlement",
    "TicketStore",
    "KeyConflict",
    "Opened",
    "TICKET_EXISTS",
    "NOTHING_HAPPENED",
]

TICKET_EXISTS = "ticket_exists"
NOTHING_HAPPENED = "nothing_happened"

TICKET_MIGRATIONS = [
    (
        "desk-tickets-1",
        """
        CREATE TABLE tickets (
            tenant TEXT NOT NULL,
            ticket_id TEXT NOT NULL,
            incident_id TEXT NOT NULL,
            idempotency_key TEXT NOT NULL,
            dispatch_id TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (tenant, ticket_id),
            UNIQUE (tenant, idempotency_key),
            UNIQUE (tenant, dispatch_id)
        );
        CREATE TABLE notifications_outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            tenant TEXT NOT NULL,
            ticket_id TEXT NOT NULL,
            channel TEXT NOT NULL,
            body TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        CREATE INDEX notifications_outbox_ticket ON notifications_outbox (tenant, ticket_id);
        CREATE TABLE dispatches (
            tenant TEXT NOT NULL,
            dispatch_id TEXT NOT NULL,
            idempotency_key TEXT NOT NULL,
            incident_id TEXT NOT NULL,
            note TEXT,
            state TEXT NOT NULL CHECK (state IN ('queued', 'claimed', 'done', 'abandoned', 'failed')),
            claim_token TEXT,
            lease_until REAL,
            detail TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (tenant, dispatch_id)
        );
        CREATE UNIQUE INDEX dispatches_one_live_per_key ON dispatches (tenant, idempotency_key)
            WHERE state IN ('queued', 'claimed', 'done');
        CREATE INDEX dispatches_key ON dispatches (tenant, idempotency_key);
        CREATE TABLE idempotency_keys (
            tenant TEXT NOT NULL,
            idempotency_key TEXT NOT NULL,
            fingerprint BLOB NOT NULL,
            incident_id TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (tenant, idempotency_key)
        );
        CREATE TABLE handle_requests (
            tenant TEXT NOT NULL,
            task_id TEXT NOT NULL,
            subject TEXT NOT NULL,
            idempotency_key TEXT NOT NULL,
            incident_id TEXT NOT NULL,
            note TEXT,
            dispatch_id TEXT,
            created_at REAL NOT NULL,
            PRIMARY KEY (tenant, task_id)
        );
        CREATE TABLE settlements (
            tenant TEXT NOT NULL,
            task_id TEXT NOT NULL,
            dispatch_id TEXT,
            idempotency_key TEXT,
            outcome TEXT NOT NULL CHECK (outcome IN ('ticket_exists', 'nothing_happened')),
            ticket_id TEXT,
            detail TEXT NOT NULL,
            settled_by TEXT NOT NULL,
            settled_at REAL NOT NULL,
            PRIMARY KEY (tenant, task_id)
        )
        """,
    ),
]


class KeyConflict(ValueError):
    """The idempotency key was first used with other arguments."""


@dataclass(frozen=True, slots=True)
class Notification:
    channel: str
    body: str
    created_at: float


@dataclass(frozen=True, slots=True)
class Ticket:
    tenant: str
    ticket_id: str
    incident_id: str
    idempotency_key: str
    dispatch_id: str
    created_at: float
    notifications: tuple[Notification, ...] = ()

    @property
    def notified(self) -> bool:
        return bool(self.notifications)

    def uri(self) -> str:
        return ticket_uri(self.tenant, self.ticket_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ticketId": self.ticket_id,
            "incidentId": self.incident_id,
            "idempotencyKey": self.idempotency_key,
            "dispatchId": self.dispatch_id,
            "createdAt": self.created_at,
            "notifications": [{"channel": n.channel, "body": n.body, "createdAt": n.created_at}
                              for n in self.notifications],
        }


def ticket_uri(tenant: str, ticket_id: str) -> str:
    return f"ticket://{tenant}/{ticket_id}"


@dataclass(frozen=True, slots=True)
class Dispatch:
    tenant: str
    dispatch_id: str
    idempotency_key: str
    incident_id: str
    note: str | None
    state: DispatchState
    claim_token: str | None
    lease_until: float | None
    detail: str | None
    created_at: float
    updated_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"dispatchId": self.dispatch_id, "state": self.state.value, "idempotencyKey": self.idempotency_key,
                "incidentId": self.incident_id, "leaseUntil": self.lease_until, "detail": self.detail,
                "createdAt": self.created_at, "updatedAt": self.updated_at}


@dataclass(frozen=True, slots=True)
class HandleRequest:
    tenant: str
    task_id: str
    subject: str
    idempotency_key: str
    incident_id: str
    note: str | None
    dispatch_id: str | None
    created_at: float


@dataclass(frozen=True, slots=True)
class Settlement:
    tenant: str
    task_id: str
    dispatch_id: str | None
    idempotency_key: str | None
    outcome: str
    ticket_id: str | None
    detail: str
    settled_by: str
    settled_at: float

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"taskId": self.task_id, "outcome": self.outcome, "detail": self.detail,
                               "settledBy": self.settled_by, "settledAt": self.settled_at}
        if self.ticket_id is not None:
            out["ticketId"] = self.ticket_id
        if self.dispatch_id is not None:
            out["dispatchId"] = self.dispatch_id
        if self.idempotency_key is not None:
            out["idempotencyKey"] = self.idempotency_key
        return out


@dataclass(frozen=True, slots=True)
class Opened:
    """What :meth:`TicketStore.open_request` did for a task."""

    dispatch_id: str | None
    #: A new job was queued (the caller must hand it to the upstream); else it attached or replayed.
    new: bool
    #: The key already has a ticket: nothing is queued, the task reports this ticket.
    ticket: Ticket | None
    #: The task was no longer working (cancelled meanwhile): nothing was queued.
    gone: bool = False


_DISPATCH_COLUMNS = ("tenant, dispatch_id, idempotency_key, incident_id, note, state, claim_token, lease_until, "
                     "detail, created_at, updated_at")
_TICKET_COLUMNS = "tenant, ticket_id, incident_id, idempotency_key, dispatch_id, created_at"
_REQUEST_COLUMNS = "tenant, task_id, subject, idempotency_key, incident_id, note, dispatch_id, created_at"
_SETTLEMENT_COLUMNS = ("tenant, task_id, dispatch_id, idempotency_key, outcome, ticket_id, detail, settled_by, "
                       "settled_at")


def _dispatch(row: tuple[Any, ...]) -> Dispatch:
    return Dispatch(row[0], row[1], row[2], row[3], row[4], DispatchState(row[5]), *row[6:])


def new_ticket_id() -> str:
    return "TKT-" + secrets.token_hex(5).upper()


def new_dispatch_id() -> str:
    return "dsp_" + secrets.token_urlsafe(16)


def fingerprint(incident_id: str, note: str | None) -> bytes:
    """The arguments an idempotency key is bound to, canonically (what :meth:`TicketStore.bind_key`
    keeps is a keyed hash of it, never these bytes: the note is the caller's free text)."""
    return orjson.dumps({"incidentId": incident_id, "note": note}, option=orjson.OPT_SORT_KEYS)


_FINGERPRINT_CONTEXT = b"idempotency_keys/fingerprint"


class TicketStore:
    """Tickets, their notifications and the upstream queue's jobs; every write is one transaction."""

    def __init__(self, db: Storage, *, migrate: bool = True) -> None:
        self.db = db
        if migrate:
            db.migrate(TICKET_MIGRATIONS)
        # The keys may come from a key file beside the database: read once it is open (the server's start).
        db.when_open(self._keyed)

    def _keyed(self) -> None:
        #: Keys the idempotency fingerprints (:func:`truecall.storage.at_rest_for`).
        self.rest = at_rest_for(self.db)

    @staticmethod
    def present(db: Storage) -> bool:
        """Whether ``db`` holds the desk's ticket tables (without creating them)."""
        return db.fetchone("SELECT 1 FROM _migrations WHERE name = ?", (TICKET_MIGRATIONS[0][0],)) is not None

    # -- reads ------------------------------------------------------------------------

    def ticket(self, tenant: str, ticket_id: str) -> Ticket | None:
        row = self.db.fetchone(f"SELECT {_TICKET_COLUMNS} FROM tickets WHERE tenant = ? AND ticket_id = ?",
                               (tenant, ticket_id))
        return self._with_notifications(row)

    def ticket_for_key(self, tenant: str, key: str) -> Ticket | None:
        row = self.db.fetchone(f"SELECT {_TICKET_COLUMNS} FROM tickets WHERE tenant = ? AND idempotency_key = ?",
                               (tenant, key))
        return self._with_notifications(row)

    def ticket_for_dispatch(self, tenant: str, dispatch_id: str) -> Ticket | None:
        row = self.db.fetchone(f"SELECT {_TICKET_COLUMNS} FROM tickets WHERE tenant = ? AND dispatch_id = ?",
                               (tenant, dispatch_id))
        return self._with_notifications(row)

    def tickets(self, tenant: str) -> list[Ticket]:
        rows = self.db.fetchall(f"SELECT {_TICKET_COLUMNS} FROM tickets WHERE tenant = ? ORDER BY created_at",
                                (tenant,))
        return [t for t in (self._with_notifications(r) for r in rows) if t is not None]

    def _with_notifications(self, row: tuple[Any, ...] | None) -> Ticket | None:
        if row is None:
            return None
        notes = self.db.fetchall(
            "SELECT channel, body, created_at FROM notifications_outbox WHERE tenant = ? AND ticket_id = ? ORDER BY id",
            (row[0], row[1]))
        tenant, ticket_id, incident_id, key, dispatch_id, created_at = row
        return Ticket(tenant, ticket_id, incident_id, key, dispatch_id, created_at,
                      tuple(Notification(*n) for n in notes))

    def dispatch(self, tenant: str, dispatch_id: str) -> Dispatch | None:
        row = self.db.fetchone(f"SELECT {_DISPATCH_COLUMNS} FROM dispatches WHERE tenant = ? AND dispatch_id = ?",
                               (tenant, dispatch_id))
        return _dispatch(row) if row else None

    def dispatches(self, tenant: str, key: str | None = None) -> list[Dispatch]:
        sql = f"SELECT {_DISPATCH_COLUMNS} FROM dispatches WHERE tenant = ?"
        params: list[Any] = [tenant]
        if key is not None:
            sql += " AND idempotency_key = ?"
            params.append(key)
        return [_dispatch(r) for r in self.db.fetchall(sql + " ORDER BY created_at", params)]

    def request(self, tenant: str, task_id: str) -> HandleRequest | None:
        row = self.db.fetchone(f"SELECT {_REQUEST_COLUMNS} FROM handle_requests WHERE tenant = ? AND task_id = ?",
                               (tenant, task_id))
        return HandleRequest(*row) if row else None

    def settlement(self, tenant: str, task_id: str) -> Settlement | None:
        row = self.db.fetchone(f"SELECT {_SETTLEMENT_COLUMNS} FROM settlements WHERE tenant = ? AND task_id = ?",
                               (tenant, task_id))
        return Settlement(*row) if row else None

    # -- the tool's side -----------------------------------------------------------------

    def forget_history(self, now: float, max_age_s: float | None) -> int:
        """Delete the rows that are only history, older than ``max_age_s`` (the audit retention's age;
        ``None``: nothing): the requests and settlements of tasks that are gone (expired and swept),
        and dispatches that ended without a ticket (abandoned, failed) that no kept request names.

        Kept whatever their age: tickets, their notifications and the idempotency keys — they are
        the guarantee "one ticket per key, ever" (a key forgotten could be used again with other
        arguments and be answered with the old ticket), not its history.  Returns the rows deleted."""
        if max_age_s is None:
            return 0
        cutoff = now - max_age_s
        gone = "NOT EXISTS (SELECT 1 FROM tasks t WHERE t.task_id = h.task_id)"
        total = delete_batched(self.db, "settlements", "task_id", f"h.settled_at < ? AND {gone}", (cutoff,))
        total += delete_batched(self.db, "handle_requests", "task_id", f"h.created_at < ? AND {gone}", (cutoff,))
        total += delete_batched(self.db, "dispatches", "dispatch_id",
                                "h.state IN ('abandoned', 'failed') AND h.updated_at < ? AND NOT EXISTS "
                                "(SELECT 1 FROM handle_requests r WHERE r.dispatch_id = h.dispatch_id)", (cutoff,))
        return total

    def bind_key(self, tenant: str, key: str, incident_id: str, note: str | None) -> bool:
        """Bind ``key`` to these arguments on first use; ``True`` if it was new.

        Raises :class:`KeyConflict` when the key was first used with other arguments.
        """
        raw = fingerprint(incident_id, note)
        fp = self.rest.mac(raw, _FINGERPRINT_CONTEXT)
        with self.db.transaction():
            # Insert-if-absent, then compare: two first uses at once cannot both win.
            cur = self.db.execute("INSERT OR IGNORE INTO idempotency_keys VALUES (?, ?, ?, ?, ?)",
                                  (tenant, key, fp, incident_id, time.time()))
            if cur.rowcount == 1:
                return True
            row = self.db.fetchone("SELECT fingerprint FROM idempotency_keys WHERE tenant = ? AND idempotency_key = ?",
                                   (tenant, key))
        # A hash under any configured key matches (one made before a rotation), and so does a row
        # written before fingerprints were hashed (it held the canonical bytes themselves): either is
        # rewritten as the hash under the first key, so the old key (or the clear row) can go.
        if row is None or bytes(row[0]) not in (*self.rest.macs(raw, _FINGERPRINT_CONTEXT), raw):
            raise KeyConflict("this idempotencyKey was already used with other arguments")
        if bytes(row[0]) != fp:
            self.db.execute("UPDATE idempotency_keys SET fingerprint = ? WHERE tenant = ? AND idempotency_key = ?",
                            (fp, tenant, key))
        return False

    def open_request(self, tenant: str, subject: str, task_id: str, key: str, incident_id: str, note: str | None,
                     *, still_wanted: Any = None, fence: Callable[[], None] | None = None) -> Opened:
        """Record the task's request and hand it a dispatch, in ONE transaction.

        - the key already has a ticket → that ticket (nothing queued);
        - a dispatch for the key is queued or claimed → attach to it (no second job);
        - otherwise → a new ``queued`` dispatch.

        ``still_wanted()`` is checked inside the transaction: a task cancelled
        meanwhile (e.g. by an operator) gets nothing queued.  ``fence()`` (the task's lease
        check, first in the transaction) refuses the whole write once another process took the
        task over.
        """
        now = time.time()
        with self.db.transaction():
            if fence is not None:
                fence()
            if still_wanted is not None and not still_wanted():
                return Opened(None, False, None, gone=True)
            ticket, dispatch_id, new = None, None, False
            for _attempt in range(3):
                ticket = self.ticket_for_key(tenant, key)
                if ticket is not None:
                    dispatch_id = ticket.dispatch_id
                    break
                live = self.db.fetchone(
                    "SELECT dispatch_id FROM dispatches WHERE tenant = ? AND idempotency_key = ? "
                    "AND state IN ('queued', 'claimed')", (tenant, key))
                if live is not None:
                    dispatch_id = live[0]
                    break
                candidate = new_dispatch_id()
                # The partial unique index admits one live-or-done dispatch per key: a concurrent
                # first attempt (on a server database) makes this a no-op, and we look again.
                cur = self.db.execute(
                    f"INSERT OR IGNORE INTO dispatches ({_DISPATCH_COLUMNS}) VALUES (?, ?, ?, ?, ?, 'queued', NULL, "
                    "NULL, NULL, ?, ?)", (tenant, candidate, key, incident_id, note, now, now))
                if cur.rowcount == 1:
                    dispatch_id, new = candidate, True
                    break
            if dispatch_id is None:
                raise RuntimeError("could not settle on a dispatch for this key")
            self.db.execute(f"INSERT INTO handle_requests ({_REQUEST_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (tenant, task_id, subject, key, incident_id, note, dispatch_id, now))
        return Opened(dispatch_id, new, ticket)

    def settle_wait(self, tenant: str, dispatch_id: str, key: str,
                    fence: Callable[[], None] | None = None) -> tuple[DispatchState, Ticket | None]:
        """After waiting: the truth, fenced.  One transaction:

        a ticket for the key → it (whichever dispatch wrote it);
        else a still-``queued`` dispatch is abandoned (no worker can ever claim it);
        the dispatch's state is returned either way.  ``fence``: the task's lease check.
        """
        with self.db.transaction():
            if fence is not None:
                fence()
            ticket = self.ticket_for_key(tenant, key)
            found = self.dispatch(tenant, dispatch_id)
            if found is None:
                raise LookupError("no such dispatch")
            state = found.state
            if ticket is None and state is DispatchState.QUEUED:
                try:
                    state = self._transition(tenant, dispatch_id, DispatchEvent.ABANDON,
                                             detail="withdrawn: no worker claimed it in time")
                except InvalidDispatchTransition:  # a worker claimed it meanwhile (server databases)
                    state = self._state(tenant, dispatch_id)
                    ticket = self.ticket_for_key(tenant, key)
        return state, ticket

    def _state(self, tenant: str, dispatch_id: str) -> DispatchState:
        found = self.dispatch(tenant, dispatch_id)
        if found is None:
            raise LookupError("no such dispatch")
        return found.state

    # -- the worker's side ---------------------------------------------------------------

    def claim(self, tenant: str, dispatch_id: str, lease_s: float,
              fence: Callable[[], None] | None = None) -> str | None:
        """``queued`` → ``claimed`` for one worker; its claim token, or ``None`` if refused.

        ``fence``: the lease check of the task that handed the job over, in the same
        transaction (:class:`~truecall.LeaseLost` once another process took that task over).
        """
        token = secrets.token_hex(8)
        try:
            with self.db.transaction():
                if fence is not None:
                    fence()
                self._transition(tenant, dispatch_id, DispatchEvent.CLAIM, claim_token=token,
                                 lease_until=time.time() + lease_s)
        except InvalidDispatchTransition:
            return None
        return token

    def complete(self, tenant: str, dispatch_id: str, claim_token: str, *, channel: str,
                 body: str, fence: Callable[[], None] | None = None) -> Ticket:
        """The side effect: ticket + outbox notification + ``done``, in ONE transaction.

        Refused (:class:`InvalidDispatchTransition`, nothing written) unless this
        worker still holds the claim.
        """
        now = time.time()
        ticket_id = new_ticket_id()
        with self.db.transaction():
            if fence is not None:
                fence()
            found = self.dispatch(tenant, dispatch_id)
            if found is None:
                raise LookupError("no such dispatch")
            if found.claim_token != claim_token:
                raise InvalidDispatchTransition(found.state, DispatchEvent.COMPLETE)
            self._transition(tenant, dispatch_id, DispatchEvent.COMPLETE, detail=f"ticket {ticket_id}")
            self.db.execute(f"INSERT INTO tickets ({_TICKET_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                            (tenant, ticket_id, found.incident_id, found.idempotency_key, dispatch_id, now))
            self.db.execute("INSERT INTO notifications_outbox (tenant, ticket_id, channel, body, created_at) "
                            "VALUES (?, ?, ?, ?, ?)", (tenant, ticket_id, channel, body.replace("{ticket}", ticket_id),
                                                       now))
        ticket = self.ticket(tenant, ticket_id)
        assert ticket is not None
        return ticket

    def fail(self, tenant: str, dispatch_id: str, claim_token: str, reason: str,
             fence: Callable[[], None] | None = None) -> bool:
        """``claimed`` → ``failed`` (the upstream's error, before anything was written)."""
        try:
            with self.db.transaction():
                if fence is not None:
                    fence()
                found = self.dispatch(tenant, dispatch_id)
                if found is None or found.claim_token != claim_token:
                    return False
                self._transition(tenant, dispatch_id, DispatchEvent.FAIL, detail=reason[:500])
        except InvalidDispatchTransition:
            return False
        return True

    # -- reconcile's side -----------------------------------------------------------------

    def fence(self, tenant: str, dispatch_id: str, *, now: float | None = None) -> DispatchState:
        """Make the dispatch final if it can be: ``queued`` → abandoned; ``claimed`` past its lease →
        abandoned (expire).  Returns the state afterwards (still ``claimed`` while a lease holds)."""
        now = time.time() if now is None else now
        with self.db.transaction():
            found = self.dispatch(tenant, dispatch_id)
            if found is None:
                raise LookupError("no such dispatch")
            try:
                if found.state is DispatchState.QUEUED:
                    return self._transition(tenant, dispatch_id, DispatchEvent.ABANDON,
                                            detail="withdrawn by reconcile before any worker claimed it")
                if found.state is DispatchState.CLAIMED and (found.lease_until or 0) < now:
                    return self._transition(tenant, dispatch_id, DispatchEvent.EXPIRE,
                                            detail="claim expired (worker presumed dead); fenced by reconcile")
            except InvalidDispatchTransition:  # it moved meanwhile (server databases): report where it is
                return self._state(tenant, dispatch_id)
            return found.state

    def add_settlement(self, settlement: Settlement) -> bool:
        """Record a settlement; ``False`` if the task already has one (the first stands)."""
        s = settlement
        cur = self.db.execute(
            f"INSERT OR IGNORE INTO settlements ({_SETTLEMENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (s.tenant, s.task_id, s.dispatch_id, s.idempotency_key, s.outcome, s.ticket_id, s.detail, s.settled_by,
             s.settled_at))
        return cur.rowcount == 1

    # -- the one place a dispatch's state changes -------------------------------------------

    def _transition(self, tenant: str, dispatch_id: str, event: DispatchEvent, **changes: Any) -> DispatchState:
        """Compare-and-set through the table, in a transaction (joining the caller's, if any)."""
        with self.db.transaction():
            row = self.db.fetchone("SELECT state FROM dispatches WHERE tenant = ? AND dispatch_id = ?",
                                   (tenant, dispatch_id))
            if row is None:
                raise LookupError("no such dispatch")
            current = DispatchState(row[0])
            new = next_dispatch_state(current, event)
            sets, params = ["state = ?", "updated_at = ?"], [new.value, time.time()]
            for column, value in changes.items():
                sets.append(f"{column} = ?")
                params.append(value)
            params += [tenant, dispatch_id, current.value]
            cur = self.db.execute(
                f"UPDATE dispatches SET {', '.join(sets)} WHERE tenant = ? AND dispatch_id = ? AND state = ?", params)
            if cur.rowcount != 1:  # cannot happen under BEGIN IMMEDIATE; refuse rather than guess
                raise InvalidDispatchTransition(current, event)
        return new

    # -- ground-truth helpers (tests, operators) ---------------------------------------------

    def duplicate_keys(self, tenant: str) -> list[tuple[str, int]]:
        """(key, count) for every key of ``tenant`` with more than one ticket — always empty."""
        return [(r[0], r[1]) for r in self.db.fetchall(
            "SELECT idempotency_key, COUNT(*) FROM tickets WHERE tenant = ? GROUP BY idempotency_key "
            "HAVING COUNT(*) > 1", (tenant,))]
