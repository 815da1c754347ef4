"""truecall is a package (issue 26): one version string; the test command builds a wheel and an sdist
and installs the wheel into a clean virtual environment, where ``truecall --version``, ``truecall
serve`` (the desk, over stdio) and the quickstart's server run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

import truecall

from _paths import ROOT


def test_there_is_one_version_string() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", truecall.__version__)
    done = subprocess.run([sys.executable, "-m", "truecall", "--version"], capture_output=True, text=True)
    assert done.stdout == f"truecall {truecall.__version__}\n"
    assert f"## {truecall.__version__}" in (ROOT / "CHANGELOG.md").read_text()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_the_wheel_and_sdist_carry_the_package_and_its_data(built: Path) -> None:
    """The sdist carries the C source of the judge's accelerator (``setup.py`` builds it where a
    compiler is); the wheel carries it built when this machine could build it (as the editable install
    did: then the wheel is this platform's, not ``py3-none-any``)."""
    from truecall.judge import _claims

    version = truecall.__version__
    [wheel] = built.glob(f"truecall-{version}-*.whl")
    sdist = built / f"truecall-{version}.tar.gz"
    names = zipfile.ZipFile(wheel).namelist()
    assert "truecall/_schemas/results.json" in names and "truecall/py.typed" in names
    assert "truecall/incidents/app.py" in names and "truecall/judge/_speedups.pyi" in names
    compiled = [n for n in names if n.startswith("truecall/judge/_speedups.") and n.endswith((".so", ".pyd"))]
    if not os.environ.get("TRUECALL_PURE_PYTHON"):
        assert bool(compiled) == (_claims._fast is not None), names
    assert wheel.name.endswith("-py3-none-any.whl") != bool(compiled), wheel.name
    with tarfile.open(sdist) as tar:
        members = tar.getnames()
    assert f"truecall-{version}/src/truecall/_version.py" in members
    assert f"truecall-{version}/src/truecall/judge/_speedups.c" in members and f"truecall-{version}/setup.py" in members


def test_a_clean_venv_installs_the_wheel_and_runs_truecall(built: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python, binary = env_dir / "bin" / "python", env_dir / "bin" / "truecall"
    wheel = next(built.glob("truecall-*.whl"))
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "TRUECALL_"))}
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, cwd=tmp_path, env=clean)
    assert version.stdout.strip() == f"truecall {truecall.__version__}"
    # the judge's accelerator, where the wheel carries it, loads from the installed wheel
    judged = subprocess.run([str(python), "-c", "from truecall.judge import _claims, claim_in_text; "
                             "print(_claims._fast is not None, claim_in_text('Your order is pending').kind)"],
                            capture_output=True, text=True, cwd=tmp_path, env=clean, timeout=120)
    compiled = any(n.startswith("truecall/judge/_speedups.") and n.endswith((".so", ".pyd"))
                   for n in zipfile.ZipFile(wheel).namelist())
    assert judged.stdout.split() == [str(compiled), "accepted"], judged.stderr[-2000:]
    # the desk over stdio, as a desktop assistant starts it
    hello = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
             b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
             b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
             b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
    desk = subprocess.run([str(binary), "serve"], input=hello, capture_output=True, cwd=tmp_path, env=clean,
                          timeout=120)
    answers = [json.loads(line) for line in desk.stdout.splitlines()]
    assert desk.returncode == 0, desk.stderr[-2000:]
    assert answers[1]["id"] == 2 and any(t["name"] == "incident.handle" for t in answers[1]["result"]["tools"])
    # the quickstart's server, called the quickstart's way
    page = (ROOT / "docs" / "quickstart.md").read_text()
    server = re.search(r'```python title="server.py"\n(.*?)```', page, re.DOTALL)
    assert server is not None
    (tmp_path / "server.py").write_text(server.group(1))
    call = subprocess.run([str(binary), "call", "add", "--args", '{"a": 2, "b": 3}', "--", str(binary), "serve",
                           "server.py:server"], capture_output=True, text=True, cwd=tmp_path, env=clean, timeout=120)
    assert call.returncode == 0, call.stderr[-2000:]
    assert call.stdout.splitlines()[0] == "5"
