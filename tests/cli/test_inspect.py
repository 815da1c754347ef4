"""``truecall inspect APP``: what a client will see, as a table or JSON, without serving."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import orjson

from _paths import EXAMPLES

APP = EXAMPLES / "06_typed.py"


def inspect(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250", "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([sys.executable, "-m", "truecall", "inspect", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=60)


def test_json_is_exactly_the_served_definitions(tmp_path):
    spec = importlib.util.spec_from_file_location("_inspect_example", APP)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    reg = module.server.registry
    proc = inspect(f"{APP}:server", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = orjson.loads(proc.stdout)
    assert data["tools"] == [t.definition for t in reg.tools.values()]
    assert data["resources"] == [r.definition for r in reg.resources.values()]
    assert data["prompts"] == [p.definition for p in reg.prompts.values()]


def test_table_names_every_tool_resource_and_prompt(tmp_path):
    proc = inspect(f"{APP}:server", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for needle in ("count_incidents", "open_incidents", "incidents://services", "triage",
                   "status?: 'open' | 'closed' | 'all' = 'open'", '"additionalProperties": false'):
        assert needle in proc.stdout, needle


def test_a_registration_error_is_one_line_and_exit_2(tmp_path):
    app = tmp_path / "broken.py"
    app.write_text("from truecall import Server\nserver = Server('b')\n\n@server.tool\n"
                   "def f(x: object.__class__) -> int:\n    '''x'''\n    return 1\n\n"
                   "class Opaque:\n    pass\n\n@server.tool\ndef g(thing: Opaque) -> int:\n    '''g'''\n    return 1\n")
    proc = inspect(f"{app}:server", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    [line] = proc.stderr.strip().splitlines()
    assert "parameter 'x'" in line or "parameter 'thing'" in line


def test_the_table_shows_required_scopes_and_reads_no_markup(tmp_path):
    proc = inspect(cwd=tmp_path)  # the desk: every tool names the scope it needs
    assert proc.returncode == 0, proc.stderr
    assert "incident.search [incidents:read]" in proc.stdout
    assert "incident.handle [incidents:write]" in proc.stdout
