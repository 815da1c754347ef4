"""Every user-facing sentence, in one catalogue: English by default, Chinese on request.

What a host shows the user (:func:`truecall.describe`) and what the incident desk says
(its narratives, its settlements) come from :data:`CATALOGUE`; code asks for a text by key
with :func:`say` instead of choosing words itself, so a language is added in one place and
a key missing in one language is a test failure, not a silent mix.

The language: an explicit ``locale`` argument, else ``TRUECALL_LANG`` (``en`` or ``zh``; unset or
empty means ``en``).  The setting is read once per process, on first use, and a value that is
not a known locale is a :class:`LocaleError` naming the setting — never a silent fallback.
Operator output (the CLI's tables and messages) is English only.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Mapping

from ._misuse import SettingError

__all__ = ["LANG_ENV", "LOCALES", "DEFAULT_LOCALE", "CATALOGUE", "LocaleError", "current_locale", "resolve_locale",
           "catalogue", "say"]

#: The setting that chooses the language of user-facing texts.
LANG_ENV = "TRUECALL_LANG"
#: The languages the catalogue speaks.
LOCALES = ("en", "zh")
DEFAULT_LOCALE = "en"


class LocaleError(SettingError):
    """A locale (argument or ``TRUECALL_LANG``) that the catalogue does not speak (a
    :class:`ValueError`; the commands report it as one line)."""


def _check(value: str, where: str) -> str:
    locale = value.strip().lower()
    if locale not in LOCALES:
        raise LocaleError(f"{where} must be one of {', '.join(LOCALES)}, not {value!r}")
    return locale


@functools.lru_cache(maxsize=1)
def current_locale() -> str:
    """The process's language: ``TRUECALL_LANG``, read once (``en`` when unset or empty)."""
    raw = os.environ.get(LANG_ENV, "")
    return _check(raw, LANG_ENV) if raw.strip() else DEFAULT_LOCALE


def resolve_locale(locale: str | None = None) -> str:
    """``locale`` checked, or the process's language when ``None``."""
    return current_locale() if locale is None else _check(locale, "locale")


# Keys are "<area>.<text>".  A key ending in ".one" is the singular of the key without it
# (chosen by say()'s ``count``); languages without a singular form simply omit it.
CATALOGUE: dict[str, dict[str, str]] = {
    "en": {
        # describe(): the user layer
        "describe.failed": "Not successful",
        "describe.no_data": "no matching data",
        "describe.done": "done",
        "describe.refs": "references",
        "describe.refs.one": "reference",
        "describe.accepted": "accepted, not yet done",
        "describe.waiting": "waiting for input, not started",
        "describe.task": "task",
        "describe.cancelled": "cancelled, not done",
        "describe.task_failed": "Not successful: the task failed",
        "describe.unknown": "outcome unknown",
        "describe.check": "check first",
        "describe.retry_later": "may be retried later",
        "describe.no_retry": "do not retry blindly",
        "describe.nothing_done": "nothing was changed",
        "describe.sep": "; ",
        "describe.colon": ": ",
        # the client: what only a caller can know (truecall.client)
        "client.broken": "Not successful: the server's result does not match the output schema it declared; "
                         "it cannot count as done",
        "client.accepted": "task {task}: accepted, not yet done",
        "client.waiting": "task {task}: waiting for input, not yet done",
        "client.cancelled": "task {task}: cancelled, not done",
        "client.unknown": "Outcome unknown: the request was sent and no answer came ({reason}); it may have happened",
        "client.check": "; check {ref} first, do not retry blindly",
        "client.no_retry": "; check first, do not retry blindly",
        "client.reason.timeout": "timed out",
        "client.reason.connection_lost": "connection lost",
        "client.reason.server_exited": "server exited",
        "client.reason.unreachable": "the server could no longer be reached",
        "client.reason.http_500": "HTTP 500 without the server's answer",
        "client.reason.http_502": "HTTP 502 from a gateway, without the server's answer",
        "client.reason.http_503": "HTTP 503 without the server's answer",
        "client.reason.http_504": "HTTP 504 from a gateway, without the server's answer",
        "client.unconfirmed.accepted": "Not done: the server claims it accepted the work (\"{evidence}\") but gave "
                                       "no way to check it (no task to follow, no checked result), so it cannot "
                                       "count as done",
        "client.unconfirmed.failed": "Not confirmed: the server flagged success but its text says the work failed "
                                     "(\"{evidence}\"); it cannot count as done, and check before trying again",
        # the incident desk
        "desk.search.summary": "{service}: {count} authorized incident summaries",
        "desk.search.summary.one": "{service}: {count} authorized incident summary",
        "desk.settled.ticket": "Settled {when} by {by}: ticket {ticket} exists",
        "desk.settled.nothing": "Settled {when} by {by}: nothing happened (no ticket; none can be written)",
    },
    "zh": {
        "describe.failed": "未成功",
        "describe.no_data": "没有匹配数据",
        "describe.done": "已完成",
        "describe.refs": "引用",
        "describe.accepted": "已受理，尚未完成",
        "describe.waiting": "等待输入，尚未开始",
        "describe.task": "任务",
        "describe.cancelled": "已取消，未完成",
        "describe.task_failed": "未成功：任务失败",
        "describe.unknown": "结果未知",
        "describe.check": "请先核对",
        "describe.retry_later": "可稍后重试",
        "describe.no_retry": "不要盲目重试",
        "describe.nothing_done": "未产生任何变更",
        "describe.sep": "；",
        "describe.colon": "：",
        "client.broken": "未成功：服务器的结果不符合它声明的输出结构，不能当作完成",
        "client.accepted": "任务 {task}：已受理，尚未完成",
        "client.waiting": "任务 {task}：等待输入，尚未完成",
        "client.cancelled": "任务 {task}：已取消，未完成",
        "client.unknown": "结果未知：请求已发出但没有收到答复（{reason}），可能已经执行",
        "client.check": "；请先核对 {ref}，不要盲目重试",
        "client.no_retry": "；请先核对，不要盲目重试",
        "client.reason.timeout": "超时",
        "client.reason.connection_lost": "连接中断",
        "client.reason.server_exited": "服务器已退出",
        "client.reason.unreachable": "已无法连接服务器",
        "client.reason.http_500": "HTTP 500，没有服务器的答复",
        "client.reason.http_502": "网关返回 HTTP 502，没有服务器的答复",
        "client.reason.http_503": "HTTP 503，没有服务器的答复",
        "client.reason.http_504": "网关返回 HTTP 504，没有服务器的答复",
        "client.unconfirmed.accepted": "未完成：服务器声称已受理（“{evidence}”），但没有给出任何核对方式"
                                       "（没有可跟踪的任务，也没有经过校验的结果），因此不能当作完成",
        "client.unconfirmed.failed": "未确认：服务器标记为成功，但其文字说工作失败了（“{evidence}”），"
                                     "不能当作完成，重试前请先核对",
        "desk.search.summary": "{service}: {count} 个已授权事件摘要",  # the line examples/01_search.py prints
        "desk.settled.ticket": "已核对（{when}，{by}）：工单 {ticket} 已存在",
        "desk.settled.nothing": "已核对（{when}，{by}）：未产生任何变更（没有工单，也不会再有）",
    },
}


def catalogue(locale: str | None = None) -> Mapping[str, str]:
    """All texts of one language (``locale`` checked, default the process's)."""
    return CATALOGUE[resolve_locale(locale)]


def say(key: str, locale: str | None = None, /, *, count: int | None = None, **values: Any) -> str:
    """The text ``key`` in ``locale`` with ``values`` filled in; ``count`` 1 picks the singular."""
    texts = catalogue(locale)
    template = texts.get(f"{key}.one", texts[key]) if count == 1 else texts[key]
    return template.format(count=count, **values) if count is not None or values else template
