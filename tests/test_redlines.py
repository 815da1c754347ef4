"""Elicitation red lines: no credentials in forms, no paste-anything, no typed confirmation of a
destructive action, safe URL-mode links, and ``ctx.confirm()`` where only an explicit yes counts.

Checked three ways: ``check_form``/``check_url`` directly, at registration (``Server.tool(forms=...)``)
and at run time through the protocol engine in both eras (nothing is ever asked when a form breaks a
red line, and nothing destructive happens without an ``accept`` carrying ``true``).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

import mcp_schema
from truecall import ErrorKind, FormError, Principal, Server, ToolResult, check_form, check_url, text, tool_error
from truecall.incidents.app import ESCALATE_FORM
from truecall.protocol import Engine, Session, jsonrpc

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
EXAMPLES = Path(mcp_schema.SPEC_DIR) / MODERN / "examples"

P = Principal("op@acme", "acme", frozenset())


def form(**fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": fields, "required": list(fields)}


def refused(message: str, schema: Any) -> str:
    with pytest.raises(FormError) as info:
        check_form(message, schema)
    return str(info.value)


# =================================================================================================
# check_form: the three misuses docs/guide/user-input.md ("The red lines") refuses
# =================================================================================================

CHAT_MISUSES = [
    pytest.param("请再输入一次你的密码以继续", form(password={"type": "string", "title": "密码"}), "URL mode",
                 id="password-again"),
    pytest.param("请再输入一次你的密码以继续", form(value={"type": "string"}), "URL mode",
                 id="password-again-innocent-field"),
    pytest.param("请把这个页面的完整 HTML 粘贴过来", form(content={"type": "string", "title": "内容"}),
                 "specific parameters", id="paste-full-html"),
    pytest.param("请把这个页面的完整 HTML 粘贴过来", form(html={"type": "string", "maxLength": 100000}),
                 "specific parameters", id="paste-full-html-field"),
    pytest.param("请确认是否允许我删除所有文件",
                 form(answer={"type": "string", "title": "确认", "description": "yes/no"}), "ctx.confirm()",
                 id="delete-all-typed-yes-no"),
    pytest.param("请确认是否允许我删除所有文件",
                 form(answer={"type": "string", "enum": ["yes", "no"]}), "ctx.confirm()",
                 id="delete-all-yes-no-enum"),
]


@pytest.mark.parametrize("message,schema,hint", CHAT_MISUSES)
def test_the_three_chat_misuses_are_refused(message: str, schema: dict[str, Any], hint: str) -> None:
    assert hint in refused(message, schema)


def test_a_destructive_confirmation_hidden_in_a_field_is_refused() -> None:
    schema = form(answer={"type": "string", "description": "Type YES to delete all files"})
    assert "ctx.confirm()" in refused("Please confirm", schema)
    # the one shape a confirmation may take: a single required boolean
    check_form("请确认是否允许我删除所有文件", form(confirm={"type": "boolean", "title": "Confirm"}))
    assert "ctx.confirm()" in refused("Delete all files?", form(confirm={"type": "boolean"},
                                                                 why={"type": "string"}))
    assert "ctx.confirm()" in refused("Delete all files?", form(confirm={"type": "string", "enum": ["true"]}))


# -- English credential fields, by name, title, description and format ----------------------------------

CREDENTIAL_TERMS = {
    "password": ("password", "Password", "Your account password"),
    "passcode": ("passcode", "Passcode", "The passcode from your bank"),
    "api key": ("api_key", "API key", "Paste your API key here"),
    "token": ("token", "Token", "Your personal access token"),
    "private key": ("private_key", "Private key", "Your SSH private key"),
    "credential": ("credential", "Credential", "The service credential"),
    "card number": ("card_number", "Card number", "The 16-digit card number"),
    "cvv": ("cvv", "CVV", "The CVV on the back of your card"),
}
CODE_STYLE_NAMES = ["apiKey", "privateKey", "cardNumber", "accessToken", "card_cvv", "cvvCode", "user_pin",
                    "otp_code", "sms_otp", "db-password", "client.secret", "passWord"]


def _credential_cases() -> list[Any]:
    cases = []
    for term, (name, title, description) in CREDENTIAL_TERMS.items():
        cases.append(pytest.param(form(**{name: {"type": "string"}}), id=f"{term}-by-name"))
        cases.append(pytest.param(form(value={"type": "string", "title": title}), id=f"{term}-by-title"))
        cases.append(pytest.param(form(value={"type": "string", "description": description}),
                                  id=f"{term}-by-description"))
    cases.append(pytest.param(form(value={"type": "string", "format": "password"}), id="format-password"))
    cases.append(pytest.param(form(code={"type": "string", "title": "Code", "format": "password"}),
                              id="format-password-innocent-title"))
    cases += [pytest.param(form(**{n: {"type": "string"}}), id=f"code-style-{n}") for n in CODE_STYLE_NAMES]
    return cases


@pytest.mark.parametrize("schema", _credential_cases())
def test_credential_fields_are_refused_pointing_to_url_mode(schema: dict[str, Any]) -> None:
    message = refused("Please fill in the form to continue", schema)
    assert "credential" in message and "URL mode" in message


@pytest.mark.parametrize("message", [
    "Enter your password to continue", "Please provide your API key", "Paste your token below",
    "What is your card number?", "输入验证码", "Enter the one-time code we sent you",
])
def test_credential_requests_in_the_message_are_refused(message: str) -> None:
    text_ = refused(message, form(value={"type": "string"}))
    assert "URL mode" in text_ or "specific parameters" in text_


@pytest.mark.parametrize("schema,fragment", [
    ({"type": "array"}, "object schema"),
    ({"type": "object"}, "properties"),
    (form(address={"type": "object", "properties": {"street": {"type": "string"}}}), "flat"),
    (form(name={"type": "string", "pattern": "^a"}), "keywords"),
    (form(name={"$ref": "#/defs/x"}), "flat"),
    (form(name={"type": "string", "format": "ipv4"}), "format"),
    (form(tags={"type": "array", "items": {"type": "string"}}), "multi-selects"),
    (form(name="string"), "schema object"),  # type: ignore[arg-type]
])
def test_only_flat_primitive_forms(schema: Any, fragment: str) -> None:
    assert fragment in refused("Please fill in", schema)


# -- what must be accepted ----------------------------------------------------------------------------------


def _example_forms() -> list[Any]:
    cases = []
    for path in sorted((EXAMPLES / "ElicitRequestFormParams").glob("*.json")):
        params = orjson.loads(path.read_bytes())
        cases.append(pytest.param(params["message"], params["requestedSchema"], id=f"FormParams/{path.name}"))
    for path in sorted((EXAMPLES / "ElicitRequest").glob("*.json")):
        params = orjson.loads(path.read_bytes())["params"]
        if params.get("mode", "form") == "form":
            cases.append(pytest.param(params["message"], params["requestedSchema"], id=f"ElicitRequest/{path.name}"))
    for path in sorted((EXAMPLES / "InputRequests").glob("*.json")):
        for key, req in orjson.loads(path.read_bytes()).items():
            params = req.get("params", {})
            if req["method"] == "elicitation/create" and params.get("mode", "form") == "form":
                cases.append(pytest.param(params["message"], params["requestedSchema"],
                                          id=f"InputRequests/{path.name}/{key}"))
    for folder in sorted(EXAMPLES.glob("*Schema")):
        for path in sorted(folder.glob("*.json")):
            field = orjson.loads(path.read_bytes())
            cases.append(pytest.param("Please choose", {"type": "object", "properties": {"choice": field}},
                                      id=f"{folder.name}/{path.name}"))
    return cases


EXAMPLE_FORMS = _example_forms()


def test_the_example_corpus_is_all_there() -> None:
    ids = {p.id.split("/")[0] for p in EXAMPLE_FORMS}
    assert {"FormParams", "ElicitRequest", "BooleanSchema", "NumberSchema", "StringSchema",
            "TitledMultiSelectEnumSchema", "UntitledSingleSelectEnumSchema"} <= ids
    assert len(EXAMPLE_FORMS) >= 10


@pytest.mark.parametrize("message,schema", EXAMPLE_FORMS)
def test_every_spec_example_form_is_accepted(message: str, schema: dict[str, Any]) -> None:
    check_form(message, schema)


def test_the_desk_escalation_form_is_accepted() -> None:
    check_form("Escalate INC-1001 (Card authorisations failing for EU issuers, now P2)?", ESCALATE_FORM)


def test_the_desk_declares_its_form_so_it_is_linted_at_registration(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    import truecall.forms
    from truecall.incidents import build_desk

    linted: list[Any] = []
    real = truecall.forms.check_form
    monkeypatch.setattr(truecall.forms, "check_form", lambda m, s: (linted.append((m, s)), real(m, s))[1])
    desk = build_desk(str(tmp_path / "d.db"))
    desk.db.close()
    assert [s for _, s in linted] == [ESCALATE_FORM]
    assert "Escalate" in linted[0][0]
    # and a credential field slipped into that form would stop the desk from starting
    monkeypatch.setitem(ESCALATE_FORM["properties"], "otp", {"type": "string", "title": "One-time code"})
    with pytest.raises(FormError):
        build_desk(str(tmp_path / "e.db"))


@pytest.mark.parametrize("name", ["description", "opinion", "shipping_address", "dropOffPoint", "spinCount",
                                  "service", "reason", "severity", "author", "authorName", "keyboard_layout",
                                  "monkey", "keyword", "passenger_count", "compass_heading", "bypass_cache",
                                  "secretary", "pinned", "spinner", "tokenizerName", "mfaster", "cardigan_size",
                                  "ibanez_model", "sessionDate", "cookbook", "pwa_enabled", "keynote_title"])
def test_ordinary_fields_are_accepted(name: str) -> None:
    check_form("Please fill in", form(**{name: {"type": "string"}}))
    check_form("Please fill in", form(value={"type": "string", "title": name}))


@pytest.mark.parametrize("message,field", [
    ("Who wrote the post-mortem?", {"type": "string", "title": "Author", "description": "The author's name"}),
    ("Which keyboard layout?", {"type": "string", "title": "Keyboard", "enum": ["US", "DE"]}),
    ("Card authorisations are failing: how severe is it?", {"type": "string", "title": "Severity"}),
    ("请选择严重级别并说明原因", {"type": "string", "title": "原因", "description": "升级的原因"}),
    ("是否一次性处理所有事件？", {"type": "boolean", "title": "一次性处理"}),
    ("Is this a one-time event?", {"type": "boolean", "title": "One time only"}),
    ("请选择会话主题", {"type": "string", "title": "会话主题"}),
    ("Pick the session date", {"type": "string", "title": "Session date", "format": "date"}),
    ("What is the passenger's e-mail?", {"type": "string", "title": "E-mail", "format": "email"}),
])
def test_ordinary_questions_are_accepted(message: str, field: dict[str, Any]) -> None:
    check_form(message, form(value=field))


# The credential family, beyond the first list: every one refused by name, title and description.
CREDENTIAL_FAMILY = [
    # passwords and passphrases
    "pw", "pwd", "passwd", "user_password", "passphrase", "Pass phrase", "db-pass-word", "口令", "登录密码",
    # PINs
    "pin", "PIN code", "pin_code", "PIN码",
    # one-time and MFA codes
    "mfa_code", "2FA code", "2fa", "totp", "hotp", "otp", "one-time password", "one_time_code", "onetimePin",
    "verification code",
    "auth code", "authenticator code", "security code", "sms code", "recovery code", "backup_codes",
    "two-factor code", "验证码", "动态码", "短信验证码", "两步验证码", "一次性密码", "一次性码",
    # tokens, keys, secrets
    "auth", "bearer", "bearer_token", "jwt", "refreshToken", "apikey", "API-Key", "access key", "secret",
    "client_secret", "secret key", "signing key", "ssh key", "private key", "encryption key", "license key",
    "令牌", "访问令牌", "密钥", "秘钥", "私钥", "凭据", "凭证",
    # payment data
    "card number", "credit card number", "cc_number", "cvv", "CVV2", "cvc", "iban", "IBAN", "卡号", "银行卡号",
    "信用卡安全码", "安全码",
    # session cookies
    "cookie", "session cookie", "session_id", "sessionId", "sessionToken", "会话令牌", "会话 Cookie",
]


@pytest.mark.parametrize("term", CREDENTIAL_FAMILY)
@pytest.mark.parametrize("where", ["name", "title", "description"])
def test_the_whole_credential_family_is_refused(term: str, where: str) -> None:
    if where == "name":
        field = {term: {"type": "string"}}
    else:
        field = {"value": {"type": "string", where: term if where == "title" else f"Please enter your {term} here"}}
    message = refused("Please fill in the form to continue", form(**field))
    assert "credential" in message and "URL mode" in message


@pytest.mark.parametrize("fmt", ["password", "otp", "pin", "credit-card", "token", "secret"])
def test_a_credential_format_is_refused_as_a_credential(fmt: str) -> None:
    message = refused("Please fill in", form(value={"type": "string", "format": fmt}))
    assert "credential" in message


@pytest.mark.parametrize("message", ["Enter your PIN", "Type the 2FA code from your phone", "请输入短信验证码",
                                     "What is your IBAN?", "Paste your session cookie", "请输入支付口令",
                                     "Enter the code we sent you by SMS", "Please provide your MFA code"])
def test_the_credential_family_in_the_message_is_refused(message: str) -> None:
    assert "URL mode" in refused(message, form(value={"type": "string"}))


# =================================================================================================
# check_url
# =================================================================================================


@pytest.mark.parametrize("url", [
    "https://user:hunter2@idp.example.com/login",
    "https://user@idp.example.com/login",
    "https://idp.example.com/cb?token=abc123",
    "https://idp.example.com/cb?access_token=abc123",
    "https://idp.example.com/cb?apiKey=abc123",
    "https://idp.example.com/cb?client_secret=abc123",
    "https://idp.example.com/cb#access_token=abc123",
    "https://idp.example.com/cb?x=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl",
    "https://idp.example.com/cb/Bearer%20abcdefghijklmnop",
    "https://idp.example.com/invite?email=ada@example.com",
    "https://idp.example.com/invite/ada%40example.com",
    "javascript:alert(document.cookie)",
    "data:text/html,<script>alert(1)</script>",
    "file:///etc/passwd",
    "ftp://idp.example.com/login",
    "//idp.example.com/login",
    "/relative/login",
])
def test_unsafe_url_mode_links_are_refused(url: str) -> None:
    with pytest.raises(FormError):
        check_url(url)


@pytest.mark.parametrize("url", ["https://idp.example.com/authorize?state=xyz&lang=en",
                                 "https://pay.example.com/checkout/session/42", "http://127.0.0.1:8080/connect"])
def test_ordinary_links_are_accepted(url: str) -> None:
    check_url(url)


# =================================================================================================
# Registration and run time
# =================================================================================================


@pytest.fixture
def forms_server(tmp_path: Path) -> Any:
    server = Server("forms", db=str(tmp_path / "f.db"))
    yield server
    server.db.close()


def test_server_tool_refuses_a_credential_form_at_registration(forms_server: Server) -> None:
    with pytest.raises(FormError) as info:
        @forms_server.tool("login", description="Logs in.",
                           forms=[("Sign in", form(username={"type": "string"})),
                                  ("Sign in", form(password={"type": "string", "format": "password"}))])
        def login(ctx: Any) -> str:
            return "never"
    assert "URL mode" in str(info.value)
    assert "login" not in forms_server.registry.tools


#: Forms refused at registration as they are by check_form: paste-anything, a typed confirmation of a
#: destructive action, and the credential names the first lint missed.
REFUSED_AT_REGISTRATION = {
    "paste-anything": ("请把这个页面的完整 HTML 粘贴过来", form(content={"type": "string"})),
    "typed-confirmation": ("请确认是否允许我删除所有文件", form(answer={"type": "string"})),
    "pw": ("Sign in", form(pw={"type": "string"})),
    "pwd": ("Sign in", form(pwd={"type": "string"})),
    "auth": ("Sign in", form(auth={"type": "string"})),
    "bearer": ("Sign in", form(bearer={"type": "string"})),
    "mfa_code": ("Sign in", form(mfa_code={"type": "string"})),
    "2FA-title": ("Sign in", form(code={"type": "string", "title": "2FA code"})),
}


@pytest.mark.parametrize("case", list(REFUSED_AT_REGISTRATION))
def test_server_tool_refuses_a_red_line_form_at_registration(forms_server: Server, case: str) -> None:
    with pytest.raises(FormError):
        forms_server.tool("bad", description="Asks.", forms=[REFUSED_AT_REGISTRATION[case]])
    assert "bad" not in forms_server.registry.tools


def test_server_tool_registers_a_good_form(forms_server: Server) -> None:
    forms_server.tool("escalate", description="Escalates.", forms=[("Escalate INC-1?", ESCALATE_FORM)])(
        lambda ctx: "ok")
    assert "escalate" in forms_server.registry.tools


_ids = itertools.count(1)


def aio(fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return asyncio.run(asyncio.wait_for(fn(*args, **kwargs), 20))

    return wrapper


class Outbox:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        self.messages.append(orjson.loads(orjson.dumps(message)))

    def requests(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if "method" in m and "id" in m]

    async def next_request(self, timeout: float = 5.0) -> dict[str, Any]:
        for _ in range(int(timeout / 0.005)):
            if self.requests():
                return self.requests()[0]
            await asyncio.sleep(0.005)
        raise AssertionError("the server asked nothing")


class App:
    """A small server with tools that break the red lines at run time, and one destructive tool."""

    def __init__(self, path: Path) -> None:
        self.deleted: list[str] = []
        self.ran: list[str] = []
        server = self.server = Server("redlines", db=str(path))

        @server.tool("login", description="Asks for a password (it must never be asked).")
        async def login(ctx: Any) -> str:
            self.ran.append("login")
            answer = await ctx.elicit("Enter your password to continue",
                                      form(password={"type": "string", "format": "password"}))
            return f"got {answer.action.value}"

        @server.tool("paste", description="Asks for a whole page (it must never be asked).")
        async def paste(ctx: Any) -> str:
            answer = await ctx.elicit("请把这个页面的完整 HTML 粘贴过来", form(content={"type": "string"}))
            return f"got {answer.action.value}"

        @server.tool("typed_confirm", description="Asks for a typed yes (it must never be asked).")
        async def typed_confirm(ctx: Any) -> str:
            answer = await ctx.elicit("请确认是否允许我删除所有文件", form(answer={"type": "string"}))
            if answer.accepted and answer.content.get("answer") == "yes":
                self.deleted.append("typed")
            return "done"

        @server.tool("bad_link", description="Sends the user to a link carrying a token.")
        async def bad_link(ctx: Any) -> str:
            await ctx.elicit("Open this", url="https://idp.example.com/cb?access_token=abc123")
            return "done"

        @server.tool("wipe", description="Deletes every file of the workspace after an explicit yes.",
                     annotations={"destructiveHint": True})
        async def wipe(ctx: Any) -> ToolResult:
            if await ctx.confirm("Delete all files in the workspace?"):
                self.deleted.append(ctx.principal.subject)
                return ToolResult([text("all files deleted")], {"deleted": True})
            return tool_error(ErrorKind.DECLINED, "not confirmed; nothing was deleted")


@pytest.fixture
def app(tmp_path: Path) -> Any:
    a = App(tmp_path / "redlines.db")
    yield a
    a.server.db.close()


def _meta(caps: dict[str, Any]) -> dict[str, Any]:
    return {META_VERSION: MODERN, META_CAPS: caps, META_CLIENT: {"name": "redlines", "version": "0"}}


async def modern_call(engine: Engine, name: str, caps: dict[str, Any], *, responses: dict[str, Any] | None = None,
                      state: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {}, "_meta": _meta(caps)}
    if responses is not None:
        params["inputResponses"] = responses
    if state is not None:
        params["requestState"] = state
    message = {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call", "params": params}
    response = await engine.handle(jsonrpc.decode(orjson.dumps(message)), P)
    response = orjson.loads(orjson.dumps(response))
    mcp_schema.check(response, MODERN)
    return response["result"]


async def handshake(engine: Engine, caps: dict[str, Any], version: str = LEGACY) -> Session:
    session = Session(principal=P)
    init = {"jsonrpc": "2.0", "id": next(_ids), "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": caps, "clientInfo": {"name": "t", "version": "0"}}}
    response = await engine.handle(jsonrpc.decode(orjson.dumps(init)), P, session=session)
    assert response["result"]["protocolVersion"] == version
    await engine.handle(jsonrpc.decode(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})), P,
                        session=session)
    return session


async def legacy_call(engine: Engine, session: Session, name: str, answer: Any,
                      version: str = LEGACY) -> tuple[dict[str, Any], Outbox]:
    """Call ``name``; answer the first server request with ``answer`` (a result, ``"error"`` or ``None``: silence)."""
    outbox = Outbox()
    message = {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call", "params": {"name": name, "arguments": {}}}
    work = asyncio.ensure_future(engine.handle(jsonrpc.decode(orjson.dumps(message)), P, session=session,
                                               outbox=outbox))
    if answer is not None:
        request = await outbox.next_request()
        assert request["method"] == "elicitation/create"
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
        if answer == "error":
            reply["error"] = {"code": -32600, "message": "the user closed the dialog"}
        else:
            reply["result"] = answer
        assert await engine.handle(jsonrpc.decode(orjson.dumps(reply)), P, session=session) is None
    response = orjson.loads(orjson.dumps(await work))
    mcp_schema.check(response, version)
    for m in outbox.messages:
        mcp_schema.check(m, version)
    return response["result"], outbox


def audit_kinds(server: Server, tool: str) -> list[tuple[str, dict[str, Any]]]:
    rows = server.db.fetchall("SELECT kind, fields FROM audit_events WHERE tool = ? ORDER BY id", (tool,))
    return [(k, orjson.loads(f)) for k, f in rows]


@pytest.mark.parametrize("tool,rule", [("login", "credential"), ("paste", "paste"),
                                       ("typed_confirm", "confirmation"), ("bad_link", "url")])
@aio
async def test_a_red_line_form_at_run_time_is_refused_by_the_server_and_nothing_is_asked(app: App, tool: str,
                                                                                       rule: str) -> None:
    """Not an unexplained ``internal`` fault: the question was refused before anybody saw it, so
    the step that needed its answer did not run (``declined``, refused by the server, the rule named)."""
    engine = Engine(app.server).start()
    caps = {"elicitation": {"form": {}, "url": {}}}
    # stateless era: no input_required, no question to the client
    result = await modern_call(engine, tool, caps)
    assert result["resultType"] == "complete" and result["isError"] is True
    error = result["structuredContent"]["error"]
    assert (error["kind"], error["refusedBy"], error["redLine"], error["retryable"]) == \
        ("declined", "server", rule, False)
    assert "nothing was asked" in result["content"][0]["text"]
    assert "inputRequests" not in result
    # handshake era: the peer records no request at all
    session = await handshake(engine, caps)
    result, outbox = await legacy_call(engine, session, tool, answer=None)
    assert result["isError"] is True and result["structuredContent"]["error"]["redLine"] == rule
    assert outbox.requests() == []
    assert app.deleted == []
    records = audit_kinds(app.server, tool)
    assert [(k, f.get("rule")) for k, f in records] == [("tool.form_refused", rule), ("tool.called", None)] * 2
    assert app.server.db.fetchall("SELECT DISTINCT outcome FROM audit_events WHERE tool = ? AND kind = 'tool.called'",
                                  (tool,)) == [("declined",)]


# -- ctx.confirm(): only an explicit yes --------------------------------------------------------------------


CONFIRM_KEY = "elicit-1"


@pytest.mark.parametrize("answer,deleted", [
    ({"action": "accept", "content": {"confirm": True}}, True),
    ({"action": "accept", "content": {"confirm": False}}, False),
    ({"action": "decline"}, False),
    ({"action": "cancel"}, False),
    ({"action": "decline", "content": {"confirm": True}}, False),
    ({"action": "cancel", "content": {"confirm": True}}, False),
    ({"action": "accept", "content": {}}, False),
    ({"action": "accept"}, False),
])
@aio
async def test_confirm_stateless_only_accept_true_deletes(app: App, answer: dict[str, Any], deleted: bool) -> None:
    engine = Engine(app.server).start()
    caps = {"elicitation": {"form": {}}}
    first = await modern_call(engine, "wipe", caps)
    assert first["resultType"] == "input_required"
    asked = first["inputRequests"][CONFIRM_KEY]
    assert asked["method"] == "elicitation/create"
    schema = asked["params"]["requestedSchema"]
    assert schema["properties"]["confirm"]["type"] == "boolean" and schema["required"] == ["confirm"]
    assert app.deleted == []
    final = await modern_call(engine, "wipe", caps, responses={CONFIRM_KEY: answer}, state=first["requestState"])
    assert final["resultType"] == "complete"
    assert app.deleted == (["op@acme"] if deleted else [])
    assert final.get("isError", False) is (not deleted)


@pytest.mark.parametrize("content", [{"confirm": "true"}, {"confirm": 1}, {"confirm": "yes"}, {"confirm": [True]}])
@aio
async def test_confirm_with_a_truthy_non_boolean_is_not_consent(app: App, content: dict[str, Any]) -> None:
    engine = Engine(app.server).start()
    caps = {"elicitation": {"form": {}}}
    first = await modern_call(engine, "wipe", caps)
    final = await modern_call(engine, "wipe", caps, responses={CONFIRM_KEY: {"action": "accept", "content": content}},
                              state=first["requestState"])
    assert final["isError"] is True and app.deleted == []


@pytest.mark.parametrize("caps", [{}, {"sampling": {}}, {"elicitation": {"url": {}}}])
@aio
async def test_confirm_without_the_capability_is_no_and_nothing_is_asked(app: App, caps: dict[str, Any]) -> None:
    engine = Engine(app.server).start()
    result = await modern_call(engine, "wipe", caps)
    assert result["resultType"] == "complete" and result["isError"] is True
    assert result["structuredContent"]["error"]["kind"] == "declined"
    session = await handshake(engine, caps)
    result, outbox = await legacy_call(engine, session, "wipe", answer=None)
    assert result["isError"] is True and outbox.requests() == []
    assert app.deleted == []


@pytest.mark.parametrize("version", [LEGACY, "2025-06-18"])
@pytest.mark.parametrize("answer,deleted", [
    ({"action": "accept", "content": {"confirm": True}}, True),
    ({"action": "accept", "content": {"confirm": False}}, False),
    ({"action": "decline"}, False),
    ({"action": "cancel"}, False),
    ("error", False),
])
@aio
async def test_confirm_handshake_era(app: App, version: str, answer: Any, deleted: bool) -> None:
    engine = Engine(app.server).start()
    session = await handshake(engine, {"elicitation": {}}, version)
    result, outbox = await legacy_call(engine, session, "wipe", answer, version)
    (request,) = outbox.requests()
    assert request["params"]["requestedSchema"]["properties"]["confirm"]["type"] == "boolean"
    assert app.deleted == (["op@acme"] if deleted else [])
    assert result.get("isError", False) is (not deleted)


@aio
async def test_confirm_timeout_is_no(app: App) -> None:
    engine = Engine(app.server, client_request_timeout=0.05).start()
    session = await handshake(engine, {"elicitation": {"form": {}}})
    result, outbox = await legacy_call(engine, session, "wipe", answer=None)
    assert len(outbox.requests()) == 1  # asked, never answered
    assert result["isError"] is True and result["structuredContent"]["error"]["kind"] == "declined"
    assert app.deleted == []
    # a late answer changes nothing
    late = {"jsonrpc": "2.0", "id": outbox.requests()[0]["id"],
            "result": {"action": "accept", "content": {"confirm": True}}}
    assert await engine.handle(jsonrpc.decode(orjson.dumps(late)), P, session=session) is None
    await asyncio.sleep(0.01)
    assert app.deleted == []


def test_the_examples_folder_is_where_the_schema_helper_says(tmp_path: Path) -> None:
    assert (EXAMPLES / "ElicitRequestFormParams").is_dir(), EXAMPLES
    assert json.loads((EXAMPLES / "ElicitRequest" / "elicitation-request.json").read_text())["method"] == \
        "elicitation/create"


# =================================================================================================
# Consent bound to the question (2026-07-28): an answer counts only with the requestState of the
# round that asked it, for that same question, once
# =================================================================================================

OPERATOR = Principal("newton@acme", "acme", frozenset({"incidents:read", "incidents:write"}))
ESCALATION = {"escalation": {"action": "accept", "content": {"severity": "P1", "reason": "r"}}}


async def desk_call(engine: Engine, principal: Principal, arguments: dict[str, Any], *,
                    responses: dict[str, Any] | None = None, state: str | None = None,
                    name: str = "incident.escalate") -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments,
                              "_meta": _meta({"elicitation": {"form": {}}})}
    if responses is not None:
        params["inputResponses"] = responses
    if state is not None:
        params["requestState"] = state
    message = {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call", "params": params}
    response = orjson.loads(orjson.dumps(await engine.handle(jsonrpc.decode(orjson.dumps(message)), principal)))
    mcp_schema.check(response, MODERN)
    return response


def severity(desk: Server, incident: str = "INC-1001") -> str:
    return str(desk.db.fetchone("SELECT severity FROM incidents WHERE incident_id = ?", (incident,))[0])


@aio
async def test_answers_without_a_question_change_nothing_and_replays_change_nothing(desk: Server) -> None:
    engine = Engine(desk).start()
    args = {"incidentId": "INC-1001"}
    assert severity(desk) == "P2"
    # volunteered answers, no requestState: the question is asked, nothing escalates, however often
    for _ in range(3):
        volunteered = (await desk_call(engine, OPERATOR, args, responses=ESCALATION))["result"]
        assert volunteered["resultType"] == "input_required", volunteered
        assert "escalation" in volunteered["inputRequests"]
        assert severity(desk) == "P2"
    # the answer to the question asked, with its state: escalates once
    asked = (await desk_call(engine, OPERATOR, args))["result"]
    done = (await desk_call(engine, OPERATOR, args, responses=ESCALATION, state=asked["requestState"]))["result"]
    assert done["structuredContent"]["severity"] == "P1" and severity(desk) == "P1"
    # the same body again: the state was used, refused
    replay = await desk_call(engine, OPERATOR, args, responses=ESCALATION, state=asked["requestState"])
    assert replay["error"]["code"] == -32602
    escalations = [f for k, f in audit_kinds(desk, "incident.escalate") if k == "tool.called"
                   and f.get("durationMs") is not None]
    assert desk.db.fetchone("SELECT COUNT(*) FROM audit_events WHERE kind = 'tool.called' "
                            "AND tool = 'incident.escalate' AND outcome = 'ok'")[0] == 1, escalations


@aio
async def test_a_state_answers_only_the_question_it_was_issued_for(desk: Server) -> None:
    engine = Engine(desk).start()
    args = {"incidentId": "INC-1001"}
    # a state issued for another call (other arguments, another tool's question) answers nothing here
    other = (await desk_call(engine, OPERATOR, {"incidentId": "INC-1002"}))["result"]
    wrong = await desk_call(engine, OPERATOR, args, responses=ESCALATION, state=other["requestState"])
    assert wrong["error"]["code"] == -32602 and severity(desk) == "P2"
    # the question changed between the rounds (the severity it shows is no longer true): asked again
    asked = (await desk_call(engine, OPERATOR, args))["result"]
    desk.db.execute("UPDATE incidents SET severity = 'P3' WHERE incident_id = 'INC-1001'")
    again = (await desk_call(engine, OPERATOR, args, responses=ESCALATION, state=asked["requestState"]))["result"]
    assert again["resultType"] == "input_required" and severity(desk) == "P3"
    assert "now P3" in again["inputRequests"]["escalation"]["params"]["message"]
    done = (await desk_call(engine, OPERATOR, args, responses=ESCALATION, state=again["requestState"]))["result"]
    assert done["structuredContent"] == {"incidentId": "INC-1001", "previousSeverity": "P3", "severity": "P1"}


@aio
async def test_a_state_does_not_carry_answers_to_questions_it_did_not_ask(app: App) -> None:
    """``wipe`` asks one confirmation; an answer under another key (the next question a tool might
    ask) is not consent, even with an authentic state."""
    engine = Engine(app.server).start()
    caps = {"elicitation": {"form": {}}}
    first = await modern_call(engine, "wipe", caps)
    yes = {"action": "accept", "content": {"confirm": True}}
    final = await modern_call(engine, "wipe", caps, responses={"elicit-2": yes, "other": yes},
                              state=first["requestState"])
    assert final["resultType"] == "input_required" and app.deleted == []
    # and a volunteered yes without any state is no yes at all
    final = await modern_call(engine, "wipe", caps, responses={CONFIRM_KEY: yes})
    assert final["resultType"] == "input_required" and app.deleted == []


# =================================================================================================
# What was seen (issue 24): the credential lint's misses and false positives, and adversarial
# spellings — every one decided by the judge now (truecall.judge.credential_ask)
# =================================================================================================

SEEN_ASKS = {
    "credit_card": ("Enter your credit card to complete the order.", form(credit_card={"type": "string"})),
    "creditCard": ("Checkout", form(creditCard={"type": "string"})),
    "pan": ("Checkout", form(pan={"type": "string"})),
    "routing_number": ("Set up direct deposit", form(routing_number={"type": "string"})),
    "title Credit card": ("Payment", form(value={"type": "string", "title": "Credit card"})),
    "title 信用卡": ("完成订单", form(value={"type": "string", "title": "信用卡"})),
    "seed_phrase": ("Restore wallet", form(seed_phrase={"type": "string"})),
    "mnemonic": ("Import wallet", form(mnemonic={"type": "string"})),
    "recovery_phrase": ("Recover", form(recovery_phrase={"type": "string"})),
    "助记词": ("恢复钱包", form(value={"type": "string", "title": "助记词"})),
    "安全问题答案": ("验证身份", form(value={"type": "string", "title": "安全问题答案"})),
    "typo pasword": ("Sign in", form(pasword={"type": "string"})),
    "typo passowrd": ("Sign in", form(passowrd={"type": "string"})),
    "db_pass": ("Database", form(db_pass={"type": "string"})),
    "card expiry": ("Payment", form(card_expiry={"type": "string", "description": "MM/YY"})),
    "security answer": ("Verify", form(answer={"type": "string", "title": "Answer to your security question"})),
    "mother's maiden name": ("Verify", form(value={"type": "string", "title": "Mother's maiden name"})),
    "Wi-Fi key": ("Connect the printer", form(wifi_key={"type": "string"})),
    "passport number": ("Booking", form(passport_number={"type": "string"})),
    "only in the form's title": ("Account", {**form(value={"type": "string"}), "title": "Your bank passcode"}),
    "only in the form's description": ("Account", {**form(value={"type": "string"}),
                                                   "description": "Type the password of the admin account"}),
    "Japanese パスワード": ("ログイン", form(value={"type": "string", "title": "パスワード"})),
    "Spanish contraseña": ("Acceso", form(value={"type": "string", "title": "Contraseña"})),
    "German Passwort": ("Anmelden", form(passwort={"type": "string"})),
    "French mot de passe": ("Connexion", form(value={"type": "string", "title": "Mot de passe"})),
    # adversarial spellings
    "Cyrillic а": ("Sign in", form(**{"p\u0430ssword": {"type": "string"}})),
    "fullwidth": ("Sign in", form(value={"type": "string", "title": "\uff30\uff41\uff53\uff53\uff57\uff4f\uff52\uff44"})),
    "zero-width space": ("Sign in", form(**{"pas\u200bsword": {"type": "string"}})),
    "dotted letters": ("Sign in", form(value={"type": "string", "title": "\u1e56a\u1e61\u1e61word"})),
    "oneOf title": ("One more thing", form(answer={"type": "string", "oneOf": [
        {"type": "string", "title": "Your online banking password"}]})),
}


@pytest.mark.parametrize("case", list(SEEN_ASKS))
def test_what_the_lint_missed_is_refused(case: str) -> None:
    message, schema = SEEN_ASKS[case]
    with pytest.raises(FormError) as info:
        check_form(message, schema)
    assert info.value.rule == "credential" and "URL mode" in str(info.value)


SEEN_INNOCENT = {
    "password policy accepted?": ("Password policy accepted?", form(accepted={"type": "boolean"})),
    "token count": ("How many tokens?", form(token_count={"type": "integer"})),
    "analytics cookies?": ("Allow analytics cookies?", form(analytics_cookies={"type": "boolean"})),
    "OTP channel": ("Which OTP channel?", form(otp_channel={"type": "string", "enum": ["sms", "email"]})),
    "API key label": ("Name this API key", form(api_key_label={"type": "string"})),
    "send reset email?": ("Send password reset email?", form(send_password_reset={"type": "boolean"})),
    "2FA enabled?": ("2FA enabled?", form(enabled={"type": "boolean"})),
    "Secret Santa?": ("Join Secret Santa?", form(join={"type": "boolean"})),
    "do not give us your pin": ("Tell us about yourself. Do *not* give us your password, card number or pin.",
                                form(name={"type": "string"}, age={"type": "integer"})),
}


@pytest.mark.parametrize("case", list(SEEN_INNOCENT))
def test_what_the_lint_refused_wrongly_may_be_shown(case: str) -> None:
    check_form(*SEEN_INNOCENT[case])
