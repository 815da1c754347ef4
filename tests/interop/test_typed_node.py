"""Typed tools seen by the Node clients (issue 15): the official TypeScript SDK lists the derived
schemas of examples/06_typed.py and calls every tool over stdio and Streamable HTTP (the SDK itself
checks ``structuredContent`` against ``outputSchema``), and the MCP Inspector CLI's ``--strict``
schema-portability check passes in both eras, for the example and for a tool using every supported
kind of annotation.  Node 22, the SDK and the Inspector are pinned in conformance/package.json
(``npm ci`` in conformance/, as scripts/test does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from http_support import served_with_token

from _paths import ROOT
CONF = ROOT / "conformance"
BIN = CONF / "node_modules" / ".bin"
NODE = BIN / "node"
INSPECTOR = CONF / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
SDK_CLIENT = CONF / "typed_client.mjs"
APP = ROOT / "examples" / "06_typed.py"
TOKEN = "typed-node-token"
PRINCIPAL = "dev@local,local,"

EVERY_KIND = '''
import dataclasses, enum
from typing import Annotated, Literal, Optional, TypedDict, Union
from msgspec import Meta
from truecall import Server, ToolContext

server = Server("every-kind")


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(TypedDict):
    street: str
    city: str


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


@server.tool
def every_kind(s: str, i: int, f: float, b: bool, maybe: Optional[int], either: Union[int, str],
               mode: Literal["fast", "slow"], color: Color, tags: list[str], counts: dict[str, int],
               pair: tuple[int, str], many: tuple[int, ...], unique: set[str], address: Address,
               point: Point, ctx: ToolContext,
               short: Annotated[str, Meta(min_length=1, max_length=8, pattern="^[a-z]+$")],
               ranged: Annotated[int, Meta(ge=1, le=10, description="One to ten")] = 5,
               nothing: None = None) -> Point:
    """Take one of every kind of annotation."""
    return Point(1.0)


@server.tool
def listed(n: int) -> list[Address]:
    """A list of typed dicts."""
    return []


@server.tool
def text_only(n: int) -> str:
    """Just text."""
    return str(n)
'''


def _env() -> dict[str, str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("TRUECALL_PRINCIPAL", None)
    return env


@pytest.fixture(scope="module", autouse=True)
def node_installed() -> None:
    assert NODE.exists() and INSPECTOR.exists(), "run `npm ci` in conformance/ (scripts/test does)"


@pytest.fixture(scope="module")
def typed_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with served_with_token(tmp_path_factory.mktemp("typed-node-http"), f"{APP}:server", TOKEN) as server:
        yield server


PLAN = {
    "calls": [["count_incidents", {"service": "payments"}],
              ["count_incidents", {"service": "checkout", "status": "all"}],
              ["open_incidents", {"service": "payments"}]],
    "resources": ["incidents://services"],
    "prompts": [["triage", {"service": "payments"}]],
}


def _expected() -> dict[str, Any]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("_typed_node_example", APP)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return {t.name: t.definition for t in module.server.registry.tools.values()}


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_typescript_sdk_lists_derived_schemas_and_calls_every_tool(kind: str, tmp_path: Path,
                                                                  request: pytest.FixtureRequest) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    env = _env()
    if kind == "stdio":
        env["TRUECALL_PRINCIPAL"] = PRINCIPAL
        target = ["--", sys.executable, "-m", "truecall", "serve", f"{APP}:server"]
    else:
        target = ["--url", request.getfixturevalue("typed_http").url, "--token", TOKEN]
    proc = subprocess.run([str(NODE), str(SDK_CLIENT), str(plan), *target], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    expected = _expected()
    tools = {t["name"]: t for t in out["tools"]}
    assert set(tools) == set(expected)
    for name, tool in tools.items():
        assert tool["inputSchema"] == expected[name]["inputSchema"]
        assert tool["outputSchema"] == expected[name]["outputSchema"]
    # (No isError call here: SDK 1.32.2 checks an error result's structuredContent against the
    # success outputSchema too and throws; tests/interop/test_typed_interop.py covers errors with the mcp client.)
    ok_open, ok_all, ids = out["calls"]
    assert "thrown" not in ok_open and ok_open.get("isError") in (None, False)
    assert ok_open["structuredContent"] == {"service": "payments", "status": "open", "count": 2}
    assert ok_all["structuredContent"] == {"service": "checkout", "status": "all", "count": 1}
    assert ids["structuredContent"] == {"result": ["INC-1", "INC-2"]}
    [read] = out["resources"]
    assert read["contents"][0]["text"] == "checkout\npayments\nsearch"
    [prompt] = out["prompts"]
    assert prompt["messages"][0]["content"]["text"].startswith("Triage the open incidents of payments")


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("app", ["example", "every-kind"])
def test_inspector_strict_schema_check_passes(era: str, app: str, tmp_path: Path) -> None:
    if app == "example":
        target = f"{APP}:server"
    else:
        path = tmp_path / "every_kind.py"
        path.write_text(EVERY_KIND)
        target = f"{path}:server"
    env = _env()
    env["MCP_CATALOG_PATH"] = str(tmp_path / "catalog")
    env["MCP_STORAGE_DIR"] = str(tmp_path / "storage")
    proc = subprocess.run([str(NODE), str(INSPECTOR), "--cli", "--method", "tools/list", "--strict",
                           "--protocol-era", era, "-e", f"TRUECALL_PRINCIPAL={PRINCIPAL}",
                           sys.executable, "-m", "truecall", "serve", target],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    listed = json.loads(proc.stdout[:proc.stdout.rindex("}") + 1])
    assert listed["tools"], proc.stdout
