"""``truecall probe`` on published servers nobody here wrote, given realistic data: no false failure.

The reference servers (PyPI ``mcp-server-time``, ``mcp-server-git``, ``mcp-server-fetch``, pinned in
pyproject's ``[test]``; npm ``@modelcontextprotocol/server-everything``, ``server-memory``,
``server-filesystem``, ``server-sequential-thinking``, pinned in conformance/package.json) are probed
once each, all in one module-scoped run (at most four at a time). Their data is the kind a user has:
entities stored in server-memory whose observations use the words "failed", "queued" and "pending";
files under server-filesystem's root, one saying "queued"; a real git repository with commits; a
page on a loopback web server for mcp-server-fetch (never anything else).

What each server really does wrong is a finding, asserted exactly (so a false failure, or a real one
that goes unseen, fails here); issue 24's false failures are each named in a test of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import orjson
import pytest

from truecall.probe import Report, probe, render

from _paths import CONFORMANCE

BIN = Path(sys.executable).parent
NODE_BIN = CONFORMANCE / "node_modules" / ".bin"
PLANTED_KEY = "sk_live_51HplantedENVkey0123456789abcdef"
RAW = {("parse_error_unanswered", None), ("invalid_request_unanswered", None)}  # real: the SDKs stay silent
#: server-everything's tools that change nothing (read-only, or a form the probe declines).
EVERYTHING_TOOLS = ["echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference",
                    "get-structured-content", "get-sum", "get-tiny-image", "trigger-long-running-operation",
                    "trigger-elicitation-request"]


def _node(name: str) -> list[str]:
    path = NODE_BIN / name
    assert path.exists(), "run `npm ci` in conformance/ (scripts/test does)"
    return [str(NODE_BIN / "node"), str(path.resolve())]


def _data(root: Path) -> dict[str, Path]:
    files = root / "files"
    (files / "notes").mkdir(parents=True)
    (files / "orders.txt").write_text("Order 1042 queued for shipping.\nYour request has been received.\n")
    (files / "notes" / "deploy.md").write_text("# Deploy\nThe release job was queued at 09:12 and finished at "
                                               "09:40.\nReview: pending.\n")
    (files / "readme.txt").write_text("Team files.\n")
    repo = root / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=dev", "-c", "user.email=dev@example.com", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "app.py").write_text("print('v1')\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "Initial commit"], check=True)
    (repo / "app.py").write_text("print('v2')\n")
    subprocess.run([*git, "commit", "-qam", "Retry failed uploads"], check=True)
    (repo / "wip.txt").write_text("draft\n")
    memory = root / "memory.jsonl"
    memory.write_text("\n".join(json.dumps(line) for line in [
        {"type": "entity", "name": "Alice", "entityType": "person",
         "observations": ["Works on the payments team", "Her deploy failed on Monday and was retried",
                          "Request received from Alice for access"]},
        {"type": "entity", "name": "Payments", "entityType": "service",
         "observations": ["Jobs are queued before processing", "Status: pending migration"]},
        {"type": "relation", "from": "Alice", "to": "Payments", "relationType": "owns"}]) + "\n")
    site = root / "site"
    site.mkdir()
    (site / "status.html").write_text("<html><head><title>Status</title></head><body><h1>Deploys</h1><p>The "
                                      "nightly job was queued at 02:00 and completed at 02:14.</p></body></html>")
    return {"files": files, "repo": repo, "memory": memory, "site": site}


@contextlib.contextmanager
def _loopback_site(root: Path) -> Iterator[str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]  # a quiet test log
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/status.html"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Report]:
    data = _data(tmp_path_factory.mktemp("published"))
    with _loopback_site(data["site"]) as page:
        runs: dict[str, tuple[list[str], dict[str, Any]]] = {
            "time": ([str(BIN / "mcp-server-time"), "--local-timezone", "UTC"], {}),
            "git": ([str(BIN / "mcp-server-git"), "--repository", str(data["repo"])], {}),
            # loopback only: the page above, nothing else (the server refuses private addresses unless told)
            # (its HTML extraction runs `node` from PATH: Node 22, the one conformance/ pins)
            "fetch": ([str(BIN / "mcp-server-fetch"), "--allow-private-ips", "--ignore-robots-txt"],
                      {"values": {"url": page}, "env": {"PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}"}}),
            "memory": (_node("mcp-server-memory"), {"env": {"MEMORY_FILE_PATH": str(data["memory"])}}),
            "filesystem": ([*_node("mcp-server-filesystem"), str(data["files"])], {}),
            "thinking": (_node("mcp-server-sequential-thinking"), {}),
            "everything": (_node("mcp-server-everything"), {
                "env": {"PLANTED_API_KEY": PLANTED_KEY}, "tools": EVERYTHING_TOOLS,
                "values": {"duration": 1, "steps": 1}}),
        }

        async def all_of_them() -> dict[str, Report]:
            gate = asyncio.Semaphore(4)

            async def one(name: str) -> tuple[str, Report]:
                command, options = runs[name]
                async with gate:
                    return name, await probe(command, timeout=20, **options)

            return dict(await asyncio.gather(*(one(name) for name in runs)))

        return asyncio.run(asyncio.wait_for(all_of_them(), 300))


def failures(report: Report) -> set[tuple[str, str | None]]:
    return {(f.code, f.tool) for f in report.findings if f.severity == "failure"}


def codes(report: Report) -> set[tuple[str, str | None]]:
    return {(f.code, f.tool) for f in report.findings}


def done(report: Report) -> dict[str, set[str]]:
    """Per tool, the outcomes of the calls made with arguments built for its success path."""
    out: dict[str, set[str]] = {}
    for o in report.observations:
        if o.purpose == "generated" and not o.tool.startswith("truecall-probe"):
            out.setdefault(o.tool, set()).add(o.outcome)
    return out


def shown(report: Report) -> list[str]:
    return [json.dumps(f.to_dict()) for f in report.findings]


# -- no false failure, each real finding seen ---------------------------------------------------------------


def test_time(published: dict[str, Report]) -> None:
    report = published["time"]
    assert {e.version for e in report.reached} == {"2026-07-28", "2025-11-25"}
    # Real: "Invalid timezone: 'No time zone found with key sk_live_…'" repeats the planted secret.
    assert failures(report) == {("echoes_secret", "get_current_time"), ("echoes_secret", "convert_time")}, \
        shown(report)
    assert codes(report) - failures(report) == RAW
    # A valid timezone (the description's example) and a time in the layout it names reach the success path.
    assert done(report) == {"get_current_time": {"done"}, "convert_time": {"done"}}


def test_git_the_repository_the_caller_passed_is_not_a_leak(published: dict[str, Report]) -> None:
    report = published["git"]
    assert not [f for f in report.findings if f.code == "leaks_internals"], shown(report)
    tools = {"git_branch", "git_diff", "git_diff_staged", "git_diff_unstaged", "git_log", "git_show", "git_status"}
    assert failures(report) == {("echoes_secret", t) for t in tools}, shown(report)
    assert codes(report) - failures(report) == RAW
    # The real repository from the command line, a branch type from the description, a revision the log listed.
    assert done(report) == {t: {"done"} for t in tools}


def test_git_one_cause_is_one_finding_across_eras(published: dict[str, Report]) -> None:
    report = published["git"]
    echoes = [f for f in report.findings if f.code == "echoes_secret"]
    assert len(echoes) == 7 and all(f.eras == ["2026-07-28", "2025-11-25"] for f in echoes)
    assert report.summary().startswith("7 failures, 2 warnings;")
    assert "[2026-07-28, 2025-11-25] git_log" in render(report)


def test_fetch_reaches_the_loopback_page(published: dict[str, Report]) -> None:
    report = published["fetch"]
    assert codes(report) == RAW, shown(report)
    assert done(report) == {"fetch": {"done"}}
    assert all(o.arguments["url"].startswith("http://127.0.0.1:") for o in report.observations
               if o.tool == "fetch" and isinstance(o.arguments.get("url"), str))


def test_memory_stored_entities_are_data(published: dict[str, Report]) -> None:
    """read_graph after entities were stored (their words: failed, queued, received, pending): data, no claim."""
    report = published["memory"]
    assert codes(report) == RAW | {("unknown_tool_as_result", None)}, shown(report)
    assert done(report) == {"read_graph": {"done"}, "open_nodes": {"done"}, "search_nodes": {"done"}}
    told = {o.tool: o.arguments for o in report.observations if o.purpose == "generated"}
    assert told["open_nodes"] == {"names": ["Alice"]} and told["search_nodes"] == {"query": "Alice"}


def test_filesystem_files_and_advertised_root(published: dict[str, Report]) -> None:
    """A file saying "queued" is its content, not the server's claim; paths under the root the server
    advertises (list_allowed_directories) are not internals."""
    report = published["filesystem"]
    assert not [f for f in report.findings if f.code in ("accepted_without_handle", "says_failed",
                                                         "leaks_internals")], shown(report)
    reading = {"directory_tree", "get_file_info", "list_directory", "list_directory_with_sizes", "read_file",
               "read_media_file", "read_text_file", "search_files"}
    assert failures(report) == {("unknown_tool_as_result", None)} | {("echoes_secret", t) for t in reading}
    assert codes(report) - failures(report) == RAW
    assert done(report) == {t: {"done"} for t in reading | {"list_allowed_directories", "read_multiple_files"}}


def test_sequential_thinking(published: dict[str, Report]) -> None:
    report = published["thinking"]
    assert codes(report) == RAW | {("unknown_tool_as_result", None)}, shown(report)
    assert done(report) == {"sequentialthinking": {"done"}}


def test_everything_env_dump_and_planted_key(published: dict[str, Report]) -> None:
    """get-env returns the environment with the planted key: both are findings, and the report (text
    and JSON) never repeats the key."""
    report = published["everything"]
    assert {("dumps_environment", "get-env"), ("result_has_secret", "get-env")} <= failures(report)
    assert PLANTED_KEY not in render(report) and PLANTED_KEY not in orjson.dumps(report.to_dict()).decode()
    assert "truecallprobe" not in render(report) + orjson.dumps(report.to_dict()).decode()


def test_everything_no_false_failure(published: dict[str, Report]) -> None:
    """Its form says "do *not* give us your … pin": not a credential ask. Its echo tool gives the caller
    back the caller's own value (the planted secret too): a success that repeats what was sent is no finding."""
    report = published["everything"]
    assert failures(report) == {("unknown_tool_as_result", None), ("dumps_environment", "get-env"),
                                ("result_has_secret", "get-env")}, shown(report)
    assert ("echoes_secret", "echo") not in codes(report)
    assert not [f for f in report.findings if f.code == "credential_form"]
    # The form was asked (and declined by the probe): it was read, and is not a credential ask.
    assert any(o.tool == "trigger-elicitation-request" and "decline" in o.describe for o in report.observations), \
        [o.describe for o in report.observations if o.tool == "trigger-elicitation-request"]
    assert "trigger-elicitation-request" in report.probed
    # Two success flags over texts that say the work was not done, which the client calls Unconfirmed
    # (claim "failed") and the probe now names so (it said "done" before): get-annotated-message's first
    # enum value, "error" ("Error: Operation failed"), and the form the probe declines ("❌ User declined to
    # provide the requested information"). Every other success path is done.
    outcomes = done(report)
    assert {tool: outcomes.pop(tool, None) for tool in ("get-annotated-message", "trigger-elicitation-request")} == \
        {"get-annotated-message": {"unconfirmed"}, "trigger-elicitation-request": {"unconfirmed"}}, done(report)
    assert all(outcome == {"done"} for outcome in outcomes.values()), done(report)
