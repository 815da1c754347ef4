"""The audit trail: committed at once, filterable, and never holding argument values."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from truecall import AuditLog, Database, Principal, ProtocolError, Server, StaticTokens, ToolResult
from truecall.incidents import build_desk


def _second_connection_rows(path: Path) -> list[tuple]:
    conn = sqlite3.connect(str(path))
    try:
        return conn.execute("SELECT kind, tenant, subject, tool, outcome, fields FROM audit_events ORDER BY id").fetchall()
    finally:
        conn.close()


# -- durability --------------------------------------------------------------------------------


def test_records_are_committed_before_call_tool_returns(desk, desk_db_path, operator_token):
    assert _second_connection_rows(desk_db_path) == []
    desk.call_tool("incident.search", {"service": "payments"}, operator_token, "acme")
    rows = _second_connection_rows(desk_db_path)
    assert [r[:5] for r in rows] == [("tool.called", "acme", "newton@acme", "incident.search", "ok")]
    desk.call_tool("incident.search", {}, operator_token, "acme")
    rows = _second_connection_rows(desk_db_path)
    assert [r[0] for r in rows] == ["tool.called", "tool.rejected"]
    assert orjson.loads(rows[1][5])["reason"] == "invalid_input"


def test_denials_are_committed_before_the_exception(desk, desk_db_path, operator_token):
    with pytest.raises(PermissionError):
        desk.call_tool("incident.search", {"service": "payments"}, "forged", "acme")
    with pytest.raises(PermissionError):
        desk.call_tool("incident.search", {"service": "payments"}, operator_token, "globex")
    rows = _second_connection_rows(desk_db_path)
    assert [(r[0], orjson.loads(r[5])["reason"]) for r in rows] == [
        ("tool.denied", "invalid_credential"),
        ("tool.denied", "tenant_mismatch"),
    ]


def test_records_survive_reopening(tmp_path):
    path = tmp_path / "audit.db"
    db = Database(path)
    AuditLog(db, key=b"k" * 32).record("tool.called", tool="t", tenant="acme", outcome="ok", arguments={"a": 1})
    db.close()
    db2 = Database(path)
    try:
        [rec] = AuditLog(db2).query()
        assert (rec.kind, rec.tool, rec.tenant, rec.outcome) == ("tool.called", "t", "acme", "ok")
    finally:
        db2.close()


# -- query filters ------------------------------------------------------------------------------


@pytest.fixture
def log(tmp_path):
    db = Database(tmp_path / "log.db")
    audit = AuditLog(db, key=b"a" * 32)
    yield audit
    db.close()


def _fill(log: AuditLog) -> float:
    log.record("tool.called", tool="incident.search", tenant="acme", subject="alice", outcome="ok")
    log.record("tool.called", tool="incident.search", tenant="globex", subject="grace", outcome="ok")
    log.record("tool.rejected", tool="incident.search", tenant="acme", subject="alice", outcome="invalid_input",
               reason="invalid_input")
    time.sleep(0.02)
    middle = time.time()
    time.sleep(0.02)
    log.record("tool.denied", tool="incident.delete", tenant="acme", subject="bob", outcome="denied",
               reason="unknown_tool")
    log.record("auth.denied", reason="invalid_credential", outcome="denied")
    return middle


def test_query_newest_first_and_limit(log):
    _fill(log)
    all_records = log.query()
    assert [r.kind for r in all_records] == ["auth.denied", "tool.denied", "tool.rejected", "tool.called",
                                            "tool.called"]
    ids = [r.id for r in all_records]
    assert ids == sorted(ids, reverse=True)
    assert [r.kind for r in log.query(limit=2)] == ["auth.denied", "tool.denied"]


def test_query_filters(log):
    middle = _fill(log)
    assert [r.subject for r in log.query(kind="tool.called")] == ["grace", "alice"]
    assert {r.kind for r in log.query(tenant="acme")} == {"tool.called", "tool.rejected", "tool.denied"}
    assert [r.tenant for r in log.query(tenant="globex")] == ["globex"]
    assert [r.kind for r in log.query(subject="bob")] == ["tool.denied"]
    assert [r.kind for r in log.query(tool="incident.delete")] == ["tool.denied"]
    assert [r.kind for r in log.query(outcome="invalid_input")] == ["tool.rejected"]
    assert [r.kind for r in log.query(tenant="acme", kind="tool.called")] == ["tool.called"]
    assert [r.kind for r in log.query(since=middle)] == ["auth.denied", "tool.denied"]
    assert [r.kind for r in log.query(until=middle)] == ["tool.rejected", "tool.called", "tool.called"]
    assert log.query(tenant="initech") == []
    assert list(log.kinds()) == ["auth.denied", "tool.called", "tool.denied", "tool.rejected"]


def test_record_to_dict_merges_fields(log):
    log.record("tool.rejected", tool="t", tenant="acme", subject="s", outcome="invalid_input", reason="invalid_input",
               field="service")
    [rec] = log.query()
    d = rec.to_dict()
    assert d["kind"] == "tool.rejected" and d["reason"] == "invalid_input" and d["field"] == "service"
    assert d["tool"] == "t" and d["tenant"] == "acme" and d["outcome"] == "invalid_input"


def test_disabled_log_writes_nothing(tmp_path):
    db = Database(tmp_path / "off.db")
    try:
        off = AuditLog(db, enabled=False)
        off.record("tool.called", tool="t")
        assert off.query() == []
    finally:
        db.close()


def test_fields_are_redacted(log):
    log.record("tool.failed", tool="t", note="Authorization: Bearer abcdefghijklmnop", password="hunter2",
               detail={"api_key": "k-123456"})
    [rec] = log.query()
    blob = orjson.dumps(rec.to_dict()).decode()
    for secret in ("abcdefghijklmnop", "hunter2", "k-123456"):
        assert secret not in blob


# -- arguments are fingerprinted, never stored ---------------------------------------------------


def test_arguments_are_only_fingerprinted(tmp_path, desk, desk_db_path, operator_token):
    desk.call_tool("incident.search", {"service": "payments-PLANTED-55aa", "includeLinks": True}, operator_token,
                   "acme")
    [rec] = desk.events.query(kind="tool.called")
    assert rec.fields["argKeys"] == ["service", "includeLinks"]
    assert rec.fields["argBytes"] == len(orjson.dumps({"includeLinks": True, "service": "payments-PLANTED-55aa"}))
    assert len(rec.fields["argHash"]) == 32
    assert "arguments" not in rec.fields
    assert "PLANTED-55aa" not in orjson.dumps(rec.to_dict()).decode()
    assert b"PLANTED-55aa" not in _db_bytes(desk_db_path)


def test_undeclared_argument_keys_are_recorded_as_undeclared(tmp_path):
    """argKeys says what the field column says: a key the tool does not declare is client data
    that no pattern may recognise, so neither column writes it (journal, WAL or table)."""
    server = Server("keys", db=str(tmp_path / "k.db"), tokens=StaticTokens.from_plain(
        {"t": Principal("a@x", "x", frozenset())})).start()
    try:
        @server.tool("count", description="Counts.",
                     input_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
        def count(ctx, n: int = 0, **extra) -> str:
            return str(n)

        @server.tool("strict", description="Counts strictly.", input_schema={
            "type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False})
        def strict(ctx, n: int = 0) -> str:
            return str(n)

        key = "sk-live-1a2b3c"  # too short for any secret pattern
        assert server.call_tool("count", {"n": 1, key: 2}, "t").is_error is False
        assert server.call_tool("strict", {"n": 1, key: 2}, "t").is_error is True
        called, = server.events.query(kind="tool.called")
        rejected, = server.events.query(kind="tool.rejected")
        assert called.fields["argKeys"] == ["n", "[undeclared]"]
        assert rejected.fields["argKeys"] == ["n", "[undeclared]"] and rejected.fields["field"] == "(root)"
        assert key.encode() not in _db_bytes(tmp_path / "k.db")
    finally:
        server.db.close()


def test_same_arguments_hash_alike_within_a_server(desk, operator_token):
    desk.call_tool("incident.search", {"service": "payments"}, operator_token, "acme")
    desk.call_tool("incident.search", {"service": "payments"}, operator_token, "acme")
    desk.call_tool("incident.search", {"service": "checkout"}, operator_token, "acme")
    hashes = [r.fields["argHash"] for r in desk.events.query(kind="tool.called")]
    assert hashes[1] == hashes[2] and hashes[0] != hashes[1]


def test_audit_key_decides_the_hash(tmp_path):
    def run(key: bytes, name: str) -> str:
        server = Server("k", tokens=StaticTokens.from_plain({"t": Principal("s", "acme")}), db=tmp_path / name,
                        audit_key=key).start()

        @server.tool("echo", description="echo")
        def echo(ctx, **kw):
            return "ok"

        server.call_tool("echo", {"a": "same"}, "t")
        [rec] = server.events.query(kind="tool.called")
        server.db.close()
        return rec.fields["argHash"]

    assert run(b"1" * 32, "a.db") == run(b"1" * 32, "b.db")
    assert run(b"1" * 32, "c.db") != run(b"2" * 32, "d.db")


def _db_bytes(path: Path) -> bytes:
    data = b""
    for suffix in ("", "-wal", "-journal"):
        p = Path(str(path) + suffix)
        if p.exists():
            data += p.read_bytes()
    return data


# -- property: planted secrets never reach the audit database ------------------------------------

TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
B64URL = TOKEN_CHARS + "-_"

raw_token = st.text(alphabet=TOKEN_CHARS, min_size=16, max_size=40)
secret_marked = raw_token.map(lambda t: "SeCrEt" + t)
bearer = raw_token.map(lambda t: "Bearer " + t)
jwt = st.tuples(
    st.text(alphabet=B64URL, min_size=8, max_size=30),
    st.text(alphabet=B64URL, min_size=8, max_size=60),
    st.text(alphabet=B64URL, min_size=16, max_size=43),
).map(lambda p: f"eyJ{p[0]}.eyJ{p[1]}.{p[2]}")
secrets_strategy = st.one_of(secret_marked, bearer, jwt)


def _needles(secret: str) -> list[bytes]:
    """What must not be found: the secret, and its random part on its own."""
    needles = [secret]
    if secret.startswith("Bearer "):
        needles.append(secret[len("Bearer "):])
    elif secret.startswith("SeCrEt"):
        needles.append(secret[len("SeCrEt"):])
    else:
        needles.extend(part for part in secret.split(".") if len(part) >= 8)
    return [n.encode() for n in needles]


plain_value = st.one_of(st.integers(-5, 5), st.booleans(), st.none(), st.text(alphabet="abc xyz", max_size=8))


def _embed(secret: str):
    """Strategies for an argument value that carries ``secret`` somewhere inside."""
    return st.sampled_from([
        secret,
        f"please use {secret} now",
        [secret],
        {"note": secret},
        {"deep": {"deeper": [1, {"x": secret}]}},
        [[{"k": [secret, 1]}]],
    ])


@st.composite
def planted_calls(draw):
    secret = draw(secrets_strategy)
    where = draw(st.sampled_from([
        "service_value", "extra_value", "nested_value", "top_key", "nested_key", "missing_service",
        "wrong_type_service", "strict_extra_key", "strict_wrong_type", "non_object", "raising_tool",
        "output_violation", "tenant_mismatch", "typed_extra_wrong",
    ]))
    value = draw(_embed(secret))
    filler = draw(st.dictionaries(st.sampled_from(["a", "b", "c"]), plain_value, max_size=2))
    tool, args, tenant = "open", {"service": "payments", **filler}, "acme"
    if where == "service_value":
        args["service"] = secret if isinstance(value, (list, dict)) else value
    elif where == "extra_value":
        args["extra"] = value
    elif where == "nested_value":
        args["meta"] = {"level": {"inner": value}}
    elif where == "top_key":
        args[secret] = draw(plain_value)
    elif where == "nested_key":
        args["meta"] = {secret: {"k": 1}}
    elif where == "missing_service":
        del args["service"]
        args["note"] = value
    elif where == "wrong_type_service":
        args["service"] = value if isinstance(value, (list, dict)) else {"v": value}
    elif where == "strict_extra_key":
        tool = "strict"
        args = {"service": "payments", secret: value}
    elif where == "strict_wrong_type":
        tool = "strict"
        args = {"service": "payments", "limit": value}
    elif where == "non_object":
        args = [secret, {"k": value}]
    elif where == "raising_tool":
        tool = "boom"
        args["payload"] = value
    elif where == "output_violation":
        tool = "liar"
        args["payload"] = value
    elif where == "tenant_mismatch":
        args["note"] = value
        tenant = "globex"
    elif where == "typed_extra_wrong":
        tool = "typed_extra"
        args = {"service": "payments", secret: 12345}
    return secret, where, tool, args, tenant


OPEN_INPUT = {"type": "object", "properties": {"service": {"type": "string", "minLength": 1}},
              "required": ["service"]}
STRICT_INPUT = {
    "type": "object",
    "properties": {"service": {"type": "string", "minLength": 1}, "limit": {"type": "integer"}},
    "required": ["service"],
    "additionalProperties": False,
}
TYPED_EXTRA_INPUT = {
    "type": "object",
    "properties": {"service": {"type": "string"}},
    "additionalProperties": {"type": "string"},
}


def _secret_server(path: Path) -> Server:
    server = Server("audit-secrets", tokens=StaticTokens.from_plain({"tok": Principal("s@acme", "acme")}), db=path).start()

    @server.tool("open", description="accepts more than it declares", input_schema=OPEN_INPUT)
    def open_tool(ctx, **kwargs):
        return ToolResult.structured({"ok": True, "keys": len(kwargs)})

    @server.tool("strict", description="accepts only what it declares", input_schema=STRICT_INPUT)
    def strict_tool(ctx, service, limit=0):
        return {"ok": True}

    @server.tool("typed_extra", description="extra fields must be strings", input_schema=TYPED_EXTRA_INPUT)
    def typed_extra(ctx, **kwargs):
        return {"ok": True}

    @server.tool("boom", description="fails, quoting its input")
    def boom(ctx, **kwargs):
        raise RuntimeError(f"could not handle {kwargs!r}")

    @server.tool("liar", description="breaks its output schema",
                 output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    def liar(ctx, **kwargs):
        return {"n": "not a number", "echo": repr(kwargs)}

    return server


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(planted_calls(), min_size=1, max_size=3))
def test_planted_secrets_never_reach_the_audit_database(calls):
    with tempfile.TemporaryDirectory(prefix="truecall-audit-") as tmp:
        path = Path(tmp) / "audit.db"
        server = _secret_server(path)
        try:
            for secret, where, tool, args, tenant in calls:
                try:
                    result = server.call_tool(tool, args, "tok", tenant)
                    assert isinstance(result, ToolResult)
                except PermissionError:
                    assert where == "tenant_mismatch"
                except ProtocolError:
                    pass
            assert server.events.query(), "every call leaves a record"
            data = _db_bytes(path)
        finally:
            server.db.close()
        data += _db_bytes(path)  # after the checkpoint on close, too
        for secret, where, *_ in calls:
            for needle in _needles(secret):
                assert needle not in data, f"secret planted as {where!r} found in the audit database"


def test_planted_secret_in_a_key_of_a_wrong_typed_field(tmp_path):
    """A secret used as a field name whose value has the wrong type: the path must not be stored raw."""
    path = tmp_path / "audit.db"
    server = _secret_server(path)
    secret = "SeCrEtQ8zK3mVw9LxPa2Ty7"
    result = server.call_tool("typed_extra", {"service": "payments", secret: 12345}, "tok")
    assert result.is_error
    server.db.close()
    assert secret.encode() not in _db_bytes(path)
    assert secret[len("SeCrEt"):].encode() not in _db_bytes(path)


def test_desk_audit_holds_no_planted_values(tmp_path):
    path = tmp_path / "desk.db"
    desk = build_desk(path).start()
    secret = "SeCrEt7HqYw2ZbNc5Lr8Vk"
    desk.call_tool("incident.search", {"service": secret}, "demo-acme-operator", "acme")
    desk.call_tool("incident.search", {"service": f"Bearer {secret}"}, "demo-acme-operator", "acme")
    desk.call_tool("incident.search", {"service": "", "includeLinks": secret}, "demo-acme-operator", "acme")
    desk.call_tool("incident.search", {"service": "p", secret: True}, "demo-acme-operator", "acme")
    with pytest.raises(PermissionError):
        desk.call_tool("incident.search", {"service": secret}, secret, "acme")
    data = _db_bytes(path)
    desk.db.close()
    data += _db_bytes(path)
    assert secret[len("SeCrEt"):].encode() not in data


# -- the row writer's unrolled redaction is redact() ------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from truecall.audit.redaction import redact  # noqa: E402

_SECRETISH = st.sampled_from(["password", "api_key", "Authorization", "token", "note", "client", "requestId",
                              "Bearer abcdefgh12345678", "4111 1111 1111 1111", "sk_live_0123456789abcdefXYZ"])
_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _SECRETISH | st.text(),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_SECRETISH | st.text(), inner,
                                                                                 max_size=3), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_SECRETISH | st.text(), _VALUES, max_size=6), st.sampled_from([None, "acme", 7]))
def test_a_row_redacts_its_fields_exactly_as_redact_does(fields: dict, tenant: object) -> None:
    from truecall.audit import AuditLog

    import json

    expected = json.loads(json.dumps(redact({k: v for k, v in fields.items()
                                             if k not in ("tenant", "subject", "tool", "outcome")})))
    row = AuditLog._row("k", {**fields, "tenant": tenant})
    assert json.loads(row[-1]) == expected
    assert row[2] == (None if tenant is None else redact(str(tenant)))


@settings(max_examples=200, deadline=None)
@given(tool=st.text(max_size=20) | _SECRETISH, tenant=st.none() | st.text(max_size=10) | _SECRETISH,
       subject=st.none() | _SECRETISH, outcome=st.sampled_from(["ok", "invalid_input", "internal"]),
       arguments=st.dictionaries(_SECRETISH | st.text(max_size=8), _VALUES, max_size=4),
       duration=st.floats(min_value=0, max_value=1e6), client=st.none() | _SECRETISH | st.text(max_size=10),
       request_id=st.none() | st.integers(min_value=-2**63, max_value=2**63 - 1) | st.text(max_size=20) | _SECRETISH)
def test_the_straight_line_call_record_is_the_generic_record(tool: str, tenant: Any, subject: Any, outcome: str,
                                                              arguments: dict, duration: float, client: Any,
                                                              request_id: Any) -> None:
    from truecall.audit import AuditLog

    rows: list[tuple] = []
    log = AuditLog.__new__(AuditLog)  # only the row building is under test here
    log.enabled, log._key, log._commit = True, b"k" * 32, rows.append  # type: ignore[method-assign]
    log._journal = None  # not serving: every record goes through _commit
    log.record_call("tool.called", tool, tenant, subject, outcome, arguments, duration, client, request_id)
    ref = {} if request_id is None else {"requestId": request_id}
    log.record("tool.called", tool=tool, tenant=tenant, subject=subject, outcome=outcome, arguments=arguments,
               durationMs=duration, client=client, **ref)
    straight, generic = rows
    assert straight[1:] == generic[1:]


def test_a_call_record_of_arguments_that_are_not_an_object_has_no_keys_after_cached_ones() -> None:
    """The argKeys of declared names are looked up by the argument names: a list or a string of
    the same names is not an object and has none.  The declared names settle passes are those
    declared_fields gives."""
    from truecall.audit import AuditLog

    rows: list[tuple] = []
    log = AuditLog.__new__(AuditLog)
    log.enabled, log._key, log._commit = True, b"k" * 32, rows.append  # type: ignore[method-assign]
    log._journal = None
    declared = frozenset({"service"})
    log.declared_fields = lambda tool: declared  # type: ignore[method-assign]
    for arguments in ({"service": "x"}, ["service"], "service", ("service",)):
        log.record_call("tool.called", "t", "acme", "u", "ok", arguments, 1.0, None, 1, declared)
    log.record_call("tool.called", "t", "acme", "u", "ok", {"service": "x"}, 1.0, None, 1)
    keys = [orjson.loads(r[6])["argKeys"] for r in rows]
    assert keys == [["service"], [], [], [], ["service"]]
    assert rows[0][1:] == rows[-1][1:]


# -- one request, one final record (the wire: test_audit_one_record.py) --------------------------

def test_a_second_final_record_is_a_loud_error(log: AuditLog, monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture) -> None:
    from truecall.audit import DuplicateFinalRecord

    async def request() -> object:
        ledger = log.begin()
        log.record("tool.form_refused", tool="t", outcome="refused")  # not final: beside the final one
        log.record_call("tool.called", "t", "acme", "alice", "ok", {}, 1.0, None, 7)
        assert ledger.final == "tool.called"
        log.record("task.completed", taskId="x", outcome="ok")  # a task's own record: not the request's
        with pytest.raises(DuplicateFinalRecord, match="rpc.error after tool.called"):
            log.record("rpc.error", method="tools/call", outcome="-32603")
        monkeypatch.setattr(type(log), "strict", False)  # in production: logged, and recorded anyway
        log.record("rpc.error", method="tools/call", outcome="-32603")
        ledger.serving = False  # answered: later records (a task's work) are not the request's
        log.record("tool.called", tool="t", outcome="ok")
        return ledger

    asyncio.run(request())
    assert [r.kind for r in log.query()] == ["tool.called", "rpc.error", "task.completed", "tool.called",
                                             "tool.form_refused"]
    assert [r.message for r in caplog.records if r.levelname == "ERROR"] == \
        ["a second final audit record for one request: rpc.error after tool.called (recorded anyway)"]


def test_records_outside_a_request_are_nobody_s(log: AuditLog) -> None:
    async def detached() -> None:
        log.begin()
        log.record("task.created", taskId="x", outcome="accepted")
        log.detach()  # the work goes on as the task's
        log.record("tool.called", tool="t", outcome="ok")

    asyncio.run(detached())
    log.record("tool.called", tool="t", outcome="ok")  # no request at all
    log.record("tool.called", tool="t", outcome="ok")
    assert len(log.query()) == 4


def test_the_audit_logs_jobs_live_apart():
    """``AuditLog`` keeps the trail durable (ledger, batches, outage); building a record, loading the
    journal and reading the trail back are modules of their own below it, none of which imports the
    log or another job's module, and every name ``truecall.audit`` had is still importable from it (the
    package now: its exports as they were, the module's other names through it with a warning)."""
    import ast
    import warnings

    import truecall.audit as audit
    from _paths import ROOT

    jobs = {"_records": {"truecall.audit.redaction"},
            "_loading": {"truecall.audit._journal", "truecall.storage"},
            "_queries": {"truecall.audit._records", "truecall.audit._retention", "truecall.audit._segments",
                         "truecall.storage"}}
    for module, allowed in jobs.items():
        tree = ast.parse((ROOT / "src" / "truecall" / "audit" / f"{module}.py").read_text(encoding="utf-8"))
        named = {"truecall.audit" + "." * bool(n.module) + (n.module or "") if n.level == 1
                 else "truecall" + "." * bool(n.module) + (n.module or "") for n in ast.walk(tree)
                 if isinstance(n, ast.ImportFrom) and n.level in (1, 2)}
        assert named <= allowed, (module, sorted(named - allowed))
    for name in ("AuditLog", "AuditRecord", "AuditUnavailable", "TrailUnavailable", "AUDIT_MIGRATIONS", "MAX_RETAINED",
                 "FINAL_KINDS", "Ledger", "DuplicateFinalRecord", "LOAD_DELAY_S", "LOAD_BYTES", "LOAD_RETRY_S",
                 "ROTATE_BYTES", "PROBE_S"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert hasattr(audit, name), name
    assert audit.AuditRecord.__module__ == "truecall.audit._records"
