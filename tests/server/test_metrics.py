"""The call metrics count every observation exactly, whichever thread makes it.

The serving thread updates its own table without a lock; any other thread (an in-process
``call_tool`` beside the server) updates a second one under the lock; a scrape adds them."""

from __future__ import annotations

import re
import threading
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from truecall import Server
from truecall.server._metrics import BUCKETS, Metrics


def _ours(text: bytes) -> str:
    lines = [line for line in text.decode().splitlines() if "truecall_tool_call" in line]
    return "\n".join(re.sub(r"_created(\{.*\}) \S+$", r"_created\1 T", line) for line in lines)


def test_observations_from_every_thread_are_counted_once(tmp_path: Any) -> None:
    server = Server("m", "1", db=str(tmp_path / "m.db"), audit=False).start()
    metrics = Metrics(server)
    observe = server.observers[-1]
    registry = CollectorRegistry()
    calls = Counter("truecall_tool_calls", "Tool calls by tool and outcome class", ["tool", "outcome"],
                    registry=registry)
    latency = Histogram("truecall_tool_call_seconds", "Tool call latency", ["tool"], registry=registry,
                        buckets=BUCKETS)
    # (binary fractions: their sums are exact whatever the order they are added in)
    samples = [("a", "ok", 2.0 ** -12), ("a", "error", 2.0 ** -8), ("b", "ok", 11.0), ("b", "denied", 1.0)]

    def work(rounds: int) -> None:
        for _ in range(rounds):
            for tool, outcome, seconds in samples:
                observe(tool, outcome, seconds)

    work(1)  # this thread observes first: it owns the lock-free table
    threads = [threading.Thread(target=work, args=(500,)) for _ in range(4)]
    for t in threads:
        t.start()
    work(500)
    for t in threads:
        t.join()
    for _ in range(1 + 4 * 500 + 500):
        for tool, outcome, seconds in samples:
            calls.labels(tool, outcome).inc()
            latency.labels(tool).observe(seconds)
    assert _ours(metrics.render()) == _ours(generate_latest(registry))
    assert 'truecall_tool_calls_total{outcome="ok",tool="a"} 2501.0' in metrics.render().decode()
