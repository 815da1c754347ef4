"""JSON-RPC 2.0 framing: bytes in, checked messages out; messages in, bytes out.

No I/O here.  Every malformed input maps to a :class:`ProtocolError` carrying
the id when it could be read, so the transport can answer exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import InvalidRequest, ParseError, ProtocolError

__all__ = [
    "Limits",
    "Incoming",
    "decode",
    "encode",
    "result_message",
    "error_message",
    "notification",
    "request",
    "REQUEST",
    "NOTIFICATION",
    "RESPONSE",
]

REQUEST, NOTIFICATION, RESPONSE = "request", "notification", "response"


@dataclass(frozen=True, slots=True)
class Limits:
    """What one message may be: bytes and nesting depth."""

    max_bytes: int = 4 * 1024 * 1024
    max_depth: int = 64


DEFAULT_LIMITS = Limits()


class Incoming:
    """One decoded message: a request, a notification or a response (to our request)."""

    __slots__ = ("kind", "id", "method", "params", "raw")

    def __init__(self, kind: str, id: Any, method: str | None, params: Any, raw: dict[str, Any]) -> None:
        self.kind, self.id, self.method, self.params, self.raw = kind, id, method, params, raw

    def __repr__(self) -> str:
        return f"Incoming({self.kind}, id={self.id!r}, method={self.method!r})"


class MessageError(ProtocolError):
    """A message we must answer with an error; ``id`` is what we could read of it."""

    def __init__(self, cause: ProtocolError, id: Any = None) -> None:
        super().__init__(cause.message, cause.data)
        self.code, self.http_status, self.id = cause.code, cause.http_status, id


def _depth_ok(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))
    return True


def decode(data: bytes | str, limits: Limits = DEFAULT_LIMITS) -> Incoming:
    """Parse and check one JSON-RPC message.

    Raises :class:`MessageError` (with the request id when readable) for anything
    that must be answered with an error, including batches, which the MCP versions
    we speak do not allow.
    """
    if len(data) > limits.max_bytes:
        raise MessageError(InvalidRequest("Message too large"))
    try:
        msg = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "recursion" in str(exc):  # valid JSON, nested deeper than the parser goes: too deep, not unparseable
            raise MessageError(InvalidRequest("Message is nested too deeply")) from None
        raise MessageError(ParseError()) from None
    if isinstance(msg, list):
        raise MessageError(InvalidRequest("Batches are not supported"))
    if not isinstance(msg, dict):
        raise MessageError(InvalidRequest())
    raw_id = msg.get("id")
    # MCP's RequestId: a string or an integer (never null, a float or a boolean; JSON gives exact
    # types, so no bool passes as an int).  ``id`` is None exactly when the raw id is not one.
    id = raw_id if type(raw_id) is int or type(raw_id) is str else None
    if msg.get("jsonrpc") != "2.0":
        raise MessageError(InvalidRequest("jsonrpc must be \"2.0\""), id)
    # Only a message with more brackets than the depth limit can be too deep: count them in C first.
    if (isinstance(data, bytes) and data.count(b"{") + data.count(b"[") > limits.max_depth
            or isinstance(data, str)) and not _depth_ok(msg, limits.max_depth):
        raise MessageError(InvalidRequest("Message is nested too deeply"), id)
    method = msg.get("method")
    if method is not None:
        if not isinstance(method, str) or not method:
            raise MessageError(InvalidRequest("method must be a string"), id)
        params = msg.get("params")
        if params is not None and not isinstance(params, dict):
            raise MessageError(InvalidRequest("params must be an object"), id)
        if "id" not in msg:
            return Incoming(NOTIFICATION, None, method, params, msg)
        if id is None:
            raise MessageError(InvalidRequest("id must be a string or an integer"))
        return Incoming(REQUEST, id, method, params, msg)
    if "result" in msg or "error" in msg:
        if id is None:
            raise MessageError(InvalidRequest("response id must be a string or an integer"))
        return Incoming(RESPONSE, id, None, None, msg)
    raise MessageError(InvalidRequest(), id)


def encode(message: dict[str, Any]) -> bytes:
    """One message as JSON; a message that is not JSON-encodable (a tool's bad output)
    becomes an internal error for the same id rather than a dropped answer."""
    try:
        return orjson.dumps(message)
    except (TypeError, orjson.JSONEncodeError):
        from ..errors import InternalError

        return orjson.dumps(error_message(message.get("id"), InternalError()))


def result_message(id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error_message(id: Any, error: ProtocolError | dict[str, Any]) -> dict[str, Any]:
    body = error.to_error() if isinstance(error, ProtocolError) else error
    if id is None:  # the id could not be read: MCP omits it rather than sending null
        return {"jsonrpc": "2.0", "error": body}
    return {"jsonrpc": "2.0", "id": id, "error": body}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def request(id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg
