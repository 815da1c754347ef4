"""Streamable HTTP against a real ``truecall serve --http`` process, on the raw wire (httpx).

Every message the server sends is validated against the official schema of the version in force.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import orjson
import pytest

import mcp_schema
from http_support import (
    APP_DB_ENV,
    GLOBEX,
    LEGACY,
    MODERN,
    OPERATOR,
    READER,
    audit_kinds,
    meta,
    modern_call,
    modern_headers,
    raw_post,
    request,
    served,
    sse_messages,
    write_progress_app,
)

INIT_PARAMS = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "raw-http", "version": "0"}}


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with served(tmp_path_factory.mktemp("desk-http")) as server:
        yield server


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The progress app (``count`` reports progress, ``slow`` only sleeps), served anonymously on loopback."""
    directory = tmp_path_factory.mktemp("progress-app")
    path, db = write_progress_app(directory)
    with served(directory, f"{path}:app", env={APP_DB_ENV: str(db)}) as server:
        server.extra["app_db"] = db
        yield server


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(10.0)) as client:
        yield client


# -- helpers -------------------------------------------------------------------------


def json_body(resp: httpx.Response, version: str = MODERN, result_type: str | None = None) -> dict[str, Any]:
    """The JSON-RPC message of a JSON response, validated against ``version``'s schema."""
    assert resp.headers["content-type"].startswith("application/json"), resp.headers
    message = orjson.loads(resp.content)
    mcp_schema.check(message, version, result_type)
    return message


def error_of(resp: httpx.Response, status: int, code: int, id: Any, version: str = MODERN) -> dict[str, Any]:
    assert resp.status_code == status, (resp.status_code, resp.text)
    message = json_body(resp, version)
    assert message["error"]["code"] == code, message
    if id is None:
        assert "id" not in message or message["id"] is None
    else:
        assert message["id"] == id, message  # the error echoes the request id
    return message


def search_params(service: str = "payments") -> dict[str, Any]:
    return {"name": "incident.search", "arguments": {"service": service}}


# -- stateless 2026-07-28 --------------------------------------------------------------


def test_tools_list_is_json_with_result_type(desk: Any, http: httpx.Client) -> None:
    resp = modern_call(http, desk.url, 1, "tools/list")
    assert resp.status_code == 200
    message = json_body(resp, MODERN, "ListToolsResult")
    result = message["result"]
    assert message["id"] == 1
    assert result["resultType"] == "complete"
    assert {t["name"] for t in result["tools"]} == {"incident.search", "incident.escalate", "incident.handle", "incident.reconcile"}
    assert "mcp-session-id" not in resp.headers  # stateless: no session is ever minted


def test_tools_call_search_is_json_with_result_type(desk: Any, http: httpx.Client) -> None:
    resp = modern_call(http, desk.url, "call-1", "tools/call", search_params())
    assert resp.status_code == 200
    message = json_body(resp, MODERN, "CallToolResult")
    assert message["id"] == "call-1"
    result = message["result"]
    assert result["resultType"] == "complete"
    assert result["structuredContent"] == {"service": "payments", "count": 2, "tenant": "acme"}
    assert not result.get("isError")


def test_reader_sees_only_what_its_scopes_allow(desk: Any, http: httpx.Client) -> None:
    message = json_body(modern_call(http, desk.url, 2, "tools/list", token=READER), MODERN, "ListToolsResult")
    assert [t["name"] for t in message["result"]["tools"]] == ["incident.search"]


def _post(http: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    return http.post(url, content=orjson.dumps(body), headers=headers)


@pytest.mark.parametrize(
    ("case", "method", "params", "headers"),
    [
        ("missing MCP-Protocol-Version", "tools/list", {}, {"mcp-protocol-version": None}),
        ("version header differs from _meta", "tools/list", {}, {"mcp-protocol-version": LEGACY}),
        ("missing Mcp-Method", "tools/list", {}, {"mcp-method": None}),
        ("Mcp-Method names another method", "tools/list", {}, {"mcp-method": "prompts/list"}),
        ("Mcp-Method value case differs", "tools/list", {}, {"mcp-method": "TOOLS/LIST"}),
        ("missing Mcp-Name", "tools/call", search_params(), {"mcp-name": None}),
        ("Mcp-Name names another tool", "tools/call", search_params(), {"mcp-name": "wrong_tool_name"}),
        ("Mcp-Name value case differs", "tools/call", search_params(), {"mcp-name": "INCIDENT.SEARCH"}),
        ("base64 Mcp-Name without padding", "tools/call", search_params(),
         {"mcp-name": "=?base64?aW5jaWRlbnQuc2VhcmN?="}),
        ("Mcp-Name on resources/read differs from uri", "resources/read", {"uri": "incident://acme/INC-1001"},
         {"mcp-name": "incident://acme/INC-1002"}),
    ],
)
def test_routing_header_missing_or_mismatched_is_400_32020(
        desk: Any, http: httpx.Client, case: str, method: str, params: dict[str, Any], headers: dict[str, Any]) -> None:
    name = params.get("name") or params.get("uri")
    h = modern_headers(method, name)
    for key, value in headers.items():
        if value is None:
            h.pop(key, None)
        else:
            h[key] = value
    resp = _post(http, desk.url, request(100, method, {**params, "_meta": meta()}), h)
    message = error_of(resp, 400, -32020, 100)
    mcp_schema.check_result(message, "HeaderMismatchError", MODERN)


@pytest.mark.parametrize(
    ("case", "method", "params", "headers"),
    [
        ("whitespace around Mcp-Name is trimmed", "tools/call", search_params(),
         {"mcp-name": "  incident.search \t"}),
        # base64("incident.search") == "aW5jaWRlbnQuc2VhcmNo"
        ("base64-encoded Mcp-Name is decoded", "tools/call", search_params(),
         {"mcp-name": "=?base64?aW5jaWRlbnQuc2VhcmNo?="}),
        ("lowercase header names", "tools/list", {}, {"mcp-method": "tools/list"}),
        ("uppercase header names", "tools/list", {}, {"MCP-METHOD": "tools/list", "MCP-PROTOCOL-VERSION": MODERN}),
        ("Mcp-Name on resources/read is the uri", "resources/read", {"uri": "incident://acme/INC-1001"}, {}),
    ],
)
def test_routing_header_variants_that_must_be_accepted(
        desk: Any, http: httpx.Client, case: str, method: str, params: dict[str, Any], headers: dict[str, str]) -> None:
    name = params.get("name") or params.get("uri")
    h = {k: v for k, v in modern_headers(method, name).items()
         if k.lower() not in {x.lower() for x in headers}}
    h.update(headers)
    # Written on a raw socket: httpx refuses header values with surrounding whitespace.
    status, resp_headers, body = raw_post(desk.port, orjson.dumps(request(101, method, {**params, "_meta": meta()})), h)
    assert status == 200, body
    assert resp_headers["content-type"].startswith("application/json")
    result_type = {"tools/call": "CallToolResult", "tools/list": "ListToolsResult",
                   "resources/read": "ReadResourceResult"}[method]
    message = orjson.loads(body)
    mcp_schema.check(message, MODERN, result_type)
    assert message["id"] == 101
    assert "error" not in message and message["result"]["resultType"] == "complete"


def test_unsupported_version_is_400_32022(desk: Any, http: httpx.Client) -> None:
    resp = modern_call(http, desk.url, 7, "tools/list", {"_meta": meta("2099-01-01")},
                       headers={"mcp-protocol-version": "2099-01-01"})
    message = error_of(resp, 400, -32022, 7)
    mcp_schema.check_result(message, "UnsupportedProtocolVersionError", MODERN)
    assert message["error"]["data"]["requested"] == "2099-01-01"
    assert MODERN in message["error"]["data"]["supported"]


def test_missing_meta_is_400_32602(desk: Any, http: httpx.Client) -> None:
    resp = _post(http, desk.url, request(8, "tools/list", {}), modern_headers("tools/list"))
    error_of(resp, 400, -32602, 8)


def test_meta_without_client_capabilities_is_400_32602(desk: Any, http: httpx.Client) -> None:
    params = {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}
    resp = _post(http, desk.url, request(9, "tools/list", params), modern_headers("tools/list"))
    error_of(resp, 400, -32602, 9)


def test_unknown_method_is_404_32601(desk: Any, http: httpx.Client) -> None:
    resp = modern_call(http, desk.url, "x-1", "tasks/list", {})  # no Mcp-Name needed: method lookup comes first
    message = error_of(resp, 404, -32601, "x-1")
    mcp_schema.check_result(message["error"], "MethodNotFoundError", MODERN)


def test_notification_is_202_without_body(desk: Any, http: httpx.Client) -> None:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "_meta": meta()}}
    resp = _post(http, desk.url, body, modern_headers("notifications/cancelled"))
    assert resp.status_code == 202
    assert resp.content == b""


def test_unknown_tool_is_a_protocol_error(desk: Any, http: httpx.Client) -> None:
    resp = modern_call(http, desk.url, 11, "tools/call", {"name": "no.such.tool", "arguments": {}})
    message = json_body(resp, MODERN)
    assert message["id"] == 11 and message["error"]["code"] == -32602


def test_missing_argument_is_an_is_error_result(desk: Any, http: httpx.Client) -> None:
    resp = modern_call(http, desk.url, 12, "tools/call", {"name": "incident.search", "arguments": {}})
    assert resp.status_code == 200
    result = json_body(resp, MODERN, "CallToolResult")["result"]
    assert result["isError"] is True and result["resultType"] == "complete"


# -- authentication and authorization ------------------------------------------------


def test_no_token_is_401_with_www_authenticate(desk: Any, http: httpx.Client) -> None:
    resp = modern_call(http, desk.url, 20, "tools/list", token=None)
    error_of(resp, 401, -32001, 20)
    assert resp.headers["www-authenticate"].lower().startswith("bearer")


@pytest.mark.parametrize("authorization", ["Bearer not-a-token", "Basic ZGVtbzpkZW1v", "Bearer"])
def test_bad_token_is_401(desk: Any, http: httpx.Client, authorization: str) -> None:
    resp = modern_call(http, desk.url, 21, "tools/list", token=None, headers={"authorization": authorization})
    error_of(resp, 401, -32001, 21)
    assert resp.headers["www-authenticate"].lower().startswith("bearer")


def test_reader_calling_escalate_is_403_insufficient_scope(desk: Any, http: httpx.Client) -> None:
    resp = modern_call(http, desk.url, 22, "tools/call",
                       {"name": "incident.escalate", "arguments": {"incidentId": "INC-1001"}}, token=READER)
    message = error_of(resp, 403, -32003, 22)
    challenge = resp.headers["www-authenticate"]
    assert challenge.lower().startswith("bearer")
    assert 'error="insufficient_scope"' in challenge
    assert "incidents:write" in challenge
    assert message["error"]["data"]["requiredScopes"] == ["incidents:write"]


def test_tenant_isolation_globex_sees_only_globex(desk: Any, http: httpx.Client) -> None:
    resp = modern_call(http, desk.url, 23, "tools/call", search_params(), token=GLOBEX)
    result = json_body(resp, MODERN, "CallToolResult")["result"]
    assert result["structuredContent"] == {"service": "payments", "count": 1, "tenant": "globex"}
    # Another tenant's incident reads exactly like a missing one.
    resp = modern_call(http, desk.url, 24, "resources/read", {"uri": "incident://acme/INC-1001"}, token=GLOBEX)
    message = json_body(resp, MODERN)
    assert message["error"]["code"] == -32602
    assert "Card authorisations" not in resp.text


# -- DNS rebinding -------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example.com", "evil.example.com:{port}", "localhost.evil.example.com"])
def test_foreign_host_is_rejected(desk: Any, http: httpx.Client, host: str) -> None:
    resp = modern_call(http, desk.url, 30, "tools/list", headers={"host": host.format(port=desk.port)})
    assert 400 <= resp.status_code < 500
    if resp.headers.get("content-type", "").startswith("application/json"):
        mcp_schema.check(orjson.loads(resp.content), MODERN)


@pytest.mark.parametrize("origin", ["http://evil.example.com", "http://evil.example.com:{port}", "null"])
def test_foreign_origin_is_403(desk: Any, http: httpx.Client, origin: str) -> None:
    resp = modern_call(http, desk.url, 31, "tools/list", headers={"origin": origin.format(port=desk.port)})
    assert resp.status_code == 403
    mcp_schema.check(orjson.loads(resp.content), MODERN)


@pytest.mark.parametrize(("host", "origin"), [
    ("localhost:{port}", "http://localhost:{port}"),
    ("127.0.0.1:{port}", "http://127.0.0.1:{port}"),
    ("localhost", None),
])
def test_loopback_host_and_origin_are_served(desk: Any, http: httpx.Client, host: str, origin: str | None) -> None:
    headers = {"host": host.format(port=desk.port)}
    if origin is not None:
        headers["origin"] = origin.format(port=desk.port)
    resp = modern_call(http, desk.url, 32, "tools/list", headers=headers)
    assert resp.status_code == 200
    json_body(resp, MODERN, "ListToolsResult")


# -- body limits and malformed bodies ------------------------------------------------


def _big_body() -> bytes:
    filler = b"a" * (5 * 1024 * 1024)
    return b'{"jsonrpc":"2.0","id":40,"method":"tools/list","params":{"pad":"' + filler + b'"}}'


def _still_serving(desk: Any, http: httpx.Client) -> None:
    resp = modern_call(http, desk.url, 49, "tools/call", search_params())
    assert json_body(resp, MODERN, "CallToolResult")["result"]["structuredContent"]["count"] == 2


def test_five_megabyte_body_is_413(desk: Any, http: httpx.Client) -> None:
    resp = http.post(desk.url, content=_big_body(), headers=modern_headers("tools/list"))
    assert resp.status_code == 413
    mcp_schema.check(orjson.loads(resp.content), MODERN)
    _still_serving(desk, http)


def test_five_megabyte_chunked_body_is_413(desk: Any, http: httpx.Client) -> None:
    big = _big_body()

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit must hold while reading
        for start in range(0, len(big), 256 * 1024):
            yield big[start:start + 256 * 1024]

    resp = http.post(desk.url, content=chunks(), headers=modern_headers("tools/list"))
    assert resp.status_code == 413
    mcp_schema.check(orjson.loads(resp.content), MODERN)
    _still_serving(desk, http)


def test_malformed_json_is_400_32700(desk: Any, http: httpx.Client) -> None:
    resp = http.post(desk.url, content=b'{"jsonrpc": "2.0", "id": 41, "method": ', headers=modern_headers("tools/list"))
    error_of(resp, 400, -32700, None)
    _still_serving(desk, http)


def test_batch_is_400_32600(desk: Any, http: httpx.Client) -> None:
    batch = [request(42, "tools/list", {"_meta": meta()}), request(43, "tools/list", {"_meta": meta()})]
    resp = http.post(desk.url, content=orjson.dumps(batch), headers=modern_headers("tools/list"))
    error_of(resp, 400, -32600, None)
    _still_serving(desk, http)


# -- handshake era (2025-11-25) --------------------------------------------------------


def _legacy_headers(token: str = OPERATOR, session: str | None = None, sse: bool = True) -> dict[str, str]:
    h = {"content-type": "application/json", "authorization": f"Bearer {token}",
         "accept": "application/json, text/event-stream" if sse else "application/json"}
    if session is not None:
        h["mcp-session-id"] = session
        h["mcp-protocol-version"] = LEGACY
    return h


def _open_session(desk: Any, http: httpx.Client, token: str = OPERATOR,
                  capabilities: dict[str, Any] | None = None) -> str:
    params = INIT_PARAMS if capabilities is None else {**INIT_PARAMS, "capabilities": capabilities}
    resp = _post(http, desk.url, request(1, "initialize", params), _legacy_headers(token))
    assert resp.status_code == 200
    message = json_body(resp, LEGACY, "InitializeResult")
    assert message["result"]["protocolVersion"] == LEGACY
    session = resp.headers["mcp-session-id"]
    assert session and all(0x21 <= ord(ch) <= 0x7E for ch in session), session
    resp = _post(http, desk.url, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 _legacy_headers(token, session))
    assert resp.status_code == 202
    return session


@pytest.mark.parametrize("accept", ["application/json, text/event-stream", "text/event-stream"])
def test_a_refused_initialize_opens_no_session(desk: Any, http: httpx.Client, accept: str) -> None:
    """An ``initialize`` the engine refuses (here: no ``protocolVersion``) is answered with its
    error and no ``Mcp-Session-Id``: a half-made session (no version) would answer every later
    request with "does not match this session's version None" (found by test_fuzz_http)."""
    headers = {**_legacy_headers(OPERATOR), "accept": accept}
    resp = _post(http, desk.url, request(1, "initialize", {"capabilities": {}, "clientInfo": {"name": "t"}}),
                 headers)
    assert "mcp-session-id" not in resp.headers
    body = sse_messages(resp.content)[-1] if resp.headers["content-type"].startswith("text/event-stream") \
        else resp.json()
    assert body["error"]["code"] == -32602
    session = _open_session(desk, http)  # a valid initialize still opens one, at its version
    resp = _post(http, desk.url, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 _legacy_headers(OPERATOR, session))
    assert resp.status_code == 202


def test_handshake_session_tools_call_over_sse(desk: Any, http: httpx.Client) -> None:
    session = _open_session(desk, http)
    resp = _post(http, desk.url, request(2, "tools/call", search_params()), _legacy_headers(OPERATOR, session))
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    messages = sse_messages(resp.content)
    assert messages, resp.text
    for message in messages:
        mcp_schema.check(message, LEGACY)
    final = messages[-1]
    assert final["id"] == 2
    # Nothing was streamed before the answer: the stream is that one event, sent whole.
    assert len(messages) == 1 and resp.headers["content-length"] == str(len(resp.content))
    mcp_schema.check(final, LEGACY, "CallToolResult")
    assert final["result"]["structuredContent"] == {"service": "payments", "count": 2, "tenant": "acme"}

    resp = _post(http, desk.url, request(3, "tools/list", {}), _legacy_headers(OPERATOR, session, sse=False))
    assert len(json_body(resp, LEGACY, "ListToolsResult")["result"]["tools"]) == 4


def test_delete_ends_the_session(desk: Any, http: httpx.Client) -> None:
    session = _open_session(desk, http)
    resp = http.delete(desk.url, headers=_legacy_headers(OPERATOR, session))
    assert resp.status_code == 200
    resp = _post(http, desk.url, request(5, "tools/list", {}), _legacy_headers(OPERATOR, session, sse=False))
    error_of(resp, 404, -32600, 5, LEGACY)


def test_session_of_another_principal_is_404(desk: Any, http: httpx.Client) -> None:
    session = _open_session(desk, http, OPERATOR)
    for token in (READER, GLOBEX):
        resp = _post(http, desk.url, request(6, "tools/list", {}), _legacy_headers(token, session, sse=False))
        error_of(resp, 404, -32600, 6, LEGACY)
        assert http.delete(desk.url, headers=_legacy_headers(token, session)).status_code == 404
    # ...and the owner's session is untouched by those attempts.
    resp = _post(http, desk.url, request(7, "tools/list", {}), _legacy_headers(OPERATOR, session, sse=False))
    json_body(resp, LEGACY, "ListToolsResult")


def test_request_without_session_is_refused(desk: Any, http: httpx.Client) -> None:
    resp = _post(http, desk.url, request(8, "tools/list", {}), _legacy_headers(OPERATOR))
    assert resp.status_code == 400
    json_body(resp, LEGACY)


def test_get_without_session_is_405(desk: Any, http: httpx.Client) -> None:
    resp = http.get(desk.url, headers={"accept": "text/event-stream", "authorization": f"Bearer {OPERATOR}"})
    assert resp.status_code == 405


def test_modern_request_ignores_session_header_but_not_routing_headers(desk: Any, http: httpx.Client) -> None:
    session = _open_session(desk, http)
    # 2026-07-28 ignores Mcp-Session-Id: a stale one does not turn a stateless request into a 404 ...
    resp = modern_call(http, desk.url, 9, "tools/list", headers={"mcp-session-id": "stale-session"})
    assert resp.status_code == 200
    json_body(resp, MODERN, "ListToolsResult")
    # ... and a live one does not switch off the routing-header checks.
    resp = modern_call(http, desk.url, 10, "tools/list", headers={"mcp-session-id": session,
                                                                   "mcp-method": "prompts/list"})
    error_of(resp, 400, -32020, 10)


# -- what the transport spec requires of clients ----------------------------------------


@pytest.mark.parametrize("version", ["garbage", "1999-01-01", "2025-06-18", MODERN, ""])
def test_a_session_request_with_another_protocol_version_header_is_400(desk: Any, http: httpx.Client,
                                                                          version: str) -> None:
    # was: 200 for any value on an established 2025-11-25 session
    session = _open_session(desk, http)
    headers = {**_legacy_headers(OPERATOR, session, sse=False), "mcp-protocol-version": version}
    error_of(_post(http, desk.url, request(30, "tools/list", {}), headers), 400, -32600, 30, LEGACY)
    resp = _post(http, desk.url, request(31, "tools/call", search_params()), headers)
    error_of(resp, 400, -32600, 31, LEGACY)
    assert http.delete(desk.url, headers=headers).status_code == 400
    get = http.get(desk.url, headers={**headers, "accept": "text/event-stream"})
    assert get.status_code == 400
    # the negotiated version, or no header at all (clients before 2025-06-18), still serve
    good = _legacy_headers(OPERATOR, session, sse=False)
    json_body(_post(http, desk.url, request(32, "tools/list", {}), good), LEGACY, "ListToolsResult")
    del good["mcp-protocol-version"]
    json_body(_post(http, desk.url, request(33, "tools/list", {}), good), LEGACY, "ListToolsResult")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "application/jsonx", "multipart/form-data; boundary=x"])
def test_a_post_that_is_not_json_is_415(desk: Any, http: httpx.Client, content_type: str) -> None:
    # was: 200
    resp = modern_call(http, desk.url, 40, "tools/list", headers={"content-type": content_type})
    error_of(resp, 415, -32600, 40)
    session = _open_session(desk, http)
    headers = {**_legacy_headers(OPERATOR, session), "content-type": content_type}
    error_of(_post(http, desk.url, request(41, "tools/call", search_params()), headers), 415, -32600, 41, LEGACY)


@pytest.mark.parametrize("accept", ["image/png", "text/html", "application/xml, text/plain",
                                    "application/json;q=0, text/event-stream;q=0"])
def test_a_post_that_accepts_neither_json_nor_sse_is_406(desk: Any, http: httpx.Client, accept: str) -> None:
    # was: 200
    resp = modern_call(http, desk.url, 42, "tools/list", headers={"accept": accept})
    error_of(resp, 406, -32600, 42)


@pytest.mark.parametrize("headers", [
    {"accept": "application/json, text/event-stream"},  # the official SDKs (python, TypeScript)
    {"accept": "text/event-stream, application/json"},  # the conformance suite, in places
    {"accept": "application/json"},
    {"accept": "*/*"},
    {"accept": "application/*;q=0.5"},
    {"content-type": "application/json; charset=utf-8"},
    {"content-type": "Application/JSON"},
])
def test_what_real_clients_send_still_serves(desk: Any, http: httpx.Client, headers: dict[str, str]) -> None:
    resp = modern_call(http, desk.url, 43, "tools/list", headers=headers)
    assert resp.status_code == 200, resp.text


def test_no_accept_and_no_content_type_still_serve(desk: Any, http: httpx.Client) -> None:
    body = orjson.dumps(request(44, "tools/list", {"_meta": meta()}))
    h = modern_headers("tools/list")
    del h["accept"], h["content-type"]
    assert raw_post(desk.port, body, h)[0] == 200


@pytest.mark.parametrize("body", [b"{not json", b"[]", b'{"jsonrpc":"2.0","id":5}', b"\xff\xfe"])
def test_a_malformed_body_without_a_credential_is_401_not_400(desk: Any, http: httpx.Client, body: bytes) -> None:
    # was: 400 with the parser's verdict, before authentication
    headers = modern_headers("tools/list", token=None)
    resp = http.post(desk.url, content=body, headers=headers)
    message = error_of(resp, 401, -32001, None)
    assert "parse" not in message["error"]["message"].lower()
    resp = http.post(desk.url, content=body, headers={**headers, "authorization": "Bearer not-a-token"})
    error_of(resp, 401, -32001, None)
    # with a valid credential the parser speaks, as before
    resp = http.post(desk.url, content=body, headers=modern_headers("tools/list"))
    assert resp.status_code == 400


# -- progress and cancellation (2026-07-28) --------------------------------------------


def test_progress_streams_over_sse(app: Any, http: httpx.Client) -> None:
    params = {"name": "count", "arguments": {}, "_meta": meta(progressToken="tok-1")}
    resp = modern_call(http, app.url, 60, "tools/call", params, token=None, sse=True)
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    messages = sse_messages(resp.content)
    for message in messages:
        mcp_schema.check(message, MODERN)
    progress = [m for m in messages if m.get("method") == "notifications/progress"]
    assert [p["params"]["progress"] for p in progress] == [1, 2, 3]
    assert all(p["params"]["progressToken"] == "tok-1" and p["params"]["total"] == 3 for p in progress)
    final = messages[-1]
    assert final["id"] == 60 and len(messages) == 4
    assert resp.headers["transfer-encoding"] == "chunked"  # streamed as the progress came
    mcp_schema.check(final, MODERN, "CallToolResult")
    assert final["result"]["structuredContent"] == {"steps": 3}


def test_progress_without_sse_accept_is_plain_json(app: Any, http: httpx.Client) -> None:
    params = {"name": "count", "arguments": {}, "_meta": meta(progressToken=7)}
    resp = modern_call(http, app.url, 61, "tools/call", params, token=None, sse=False)
    assert resp.status_code == 200
    assert json_body(resp, MODERN, "CallToolResult")["result"]["structuredContent"] == {"steps": 3}


def _raw_post_then_disconnect(app: Any, body: bytes, headers: dict[str, str], wait: float) -> None:
    """Send one POST on a raw socket, wait, then close the connection without reading the answer."""
    lines = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{app.port}", f"Content-Length: {len(body)}",
             "Connection: keep-alive"] + [f"{k}: {v}" for k, v in headers.items()]
    with socket.create_connection(("127.0.0.1", app.port), timeout=5) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        sock.settimeout(wait)
        try:
            early = sock.recv(65536)
        except socket.timeout:
            early = b""
        assert early == b"", early[:300]  # nothing is answered while the tool sleeps


@pytest.mark.parametrize("sse", [False, True], ids=["json-response", "sse-response"])
def test_client_disconnect_cancels_the_slow_tool(app: Any, http: httpx.Client, sse: bool) -> None:
    db: Path = app.extra["app_db"]
    before = audit_kinds(db, "slow").count("tool.cancelled")
    extra_meta = {"progressToken": f"slow-{sse}"} if sse else {}
    params = {"name": "slow", "arguments": {"seconds": 30}, "_meta": meta(**extra_meta)}
    body = orjson.dumps(request(70, "tools/call", params))
    headers = modern_headers("tools/call", "slow", token=None, sse=sse)
    started = time.monotonic()
    _raw_post_then_disconnect(app, body, headers, wait=0.4)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        kinds = audit_kinds(db, "slow")
        if kinds.count("tool.cancelled") > before:
            break
        time.sleep(0.05)
    kinds = audit_kinds(db, "slow")
    assert kinds.count("tool.cancelled") == before + 1, kinds
    assert "tool.called" not in kinds  # the slow tool never finished
    assert time.monotonic() - started < 10
    # The server is fine afterwards.
    resp = modern_call(http, app.url, 71, "tools/call", {"name": "count", "arguments": {}}, token=None)
    assert json_body(resp, MODERN, "CallToolResult")["result"]["structuredContent"] == {"steps": 3}



# -- order owed: a task's status after its handle (in process, every send recorded in order) ----------


def test_a_task_status_on_the_session_stream_never_precedes_its_handle(tmp_path: Path) -> None:
    # was: the GET stream carried notifications/tasks/status (working) before the POST's CreateTaskResult
    import asyncio

    from truecall import Principal, Server, ToolResult, text
    from truecall.protocol.engine import Engine
    from truecall.transports.http import HttpTransport

    server = Server("task-order", db=str(tmp_path / "t.db"))

    @server.tool(description="A short job, as a task", task_support="optional")
    async def job(ctx):  # (no annotation: a local name does not resolve under postponed annotations)
        await ctx.accept_as_task("accepted")
        await asyncio.sleep(0.01)
        return ToolResult([text("done")])

    me = Principal("tester", "t1", frozenset())
    app = HttpTransport(Engine(server), anonymous=me, metrics=False)
    log: list[tuple[str, dict[str, Any]]] = []

    async def exchange(tag: str, method: str, body: bytes | None, headers: dict[str, str],
                       until: asyncio.Event | None = None) -> dict[bytes, bytes]:
        scope = {"type": "http", "method": method, "path": "/mcp", "headers":
                 [(k.encode(), v.encode()) for k, v in {"host": "127.0.0.1", **headers}.items()]}
        sent = False
        head: dict[bytes, bytes] = {}

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body or b"", "more_body": False}
            await (until.wait() if until is not None else asyncio.Event().wait())
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                head.update(message["headers"])
            elif message.get("body"):
                log.append((tag, message))

        await app(scope, receive, send)
        return head

    async def run() -> None:
        server.events.defer(asyncio.get_running_loop())  # as the lifespan does: durable() waits for the commit
        post = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        head = await exchange("init", "POST", orjson.dumps(request(1, "initialize", INIT_PARAMS)), post)
        session = head[b"mcp-session-id"].decode()
        post |= {"mcp-session-id": session, "mcp-protocol-version": LEGACY}
        await exchange("initialized", "POST", b'{"jsonrpc":"2.0","method":"notifications/initialized"}', post)
        done = asyncio.Event()
        stream = asyncio.get_running_loop().create_task(
            exchange("get", "GET", None, {**post, "accept": "text/event-stream"}, done))
        await asyncio.sleep(0.01)
        for i in range(3):
            call = request(10 + i, "tools/call", {"name": "job", "arguments": {}, "task": {}})
            await exchange("post", "POST", orjson.dumps(call), {**post, "accept": "application/json"})
        await asyncio.sleep(0.2)
        done.set()
        await stream
        server.db.close()

    asyncio.run(run())
    handles: set[str] = set()
    statuses = 0
    for tag, message in log:
        if tag == "post":
            answer = orjson.loads(message["body"])
            mcp_schema.check_result(answer["result"], "CreateTaskResult", LEGACY)
            handles.add(answer["result"]["task"]["taskId"])
        elif tag == "get":
            for note in sse_messages(message["body"]):
                if note.get("method") == "notifications/tasks/status":
                    statuses += 1
                    assert note["params"]["taskId"] in handles, f"status before its handle: {note}"
    assert len(handles) == 3 and statuses >= 3


@pytest.mark.parametrize("accept", ["text/event-stream", "text/*", "application/json;q=0, text/event-stream"])
def test_an_accept_that_allows_only_sse_gets_even_a_plain_answer_as_an_event(desk: Any, http: httpx.Client,
                                                                             accept: str) -> None:
    # was: a JSON body the client said it does not accept
    resp = modern_call(http, desk.url, 45, "tools/list", headers={"accept": accept})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream"), resp.headers
    (message,) = sse_messages(resp.content)
    mcp_schema.check(message, MODERN, "ListToolsResult")
    session = _open_session(desk, http)
    resp = _post(http, desk.url, request(46, "tools/list", {}), {**_legacy_headers(OPERATOR, session),
                                                                 "accept": accept})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream"), resp.headers
    (message,) = sse_messages(resp.content)
    mcp_schema.check(message, LEGACY, "ListToolsResult")


def test_deleting_a_session_while_its_tool_waits_for_the_user_answers_the_call(desk: Any, http: httpx.Client) -> None:
    """A session ended (``DELETE``) while a tool waits for the user's answer: the call ends with a
    result that says nobody can answer now (nothing changed), and the server logs no traceback.  (Closing
    the session used to cancel the wait's future: the handler that awaited it saw a ``CancelledError``
    it was never sent, and the server printed it as a crash — a breach CI's fuzzer found.)"""
    session = _open_session(desk, http, capabilities={"elicitation": {}})
    call = request(2, "tools/call", {"name": "incident.escalate", "arguments": {"incidentId": "INC-1001"}})
    with http.stream("POST", desk.url, content=orjson.dumps(call), headers=_legacy_headers(OPERATOR, session)) as resp:
        assert resp.status_code == 200
        body = b""
        lines = resp.iter_bytes()
        while b"elicitation/create" not in body:
            body += next(lines)
        assert http.delete(desk.url, headers=_legacy_headers(OPERATOR, session)).status_code == 200
        body += b"".join(lines)
    messages = sse_messages(body)
    final = messages[-1]
    assert final["id"] == 2, messages
    mcp_schema.check(final, LEGACY, "CallToolResult")
    result = final["result"]
    assert result["isError"] is True, result
    assert "session ended" in result["content"][0]["text"], result
    assert "Traceback" not in desk.stderr() and "CancelledError" not in desk.stderr(), desk.stderr()[-3000:]
