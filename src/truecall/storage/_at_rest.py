"""Caller data kept at rest: sealed (AES-256-GCM) or keyed-hashed, never in clear.

What a store must keep and may read back (a task's result, its input, the answers to its
questions) is sealed under a key the database does not hold, so its heap files, its write-ahead
log, a dump or a backup copy hold ciphertext only; an overwritten or deleted row's old version
left in a page or a WAL segment is ciphertext too.  What only needs comparing (an idempotency
key's arguments) is a keyed hash (:meth:`AtRest.mac`).

Keys come from ``TRUECALL_STATE_KEYS`` (the keys every replica already shares): each is turned
into its at-rest key by a keyed BLAKE2b with a label of its own, so the at-rest key is never the
key that seals ``requestState``.  The first key seals, every key opens: a blob names the key that
sealed it (a 4-byte id), so rows sealed before a rotation stay readable while their key is still
listed, and :meth:`~truecall.tasks.task_store.TaskStore.reseal` seals them again under the first.

Unset, a SQLite file gets a key file beside it (``<db>-key``, mode 0600, made once): the
database, its WAL and a ``.backup`` copy of it hold ciphertext, but a copy of the whole folder
holds the key too — set the variable, kept outside the data directory, where that matters.  A
PostgreSQL database (or an in-memory one) without the setting gets a random key per process:
rows sealed by another process then read as unreadable (a task's result says so), and
idempotency keys cannot be matched across processes.  Keys a ``--workers`` supervisor made (the
variable unset) are shared by its workers: used on PostgreSQL, passed over for a SQLite file's key
file, which outlives the supervisor.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import weakref
from typing import Any, Sequence

from ._keys import b64url_decode, keys_from_env

__all__ = ["AtRest", "Unreadable", "MAGIC", "at_rest_for", "sealed"]

#: Every sealed blob starts with these bytes (a JSON document never does).
MAGIC = b"\x00tcs1"
_KID = 4
_NONCE = 12


class Unreadable(ValueError):
    """A sealed blob no configured key opens (its key was dropped, or the blob was altered)."""


def _derive(key: bytes) -> bytes:
    return hashlib.blake2b(b"truecall/at-rest/v1", key=key[:64], digest_size=32).digest()


def _kid(key: bytes) -> bytes:
    return hashlib.blake2b(key, digest_size=_KID, person=b"truecall-kid").digest()


def sealed(blob: Any) -> bool:
    """Whether a stored value is a sealed blob (old rows hold clear JSON: read as before)."""
    return isinstance(blob, (bytes, bytearray, memoryview)) and bytes(blob[:len(MAGIC)]) == MAGIC


class AtRest:
    """Seal and open stored values; the first key seals, every key opens."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        if not keys:
            raise ValueError("at least one key")
        self._keys = [_derive(k) for k in keys]
        self._by_kid = {_kid(k): k for k in self._keys}
        self._first_kid = _kid(self._keys[0])
        self._aeads: dict[bytes, Any] = {}

    @classmethod
    def from_env(cls, name: str = "TRUECALL_STATE_KEYS") -> "AtRest | None":
        keys = keys_from_env(name, size=32)
        return cls(keys) if keys else None

    def _aead(self, kid: bytes) -> Any:
        aead = self._aeads.get(kid)
        if aead is None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # loaded on first use

            aead = self._aeads[kid] = AESGCM(self._by_kid[kid])
        return aead

    def seal(self, data: bytes, context: bytes) -> bytes:
        """``data`` sealed under the first key; ``context`` (the table, column and row it belongs
        to) is authenticated, so a blob moved to another row does not open there."""
        nonce = os.urandom(_NONCE)
        sealed_data: bytes = self._aead(self._first_kid).encrypt(nonce, data, context)
        return MAGIC + self._first_kid + nonce + sealed_data

    def open(self, blob: bytes, context: bytes) -> bytes:
        blob = bytes(blob)
        kid = blob[len(MAGIC):len(MAGIC) + _KID]
        if kid not in self._by_kid:
            raise Unreadable("sealed under a key that is not configured any more")
        start = len(MAGIC) + _KID
        from cryptography.exceptions import InvalidTag

        try:
            return bytes(self._aead(kid).decrypt(blob[start:start + _NONCE], blob[start + _NONCE:], context))
        except InvalidTag:
            raise Unreadable("the sealed value does not open (altered, or moved from another row)") from None

    def current(self, blob: Any) -> bool:
        """Whether ``blob`` is sealed under the first key already (nothing for a re-seal to do)."""
        return sealed(blob) and bytes(blob[len(MAGIC):len(MAGIC) + _KID]) == self._first_kid

    def mac(self, data: bytes, context: bytes) -> bytes:
        """A keyed hash of ``data`` under the first key (16 bytes): comparable, not reversible."""
        return hmac.new(self._keys[0], context + b"\x00" + data, hashlib.sha256).digest()[:16]

    def macs(self, data: bytes, context: bytes) -> list[bytes]:
        """The keyed hash under every key (a hash made before a rotation still matches)."""
        return [hmac.new(k, context + b"\x00" + data, hashlib.sha256).digest()[:16] for k in self._keys]


_PROCESS_KEY = secrets.token_bytes(32)
#: ``truecall.cli._workers.MADE_KEYS`` (not imported: a storage-level module does not import the command line's).
_MADE_KEYS = "_TRUECALL_MADE_KEYS"
_CACHE: dict[tuple[str, str | None], AtRest] = {}
_BY_DB: "weakref.WeakKeyDictionary[Any, AtRest]" = weakref.WeakKeyDictionary()


def at_rest_for(db: Any) -> AtRest:
    """The sealer for a store on ``db`` (a :class:`~truecall.storage.Storage`): the configured keys,
    else the SQLite file's key file, else this process's random key (see the module's docstring).

    Decided once per ``db``: every store on one connection seals alike, even one made after a
    ``--workers`` worker dropped its supervisor's keys from the environment (the HTTP transport's
    session store is made after the app)."""
    try:
        return _BY_DB[db]
    except (KeyError, TypeError):
        pass
    found = _at_rest_for(db)
    try:
        _BY_DB[db] = found
    except TypeError:  # not weakly referenceable: decided again next time
        pass
    return found


def _at_rest_for(db: Any) -> AtRest:
    setting = os.environ.get("TRUECALL_STATE_KEYS", "").strip()
    path: str | None = getattr(db, "local_file", None)
    if setting and path is not None and "TRUECALL_STATE_KEYS" in os.environ.get(_MADE_KEYS, "").split(","):
        setting = ""  # made by a --workers supervisor, gone with it: the file's key file outlives it
    cache_key = (setting, None if setting else path)
    found = _CACHE.get(cache_key)
    if found is not None:
        return found
    configured = AtRest.from_env() if setting else None
    if configured is not None:
        found = configured
    elif path is not None:
        found = AtRest([_key_file(path + "-key")])
    else:
        found = AtRest([_PROCESS_KEY])
    if len(_CACHE) < 64:
        _CACHE[cache_key] = found
    return found


def _key_file(path: str) -> bytes:
    """The key in ``path``, made (0600, exclusively: two processes at once agree) when absent."""
    import base64

    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as out:
            out.write(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=") + "\n")
            out.flush()
            os.fsync(out.fileno())
    for _ in range(100):  # another process made it a moment ago: it may still be writing
        with open(path, encoding="ascii") as f:
            text = f.read().strip()
        if text:
            return b64url_decode(text)
        import time

        time.sleep(0.01)
    raise ValueError(f"{path}: the key file is empty")
