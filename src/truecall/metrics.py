"""Prometheus metrics: calls by tool and outcome, latency, tasks by status, task lag.

Loaded only when an HTTP server exposes ``/metrics``; the call pipeline reports
through :attr:`Server.observers`, which costs nothing when empty.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

if TYPE_CHECKING:
    from .server import Server

__all__ = ["Metrics", "CONTENT_TYPE"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _TaskCollector:
    """Read at scrape time from the (shared) database, so every replica reports the same truth."""

    def __init__(self, server: "Server") -> None:
        self.server = server

    def collect(self) -> Iterator[Any]:
        by_status = GaugeMetricFamily("truecall_tasks", "Unexpired tasks by status", labels=["status"])
        counts = {s: 0 for s in ("working", "input_required", "completed", "failed", "cancelled")}
        now = time.time()
        for status, count in self.server.db.fetchall(
                "SELECT status, COUNT(*) FROM tasks WHERE expires_at > ? GROUP BY status", (now,)):
            counts[status] = count
        for status, count in counts.items():
            by_status.add_metric([status], count)
        yield by_status
        row = self.server.db.fetchone(
            "SELECT MIN(created_at) FROM tasks WHERE status = 'working' AND expires_at > ?", (now,))
        lag = GaugeMetricFamily("truecall_task_oldest_working_seconds",
                                "Age of the oldest task still working (queue lag)")
        lag.add_metric([], max(0.0, now - row[0]) if row and row[0] else 0.0)
        yield lag


class Metrics:
    def __init__(self, server: "Server") -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.calls = Counter("truecall_tool_calls", "Tool calls by tool and outcome class",
                             ["tool", "outcome"], registry=self.registry)
        self.latency = Histogram("truecall_tool_call_seconds", "Tool call latency", ["tool"], registry=self.registry,
                                 buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10))
        self.registry.register(_TaskCollector(server))
        self._children: dict[tuple[str, str], Any] = {}
        server.observers.append(self.observe)

    def observe(self, tool: str, outcome: str, seconds: float) -> None:
        children = self._children.get((tool, outcome))
        if children is None:  # label lookups are slow; the set of (tool, outcome) pairs is small
            children = self._children[(tool, outcome)] = (self.calls.labels(tool, outcome),
                                                           self.latency.labels(tool))
        children[0].inc()
        children[1].observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
