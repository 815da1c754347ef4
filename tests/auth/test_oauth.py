"""OAuth resource server: real signed JWTs (RSA and EC P-256 keys made here), checked in process
(``JWTVerifier.authenticate``) and over HTTP against ``truecall serve --http --jwt-issuer ...``.

Every refusal is checked on both sides: the reason the verifier gives (for the audit trail) and
what a client sees (401/403, the RFC 6750/9728 challenge, a JSON-RPC error with the request id),
plus the audit row it leaves and the absence of the token from every byte of the database.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import http.server
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import jwt
import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from typer.testing import CliRunner

import mcp_schema
from http_support import HOST, MODERN, wait_ready, free_port, meta, modern_call
from stress.common import terminate
from truecall import InsufficientScope, InvalidCredential, Principal
from truecall.cli import serving
from truecall.cli._commands import app as cli_app
from truecall.audit._journal import wait_loaded
from truecall.incidents import build_desk
from truecall.auth.oauth import ClaimNames, JWTVerifier

ISSUER = "https://idp.example.test"
READ, WRITE = "incidents:read", "incidents:write"
SEARCH = {"name": "incident.search", "arguments": {"service": "payments"}}
ESCALATE = {"name": "incident.escalate", "arguments": {"incidentId": "INC-1001"}}

# -- keys and tokens -------------------------------------------------------------------------------

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
#: Same kids as the real keys, different key material: a forger who knows the kid.
RSA_IMPOSTOR = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_IMPOSTOR = ec.generate_private_key(ec.SECP256R1())
RSA_KID, EC_KID = "rsa-2026", "ec-2026"


def public_jwk(key: Any, kid: str) -> dict[str, Any]:
    algo = jwt.algorithms.RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else jwt.algorithms.ECAlgorithm
    jwk = json.loads(algo.to_jwk(key.public_key()))
    jwk["kid"] = kid
    jwk["use"] = "sig"
    return jwk


JWKS = {"keys": [public_jwk(RSA_KEY, RSA_KID), public_jwk(EC_KEY, EC_KID)]}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims(audience: str | None, **overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    body: dict[str, Any] = {"iss": ISSUER, "sub": "ada@acme", "tenant": "acme", "scope": f"{READ} {WRITE}",
                            "iat": now, "exp": now + 300, "jti": os.urandom(8).hex()}
    if audience is not None:
        body["aud"] = audience
    for name, value in overrides.items():
        if value is _DROP:
            body.pop(name, None)
        else:
            body[name] = value
    return body


_DROP = object()


def sign(body: dict[str, Any], *, key: Any = RSA_KEY, kid: str | None = RSA_KID, alg: str = "RS256") -> str:
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(body, key, algorithm=alg, headers=headers)


def handmade(header: dict[str, Any], body: dict[str, Any], signature: bytes = b"") -> str:
    """A token assembled by hand (for what PyJWT refuses to produce)."""
    signing_input = b64url(orjson.dumps(header)) + "." + b64url(orjson.dumps(body))
    return signing_input + "." + b64url(signature)


def alg_none(body: dict[str, Any]) -> str:
    return handmade({"alg": "none", "typ": "JWT", "kid": RSA_KID}, body)


def hs256_with_public_key(body: dict[str, Any]) -> str:
    """The classic confusion attack: HMAC keyed with the issuer's *public* key (PEM bytes)."""
    pem = RSA_KEY.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    header = {"alg": "HS256", "typ": "JWT", "kid": RSA_KID}
    signing_input = b64url(orjson.dumps(header)) + "." + b64url(orjson.dumps(body))
    return signing_input + "." + b64url(hmac.new(pem, signing_input.encode(), hashlib.sha256).digest())


#: name → (token factory taking the audience, the verifier's reason). Every one must be refused.
REFUSALS: dict[str, tuple[Callable[[str], str], str]] = {
    "expired": (lambda aud: sign(claims(aud, exp=int(time.time()) - 3600, iat=int(time.time()) - 7200)), "expired"),
    "expired-ec": (lambda aud: sign(claims(aud, exp=int(time.time()) - 3600), key=EC_KEY, kid=EC_KID, alg="ES256"),
                   "expired"),
    "not-yet-valid": (lambda aud: sign(claims(aud, nbf=int(time.time()) + 600)), "not_yet_valid"),
    "wrong-issuer": (lambda aud: sign(claims(aud, iss="https://evil.example.test")), "issuer"),
    "missing-issuer": (lambda aud: sign(claims(aud, iss=_DROP)), "issuer"),
    "wrong-audience": (lambda aud: sign(claims("http://127.0.0.1:1/other-mcp")), "audience"),
    "missing-audience": (lambda aud: sign(claims(None)), "audience"),
    "wrong-signature-rsa": (lambda aud: sign(claims(aud), key=RSA_IMPOSTOR), "signature"),
    "wrong-signature-ec": (lambda aud: sign(claims(aud), key=EC_IMPOSTOR, kid=EC_KID, alg="ES256"), "signature"),
    "alg-none": (lambda aud: alg_none(claims(aud)), "algorithm"),
    "hs256-with-public-key": (lambda aud: hs256_with_public_key(claims(aud)), "algorithm"),
    "ec-alg-on-rsa-kid": (lambda aud: sign(claims(aud), key=EC_KEY, kid=RSA_KID, alg="ES256"), "algorithm"),
    "rsa-alg-on-ec-kid": (lambda aud: sign(claims(aud), key=RSA_KEY, kid=EC_KID, alg="RS256"), "algorithm"),
    "unknown-kid": (lambda aud: sign(claims(aud), kid="nobody-knows-this-kid"), "unknown_key"),
    "missing-tenant": (lambda aud: sign(claims(aud, tenant=_DROP)), "claims"),
    "non-string-tenant": (lambda aud: sign(claims(aud, tenant=["acme", "globex"])), "claims"),
    "missing-subject": (lambda aud: sign(claims(aud, sub=_DROP)), "claims"),
    "missing-exp": (lambda aud: sign(claims(aud, exp=_DROP)), "claims"),
    "garbage": (lambda aud: "not-a-jwt-at-all", "malformed"),
    "non-string-kid": (lambda aud: handmade({"alg": "RS256", "kid": ["x"]}, claims(aud)), "malformed"),
}


def verifier(audience: str, **kwargs: Any) -> JWTVerifier:
    return JWTVerifier(issuer=ISSUER, audience=audience, jwks=kwargs.pop("jwks", JWKS), **kwargs)


# =================================================================================================
# In process
# =================================================================================================

AUD = "http://127.0.0.1:8000/mcp"


@pytest.mark.parametrize("alg,key,kid", [("RS256", RSA_KEY, RSA_KID), ("ES256", EC_KEY, EC_KID),
                                         ("PS256", RSA_KEY, RSA_KID), ("RS512", RSA_KEY, RSA_KID)])
def test_valid_token_gives_the_principal(alg: str, key: Any, kid: str) -> None:
    principal = verifier(AUD).authenticate(sign(claims(AUD), key=key, kid=kid, alg=alg))
    assert principal == Principal("ada@acme", "acme", frozenset({READ, WRITE}))


def test_jwks_from_a_file_and_leeway(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_bytes(orjson.dumps(JWKS))
    v = JWTVerifier(issuer=ISSUER, audience=AUD, jwks=path)
    now = int(time.time())
    # inside the default 30 s leeway: accepted; beyond it: refused
    assert v.authenticate(sign(claims(AUD, exp=now - 5))).subject == "ada@acme"
    assert v.authenticate(sign(claims(AUD, nbf=now + 5))).subject == "ada@acme"
    with pytest.raises(InvalidCredential) as info:
        v.authenticate(sign(claims(AUD, nbf=now + 120)))
    assert info.value.reason == "not_yet_valid"


def test_audience_may_be_one_of_several() -> None:
    token = sign(claims(["https://other.example.test", AUD]))
    assert verifier(AUD).authenticate(token).tenant == "acme"


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refused_in_process_with_the_reason(case: str) -> None:
    make, reason = REFUSALS[case]
    token = make(AUD)
    with pytest.raises(InvalidCredential) as info:
        verifier(AUD).authenticate(token)
    assert info.value.reason == reason
    # the client only ever hears one message, whatever the reason
    assert info.value.message == "Invalid or missing credential" and info.value.code == -32001
    assert token not in str(info.value) and info.value.data is None


@pytest.mark.parametrize("token", [None, "", "x" * (16 * 1024 + 1)])
def test_missing_or_oversized_token(token: str | None) -> None:
    with pytest.raises(InvalidCredential) as info:
        verifier(AUD).authenticate(token)
    assert info.value.reason == "missing"


def test_kidless_token_needs_a_single_key_jwks() -> None:
    body = claims(AUD)
    single = verifier(AUD, jwks={"keys": [public_jwk(RSA_KEY, RSA_KID)]})
    assert single.authenticate(sign(body, kid=None)).subject == "ada@acme"
    with pytest.raises(InvalidCredential) as info:
        verifier(AUD).authenticate(sign(body, kid=None))  # two keys: which one? none.
    assert info.value.reason == "unknown_key"


def test_custom_claim_names_tenant_org_and_scp_list() -> None:
    v = verifier(AUD, claims=ClaimNames(tenant="org", scope="scp"))
    token = sign(claims(AUD, tenant=_DROP, scope=_DROP, org="globex", scp=[READ, 7, WRITE]))
    assert v.authenticate(token) == Principal("ada@acme", "globex", frozenset({READ, WRITE}))
    # the default claim names mean nothing to this verifier
    with pytest.raises(InvalidCredential) as info:
        v.authenticate(sign(claims(AUD)))
    assert info.value.reason == "claims"
    # and a space-separated string still works for scp
    assert v.authenticate(sign(claims(AUD, org="globex", scp=READ))).scopes == frozenset({READ})


def test_no_scope_claim_means_no_scopes() -> None:
    assert verifier(AUD).authenticate(sign(claims(AUD, scope=_DROP))).scopes == frozenset()
    assert verifier(AUD).authenticate(sign(claims(AUD, scope={"a": 1}))).scopes == frozenset()


def test_audience_is_required_unless_switched_off() -> None:
    with pytest.raises(ValueError):
        JWTVerifier(issuer=ISSUER, audience=None, jwks=JWKS)
    lax = JWTVerifier(issuer=ISSUER, audience=None, jwks=JWKS, check_audience=False)
    assert lax.authenticate(sign(claims(None))).subject == "ada@acme"
    assert lax.protected_resource is None


def test_hmac_and_none_are_never_allowed_even_if_asked_for() -> None:
    v = verifier(AUD, algorithms=["HS256", "none", "RS256"])
    assert v.algorithms == ["RS256"]
    for token in (alg_none(claims(AUD)), hs256_with_public_key(claims(AUD))):
        with pytest.raises(InvalidCredential) as info:
            v.authenticate(token)
        assert info.value.reason == "algorithm"


def test_insufficient_scope_in_process(tmp_path: Path) -> None:
    desk = build_desk(str(tmp_path / "desk.db"), tokens=verifier(AUD)).start()  # type: ignore[arg-type]
    try:
        reader = sign(claims(AUD, scope=READ))
        assert desk.call_tool("incident.search", {"service": "payments"}, reader).structured_content["count"] == 2
        with pytest.raises(InsufficientScope) as info:
            desk.call_tool("incident.escalate", {"incidentId": "INC-1001"}, reader)
        assert info.value.required == (WRITE,) and info.value.data == {"requiredScopes": [WRITE]}
        rows = desk.db.fetchall("SELECT kind, tool, outcome, fields FROM audit_events ORDER BY id")
        kind, tool, outcome, fields = rows[-1]
        assert (kind, tool, outcome) == ("tool.denied", "incident.escalate", "denied")
        assert orjson.loads(fields)["reason"] == "insufficient_scope"
        # a refused token is recorded as tool.denied (a tool was named) with the reason as detail
        with pytest.raises(InvalidCredential):
            desk.call_tool("incident.search", {"service": "payments"}, REFUSALS["expired"][0](AUD))
        kind, fields = desk.db.fetchone("SELECT kind, fields FROM audit_events ORDER BY id DESC LIMIT 1")
        assert kind == "tool.denied" and orjson.loads(fields)["detail"] == "expired"
    finally:
        desk.db.close()


def test_protected_resource_document() -> None:
    v = verifier(AUD, scopes_supported=[READ, WRITE], resource_name="Incident desk")
    assert v.protected_resource.document() == {
        "resource": AUD, "authorization_servers": [ISSUER], "bearer_methods_supported": ["header"],
        "scopes_supported": [READ, WRITE], "resource_name": "Incident desk"}


# -- a JWKS served over loopback HTTP ----------------------------------------------------------------


class _JwksHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        owner: JwksServer = self.server.owner  # type: ignore[attr-defined]
        owner.hits += 1
        if self.path != "/jwks.json" or owner.down:
            self.send_response(503)
            self.end_headers()
            return
        body = orjson.dumps(owner.jwks)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


class JwksServer:
    """An issuer's JWKS endpoint on 127.0.0.1 whose keys the test can rotate."""

    def __init__(self, jwks: dict[str, Any]) -> None:
        self.jwks = jwks
        self.hits = 0
        self.down = False
        self.httpd = http.server.ThreadingHTTPServer((HOST, 0), _JwksHandler)
        self.httpd.owner = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.httpd.server_address[1]}/jwks.json"

    def __enter__(self) -> "JwksServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def test_jwks_url_is_fetched_once_and_cached() -> None:
    with JwksServer(JWKS) as idp:
        v = verifier(AUD, jwks=idp.url)
        assert idp.hits == 1
        for _ in range(5):
            assert v.authenticate(sign(claims(AUD))).tenant == "acme"
            assert v.authenticate(sign(claims(AUD), key=EC_KEY, kid=EC_KID, alg="ES256")).tenant == "acme"
        assert idp.hits == 1


def test_key_rotation_a_new_kid_is_picked_up() -> None:
    new_key = ec.generate_private_key(ec.SECP256R1())
    with JwksServer({"keys": [public_jwk(RSA_KEY, RSA_KID)]}) as idp:
        v = verifier(AUD, jwks=idp.url, jwks_refetch_s=0)
        assert v.authenticate(sign(claims(AUD))).subject == "ada@acme"
        # the issuer rotates: a new kid appears, the old one is retired
        idp.jwks = {"keys": [public_jwk(new_key, "ec-2027")]}
        assert v.authenticate(sign(claims(AUD), key=new_key, kid="ec-2027", alg="ES256")).subject == "ada@acme"
        assert idp.hits == 2
        # the retired key no longer verifies anything once the keys were refetched
        with pytest.raises(InvalidCredential) as info:
            v.authenticate(sign(claims(AUD)))
        assert info.value.reason == "unknown_key"


def test_unknown_kids_do_not_make_the_server_refetch_on_every_request() -> None:
    """A stream of tokens with made-up kids must not turn into a stream of JWKS fetches."""
    with JwksServer(JWKS) as idp:
        v = verifier(AUD, jwks=idp.url)
        for i in range(20):
            with pytest.raises(InvalidCredential) as info:
                v.authenticate(sign(claims(AUD), kid=f"made-up-{i}"))
            assert info.value.reason == "unknown_key"
        assert idp.hits <= 2


def test_with_default_settings_rotation_is_picked_up_once_the_refetch_window_passed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    import truecall.auth.oauth as oauth

    clock = [1000.0]
    monkeypatch.setattr(oauth, "time", types.SimpleNamespace(monotonic=lambda: clock[0], time=time.time))
    new_key = ec.generate_private_key(ec.SECP256R1())
    with JwksServer(JWKS) as idp:
        v = verifier(AUD, jwks=idp.url)
        idp.jwks = {"keys": [*JWKS["keys"], public_jwk(new_key, "ec-2027")]}
        rotated = sign(claims(AUD), key=new_key, kid="ec-2027", alg="ES256")
        clock[0] += 1.0  # within the refetch window: no fetch, not known yet
        with pytest.raises(InvalidCredential):
            v.authenticate(rotated)
        assert idp.hits == 1
        clock[0] += 10.0  # the window passed: the unknown kid triggers one fetch
        assert v.authenticate(rotated).subject == "ada@acme"
        assert idp.hits == 2
        clock[0] += 299.0  # within the cache lifetime: no fetch
        assert v.authenticate(sign(claims(AUD))).subject == "ada@acme"
        assert idp.hits == 2
        clock[0] += 2.0  # cache expired: refreshed on the next use
        assert v.authenticate(sign(claims(AUD))).subject == "ada@acme"
        assert idp.hits == 3


def test_expired_cache_is_refreshed_and_an_unreachable_issuer_keeps_the_old_keys() -> None:
    with JwksServer(JWKS) as idp:
        v = verifier(AUD, jwks=idp.url, jwks_cache_s=0.05, jwks_refetch_s=0)
        time.sleep(0.1)
        assert v.authenticate(sign(claims(AUD))).tenant == "acme"
        assert idp.hits == 2
        idp.down = True
        time.sleep(0.1)
        assert v.authenticate(sign(claims(AUD))).tenant == "acme"  # fetch failed: the keys we had still work
        assert idp.hits == 3


@pytest.mark.parametrize("url", [
    "http://127.0.0.1.nip.io/jwks.json",
    "http://localhost.attacker.example/jwks.json",
    "http://localhost@attacker.example/jwks.json",
    "http://127.0.0.1@attacker.example/jwks.json",
    "http://10.0.0.1/jwks.json",
    "ftp://127.0.0.1/jwks.json",
    "file:///etc/passwd",
])
def test_plain_http_jwks_is_allowed_only_for_loopback(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"fetched {url}")

    monkeypatch.setattr("urllib.request.urlopen", no_network)
    with pytest.raises(ValueError):
        verifier(AUD, jwks=url)


def test_a_jwks_without_usable_keys_is_refused() -> None:
    with pytest.raises(ValueError):
        verifier(AUD, jwks={"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"}]})
    with pytest.raises(ValueError):
        verifier(AUD, jwks={"keys": []})


# =================================================================================================
# Over HTTP: truecall serve --http with JWT verification
# =================================================================================================


class JwtServed:
    def __init__(self, proc: subprocess.Popen[bytes], port: int, db: Path, log: Path) -> None:
        self.proc, self.port, self.db, self.log = proc, port, db, log

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    @property
    def metadata_url(self) -> str:
        return f"{self.base}/.well-known/oauth-protected-resource/mcp"

    def audit_rows(self) -> list[tuple[Any, ...]]:
        assert wait_loaded(self.db), "the server did not load its audit journal into the table"
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute("SELECT id, kind, tenant, subject, tool, outcome, fields FROM audit_events "
                                "ORDER BY id").fetchall()
        finally:
            conn.close()

    def persisted_bytes(self) -> bytes:
        return b"".join(p.read_bytes() for p in sorted(self.db.parent.glob(self.db.name + "*")) + sorted(
            self.db.parent.glob(self.db.name + "-audit/*")) if p.is_file())


@contextlib.contextmanager
def jwt_served(directory: Path, jwks: str, *extra: str) -> Iterator[JwtServed]:
    """``truecall serve --http`` on a port known in advance (the audience names it)."""
    directory.mkdir(parents=True, exist_ok=True)
    db = directory / "desk.db"
    log = directory / "serve.log"
    env = {**os.environ, "TRUECALL_DB": str(db)}
    env.pop("TRUECALL_PRINCIPAL", None)
    for _attempt in range(3):
        port = free_port()
        cmd = [sys.executable, "-m", "truecall", "serve", "--http", "--host", HOST, "--port", str(port),
               "--jwt-issuer", ISSUER, "--jwt-audience", f"http://{HOST}:{port}/mcp", "--jwks", jwks, *extra]
        with open(log, "wb") as err:
            proc = subprocess.Popen(cmd, cwd=directory, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=err)
        if wait_ready(proc, port, 15.0):
            break
        terminate(proc, 5.0)
    else:
        raise RuntimeError(f"serve did not start: {log.read_text(errors='replace')[-2000:]}")
    try:
        yield JwtServed(proc, port, db, log)
    finally:
        terminate(proc, 5.0)


@pytest.fixture(scope="module")
def jwks_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("jwks") / "jwks.json"
    path.write_bytes(orjson.dumps(JWKS))
    return path


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory, jwks_file: Path) -> Iterator[JwtServed]:
    with jwt_served(tmp_path_factory.mktemp("jwt-desk"), str(jwks_file)) as served_desk:
        yield served_desk


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(10.0)) as c:
        yield c


def challenge_params(value: str) -> dict[str, str]:
    assert value.startswith("Bearer "), value
    return dict(re.findall(r'(\w+)="([^"]*)"', value))


def assert_error(resp: httpx.Response, status: int, code: int, id: Any) -> dict[str, Any]:
    assert resp.status_code == status, (resp.status_code, resp.text)
    assert resp.headers["content-type"].startswith("application/json")
    message = orjson.loads(resp.content)
    mcp_schema.check(message, MODERN)
    assert message["id"] == id and message["error"]["code"] == code, message
    return message


def test_metadata_document(desk: JwtServed, client: httpx.Client) -> None:
    resp = client.get(desk.metadata_url)
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/json")
    doc = resp.json()
    assert doc["resource"] == desk.url
    assert doc["authorization_servers"] == [ISSUER]
    assert doc["scopes_supported"] == [READ, WRITE]
    assert doc["bearer_methods_supported"] == ["header"]
    assert client.post(desk.metadata_url).status_code == 404  # GET only


@pytest.mark.parametrize("alg,key,kid", [("RS256", RSA_KEY, RSA_KID), ("ES256", EC_KEY, EC_KID)])
def test_valid_token_over_http(desk: JwtServed, client: httpx.Client, alg: str, key: Any, kid: str) -> None:
    token = sign(claims(desk.url, scope=READ), key=key, kid=kid, alg=alg)
    resp = modern_call(client, desk.url, "ok-1", "tools/call", SEARCH, token=token)
    assert resp.status_code == 200, resp.text
    message = orjson.loads(resp.content)
    mcp_schema.check(message, MODERN, "CallToolResult")
    assert message["result"]["structuredContent"] == {"service": "payments", "count": 2, "tenant": "acme"}
    # the reader sees only the tool its scopes allow
    listed = orjson.loads(modern_call(client, desk.url, "ok-2", "tools/list", token=token).content)
    assert [t["name"] for t in listed["result"]["tools"]] == ["incident.search"]
    assert token.encode() not in desk.persisted_bytes()


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refused_over_http(desk: JwtServed, client: httpx.Client, case: str) -> None:
    make, reason = REFUSALS[case]
    token = make(desk.url)
    before = desk.audit_rows()
    resp = modern_call(client, desk.url, f"id-{case}", "tools/call", SEARCH, token=token)
    message = assert_error(resp, 401, -32001, f"id-{case}")
    assert message["error"]["message"] == "Invalid or missing credential" and "data" not in message["error"]
    challenge = challenge_params(resp.headers["www-authenticate"])
    assert challenge == {"error": "invalid_token", "resource_metadata": desk.metadata_url}
    new = desk.audit_rows()[len(before):]
    assert len(new) == 1, new
    _, kind, tenant, subject, tool, outcome, fields = new[0]
    assert (kind, tenant, subject, outcome) == ("auth.denied", None, None, "denied")
    assert orjson.loads(fields) == {"reason": "invalid_credential", "detail": reason}
    assert token.encode() not in desk.persisted_bytes()
    signature = token.split(".")[-1]
    if len(signature) > 16:
        assert signature.encode() not in desk.persisted_bytes()
    assert token not in resp.text


@pytest.mark.parametrize("authorization", [None, "Bearer", "Basic YWxpY2U6c2VjcmV0", "bearer"])
def test_no_bearer_token_is_401_without_an_error_code(desk: JwtServed, client: httpx.Client,
                                                      authorization: str | None) -> None:
    headers = {} if authorization is None else {"authorization": authorization}
    before = len(desk.audit_rows())
    resp = modern_call(client, desk.url, 77, "tools/call", SEARCH, token=None, headers=headers)
    assert_error(resp, 401, -32001, 77)
    # RFC 6750 §3.1: no error code when the request carried no bearer credential at all
    assert challenge_params(resp.headers["www-authenticate"]) == {"resource_metadata": desk.metadata_url}
    new = desk.audit_rows()[before:]
    assert [(r[1], orjson.loads(r[6])["detail"]) for r in new] == [("auth.denied", "missing")]


def test_insufficient_scope_over_http(desk: JwtServed, client: httpx.Client) -> None:
    token = sign(claims(desk.url, scope=READ, sub="reader@acme"))
    before = len(desk.audit_rows())
    resp = modern_call(client, desk.url, "esc-1", "tools/call", ESCALATE, token=token)
    message = assert_error(resp, 403, -32003, "esc-1")
    assert message["error"]["data"] == {"requiredScopes": [WRITE]}
    assert challenge_params(resp.headers["www-authenticate"]) == {
        "error": "insufficient_scope", "scope": WRITE, "resource_metadata": desk.metadata_url}
    new = desk.audit_rows()[before:]
    assert len(new) == 1
    _, kind, tenant, subject, tool, outcome, fields = new[0]
    assert (kind, tenant, subject, tool, outcome) == ("tool.denied", "acme", "reader@acme", "incident.escalate",
                                                      "denied")
    assert orjson.loads(fields) == {"reason": "insufficient_scope"}
    assert token.encode() not in desk.persisted_bytes()


def test_insufficient_scope_in_a_handshake_era_session(desk: JwtServed, client: httpx.Client) -> None:
    token = sign(claims(desk.url, scope=READ, sub="legacy@acme"))
    auth = {"authorization": f"Bearer {token}", "content-type": "application/json",
            "accept": "application/json, text/event-stream"}
    init = client.post(desk.url, headers=auth, content=orjson.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
    assert init.status_code == 200, init.text
    session = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    client.post(desk.url, headers={**auth, **session},
                content=orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    resp = client.post(desk.url, headers={**auth, **session}, content=orjson.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": ESCALATE}))
    assert resp.status_code == 403
    message = orjson.loads(resp.content)
    mcp_schema.check(message, "2025-11-25")
    assert message["id"] == 2 and message["error"]["code"] == -32003
    assert challenge_params(resp.headers["www-authenticate"])["error"] == "insufficient_scope"
    # a session is bound to its principal: another (valid) token cannot use it
    other = sign(claims(desk.url, scope=f"{READ} {WRITE}", sub="mallory@acme"))
    resp = client.post(desk.url, headers={**auth, **session, "authorization": f"Bearer {other}"},
                       content=orjson.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
    assert resp.status_code == 404


def test_jwks_url_and_custom_claims_over_http(tmp_path: Path, client: httpx.Client) -> None:
    """``--jwks http://127.0.0.1:…/jwks.json`` with ``--tenant-claim org --scope-claim scp``."""
    with JwksServer(JWKS) as idp, jwt_served(tmp_path / "custom", idp.url,
                                             "--tenant-claim", "org", "--scope-claim", "scp") as served_desk:
        assert idp.hits == 1
        token = sign(claims(served_desk.url, tenant=_DROP, scope=_DROP, org="globex", scp=[READ]))
        resp = modern_call(client, served_desk.url, 1, "tools/call", SEARCH, token=token)
        assert resp.status_code == 200, resp.text
        assert orjson.loads(resp.content)["result"]["structuredContent"] == {
            "service": "payments", "count": 1, "tenant": "globex"}
        # a token naming the tenant in the default claim is refused here (there is no "org" claim)
        resp = modern_call(client, served_desk.url, 2, "tools/call", SEARCH, token=sign(claims(served_desk.url)))
        assert_error(resp, 401, -32001, 2)
        assert orjson.loads(served_desk.audit_rows()[-1][6])["detail"] == "claims"
        # scp without incidents:write: escalate is a 403 naming the scope
        esc = modern_call(client, served_desk.url, 3, "tools/call", ESCALATE, token=token)
        assert_error(esc, 403, -32003, 3)
        assert challenge_params(esc.headers["www-authenticate"])["scope"] == WRITE
        assert idp.hits == 1  # the keys were cached


def test_algorithm_confusion_over_http_never_crashes_the_server(desk: JwtServed, client: httpx.Client) -> None:
    for case in ("ec-alg-on-rsa-kid", "rsa-alg-on-ec-kid", "hs256-with-public-key", "alg-none"):
        resp = modern_call(client, desk.url, case, "tools/call", SEARCH, token=REFUSALS[case][0](desk.url))
        assert_error(resp, 401, -32001, case)
    assert "Traceback" not in desk.log.read_text(errors="replace")


# -- the CLI ---------------------------------------------------------------------------------------------


def _forbid_binding(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Any attempt to listen fails the test; returns where uvicorn configs would be recorded."""
    import uvicorn

    started: list[Any] = []

    def no_bind(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"tried to bind {address}")

    def fake_run(self: Any, *args: Any, **kwargs: Any) -> None:
        started.append(self.config)

    class NotListening:
        def close(self) -> None:
            pass

    monkeypatch.setattr(socket.socket, "bind", no_bind)
    # serve() binds its listening socket itself, just before it runs uvicorn on it.
    monkeypatch.setattr(serving, "_listen", lambda host, port: NotListening())
    monkeypatch.setattr(uvicorn.Server, "run", fake_run)
    return started


def test_non_loopback_with_demo_credentials_refuses_before_binding(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    started = _forbid_binding(monkeypatch)
    monkeypatch.setenv("TRUECALL_DB", str(tmp_path / "desk.db"))
    for var in ("TRUECALL_TOKEN_FILE", "TRUECALL_JWT_ISSUER", "TRUECALL_JWT_AUDIENCE", "TRUECALL_JWKS"):
        monkeypatch.delenv(var, raising=False)
    result = CliRunner().invoke(cli_app, ["serve", "--http", "--host", "192.0.2.1", "--port", "8080"])
    assert result.exit_code == 2, result.output
    assert "refusing to bind a non-loopback address" in result.output
    assert started == []


def test_non_loopback_with_jwt_credentials_is_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      jwks_file: Path) -> None:
    started = _forbid_binding(monkeypatch)
    monkeypatch.setenv("TRUECALL_DB", str(tmp_path / "desk.db"))
    result = CliRunner().invoke(cli_app, [
        "serve", "--http", "--host", "192.0.2.1", "--port", "8080", "--jwt-issuer", ISSUER,
        "--jwt-audience", "https://desk.example.test/mcp", "--jwks", str(jwks_file)])
    assert result.exit_code == 0, result.output
    assert len(started) == 1 and started[0].host == "192.0.2.1"
    transport = started[0].app
    assert transport.anonymous is None  # nobody is served without a token
    assert transport.allowed_hosts == frozenset({"192.0.2.1"})


@pytest.mark.parametrize("args", [
    ["--jwt-issuer", ISSUER],
    ["--jwt-issuer", ISSUER, "--jwks", "x.json"],
    ["--jwks", "x.json", "--jwt-audience", "http://127.0.0.1:1/mcp"],
    ["--jwt-audience", "http://127.0.0.1:1/mcp"],
])
def test_incomplete_jwt_options_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            args: list[str]) -> None:
    started = _forbid_binding(monkeypatch)
    monkeypatch.setenv("TRUECALL_DB", str(tmp_path / "desk.db"))
    result = CliRunner().invoke(cli_app, ["serve", "--http", *args])
    assert result.exit_code == 2, result.output
    assert started == []
