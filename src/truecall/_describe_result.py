"""The sentence for a tool result or a task: :func:`truecall.describe`'s rules, for both sides.

:func:`truecall.describe` (``describe.py``) takes a result, a task or a client outcome; a client outcome
is said by ``client/_describe.py``, which says a ``Done`` or ``Failed`` outcome as the result it holds —
the same sentence a server-side result gets.  That shared piece lives here, below both, so neither
imports the other back (they did, each from inside a function: a cycle the import graph did not show).
"""

from __future__ import annotations

from typing import Any, Mapping

from .results import ToolResult
from .texts import CATALOGUE, resolve_locale

__all__ = ["describe_result"]


def describe_result(result: ToolResult | Mapping[str, Any], locale: str | None = None) -> str:
    """The sentence for a tool result, a task or a task-creating result (``locale`` as in ``describe``)."""
    return _describe(result, _Words(resolve_locale(locale)))


class _Words:
    """The ``describe.*`` texts of one language, by short name."""

    __slots__ = ("locale", "_texts")

    def __init__(self, locale: str) -> None:
        self.locale = locale
        self._texts = CATALOGUE[locale]

    def __getitem__(self, name: str) -> str:
        return self._texts[f"describe.{name}"]

    def refs(self, refs: list[str]) -> str:
        """``; references: a, b`` — or nothing when there are none."""
        if not refs:
            return ""
        label = self._texts.get("describe.refs.one", self["refs"]) if len(refs) == 1 else self["refs"]
        return f"{self['sep']}{label}{self['colon']}{', '.join(refs)}"


def _clause(message: str) -> str:
    """A message that more of the sentence follows: its own full stop would break the sentence."""
    return message.rstrip().rstrip(".。") or message


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


def _describe(result: ToolResult | Mapping[str, Any], t: _Words) -> str:
    data = result.to_dict() if isinstance(result, ToolResult) else dict(result)
    if "taskId" in data or data.get("resultType") == "task" or "task" in data:
        return _describe_task(data.get("task", data), t)
    content = data.get("content") or []
    structured = data.get("structuredContent")
    narrative = " ".join(_texts(content)).strip()
    refs = _refs(content)

    if data.get("isError"):
        error = structured.get("error") if isinstance(structured, dict) else None
        error = error if isinstance(error, dict) else {}
        kind = error.get("kind")
        message = error.get("message") or narrative or ""
        reference = error.get("reference")
        head = t["failed"]
        if kind == "outcome_unknown":
            head = f"{t['failed']}{t['colon']}{t['unknown']}"
            tail = f"{t['sep']}{t['check']} {reference}{t['sep']}{t['no_retry']}" if reference \
                else f"{t['sep']}{t['no_retry']}"
            return f"{head}{t['sep']}{_clause(message)}{tail}{t.refs(refs)}"
        if reference:  # whatever the kind, a result with a reference names it
            refs = [str(reference), *refs]
        if kind == "dependency_unavailable":
            return f"{head}{t['colon']}{_clause(message)}{t['sep']}{t['nothing_done']}{t['sep']}{t['retry_later']}" \
                f"{t.refs(refs)}"
        if not message:
            return f"{head}{t.refs(refs)}"
        return f"{head}{t['colon']}{_clause(message) if refs else message}{t.refs(refs)}"

    if isinstance(structured, dict) and structured.get("count") == 0:
        subject = structured.get("service") or structured.get("query")
        lead = f"{subject}{t['colon']}" if subject else ""
        return f"{lead}{t['no_data']}{t.refs(refs)}"

    body = narrative or t["done"]
    return f"{body}{t.refs(refs)}"


def _describe_task(task: Mapping[str, Any], t: _Words) -> str:
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
        ref = err.get("reference") if isinstance(err, dict) else None
        return f"{t['task_failed']} ({label})" + (f"{t['colon']}{msg}" if msg else "") + \
            t.refs([str(ref)] if ref else [])
    if status == "completed":
        inner = task.get("result")
        if isinstance(inner, Mapping):
            said = _describe(inner, t)
            return f"{said} ({label})" if inner.get("isError") else f"{label}{t['colon']}{said}"
        return f"{label}{t['colon']}{t['done']}"
    return f"{label}{t['colon']}{status}"
