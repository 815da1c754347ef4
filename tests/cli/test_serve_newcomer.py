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

APP = Path(__file__).resolve().parents[1] / "interop" / "fastmcp_style_app.py"
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
