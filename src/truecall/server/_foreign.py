"""Results written for FastMCP or the SDK, read as what they say.

A tool ported from FastMCP may return ``mcp.types.CallToolResult``, fastmcp's ``ToolResult``,
``Image``/``Audio``/``File``, or content-block models (``TextContent`` …).  Each is a *result*,
never data: its ``content``, ``structuredContent``, ``isError`` and ``_meta`` pass through as the
tool wrote them (and are then checked against the MCP schema like any hand-written result).
Neither library is imported here: a value can only be one of theirs if the tool's module
imported it.
"""

from __future__ import annotations

from typing import Any

from ..results import ToolResult, text

__all__ = ["is_result_type", "foreign_result", "content_block", "content_blocks"]

#: Class names, in ``mcp``/``fastmcp`` modules, that are a whole result.
_RESULT_NAMES = frozenset({"CallToolResult", "ToolResult"})
#: Class names, in ``mcp``/``fastmcp`` modules, that are one content block (or stand for one).
_BLOCK_NAMES = frozenset({"TextContent", "ImageContent", "AudioContent", "EmbeddedResource", "ResourceLink",
                          "Image", "Audio", "File"})
_THEIRS = ("mcp.", "mcp_types", "fastmcp.", "truecall.")


def _theirs(cls: Any) -> bool:
    module = getattr(cls, "__module__", "") or ""
    return module.startswith(_THEIRS) or module == "mcp"


def is_result_type(hint: Any) -> bool:
    """Whether a return annotation names a result or a content block rather than data (its values
    pass through instead of being published as ``structuredContent`` with its schema)."""
    if hint is ToolResult:
        return True
    if not isinstance(hint, type):
        return False
    from ..media import _Media

    if issubclass(hint, _Media):
        return True
    return hint.__name__ in (_RESULT_NAMES | _BLOCK_NAMES) and _theirs(hint)


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def content_block(item: Any) -> Any:
    """One content block from what a tool put in its content: a dict as it is (the schema check
    judges it), a str as text, a media object or a content model as its block."""
    if type(item) is dict:
        return item
    if isinstance(item, str):
        return text(item)
    to_block = getattr(item, "to_block", None)
    if to_block is not None and _theirs(type(item)):
        return to_block()
    cls = type(item)
    if cls.__name__ in _BLOCK_NAMES and _theirs(cls):
        for name in ("to_image_content", "to_audio_content", "to_resource_content"):
            convert = getattr(item, name, None)
            if convert is not None:
                return content_block(convert())
        if hasattr(item, "model_dump"):
            return _dump(item)
    return item  # not a block: the schema check withholds it, naming why


def content_blocks(items: Any) -> list[Any]:
    return [content_block(item) for item in items]


def foreign_result(out: Any) -> ToolResult | None:
    """``out`` as a :class:`ToolResult` when it is one of theirs (a result, a media object, a content
    block model), else ``None``."""
    cls = type(out)
    if not _theirs(cls):
        return None
    name = cls.__name__
    if name == "CallToolResult" and hasattr(out, "model_dump"):
        data = _dump(out)
        structured = data.get("structuredContent")
        return ToolResult(content_blocks(data.get("content") or []), structured,
                          bool(data.get("isError")), data.get("_meta"))
    if name == "ToolResult" and hasattr(out, "content"):  # fastmcp's: content, structured_content, meta
        content = out.content
        content = [content] if not isinstance(content, list) else content
        meta = getattr(out, "meta", None)
        return ToolResult(content_blocks(content), getattr(out, "structured_content", None),
                          bool(getattr(out, "is_error", False)), meta if meta else None)
    if name in _BLOCK_NAMES:
        block = content_block(out)
        return ToolResult([block]) if block is not out else None
    return None
