"""``truecall call``: the describe() sentence, the result, and an exit status per outcome
(0 done, 1 failed, 2 protocol or usage error, 3 accepted not waited for, 4 unknown, 5 unconfirmed).

Every call is a real ``python -m truecall call`` process (most with a ``truecall serve`` child): two
interpreter start-ups each.  The calls of one test do not depend on each other, so ``calls`` starts
them together (each in its own folder, with its own desk database) and the test checks them in order:
the same processes and the same assertions, with both cores busy instead of one."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson

from http_support import READER, served

from _paths import TESTS as HERE
SERVE = ["--", sys.executable, "-m", "truecall", "serve"]
ROGUE = ["--", sys.executable, str(HERE / "rogue_server.py")]


def call(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    full = {**os.environ, "TRUECALL_DB": str(tmp_path / "desk.db"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "truecall", "call", *args], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path, env=full, stdin=subprocess.DEVNULL)


def calls(tmp_path: Path, *argvs: tuple[str, ...], env: list[dict[str, str] | None] | None = None,
          ) -> list[subprocess.CompletedProcess[str]]:
    """``call`` for each argument list at once, each in ``tmp_path/<i>``; the results in order."""
    envs = env or [None] * len(argvs)
    with ThreadPoolExecutor(len(argvs)) as pool:
        running = [pool.submit(call, tmp_path / str(i), *argv, env=e) for i, (argv, e) in enumerate(zip(argvs, envs))]
        return [f.result() for f in running]


def test_done_failed_accepted_waited(tmp_path: Path) -> None:
    done, failed, accepted, waited = calls(
        tmp_path,
        ("incident.search", "--args", '{"service": "payments"}', *SERVE),
        ("incident.search", "--args", "{}", "--lang", "zh", *SERVE),
        ("incident.handle", "--json", "--args", '{"incidentId": "INC-1001"}', *SERVE),
        ("incident.handle", "--wait", "--json", "--args", '{"incidentId": "INC-1002"}', *SERVE))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("payments: 2") and '"count": 2' in done.stdout

    assert failed.returncode == 1 and failed.stdout.startswith("未成功")
    assert '"kind": "invalid_input"' in failed.stdout

    assert accepted.returncode == 3, accepted.stderr
    body = orjson.loads(accepted.stdout)
    assert body["outcome"] == "accepted" and "result" not in body and "not yet done" in body["describe"]

    assert waited.returncode == 0, waited.stderr
    body = orjson.loads(waited.stdout)
    assert body["outcome"] == "done" and body["result"]["structuredContent"]["notified"] is True


def test_protocol_usage_and_unknown(tmp_path: Path) -> None:
    unknown_tool, not_an_object, no_server, broken, silent = calls(
        tmp_path,
        ("incident.nope", *SERVE),
        ("incident.search", "--args", "[1]", *SERVE),
        ("incident.search",),  # no server given
        ("broken", "--json", *ROGUE),
        ("hang", "--timeout", "0.3", *ROGUE))
    assert unknown_tool.returncode == 2 and "UnknownTool" in unknown_tool.stderr

    assert not_an_object.returncode == 2
    assert no_server.returncode == 2

    assert broken.returncode == 1 and orjson.loads(broken.stdout)["kind"] == "contract_broken"

    assert silent.returncode == 4 and "may have happened" in silent.stdout


def test_a_success_whose_words_say_accepted_or_failed_is_unconfirmed(tmp_path: Path) -> None:
    # was: exit 0 and the server's "已受理" repeated as if it were done (issue #24)
    accepted, accepted_zh, failed, honest = calls(
        tmp_path,
        ("says_accepted", *ROGUE),
        ("says_accepted", "--lang", "zh", *ROGUE),
        ("says_failed", "--json", *ROGUE),
        ("ticket_created", *ROGUE))
    assert accepted.returncode == 5, accepted.stderr
    assert accepted.stdout.startswith("Not done") and "no way to check it" in accepted.stdout
    assert '"已受理"' in accepted.stdout  # the result is printed as it came, after the sentence
    assert accepted_zh.returncode == 5 and accepted_zh.stdout.startswith("未完成")

    assert failed.returncode == 5, failed.stderr
    body = orjson.loads(failed.stdout)
    assert body["outcome"] == "unconfirmed" and body["claim"] == "failed" and body["evidence"]
    assert body["result"]["content"][0]["text"].startswith("Sync failed")

    assert honest.returncode == 0, honest.stderr


def test_http_scope_error_names_the_step_up(tmp_path: Path) -> None:
    with served(tmp_path) as server:
        refused, done = calls(
            tmp_path,
            ("incident.handle", "--url", server.url, "--token", READER, "--json", "--args", '{"incidentId": "INC-1001"}'),
            ("incident.search", "--url", server.url, "--token", READER, "--args", '{"service": "checkout"}'))
        assert refused.returncode == 2
        body = orjson.loads(refused.stdout)
        assert body["type"] == "InsufficientScope" and body["requiredScopes"] == ["incidents:write"]
        assert done.returncode == 0 and done.stdout.startswith("checkout: 1")


def test_the_sentence_follows_the_locale_setting_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    env_zh, english, bad = calls(
        tmp_path,
        ("incident.search", "--args", "{}", *SERVE),
        ("incident.search", "--args", "{}", *SERVE),
        ("incident.search", "--args", "{}", "--lang", "fr", *SERVE),
        env=[{"TRUECALL_LANG": "zh"}, None, None])
    assert env_zh.returncode == 1 and env_zh.stdout.startswith("未成功"), env_zh.stderr
    assert english.returncode == 1 and english.stdout.startswith("Not successful")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip() == "truecall: --lang: locale must be one of en, zh, not 'fr'"
