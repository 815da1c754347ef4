"""A corpus of public FastMCP and ``MCPServer`` example files, ported by their import line only
(issue 26): each is registered, listed, every tool called with valid and with invalid arguments,
every resource read and every prompt got, through the official ``mcp`` client (which validates what
it receives), over stdio from ``truecall serve``.

The files in ``files/`` are verbatim copies (origin, commit and licence in ``SOURCES.json``; the
licences beside them).  The port is done here, at run time, and touches only import lines: the
names ``FastMCP``, ``MCPServer``, ``Context``, ``Image``, ``Audio`` and ``File`` imported from
``fastmcp`` or ``mcp.server.mcpserver`` are imported from ``truecall`` instead; every other line is
the author's.  The test passes when at least 90 % of the files work (``EXPECTED_TO_FAIL`` lists the
others, with why, and a file listed there that works fails the test: the list stays true).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from _paths import TESTS

#: The JSON-RPC error a tool answers when the user must open URLs first (2025-11-25).
URL_ELICITATION_REQUIRED = -32042

HERE = TESTS / "corpus"
FILES = sorted(p.name for p in (HERE / "files").glob("*.py"))
SOURCES = json.loads((HERE / "SOURCES.json").read_text())

#: The modules a ported import line named, and the names truecall offers under the same name.
_FROM = r"fastmcp(?:\.server(?:\.context)?|\.utilities\.types)?|mcp\.server\.(?:mcpserver|fastmcp)(?:\.utilities\.types)?"
_IMPORT = re.compile(rf"^from (?P<module>{_FROM}) import (?P<names>[\w, ]+)$", re.MULTILINE)
OURS = {"FastMCP", "MCPServer", "Context", "Image", "Audio", "File"}
_SERVER = re.compile(r"^(?P<name>\w+) = (?:FastMCP|MCPServer)\(", re.MULTILINE)

#: Files that do not work with an import-line-only port, and why (each one is checked to fail).
EXPECTED_TO_FAIL: dict[str, str] = {}


def port(source: str) -> tuple[str, list[str]]:
    """``source`` with its FastMCP import lines pointing at truecall, and the lines changed."""
    changed: list[str] = []

    def swap(m: re.Match[str]) -> str:
        names = [n.strip() for n in m.group("names").split(",") if n.strip()]
        ours = [n for n in names if n in OURS]
        theirs = [n for n in names if n not in OURS]
        if not ours:
            return m.group(0)
        lines = [f"from truecall import {', '.join(ours)}"]
        if theirs:
            lines.append(f"from {m.group('module')} import {', '.join(theirs)}")
        changed.append(m.group(0))
        return "\n".join(lines)

    return _IMPORT.sub(swap, source), changed


def valid_value(schema: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """A value ``schema`` accepts (the default when it has one)."""
    if not isinstance(schema, dict) or depth > 8:
        return "x"
    if "default" in schema:
        return schema["default"]
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return valid_value(defs.get(ref.rpartition("/")[2], {}), defs, depth + 1)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return valid_value(options[0], defs, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "integer":
        return max(1, int(schema.get("minimum", 1)))
    if kind == "number":
        return max(1.5, float(schema.get("minimum", 1.5)))
    if kind == "boolean":
        return True
    if kind == "array":
        return [valid_value(schema.get("items", {}), defs, depth + 1)] * max(1, schema.get("minItems", 1))
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: valid_value(v, defs, depth + 1) for k, v in props.items() if k in schema.get("required", props)}
    if schema.get("format") == "date-time":
        return "2026-01-02T03:04:05Z"
    return "abc"


def invalid_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments ``schema`` refuses: a required one missing, or a wrong type, or an unknown name."""
    valid = valid_value(schema, schema.get("$defs", {}))
    required = schema.get("required") or []
    if required:
        return {k: v for k, v in valid.items() if k != required[0]}
    props = schema.get("properties") or {}
    for name, prop in props.items():
        if isinstance(prop, dict) and prop.get("type") in ("integer", "number", "boolean", "array", "object"):
            return {**valid, name: "not-a-" + str(prop["type"])}
    return {**valid, "no_such_argument": 1}


async def _elicit(context: Any, params: Any) -> types.ElicitResult:
    schema = getattr(params, "requested_schema", None)
    if schema is None:
        return types.ElicitResult(action="accept")
    return types.ElicitResult(action="accept", content=valid_value(schema, schema.get("$defs", {})))


async def _sample(context: Any, params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="a poem"),
                                     model="test-model")


async def exercise(path: Path, attr: str, cwd: Path) -> list[str]:
    """Problems found serving ``path:attr`` (empty: it works)."""
    problems: list[str] = []
    (cwd / "Desktop").mkdir(exist_ok=True)  # HOME is cwd: the desktop examples list ~/Desktop
    (cwd / "Desktop" / "notes.txt").write_text("x")
    params = StdioServerParameters(command=sys.executable, args=["-m", "truecall", "serve", f"{path}:{attr}"],
                                   cwd=str(cwd), env={"TRUECALL_PRINCIPAL": "dev@local,local,",
                                                      "HOME": str(cwd)})
    async with Client(stdio_client(params), mode="legacy", read_timeout_seconds=30, elicitation_callback=_elicit,
                      sampling_callback=_sample) as client:
        tools = (await client.list_tools()).tools
        for resource in (await client.list_resources()).resources:
            try:
                await client.read_resource(str(resource.uri))
            except MCPError as exc:
                problems.append(f"resource {resource.uri}: {exc}")
        await client.list_resource_templates()
        for prompt in (await client.list_prompts()).prompts:
            arguments = {a.name: "abc" for a in prompt.arguments or [] if a.required}
            try:
                got = await client.get_prompt(prompt.name, arguments)
            except MCPError as exc:
                problems.append(f"prompt {prompt.name}: {exc}")
            else:
                if not got.messages:
                    problems.append(f"prompt {prompt.name}: no messages")
        for tool in tools:
            schema = tool.input_schema
            arguments = valid_value(schema, schema.get("$defs", {}))
            try:
                result = await client.call_tool(tool.name, arguments)
            except MCPError as exc:
                if exc.code == URL_ELICITATION_REQUIRED:  # the tool's designed answer (the SDK's example)
                    continue
                raise
            if result.is_error:
                problems.append(f"{tool.name}{arguments}: {result.content[0].text if result.content else result}")
            wrong = await client.call_tool(tool.name, invalid_arguments(schema))
            if not wrong.is_error:
                problems.append(f"{tool.name}: invalid arguments {invalid_arguments(schema)} were not refused")
    return problems


@pytest.mark.parametrize("name", FILES)
def test_a_ported_file_registers_lists_and_answers_every_tool(name: str, tmp_path: Path) -> None:
    source = (HERE / "files" / name).read_text(encoding="utf-8")
    ported, changed = port(source)
    assert changed, f"{name}: no import line to port"
    assert len(ported.splitlines()) - len(source.splitlines()) <= len(changed)  # import lines only
    found = _SERVER.search(ported)
    assert found, f"{name}: no server object"
    target = tmp_path / name
    target.write_text(ported, encoding="utf-8")
    problems = anyio.run(exercise, target, found.group("name"), tmp_path)
    if name in EXPECTED_TO_FAIL:
        assert problems, f"{name} works now: take it off EXPECTED_TO_FAIL"
        return
    assert not problems, problems


def test_the_corpus_is_big_enough_and_mostly_works() -> None:
    assert len(FILES) >= 20 and set(FILES) == set(SOURCES)
    assert len(EXPECTED_TO_FAIL) <= len(FILES) // 10, "fewer than 90 % of the files work with their import line ported"
    for name, source in SOURCES.items():
        assert source["licence"] in ("MIT", "Apache-2.0") and (HERE / source["licence_file"]).is_file()
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])


def test_the_guide_lists_what_each_file_needed() -> None:
    from _paths import ROOT

    guide = (ROOT / "docs" / "guide" / "fastmcp.md").read_text(encoding="utf-8")
    missing = [name for name in FILES if f"| `{name}` |" not in guide]
    assert not missing, f"docs/guide/fastmcp.md's corpus table lacks {missing}"
