"""Sealed ``requestState`` for stateless multi-round-trip requests (2026-07-28).

The client carries the state between rounds, so it is attacker-controlled: it
is encrypted and authenticated (AES-256-GCM) and bound to the caller, the
method, the tool or resource, a digest of the arguments and an expiry, and it
names the questions it answers (a digest of each question asked, by key): the
engine reads an ``inputResponses`` entry only for such a question.  Each
state is single-use (its id is recorded when it is redeemed), so a replayed
state is refused.  Keys rotate: the first key seals, every key opens.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import time
from typing import Any, Sequence

import orjson

from ..errors import InvalidParams
from ..storage._keys import b64url_decode, keys_from_env

__all__ = ["Sealer", "InvalidRequestState", "digest"]

_AAD = b"truecall/requestState/v1"


class InvalidRequestState(InvalidParams):
    def __init__(self) -> None:
        super().__init__("Invalid, expired or already used requestState")


def digest(value: Any) -> str:
    """A stable digest of JSON-able ``value`` (sorted keys)."""
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


class Sealer:
    def __init__(self, keys: Sequence[bytes] | None = None, *, ttl_s: float = 600.0) -> None:
        keys = list(keys or [secrets.token_bytes(32)])
        if any(len(k) != 32 for k in keys):
            raise ValueError("requestState keys are 32 bytes (AES-256)")
        self._keys = keys
        self._aead_list: list[Any] | None = None
        self.ttl_s = ttl_s

    @property
    def _aeads(self) -> list[Any]:
        # cryptography loads on first use: servers that never ask for input never pay for it.
        if self._aead_list is None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            self._aead_list = [AESGCM(k) for k in self._keys]
        return self._aead_list

    @classmethod
    def from_env(cls, name: str = "TRUECALL_STATE_KEYS", **options: Any) -> "Sealer":
        """Keys shared by every replica: ``TRUECALL_STATE_KEYS=new,old`` (base64url, 32 bytes each).

        The first key seals; all of them open, so a rotated-out key keeps working
        for states issued before the rotation until they expire.  Unset: a random
        per-process key (right for a single process).
        """
        return cls(keys_from_env(name, size=32) or None, **options)

    def seal(self, payload: dict[str, Any]) -> str:
        body = dict(payload)
        body["exp"] = time.time() + self.ttl_s
        body["jti"] = secrets.token_urlsafe(12)
        nonce = os.urandom(12)
        sealed = nonce + self._aeads[0].encrypt(nonce, orjson.dumps(body), _AAD)
        return base64.urlsafe_b64encode(sealed).decode().rstrip("=")

    def open(self, token: Any, expect: dict[str, Any]) -> dict[str, Any]:
        """The payload, if authentic, unexpired and bound to exactly ``expect``."""
        if not isinstance(token, str) or len(token) > 256 * 1024:
            raise InvalidRequestState()
        try:
            raw = b64url_decode(token)
        except (ValueError, TypeError):
            raise InvalidRequestState() from None
        if len(raw) < 29:
            raise InvalidRequestState()
        from cryptography.exceptions import InvalidTag

        for aead in self._aeads:
            try:
                body = orjson.loads(aead.decrypt(raw[:12], raw[12:], _AAD))
                break
            except InvalidTag:
                continue
        else:
            raise InvalidRequestState()
        if not isinstance(body, dict) or body.get("exp", 0) < time.time():
            raise InvalidRequestState()
        for key, value in expect.items():
            if body.get(key) != value:
                raise InvalidRequestState()
        return body
