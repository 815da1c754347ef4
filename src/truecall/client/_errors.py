"""A JSON-RPC error from any server, as the project's typed exception.

The server side maps each fault to a code (``truecall.errors``); this is the way
back, so callers catch ``InsufficientScope`` (with the scope to step up to) or
``UnknownTool`` instead of comparing numbers.  Codes no type claims stay a plain
:class:`ProtocolError` carrying the server's code, message and data.
"""

from __future__ import annotations

from typing import Any

from ..errors import (
    FORBIDDEN,
    INVALID_PARAMS,
    AccessDenied,
    HeaderMismatch,
    InsufficientScope,
    InternalError,
    ServiceUnavailable,
    InvalidCredential,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    MissingCapability,
    NotFound,
    ParseError,
    ProtocolError,
    RateLimitExceeded,
    TenantMismatch,
    UnknownTool,
    UnsupportedVersion,
)
from ..judge import says_unknown_tool

__all__ = ["from_wire", "unknown_tool", "says_unknown_tool", "ConnectionLost", "NotSent"]

#: 2025-06-18 / 2025-11-25 resource-not-found code.
RESOURCE_NOT_FOUND = -32002

#: The code each type answers with on the server side (``truecall.errors``), read back; -32602 and
#: -32003 carry several types and are told apart in :func:`from_wire`.
_SIMPLE: dict[int, type[ProtocolError]] = {
    cls.code: cls for cls in (ParseError, InvalidRequest, MethodNotFound, InternalError, HeaderMismatch,
                              MissingCapability, UnsupportedVersion, InvalidCredential, RateLimitExceeded)
}
_SIMPLE[RESOURCE_NOT_FOUND] = NotFound  # the handshake era's resource-not-found code


class ConnectionLost(ConnectionError):
    """The connection ended (the server exited, the network failed) with requests unanswered.

    ``reason`` says how (``"connection_lost"``, ``"server_exited"``, ``"http_502"``, ...: see ``_silence``)."""

    def __init__(self, message: str = "", reason: str = "connection_lost") -> None:
        super().__init__(message)
        self.reason = reason


class NotSent(ConnectionError):
    """The request never left this process (no connection could be made): nothing can have happened."""


def _text(value: Any, limit: int = 500) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None


def unknown_tool(name: str, message: str | None = None, data: Any = None) -> UnknownTool:
    exc = UnknownTool(name)
    if message:
        exc.message = message
        exc.args = (message,)
    exc.data = data
    return exc


def _scopes(data: Any) -> list[str] | None:
    if isinstance(data, dict):
        scopes = data.get("requiredScopes") or data.get("scopes")
        if isinstance(scopes, list) and all(isinstance(s, str) for s in scopes):
            return scopes
        if isinstance(scopes, str):
            return scopes.split()
    return None


def from_wire(error: Any, *, tool: str | None = None, method: str | None = None) -> ProtocolError:
    """The typed exception for a JSON-RPC ``error`` object (anything malformed is an internal error)."""
    if not isinstance(error, dict) or not isinstance(error.get("code"), int) or isinstance(error.get("code"), bool):
        return InternalError("The server sent a malformed error")
    code: int = error["code"]
    message = _text(error.get("message"))
    data = error.get("data")
    exc: ProtocolError
    if code == FORBIDDEN:
        scopes = _scopes(data)
        if scopes:
            exc = InsufficientScope(tuple(scopes))
            exc.data = data
        elif message and "tenant" in message.lower():
            exc = TenantMismatch(message, data)
        else:
            exc = AccessDenied(message, data)
        return exc
    if code == INVALID_PARAMS:
        if tool is not None and says_unknown_tool(message):
            return unknown_tool(tool, message, data)
        if method == "resources/read" and message and "not found" in message.lower():
            return NotFound(message, data)  # 2026-07-28's resource-not-found is -32602 (it was -32002)
        return InvalidParams(message, data)
    if code == InternalError.code and isinstance(data, dict) and data.get("retryable") is True:
        return ServiceUnavailable(message, data)  # an outage the server named: worth a retry later
    cls = _SIMPLE.get(code)
    if cls is not None:
        return cls(message, data)
    exc = ProtocolError(message or "Error", data)
    exc.code = code
    return exc
