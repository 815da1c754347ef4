"""Who may ask: ``Host``/``Origin`` against DNS rebinding, and the bearer token as a Principal.

Every request passes :meth:`Gate.check_origin` (``/metrics`` and ``/readyz`` included) before
anything else; the MCP endpoint then asks :meth:`Gate.principal`.  A refused credential is
answered 401 with the RFC 6750 challenge :meth:`Gate.challenge` builds (also used for 403
``insufficient_scope``).
"""

from __future__ import annotations

import re
from typing import Any, Callable

from ..auth._principals import Principal
from ..errors import InvalidCredential, InvalidRequest
from ..server._server import Server
from ._http_wire import HttpError

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})


def _host_of(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _origin_host(origin: str) -> str | None:
    m = re.match(r"^https?://([^/]+)$", origin.strip().lower())
    return _host_of(m.group(1)) if m else None


class Gate:
    """Host/Origin allow-lists (verdicts remembered per header value) and authentication."""

    def __init__(self, server: Server, allowed_hosts: frozenset[str], allowed_origins: frozenset[str],
                 authenticate: Callable[[str | None], Principal] | None, anonymous: Principal | None) -> None:
        self.server = server
        self.allowed_hosts = allowed_hosts
        self.allowed_origins = allowed_origins
        self.authenticate = authenticate
        self.anonymous = anonymous
        self._verdicts: dict[str | None, bool] = {}  # Host (None: absent) / "origin " + Origin value -> allowed

    def check_origin(self, headers: dict[str, str]) -> None:
        host = headers.get("host")
        ok = self._verdicts.get(host)
        if ok is None:
            ok = host is not None and _host_of(host) in self.allowed_hosts
            self._remember(host, ok)
        if not ok:
            raise HttpError(403, InvalidRequest("Host not allowed"))
        origin = headers.get("origin")
        if origin is not None:
            key = "origin " + origin  # (one cache for both: an Origin value has a scheme, a Host value none)
            ok = self._verdicts.get(key)
            if ok is None:
                ok = _origin_host(origin) in self.allowed_origins
                self._remember(key, ok)
            if not ok:
                raise HttpError(403, InvalidRequest("Origin not allowed"))

    def _remember(self, key: str | None, ok: bool) -> None:
        if key is None:
            return
        if len(self._verdicts) >= 256:  # a client sending many values gets no memory, only the check
            self._verdicts.clear()
        self._verdicts[key] = ok

    def principal(self, headers: dict[str, str], id: Any) -> Principal:
        auth = headers.get("authorization")
        token = None
        if auth is not None:
            scheme, _, token = auth.partition(" ")
            if scheme.lower() != "bearer":
                token = None
            token = token.strip() if token else None
        if token is None and self.anonymous is not None:
            return self.anonymous
        try:
            if self.authenticate is not None:
                return self.authenticate(token)
            return self.server.authenticate(token)
        except InvalidCredential as exc:
            # RFC 6750: no error code when no credential was sent at all.
            challenge = self.challenge(error="invalid_token" if token else None)
            raise HttpError(401, exc, id, [(b"www-authenticate", challenge)]) from None

    def _metadata_url(self) -> str | None:
        resource = getattr(self.server.tokens, "protected_resource", None)
        if resource is None:
            return None
        base = resource.resource
        from urllib.parse import urlsplit

        parts = urlsplit(base)
        return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"

    def challenge(self, *, error: str | None = None, scope: str | None = None) -> bytes:
        params = []
        if error:
            params.append(f'error="{error}"')
        if scope:
            params.append(f'scope="{scope}"')
        metadata = self._metadata_url()
        if metadata:
            params.append(f'resource_metadata="{metadata}"')
        return ("Bearer " + ", ".join(params) if params else 'Bearer realm="mcp"').encode()
