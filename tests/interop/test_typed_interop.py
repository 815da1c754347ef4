"""A server file written the FastMCP way (examples/06_typed.py: plain typed functions, a TypedDict
return, a Literal parameter, a default, an async tool, a resource, a prompt returning str) served by
``truecall serve`` over stdio and Streamable HTTP, driven by the official ``mcp`` client in both
eras: it lists the derived schemas, calls every tool, reads the resource and gets the prompt, and
every message the server sent validates against the official schema of the negotiated version."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, Iterator

import anyio
import mcp_types as types
import orjson
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from http_support import served_with_token
from test_interop_sdk import MODES, VERSION, Recorded, _http, check_all

from _paths import EXAMPLES

APP = EXAMPLES / "06_typed.py"
TOKEN = "typed-interop-token"


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("_typed_example", APP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.server


@pytest.fixture(scope="module")
def typed_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with served_with_token(tmp_path_factory.mktemp("typed-http"), f"{APP}:server", TOKEN) as server:
        yield server


def _transport(kind: str, tmp_path: Path, http: Any) -> Recorded:
    if kind == "stdio":
        params = StdioServerParameters(command=sys.executable, args=["-m", "truecall", "serve", f"{APP}:server"],
                                       env={"TRUECALL_PRINCIPAL": "dev@local,local,"}, cwd=str(tmp_path))
        return Recorded(stdio_client(params))
    return Recorded(_http(http.url, TOKEN))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_official_client_lists_derived_schemas_and_calls_every_tool(kind: str, mode: str, tmp_path: Path,
                                                                    request: pytest.FixtureRequest) -> None:
    http = request.getfixturevalue("typed_http") if kind == "http" else None
    expected = {t.name: t.definition for t in _example().registry.tools.values()}
    recorded = _transport(kind, tmp_path, http)

    async def main() -> None:
        async with Client(recorded, mode=mode, read_timeout_seconds=30) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed) == {"count_incidents", "open_incidents"}
            for name, tool in listed.items():
                assert tool.input_schema == expected[name]["inputSchema"]
                assert tool.output_schema == expected[name]["outputSchema"]
                assert tool.description == expected[name]["description"]
            status = listed["count_incidents"].input_schema["properties"]["status"]
            assert status["enum"] == ["open", "closed", "all"] and status["default"] == "open"
            assert listed["count_incidents"].input_schema["required"] == ["service"]

            counted = await client.call_tool("count_incidents", {"service": "payments", "status": "all"})
            assert counted.is_error is False
            assert counted.structured_content == {"service": "payments", "status": "all", "count": 3}
            assert isinstance(counted.content[0], types.TextContent)
            assert orjson.loads(counted.content[0].text) == counted.structured_content
            default = await client.call_tool("count_incidents", {"service": "payments"})
            assert default.structured_content == {"service": "payments", "status": "open", "count": 2}
            wrong = await client.call_tool("count_incidents", {"service": "payments", "status": "done"})
            assert wrong.is_error is True
            refused = await client.call_tool("count_incidents", {"service": "billing"})
            assert refused.is_error is True and refused.structured_content["error"]["known"] == [
                "checkout", "payments", "search"]
            listed_ids = await client.call_tool("open_incidents", {"service": "payments", "limit": 1})
            assert listed_ids.is_error is False and listed_ids.structured_content == {"result": ["INC-1"]}

            resources = (await client.list_resources()).resources
            assert [(str(r.uri), r.name, r.description) for r in resources] == [
                ("incidents://services", "services", "The services this server knows, one per line.")]
            read = await client.read_resource("incidents://services", cache_mode="bypass")
            assert read.contents[0].text == "checkout\npayments\nsearch"

            prompts = (await client.list_prompts()).prompts
            assert [(p.name, [(a.name, a.required) for a in p.arguments or []]) for p in prompts] == [
                ("triage", [("service", True)])]
            got = await client.get_prompt("triage", {"service": "payments"})
            assert got.messages[0].role == "user"
            assert got.messages[0].content.text.startswith("Triage the open incidents of payments")

    anyio.run(main)
    assert check_all(recorded.messages, VERSION[mode]) > 0
