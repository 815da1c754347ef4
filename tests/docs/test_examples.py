"""The examples (examples/01-06), run as a user would, with their printed output checked."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _paths import EXAMPLES


def run_example(name: str, tmp_path: Path, extra: dict[str, str] | None = None) -> list[str]:
    env = dict(os.environ)
    env["TMPDIR"] = str(tmp_path)  # the examples' throw-away databases land here
    env["PYTHONIOENCODING"] = "utf-8"
    env.pop("TRUECALL_DB", None)
    env.pop("TRUECALL_LANG", None)  # the examples choose Chinese themselves (examples/_common.py)
    env.update(extra or {})
    proc = subprocess.run(
        [sys.executable, name],
        cwd=EXAMPLES,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout.splitlines()


def test_all_examples_are_covered():
    assert sorted(p.name for p in EXAMPLES.glob("0*.py")) == [
        "01_search.py", "02_user_input.py", "03_injection_a.py", "04_injection_b.py", "05_describe.py",
        "06_typed.py"]


def test_01_prints_the_chapter_04_result(tmp_path):
    lines = run_example("01_search.py", tmp_path)
    assert lines == [
        "{'content': [{'type': 'text', 'text': 'payments: 2 个已授权事件摘要'}], "
        "'structuredContent': {'service': 'payments', 'count': 2, 'tenant': 'acme'}}"
    ]


def test_02_waiting_invalid_accepted_same_task(tmp_path):
    lines = run_example("02_user_input.py", tmp_path)
    assert len(lines) == 3
    waiting_line, invalid_line, accepted_line = lines
    assert waiting_line.startswith("waiting: ")
    assert invalid_line == "invalid input: required task input is missing"
    assert accepted_line.startswith("accepted: ")
    waiting = ast.literal_eval(waiting_line[len("waiting: "):])
    accepted = ast.literal_eval(accepted_line[len("accepted: "):])
    assert waiting == {"taskId": waiting["taskId"], "status": "input_required",
                       "inputSchema": {"type": "object", "required": ["service"]}}
    assert accepted == {"taskId": waiting["taskId"], "status": "working", "input": {"service": "payments"}}
    assert len(waiting["taskId"]) >= 22


def test_02_ids_differ_between_runs(tmp_path):
    first = ast.literal_eval(run_example("02_user_input.py", tmp_path)[0][len("waiting: "):])["taskId"]
    second = ast.literal_eval(run_example("02_user_input.py", tmp_path)[0][len("waiting: "):])["taskId"]
    assert first != second


def test_03_injection_a(tmp_path):
    chinese_line, production_line = run_example("03_injection_a.py", tmp_path)
    assert chinese_line == \
        "{'content': [{'type': 'text', 'text': 'required input is missing'}], 'isError': True} | is_error = True"
    head = "production adds structuredContent: "
    assert production_line.startswith(head)
    error = ast.literal_eval(production_line[len(head):])["error"]
    assert error["kind"] == "invalid_input" and error["missing"] == ["service"]


def test_04_injection_b(tmp_path):
    assert run_example("04_injection_b.py", tmp_path) == ["ValueError: task is not waiting for input: working"]


def test_05_describe(tmp_path):
    lines = run_example("05_describe.py", tmp_path)
    assert lines[0].startswith("未成功")
    assert lines[1].startswith("Not successful")
    assert lines[2] == "payments: 2 个已授权事件摘要"
    assert "没有匹配数据" in lines[3] and "已处理" not in lines[3]


@pytest.mark.parametrize("name", ["01_search.py", "03_injection_a.py"])
def test_examples_leave_nothing_in_the_working_tree(tmp_path, name):
    before = set(EXAMPLES.rglob("*.db"))
    run_example(name, tmp_path)
    assert set(EXAMPLES.rglob("*.db")) == before


def test_the_examples_ask_for_chinese_and_english_is_one_setting_away(tmp_path):
    [line] = run_example("01_search.py", tmp_path, {"TRUECALL_LANG": "en"})
    assert ast.literal_eval(line)["content"] == [{"type": "text", "text": "payments: 2 authorized incident summaries"}]
    lines = run_example("05_describe.py", tmp_path, {"TRUECALL_LANG": "en"})
    assert lines[0] == lines[1] == "Not successful: required input is missing"
    assert lines[3] == "search: no matching data"


def test_06_typed_tools_answer_from_their_signatures(tmp_path):
    lines = run_example("06_typed.py", tmp_path)
    assert [line.split(" ", 1)[0] for line in lines] == ["count_incidents"] * 3 + ["open_incidents"]
    results = [ast.literal_eval(line.split(" ", 1)[1]) for line in lines]
    assert results[0]["structuredContent"] == {"service": "payments", "status": "open", "count": 2}
    assert results[1]["isError"] is True and results[1]["structuredContent"]["error"]["field"] == "status"
    assert results[2]["structuredContent"]["error"]["known"] == ["checkout", "payments", "search"]
    assert results[3]["structuredContent"] == {"result": ["INC-1"]}
