"""Per-principal rate limits (bucket math on a fake clock, the pipeline's ``rate_limited`` result and its
audit record) and the ``truecall audit`` command (filters, ``--json``, the table)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from truecall import AuditLog, Database, ErrorKind, Principal, RateLimit, Server, StaticTokens, ToolResult
from truecall.cli._commands import app as cli_app


class Clock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(time, "monotonic", c)
    return c


# =================================================================================================
# Bucket math
# =================================================================================================


def test_a_new_principal_gets_a_full_burst_then_waits_one_token(clock: Clock) -> None:
    limit = RateLimit(rate=1, burst=2)
    assert limit.take("acme", "ada") == 0
    assert limit.take("acme", "ada") == 0
    assert limit.take("acme", "ada") == pytest.approx(1000.0)
    # a refused call costs nothing: asking again at once says the same
    assert limit.take("acme", "ada") == pytest.approx(1000.0)


def test_refill_is_linear_and_the_wait_shrinks(clock: Clock) -> None:
    limit = RateLimit(rate=2, burst=1)
    assert limit.take("t", "s") == 0
    assert limit.take("t", "s") == pytest.approx(500.0)
    clock.advance(0.25)  # half a token back
    assert limit.take("t", "s") == pytest.approx(250.0)
    clock.advance(0.25)
    assert limit.take("t", "s") == 0
    assert limit.take("t", "s") == pytest.approx(500.0)


def test_idle_time_refills_only_up_to_the_burst(clock: Clock) -> None:
    limit = RateLimit(rate=10, burst=3)
    for _ in range(3):
        assert limit.take("t", "s") == 0
    clock.advance(3600)
    assert [limit.take("t", "s") for _ in range(4)][:3] == [0, 0, 0]
    assert limit.take("t", "s") == pytest.approx(100.0)


def test_sustained_rate_matches_the_configured_rate(clock: Clock) -> None:
    limit = RateLimit(rate=4, burst=1)
    allowed = 0
    for _ in range(640):  # 10 s of attempts every 1/64 s (binary fractions: no rounding drift)
        if limit.take("t", "s") == 0:
            allowed += 1
        clock.advance(1 / 64)
    assert allowed in (40, 41)  # the burst, then 4 per second


def test_buckets_are_per_tenant_and_subject(clock: Clock) -> None:
    limit = RateLimit(rate=1, burst=1)
    assert limit.take("acme", "ada") == 0
    assert limit.take("acme", "ada") > 0
    assert limit.take("globex", "ada") == 0  # same subject, other tenant: its own bucket
    assert limit.take("acme", "bob") == 0


def test_memory_is_bounded(clock: Clock) -> None:
    limit = RateLimit(rate=1, burst=1, max_principals=10)
    for i in range(25):
        limit.take("t", f"s{i}")
    assert len(limit._buckets) <= 10


@pytest.mark.parametrize("rate,burst", [(0, 1), (-1, 1), (1, 0), (1, -3)])
def test_nonsense_limits_are_refused(rate: float, burst: int) -> None:
    with pytest.raises(ValueError):
        RateLimit(rate=rate, burst=burst)


# =================================================================================================
# In the pipeline
# =================================================================================================

ADA = Principal("ada@acme", "acme", frozenset({"read"}))
BOB = Principal("bob@acme", "acme", frozenset({"read"}))
GRACE = Principal("grace@globex", "globex", frozenset({"read"}))
TOKENS = {"tok-ada": ADA, "tok-bob": BOB, "tok-grace": GRACE}


def limited_server(path: Path) -> Server:
    server = Server("limited", db=str(path), tokens=StaticTokens.from_plain(TOKENS),
                    rate_limit=RateLimit(rate=1, burst=2)).start()

    @server.tool("ping", description="Answers pong.", scopes={"read"},
                 input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False})
    def ping(ctx: Any, n: int = 0) -> ToolResult:
        return ToolResult.structured({"pong": n})

    return server


@pytest.fixture
def server(tmp_path: Path) -> Any:
    s = limited_server(tmp_path / "limited.db")
    yield s
    s.db.close()


def audit_rows(server: Server, kind: str | None = None) -> list[tuple[Any, ...]]:
    sql = "SELECT kind, tenant, subject, tool, outcome, fields FROM audit_events"
    rows = server.db.fetchall(sql + (" WHERE kind = ?" if kind else "") + " ORDER BY id", (kind,) if kind else ())
    return [(*r[:5], orjson.loads(r[5])) for r in rows]


def test_third_immediate_call_is_rate_limited(server: Server, clock: Clock) -> None:
    assert not server.call_tool("ping", {"n": 1}, "tok-ada").is_error
    assert not server.call_tool("ping", {"n": 2}, "tok-ada").is_error
    third = server.call_tool("ping", {"n": 3}, "tok-ada")
    assert third.is_error
    error = third.error
    assert error is not None and error["kind"] == ErrorKind.RATE_LIMITED.value == "rate_limited"
    assert error["retryable"] is True
    assert isinstance(error["retryAfterMs"], int) and error["retryAfterMs"] > 0
    assert 1000 <= error["retryAfterMs"] <= 1001
    assert str(error["retryAfterMs"]) in third.content[0]["text"]
    (row,) = audit_rows(server, "tool.rate_limited")
    kind, tenant, subject, tool, outcome, fields = row
    assert (tenant, subject, tool, outcome) == ("acme", "ada@acme", "ping", "rate_limited")
    assert fields["retryAfterMs"] == error["retryAfterMs"]
    # the limited call did not run: two tool.called, no third
    assert [r[4] for r in audit_rows(server, "tool.called")] == ["ok", "ok"]


def test_other_principals_are_not_slowed_down(server: Server, clock: Clock) -> None:
    for _ in range(2):
        server.call_tool("ping", {}, "tok-ada")
    assert server.call_tool("ping", {}, "tok-ada").is_error
    assert not server.call_tool("ping", {}, "tok-bob").is_error
    assert not server.call_tool("ping", {}, "tok-grace").is_error


def test_after_the_wait_the_call_goes_through(server: Server, clock: Clock) -> None:
    for _ in range(2):
        server.call_tool("ping", {}, "tok-ada")
    wait = server.call_tool("ping", {}, "tok-ada").error["retryAfterMs"]
    clock.advance(wait / 1000)
    assert not server.call_tool("ping", {}, "tok-ada").is_error
    assert server.call_tool("ping", {}, "tok-ada").is_error


def test_refused_credentials_and_unknown_tools_do_not_spend_the_budget(server: Server, clock: Clock) -> None:
    from truecall import InvalidCredential, UnknownTool

    for _ in range(5):
        with pytest.raises(UnknownTool):
            server.call_tool("nope", {}, "tok-ada")
        with pytest.raises(InvalidCredential):
            server.call_tool("ping", {}, "wrong")
    assert not server.call_tool("ping", {}, "tok-ada").is_error
    assert not server.call_tool("ping", {}, "tok-ada").is_error


def test_rate_limited_result_over_the_engine(server: Server) -> None:
    """Over the protocol (truecall.Client in process: the real engine, JSON both ways) the call over
    budget is a typed tool error the caller can act on, not a protocol error."""
    import asyncio

    from truecall import Client, Done, Failed

    async def calls() -> list[Any]:
        async with Client(server, token="tok-ada") as client:
            return [await client.call("ping", {}) for _ in range(3)]

    first, second, third = asyncio.run(calls())
    assert isinstance(first, Done) and isinstance(second, Done)
    assert isinstance(third, Failed) and third.kind == "rate_limited"
    assert third.structured["error"]["retryAfterMs"] > 0


# =================================================================================================
# truecall audit
# =================================================================================================


@pytest.fixture
def audit_db(tmp_path: Path, clock: Clock) -> Path:
    """A database with calls of two tenants: ok, denied, invalid input and rate limited."""
    path = tmp_path / "audit.db"
    server = limited_server(path)
    try:
        server.call_tool("ping", {"n": 1}, "tok-ada")
        server.call_tool("ping", {"n": "x"}, "tok-ada")
        server.call_tool("ping", {}, "tok-ada")  # rate limited (burst 2)
        server.call_tool("ping", {}, "tok-grace")
        try:
            server.call_tool("nope", {}, "tok-grace")
        except Exception:
            pass
        # one old record, three hours ago
        server.events.record("tool.called", tool="ping", tenant="acme", subject="old@acme", outcome="ok")
        server.db.execute("UPDATE audit_events SET ts = ? WHERE subject = 'old@acme'", (time.time() - 3 * 3600,))
    finally:
        server.db.close()
    return path


def run_audit(*args: str, env: dict[str, str] | None = None) -> Any:
    result = CliRunner().invoke(cli_app, ["audit", *args], env={"COLUMNS": "240", **(env or {})})
    return result


def json_records(*args: str) -> list[dict[str, Any]]:
    result = run_audit(*args, "--json")
    assert result.exit_code == 0, result.output
    return [orjson.loads(line) for line in result.output.splitlines() if line.strip()]


def test_json_output_is_one_object_per_line_newest_first(audit_db: Path) -> None:
    records = json_records("--db", str(audit_db))
    assert len(records) == 6
    ids = [r["id"] for r in records]
    assert ids == sorted(ids, reverse=True)
    assert {"id", "ts", "kind", "tenant", "subject", "tool", "outcome"} <= set(records[0])
    kinds = {r["kind"] for r in records}
    assert kinds == {"tool.called", "tool.rejected", "tool.rate_limited", "tool.denied"}


def test_filters(audit_db: Path) -> None:
    acme = json_records("--db", str(audit_db), "--tenant", "acme")
    assert acme and all(r["tenant"] == "acme" for r in acme) and len(acme) == 4
    globex = json_records("--db", str(audit_db), "--tenant", "globex")
    assert [r["kind"] for r in globex] == ["tool.denied", "tool.called"]
    assert all(r["tool"] == "nope" for r in json_records("--db", str(audit_db), "--tool", "nope"))
    limited = json_records("--db", str(audit_db), "--outcome", "rate_limited")
    assert [(r["kind"], r["subject"], r["retryAfterMs"] > 0) for r in limited] == \
        [("tool.rate_limited", "ada@acme", True)]
    assert [r["outcome"] for r in json_records("--db", str(audit_db), "--outcome", "invalid_input")] == \
        ["invalid_input"]
    assert [r["kind"] for r in json_records("--db", str(audit_db), "--kind", "tool.denied")] == ["tool.denied"]
    both = json_records("--db", str(audit_db), "--tenant", "acme", "--outcome", "ok")
    assert {r["subject"] for r in both} == {"ada@acme", "old@acme"}
    assert json_records("--db", str(audit_db), "--subject", "grace@globex", "--tool", "ping")[0]["outcome"] == "ok"
    assert len(json_records("--db", str(audit_db), "--limit", "2")) == 2
    assert json_records("--db", str(audit_db), "--tenant", "initech") == []


@pytest.mark.parametrize("since,count", [("2h", 5), ("4h", 6), ("90m", 5), ("1d", 6), ("10s", 5)])
def test_since_relative(audit_db: Path, since: str, count: int) -> None:
    assert len(json_records("--db", str(audit_db), "--since", since)) == count


def test_since_and_until_absolute(audit_db: Path) -> None:
    from datetime import datetime, timezone

    two_hours_ago = time.time() - 2 * 3600
    iso = datetime.fromtimestamp(two_hours_ago, timezone.utc).isoformat().replace("+00:00", "Z")
    assert len(json_records("--db", str(audit_db), "--since", iso)) == 5
    assert len(json_records("--db", str(audit_db), "--since", str(two_hours_ago))) == 5
    old = json_records("--db", str(audit_db), "--until", "2h")
    assert [r["subject"] for r in old] == ["old@acme"]


def test_bad_time_is_a_usage_error(audit_db: Path) -> None:
    result = run_audit("--db", str(audit_db), "--since", "yesterday-ish")
    assert result.exit_code == 2
    assert "not a time" in result.output


def test_table_output_names_the_kinds(audit_db: Path) -> None:
    result = run_audit("--db", str(audit_db))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "audit (6 records, newest first" in out
    for kind in ("tool.called", "tool.rejected", "tool.rate_limited", "tool.denied"):
        assert kind in out
    for column in ("time", "kind", "tenant", "subject", "tool", "outcome"):
        assert column in out
    assert "retryAfterMs=" in out and "rate_limited" in out
    filtered = run_audit("--db", str(audit_db), "--tenant", "globex")
    assert "audit (2 records," in filtered.output and "tool.rate_limited" not in filtered.output


def test_database_from_the_environment_and_a_missing_one(audit_db: Path, tmp_path: Path) -> None:
    result = run_audit("--json", env={"TRUECALL_DB": str(audit_db)})
    assert result.exit_code == 0 and len(result.output.splitlines()) == 6
    missing = tmp_path / "nope" / "none.db"
    result = run_audit("--db", str(missing))
    assert result.exit_code == 2 and "no database" in result.output
    assert not missing.exists() and not missing.parent.exists()  # the check created nothing


def test_database_given_as_a_url(audit_db: Path) -> None:
    """``TRUECALL_DB`` may be a URL (sqlite:///…, postgresql://…); ``truecall audit`` reads it too."""
    result = run_audit("--json", env={"TRUECALL_DB": f"sqlite:///{audit_db}"})
    assert result.exit_code == 0, result.output
    assert len(result.output.splitlines()) == 6
    result = run_audit("--db", f"sqlite:///{audit_db}", "--json", "--tenant", "globex")
    assert result.exit_code == 0, result.output
    assert len(result.output.splitlines()) == 2


def test_audit_reads_a_log_written_by_another_process_layout(tmp_path: Path) -> None:
    """Records written through AuditLog directly (redacted fields) come back intact in --json."""
    db = Database(tmp_path / "direct.db")
    log = AuditLog(db)
    log.record("auth.denied", reason="invalid_credential", detail="expired", outcome="denied")
    log.record("tool.called", tool="t", tenant="acme", subject="s", outcome="ok",
               note="Authorization: Bearer abcdefghijklmnop1234")
    db.close()
    records = json_records("--db", str(tmp_path / "direct.db"))
    assert records[1]["detail"] == "expired" and records[1]["tenant"] is None
    assert "abcdefghijklmnop1234" not in orjson.dumps(records).decode()
