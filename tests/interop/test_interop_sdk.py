"""Interop: the official ``mcp`` 2.3.0 SDK ``Client`` drives truecall over stdio and Streamable HTTP.

Both eras: ``mode="legacy"`` (initialize handshake, negotiates 2025-11-25) and ``mode="2026-07-28"``
(stateless; elicitation arrives as an ``input_required`` result that the SDK's driver answers
through the same ``elicitation_callback`` and retries).

HTTP credentials: ``Client(url)`` has no header option in 2.3.0; ``streamable_http_client(url,
http_client=httpx2.AsyncClient(headers=...))`` does (the SDK's HTTP stack is ``httpx2``), and
``Client`` takes that transport as is.

Every message the server sends is recorded below the SDK (a tap on the transport's read stream)
and validated against the official schema of the negotiated version.
"""

from __future__ import annotations

import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import anyio
import httpx2
import mcp_types as types
import orjson
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

import mcp_schema
from http_support import APP_DB_ENV, LEGACY, MODERN, OPERATOR, served, write_progress_app

MODES = ["legacy", MODERN]
TRANSPORTS = ["stdio", "http"]
#: What each era negotiates with this server.
VERSION = {"legacy": LEGACY, MODERN: MODERN}
#: Principals as stdio configuration (TRUECALL_PRINCIPAL) and as HTTP demo tokens.
PRINCIPALS = {
    "operator": ("newton@acme,acme,incidents:read incidents:write", OPERATOR),
    "reader": ("alice@acme,acme,incidents:read", "demo-acme-reader"),
    "globex": ("grace@globex,globex,incidents:read", "demo-globex-reader"),
}
#: resources/read of something the caller may not see: -32002 in the handshake era, -32602 in 2026.
NOT_FOUND = {"legacy": -32002, MODERN: -32602}


# -- recording every server message -----------------------------------------------------


class _Tap:
    """A read stream that records each server message before the SDK sees it."""

    def __init__(self, inner: Any, record: list[Any]) -> None:
        self._inner, self._record = inner, record

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    def _keep(self, item: Any) -> Any:
        if isinstance(item, SessionMessage):
            self._record.append(item.message.model_dump(by_alias=True, mode="json", exclude_unset=True))
        else:
            self._record.append(item)  # a transport-level exception: the test fails on it
        return item

    async def receive(self) -> Any:
        return self._keep(await self._inner.receive())

    def __aiter__(self) -> "_Tap":
        return self

    async def __anext__(self) -> Any:
        return self._keep(await self._inner.__anext__())

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> "_Tap":
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)


class Recorded:
    """Wraps a transport; ``messages`` holds what the server sent, as JSON."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.messages: list[Any] = []

    async def __aenter__(self) -> Any:
        read, write = await self.inner.__aenter__()
        return _Tap(read, self.messages), write

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.inner.__aexit__(*exc)


_RESULT_TYPES = [("protocolVersion", "InitializeResult"), ("tools", "ListToolsResult"),
                 ("contents", "ReadResourceResult"), ("content", "CallToolResult")]


def check_all(messages: list[Any], version: str) -> int:
    """Validate every recorded server message; returns how many there were."""
    for message in messages:
        assert isinstance(message, dict), f"transport error instead of a message: {message!r}"
        result_type = None
        result = message.get("result")
        if isinstance(result, dict):
            if result.get("resultType") == "input_required":
                result_type = "InputRequiredResult"
            else:
                result_type = next((t for key, t in _RESULT_TYPES if key in result), None)
        mcp_schema.check(message, version, result_type)
    return len(messages)


# -- connecting -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def desk_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with served(tmp_path_factory.mktemp("desk-sdk")) as server:
        yield server


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("progress-app-sdk")


@pytest.fixture(scope="module")
def app_http(app_dir: Path) -> Iterator[Any]:
    path, db = write_progress_app(app_dir)
    with served(app_dir, f"{path}:app", env={APP_DB_ENV: str(db)}) as server:
        yield server


@asynccontextmanager
async def _http(url: str, token: str | None) -> AsyncIterator[Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=60.0)) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


def stdio_transport(workdir: Path, principal: str = "operator", app: list[str] | None = None,
                    env: dict[str, str] | None = None) -> Any:
    workdir.mkdir(parents=True, exist_ok=True)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "truecall", "serve", *(app or [])],
        env={"TRUECALL_DB": str(workdir / "desk.db"), "TRUECALL_PRINCIPAL": PRINCIPALS[principal][0], **(env or {})},
        cwd=str(workdir),
    )
    return stdio_client(params)


class Harness:
    """Opens SDK clients on one transport/mode and checks every message they received."""

    def __init__(self, transport: str, mode: str, tmp_path: Path, desk: Any | None) -> None:
        self.transport, self.mode, self.tmp_path, self.desk = transport, mode, tmp_path, desk
        self.recordings: list[Recorded] = []

    def transport_for(self, principal: str = "operator") -> Recorded:
        if self.transport == "stdio":
            inner = stdio_transport(self.tmp_path / "stdio", principal)
        else:
            inner = _http(self.desk.url, PRINCIPALS[principal][1])
        recorded = Recorded(inner)
        self.recordings.append(recorded)
        return recorded

    def client(self, principal: str = "operator", **kwargs: Any) -> Client:
        kwargs.setdefault("read_timeout_seconds", 30)
        return Client(self.transport_for(principal), mode=self.mode, **kwargs)

    def check(self) -> None:
        total = sum(check_all(r.messages, VERSION[self.mode]) for r in self.recordings)
        assert total > 0


@pytest.fixture(params=[(t, m) for t in TRANSPORTS for m in MODES], ids=lambda p: f"{p[0]}-{p[1]}")
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    transport, mode = request.param
    desk = request.getfixturevalue("desk_http") if transport == "http" else None
    h = Harness(transport, mode, tmp_path, desk)
    yield h
    h.check()


async def read_incident(client: Client, uri: str) -> dict[str, Any]:
    result = await client.read_resource(uri, cache_mode="bypass")
    [content] = result.contents
    assert isinstance(content, types.TextResourceContents)
    return orjson.loads(content.text)


# -- tests ------------------------------------------------------------------------------------


def test_list_tools_and_search(harness: Harness) -> None:
    async def main() -> None:
        async with harness.client() as client:
            assert client.protocol_version == VERSION[harness.mode]
            listed = await client.list_tools()
            by_name = {t.name: t for t in listed.tools}
            assert set(by_name) == {"incident.search", "incident.escalate", "incident.handle", "incident.reconcile"}
            assert by_name["incident.search"].output_schema["required"] == ["service", "count", "tenant"]
            result = await client.call_tool("incident.search", {"service": "payments"})
            assert result.is_error is False
            assert result.structured_content == {"service": "payments", "count": 2, "tenant": "acme"}
            assert isinstance(result.content[0], types.TextContent)

    anyio.run(main)


def test_tenant_isolation(harness: Harness) -> None:
    async def main() -> None:
        async with harness.client("globex") as client:
            result = await client.call_tool("incident.search", {"service": "payments"})
            assert result.structured_content == {"service": "payments", "count": 1, "tenant": "globex"}
            # Another tenant's incident is a protocol error that reads exactly like a missing one.
            with pytest.raises(MCPError) as exc:
                await client.read_resource("incident://acme/INC-1001", cache_mode="bypass")
            assert exc.value.code == NOT_FOUND[harness.mode]
            with pytest.raises(MCPError) as missing:
                await client.read_resource("incident://globex/INC-9999", cache_mode="bypass")
            assert missing.value.code == exc.value.code and missing.value.message == exc.value.message

    anyio.run(main)


@pytest.mark.parametrize("arguments", [{}, {"service": ""}, {"service": 7}, {"service": "payments", "extra": 1}])
def test_bad_arguments_are_is_error_results_not_exceptions(harness: Harness, arguments: dict[str, Any]) -> None:
    async def main() -> None:
        async with harness.client() as client:
            result = await client.call_tool("incident.search", arguments)
            assert result.is_error is True
            assert result.content and isinstance(result.content[0], types.TextContent)

    anyio.run(main)


def test_protocol_errors_raise_mcp_error(harness: Harness) -> None:
    async def main() -> None:
        async with harness.client("reader") as client:
            with pytest.raises(MCPError) as scope:
                await client.call_tool("incident.escalate", {"incidentId": "INC-1001"})
            assert scope.value.code == -32003
            assert scope.value.data == {"requiredScopes": ["incidents:write"]}
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("no.such.tool", {})
            assert unknown.value.code == -32602

    anyio.run(main)


class Answers:
    """An elicitation_callback that records what it was asked and answers as told."""

    def __init__(self, action: str, content: dict[str, Any] | None = None) -> None:
        self.action, self.content = action, content
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        return types.ElicitResult(action=self.action, content=self.content)  # type: ignore[arg-type]


def test_elicitation_accept_changes_the_incident(harness: Harness) -> None:
    uri = "incident://acme/INC-1002"

    async def main() -> None:
        async with harness.client() as reader:
            before = (await read_incident(reader, uri))["severity"]
        new = "P1" if before != "P1" else "P2"
        answers = Answers("accept", {"severity": new, "reason": "customer impact"})
        async with harness.client(elicitation_callback=answers) as client:
            result = await client.call_tool("incident.escalate", {"incidentId": "INC-1002"})
            assert result.is_error is False, result.content
            assert result.structured_content == {"incidentId": "INC-1002", "previousSeverity": before,
                                                 "severity": new}
            assert len(answers.asked) == 1
            asked = answers.asked[0]
            assert isinstance(asked, types.ElicitRequestFormParams)
            assert set(asked.requested_schema["properties"]) == {"severity", "reason"}
            assert (await read_incident(client, uri))["severity"] == new

    anyio.run(main)


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_elicitation_refused_leaves_the_incident_unchanged(harness: Harness, action: str) -> None:
    uri = "incident://acme/INC-1001"

    async def main() -> None:
        answers = Answers(action)
        async with harness.client(elicitation_callback=answers) as client:
            before = await read_incident(client, uri)
            result = await client.call_tool("incident.escalate", {"incidentId": "INC-1001"})
            assert result.is_error is True
            assert len(answers.asked) == 1
            assert "unchanged" in result.content[0].text  # type: ignore[union-attr]
            assert await read_incident(client, uri) == before

    anyio.run(main)


def test_escalate_without_elicitation_capability_is_an_is_error_result(harness: Harness) -> None:
    """A client with no elicitation_callback declares no capability: nobody is asked, nothing changes."""
    uri = "incident://acme/INC-1001"

    async def main() -> None:
        async with harness.client() as client:
            before = await read_incident(client, uri)
            result = await client.call_tool("incident.escalate", {"incidentId": "INC-1001"})
            assert result.is_error is True
            assert await read_incident(client, uri) == before

    anyio.run(main)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
def test_progress_callback(transport: str, mode: str, app_dir: Path, request: pytest.FixtureRequest,
                           tmp_path: Path) -> None:
    """``ctx.progress`` reaches the SDK's progress_callback in both eras, on both transports."""
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    if transport == "http":
        server = request.getfixturevalue("app_http")
        recorded = Recorded(_http(server.url, None))
    else:
        path, _ = write_progress_app(app_dir)
        recorded = Recorded(stdio_transport(tmp_path, app=[f"{path}:app"],
                                            env={APP_DB_ENV: str(tmp_path / "app.db")}))

    async def main() -> None:
        async with Client(recorded, mode=mode, read_timeout_seconds=30) as client:
            result = await client.call_tool("count", {}, progress_callback=progress)
            assert result.structured_content == {"steps": 3}

    anyio.run(main)
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert sum(1 for m in recorded.messages if m.get("method") == "notifications/progress") == 3
    check_all(recorded.messages, VERSION[mode])
