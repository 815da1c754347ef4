"""The rules the probe holds a server to, and its reading of answers against them."""

from __future__ import annotations

import re
from typing import Any

import orjson

INVALID_PARAMS = -32602
_EXCERPT = 600

RULES = {
    "unknown_tool_as_result": "An unknown tool is a protocol error (JSON-RPC -32602), not a tool result: "
                              "nothing ran, and a result (even isError: true) reads as the tool's own answer.",
    "unknown_tool_code": "An unknown tool is answered with -32602 (Invalid params).",
    "missing_argument_accepted": "A call missing a required argument cannot have done what was asked: it is "
                                 "answered isError: true (since 2025-11-25, SEP-1303), never as a success.",
    "missing_argument_protocol_error": "Since 2025-11-25 (SEP-1303) invalid tool arguments are a tool "
                                       "execution error (isError: true) the model can correct, not -32602.",
    "wrong_type_accepted": "A call whose argument breaks the tool's inputSchema is answered isError: true.",
    "schema_broken": "structuredContent must match the tool's outputSchema; a client that checks it must treat "
                     "the result as broken, one that does not is told facts nobody promised.",
    "says_failed": "isError is the control flag and is never inferred from text: a failure sent with isError: "
                   "false reads as success to every client that checks the flag.",
    "accepted_without_handle": "Accepted is not completed: queued work is answered with a task handle (or at "
                               "least a reference to check), not a plain success.",
    "task_without_result": "A task that reports completed has a retrievable result.",
    "result_type_missing": "2026-07-28 results carry resultType (complete, input_required, task).",
    "credential_form": "Elicitation form mode MUST NOT ask for passwords, API keys, tokens or payment "
                       "credentials (URL mode exists for those).",
    "leaks_internals": "Errors say what the caller can do, never the server's internals (tracebacks, paths, "
                       "exception names).",
    "echoes_secret": "An error never echoes a secret-looking argument value back (it lands in transcripts "
                     "and logs).",
    "call_timeout": "A call is answered within the bound (the caller then knows only that it may have "
                    "happened).",
    "bad_result": "A tools/call result is an object with a content list and a boolean isError.",
    "parse_error_unanswered": "JSON-RPC 2.0: a message that is not JSON is answered with error -32700 and id null.",
    "invalid_request_unanswered": "JSON-RPC 2.0: a request whose method is not a string is answered with error "
                                  "-32600.",
    "unsupported_version_data": "2026-07-28: a request naming a protocol version the server does not speak is "
                                "answered with -32022 and data {supported, requested}.",
    "answered_twice": "One request, one answer: a second answer to the same id is a protocol violation.",
}

_FAILED_TEXT = re.compile(
    r"^\s*(error|failed|failure|exception|fatal)\b|\berror:|\bfailed to\b|\bunable to\b|\bcould not\b|"
    r"\bcannot be (?:completed|processed)\b|失败|错误|未成功|出错|异常", re.I)
_ACCEPTED_TEXT = re.compile(
    r"\b(accepted|queued|submitted|enqueued|will be processed|in the queue)\b|"
    r"已受理|已提交|已接收|排队中|稍后处理", re.I)
_REFERENCE_TEXT = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[A-Z][A-Z0-9]*-\d+\b|#\d+\b|"
    r"\b(?:id|ticket|reference|ref|job|task)[\s:=#]+[A-Za-z0-9_-]{3,}", re.I)
_REFERENCE_KEYS = {"id", "taskid", "ticket", "ticketid", "reference", "ref", "jobid", "requestid", "trackingid",
                   "tracking", "task", "job", "receipt", "operationid"}
_LEAK = re.compile(
    r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|\bat [\w.$]+\([\w.]+:\d+\)|"
    r"(?<![\w/])/(?:home|usr|opt|var|srv|tmp|root|etc|app|Users)/[\w./-]+|[A-Za-z]:\\\\?[\w\\. -]+\.py|"
    r"site-packages|\b(?:[A-Z][a-z]+)+(?:Error|Exception)\b(?=:)|\bnode_modules/")


def excerpt(value: Any, limit: int = _EXCERPT) -> Any:
    """The answer as evidence: kept whole when short, else its JSON cut at ``limit`` characters."""
    try:
        text = orjson.dumps(value, default=str).decode()
    except TypeError:
        text = repr(value)
    if len(text) <= limit:
        return value
    return text[:limit] + "…"


def _texts(result: dict[str, Any]) -> str:
    content = result.get("content")
    if not isinstance(content, list):
        return ""
    return " ".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))


def _says_failed(result: dict[str, Any]) -> Any:
    """The part of a success result that says it failed, or None."""
    structured = result.get("structuredContent")
    if isinstance(structured, dict):
        if structured.get("success") is False or structured.get("ok") is False:
            key = "success" if "success" in structured else "ok"
            return {"structuredContent": {key: False}}
        status = structured.get("status")
        if isinstance(status, str) and status.lower() in ("error", "failed", "failure", "fail"):
            return {"structuredContent": {"status": status}}
        error = structured.get("error")
        if isinstance(error, (dict, str)) and error:
            return {"structuredContent": {"error": excerpt(error, 200)}}
    text = _texts(result)
    match = _FAILED_TEXT.search(text)
    if match:
        return {"content": _around(text, match)}
    return None


def _has_reference(result: dict[str, Any]) -> bool:
    structured = result.get("structuredContent")
    if isinstance(structured, dict):
        for key, value in structured.items():
            if key.replace("_", "").lower() in _REFERENCE_KEYS and value not in (None, "", [], {}):
                return True
    return _REFERENCE_TEXT.search(_texts(result)) is not None


def _around(text: str, match: re.Match[str], width: int = 80) -> str:
    start = max(match.start() - width, 0)
    return ("…" if start else "") + text[start:match.end() + width] + ("…" if match.end() + width < len(text) else "")


def _leak(text: str) -> str | None:
    match = _LEAK.search(text)
    return _around(text, match) if match else None
