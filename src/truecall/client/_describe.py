"""``describe(outcome)``: :func:`truecall.describe`'s rules (未成功 / 没有匹配数据 / 已受理 ≠ 完成) for client outcomes.

Done and Failed results are described as the result they hold (``_describe_result``: the
same sentence a server-side result gets); what only a caller can know — a
result that broke its own schema, a task still accepted, a request nobody
answered — is said here, with the ``client.*`` texts of :mod:`truecall.texts`.
"""

from __future__ import annotations

from typing import Any

from .._describe_result import describe_result
from ..texts import catalogue, say
from ._outcomes import CONTRACT_BROKEN, Accepted, Cancelled, Done, Failed, Unconfirmed, Unknown

__all__ = ["describe_outcome"]


def describe_outcome(outcome: Any, locale: str) -> str:
    if isinstance(outcome, Done):
        return describe_result(outcome.result, locale)
    if isinstance(outcome, Failed):
        if outcome.kind == CONTRACT_BROKEN:
            return say("client.broken", locale)
        return describe_result(outcome.result, locale)
    if isinstance(outcome, Unconfirmed):
        return say(f"client.unconfirmed.{outcome.claim}", locale, evidence=outcome.evidence or outcome.claim)
    if isinstance(outcome, Accepted):
        key = "client.waiting" if outcome.status == "input_required" else "client.accepted"
        return say(key, locale, task=outcome.task_id)
    if isinstance(outcome, Cancelled):
        return say("client.cancelled", locale, task=outcome.task_id)
    if isinstance(outcome, Unknown):
        reason = catalogue(locale).get(f"client.reason.{outcome.reason}", outcome.reason)
        head = say("client.unknown", locale, reason=reason)
        ref = outcome.task_id or outcome.reference
        return head + (say("client.check", locale, ref=ref) if ref else say("client.no_retry", locale))
    raise TypeError(f"describe() takes a tool result, a task or a client outcome, not {type(outcome).__name__}")
