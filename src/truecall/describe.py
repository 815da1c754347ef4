"""``describe(result)``: one sentence a host can show the user without lying.

Rules (the seed's exercise, made a function):
- an error result starts with 「未成功」 ("Not successful");
- references (resource links) are named;
- ``structuredContent.count == 0`` says there is no matching data, never "processed";
- accepted work (a task not yet terminal) says it is accepted and not done.
"""

from __future__ import annotations

from typing import Any, Mapping

from .results import ToolResult

__all__ = ["describe"]

_TEXT = {
    "zh": {
        "failed": "未成功",
        "no_data": "没有匹配数据",
        "done": "已完成",
        "refs": "引用",
        "accepted": "已受理，尚未完成",
        "waiting": "等待输入，尚未开始",
        "task": "任务",
        "cancelled": "已取消，未完成",
        "task_failed": "未成功：任务失败",
        "unknown": "结果未知",
        "check": "请先核对",
        "retry_later": "可稍后重试",
        "no_retry": "不要盲目重试",
        "nothing_done": "未产生任何变更",
        "sep": "；",
        "colon": "：",
    },
    "en": {
        "failed": "Not successful",
        "no_data": "no matching data",
        "done": "done",
        "refs": "references",
        "accepted": "accepted, not yet done",
        "waiting": "waiting for input, not started",
        "task": "task",
        "cancelled": "cancelled, not done",
        "task_failed": "Not successful: the task failed",
        "unknown": "outcome unknown",
        "check": "check first",
        "retry_later": "may be retried later",
        "no_retry": "do not retry blindly",
        "nothing_done": "nothing was changed",
        "sep": "; ",
        "colon": ": ",
    },
}


def _texts(content: list[dict[str, Any]]) -> list[str]:
    return [b["text"] for b in content if b.get("type") == "text" and isinstance(b.get("text"), str)]


def _refs(content: list[dict[str, Any]]) -> list[str]:
    out = []
    for b in content:
        if b.get("type") == "resource_link":
            out.append(f"{b.get('title') or b.get('name')} <{b.get('uri')}>")
        elif b.get("type") == "resource" and isinstance(b.get("resource"), dict):
            out.append(f"<{b['resource'].get('uri')}>")
    return out


def describe(result: ToolResult | Mapping[str, Any], locale: str = "zh") -> str:
    """A user-facing sentence for a tool result, a task, or a task-creating result."""
    if not isinstance(result, (ToolResult, Mapping)):  # a client outcome (Done, Failed, Accepted, Unknown, ...)
        from .client._describe import describe_outcome

        return describe_outcome(result, locale)
    t = _TEXT["en" if locale == "en" else "zh"]
    data = result.to_dict() if isinstance(result, ToolResult) else dict(result)
    if "taskId" in data or data.get("resultType") == "task" or "task" in data:
        return _describe_task(data.get("task", data), t)
    content = data.get("content") or []
    structured = data.get("structuredContent")
    narrative = " ".join(_texts(content)).strip()
    refs = _refs(content)
    ref_part = f"{t['sep']}{t['refs']}{t['colon']}{', '.join(refs)}" if refs else ""

    if data.get("isError"):
        error = structured.get("error") if isinstance(structured, dict) else None
        kind = error.get("kind") if isinstance(error, dict) else None
        message = (error or {}).get("message") or narrative or ""
        head = t["failed"]
        if kind == "outcome_unknown":
            ref = (error or {}).get("reference")
            head = f"{t['failed']}{t['colon']}{t['unknown']}"
            tail = f"{t['sep']}{t['check']} {ref}{t['sep']}{t['no_retry']}" if ref else f"{t['sep']}{t['no_retry']}"
            return f"{head}{t['sep']}{message}{tail}{ref_part}"
        if kind == "dependency_unavailable":
            return f"{head}{t['colon']}{message}{t['sep']}{t['nothing_done']}{t['sep']}{t['retry_later']}{ref_part}"
        return f"{head}{t['colon']}{message}{ref_part}" if message else f"{head}{ref_part}"

    if isinstance(structured, dict) and structured.get("count") == 0:
        subject = structured.get("service") or structured.get("query")
        lead = f"{subject}{t['colon']}" if subject else ""
        return f"{lead}{t['no_data']}{ref_part}"

    body = narrative or t["done"]
    return f"{body}{ref_part}"


def _describe_task(task: Mapping[str, Any], t: dict[str, str]) -> str:
    task_id = task.get("taskId", "?")
    status = task.get("status")
    label = f"{t['task']} {task_id}"
    if status in ("working", None):
        return f"{label}{t['colon']}{t['accepted']}"
    if status == "input_required":
        return f"{label}{t['colon']}{t['waiting']}"
    if status == "cancelled":
        return f"{label}{t['colon']}{t['cancelled']}"
    if status == "failed":
        err = task.get("error") or {}
        msg = err.get("message") if isinstance(err, dict) else None
        return f"{t['task_failed']} ({label})" + (f"{t['colon']}{msg}" if msg else "")
    if status == "completed":
        inner = task.get("result")
        if isinstance(inner, Mapping):
            said = describe(inner, "en" if t is _TEXT["en"] else "zh")
            return f"{said} ({label})" if inner.get("isError") else f"{label}{t['colon']}{said}"
        return f"{label}{t['colon']}{t['done']}"
    return f"{label}{t['colon']}{status}"
