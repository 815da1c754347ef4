"""Compiled JSON Schema 2020-12 validators with messages safe to send back.

``jsonschema-rs`` messages quote the offending value, which may be a secret the
user typed; we build our own from the error's keyword and path instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import jsonschema_rs

__all__ = ["Validator", "Violation", "SchemaError", "EMPTY_OBJECT_SCHEMA"]

EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object"}


class SchemaError(ValueError):
    """A schema given at registration is not a valid JSON Schema for its use."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One way an instance fails its schema, without the instance's values."""

    path: str  # JSON Pointer-ish, "" for the root
    keyword: str
    message: str

    @property
    def missing(self) -> bool:
        return self.keyword == "required"


def _field(path: list[Any]) -> str:
    return "/".join(str(p)[:64] for p in path)


def _declared_at(schema: Mapping[str, Any], path: list[Any]) -> list[str]:
    """The property names the (sub)schema at ``path`` (a validation error's schema path) declares."""
    node: Any = schema
    for step in path:
        if isinstance(node, Mapping):
            node = node.get(step)
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
        else:
            return []
    props = node.get("properties") if isinstance(node, Mapping) else None
    return [str(name)[:64] for name in props] if isinstance(props, Mapping) else []


def _describe(err: Any, schema: Mapping[str, Any] | None = None) -> Violation:
    kind_name = type(err.kind).__name__
    keyword = (err.schema_path[-1] if err.schema_path else kind_name)
    keyword = str(keyword) if not isinstance(keyword, int) else kind_name.lower()
    path = list(err.instance_path)
    where = _field(path) or "(root)"
    if kind_name == "Required":
        name = str(getattr(err.kind, "property", ""))[:64]
        full = _field(path + [name]) if name else where
        return Violation(full, "required", f"required field '{full}' is missing")
    if kind_name == "AdditionalProperties":
        # The client's own key names are never quoted back (a key can be a secret a caller pasted in the
        # wrong place, and this message is stored with a task's result): how many, and the names the
        # schema declares there — what a model needs to fix a typo.
        from .audit.redaction import UNDECLARED

        count = len(getattr(err.kind, "unexpected", []) or [])
        declared = _declared_at(schema, list(err.schema_path)[:-1]) if schema is not None else []
        takes = f"; it takes: {', '.join(declared[:20])}" if declared else "; it takes no other field"
        return Violation(where, "additionalProperties",
                         f"unexpected field(s) at {where}: {count} {UNDECLARED}{takes}")
    if kind_name == "Type":
        types = getattr(err.kind, "types", None) or getattr(err.kind, "expected", None)
        expected = f" (expected {types})" if isinstance(types, (str, list)) else ""
        return Violation(where, "type", f"field '{where}' has the wrong type{expected}")
    readable = {
        "minLength": "is too short",
        "maxLength": "is too long",
        "pattern": "does not match the expected pattern",
        "enum": "is not one of the allowed values",
        "const": "is not the allowed value",
        "minimum": "is below the minimum",
        "maximum": "is above the maximum",
        "exclusiveMinimum": "is below the minimum",
        "exclusiveMaximum": "is above the maximum",
        "format": "is not in the expected format",
        "minItems": "has too few items",
        "maxItems": "has too many items",
        "uniqueItems": "has duplicate items",
        "minProperties": "has too few fields",
        "maxProperties": "has too many fields",
        "multipleOf": "is not an allowed multiple",
    }.get(keyword, "is not valid")
    return Violation(where, keyword, f"field '{where}' {readable}")


#: An instance the validator cannot even read: bytes, sets, objects, text with lone surrogates.
NOT_JSON = Violation("(root)", "type", "arguments hold a value that is not valid JSON")


class Validator:
    """A JSON Schema compiled once, at registration; checked per call."""

    __slots__ = ("schema", "_compiled", "required")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        if not isinstance(schema, Mapping):
            raise SchemaError("a schema must be a JSON object")
        self.schema = dict(schema)
        try:
            self._compiled = jsonschema_rs.Draft202012Validator(self.schema)
        except Exception as exc:  # the library raises ValueError or its own errors
            raise SchemaError(f"invalid JSON Schema: {exc}") from None
        req = self.schema.get("required", ())
        self.required: tuple[str, ...] = tuple(r for r in req if isinstance(r, str)) if isinstance(req, list) else ()

    def is_valid(self, instance: Any) -> bool:
        try:
            return self._compiled.is_valid(instance)
        except ValueError:  # not JSON at all (bytes, a set, a lone surrogate): not valid either
            return False

    def violations(self, instance: Any, limit: int = 10) -> list[Violation]:
        out = []
        try:
            for err in self._compiled.iter_errors(instance):
                out.append(_describe(err, self.schema))
                if len(out) >= limit:
                    break
        except ValueError as exc:
            if "recursion" in str(exc).lower():
                raise  # too deep: the caller decides how to say so
            return [NOT_JSON]
        return out

    def missing_required(self, instance: Any) -> list[str]:
        """Top-level required fields absent or empty ("", [], {}, null): both count as missing."""
        if not isinstance(instance, dict):
            return list(self.required)
        return [f for f in self.required if instance.get(f) in (None, "", [], {})]
