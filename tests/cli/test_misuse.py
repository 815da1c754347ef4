"""One line per mistake: every misuse of ``truecall serve`` and of the operator commands is one line
on stderr naming the setting, a non-zero exit, no traceback; ``--debug`` / ``TRUECALL_DEBUG=1``
adds the traceback.  An explicit database path never creates folders."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from truecall.cli import serving
from truecall.storage import CannotOpenDatabase, Database, default_path, open_database

from _paths import ROOT
SETTINGS = ("TRUECALL_DB", "TRUECALL_DESK_FAULTS", "TRUECALL_PRINCIPAL", "TRUECALL_STATE_KEYS", "TRUECALL_DEBUG",
            "TRUECALL_TOKEN_FILE", "TRUECALL_JWT_ISSUER", "TRUECALL_JWT_AUDIENCE", "TRUECALL_JWKS")
APP = ("from truecall import Server\n"
       "server = Server('tiny', db={db!r})\n")


@pytest.fixture(autouse=True)
def _clean_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)


def serve_line(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """``truecall serve ARGV`` in this process: its exit status and its only stderr line."""
    status = serving.main(list(argv))
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return status, lines[0]


def run(*argv: str, env: dict[str, str] | None = None, cwd: Path = ROOT,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    return subprocess.run([sys.executable, "-m", "truecall", *argv], capture_output=True, text=True,
                          env={**full, **(env or {})}, cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL)


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    for mark in ("Traceback", "╭", "│"):
        assert mark not in out.stderr
    return lines[0]


# -- APP -------------------------------------------------------------------------------------------


def test_a_missing_attribute_names_it_and_the_servers_there(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "tiny.py"
    app.write_text(APP.format(db=str(tmp_path / "t.db")))
    status, line = serve_line(capsys, f"{app}:wrongname")
    assert status == 2
    assert line == (f"truecall serve: {app} has no attribute 'wrongname' "
                    "(APP is module:attribute or path/to/file.py:attribute; its servers: server)")


def test_the_example_with_a_wrong_name_is_one_line() -> None:
    out = run("serve", "examples/01_search.py:wrongname")
    assert out.returncode == 2
    assert one_line(out).startswith("truecall serve: examples/01_search.py has no attribute 'wrongname'")


def test_a_missing_module_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    status, line = serve_line(capsys, "nosuchmodule:app")
    assert status == 2
    assert line == "truecall serve: no module named 'nosuchmodule' (APP is module:attribute or path/to/file.py:attribute)"


def test_a_module_missing_a_dependency_is_not_called_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "needs_more.py").write_text("import no_such_dependency_here\n")
    monkeypatch.chdir(tmp_path)
    status, line = serve_line(capsys, "needs_more:server")
    assert status == 2
    assert line.startswith("truecall serve: needs_more: ModuleNotFoundError: No module named 'no_such_dependency_here'")


def test_an_exception_in_the_app_at_import_names_the_file_and_the_error(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "broken.py"
    app.write_text("x = 1\nraise RuntimeError('the app is broken')\n")
    status, line = serve_line(capsys, f"{app}:server")
    assert status == 2
    assert line == (f"truecall serve: {app}: RuntimeError: the app is broken "
                    "(--debug or TRUECALL_DEBUG=1 shows the traceback)")
    # --debug: the traceback, pointing into the app, then the same line
    assert serving.main([f"{app}:server", "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and f'File "{app}", line 2' in err
    assert err.strip().splitlines()[-1] == f"truecall serve: {app}: RuntimeError: the app is broken"


def test_an_exception_in_the_apps_builder_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "builder.py"
    app.write_text("def build():\n    return {}['missing']\n")
    status, line = serve_line(capsys, f"{app}:build")
    assert status == 2
    assert line.startswith(f"truecall serve: {app}:build: KeyError: 'missing'")


def test_the_debug_setting_shows_the_traceback_in_a_real_process(tmp_path: Path) -> None:
    app = tmp_path / "broken.py"
    app.write_text("raise RuntimeError('the app is broken')\n")
    quiet = run("serve", f"{app}:server")
    assert quiet.returncode == 2 and one_line(quiet).endswith("(--debug or TRUECALL_DEBUG=1 shows the traceback)")
    loud = run("serve", f"{app}:server", env={"TRUECALL_DEBUG": "1"})
    assert loud.returncode == 2 and "Traceback" in loud.stderr and "the app is broken" in loud.stderr


# -- settings --------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    ("{bad", "truecall serve: TRUECALL_DESK_FAULTS is not valid JSON"),
    ('{"drop": 7}', "truecall serve: TRUECALL_DESK_FAULTS: fault drop: p must be a number between 0 and 1"),
    ('{"teleport": 0.5}', "truecall serve: TRUECALL_DESK_FAULTS: unknown fault(s): teleport"),
])
def test_invalid_desk_faults_name_the_variable(value: str, expected: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TRUECALL_DB", str(tmp_path / "desk.db"))
    monkeypatch.setenv("TRUECALL_DESK_FAULTS", value)
    status, line = serve_line(capsys)
    assert status == 2 and line.startswith(expected)


@pytest.mark.parametrize("name, value, expected", [
    ("TRUECALL_STATE_KEYS", "c2hvcnQ", "truecall serve: TRUECALL_STATE_KEYS: key 1 is 5 bytes, not 32"),
    ("TRUECALL_DB_BUSY_MS", "soon", "truecall serve: TRUECALL_DB_BUSY_MS must be a whole number of milliseconds"),
    ("TRUECALL_TASK_LEASE_S", "-1", "truecall serve: TRUECALL_TASK_LEASE_S must be positive"),
])
def test_invalid_settings_name_the_variable(name: str, value: str, expected: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TRUECALL_DB", str(tmp_path / "desk.db"))
    monkeypatch.setenv(name, value)
    status, line = serve_line(capsys)
    assert status == 2 and line.startswith(expected)


def test_an_unreadable_token_file_names_the_option_and_the_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TRUECALL_DB", str(tmp_path / "desk.db"))
    status, line = serve_line(capsys, "--http", "--token-file", str(tmp_path / "none.json"))
    assert status == 2
    assert line == f"truecall serve: --token-file {tmp_path / 'none.json'} (or TRUECALL_TOKEN_FILE): No such file or directory"
    bad = tmp_path / "bad.json"
    bad.write_text('{"tokens": [{"sha256": "abc", "subject": "s", "tenant": "t"}]}')
    status, line = serve_line(capsys, "--http", "--token-file", str(bad))
    assert status == 2
    assert "token 0: sha256 must be 64 hex digits" in line and '{"tokens": [{"sha256": ' in line


def test_a_port_in_use_is_one_line_naming_it(tmp_path: Path) -> None:
    app = tmp_path / "tiny.py"
    app.write_text(APP.format(db=str(tmp_path / "t.db")))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        out = run("serve", f"{app}:server", "--http", "--port", str(port))
    assert out.returncode == 2
    assert one_line(out) == f"truecall serve: --port {port}: cannot listen on 127.0.0.1:{port}: Address already in use"


# -- databases -------------------------------------------------------------------------------------


def test_an_explicit_database_path_never_creates_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nonexistent" / "dir" / "x.db"
    monkeypatch.setenv("TRUECALL_DB", str(missing))
    status, line = serve_line(capsys)
    assert status == 2
    assert line == (f"truecall serve: TRUECALL_DB={missing}: the folder {missing.parent} does not exist "
                    "(a database path never creates folders)")
    with pytest.raises(CannotOpenDatabase):
        open_database(str(missing))
    with pytest.raises(CannotOpenDatabase):
        Database(missing)
    assert not (tmp_path / "nonexistent").exists()


def test_the_default_database_may_create_its_own_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    from truecall.incidents import build_desk

    desk = build_desk().start()
    try:
        assert Path(desk.db.path) == Path(default_path()) and (tmp_path / ".truecall" / "desk.db").is_file()
    finally:
        desk.db.close()


def test_a_file_that_is_not_a_database_is_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not SQLite" * 100)
    out = run("serve", env={"TRUECALL_DB": str(junk)})
    assert out.returncode == 2
    assert one_line(out) == f"truecall serve: TRUECALL_DB={junk}: the file is not a SQLite database"


@pytest.fixture
def refused_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize("query", ["", "?schema=desk_eu"])
def test_an_unreachable_postgresql_is_one_line_with_the_host_and_the_reason(
        query: str, refused_port: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"postgresql://desk:hunter2@127.0.0.1:{refused_port}/desk{query}"
    monkeypatch.setenv("TRUECALL_DB", url)
    status, line = serve_line(capsys)
    assert status == 2
    assert line == (f"truecall serve: TRUECALL_DB=postgresql://desk:***@127.0.0.1:{refused_port}/desk{query}: "
                    f"cannot connect to the PostgreSQL server at 127.0.0.1:{refused_port}: Connection refused")


def test_a_postgresql_that_never_answers_is_given_up_within_the_bound(
        silent_port: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TRUECALL_DB", f"postgresql://desk@127.0.0.1:{silent_port}/desk")
    started = time.monotonic()
    status, line = serve_line(capsys)
    elapsed = time.monotonic() - started
    assert status == 2
    assert f"cannot connect to the PostgreSQL server at 127.0.0.1:{silent_port}: no answer within 3 s" in line
    assert elapsed < 8, f"gave up after {elapsed:.1f} s (the bound is 3 s; the busy timeout was 10 s)"


@pytest.mark.parametrize("argv", [["tasks", "list"], ["migrate"], ["audit"], ["reconcile"]],
                         ids=lambda a: " ".join(a))
def test_operator_commands_on_an_unreachable_database_are_one_line(argv: list[str], refused_port: int) -> None:
    url = f"postgresql://desk@127.0.0.1:{refused_port}/desk"
    out = run(*argv, env={"TRUECALL_DB": url})
    assert out.returncode == 2
    assert one_line(out) == (f"truecall {' '.join(argv)}: TRUECALL_DB={url}: cannot connect to the PostgreSQL "
                             f"server at 127.0.0.1:{refused_port}: Connection refused")


def test_the_db_option_is_named_and_debug_works_after_any_command(refused_port: int) -> None:
    url = f"postgresql://desk@127.0.0.1:{refused_port}/desk"
    out = run("tasks", "list", "--db", url)
    assert out.returncode == 2 and one_line(out).startswith(f"truecall tasks list: --db={url}: cannot connect")
    loud = run("tasks", "list", "--db", url, "--debug")
    assert loud.returncode == 2 and "Traceback" in loud.stderr
    assert loud.stderr.strip().splitlines()[-1] == one_line(out)


def test_the_typer_serve_command_says_the_same_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``truecall.cli``'s serve (typer) reports a misuse exactly as ``truecall serve`` (argparse) does."""
    from typer.testing import CliRunner

    from truecall.cli._commands import app as cli_app

    app = tmp_path / "broken.py"
    app.write_text("raise RuntimeError('the app is broken')\n")
    status, line = serve_line(capsys, f"{app}:server")
    result = CliRunner().invoke(cli_app, ["serve", f"{app}:server"])
    assert (result.exit_code, result.output.strip()) == (status, line)


@pytest.mark.parametrize("value", ["alice", "alice,", ",acme,incidents:read"])
def test_an_incomplete_principal_names_the_variable(value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "tiny.py"
    app.write_text(APP.format(db=str(tmp_path / "t.db")))
    monkeypatch.setenv("TRUECALL_PRINCIPAL", value)
    status, line = serve_line(capsys, f"{app}:server")
    assert status == 2
    assert line == f'truecall serve: TRUECALL_PRINCIPAL must be "subject,tenant,scope1 scope2", not {value!r}'


def test_debug_is_taken_from_before_a_double_dash_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from truecall._misuse import take_debug

    assert take_debug(["tasks", "list", "--debug"]) == (["tasks", "list"], True)
    # after "--" it belongs to the command being run (truecall call TOOL -- server --debug)
    assert take_debug(["call", "t", "--", "srv", "--debug"]) == (["call", "t", "--", "srv", "--debug"], False)
    monkeypatch.setenv("TRUECALL_DEBUG", "1")
    assert take_debug(["audit"]) == (["audit"], True)
    monkeypatch.setenv("TRUECALL_DEBUG", "0")
    assert take_debug(["audit"]) == (["audit"], False)
