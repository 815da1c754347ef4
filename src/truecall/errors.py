"""Protocol faults: what the model cannot fix is raised, never returned as a result.

Each case has its own type so that transports can map it (JSON-RPC code, HTTP
status) without parsing messages.  Messages are written for the client and never
carry internals, stack traces or secrets.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ProtocolError",
    "ParseError",
    "InvalidRequest",
    "MethodNotFound",
    "InvalidParams",
    "InternalError",
    "ServiceUnavailable",
    "HeaderMismatch",
    "MissingCapability",
    "TaskRequired",
    "UnsupportedVersion",
    "AccessDenied",
    "InvalidCredential",
    "TenantMismatch",
    "InsufficientScope",
    "UnknownTool",
    "NotFound",
    "RateLimitExceeded",
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "HEADER_MISMATCH",
    "MISSING_CAPABILITY",
    "UNSUPPORTED_VERSION",
    "UNAUTHORIZED",
    "FORBIDDEN",
    "RATE_LIMITED",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022
#: Implementation-defined codes (JSON-RPC reserves -32000..-32099 for servers).
UNAUTHORIZED = -32001
FORBIDDEN = -32003
#: Over the caller's rate limit (HTTP's 429, in the server range).
RATE_LIMITED = -32029


class ProtocolError(Exception):
    """A JSON-RPC error response: ``code``, a safe ``message`` and optional ``data``."""

    code: int = INTERNAL_ERROR
    http_status: int = 500
    default_message = "Internal error"

    def __init__(self, message: str | None = None, data: Any = None) -> None:
        self.message = message or self.default_message
        self.data = data
        super().__init__(self.message)

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(ProtocolError):
    """The message is not JSON (-32700, HTTP 400)."""

    code, http_status, default_message = PARSE_ERROR, 400, "Parse error"


class InvalidRequest(ProtocolError):
    """Not a valid JSON-RPC request, or not allowed in the session's state (-32600, HTTP 400)."""

    code, http_status, default_message = INVALID_REQUEST, 400, "Invalid request"


class MethodNotFound(ProtocolError):
    """The server has no such method (-32601, HTTP 404)."""

    code, http_status, default_message = METHOD_NOT_FOUND, 404, "Method not found"


class InvalidParams(ProtocolError):
    """The request's parameters are wrong: an unknown tool or prompt, a missing resource (-32602)."""

    # Over HTTP a -32602 about the content (an unknown tool, a missing resource) is a
    # normal JSON-RPC answer; envelope faults (a request's _meta) use 400 instead.
    code, http_status, default_message = INVALID_PARAMS, 200, "Invalid params"


class UrlElicitationRequired(ProtocolError):
    """The call needs the user to complete URL elicitations first (-32042, 2025-11-25 on); ``data``
    lists them as ``{"elicitations": [...]}``.  What the SDK's ``UrlElicitationRequiredError``,
    raised by a tool, becomes."""

    code, http_status, default_message = -32042, 200, "URL elicitation required"


class InternalError(ProtocolError):
    """A fault on the server's side; the message says nothing of internals (-32603, HTTP 500)."""

    code, http_status, default_message = INTERNAL_ERROR, 500, "Internal error"


class ServiceUnavailable(InternalError):
    """The server's database is unavailable right now (locked by another process, full, unreachable):
    still -32603 for the client, but HTTP 503 and a message that says so, for the caller to retry later.

    Only a database outage becomes this (``truecall.storage.unavailable`` decides), never a bug: a bug
    stays the plain "Internal error", which tells the caller nothing about internals."""

    http_status, default_message = 503, "Service unavailable"

    @classmethod
    def because(cls, why: str) -> "ServiceUnavailable":
        """``why`` is the storage classifier's fixed, client-safe text (e.g. "the database is busy ...")."""
        return cls(f"Service unavailable: {why}. The request may not have completed; retry it later.",
                   data={"retryable": True})


class HeaderMismatch(ProtocolError):
    """An ``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*`` header disagrees with the body (-32020, HTTP 400)."""

    code, http_status, default_message = HEADER_MISMATCH, 400, "Header does not match the request body"


class MissingCapability(ProtocolError):
    """The request needs a client capability the client did not declare (-32021, HTTP 400)."""

    code, http_status, default_message = MISSING_CAPABILITY, 400, "Missing required client capability"


class TaskRequired(MissingCapability):
    """The tool runs only as a task and the caller cannot take one."""

    default_message = "This tool runs only as a task; the client must support tasks"


class UnsupportedVersion(ProtocolError):
    """The client asked for a protocol version this server does not speak (-32022, HTTP 400)."""

    code, http_status, default_message = UNSUPPORTED_VERSION, 400, "Unsupported protocol version"


class NotFound(InvalidParams):
    """An object the caller may not see or that does not exist: the same answer for both."""

    default_message = "Not found"


class UnknownTool(InvalidParams, LookupError):
    """No tool of that name (-32602): a protocol error, since the model cannot fix it by retrying."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Unknown tool: {name}"[:200])


class RateLimitExceeded(ProtocolError):
    """A request over the caller's rate limit, for a method whose answer has no error result (a
    resource read, a prompt, a completion): -32029, HTTP 429, ``retryAfterMs`` in its data.  (A
    tool call over it is answered with a ``rate_limited`` tool error instead, which a model reads.)"""

    code, http_status, default_message = RATE_LIMITED, 429, "Too many requests"

    @classmethod
    def after(cls, retry_ms: int) -> "RateLimitExceeded":
        return cls(f"Too many requests; retry in {retry_ms} ms", {"retryAfterMs": retry_ms, "retryable": True})


class AccessDenied(ProtocolError, PermissionError):
    """The caller may not do this; kept a ``PermissionError`` so that in-process callers can catch it as one."""

    code, http_status, default_message = FORBIDDEN, 403, "Forbidden"
    #: Why, for the audit trail only (e.g. ``expired``); the caller never hears it.
    reason: str | None = None


class InvalidCredential(AccessDenied):
    """No credential, or one that does not verify (-32001, HTTP 401); the caller never learns why."""

    code, http_status, default_message = UNAUTHORIZED, 401, "Invalid or missing credential"


class TenantMismatch(AccessDenied):
    """The credential is valid but not for the tenant the call names (-32003, HTTP 403)."""

    default_message = "Credential is not valid for this tenant"


class InsufficientScope(AccessDenied):
    """The credential lacks a scope; ``required`` names what a step-up must ask for."""

    def __init__(self, required: frozenset[str] | set[str] | tuple[str, ...]) -> None:
        self.required = tuple(sorted(required))
        super().__init__("Insufficient scope", {"requiredScopes": list(self.required)})
