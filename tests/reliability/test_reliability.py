"""Reliability battery, CI slices (issue 8, parts 1, 3 and 4).

The long versions are commands in ``stress/`` (see ``stress/README.md``); these are the
short ones, with the same invariants:

1. Protocol fuzzing of the real server (one process per transport): Hypothesis draws
   batches of valid, near-valid and hostile JSON-RPC/MCP messages and raw garbage
   (``stress/strategies.py``).  The process never dies; every request id gets exactly one
   response, notifications none; errors reveal no stack trace, path or secret; memory
   stays bounded and descriptors do not leak.  At least 5,000 cases in all.
3. Load: 16 concurrent HTTP keep-alive clients and a pipelined stdio client for 20 s:
   0 unexpected errors, RSS growth < 10 % after warm-up, no descriptor, thread or asyncio
   task growth.
4. Slow and hostile HTTP peers: in ``test_slow_peers.py`` (it mostly waits: it runs with the
   timing-bound tests, not alone).

Plus one regression test for each defect the fuzzer found (they fail until it is fixed).
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from stress import strategies
from stress.common import LEGACY, RawHttp, ServerProcess, modern_meta
from stress.fuzz import (KNOWN_DEFECTS, HttpFuzzer, StdioFuzzer, memory_verdict, print_summary,
                         stderr_tracebacks)

FUZZ_STDIO_CASES = int(os.environ.get("TRUECALL_FUZZ_STDIO_CASES", "3000"))
#: Comma-separated names from stress.fuzz.KNOWN_DEFECTS whose inputs are skipped (default: none).
FUZZ_EXCLUDE = [n for n in os.environ.get("TRUECALL_FUZZ_EXCLUDE", "").split(",") if n]
FUZZ_HTTP_CASES = int(os.environ.get("TRUECALL_FUZZ_HTTP_CASES", "2500"))
LOAD_SECONDS = float(os.environ.get("TRUECALL_LOAD_SECONDS", "20"))


# -- 1. fuzzing ---------------------------------------------------------------------------------------------


def _fuzz(fuzzer: Any, transport: str, target: int, min_size: int, max_size: int) -> None:
    """Hypothesis batches into one long-lived server until ``target`` cases have been sent; the
    fuzzer's seed also seeds Hypothesis, so one number replays the whole run."""
    per_batch = (min_size + max_size) // 2

    @settings(max_examples=target // per_batch + 10, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck), print_blob=True)
    @seed(fuzzer.seed)
    @given(data=st.data())
    def one_batch(data: st.DataObject) -> None:
        cases = data.draw(strategies.batches(fuzzer.pool, transport, min_size, max_size), label="batch")
        fuzzer.run_cases([c for c in cases if not any(KNOWN_DEFECTS[name](c) for name in FUZZ_EXCLUDE)])

    for _ in range(4):
        if fuzzer.stats.cases >= target:
            return
        one_batch()


def _assert_fuzz_summary(summary: dict[str, Any], target: int) -> None:
    print_summary({**summary, "memory_problems": memory_verdict(summary)})
    assert summary["breach_count"] == 0, summary["breaches"]
    assert summary["cases"] >= target
    assert summary["requests"] >= target // 3, "the generator must mostly send requests"
    assert not memory_verdict(summary), memory_verdict(summary)


def test_fuzz_stdio(tmp_path: Path, rng_seed: int) -> None:
    """The seed (``rng_seed``: the run's, or ``TRUECALL_TEST_SEED``) drives the fuzzer and Hypothesis both."""
    with StdioFuzzer(tmp_path / "stdio", seed=rng_seed, raise_on_breach=True) as fuzzer:
        _fuzz(fuzzer, "stdio", FUZZ_STDIO_CASES, 15, 35)
        summary = {**fuzzer.finish(), "seed": fuzzer.seed}
    _assert_fuzz_summary(summary, FUZZ_STDIO_CASES)
    assert summary["exit_code"] == 0, "stdin EOF must end the server cleanly"


def test_fuzz_http(tmp_path: Path, rng_seed: int) -> None:
    with HttpFuzzer(tmp_path / "http", seed=rng_seed, workers=4, request_timeout=10.0,
                    raise_on_breach=True) as fuzzer:
        _fuzz(fuzzer, "http", FUZZ_HTTP_CASES, 20, 60)
        summary = {**fuzzer.finish(), "seed": fuzzer.seed}
    _assert_fuzz_summary(summary, FUZZ_HTTP_CASES)


# -- regressions for what the fuzzer found ------------------------------------------------------------------


def _stdio(tmp_path: Path) -> ServerProcess:
    return ServerProcess(tmp_path / "stdio").start()


def _read_answer(server: ServerProcess, rid: Any, timeout: float = 10.0) -> dict[str, Any]:
    assert server.proc is not None and server.proc.stdout is not None
    deadline = time.monotonic() + timeout
    os.set_blocking(server.proc.stdout.fileno(), True)
    while time.monotonic() < deadline:
        line = server.proc.stdout.readline()
        assert line, f"stdout closed; stderr: {server.stderr()[-1500:]}"
        message = orjson.loads(line)
        if message.get("id") == rid and "method" not in message:
            return message
    raise AssertionError(f"no answer for {rid!r}")


@pytest.mark.parametrize("request_id", [{}, {"a": 1}, [], [1, 2]])
def test_stdio_cancel_naming_an_object_or_array_id_is_ignored(tmp_path: Path, request_id: Any) -> None:
    """Found by the fuzzer: stdio.py StdioConnection._cancel hashes ``requestId`` -> TypeError -> exit 1."""
    server = _stdio(tmp_path)
    try:
        assert server.proc is not None and server.proc.stdin is not None
        server.proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                              "params": {"requestId": request_id}}) + b"\n")
        server.proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", "id": "after", "method": "server/discover",
                                              "params": {"_meta": modern_meta()}}) + b"\n")
        server.proc.stdin.flush()
        assert "result" in _read_answer(server, "after")
        assert server.alive()
    finally:
        server.stop()


def test_http_client_gone_mid_body_leaves_no_traceback(tmp_path: Path) -> None:
    """Found by the fuzzer: http.py _body raises a bare CancelledError, logged by uvicorn with a traceback."""
    with ServerProcess(tmp_path / "http", http=True) as server:
        for _ in range(3):
            sock = socket.create_connection(("127.0.0.1", server.port or 0))
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{\"jsonrpc\"")
            time.sleep(0.2)
            sock.close()
        time.sleep(1.0)
        with RawHttp(server.port or 0) as conn:
            assert conn.request("GET", "/healthz").status == 200
        assert not stderr_tracebacks(server.stderr()), server.stderr()[-3000:]


def test_handshake_era_elicitation_without_sse_is_answered_in_bounded_time(tmp_path: Path) -> None:
    """Found by the fuzzer: a 2025-11-25 call that elicits, POSTed with ``Accept: application/json``, sends its
    ``elicitation/create`` to nowhere (no stream), waits client_request_timeout (300 s), then answers
    "the user did not accept (cancel)" although the user was never asked."""
    server = ServerProcess(tmp_path / "http", http=True).start()
    try:
        auth = ("Authorization", "Bearer demo-acme-operator")
        with RawHttp(server.port or 0, timeout=15.0) as conn:
            init = conn.request("POST", "/mcp", [("Content-Type", "application/json"),
                                                 ("Accept", "application/json, text/event-stream"), auth],
                                orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                                    "protocolVersion": LEGACY, "capabilities": {"elicitation": {}},
                                    "clientInfo": {"name": "t", "version": "1"}}}))
            sid = init.headers["mcp-session-id"]
            session = [("Content-Type", "application/json"), auth, ("Mcp-Session-Id", sid),
                       ("MCP-Protocol-Version", LEGACY)]
            assert conn.request("POST", "/mcp", session + [("Accept", "application/json, text/event-stream")],
                                b'{"jsonrpc":"2.0","method":"notifications/initialized"}').status == 202
            started = time.monotonic()
            try:
                resp = conn.request("POST", "/mcp", session + [("Accept", "application/json")], orjson.dumps({
                    "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "incident.escalate", "arguments": {"incidentId": "INC-1001"}}}), timeout=10.0)
            except socket.timeout:
                pytest.fail("no answer within 10 s (the server waits 300 s for an elicitation it could not send)")
            assert time.monotonic() - started < 10.0
            assert resp.status in (200, 400, 406), resp.status
            answer = orjson.loads(resp.body)
            assert answer.get("id") == 2
            assert "did not accept" not in resp.body.decode(), "the user was never asked"
    finally:
        server.stop(timeout=2)  # the hung call holds uvicorn's graceful shutdown: do not wait for it


# -- 3. load -------------------------------------------------------------------------------------------------


def test_load_16_http_clients_and_a_pipelined_stdio_client(tmp_path: Path) -> None:
    import asyncio

    from stress.load import print_summary as print_load, run_load

    summary = asyncio.run(run_load(LOAD_SECONDS, tmp_path / "load", introspect_tasks=True,
                                   warmup=max(5.0, LOAD_SECONDS / 4)))
    print_load(summary)
    assert not summary["errors"], summary["error_examples"]
    for name, server in summary["servers"].items():
        assert server["rss_growth_pct"] < 10, (name, server)
        assert server["fds"]["end"] <= server["fds"]["warm"] + 2, (name, server["fds"])
        assert server["fds"]["after"] <= server["fds"]["idle"] + 2, (name, server["fds"])
        assert server["threads"]["end"] <= server["threads"]["warm"] + 1, (name, server["threads"])
    assert summary["tasks_after"]["asyncioTasks"] <= summary["tasks_idle"]["asyncioTasks"] + 2, \
        (summary["tasks_idle"], summary["tasks_after"])
    assert summary["exit_codes"]["stdio"] == 0 and summary["exit_codes"]["http"] in (0, -15), summary["exit_codes"]
    assert not summary["problems"], summary["problems"]
    assert summary["latency_ms"]["all"]["n"] > 1000
