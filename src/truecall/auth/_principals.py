"""Who is calling: principals and the credentials that prove them.

Tokens are never kept in plain text: :class:`StaticTokens` stores SHA-256 digests
(tokens are high-entropy random strings, so a fast hash is the right tool; a
password would need a slow one).  Verifiers raise
:class:`~truecall.errors.InvalidCredential`; callers never learn *why* a token
failed.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol

import orjson

from ..errors import InvalidCredential

__all__ = ["Principal", "TokenVerifier", "StaticTokens", "TOKEN_FILE_FORMAT", "hash_token", "new_token"]


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller: who, for which tenant, allowed to do what."""

    subject: str
    tenant: str
    scopes: frozenset[str] = field(default_factory=frozenset)

    def has_scopes(self, required: frozenset[str]) -> bool:
        return required <= self.scopes

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "tenant": self.tenant, "scopes": sorted(self.scopes)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Principal":
        return cls(str(data["subject"]), str(data["tenant"]), frozenset(data.get("scopes", ())))


class TokenVerifier(Protocol):
    """Anything that turns a bearer token into a :class:`Principal` or raises ``InvalidCredential``."""

    def authenticate(self, token: str | None) -> Principal: ...


def hash_token(token: str) -> str:
    """The SHA-256 hex digest a token file keeps instead of the token."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_token() -> str:
    """A fresh bearer token with 256 bits of randomness."""
    return "tc_" + secrets.token_urlsafe(32)


#: The token file (``--token-file`` / ``TRUECALL_TOKEN_FILE``), as the one line that errors and the
#: start-up note quote; the README shows the same with an example.
TOKEN_FILE_FORMAT = ('{"tokens": [{"sha256": "<hex SHA-256 of the token>", "subject": "who", '
                     '"tenant": "which tenant", "scopes": ["scope", ...]}]}')


class StaticTokens:
    """A fixed table of token digests → principals (the embedded default).

    File format (JSON; :data:`TOKEN_FILE_FORMAT`)::

        {"tokens": [{"sha256": "<hex>", "subject": "...", "tenant": "...", "scopes": [...]}]}

    Only digests are stored, so the file can be read by whoever deploys the server without
    giving away a credential.  Make a token and its digest with :func:`new_token` and
    :func:`hash_token` (the README shows the one-line command); the plain token goes to the
    client, the digest into the file.
    """

    def __init__(self, entries: Mapping[str, Principal] | None = None) -> None:
        self._by_digest: dict[str, Principal] = dict(entries or {})

    @classmethod
    def from_plain(cls, tokens: Mapping[str, Principal]) -> "StaticTokens":
        """Hash plain tokens at once (for demos and tests); the plain text is not kept."""
        return cls({hash_token(t): p for t, p in tokens.items()})

    @classmethod
    def from_file(cls, path: str | Path) -> "StaticTokens":
        """The tokens of a token file; :class:`ValueError` naming the entry that does not fit the format."""
        try:
            data = orjson.loads(Path(path).read_bytes())
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from None
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, list):
            raise ValueError('no "tokens" list')
        entries = {}
        for n, item in enumerate(tokens):
            if not isinstance(item, dict):
                raise ValueError(f"token {n} is not an object")
            digest = str(item.get("sha256", "")).lower()
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise ValueError(f"token {n}: sha256 must be 64 hex digits (hash_token of the token)")
            subject, tenant, scopes = item.get("subject"), item.get("tenant"), item.get("scopes", [])
            if not (isinstance(subject, str) and subject and isinstance(tenant, str) and tenant):
                raise ValueError(f"token {n}: subject and tenant must be non-empty strings")
            if not (isinstance(scopes, list) and all(isinstance(x, str) for x in scopes)):
                raise ValueError(f"token {n}: scopes must be a list of strings")
            entries[digest] = Principal.from_dict(item)
        return cls(entries)

    def add(self, token: str, principal: Principal) -> None:
        self._by_digest[hash_token(token)] = principal

    def entries(self) -> Iterable[tuple[str, Principal]]:
        return self._by_digest.items()

    def authenticate(self, token: str | None) -> Principal:
        if not token or not isinstance(token, str) or len(token) > 4096:
            raise InvalidCredential()
        principal = self._by_digest.get(hash_token(token))
        if principal is None:
            raise InvalidCredential()
        return principal


#: The tenant of the local user's principal (:meth:`truecall.Server.local_user`).
LOCAL_TENANT = "local"


def local_user_name() -> str:
    """The login name of the user running this process (``uid-N`` where there is none)."""
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # no login name and no passwd entry (a bare container): the uid still says who
        return f"uid-{os.getuid()}" if hasattr(os, "getuid") else "local"
