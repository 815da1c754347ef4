"""``truecall inspect APP``: what a client will see, without starting a transport.

Everything comes from the registry's precompiled definitions (the very dicts ``tools/list``,
``resources/list``, ``resources/templates/list`` and ``prompts/list`` answer with), so what is printed
is what is served; the scopes a caller needs are added beside them, outside the definitions.
"""

from __future__ import annotations

from typing import Any

__all__ = ["inventory", "render"]


def inventory(server: Any) -> dict[str, Any]:
    """The app's tools, resources, templates and prompts as the client's list answers give them."""
    reg = server.registry

    def entry(item: Any) -> dict[str, Any]:
        out = dict(item.definition)
        if item.scopes:
            out["requiredScopes"] = sorted(item.scopes)
        return out

    return {
        "server": {"name": server.name, "version": server.version},
        "tools": [entry(t) for t in reg.tools.values()],
        "resources": [entry(r) for r in reg.resources.values() if r.listed],
        "resourceTemplates": [entry(t) for t in reg.templates],
        "prompts": [entry(p) for p in reg.prompts.values()],
    }


def _json(value: Any) -> str:
    import orjson

    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def _params(schema: dict[str, Any] | None) -> str:
    """A one-line reading of an object schema: ``service: string, limit?: integer = 10``."""
    if not schema:
        return ""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    parts = []
    for name, sub in props.items():
        kind = sub.get("type") if isinstance(sub, dict) else None
        if isinstance(sub, dict) and isinstance(sub.get("enum"), list):
            kind = " | ".join(repr(v) for v in sub["enum"])
        elif kind is None and isinstance(sub, dict):
            if "$ref" in sub:
                kind = str(sub["$ref"]).rsplit("/", 1)[-1]
            elif "anyOf" in sub:
                kind = " | ".join(str(o.get("type") or str(o.get("$ref", "?")).rsplit("/", 1)[-1])
                                  for o in sub["anyOf"] if isinstance(o, dict))
            else:
                kind = "any"
        part = f"{name}{'' if name in required else '?'}: {kind}"
        if isinstance(sub, dict) and "default" in sub:
            part += f" = {sub['default']!r}"
        parts.append(part)
    return ", ".join(parts)


def _returns(schema: dict[str, Any] | None) -> str:
    if schema is None:
        return "content only"
    props = schema.get("properties") or {}
    if list(props) == ["result"] and schema.get("required") == ["result"]:
        return f"{{result: {_params({'properties': props, 'required': ['result']}).split(': ', 1)[1]}}}"
    return "{" + _params(schema) + "}" if props else str(schema.get("title") or "object")


def render(data: dict[str, Any], console: Any = None) -> None:
    """For people: a table of tools (arguments and result read out), then resources, templates and
    prompts, then each tool's schemas in full (what ``--json`` prints)."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console(markup=False, highlight=False)  # names and descriptions are data, not markup
    server = data["server"]
    tools = Table(title=f"{server['name']} {server['version']}: {len(data['tools'])} tools")
    for column in ("tool", "description", "arguments", "returns"):
        tools.add_column(column, overflow="fold")
    for t in data["tools"]:
        name = t["name"] + (f" [{', '.join(t['requiredScopes'])}]" if t.get("requiredScopes") else "")
        first = (t.get("description") or "").strip().splitlines()
        tools.add_row(name, first[0] if first else "", _params(t.get("inputSchema")), _returns(t.get("outputSchema")))
    console.print(tools)
    if data["resources"] or data["resourceTemplates"]:
        res = Table(title="resources")
        for column in ("uri", "name", "description", "mimeType"):
            res.add_column(column, overflow="fold")
        for r in data["resources"]:
            res.add_row(r["uri"], r["name"], r.get("description", ""), r.get("mimeType", ""))
        for r in data["resourceTemplates"]:
            res.add_row(r["uriTemplate"], r["name"], r.get("description", ""), r.get("mimeType", ""))
        console.print(res)
    if data["prompts"]:
        prompts = Table(title="prompts")
        for column in ("prompt", "description", "arguments"):
            prompts.add_column(column, overflow="fold")
        for p in data["prompts"]:
            args = ", ".join(a["name"] + ("" if a.get("required") else "?") for a in p.get("arguments", []))
            first = (p.get("description") or "").strip().splitlines()
            prompts.add_row(p["name"], first[0] if first else "", args)
        console.print(prompts)
    for t in data["tools"]:
        console.rule(t["name"])
        schemas = {"inputSchema": t["inputSchema"]}
        if "outputSchema" in t:
            schemas["outputSchema"] = t["outputSchema"]
        console.print_json(_json(schemas))
