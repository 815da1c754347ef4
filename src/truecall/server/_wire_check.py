"""Every result is checked against the MCP schema of its era before it leaves.

A tool, resource or prompt result that the official schema refuses makes the official client raise
instead of reading it (a ``ToolResult`` whose content is a bare string, a resource that returned a
``dict``): it is withheld, answered ``internal``, and the reason logged (logger ``truecall.server.tools``).

The hot path pays almost nothing: the shapes truecall's own builders make (text blocks, a dict of
structured content, contents with a ``uri`` and a ``text``) are recognised by a few type checks, and
only anything else — blocks a tool wrote by hand, images, embedded resources, ``_meta`` — meets the
compiled ``jsonschema-rs`` validator of the negotiated version's definition (compiled once per
version and definition, from the official schemas' definitions packaged in
``_schemas/results.json``; ``scripts/vendor_result_schemas.py`` derives it from ``spec/``).  The
fields the protocol layer adds after this check (``resultType``, a read's ``cacheScope``/``ttlMs``)
are not required of what is checked here.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

__all__ = ["tool_result_problems", "contents_problems", "prompt_problems", "log"]

log = logging.getLogger("truecall.server.tools")

#: Fields the engine adds to a result after it leaves the server's code: not required here.
_ADDED_LATER = frozenset({"resultType", "cacheScope", "ttlMs"})
#: The oldest version whose definitions stand in for versions without a vendored schema.
_FALLBACK = "2025-06-18"


@functools.lru_cache(maxsize=None)
def _definitions() -> dict[str, Any]:
    import importlib.resources

    import orjson

    data: dict[str, Any] = orjson.loads(
        importlib.resources.files("truecall").joinpath("_schemas/results.json").read_bytes())
    return data


@functools.lru_cache(maxsize=32)
def _validator(version: str | None, definition: str) -> Any:
    import jsonschema_rs

    eras = _definitions()
    # The version's own definitions; a version without them, the newest before it (the oldest for
    # older ones); none negotiated (in-process), the newest.
    earlier = [v for v in eras if version is None or v <= version]
    era = eras[max(earlier)] if earlier else eras[_FALLBACK]
    defs = dict(era["defs"])
    root = dict(defs[definition])
    root["required"] = [f for f in root.get("required", []) if f not in _ADDED_LATER]
    defs[definition] = root
    wrapper: dict[str, Any] = {"$ref": f"#/{era['key']}/{definition}", era["key"]: defs}
    if era.get("$schema"):
        wrapper["$schema"] = era["$schema"]
    return jsonschema_rs.validator_for(wrapper)


def _problems(value: dict[str, Any], version: str | None, definition: str) -> list[str]:
    try:
        errors = list(_validator(version, definition).iter_errors(value))
    except (ValueError, TypeError) as exc:  # a value JSON has no type for (bytes, an object…)
        return [f"not JSON: {type(exc).__name__}"]
    return [f"{'/'.join(str(p) for p in e.instance_path) or '(root)'}: {e.message[:200]}" for e in errors[:5]]


def _plain_text(block: Any) -> bool:
    return type(block) is dict and len(block) == 2 and block.get("type") == "text" and type(block.get("text")) is str


#: No problem found (shared: the hot path allocates nothing).
_NONE: list[str] = []


def tool_result_problems(result: Any, version: str | None) -> list[str]:
    """Why ``result`` (a :class:`~truecall.ToolResult`) is not a ``CallToolResult`` of ``version``;
    empty when it is.  (Written as one loop of type checks: it runs on every call.)"""
    content = result.content
    if type(content) is list and result.meta is None:
        for block in content:
            if type(block) is not dict or len(block) != 2 or block.get("type") != "text" \
                    or type(block.get("text")) is not str:
                break
        else:
            structured = result.structured_content
            if (structured is None or type(structured) is dict) and (result.is_error is False
                                                                      or result.is_error is True):
                return _NONE  # the shape truecall's builders make: nothing the schema could refuse
    return _problems(result.to_dict(), version, "CallToolResult")


def contents_problems(contents: Any, version: str | None) -> list[str]:
    """Why ``contents`` is not a ``ReadResourceResult``'s ``contents`` in ``version``."""
    if type(contents) is list and all(type(c) is dict and type(c.get("uri")) is str
                                      and (type(c.get("text")) is str or type(c.get("blob")) is str)
                                      and len(c) <= 3 for c in contents):
        if all(len(c) == 2 or type(c.get("mimeType")) is str for c in contents):
            return []
    return _problems({"contents": contents}, version, "ReadResourceResult")


def prompt_problems(result: Any, version: str | None) -> list[str]:
    """Why ``result`` is not a ``GetPromptResult`` of ``version``."""
    messages = result.get("messages") if type(result) is dict else None
    if type(messages) is list and all(type(m) is dict and len(m) == 2 and m.get("role") in ("user", "assistant")
                                      and _plain_text(m.get("content")) for m in messages) \
            and set(result) <= {"messages", "description"} and type(result.get("description", "")) is str:
        return []
    return _problems(result if type(result) is dict else {"messages": result}, version, "GetPromptResult")
