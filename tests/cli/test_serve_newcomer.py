"""What a newcomer meets when starting and stopping ``truecall serve`` (issue 26): a start line on
stderr saying what is served, where and how to stop it; Ctrl-C ending it with one line and status
130, its audit records written; a port out of range refused naming ``--port``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from http_support import free_port

from _paths import TESTS

APP = TESTS / "interop" / "fastmcp_style_app.py"
ENV = {**os.environ, "TRUECALL_PRINCIPAL": "dev@local,local,"}


def _start(args: list[str], tmp_path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "truecall", "serve", *args], cwd=tmp_path, env=ENV,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_line(proc: subprocess.Popen[bytes], needle: bytes, timeout: float = 30.0) -> bytes:
    assert proc.stderr is not None
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen += line
        if needle in line:
            return seen
    raise AssertionError(f"no {needle!r} on stderr: {seen!r}")


@pytest.mark.parametrize("http", [False, True], ids=["stdio", "http"])
def test_ctrl_c_ends_serve_with_one_line_and_status_130(http: bool, tmp_path: Path) -> None:
    port = free_port()
    args = [f"{APP}:mcp", *(["--http", "--port", str(port)] if http else [])]
    proc = _start(args, tmp_path)
    try:
        start = _wait_for_line(proc, b"truecall serve: serving")
        if http:
            assert f"on http://127.0.0.1:{port}/mcp; Ctrl-C to stop".encode() in start
        else:
            assert b"over stdio; end its input (or Ctrl-C) to stop" in start
        assert b"'fastmcp_style_app' (" in start and b" tools, 1 resource, 1 prompt)" in start
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.decode().strip().splitlines()[-1] == "truecall serve: stopped (Ctrl-C)"
    assert b"Traceback" not in err


def test_ctrl_c_loses_no_audit_record(tmp_path: Path) -> None:
    """A call answered before Ctrl-C is in the audit trail after it."""
    db = tmp_path / "desk.db"
    proc = subprocess.Popen([sys.executable, "-m", "truecall", "serve"], cwd=tmp_path,
                            env={**ENV, "TRUECALL_DB": str(db), "TRUECALL_PRINCIPAL":
                                 "newton@acme,acme,incidents:read incidents:write"},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for_line(proc, b"truecall serve: serving")
        assert proc.stdin is not None and proc.stdout is not None
        for message in (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
                        b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
                        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"incident.get",'
                        b'"arguments":{"incidentId":"INC-1001"}}}'):
            proc.stdin.write(message + b"\n")
            proc.stdin.flush()
        proc.stdout.readline()
        answer = proc.stdout.readline()
        assert b'"id":2' in answer
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    from truecall import AuditLog
    from truecall.storage import open_database

    records = AuditLog(open_database(str(db))).query(tool="incident.get", limit=10)
    assert len(records) == 1  # the decision on the call answered before Ctrl-C


def test_a_port_out_of_range_is_refused_naming_the_option(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "truecall", "serve", "--http", "--port", "99999"], cwd=tmp_path,
                          env=ENV, capture_output=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.decode().strip() == "truecall serve: --port must be 0-65535 (0: any free port), not 99999"


# -- the rest of the command line a newcomer meets ----------------------------------------------------

def _truecall(*args: str, cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "truecall", *args], cwd=cwd, env={**ENV, "COLUMNS": "150"},
                          capture_output=True, text=True, timeout=120, **kwargs)  # type: ignore[call-overload]


HELPS = [[], ["serve"], ["inspect"], ["migrate"], ["audit"], ["call"], ["probe"], ["config"], ["reconcile"],
         ["tasks"], ["tasks", "list"], ["tasks", "show"], ["tasks", "cancel"]]


@pytest.mark.parametrize("command", HELPS, ids=lambda c: " ".join(c) or "truecall")
def test_help_has_one_style_no_raw_markup_and_no_internal_notes(command: list[str], tmp_path: Path) -> None:
    done = _truecall(*command, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "``" not in done.stdout and "truecall.cli.serving" not in done.stdout and "describe()" not in done.stdout
    assert "Usage: truecall" in done.stdout  # typer's, also for serve (it once printed argparse's)


def test_serve_help_shows_the_defaults(tmp_path: Path) -> None:
    out = _truecall("serve", "--help", cwd=tmp_path).stdout
    assert "[default: 8000]" in out and "[default: 127.0.0.1]" in out and "[default: /mcp]" in out


def test_version(tmp_path: Path) -> None:
    import truecall

    assert _truecall("--version", cwd=tmp_path).stdout == f"truecall {truecall.__version__}\n"


@pytest.mark.parametrize("args, says", [
    (["call", "x", "--args", "{bad", "--", "x"], "--args is not valid JSON"),
    (["call", "x", "--args", "[1]", "--", "x"], "--args must be a JSON object ({...}), not list"),
    (["call", "x", "--url", "http://127.0.0.1:9/mcp"], "Could not talk to the server at http://127.0.0.1:9/mcp"),
    (["call", "x", "--", "no-such-command-xyz"], "started by 'no-such-command-xyz'"),
    (["migrate", "--db", "/nonexistent/folder/x.db"], "truecall migrate: --db=/nonexistent/folder/x.db"),
], ids=["bad-json", "not-object", "unreachable-url", "missing-command", "migrate-db"])
def test_every_error_names_the_setting_url_or_command(args: list[str], says: str, tmp_path: Path) -> None:
    done = _truecall(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert says in done.stderr, done.stderr


def test_the_principal_notice_is_short_and_said_once(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text("from truecall import FastMCP\nmcp = FastMCP('a')\n\n@mcp.tool\ndef hi() -> str:\n"
                   "    '''Hi.'''\n    return 'hi'\n")
    env = {k: v for k, v in ENV.items() if k != "TRUECALL_PRINCIPAL"}
    done = subprocess.run([sys.executable, "-m", "truecall", "call", "hi", "--", sys.executable, "-m", "truecall",
                           "serve", f"{app}:mcp"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if "no principal configured" in line]
    assert len(notes) == 1 and len(notes[0]) <= 160, notes


def test_config_writes_the_mcp_servers_entry_and_keeps_the_others(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    config.write_text('{"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}')
    done = _truecall("config", f"{APP}:mcp", "--file", str(config), "--env", "TRUECALL_PRINCIPAL=me,local,",
                     cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    import json

    written = json.loads(config.read_text())
    assert written["theme"] == "dark" and written["mcpServers"]["other"] == {"command": "x"}
    entry = written["mcpServers"]["fastmcp_style_app"]
    assert entry["args"] == ["serve", f"{APP}:mcp"] and entry["env"] == {"TRUECALL_PRINCIPAL": "me,local,"}
    assert Path(entry["command"]).name == "truecall"
    # the entry starts the server as an assistant would, and it answers
    hello = ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
             '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n')
    started = subprocess.run([entry["command"], *entry["args"]], input=hello, capture_output=True, text=True,
                             env={**ENV, **entry["env"]}, cwd=tmp_path, timeout=120)
    assert '"serverInfo"' in started.stdout, started.stderr


def test_ctrl_c_ends_serve_workers_with_one_line(tmp_path: Path) -> None:
    """A real Ctrl-C reaches the whole process group: the supervisor and its workers."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "truecall", "serve", f"{APP}:mcp", "--http", "--port", str(port),
                             "--workers", "2"], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        _wait_for_line(proc, b"truecall serve: serving", timeout=60)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode in (0, 130), err
    assert err.decode().strip().splitlines()[-1] == "truecall serve: stopped (Ctrl-C)"
    assert b"Traceback" not in err
