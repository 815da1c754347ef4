"""Building the audit trail's records: a row from a kind and its fields, redacted (``truecall.audit``).

What a record holds is decided here, once for every path that makes one: the four columns
``truecall audit`` filters by (redacted, cut to 256 characters), every other field redacted into one
JSON document, and the caches that make a tool call's record cheap (its columns and its journal
line's middle, per tool, caller and outcome; field names; client names).  :class:`AuditRecord` is
what a query gives back.  Batching the rows for durability stays with :class:`~truecall.AuditLog`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import orjson

from .redaction import REDACTED, is_sensitive_name, redact_at, redact_text

__all__ = ["AuditRecord", "make_row"]

_COLUMNS = ("tenant", "subject", "tool", "outcome")
_INSERT = "INSERT INTO audit_events (ts, kind, tenant, subject, tool, outcome, fields) VALUES (?, ?, ?, ?, ?, ?, ?)"


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One audit row as :meth:`AuditLog.query` returns it: already redacted when it was written."""

    id: int
    ts: float
    kind: str
    tenant: str | None
    subject: str | None
    tool: str | None
    outcome: str | None
    fields: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ts": self.ts,
            "kind": self.kind,
            "tenant": self.tenant,
            "subject": self.subject,
            "tool": self.tool,
            "outcome": self.outcome,
            **self.fields,
        }


def make_row(kind: str, fields: dict[str, Any], safe: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """A record's row: its columns (redacted, cut), then its other fields redacted into one JSON document
    (``safe``: fields already safe, the arguments' fingerprint)."""
    cols = [_column(fields.pop(name, None)) for name in _COLUMNS]
    doc = {}
    for key, value in fields.items():  # redact(fields), unrolled for the flat dict a record is
        safe_key = _KEYS.get(key)
        if safe_key is None:
            safe_key = _key_verdict(key)
        key, sensitive = safe_key
        if sensitive:
            doc[key] = REDACTED
        elif value is None or type(value) in _PLAIN:
            doc[key] = value
        elif type(value) is str:
            doc[key] = redact_text(value)
        else:
            doc[key] = redact_at(value, 1)
    if safe is not None:
        doc.update(safe)
    try:
        encoded = orjson.dumps(doc, default=str)
    except TypeError:  # an integer beyond 64 bits (only an in-process caller can pass one)
        encoded = json.dumps(doc, default=str, ensure_ascii=False).encode("utf-8", "replace")
    return (time.time(), kind, *cols, encoded)


#: A client's self-declared name is kept this long (redacted first, so no cut hides a secret).
_MAX_CLIENT = 128
_PLAIN = (int, float, bool)
#: Field name → (its redacted form, whether it names a secret): records use a few dozen names.
_KEYS: dict[Any, tuple[str, bool]] = {}


def _column(value: Any) -> str | None:
    return None if value is None else redact_text(value if type(value) is str else str(value))[:256]


#: (kind, tool, tenant, subject, outcome) → the tenant, subject, tool and outcome columns, and the
#: journal line's part from kind to outcome (``,"kind",…,"outcome",``): see record_call.
_Head = tuple[str | None, str | None, str | None, str | None, bytes]
_HEADS: dict[tuple[Any, ...], _Head] = {}
#: A client's self-declared name → what the record keeps of it.
_CLIENTS: dict[str, str] = {}


def _head(kind: str, tool: Any, tenant: Any, subject: Any, outcome: Any) -> _Head:
    cols = (_column(tenant), _column(subject), _column(tool), _column(outcome))
    head = (*cols, b"," + orjson.dumps((kind, *cols))[1:-1] + b",")
    if len(_HEADS) < 4096 and all(type(v) is str for v in (kind, tool, tenant, subject, outcome)):
        _HEADS[(kind, tool, tenant, subject, outcome)] = head
    return head


def _client(client: str) -> str:
    kept = _CLIENTS.get(client)
    if kept is None:
        kept = redact_text(client)[:_MAX_CLIENT]
        if len(_CLIENTS) < 4096 and type(client) is str:
            _CLIENTS[client] = kept
    return kept


def _key_verdict(key: Any) -> tuple[str, bool]:
    name = redact_text(key if type(key) is str else str(key))
    verdict = (name, is_sensitive_name(name))
    if len(_KEYS) < 4096 and type(key) is str:
        _KEYS[key] = verdict
    return verdict
