"""The official MCP conformance suite against conformance/server.py, over Streamable HTTP.

A CI gate: every server scenario of ``--suite all`` for 2025-11-25 and for 2026-07-28
must pass, except those listed in ``conformance/expected-failures-<version>.yml``
(the suite itself fails the run when a listed scenario starts passing).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from _paths import ROOT
CONF = ROOT / "conformance"
NODE = CONF / "node_modules" / ".bin" / "node"
SUITE = CONF / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def fixture_url(tmp_path_factory):
    assert NODE.exists() and SUITE.exists(), "run `npm ci` in conformance/ (scripts/test does)"
    port = _free_port()
    workdir = tmp_path_factory.mktemp("conformance")
    proc = subprocess.Popen(
        [sys.executable, "-m", "truecall", "serve", str(CONF / "server.py") + ":app", "--http", "--port", str(port)],
        cwd=workdir, stdout=subprocess.DEVNULL, stderr=open(workdir / "server.err", "wb"),
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, (workdir / "server.err").read_text()
            assert time.monotonic() < deadline, "fixture server did not start"
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", workdir
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    err = (workdir / "server.err").read_text()
    assert "Traceback" not in err, err


def _failed_checks(outdir: Path) -> list[str]:
    failed = []
    for checks in sorted(outdir.glob("*/checks.json")):
        for check in json.loads(checks.read_text()):
            if check.get("status") in ("FAILURE", "WARNING"):
                failed.append(f"{checks.parent.name}: {check.get('id')} {check.get('status')} "
                              f"{(check.get('errorMessage') or '')[:200]}")
    return failed


def _run_suite(url: str, outdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("npm_")}
    return subprocess.run(
        [str(NODE), str(SUITE), "server", "--url", url, *args, "-o", str(outdir)],
        capture_output=True, text=True, timeout=600, env=env, cwd=CONF,
    )


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28", "extensions"])
def test_conformance_suite(fixture_url, version):
    """``extensions``: without --spec-version, the only way the suite runs the tasks-* scenarios."""
    url, workdir = fixture_url
    outdir = workdir / f"out-{version}"
    args = ["--suite", "all"] if version == "extensions" else ["--suite", "all", "--spec-version", version]
    baseline = CONF / f"expected-failures-{version}.yml"
    if baseline.exists():
        args += ["--expected-failures", str(baseline)]
    proc = _run_suite(url, outdir, *args)
    summary = "\n".join(_failed_checks(outdir))
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}\nfailed checks:\n{summary}"
    ran = [p.parent.name for p in outdir.glob("*/checks.json")]
    assert ran, "the suite ran no scenario"
    if version == "extensions":
        assert sum("tasks-" in name for name in ran) == 10, ran
