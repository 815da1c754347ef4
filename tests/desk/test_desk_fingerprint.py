"""An idempotency key's arguments are kept as a keyed hash (issue 25, case 9): the note never rests in
clear in ``idempotency_keys``, the same arguments still match (across a key rotation, and against a row
written in clear before hashing), other arguments still conflict."""

from __future__ import annotations

import base64
import os
import secrets
from typing import Any

import pytest

from truecall.incidents.tickets import KeyConflict, TicketStore, fingerprint

from pg_support import backend, database, db_target, db_targets, pg_schemas  # noqa: F401  (fixtures)


def _key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")


def new_process() -> None:
    """What a new process finds: no at-rest key decided yet (it reads the environment again)."""
    from truecall.storage import _at_rest

    _at_rest._CACHE.clear()
    _at_rest._BY_DB.clear()


def stored(store: TicketStore, key: str) -> bytes:
    row = store.db.fetchone("SELECT fingerprint FROM idempotency_keys WHERE tenant = 'acme' AND idempotency_key = ?",
                            (key,))
    assert row is not None
    return bytes(row[0])


def test_the_fingerprint_is_a_keyed_hash(database: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = _key(), _key()
    monkeypatch.setenv("TRUECALL_STATE_KEYS", old)
    new_process()
    store = TicketStore(database)
    note = f"pager {secrets.token_hex(12)}"
    assert store.bind_key("acme", "k1", "INC-1001", note) is True
    kept = stored(store, "k1")
    assert note.encode() not in kept and b"INC-1001" not in kept and len(kept) == 16
    assert store.bind_key("acme", "k1", "INC-1001", note) is False  # the same arguments: a replay
    with pytest.raises(KeyConflict):
        store.bind_key("acme", "k1", "INC-1001", note + "!")
    monkeypatch.setenv("TRUECALL_STATE_KEYS", f"{new},{old}")  # rotated: a hash made before still matches,
    new_process()
    assert TicketStore(database).bind_key("acme", "k1", "INC-1001", note) is False  # and is made again
    monkeypatch.setenv("TRUECALL_STATE_KEYS", new)  # so the old key can go
    new_process()
    assert TicketStore(database).bind_key("acme", "k1", "INC-1001", note) is False


def test_a_fingerprint_written_in_clear_before_still_matches(database: Any) -> None:
    store = TicketStore(database)
    store.db.execute("INSERT INTO idempotency_keys VALUES (?, ?, ?, ?, ?)",
                     ("acme", "old", fingerprint("INC-1001", "n"), "INC-1001", 0.0))
    assert store.bind_key("acme", "old", "INC-1001", "n") is False
    assert len(stored(store, "old")) == 16  # hashed now
    assert store.bind_key("acme", "old", "INC-1001", "n") is False
    with pytest.raises(KeyConflict):
        store.bind_key("acme", "old", "INC-1001", "other")
