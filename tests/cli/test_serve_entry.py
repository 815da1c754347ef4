"""``truecall serve`` starts without the CLI framework, and means exactly what ``truecall.cli serve`` means."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from truecall.cli import serving
from truecall.cli._commands import app as cli_app

from _paths import ROOT

ARGVS = [
    [],
    ["tests/replica_app.py:build"],
    ["--http", "--port", "8123", "--path", "/x", "--host", "127.0.0.2"],
    ["app:build", "--http", "--allowed-host", "a.example", "--allowed-host", "b.example"],
    ["--token-file", "tokens.json", "--tenant-claim", "org", "--scope-claim", "scp"],
    ["--jwt-issuer", "https://issuer", "--jwt-audience", "https://me/mcp", "--jwks", "jwks.json"],
    ["--http", "--workers", "auto"],
    ["--http", "--workers", "3", "--port", "8124"],
]


def _normalized(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {**kwargs, "allowed_host": list(kwargs["allowed_host"]),
            "token_file": None if kwargs["token_file"] is None else Path(kwargs["token_file"])}


@pytest.mark.parametrize("argv", ARGVS, ids=lambda a: " ".join(a) or "(none)")
def test_both_entries_pass_the_same_settings(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TRUECALL_TOKEN_FILE", "TRUECALL_JWT_ISSUER", "TRUECALL_JWT_AUDIENCE", "TRUECALL_JWKS"):
        monkeypatch.delenv(name, raising=False)
    seen: list[dict[str, Any]] = []

    def fake_serve(target: str | None, **kwargs: Any) -> None:
        seen.append(_normalized({"target": target, **kwargs}))

    monkeypatch.setattr(serving, "serve", fake_serve)
    assert serving.main(argv) == 0
    result = CliRunner().invoke(cli_app, ["serve", *argv])
    assert result.exit_code == 0, result.output
    assert len(seen) == 2 and seen[0] == seen[1]


def test_environment_settings_reach_both_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRUECALL_JWT_ISSUER", "https://env-issuer")
    monkeypatch.setenv("TRUECALL_TOKEN_FILE", "from-env.json")
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(serving, "serve", lambda target, **kw: seen.append(_normalized({"target": target, **kw})))
    serving.main([])
    CliRunner().invoke(cli_app, ["serve"])
    assert seen[0] == seen[1]
    assert seen[0]["jwt_issuer"] == "https://env-issuer" and seen[0]["token_file"] == Path("from-env.json")


def test_a_usage_error_is_one_line_and_status_2(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "truecall", "serve", str(tmp_path / "missing.py") + ":app"],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"truecall serve: no such file: {tmp_path / 'missing.py'}"]


def test_serve_does_not_load_the_cli_framework() -> None:
    """(Only ``truecall serve --help`` does: one help style for every command, typer's.)"""
    code = ("import sys, truecall.cli.serving as s; from truecall.__main__ import main; "
            "sys.argv = ['truecall', 'serve', '--http', '--port', '99999']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert "--port must be 0-65535" in out.stderr  # it ran serve's own parser and checks


def test_the_other_commands_still_go_to_the_cli() -> None:
    out = subprocess.run([sys.executable, "-m", "truecall", "--help"], capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    assert out.returncode == 0 and "audit" in out.stdout and "tasks" in out.stdout


def test_a_served_process_moves_its_start_up_objects_out_of_the_collectors_way() -> None:
    import gc

    before = gc.get_threshold()
    frozen = gc.get_freeze_count()  # (the suite froze what its collection made: tests/conftest.py)
    try:
        serving._tune_gc()
        assert gc.get_threshold()[0] == serving.GC_GEN0_THRESHOLD and gc.get_threshold()[1:] == before[1:]
        assert gc.get_freeze_count() > frozen
    finally:
        if not frozen:  # (what the suite froze stays frozen for the tests after this one)
            gc.unfreeze()
        gc.set_threshold(*before)


def test_a_plain_sigterm_after_a_graceful_stop_exits_0(tmp_path: Path) -> None:
    """Issue 28, case 4: uvicorn re-raises the signal it stopped on once the shutdown is done, so the
    process died of SIGTERM (status -15) after a clean stop; 0 is the convention for a clean shutdown."""
    import os
    import signal

    from http_support import served

    with served(tmp_path) as server:
        os.kill(server.proc.pid, signal.SIGTERM)
        assert server.proc.wait(timeout=30) == 0, server.stderr()
