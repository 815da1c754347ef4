"""The desk's data: incidents per tenant, in the server's database.

Every query takes the tenant as a parameter: a tenant can only ever see rows
it owns, whatever the tool code does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from truecall import Storage, redact_text

__all__ = ["Incident", "IncidentStore", "DESK_MIGRATIONS"]

DESK_MIGRATIONS = [
    (
        "desk-1",
        """
        CREATE TABLE incidents (
            tenant TEXT NOT NULL,
            incident_id TEXT NOT NULL,
            service TEXT NOT NULL,
            severity TEXT NOT NULL,
            title TEXT NOT NULL,
            status TEXT NOT NULL,
            opened_at REAL NOT NULL,
            PRIMARY KEY (tenant, incident_id)
        );
        CREATE INDEX incidents_service ON incidents (tenant, service)
        """,
    ),
    (
        "desk-2",
        """
        CREATE TABLE incident_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            tenant TEXT NOT NULL,
            incident_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            detail TEXT NOT NULL,
            actor TEXT NOT NULL,
            at REAL NOT NULL
        );
        CREATE INDEX incident_events_incident ON incident_events (tenant, incident_id)
        """,
    ),
]

# Demo data: tenant acme has exactly two incidents for payments (the count examples/01_search.py prints).
DEMO_INCIDENTS = [
    ("acme", "INC-1001", "payments", "P2", "Card authorisations failing for EU issuers", "open"),
    ("acme", "INC-1002", "payments", "P3", "Settlement report delayed", "open"),
    ("acme", "INC-1003", "checkout", "P3", "Slow cart page", "open"),
    ("globex", "INC-2001", "payments", "P1", "Payment gateway down", "open"),
]


@dataclass(frozen=True, slots=True)
class Incident:
    tenant: str
    incident_id: str
    service: str
    severity: str
    title: str
    status: str
    opened_at: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "incidentId": self.incident_id,
            "service": self.service,
            "severity": self.severity,
            "title": self.title,
            "status": self.status,
        }


class IncidentStore:
    def __init__(self, db: Storage, *, seed_demo: bool = True) -> None:
        self.db = db
        db.migrate(DESK_MIGRATIONS)
        if seed_demo:  # once the database is open: now, or at the server's start
            db.when_open(self._seed)

    def _seed(self) -> None:
        now = time.time()
        with self.db.transaction():
            for row in DEMO_INCIDENTS:
                self.db.execute("INSERT OR IGNORE INTO incidents VALUES (?, ?, ?, ?, ?, ?, ?)", (*row, now))

    def search(self, tenant: str, service: str) -> list[Incident]:
        rows = self.db.fetchall(
            "SELECT tenant, incident_id, service, severity, title, status, opened_at FROM incidents "
            "WHERE tenant = ? AND service = ? ORDER BY incident_id",
            (tenant, service),
        )
        return [Incident(*r) for r in rows]

    def get(self, tenant: str, incident_id: str) -> Incident | None:
        row = self.db.fetchone(
            "SELECT tenant, incident_id, service, severity, title, status, opened_at FROM incidents "
            "WHERE tenant = ? AND incident_id = ?",
            (tenant, incident_id),
        )
        return Incident(*row) if row else None

    def escalate(self, tenant: str, incident_id: str, severity: str, reason: str, actor: str) -> Incident | None:
        """Set the severity and log who did it and why, in one transaction."""
        with self.db.transaction():
            found = self.get(tenant, incident_id)
            if found is None:
                return None
            self.db.execute("UPDATE incidents SET severity = ? WHERE tenant = ? AND incident_id = ?",
                            (severity, tenant, incident_id))
            self.db.execute(
                "INSERT INTO incident_events (tenant, incident_id, kind, detail, actor, at) VALUES (?, ?, ?, ?, ?, ?)",
                (tenant, incident_id, "escalated", f"{found.severity}->{severity}: {redact_text(reason)}", actor,
                 time.time()),
            )
        return self.get(tenant, incident_id)
