"""describe(): what the user is told never claims more than happened."""

from __future__ import annotations

import pytest

from truecall import ErrorKind, TaskStore, ToolResult, describe, embedded_resource, resource_link, text, tool_error
from truecall.storage import Database

MISSING = ToolResult([text("required input is missing")], is_error=True)


# -- errors ---------------------------------------------------------------------------------------


def test_seed_acceptance_error_starts_with_wei_chenggong():
    said = describe(MISSING)
    assert said.startswith("未成功")
    assert "required input is missing" in said
    assert describe(MISSING.to_dict()) == said  # a dict reads the same as the object


def test_error_in_english_starts_with_not_successful():
    said = describe(MISSING, locale="en")
    assert said.startswith("Not successful")
    assert "未成功" not in said


@pytest.mark.parametrize("kind", [k for k in ErrorKind if k is not ErrorKind.OUTCOME_UNKNOWN])
def test_every_error_kind_starts_with_wei_chenggong(kind):
    result = tool_error(kind, "something specific")
    said = describe(result)
    assert said.startswith("未成功")
    assert "something specific" in said
    assert describe(result, "en").startswith("Not successful")


def test_error_even_when_the_narrative_claims_success():
    # isError decides, not the words: a tool that says "done" in an error result did not succeed.
    result = ToolResult([text("已处理完成 ✅")], {"count": 0}, is_error=True)
    said = describe(result)
    assert said.startswith("未成功")
    assert "没有匹配数据" not in said


def test_error_without_any_text():
    assert describe(ToolResult([], is_error=True)) == "未成功"
    assert describe(ToolResult([], is_error=True), "en") == "Not successful"


def test_outcome_unknown_mentions_the_reference():
    result = tool_error("outcome_unknown", "timed out after the ticket was sent", reference="ticket-req-8f2c")
    said = describe(result)
    assert said.startswith("未成功")
    assert "ticket-req-8f2c" in said
    assert "结果未知" in said
    assert "不要盲目重试" in said
    said_en = describe(result, "en")
    assert said_en.startswith("Not successful")
    assert "ticket-req-8f2c" in said_en and "outcome unknown" in said_en


def test_dependency_unavailable_says_nothing_changed_and_retry_later():
    result = tool_error(ErrorKind.DEPENDENCY_UNAVAILABLE, "ticket system is down")
    said = describe(result)
    assert said.startswith("未成功")
    assert "ticket system is down" in said
    assert "未产生任何变更" in said and "可稍后重试" in said
    said_en = describe(result, "en")
    assert "nothing was changed" in said_en and "retried later" in said_en


# -- successes ------------------------------------------------------------------------------------


def test_success_uses_the_narrative():
    result = ToolResult([text("payments: 2 个已授权事件摘要")], {"service": "payments", "count": 2, "tenant": "acme"})
    assert describe(result) == "payments: 2 个已授权事件摘要"
    assert not describe(result).startswith("未成功")


def test_resource_links_are_named():
    result = ToolResult(
        [
            text("payments: 2 个已授权事件摘要"),
            resource_link("incident://acme/INC-1001", "INC-1001", title="Card authorisations failing"),
            resource_link("incident://acme/INC-1002", "INC-1002"),
        ],
        {"service": "payments", "count": 2, "tenant": "acme"},
    )
    said = describe(result)
    assert "Card authorisations failing" in said and "incident://acme/INC-1001" in said
    assert "INC-1002" in said and "incident://acme/INC-1002" in said
    assert "引用" in said
    assert "references" in describe(result, "en")


def test_embedded_resources_are_named():
    said = describe(ToolResult([text("see"), embedded_resource("file:///report.txt", text="...")]))
    assert "file:///report.txt" in said


def test_references_are_named_in_errors_too():
    result = ToolResult([text("partial failure"), resource_link("incident://acme/INC-9", "INC-9")], is_error=True)
    said = describe(result)
    assert said.startswith("未成功") and "incident://acme/INC-9" in said


def test_count_zero_says_no_matching_data_never_processed():
    result = ToolResult([text("已处理")], {"service": "search", "count": 0, "tenant": "acme"})
    said = describe(result)
    assert "没有匹配数据" in said
    assert "已处理" not in said
    assert "search" in said
    assert "no matching data" in describe(result, "en")


def test_count_zero_without_subject():
    said = describe(ToolResult.structured({"count": 0}))
    assert said == "没有匹配数据"


def test_count_nonzero_is_not_no_data():
    assert "没有匹配数据" not in describe(ToolResult.structured({"count": 3}, "3 found"))


def test_success_without_text_is_done():
    assert describe(ToolResult([])) == "已完成"
    assert describe(ToolResult([]), "en") == "done"


def test_seed_acceptance_on_a_real_call(desk, operator_token):
    result = desk.call_tool("incident.search", {}, operator_token, "acme")
    assert describe(result).startswith("未成功")
    none = desk.call_tool("incident.search", {"service": "search"}, operator_token, "acme")
    assert describe(none) == "search：没有匹配数据"


# -- tasks ------------------------------------------------------------------------------------------


@pytest.fixture
def tasks(tmp_path):
    db = Database(tmp_path / "t.db")
    yield TaskStore(db)
    db.close()


def test_working_task_is_accepted_not_done(tasks):
    task = tasks.create()
    said = describe(task.to_dict())
    assert task.task_id in said
    assert "已受理" in said and "尚未完成" in said
    assert "已完成" not in said
    said_en = describe(task.to_dict(), "en")
    assert "accepted" in said_en and "not yet done" in said_en
    assert "已完成" not in describe({"task": task.to_dict()})  # a task-creating result
    assert "已完成" not in describe({"resultType": "task", "taskId": task.task_id, "status": "working"})


def test_input_required_task(tasks):
    task = tasks.create({"type": "object", "required": ["service"]})
    said = describe(task.to_dict())
    assert task.task_id in said
    assert "等待输入" in said
    assert "已完成" not in said and "已受理" not in said
    assert "waiting for input" in describe(task.to_dict(), "en")


def test_completed_task_with_result(tasks):
    task = tasks.create()
    inner = ToolResult([text("ticket T-42 created")], {"ticket": "T-42"}).to_dict()
    done = tasks.complete(task.task_id, inner)
    said = describe(done.to_dict())
    assert task.task_id in said and "ticket T-42 created" in said
    assert not said.startswith("未成功")


def test_completed_task_whose_result_is_an_error(tasks):
    task = tasks.create()
    inner = tool_error("dependency_unavailable", "ticket system is down").to_dict()
    done = tasks.complete(task.task_id, inner)
    said = describe(done.to_dict())
    assert said.startswith("未成功")
    assert task.task_id in said and "ticket system is down" in said


def test_completed_task_with_empty_result_list_count(tasks):
    task = tasks.create()
    done = tasks.complete(task.task_id, ToolResult([text("已处理")], {"count": 0}).to_dict())
    said = describe(done.to_dict())
    assert "没有匹配数据" in said and "已处理" not in said


def test_failed_task(tasks):
    task = tasks.create()
    failed = tasks.fail(task.task_id, {"kind": "internal", "message": "runner lost"})
    said = describe(failed.to_dict())
    assert said.startswith("未成功")
    assert "任务失败" in said and "runner lost" in said and task.task_id in said
    assert describe(failed.to_dict(), "en").startswith("Not successful")


def test_cancelled_task(tasks):
    task = tasks.create()
    cancelled = tasks.cancel(task.task_id)
    said = describe(cancelled.to_dict())
    assert "已取消" in said and task.task_id in said
    assert "已完成" not in said
    assert "cancelled" in describe(cancelled.to_dict(), "en")
