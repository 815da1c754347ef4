"""Tool results with three channels that never collapse into one.

``content`` is the narrative (for the model and the user), ``structuredContent``
the facts (stable fields, checked against the tool's ``outputSchema``) and
``isError`` the control flag.  A tool that only *accepted* work must not build
a success result: it returns a task handle instead (see :mod:`truecall.tasks`).
"""

from __future__ import annotations

import base64
import enum
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "ToolResult",
    "ErrorKind",
    "text",
    "image",
    "audio",
    "resource_link",
    "embedded_resource",
    "tool_error",
    "ToolError",
    "MISSING_INPUT_TEXT",
]

#: The exact narrative for a missing or empty required field (examples/03_injection_a.py prints it).
MISSING_INPUT_TEXT = "required input is missing"
"""The narrative of the result for a missing or empty required field (no ``structuredContent``)."""


@dataclass(frozen=True, slots=True, init=False)
class ToolResult:
    """What a tool call produced: the MCP ``CallToolResult`` minus protocol fields."""

    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None = None
    is_error: bool = False
    #: The result's ``_meta`` (what a tool attaches for the client's application, not the model).
    meta: dict[str, Any] | None = None

    def __init__(self, content: list[dict[str, Any]], structured_content: dict[str, Any] | None = None,
                 is_error: bool = False, meta: dict[str, Any] | None = None) -> None:
        # The dataclass's own __init__, with each slot set through its descriptor: the generated one
        # of a frozen class calls object.__setattr__ per field, ~2.7x the time (one result a call).
        _set_content(self, content)
        _set_structured(self, structured_content)
        _set_is_error(self, is_error)
        _set_meta(self, meta)

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {"content": self.content}
        if self.structured_content is not None:
            result["structuredContent"] = self.structured_content
        if self.is_error:
            result["isError"] = True
        if self.meta is not None:
            result["_meta"] = self.meta
        return result

    @classmethod
    def structured(cls, data: dict[str, Any], narrative: str | None = None) -> "ToolResult":
        """A success with facts; with no narrative the JSON itself is the text block.

        The spec asks servers to mirror ``structuredContent`` in a text block so that
        clients that ignore structured output still see the facts.
        """
        if narrative is None:
            narrative = orjson.dumps(data).decode()
        return cls([text(narrative)], data)

    @property
    def error(self) -> dict[str, Any] | None:
        """The typed error of an error result (``structuredContent.error``), if any."""
        if not self.is_error or self.structured_content is None:
            return None
        err = self.structured_content.get("error")
        return err if isinstance(err, dict) else None


# (What ToolResult.__init__ sets its fields with: the slots' own setters, which a frozen class keeps.)
_set_content = vars(ToolResult)["content"].__set__
_set_structured = vars(ToolResult)["structured_content"].__set__
_set_is_error = vars(ToolResult)["is_error"].__set__
_set_meta = vars(ToolResult)["meta"].__set__


class ErrorKind(str, enum.Enum):
    """Kinds of tool errors: each tells the caller what it may do next."""

    #: The model can fix the arguments and call again.
    INVALID_INPUT = "invalid_input"
    #: Nothing happened; the same call may succeed later.
    DEPENDENCY_UNAVAILABLE = "dependency_unavailable"
    #: It may have happened: check the reference before doing anything again.
    OUTCOME_UNKNOWN = "outcome_unknown"
    #: A fault on our side; the message is safe and says nothing of internals.
    INTERNAL = "internal"
    #: The user declined or cancelled a request for input: nothing was done.
    DECLINED = "declined"
    #: Too many calls; ``retryAfterMs`` says when to try again.
    RATE_LIMITED = "rate_limited"
    #: The call was cancelled before it finished.
    CANCELLED = "cancelled"


_RETRYABLE_DEFAULT = {
    ErrorKind.INVALID_INPUT: False,
    ErrorKind.DEPENDENCY_UNAVAILABLE: True,
    ErrorKind.OUTCOME_UNKNOWN: False,
    ErrorKind.INTERNAL: False,
    ErrorKind.DECLINED: False,
    ErrorKind.RATE_LIMITED: True,
    ErrorKind.CANCELLED: False,
}


def tool_error(
    kind: ErrorKind | str,
    message: str,
    *,
    retryable: bool | None = None,
    **details: Any,
) -> ToolResult:
    """An ``isError`` result with ``structuredContent.error = {kind, message, retryable, ...}``.

    ``outcome_unknown`` must carry a ``reference`` the caller can check: a blind
    retry of something that may already have happened is how duplicates are made.
    """
    kind = ErrorKind(kind)
    if kind is ErrorKind.OUTCOME_UNKNOWN and not details.get("reference"):
        raise ValueError("an outcome_unknown error needs a reference to check")
    if retryable is None:
        retryable = _RETRYABLE_DEFAULT[kind]
    error: dict[str, Any] = {"kind": kind.value, "message": message, "retryable": retryable}
    error.update(details)
    return ToolResult([text(message)], {"error": error}, is_error=True)


class ToolError(Exception):
    """Raise it from a tool to answer an ``isError`` result of ``kind``, the ``facts`` in
    ``structuredContent.error`` (``raise ToolError("no such ticket", ticket=id)``).

    The default kind is ``invalid_input``: what the model can fix by calling differently.  The
    result is built (and checked: ``outcome_unknown`` needs a ``reference``) when it is raised, so
    a malformed one fails in the tool, as any bug does.
    """

    def __init__(self, message: str, kind: ErrorKind | str = ErrorKind.INVALID_INPUT, *,
                 retryable: bool | None = None, **facts: Any) -> None:
        super().__init__(message)
        self.kind = ErrorKind(kind)
        self.facts = facts
        self.result = tool_error(self.kind, message, retryable=retryable, **facts)


# -- content blocks ---------------------------------------------------------------


def _annotated(block: dict[str, Any], annotations: dict[str, Any] | None, meta: dict[str, Any] | None) -> dict[str, Any]:
    if annotations:
        block["annotations"] = annotations
    if meta:
        block["_meta"] = meta
    return block


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode()


def text(value: str, *, annotations: dict[str, Any] | None = None, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A text content block."""
    return _annotated({"type": "text", "text": value}, annotations, meta)


def image(data: bytes | str, mime_type: str, *, annotations: dict[str, Any] | None = None) -> dict[str, Any]:
    """An image block; ``data`` is raw bytes or already base64 text."""
    return _annotated({"type": "image", "data": _b64(data), "mimeType": mime_type}, annotations, None)


def audio(data: bytes | str, mime_type: str, *, annotations: dict[str, Any] | None = None) -> dict[str, Any]:
    """An audio block; ``data`` is raw bytes or already base64 text."""
    return _annotated({"type": "audio", "data": _b64(data), "mimeType": mime_type}, annotations, None)


def resource_link(
    uri: str,
    name: str,
    *,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    size: int | None = None,
    annotations: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A reference the client can read later with ``resources/read``."""
    block: dict[str, Any] = {"type": "resource_link", "uri": uri, "name": name}
    if title is not None:
        block["title"] = title
    if description is not None:
        block["description"] = description
    if mime_type is not None:
        block["mimeType"] = mime_type
    if size is not None:
        block["size"] = size
    return _annotated(block, annotations, None)


def embedded_resource(
    uri: str,
    *,
    text: str | None = None,
    blob: bytes | str | None = None,
    mime_type: str | None = None,
    annotations: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A resource whose contents travel inside the result (exactly one of text/blob)."""
    if (text is None) == (blob is None):
        raise ValueError("an embedded resource has exactly one of text or blob")
    contents: dict[str, Any] = {"uri": uri}
    if mime_type is not None:
        contents["mimeType"] = mime_type
    if text is not None:
        contents["text"] = text
    elif blob is not None:  # (always: exactly one of the two, checked above)
        contents["blob"] = _b64(blob)
    return _annotated({"type": "resource", "resource": contents}, annotations, None)
