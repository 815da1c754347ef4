"""The rules the probe holds a server to, and its reading of answers against them."""

from __future__ import annotations

from typing import Any, Iterable

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
                       "exception names). A path the caller supplied, or one under a root the server "
                       "advertises, is not internal.",
    "echoes_secret": "An error never echoes a secret-looking argument value back (it lands in transcripts "
                     "and logs); a validation error that repeats every argument is no exception.",
    "result_has_secret": "A result never carries a secret (a key, a token, a password): what a tool returns is "
                         "read by a model and kept in transcripts.",
    "dumps_environment": "A result never dumps the server's environment: it holds the server's credentials.",
    "crashes_on_valid_arguments": "A call whose arguments match the tool's inputSchema is served or refused "
                                  "in words the model can act on; an internal error (-32603, a bare exception) "
                                  "is a crash.",
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

def excerpt(value: Any, limit: int = _EXCERPT) -> Any:
    """The answer as evidence: kept whole when short, else its JSON cut at ``limit`` characters."""
    try:
        text = orjson.dumps(value, default=str).decode()
    except TypeError:
        text = repr(value)
    if len(text) <= limit:
        return value
    return text[:limit] + "…"


def texts(result: dict[str, Any]) -> str:
    content = result.get("content")
    if not isinstance(content, list):
        return ""
    return " ".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))


def all_text(result: dict[str, Any]) -> str:
    """The text blocks and the structured content: everything of a result a model reads as words (an
    image's or a file's bytes, base64 beside a mimeType, are bytes: never read as a secret)."""
    text = texts(result)
    if result.get("structuredContent") is not None:
        text += " " + orjson.dumps(_without_bytes(result["structuredContent"], 0), default=str).decode()
    return text


def _without_bytes(value: Any, depth: int) -> Any:
    if depth > 16:
        return None
    if isinstance(value, dict):
        binary = "mimeType" in value
        return {k: "" if binary and k in ("blob", "data") else _without_bytes(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_bytes(v, depth + 1) for v in value]
    return value


def says_failed(result: dict[str, Any]) -> Any:
    """The part of a success result that says it failed (its structure, or the judge's reading of its
    narrative), or None."""
    from ..judge import claim_in_result

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
    claim = claim_in_result(result)
    if claim is not None and claim.kind == "failed":
        return {"content": around(texts(result), claim.evidence), "claim": claim.evidence,
                "language": claim.language}
    return None


def accepted_without_handle(result: dict[str, Any]) -> Any:
    """The judge's reading of a success result that claims accepted or queued work and carries no
    reference to check it by, or None."""
    from ..judge import claim_in_result

    claim = claim_in_result(result)
    if claim is None or claim.kind != "accepted" or has_reference(result):
        return None
    return {"content": around(texts(result), claim.evidence), "claim": claim.evidence, "language": claim.language,
            "isError": result.get("isError", False)}


def has_reference(result: dict[str, Any]) -> bool:
    from ..judge import names_reference, reference_key

    structured = result.get("structuredContent")
    if isinstance(structured, dict):
        for key, value in structured.items():
            if reference_key(key) and value not in (None, "", [], {}):
                return True
    return names_reference(texts(result))


def around(text: str, phrase: str, width: int = 80) -> str:
    """``text`` near ``phrase`` (its first occurrence; the start when the phrase is not found as is)."""
    at = text.find(phrase) if phrase else -1
    start, end = (at, at + len(phrase)) if at >= 0 else (0, 0)
    lo = max(start - width, 0)
    return ("…" if lo else "") + text[lo:end + width] + ("…" if end + width < len(text) else "")


def _explained(path: str, known: Iterable[str]) -> bool:
    """A path the caller supplied or the server advertised, or one under (or above) such a root."""
    path = path.rstrip("/.")
    for root in known:
        root = root.rstrip("/")
        if root and (path == root or path.startswith(root + "/") or root.startswith(path + "/")):
            return True
    return False


def leak(text: str, known: Iterable[str] = (), *, paths: bool = True) -> str | None:
    """Where ``text`` shows the server's internals: a traceback, an exception name, a path that neither
    the caller supplied nor the server advertised (``known``)."""
    from ..judge import leaks_internals

    known = list(known)
    for start, end, kind in leaks_internals(text):
        if kind == "trace" or paths and (kind == "install" or not _explained(text[start:end], known)):
            return around(text, text[start:end])
    return None


def crash(text: str) -> str | None:
    """Where ``text`` is an exception's own words (a crash told as text), or None."""
    from ..judge import says_crashed

    span = says_crashed(text)
    return around(text, text[span[0]:span[1]]) if span else None


def secret_in(text: str) -> tuple[str, str] | None:
    """The kind of the first secret the judge finds in ``text``, and the text around it (the secret
    itself is redacted from the report when the finding is recorded).  Randomness alone is no
    evidence here: a commit id, a digest or a content hash is data a tool may well return (and
    redaction, which errs the other way, still hides such tokens at rest); a shape or a credential
    word before the value is."""
    from ..judge import secret_spans

    spans = [span for span in secret_spans(text) if span[2] != "high_entropy"]
    if not spans:
        return None
    start, end, kind = spans[0]
    return kind, around(text, text[start:end])


def environment_dump(text: str) -> str | None:
    """Where ``text`` lists the process environment (three or more of the variables every one has)."""
    from ..judge import environment_names

    found = environment_names(text)
    names = {name for _, _, name in found}
    if len(names) < 3:
        return None
    start, end, _ = found[0]
    return around(text, text[start:end])[:200] + f" … ({', '.join(sorted(names))})"
