"""Validate what the server sends against the official MCP JSON Schemas (tests only).

The schemas are vendored in the repository, ``spec/<version>/schema.json`` (source, commit and
licence in ``spec/README.md``).  ``check(message, version)`` picks the
definition from the message's shape; ``check_result(result, "CallToolResult", v)``
validates a bare result against a named definition.
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema_rs
import orjson

from _paths import ROOT

SPEC_DIR = ROOT / "spec"


@functools.lru_cache(maxsize=None)
def _schema(version: str) -> dict[str, Any]:
    return orjson.loads((SPEC_DIR / version / "schema.json").read_bytes())


@functools.lru_cache(maxsize=None)
def validator(version: str, definition: str) -> Any:
    schema = _schema(version)
    defs_key = "$defs" if "$defs" in schema else "definitions"
    if definition not in schema[defs_key]:
        raise KeyError(f"{definition} is not defined in the {version} schema")
    wrapper = {"$ref": f"#/{defs_key}/{definition}", defs_key: schema[defs_key]}
    if "$schema" in schema:
        wrapper["$schema"] = schema["$schema"]
    return jsonschema_rs.validator_for(wrapper)


def check_result(result: Any, definition: str, version: str) -> None:
    """Raise AssertionError unless ``result`` is a valid ``definition`` of ``version``."""
    v = validator(version, definition)
    errors = [f"{list(e.instance_path)}: {e.message}" for e in v.iter_errors(result)]
    assert not errors, f"{definition} ({version}) invalid: {errors[:5]}\n{orjson.dumps(result)[:2000]!r}"


def _envelope(version: str, kind: str) -> str:
    names = {
        "2025-06-18": {"result": "JSONRPCResponse", "error": "JSONRPCError", "notification": "JSONRPCNotification",
                       "request": "JSONRPCRequest"},
    }.get(version, {"result": "JSONRPCResultResponse", "error": "JSONRPCErrorResponse",
                    "notification": "JSONRPCNotification", "request": "JSONRPCRequest"})
    name = names[kind]
    try:
        validator(version, name)
    except KeyError:
        name = {"result": "JSONRPCResponse", "error": "JSONRPCError"}.get(kind, name)
    return name


NOTIFICATION_PARAMS = {
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
    "notifications/cancelled": "CancelledNotification",
}
REQUEST_TYPES = {
    "elicitation/create": "ElicitRequest",
    "sampling/createMessage": "CreateMessageRequest",
    "roots/list": "ListRootsRequest",
    "ping": "PingRequest",
}


def check(message: dict[str, Any], version: str, result_type: str | None = None) -> None:
    """Validate one server-sent message: envelope, then its result/notification/request type."""
    if "method" in message and "id" in message:
        check_result(message, _envelope(version, "request"), version)
        specific = REQUEST_TYPES.get(message["method"])
        if specific:
            check_result(message, specific, version)
        return
    if "method" in message:
        check_result(message, _envelope(version, "notification"), version)
        specific = NOTIFICATION_PARAMS.get(message["method"])
        if specific:
            try:
                validator(version, specific)
            except KeyError:
                return
            check_result(message, specific, version)
        return
    if "error" in message:
        check_result(message, _envelope(version, "error"), version)
        return
    check_result(message, _envelope(version, "result"), version)
    if result_type:
        check_result(message["result"], result_type, version)
