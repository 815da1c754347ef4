"""Arguments made from a tool's input schema: plausible ones, and deliberately wrong ones."""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


def _of(data: dict[str, Any], key: str, kind: type[T], default: T) -> T:
    """``data[key]`` when it is a ``kind``, else ``default``: what a server sent is never trusted to
    have the shape the schema gives it."""
    value = data.get(key)
    return value if isinstance(value, kind) else default


def example(schema: Any, depth: int = 0) -> Any:
    """A plausible value for ``schema`` (required properties only; the first of any choice)."""
    if not isinstance(schema, dict) or depth > 6:
        return "probe"
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            options = [s for s in schema[key] if not (isinstance(s, dict) and s.get("type") == "null")]
            return example((options or schema[key])[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        props = _of(schema, "properties", dict, {})
        required = _of(schema, "required", list, [])
        return {name: example(props.get(name), depth + 1) for name in required if isinstance(name, str)}
    if kind == "array":
        count = _of(schema, "minItems", int, 0)
        return [example(schema.get("items"), depth + 1) for _ in range(min(count, 3))]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        value = low + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0) \
            if isinstance(low, (int, float)) and not isinstance(low, bool) else 1
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    fmt = schema.get("format")
    text = {"email": "probe@example.com", "uri": "https://example.com/", "url": "https://example.com/",
            "date": "2026-01-01", "date-time": "2026-01-01T00:00:00Z", "uuid": "00000000-0000-4000-8000-000000000000",
            }.get(fmt if isinstance(fmt, str) else "", "probe")
    low = schema.get("minLength")
    if isinstance(low, int) and len(text) < low:
        text = text + "x" * (low - len(text))
    return text


def _wrong(value: Any) -> Any:
    """A value of another JSON type than ``value``'s."""
    if isinstance(value, str):
        return 12345
    return "not-a-" + type(value).__name__ if not isinstance(value, bool) else "yes"
