"""``describe(outcome)``: the seed's rules (未成功 / 没有匹配数据 / 已受理 ≠ 完成) for client outcomes.

Done and Failed results are described by :func:`truecall.describe` itself (the
same sentence a server-side result gets); what only a caller can know — a
result that broke its own schema, a task still accepted, a request nobody
answered — is said here, in the same two languages.
"""

from __future__ import annotations

from typing import Any

from ._outcomes import CONTRACT_BROKEN, Accepted, Cancelled, Done, Failed, Unknown

__all__ = ["describe_outcome"]

_TEXT = {
    "zh": {
        "broken": "未成功：服务器的结果不符合它声明的输出结构，不能当作完成",
        "accepted": "任务 {task}：已受理，尚未完成",
        "waiting": "任务 {task}：等待输入，尚未完成",
        "cancelled": "任务 {task}：已取消，未完成",
        "unknown": "结果未知：请求已发出但没有收到答复（{reason}），可能已经执行",
        "check": "；请先核对 {ref}，不要盲目重试",
        "no_retry": "；请先核对，不要盲目重试",
        "reasons": {"timeout": "超时", "connection_lost": "连接中断", "server_exited": "服务器已退出"},
    },
    "en": {
        "broken": "Not successful: the server's result does not match the output schema it declared; "
                  "it cannot count as done",
        "accepted": "task {task}: accepted, not yet done",
        "waiting": "task {task}: waiting for input, not yet done",
        "cancelled": "task {task}: cancelled, not done",
        "unknown": "Outcome unknown: the request was sent and no answer came ({reason}); it may have happened",
        "check": "; check {ref} first, do not retry blindly",
        "no_retry": "; check first, do not retry blindly",
        "reasons": {"timeout": "timed out", "connection_lost": "connection lost", "server_exited": "server exited"},
    },
}


def describe_outcome(outcome: Any, locale: str) -> str:
    from ..describe import describe

    t = _TEXT["zh" if locale == "zh" else "en"]
    if isinstance(outcome, Done):
        return describe(outcome.result, locale)
    if isinstance(outcome, Failed):
        if outcome.kind == CONTRACT_BROKEN:
            return str(t["broken"])
        return describe(outcome.result, locale)
    if isinstance(outcome, Accepted):
        key = "waiting" if outcome.status == "input_required" else "accepted"
        return str(t[key]).format(task=outcome.task_id)
    if isinstance(outcome, Cancelled):
        return str(t["cancelled"]).format(task=outcome.task_id)
    if isinstance(outcome, Unknown):
        reasons: dict[str, str] = t["reasons"]  # type: ignore[assignment]
        head = str(t["unknown"]).format(reason=reasons.get(outcome.reason, outcome.reason))
        ref = outcome.task_id or outcome.reference
        return head + (str(t["check"]).format(ref=ref) if ref else str(t["no_retry"]))
    raise TypeError(f"describe() takes a tool result, a task or a client outcome, not {type(outcome).__name__}")
