"""What the server lists, kept for what the client checks: tools, their schemas, paged lists.

A result is judged against the ``outputSchema`` the server declared, so the client must
remember the tool listing — and forget it when the server says it changed
(``notifications/tools/list_changed``) — and compile each schema once.  The same listing
says which arguments travel as ``Mcp-Param-*`` HTTP headers.  Paging (``nextCursor``)
is shared by every ``*/list`` method and refuses to loop on a cursor it has seen.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from ..schema import SchemaError, Validator

__all__ = ["Catalog", "pages", "MAX_PAGES"]

#: At most this many pages for one list (a cursor loop is a fault).
MAX_PAGES = 1000

Rpc = Callable[[str, "dict[str, Any] | None"], Awaitable[dict[str, Any]]]


async def pages(rpc: Rpc, method: str, key: str, params: dict[str, Any] | None = None) -> list[Any]:
    """Every item of a paged ``*/list`` answer, in order."""
    out: list[Any] = []
    cursor: Any = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        body = dict(params or {})
        if cursor is not None:
            body["cursor"] = cursor
        page = await rpc(method, body or None)
        items = page.get(key)
        if isinstance(items, list):
            out.extend(items)
        cursor = page.get("nextCursor")
        if not isinstance(cursor, str) or not cursor or cursor in seen:
            return out
        seen.add(cursor)
    return out


class Catalog:
    """The last tool listing and the validators compiled from it."""

    def __init__(self, rpc: Rpc) -> None:
        self._rpc = rpc
        #: name → tool as listed; ``None`` until listed (or after the server said the list changed)
        self.tools: dict[str, dict[str, Any]] | None = None
        self._validators: dict[str, Validator | None] = {}

    def invalidate(self) -> None:
        """The server's list changed: list again before the next call."""
        self.tools = None
        self._validators.clear()

    async def list_tools(self) -> list[dict[str, Any]]:
        tools = await pages(self._rpc, "tools/list", "tools")
        self.tools = {t["name"]: t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)}
        self._validators.clear()
        return tools

    async def tool(self, name: str) -> dict[str, Any] | None:
        if self.tools is None or name not in self.tools:
            await self.list_tools()  # first call, or the list may have changed since
        assert self.tools is not None
        return self.tools.get(name)

    def validator(self, name: str, tool: dict[str, Any] | None) -> Validator | None:
        if name in self._validators:
            return self._validators[name]
        schema = tool.get("outputSchema") if tool else None
        validator = None
        if isinstance(schema, dict):
            try:
                validator = Validator(schema)
            except SchemaError:
                validator = Validator({"not": {}})  # an unusable schema: nothing can be shown to match it
        self._validators[name] = validator
        return validator

    def param_headers(self, name: str, arguments: Any) -> dict[str, str]:
        """The ``x-mcp-header`` arguments of a ``tools/call``, as header suffix → value."""
        tool = (self.tools or {}).get(name)
        props = (tool or {}).get("inputSchema", {}).get("properties") if tool else None
        if not isinstance(props, dict) or not isinstance(arguments, dict):
            return {}
        out: dict[str, str] = {}
        for prop, spec in props.items():
            suffix = spec.get("x-mcp-header") if isinstance(spec, dict) else None
            value = arguments.get(prop)
            if isinstance(suffix, str) and value is not None:
                if isinstance(value, bool):
                    out[suffix] = "true" if value else "false"
                elif isinstance(value, (int, str)) or (isinstance(value, float) and value.is_integer()):
                    out[suffix] = str(int(value)) if isinstance(value, float) else str(value)
        return out
