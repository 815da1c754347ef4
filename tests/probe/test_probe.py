"""``truecall probe``: each lie a server can tell about its results is reported, with its evidence.

Purpose-built servers tell the lies: on truecall (in this process), on FastMCP 4.2.3
(tests/probe_peers/fastmcp_liar.py, over HTTP) and in a plain loop with no SDK
(tests/probe_peers/plain_liar.py, over stdio: the protocol-layer lies no framework lets
through).  The incident desk and a clean FastMCP server must produce no false failures.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import orjson
import pytest

from truecall import Principal, Server, tool_error
from truecall.incidents import build_desk
from truecall.probe import NOTHING_PROBED, Report, probe, render

from _paths import TESTS
from http_support import OPERATOR, free_port, served
from stress.common import terminate

PEERS = TESTS / "probe_peers"
ERAS = {"2026-07-28", "2025-11-25"}
RO = {"readOnlyHint": True}


def run(coro: Any, timeout: float = 90.0) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout))


def findings(report: Report, code: str) -> list[Any]:
    return [f for f in report.findings if f.code == code]


def only(report: Report, code: str, tool: str | None, eras: set[str] = ERAS) -> list[Any]:
    """The finding of ``code`` on ``tool``: one (one cause is one finding, whatever the eras that show it),
    naming the eras in ``eras``, with a request and an answer."""
    got = [f for f in findings(report, code) if f.tool == tool]
    assert len(got) == 1 and set(got[0].eras) == eras, (code, tool, [f.to_dict() for f in report.findings])
    for f in got:
        assert f.rule and f.request["method"] == "tools/call" and f.answer is not None
        if tool is not None:
            assert f.request["params"]["name"] == tool
    return got


@contextlib.contextmanager
def http_server(script: Path, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = open(tmp_path / f"{script.stem}.log", "wb")
    proc = subprocess.Popen([sys.executable, str(script), "http", str(port)], cwd=tmp_path, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / f"{script.stem}.log").read_text()
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the server did not start listening"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        terminate(proc, 5)
        log.close()


# -- truecall: the lies an author can still tell through an honest toolkit ---------------------------------


def _truecall_liar() -> Server:
    server = Server("truecall-liar")
    server.local_principal = Principal("probe@test", "local", frozenset())

    @server.tool(annotations=RO)
    def upstream(service: str) -> str:
        """Upstream status: a failure told as success text."""
        return f"Error: upstream for {service} timed out"

    @server.tool(annotations=RO)
    def file_report(title: str) -> str:
        """Accepted, with no task and no reference."""
        return "已受理，我们会尽快处理"

    @server.tool(annotations=RO)
    def explode() -> Any:
        """An error whose message is a traceback."""
        return tool_error("internal", 'Traceback (most recent call last):\n  File "/srv/app/db.py", line 3, in get')

    @server.tool(annotations=RO)
    def boom() -> str:
        """An exception truecall turns into an internal error (it shows nothing)."""
        raise KeyError("db")

    @server.tool(annotations=RO)
    def ticket(title: str) -> dict[str, Any]:
        """Queued with a reference: not a lie."""
        return {"status": "queued", "ticket": "OPS-1234"}

    @server.tool()
    def delete_everything(confirm: str) -> str:
        """A write: a read-only probe never calls it."""
        raise AssertionError("a write tool was called by a read-only probe")

    return server


def test_truecall_liar_findings() -> None:
    report = run(probe(_truecall_liar(), timeout=10))
    said = only(report, "says_failed", "upstream")
    assert all(f.severity == "warning" and "Error: upstream" in f.answer["content"] for f in said)
    accepted = only(report, "accepted_without_handle", "file_report")
    assert all(f.severity == "failure" and "已受理" in f.answer["content"] for f in accepted)
    leaks = only(report, "leaks_internals", "explode")
    assert all("Traceback" in f.answer and f.layer == "red line" for f in leaks)
    # Its traceback answers arguments made from its schema: a crash, told as text.
    assert "Traceback" in only(report, "crashes_on_valid_arguments", "explode")[0].answer
    # What truecall itself answers is clean: an unknown tool is -32602, an exception shows nothing,
    # a queued result with a ticket is not "accepted without a handle".
    assert {f.tool for f in report.findings} == {"upstream", "file_report", "explode"}
    assert all("delete_everything" in e.skipped and "delete_everything" not in e.probed for e in report.eras)
    assert not [o for o in report.observations if o.tool == "delete_everything"]
    assert {e.version for e in report.eras} == ERAS
    assert report.exit_status == 2
    text = render(report)
    assert text.splitlines()[-1] == f"summary: {report.summary()}"
    # One cause, one finding: the two eras are named on it, not counted twice.
    assert "3 failures, 1 warning;" in report.summary()
    assert "says_failed [2026-07-28, 2025-11-25] upstream" in text
    # The user layer: what describe() would tell a user about each observed result.
    told = {(o.era, o.tool, o.purpose): o for o in report.observations}
    # was: the server's "已受理" repeated as the user's sentence (issue #24): now the client's Unconfirmed
    said = told[("2026-07-28", "file_report", "generated")].describe
    assert said.startswith("Not done") and "已受理" in said and "no way to check" in said
    # was: labelled "done" while the client calls it Unconfirmed: the outcome carries the client's own name
    assert told[("2026-07-28", "file_report", "generated")].outcome == "unconfirmed"
    assert told[("2025-11-25", "boom", "generated")].outcome == "failed"


def test_tool_names_a_write_tool_and_allow_writes() -> None:
    report = run(probe(_truecall_liar(), tools=["file_report", "nope"], timeout=10))
    assert all(e.probed == ["file_report"] and e.skipped["nope"] == "not listed by the server"
               for e in report.eras)
    assert {f.tool for f in report.findings} == {"file_report"}
    report = run(probe(_truecall_liar(), allow_writes=True, eras=["2025-11-25"], timeout=10))
    assert "delete_everything" in report.eras[0].probed
    # The tool raised: truecall answered an internal error that shows nothing.
    assert not [f for f in report.findings if f.tool == "delete_everything"]


def test_desk_no_false_findings(tmp_path: Path) -> None:
    desk = build_desk(str(tmp_path / "desk.db"))
    report = run(probe(desk, token=OPERATOR, timeout=10))
    assert {e.version for e in report.eras} == ERAS
    assert all(e.probed == ["incident.search"] for e in report.eras)
    assert report.findings == [], [f.to_dict() for f in report.findings]
    assert report.exit_status == 0
    assert {o.purpose for o in report.observations} >= {"unknown_tool", "generated", "missing_argument",
                                                         "wrong_type", "secret_value"}


# -- FastMCP: the same lies told through another framework ----------------------------------------------------


def test_fastmcp_liar_and_clean(tmp_path: Path) -> None:
    with http_server(PEERS / "fastmcp_liar.py", tmp_path) as liar_url, \
            http_server(PEERS / "fastmcp_clean.py", tmp_path) as clean_url:
        proc = subprocess.run([sys.executable, "-m", "truecall.cli", "probe", "--json", "--url", liar_url],
                              capture_output=True, timeout=120, cwd=tmp_path, env={**os.environ, "NO_COLOR": "1"})
        clean = run(probe(clean_url, timeout=10))
    assert proc.returncode == 2, proc.stderr.decode()
    data = orjson.loads(proc.stdout)
    assert data["exitStatus"] == 2 and data["summary"].endswith("exit 2")
    got: dict[tuple[str, Any], list[dict[str, Any]]] = {}
    for f in data["findings"]:
        got.setdefault((f["code"], f["tool"]), []).append(f)

    def eras(code: str, tool: str | None) -> set[str]:
        [finding] = got.get((code, tool), [{"eras": []}])  # one finding per cause
        return set(finding["eras"])

    assert eras("unknown_tool_as_result", None) == ERAS  # FastMCP folds an unknown tool into isError: true
    assert all(f["evidence"]["answer"]["isError"] is True for f in got[("unknown_tool_as_result", None)])
    assert eras("schema_broken", "count") == ERAS
    assert all(f["evidence"]["answer"] == {"structuredContent": {"count": "three"}}
               for f in got[("schema_broken", "count")])
    assert eras("says_failed", "upstream") == ERAS
    assert eras("says_failed", "health") == ERAS
    assert all(f["evidence"]["answer"] == {"structuredContent": {"success": False}}
               for f in got[("says_failed", "health")])
    assert eras("accepted_without_handle", "file_report") == ERAS
    assert eras("leaks_internals", "explode") == ERAS
    assert all("Traceback" in f["evidence"]["answer"] for f in got[("leaks_internals", "explode")])
    assert eras("echoes_secret", "find") == ERAS
    for f in got[("echoes_secret", "find")]:  # shown, and the secret itself not repeated
        assert f["evidence"]["request"]["params"]["arguments"]["service"] == "[REDACTED:planted]"
        assert "[REDACTED:planted]" in f["evidence"]["answer"]
    assert b"truecallprobe" not in proc.stdout
    # FastMCP has no elicitation on 2026-07-28 connections: the form is only asked in the handshake era.
    assert eras("credential_form", "sign_in") == {"2025-11-25"}
    form = got[("credential_form", "sign_in")][0]["evidence"]["answer"]
    assert "password" in form["params"]["requestedSchema"]["properties"]
    assert {f["severity"] for f in data["findings"] if f["code"] in ("says_failed",)} == {"warning"}

    # A clean FastMCP server: the only finding is FastMCP's own unknown-tool fold (a real one, checked
    # above); its write tool was not called and its tool error is not read as anything else.
    # FastMCP's own validation error repeats every argument (pydantic's input_value={...}): the planted
    # secret, sent in a call that fails validation, comes back — a real finding, unseen while the
    # secret was only sent in valid calls.
    assert {(f.code, f.tool) for f in clean.findings} == {("unknown_tool_as_result", None), ("echoes_secret", "search")}
    [echo] = findings(clean, "echoes_secret")
    assert echo.request["params"]["arguments"] == {"note": "[REDACTED:planted]"}
    assert "input_value" in echo.answer and "[REDACTED:planted]" in echo.answer
    assert all(e.probed == ["down", "search"] and "escalate" in e.skipped for e in clean.eras)


# -- a plain loop: the protocol-layer lies -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def plain() -> Report:
    """The plain liar probed once (both eras and the raw checks), shared by the tests below."""
    return run(probe([sys.executable, str(PEERS / "plain_liar.py")], timeout=10))


def test_plain_liar_protocol_findings(plain: Report) -> None:
    report = plain
    assert {e.version for e in report.eras} == ERAS
    unknown = only(report, "unknown_tool_as_result", None)
    assert all(f.answer == {"content": [{"type": "text", "text": "ok"}]} for f in unknown)
    missing = only(report, "missing_argument_accepted", "lenient")
    assert all(f.request["params"]["arguments"] == {} and f.severity == "failure" for f in missing)
    wrong = only(report, "wrong_type_accepted", "lenient")
    assert all(f.request["params"]["arguments"] == {"id": 12345} and f.severity == "warning" for f in wrong)
    # Echoed unchecked: the wrong type is accepted and then breaks the output schema — both are said.
    assert all(f.request["params"]["arguments"] == {"n": "not-a-int"}
               for f in only(report, "wrong_type_accepted", "echo_count"))
    assert all(f.answer == {"structuredContent": {"n": "not-a-int"}}
               for f in only(report, "schema_broken", "echo_count"))
    # 2026-07-28: the form arrives in an input_required result; the probe declines it and says so.
    form = [f for f in findings(report, "credential_form") if f.tool == "sign_in"]
    assert [(f.eras, f.tool) for f in form] == [(["2026-07-28"], "sign_in")]
    assert "password" in form[0].answer["params"]["requestedSchema"]["properties"]
    assert form[0].answer["trigger"]["field"] == "password" and "field 'password'" in form[0].summary
    assert ("2026-07-28", "sign_in", "sign-in decline") in {(o.era, o.tool, o.describe) for o in report.observations}
    leaks = only(report, "leaks_internals", "leaky")
    assert all(f.answer["code"] == -32603 and "Traceback" in f.answer["message"] for f in leaks)
    hollow = only(report, "task_without_result", "hollow", {"2026-07-28"})
    assert hollow[0].request["then"]["method"] == "tasks/get" and hollow[0].answer["status"] == "completed"
    assert "result" not in hollow[0].answer
    only(report, "result_type_missing", "lenient", {"2026-07-28"})
    # Raw JSON-RPC, in a process of its own: bad JSON ignored, a numeric method answered -32601,
    # a request naming 1999-01-01 answered as if it were fine.
    raw = {f.code: f for f in report.findings if f.era in ("json-rpc", "2026-07-28") and "sent" in f.request}
    assert raw["parse_error_unanswered"].answer is None and raw["parse_error_unanswered"].severity == "warning"
    # its silence shown by the answer to the request sent after the bad line, not by a timeout waited out
    assert raw["parse_error_unanswered"].summary.endswith("(silence, though the request after it was answered)")
    assert raw["invalid_request_unanswered"].answer["error"]["code"] == -32601
    assert raw["invalid_request_unanswered"].request["sent"]["method"] == 42
    assert "result" in raw["unsupported_version_data"].answer
    assert raw["unsupported_version_data"].request["sent"]["params"]["_meta"][
        "io.modelcontextprotocol/protocolVersion"] == "1999-01-01"
    twice = raw["answered_twice"]
    assert twice.request["sent"]["method"] == "tools/list" and len(twice.answer) == 2
    assert all(a["id"] == "truecall-probe-once" for a in twice.answer)
    assert report.exit_status == 2


def test_desk_over_stdio_no_false_findings(tmp_path: Path) -> None:
    """The desk as a process: the raw JSON-RPC checks find nothing either."""
    env = {"TRUECALL_DB": str(tmp_path / "desk.db"), "TRUECALL_PRINCIPAL": "probe@acme,acme,incidents:read"}
    report = run(probe([sys.executable, "-m", "truecall", "serve"], env=env, timeout=20))
    assert {e.version for e in report.eras} == ERAS
    assert report.findings == [] and report.notes == [], [f.to_dict() for f in report.findings]
    assert report.exit_status == 0


def test_desk_over_http_no_false_findings(tmp_path: Path) -> None:
    """The desk over Streamable HTTP: both eras, and the raw checks over HTTP (2026-07-28), find nothing."""
    with served(tmp_path) as server:
        report = run(probe(server.url, token=OPERATOR, timeout=20))
    assert {e.version for e in report.eras} == ERAS
    assert report.findings == [] and report.notes == [], [f.to_dict() for f in report.findings]


def test_http_raw_checks_report_what_they_see() -> None:
    """The raw checks over HTTP against a server that answers every body 200 with a success."""
    import httpx

    from truecall.probe._raw import _raw_http

    def lenient(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": None, "result": {"tools": []}})

    report = Report(target="x")
    run(_raw_http(report, "http://127.0.0.1:1/mcp", token=None, timeout=5,
                  http_transport=httpx.MockTransport(lenient)))
    assert {f.code for f in report.findings} == {"parse_error_unanswered", "invalid_request_unanswered",
                                                 "unsupported_version_data"}
    assert all(f.answer == {"jsonrpc": "2.0", "id": None, "result": {"tools": []}} for f in report.findings)


def test_slow_starting_server_is_not_called_silent(tmp_path: Path) -> None:
    """The desk started 3.5 s late (longer than the raw checks wait for an answer): it answers every raw
    line once it reads them, so nothing is held against it (before, its late answers counted as silence)."""
    env = {"TRUECALL_DB": str(tmp_path / "desk.db"), "TRUECALL_PRINCIPAL": "probe@acme,acme,incidents:read"}
    late = "import runpy, time; time.sleep(3.5); runpy.run_module('truecall', run_name='__main__')"
    report = run(probe([sys.executable, "-c", late, "serve"], env=env, timeout=20, eras=["2026-07-28"]))
    assert report.reached and report.findings == [] and report.notes == [], [f.to_dict() for f in report.findings]


def test_cli_needs_a_server() -> None:
    proc = subprocess.run([sys.executable, "-m", "truecall.cli", "probe"], capture_output=True, timeout=60)
    assert proc.returncode == 2 and b"--url URL" in proc.stderr


def test_unreachable_server_is_exit_2(tmp_path: Path) -> None:
    report = run(probe(f"http://127.0.0.1:{free_port()}/mcp", timeout=5))
    assert not report.reached and report.exit_status == 2
    assert all(e.error for e in report.eras)
    assert "not reached" in render(report)


# -- issue 24: what the probe missed, and what it repeated ---------------------------------------------------

sys.path.insert(0, str(PEERS))
from plain_liar import ENVIRONMENT, PLANTED, SAYS  # noqa: E402  (the liar's own words, not a copy)

ACCEPTED = ("accepted_later", "ticket_created", "processing_zh", "queued_zh", "received", "pending")
FAILED = ("upstream_timeout", "timeout_zh", "internal_error")


@pytest.mark.parametrize("tool", ACCEPTED)
def test_acceptance_without_a_handle_is_seen(plain: Report, tool: str) -> None:
    [finding] = only(plain, "accepted_without_handle", tool)
    assert finding.severity == "failure" and finding.answer["claim"] in SAYS[tool]


@pytest.mark.parametrize("tool", FAILED)
def test_failure_told_as_success_is_seen(plain: Report, tool: str) -> None:
    [finding] = only(plain, "says_failed", tool)
    assert finding.answer["claim"] in SAYS[tool]


def test_a_success_that_dumps_the_environment_or_carries_a_secret(plain: Report) -> None:
    only(plain, "dumps_environment", "environment")
    only(plain, "result_has_secret", "environment")
    [key] = only(plain, "result_has_secret", "key_info")
    assert "[REDACTED:" in key.answer and "ghp_" not in key.answer
    # A success that repeats what the caller sent (a note, a search term) gives the caller its own value.
    assert not [f for f in plain.findings if f.tool == "note" and f.code == "echoes_secret"]


def test_internals_in_a_success_are_seen(plain: Report) -> None:
    [leak] = only(plain, "leaks_internals", "stack")
    assert "Traceback" in leak.answer and leak.summary == "a result shows the server's internals"


def test_the_secret_is_also_sent_in_a_call_that_fails_validation(plain: Report) -> None:
    """``strict`` repeats every argument only when they fail its validation."""
    [echo] = only(plain, "echoes_secret", "strict")
    arguments = echo.request["params"]["arguments"]
    assert "service" not in arguments and "[REDACTED:planted]" in arguments.values()
    assert "input_value" in echo.answer and "[REDACTED:planted]" in echo.answer


@pytest.mark.parametrize(("tool", "code"), [("crash", -32603), ("crash_attr", 0)])
def test_a_crash_on_valid_arguments_is_seen(plain: Report, tool: str, code: int) -> None:
    [crash] = only(plain, "crashes_on_valid_arguments", tool)
    assert crash.answer["code"] == code and crash.request["params"]["arguments"] == {}


def test_a_form_finding_shows_the_field_that_triggered_it(plain: Report) -> None:
    [form] = only(plain, "credential_form", "long_form", {"2026-07-28"})
    assert "field 'card_pin'" in form.summary
    # The evidence is long, so cut at 600 characters: what triggered it comes first, before the cut.
    assert isinstance(form.answer, str) and form.answer.endswith("…")
    assert form.answer.startswith('{"trigger":{"where":"card_pin","field":"card_pin","reason":"format: password"}')
    assert any(line.startswith('    answer:  {"trigger":{"where":"card_pin"') for line in render(plain).splitlines())


def test_the_report_never_repeats_a_secret(plain: Report) -> None:
    shown = render(plain) + orjson.dumps(plain.to_dict()).decode()
    assert PLANTED in ENVIRONMENT.values()
    for secret in (PLANTED, "ghp_A1b2C3d4", "sk_live_truecallprobe", "truecallprobe"):
        assert secret not in shown, secret


def test_one_cause_is_one_finding_across_eras(plain: Report) -> None:
    causes = [(f.code, f.tool) for f in plain.findings]
    assert len(causes) == len(set(causes))
    assert only(plain, "crashes_on_valid_arguments", "crash")[0].eras == ["2026-07-28", "2025-11-25"]


def test_no_tool_probed_is_not_a_pass() -> None:
    """A server with no read-only tool: the probe says it checked no tool and exits 3, never 0."""
    server = Server("writes-only")
    server.local_principal = Principal("probe@test", "local", frozenset())

    @server.tool()
    def delete_everything(confirm: str) -> str:
        """A write: a read-only probe never calls it."""
        raise AssertionError("a write tool was called by a read-only probe")

    report = run(probe(server, timeout=10))
    assert report.reached and report.probed == [] and report.findings == []
    assert report.exit_status == NOTHING_PROBED == 3
    assert "no tool probed" in report.summary() and report.summary().endswith("exit 3")


def test_the_quickstart_server_exits_3(tmp_path: Path) -> None:
    """The quickstart's server (docs/quickstart.md: no tool is annotated read-only) over the command line."""
    import re

    from _paths import ROOT

    [code] = re.findall(r'```python title="server.py"\n(.*?)```', (ROOT / "docs" / "quickstart.md").read_text(), re.S)
    (tmp_path / "server.py").write_text(code)
    proc = subprocess.run([sys.executable, "-m", "truecall.cli", "probe", "--", sys.executable, "-m", "truecall",
                           "serve", "server.py:server"], capture_output=True, timeout=120, cwd=tmp_path)
    summary = proc.stdout.decode().splitlines()[-1]
    assert proc.returncode == 3, proc.stdout.decode()[-2000:] + proc.stderr.decode()[-2000:]
    assert "no tool probed" in summary and summary.endswith("exit 3")
