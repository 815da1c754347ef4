"""An OAuth 2.1 resource server: bearer JWTs in, principals out.

The server never issues tokens; it checks them.  A token must be signed by one
of the issuer's keys (a JWKS file, or an HTTPS JWKS URL cached for a while),
carry ``exp``, ``iss`` and — checked by default — an audience naming this server
(RFC 8707's resource), and name a tenant.  Claim names are configurable.  What
clients need to find the authorization server is published as RFC 9728
Protected Resource Metadata.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import jwt
import orjson

from ._principals import Principal
from ..errors import InvalidCredential

__all__ = ["JWTVerifier", "ClaimNames", "ProtectedResource"]


class _RefuseRedirect(urllib.request.HTTPRedirectHandler):
    """A JWKS is fetched from exactly the configured URL: a redirect (say https → http) is refused."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_NO_REDIRECTS = urllib.request.build_opener(_RefuseRedirect)

#: Asymmetric algorithms only: a JWKS of public keys cannot verify an HMAC, and ``none`` is never accepted.
DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


@dataclass(frozen=True)
class ClaimNames:
    subject: str = "sub"
    tenant: str = "tenant"
    scope: str = "scope"  # a space-separated string, or a list (as ``scp`` often is)


@dataclass(frozen=True)
class ProtectedResource:
    """RFC 9728 metadata for this server."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] = ()
    resource_name: str | None = None

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if self.scopes_supported:
            doc["scopes_supported"] = list(self.scopes_supported)
        if self.resource_name:
            doc["resource_name"] = self.resource_name
        return doc


class JWTVerifier:
    """Verifies bearer JWTs; a :class:`~truecall.auth.TokenVerifier`."""

    def __init__(
        self,
        *,
        issuer: str,
        audience: str | None,
        jwks: dict[str, Any] | str | Path,
        claims: ClaimNames = ClaimNames(),
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        leeway_s: float = 30.0,
        check_audience: bool = True,
        jwks_cache_s: float = 300.0,
        jwks_refetch_s: float = 10.0,
        scopes_supported: Iterable[str] = (),
        resource_name: str | None = None,
    ) -> None:
        if check_audience and not audience:
            raise ValueError("an audience (this server's resource URL) is required unless check_audience=False")
        self.issuer = issuer
        self.audience = audience
        self.claims = claims
        self.algorithms = [a for a in algorithms if a.lower() != "none" and not a.startswith("HS")]
        self.leeway_s = leeway_s
        self.check_audience = check_audience
        self._jwks_source = jwks
        self._jwks_cache_s = jwks_cache_s
        # At most one fetch per this many seconds, whatever the tokens say: a stream of made-up
        # kids (or an unreachable issuer) must not become a stream of blocking fetches.
        self._jwks_refetch_s = jwks_refetch_s
        self._keys: dict[str | None, Any] = {}
        self._loaded_at = 0.0
        self._fetched_at = 0.0
        self._lock = threading.Lock()
        self.protected_resource = ProtectedResource(audience or "", (issuer,), tuple(scopes_supported),
                                                    resource_name) if audience else None
        self._load_keys()

    # -- keys -----------------------------------------------------------------------------

    def _fetch_jwks(self) -> dict[str, Any]:
        source = self._jwks_source
        if isinstance(source, dict):
            return source
        text = str(source)
        if "://" in text:
            if not _fetchable(text):
                raise ValueError("a JWKS URL must be https (or http on a loopback address, for tests)")
            with _NO_REDIRECTS.open(text, timeout=5) as response:  # noqa: S310 - https or loopback only
                return _jwks_document(orjson.loads(response.read(1024 * 1024)))
        return _jwks_document(orjson.loads(Path(text).read_bytes()))

    def _load_keys(self) -> None:
        self._fetched_at = time.monotonic()
        data = self._fetch_jwks()
        keys: dict[str | None, Any] = {}
        for jwk in data.get("keys", []):
            if not isinstance(jwk, dict) or jwk.get("kty") not in ("RSA", "EC", "OKP"):
                continue  # only public keys verify anything here (never an HMAC secret)
            try:
                key = jwt.PyJWK.from_dict(jwk)
            except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError):
                continue
            keys[jwk.get("kid")] = key
        if not keys:
            raise ValueError("the JWKS holds no usable public key")
        self._keys = keys
        self._loaded_at = time.monotonic()

    def _key_for(self, kid: str | None) -> Any:
        if not isinstance(self._jwks_source, dict):
            now = time.monotonic()
            stale = now - self._loaded_at > self._jwks_cache_s
            unknown = kid is not None and kid not in self._keys
            if (stale or unknown) and now - self._fetched_at >= self._jwks_refetch_s:
                with self._lock:
                    try:
                        self._load_keys()
                    except Exception:
                        pass  # keep the keys we had; an unknown kid still fails below
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        key = self._keys.get(kid)
        if key is None:
            raise InvalidCredential(data=None)
        return key

    # -- the check ------------------------------------------------------------------------

    def authenticate(self, token: str | None) -> Principal:
        if not token or len(token) > 16 * 1024:
            raise _denied("missing")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise _denied("malformed") from None
        if header.get("alg") not in self.algorithms:
            raise _denied("algorithm")
        try:
            key = self._key_for(header.get("kid"))
        except InvalidCredential:
            raise _denied("unknown_key") from None
        required = ["exp", "iss", self.claims.subject] + (["aud"] if self.check_audience else [])
        try:
            claims = jwt.decode(
                token,
                key=key.key if hasattr(key, "key") else key,
                algorithms=self.algorithms,
                audience=self.audience if self.check_audience else None,
                issuer=self.issuer,
                leeway=self.leeway_s,
                options={"require": required, "verify_aud": self.check_audience},
            )
        except jwt.ExpiredSignatureError:
            raise _denied("expired") from None
        except jwt.ImmatureSignatureError:
            raise _denied("not_yet_valid") from None
        except jwt.InvalidAudienceError:
            raise _denied("audience") from None
        except jwt.InvalidIssuerError:
            raise _denied("issuer") from None
        except jwt.InvalidSignatureError:
            raise _denied("signature") from None
        except jwt.MissingRequiredClaimError as exc:
            raise _denied({"aud": "audience", "iss": "issuer"}.get(exc.claim, "claims")) from None
        except (jwt.InvalidAlgorithmError, jwt.InvalidKeyError, TypeError, ValueError):
            # The header's alg does not fit the key its kid names (an EC alg on an RSA key…).
            raise _denied("algorithm") from None
        except jwt.PyJWTError:
            raise _denied("invalid") from None
        subject, tenant = claims.get(self.claims.subject), claims.get(self.claims.tenant)
        if not isinstance(subject, str) or not subject or not isinstance(tenant, str) or not tenant:
            raise _denied("claims")
        raw_scopes = claims.get(self.claims.scope, "")
        scopes = raw_scopes.split() if isinstance(raw_scopes, str) else \
            [s for s in raw_scopes if isinstance(s, str)] if isinstance(raw_scopes, list) else []
        return Principal(subject, tenant, frozenset(scopes))


def _fetchable(url: str) -> bool:
    """https anywhere; plain http only to a loopback host (parsed, not prefix-matched)."""
    import ipaddress
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None or not parts.hostname:
        return False
    if parts.scheme == "https":
        return True
    if parts.scheme != "http":
        return False
    if parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


def _jwks_document(value: Any) -> dict[str, Any]:
    """A JWKS is a JSON object; anything else is refused here rather than failing later at ``keys``."""
    if not isinstance(value, dict):
        raise ValueError("a JWKS must be a JSON object with a \"keys\" list")
    return value


def _denied(reason: str) -> InvalidCredential:
    exc = InvalidCredential()
    exc.reason = reason  # for the audit trail; the client only hears "invalid or missing credential"
    return exc
