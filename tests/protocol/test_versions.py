"""The per-version feature table (truecall.protocol.versions): one entry per supported version, and
every version-dependent decision of the engine (and of a tool's context) reads it.

The table is pinned field by field, so that changing what a version does is a deliberate edit
of one place.  Then each feature is flipped in the table and the engine's behaviour is seen to
follow, and a scan of the sources checks that no decision compares eras or version strings
where it is made.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from _paths import ROOT
from truecall import Principal, Server, ToolResult, text
from truecall.protocol import Engine, Session, jsonrpc
from truecall.protocol import versions
from truecall.protocol.versions import (
    FEATURES,
    LEGACY,
    LEGACY_METHODS,
    MODERN,
    MODERN_METHODS,
    SUPPORTED,
    UNNEGOTIATED,
    Features,
    features_of,
)

SRC = ROOT / "src" / "truecall"
P = Principal("tester@acme", "acme", frozenset({"read"}))
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}

#: What each version does, as the specifications say: this is the table, written out again.
EXPECTED = {
    "2026-07-28": dict(stateless=True, methods=MODERN_METHODS, tasks="ext", request_state=True, result_type=True,
                       list_ttl=True, tool_execution=False, resource_not_found=None, elicitation_modes=True,
                       elicitation_url=True, elicitation_id=False),
    "2025-11-25": dict(stateless=False, methods=LEGACY_METHODS, tasks="core", request_state=False,
                       result_type=False, list_ttl=False, tool_execution=True, resource_not_found=-32002,
                       elicitation_modes=True, elicitation_url=True, elicitation_id=True),
    "2025-06-18": dict(stateless=False, methods=LEGACY_METHODS, tasks=None, request_state=False, result_type=False,
                       list_ttl=False, tool_execution=False, resource_not_found=-32002, elicitation_modes=False,
                       elicitation_url=False, elicitation_id=False),
}


def test_every_supported_version_has_exactly_one_entry_naming_itself() -> None:
    assert set(FEATURES) == set(SUPPORTED) == set(EXPECTED)
    for version, features in FEATURES.items():
        assert features.version == version
        assert features.stateless is (version in MODERN)
        assert (version in LEGACY) is not features.stateless


def test_the_table_is_what_the_specifications_say() -> None:
    fields = {f.name for f in dataclasses.fields(Features)} - {"version"}
    for version, expected in EXPECTED.items():
        assert set(expected) == fields, "a new feature needs its value for every version here"
        assert {name: getattr(FEATURES[version], name) for name in fields} == expected, version


def test_an_unknown_or_missing_version_has_no_extras() -> None:
    assert features_of(None) is UNNEGOTIATED and features_of("2024-11-05") is UNNEGOTIATED
    assert features_of("2025-11-25") is FEATURES["2025-11-25"]
    assert not UNNEGOTIATED.stateless and UNNEGOTIATED.tasks is None and not UNNEGOTIATED.request_state
    assert not (UNNEGOTIATED.result_type or UNNEGOTIATED.list_ttl or UNNEGOTIATED.tool_execution)


def test_entries_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        FEATURES["2025-11-25"].tasks = None  # type: ignore[misc]


# -- each decision reads the table: flip a feature, the behaviour follows -------------------------


def build() -> Server:
    server = Server("features", "1.0", db=":memory:")

    @server.tool("hello", description="Says hello.", scopes={"read"}, task_support="optional")
    def hello(ctx: Any) -> ToolResult:
        return ToolResult([text("hello")])

    @server.resource("note://one", name="one", scopes={"read"})
    def one(ctx: Any) -> str:
        return "one"

    return server


def flip(monkeypatch: pytest.MonkeyPatch, version: str, **changes: Any) -> None:
    monkeypatch.setitem(FEATURES, version, dataclasses.replace(FEATURES[version], **changes))


def serve(messages: list[dict[str, Any]], *, session: Session | None = None) -> list[dict[str, Any] | None]:
    server = build()
    engine = Engine(server).start()

    async def run() -> list[dict[str, Any] | None]:
        out = []
        for m in messages:
            out.append(await engine.handle(jsonrpc.decode(jsonrpc.encode(m)), P, session=session))
        return out

    try:
        return asyncio.run(run())
    finally:
        server.db.close()


def handshake(version: str, *then: dict[str, Any]) -> list[dict[str, Any] | None]:
    session = Session(principal=P)
    return serve([jsonrpc.request(1, "initialize", {"protocolVersion": version, "capabilities": {}}),
                  {"jsonrpc": "2.0", "method": "notifications/initialized"}, *then], session=session)


def stateless(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    answer = serve([jsonrpc.request(1, method, {**(params or {}), "_meta": META})])[0]
    assert answer is not None
    return answer


def test_tasks_capability_and_tool_execution_follow_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    init, _, listed = handshake("2025-11-25", jsonrpc.request(2, "tools/list", {}))
    assert init is not None and listed is not None
    assert "tasks" in init["result"]["capabilities"]
    assert "execution" in listed["result"]["tools"][0]
    flip(monkeypatch, "2025-11-25", tasks=None, tool_execution=False)
    init, _, listed = handshake("2025-11-25", jsonrpc.request(2, "tools/list", {}))
    assert init is not None and listed is not None
    assert "tasks" not in init["result"]["capabilities"]
    assert "execution" not in listed["result"]["tools"][0]
    flip(monkeypatch, "2025-06-18", tasks="core")
    init, *_ = handshake("2025-06-18")
    assert init is not None and "tasks" in init["result"]["capabilities"]


def test_result_fields_follow_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    listed = stateless("tools/list")["result"]
    assert listed["resultType"] == "complete" and listed["ttlMs"] == 60_000 and listed["cacheScope"] == "private"
    flip(monkeypatch, "2026-07-28", list_ttl=False)
    listed = stateless("tools/list")["result"]
    assert listed["resultType"] == "complete" and "ttlMs" not in listed and "cacheScope" not in listed
    flip(monkeypatch, "2026-07-28", result_type=False)
    listed = stateless("tools/list")["result"]
    assert "resultType" not in listed and "_meta" not in listed


def test_methods_and_resource_codes_follow_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    assert stateless("tasks/list")["error"]["code"] == -32601
    flip(monkeypatch, "2026-07-28", methods=MODERN_METHODS | {"ping"})
    assert stateless("ping")["result"] == {"resultType": "complete",
                                           "_meta": {"io.modelcontextprotocol/serverInfo":
                                                     {"name": "features", "version": "1.0"}}}
    *_, missing = handshake("2025-06-18", jsonrpc.request(2, "resources/read", {"uri": "note://none"}))
    assert missing is not None and missing["error"]["code"] == -32002
    flip(monkeypatch, "2025-06-18", resource_not_found=None)
    *_, missing = handshake("2025-06-18", jsonrpc.request(2, "resources/read", {"uri": "note://none"}))
    assert missing is not None and missing["error"]["code"] == -32602


def test_a_stateless_entry_is_what_makes_a_version_stateless(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "result" in stateless("tools/list")
    flip(monkeypatch, "2026-07-28", stateless=False)  # no longer spoken statelessly: refused as unsupported
    assert stateless("tools/list")["error"]["code"] == -32022


def test_elicitation_follows_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from truecall.server.context import NoPeer, ToolContext

    class Asked(NoPeer):
        def __init__(self, version: str) -> None:
            self.version = version
            self.client_capabilities = {"elicitation": {"form": {}, "url": {}}}
            self.sent: list[dict[str, Any]] = []

        async def request(self, method: str, params: dict[str, Any], key: str) -> dict[str, Any]:
            self.sent.append(params)
            return {"action": "cancel"}

    def ask(version: str, **kwargs: Any) -> dict[str, Any]:
        peer = Asked(version)
        server = build()
        ctx = ToolContext(P, server.registry.tools["hello"], server, peer, "r")
        asyncio.run(ctx.elicit("Go?", **kwargs))
        server.db.close()
        return peer.sent[0]

    form = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    assert ask("2025-11-25", url="https://example.com/go")["elicitationId"] == "r-elicit-1"
    assert ask("2025-11-25", schema=form)["mode"] == "form"
    flip(monkeypatch, "2025-11-25", elicitation_id=False, elicitation_modes=False)
    assert "elicitationId" not in ask("2025-11-25", url="https://example.com/go")
    assert "mode" not in ask("2025-11-25", schema=form)


# -- no decision compares eras or version strings where it is made -------------------------------

#: The modules whose decisions depend on the version (versions.py is the table itself).
DECIDERS = [*sorted((SRC / "protocol").glob("*.py")), SRC / "server" / "context.py", SRC / "transports" / "http.py",
            *sorted((SRC / "transports").glob("_http_*.py")), SRC / "transports" / "stdio.py"]
_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}")


@pytest.mark.parametrize("path", [p for p in DECIDERS if p.name != "versions.py"], ids=lambda p: p.name)
def test_no_version_literal_or_era_comparison_outside_the_table(path: Path) -> None:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert not _VERSION.fullmatch(node.value), f"{path.name}:{node.lineno}: version {node.value!r}"
            assert node.value not in ("modern", "legacy"), f"{path.name}:{node.lineno}: era {node.value!r}"
        if isinstance(node, ast.Attribute):
            assert node.attr != "era", f"{path.name}:{node.lineno}: .era"


def test_the_table_module_is_where_versions_are_named() -> None:
    assert set(versions.SUPPORTED) <= {c.value for c in ast.walk(ast.parse(Path(versions.__file__).read_text()))
                                       if isinstance(c, ast.Constant)}
