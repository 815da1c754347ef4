"""``truecall call``: the describe() sentence, the result, and an exit status per outcome
(0 done, 1 failed, 2 protocol or usage error, 3 accepted not waited for, 4 unknown)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

from http_support import READER, served

from _paths import TESTS as HERE
SERVE = ["--", sys.executable, "-m", "truecall", "serve"]
ROGUE = ["--", sys.executable, str(HERE / "rogue_server.py")]


def call(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"TRUECALL_DB": str(tmp_path / "desk.db")}
    return subprocess.run([sys.executable, "-m", "truecall", "call", *args], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path, env={**os.environ, **env}, stdin=subprocess.DEVNULL)


def test_done_failed_accepted_waited(tmp_path: Path) -> None:
    done = call(tmp_path, "incident.search", "--args", '{"service": "payments"}', *SERVE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("payments: 2") and '"count": 2' in done.stdout

    failed = call(tmp_path, "incident.search", "--args", "{}", "--lang", "zh", *SERVE)
    assert failed.returncode == 1 and failed.stdout.startswith("未成功")
    assert '"kind": "invalid_input"' in failed.stdout

    accepted = call(tmp_path, "incident.handle", "--json", "--args", '{"incidentId": "INC-1001"}', *SERVE)
    assert accepted.returncode == 3, accepted.stderr
    body = orjson.loads(accepted.stdout)
    assert body["outcome"] == "accepted" and "result" not in body and "not yet done" in body["describe"]

    waited = call(tmp_path, "incident.handle", "--wait", "--json", "--args", '{"incidentId": "INC-1002"}', *SERVE)
    assert waited.returncode == 0, waited.stderr
    body = orjson.loads(waited.stdout)
    assert body["outcome"] == "done" and body["result"]["structuredContent"]["notified"] is True


def test_protocol_usage_and_unknown(tmp_path: Path) -> None:
    unknown_tool = call(tmp_path, "incident.nope", *SERVE)
    assert unknown_tool.returncode == 2 and "UnknownTool" in unknown_tool.stderr

    assert call(tmp_path, "incident.search", "--args", "[1]", *SERVE).returncode == 2
    assert call(tmp_path, "incident.search").returncode == 2  # no server given

    broken = call(tmp_path, "broken", "--json", *ROGUE)
    assert broken.returncode == 1 and orjson.loads(broken.stdout)["kind"] == "contract_broken"

    silent = call(tmp_path, "hang", "--timeout", "0.3", *ROGUE)
    assert silent.returncode == 4 and "may have happened" in silent.stdout


def test_http_scope_error_names_the_step_up(tmp_path: Path) -> None:
    with served(tmp_path) as server:
        refused = call(tmp_path, "incident.handle", "--url", server.url, "--token", READER, "--json",
                       "--args", '{"incidentId": "INC-1001"}')
        assert refused.returncode == 2
        body = orjson.loads(refused.stdout)
        assert body["type"] == "InsufficientScope" and body["requiredScopes"] == ["incidents:write"]
        done = call(tmp_path, "incident.search", "--url", server.url, "--token", READER,
                    "--args", '{"service": "checkout"}')
        assert done.returncode == 0 and done.stdout.startswith("checkout: 1")


def test_the_sentence_follows_the_locale_setting_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    env_zh = subprocess.run([sys.executable, "-m", "truecall", "call", "incident.search", "--args", "{}", *SERVE],
                            capture_output=True, text=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL,
                            env={**os.environ, "TRUECALL_DB": str(tmp_path / "desk.db"), "TRUECALL_LANG": "zh"})
    assert env_zh.returncode == 1 and env_zh.stdout.startswith("未成功"), env_zh.stderr
    english = call(tmp_path, "incident.search", "--args", "{}", *SERVE)
    assert english.returncode == 1 and english.stdout.startswith("Not successful")
    bad = call(tmp_path, "incident.search", "--args", "{}", "--lang", "fr", *SERVE)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip() == "truecall: --lang: locale must be one of en, zh, not 'fr'"
