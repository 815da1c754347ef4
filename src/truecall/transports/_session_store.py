"""Handshake-era HTTP sessions in the shared database.

A session is negotiated once (``initialize``) and then used by requests that a
load balancer may send to any replica.  What the negotiation decided — version,
client capabilities and info, log level, resource subscriptions, state — is
stored, so another replica can serve the next request.  What cannot move is an
open response stream and a server-to-client request waiting for its answer: those
stay with the replica that holds the connection.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from ..storage._at_rest import Unreadable, at_rest_for, sealed
from ..auth._principals import Principal
from ..audit.redaction import REDACTED, is_sensitive_name, redact_free_text, redact_text
from ..storage import Storage
from ..protocol._session_state import SessionState
from ..protocol._session import Session

__all__ = ["SessionStore", "SESSION_MIGRATIONS"]

SESSION_MIGRATIONS = [
    (
        "sessions-1",
        """
        CREATE TABLE mcp_sessions (
            session_id TEXT PRIMARY KEY,
            tenant TEXT NOT NULL,
            subject TEXT NOT NULL,
            scopes BLOB NOT NULL,
            state TEXT NOT NULL,
            version TEXT,
            data BLOB NOT NULL,
            last_seen REAL NOT NULL
        );
        CREATE INDEX mcp_sessions_last_seen ON mcp_sessions (last_seen)
        """,
    )
]


#: clientInfo fields worth keeping (the rest — icons, anything else — is dropped), and their cap.
_CLIENT_INFO_FIELDS = ("name", "version", "title", "description", "websiteUrl")
_MAX_TEXT = 256
#: Capabilities are nested objects of flags: deeper or wider than this is not a capability.
_MAX_DEPTH, _MAX_KEYS = 4, 64


def _stored_client_info(info: Any) -> dict[str, str]:
    if not isinstance(info, dict):
        return {}
    return {key: redact_free_text(value)[:_MAX_TEXT] for key in _CLIENT_INFO_FIELDS
            if isinstance(value := info.get(key), str)}


def _stored_capabilities(caps: Any, depth: int = 0) -> Any:
    """A bounded, redacted copy: sensitive names and values replaced, strings capped, depth and
    width limited (what the engine reads — elicitation modes, sampling, roots, extensions — is flags)."""
    if isinstance(caps, dict):
        if depth >= _MAX_DEPTH:
            return {}
        out: dict[str, Any] = {}
        for key, value in list(caps.items())[:_MAX_KEYS]:
            name = redact_text(str(key))[:_MAX_TEXT]
            out[name] = REDACTED if is_sensitive_name(name) else _stored_capabilities(value, depth + 1)
        return out
    if isinstance(caps, list):
        return [_stored_capabilities(v, depth + 1) for v in caps[:_MAX_KEYS]] if depth < _MAX_DEPTH else []
    if isinstance(caps, str):
        return redact_text(caps)[:_MAX_TEXT]
    return caps if caps is None or isinstance(caps, (bool, int, float)) else None


class SessionStore:
    def __init__(self, db: Storage, *, idle_s: float = 3600.0) -> None:
        self.db = db
        self.idle_s = idle_s
        #: Seals ``data`` (capabilities, clientInfo, subscriptions: the client's own words).
        self.rest = at_rest_for(db)
        db.migrate(SESSION_MIGRATIONS)

    def save(self, session: Session) -> None:
        self.write(self.row(session))

    def row(self, session: Session) -> tuple[Any, ...]:
        """The session's row as it stands now (what :meth:`write` stores)."""
        principal = session.principal
        assert principal is not None
        # Everything here came from the client: capped and redacted before it touches the disk.
        data = orjson.dumps({
            "caps": _stored_capabilities(session.client_capabilities),
            "client": _stored_client_info(session.client_info),
            "log": session.log_level,
            "subs": sorted({redact_free_text(uri)[:_MAX_TEXT * 16] for uri in session.subscriptions}),
        })
        data = self.rest.seal(data, b"mcp_sessions/data/" + session.id.encode())
        return (session.id, principal.tenant, principal.subject, orjson.dumps(sorted(principal.scopes)),
                session.state.value, session.version, data, time.time())

    def write(self, row: tuple[Any, ...]) -> None:
        # One statement (an upsert), so replicas saving the same session at once cannot collide;
        # a record of another principal is never overwritten.
        self.db.execute(
            "INSERT INTO mcp_sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
            "scopes = excluded.scopes, state = excluded.state, version = excluded.version, data = excluded.data, "
            "last_seen = excluded.last_seen WHERE mcp_sessions.tenant = excluded.tenant "
            "AND mcp_sessions.subject = excluded.subject", row)

    def load(self, session_id: str, principal: Principal) -> Session | None:
        """The stored session, if it is this principal's and still alive."""
        row = self.db.fetchone(
            "SELECT state, version, data, scopes FROM mcp_sessions WHERE session_id = ? AND tenant = ? "
            "AND subject = ? AND last_seen > ?",
            (session_id, principal.tenant, principal.subject, time.time() - self.idle_s),
        )
        if row is None or row[0] == SessionState.CLOSED.value:
            return None
        session = Session(session_id, principal)
        session.state = SessionState(row[0])
        session.version = row[1]
        raw = row[2]
        if sealed(raw):
            try:
                raw = self.rest.open(raw, b"mcp_sessions/data/" + session_id.encode())
            except Unreadable:  # sealed under a key this process does not hold: the client starts anew
                return None
        data: dict[str, Any] = orjson.loads(raw)
        session.client_capabilities = data.get("caps") or {}
        session.client_info = data.get("client") or {}
        session.log_level = data.get("log")
        session.subscriptions = set(data.get("subs") or [])
        return session

    def touch(self, session_id: str) -> None:
        self.db.execute("UPDATE mcp_sessions SET last_seen = ? WHERE session_id = ?", (time.time(), session_id))

    def delete(self, session_id: str) -> None:
        self.db.execute("DELETE FROM mcp_sessions WHERE session_id = ?", (session_id,))

    def delete_if_idle(self, session_id: str) -> None:
        """Delete the session's row unless it was seen within the idle time (by any replica)."""
        self.db.execute("DELETE FROM mcp_sessions WHERE session_id = ? AND last_seen <= ?",
                        (session_id, time.time() - self.idle_s))

    def purge_idle(self) -> int:
        """Delete every row seen by no replica within the idle time; returns how many went."""
        return self.db.execute("DELETE FROM mcp_sessions WHERE last_seen < ?", (time.time() - self.idle_s,)).rowcount
