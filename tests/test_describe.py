"""describe(): what the user is told never claims more than happened — in English by default,
in Chinese (the lines examples/05_describe.py prints) with ``locale="zh"`` or ``TRUECALL_LANG=zh``."""

from __future__ import annotations

import pytest

from truecall import (ErrorKind, LocaleError, TaskStore, ToolResult, describe, embedded_resource, resource_link, text,
                      tool_error)
from truecall.storage import Database
from truecall.texts import CATALOGUE

MISSING = ToolResult([text("required input is missing")], is_error=True)


# -- errors ---------------------------------------------------------------------------------------


def test_acceptance_error_starts_with_not_successful_and_wei_chenggong_in_chinese():
    said = describe(MISSING)
    assert said == "Not successful: required input is missing"
    assert describe(MISSING.to_dict()) == said  # a dict reads the same as the object
    said_zh = describe(MISSING, "zh")
    assert said_zh == "未成功：required input is missing"


def test_the_setting_chooses_the_default_language(lang):
    assert describe(MISSING).startswith("Not successful")
    lang("zh")
    assert describe(MISSING).startswith("未成功")
    assert describe(MISSING, locale="en").startswith("Not successful")  # the argument wins
    lang("EN")
    assert describe(MISSING).startswith("Not successful")
    lang("")  # empty means the default
    assert describe(MISSING).startswith("Not successful")


@pytest.mark.parametrize("value", ["fr", "chinese", "zh-TW", "1"])
def test_a_bad_setting_or_argument_is_a_clear_error(lang, value):
    with pytest.raises(LocaleError, match=r"locale must be one of en, zh"):
        describe(MISSING, value)
    lang(value)
    with pytest.raises(LocaleError, match=rf"TRUECALL_LANG must be one of en, zh, not '{value}'"):
        describe(MISSING)


def test_every_text_exists_in_every_language():
    keys = {k[:-4] if k.endswith(".one") else k for k in CATALOGUE["en"]}
    for locale, texts in CATALOGUE.items():
        assert keys <= set(texts), f"{locale} lacks {sorted(keys - set(texts))}"
        assert {k for k in texts if not k.endswith(".one")} == keys


@pytest.mark.parametrize("kind", [k for k in ErrorKind if k is not ErrorKind.OUTCOME_UNKNOWN])
def test_every_error_kind_starts_with_not_successful(kind):
    result = tool_error(kind, "something specific")
    said = describe(result)
    assert said.startswith("Not successful")
    assert "something specific" in said
    assert describe(result, "zh").startswith("未成功")


@pytest.mark.parametrize("kind", [k for k in ErrorKind if k is not ErrorKind.OUTCOME_UNKNOWN])
def test_every_error_with_a_reference_names_it(kind):
    result = tool_error(kind, "down", reference="REF-42")
    assert "REF-42" in describe(result)
    assert "REF-42" in describe(result, "zh")


def test_dependency_unavailable_with_a_reference_exactly():
    result = tool_error("dependency_unavailable", "down", reference="REF-42")
    assert describe(result, "zh") == "未成功：down；未产生任何变更；可稍后重试；引用：REF-42"
    assert describe(result) == "Not successful: down; nothing was changed; may be retried later; reference: REF-42"
    assert describe(tool_error("internal", "oops", reference="REF-7")) == "Not successful: oops; reference: REF-7"
    linked = ToolResult([text("bad"), resource_link("incident://acme/INC-9", "INC-9")],
                        tool_error("invalid_input", "bad", reference="REF-1").structured_content, is_error=True)
    assert describe(linked) == "Not successful: bad; references: REF-1, INC-9 <incident://acme/INC-9>"


def test_a_message_that_more_follows_loses_its_full_stop():
    result = tool_error("dependency_unavailable", "the ticket system is down.")
    assert describe(result) == "Not successful: the ticket system is down; nothing was changed; may be retried later"
    assert describe(result, "zh") == "未成功：the ticket system is down；未产生任何变更；可稍后重试"
    unknown = tool_error("outcome_unknown", "no answer came.", reference="k-1")
    assert ".;" not in describe(unknown) and "no answer came; check first k-1" in describe(unknown)
    assert describe(tool_error("internal", "it broke.")) == "Not successful: it broke."  # nothing follows


def test_error_even_when_the_narrative_claims_success():
    # isError decides, not the words: a tool that says "done" in an error result did not succeed.
    result = ToolResult([text("已处理完成 ✅")], {"count": 0}, is_error=True)
    said = describe(result)
    assert said.startswith("Not successful")
    assert "no matching data" not in said
    said_zh = describe(result, "zh")
    assert said_zh.startswith("未成功") and "没有匹配数据" not in said_zh


def test_error_without_any_text():
    assert describe(ToolResult([], is_error=True)) == "Not successful"
    assert describe(ToolResult([], is_error=True), "zh") == "未成功"


def test_outcome_unknown_mentions_the_reference():
    result = tool_error("outcome_unknown", "timed out after the ticket was sent", reference="ticket-req-8f2c")
    said = describe(result)
    assert said == ("Not successful: outcome unknown; timed out after the ticket was sent; check first "
                    "ticket-req-8f2c; do not retry blindly")
    said_zh = describe(result, "zh")
    assert said_zh.startswith("未成功")
    assert "ticket-req-8f2c" in said_zh
    assert "结果未知" in said_zh
    assert "不要盲目重试" in said_zh


def test_dependency_unavailable_says_nothing_changed_and_retry_later():
    result = tool_error(ErrorKind.DEPENDENCY_UNAVAILABLE, "ticket system is down")
    said = describe(result)
    assert said.startswith("Not successful")
    assert "ticket system is down" in said
    assert "nothing was changed" in said and "retried later" in said
    said_zh = describe(result, "zh")
    assert "未产生任何变更" in said_zh and "可稍后重试" in said_zh


# -- successes ------------------------------------------------------------------------------------


def test_success_uses_the_narrative():
    result = ToolResult([text("payments: 2 个已授权事件摘要")], {"service": "payments", "count": 2, "tenant": "acme"})
    assert describe(result, "zh") == "payments: 2 个已授权事件摘要"
    assert describe(result) == "payments: 2 个已授权事件摘要"  # the tool's own words are never translated
    assert not describe(result).startswith("Not successful")


def test_resource_links_are_named():
    result = ToolResult(
        [
            text("payments: 2 authorized incident summaries"),
            resource_link("incident://acme/INC-1001", "INC-1001", title="Card authorisations failing"),
            resource_link("incident://acme/INC-1002", "INC-1002"),
        ],
        {"service": "payments", "count": 2, "tenant": "acme"},
    )
    said = describe(result)
    assert "Card authorisations failing" in said and "incident://acme/INC-1001" in said
    assert "INC-1002" in said and "incident://acme/INC-1002" in said
    assert "; references: " in said
    assert "；引用：" in describe(result, "zh")


def test_embedded_resources_are_named():
    said = describe(ToolResult([text("see"), embedded_resource("file:///report.txt", text="...")]))
    assert said == "see; reference: <file:///report.txt>"


def test_references_are_named_in_errors_too():
    result = ToolResult([text("partial failure"), resource_link("incident://acme/INC-9", "INC-9")], is_error=True)
    said = describe(result)
    assert said.startswith("Not successful") and "incident://acme/INC-9" in said
    assert describe(result, "zh").startswith("未成功")


def test_count_zero_says_no_matching_data_never_processed():
    result = ToolResult([text("已处理")], {"service": "search", "count": 0, "tenant": "acme"})
    said_zh = describe(result, "zh")
    assert "没有匹配数据" in said_zh
    assert "已处理" not in said_zh
    assert "search" in said_zh
    said = describe(result)
    assert said == "search: no matching data" and "processed" not in said


def test_count_zero_without_subject():
    assert describe(ToolResult.structured({"count": 0})) == "no matching data"
    assert describe(ToolResult.structured({"count": 0}), "zh") == "没有匹配数据"


def test_count_nonzero_is_not_no_data():
    assert describe(ToolResult.structured({"count": 3}, "3 found")) == "3 found"
    assert "没有匹配数据" not in describe(ToolResult.structured({"count": 3}, "3 found"), "zh")


def test_success_without_text_is_done():
    assert describe(ToolResult([])) == "done"
    assert describe(ToolResult([]), "zh") == "已完成"


def test_acceptance_on_a_real_call(desk, operator_token):
    result = desk.call_tool("incident.search", {}, operator_token, "acme")
    assert describe(result).startswith("Not successful")
    assert describe(result, "zh").startswith("未成功")
    none = desk.call_tool("incident.search", {"service": "search"}, operator_token, "acme")
    assert describe(none) == "search: no matching data"
    assert describe(none, "zh") == "search：没有匹配数据"


# -- tasks ------------------------------------------------------------------------------------------


@pytest.fixture
def tasks(tmp_path):
    db = Database(tmp_path / "t.db")
    yield TaskStore(db)
    db.close()


def test_working_task_is_accepted_not_done(tasks):
    task = tasks.create()
    said = describe(task.to_dict())
    assert said == f"task {task.task_id}: accepted, not yet done"
    said_zh = describe(task.to_dict(), "zh")
    assert task.task_id in said_zh
    assert "已受理" in said_zh and "尚未完成" in said_zh
    assert "已完成" not in said_zh
    assert "已完成" not in describe({"task": task.to_dict()}, "zh")  # a task-creating result
    assert "已完成" not in describe({"resultType": "task", "taskId": task.task_id, "status": "working"}, "zh")
    assert "not yet done" in describe({"resultType": "task", "taskId": task.task_id, "status": "working"})


def test_input_required_task(tasks):
    task = tasks.create({"type": "object", "required": ["service"]})
    said_zh = describe(task.to_dict(), "zh")
    assert task.task_id in said_zh
    assert "等待输入" in said_zh
    assert "已完成" not in said_zh and "已受理" not in said_zh
    assert describe(task.to_dict()) == f"task {task.task_id}: waiting for input, not started"


def test_completed_task_with_result(tasks):
    task = tasks.create()
    inner = ToolResult([text("ticket T-42 created")], {"ticket": "T-42"}).to_dict()
    done = tasks.complete(task.task_id, inner)
    said = describe(done.to_dict())
    assert said == f"task {task.task_id}: ticket T-42 created"
    assert describe(done.to_dict(), "zh") == f"任务 {task.task_id}：ticket T-42 created"


def test_completed_task_whose_result_is_an_error(tasks):
    task = tasks.create()
    inner = tool_error("dependency_unavailable", "ticket system is down", reference="REF-9").to_dict()
    done = tasks.complete(task.task_id, inner)
    said = describe(done.to_dict())
    assert said.startswith("Not successful")
    assert task.task_id in said and "ticket system is down" in said and "REF-9" in said
    said_zh = describe(done.to_dict(), "zh")
    assert said_zh.startswith("未成功") and "REF-9" in said_zh


def test_completed_task_with_empty_result_list_count(tasks):
    task = tasks.create()
    done = tasks.complete(task.task_id, ToolResult([text("已处理")], {"count": 0}).to_dict())
    said_zh = describe(done.to_dict(), "zh")
    assert "没有匹配数据" in said_zh and "已处理" not in said_zh
    assert describe(done.to_dict()) == f"task {task.task_id}: no matching data"


def test_failed_task(tasks):
    task = tasks.create()
    failed = tasks.fail(task.task_id, {"kind": "internal", "message": "runner lost", "reference": "REF-3"})
    said = describe(failed.to_dict())
    assert said == f"Not successful: the task failed (task {task.task_id}): runner lost; reference: REF-3"
    said_zh = describe(failed.to_dict(), "zh")
    assert said_zh.startswith("未成功")
    assert "任务失败" in said_zh and "runner lost" in said_zh and task.task_id in said_zh and "REF-3" in said_zh


def test_cancelled_task(tasks):
    task = tasks.create()
    cancelled = tasks.cancel(task.task_id)
    said_zh = describe(cancelled.to_dict(), "zh")
    assert "已取消" in said_zh and task.task_id in said_zh
    assert "已完成" not in said_zh
    assert describe(cancelled.to_dict()) == f"task {task.task_id}: cancelled, not done"
