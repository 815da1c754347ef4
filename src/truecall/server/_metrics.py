"""Prometheus metrics: calls by tool and outcome, latency, tasks by status, task lag.

Loaded only when an HTTP server exposes ``/metrics``; the call pipeline reports
through :attr:`Server.observers`, which costs nothing when empty.
"""

from __future__ import annotations

import threading
import time
from threading import get_ident
from bisect import bisect_left
from typing import TYPE_CHECKING, Any, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["Metrics", "CONTENT_TYPE"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _TaskCollector:
    """Read at scrape time from the (shared) database, so every replica reports the same truth."""

    def __init__(self, server: "Server") -> None:
        self.server = server
        #: The rows read ahead by :meth:`read` for the next scrape (taken by it), else read at the scrape;
        #: ``False``: that read failed, and the scrape goes without these gauges.
        self._read: tuple[float, list[Any], Any] | None | bool = None

    def read(self) -> None:
        """The scrape's database reads, done now (off the event loop: see ``Metrics.read``)."""
        now = time.time()
        db = self.server.db
        self._read = False
        self._read = (now, db.fetchall("SELECT status, COUNT(*) FROM tasks WHERE expires_at > ? GROUP BY status",
                                       (now,)),
                      db.fetchone("SELECT MIN(created_at) FROM tasks WHERE status = 'working' AND expires_at > ?",
                                  (now,)))

    def collect(self) -> Iterator[Any]:
        if self._read is None:
            self.read()
        read, self._read = self._read, None
        if not isinstance(read, tuple):  # the database did not answer the read ahead
            return
        now, rows, row = read
        by_status = GaugeMetricFamily("truecall_tasks", "Unexpired tasks by status", labels=["status"])
        counts = {s: 0 for s in ("working", "input_required", "completed", "failed", "cancelled")}
        for status, count in rows:
            counts[status] = count
        for status, count in counts.items():
            by_status.add_metric([status], count)
        yield by_status
        lag = GaugeMetricFamily("truecall_task_oldest_working_seconds",
                                "Age of the oldest task still working (queue lag)")
        lag.add_metric([], max(0.0, now - row[0]) if row and row[0] else 0.0)
        yield lag


BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)  # (floats: bisect compares)
_LE = [floatToGoString(b) for b in BUCKETS] + ["+Inf"]  # type: ignore[no-untyped-call]  # prometheus_client leaves it unannotated


class _Table:
    """Counts and latency sums by tool and outcome, as plain lists."""

    def __init__(self) -> None:
        self.calls: dict[tuple[str, str], list[float]] = {}  # (tool, outcome) -> [count, created]
        self.latency: dict[str, list[float]] = {}  # tool -> [per-bucket counts..., +Inf count, sum, created]
        #: (tool, outcome) -> (its count, its tool's latency): what one observation updates, found
        #: with one look-up (both lists are the ones above, shared).
        self.entries: dict[tuple[str, str], tuple[list[float], list[float]]] = {}

    def entry(self, tool: str, outcome: str) -> tuple[list[float], list[float]]:
        """The lists an observation of ``(tool, outcome)`` updates, made on its first one."""
        count = self.calls.get((tool, outcome))
        if count is None:
            count = self.calls[(tool, outcome)] = [0.0, time.time()]
        latency = self.latency.get(tool)
        if latency is None:
            latency = self.latency[tool] = [0.0] * (len(_LE) + 1) + [time.time()]
        entry = self.entries[(tool, outcome)] = (count, latency)
        return entry

    def add(self, tool: str, outcome: str, seconds: float) -> None:
        """One observation: a dict look-up and three increments."""
        entry = self.entries.get((tool, outcome))
        count, latency = entry if entry is not None else self.entry(tool, outcome)
        count[0] += 1
        latency[bisect_left(BUCKETS, seconds)] += 1
        latency[-2] += seconds

    def snapshot(self) -> tuple[dict[tuple[str, str], list[float]], dict[str, list[float]]]:
        # list(d.items()) copies in one C call, which no other thread's update can interleave with
        return ({k: list(v) for k, v in list(self.calls.items())},
                {k: list(v) for k, v in list(self.latency.items())})


class _CallCollector:
    """``truecall_tool_calls`` (counter by tool and outcome) and ``truecall_tool_call_seconds``
    (histogram by tool), kept as plain numbers: an observation is a few list increments, and
    the exposition is what prometheus_client's Counter and Histogram would write.

    Every call is observed, nearly always on the serving loop's thread, the one that made the
    transport and so this: that thread updates its own table without a lock (which cost as much
    as the update itself); any other thread updates a second table under the lock.  A scrape
    adds the two (series only the other threads saw come last)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner = threading.get_ident()
        self.owned = _Table()  # written by the owner thread only
        self.shared = _Table()  # written under the lock

    def observe_shared(self, tool: str, outcome: str, seconds: float) -> None:
        with self.lock:
            self.shared.add(tool, outcome, seconds)

    def describe(self) -> Iterator[Any]:
        yield CounterMetricFamily("truecall_tool_calls", "Tool calls by tool and outcome class",
                                  labels=["tool", "outcome"])
        yield HistogramMetricFamily("truecall_tool_call_seconds", "Tool call latency", labels=["tool"])

    def collect(self) -> Iterator[Any]:
        calls, latency = self.owned.snapshot()
        with self.lock:
            more_calls, more_latency = self.shared.snapshot()
        n = len(_LE)
        for key, (count, created) in more_calls.items():
            mine = calls.setdefault(key, [0.0, created])
            mine[0] += count
            mine[1] = min(mine[1], created)
        for tool, values in more_latency.items():
            if tool not in latency:
                latency[tool] = values
                continue
            mine = latency[tool]
            for i in range(n + 1):
                mine[i] += values[i]
            mine[n + 1] = min(mine[n + 1], values[n + 1])
        counter = CounterMetricFamily("truecall_tool_calls", "Tool calls by tool and outcome class",
                                      labels=["tool", "outcome"])
        for (tool, outcome), (count, created) in calls.items():
            counter.add_metric([tool, outcome], count, created=created)
        yield counter
        histogram = HistogramMetricFamily("truecall_tool_call_seconds", "Tool call latency", labels=["tool"])
        for tool, values in latency.items():
            cumulative, buckets = 0.0, []
            for le, count in zip(_LE, values[:n]):
                cumulative += count
                buckets.append((le, cumulative))
            histogram.add_metric([tool], buckets, values[n])
            # (add_metric takes no created time for a histogram: the sample Histogram writes)
            histogram.samples.append(Sample("truecall_tool_call_seconds_created", {"tool": tool}, values[n + 1]))
        yield histogram


class Metrics:
    def __init__(self, server: "Server") -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._collector = _CallCollector()
        self.registry.register(self._collector)
        self._tasks = _TaskCollector(server)
        self.registry.register(self._tasks)
        server.observers.append(self.observe)

    def read(self) -> None:
        """What the next :meth:`render` takes from the database, read now: a transport calls this in a worker
        thread (``storage.off_loop``), then renders on the loop, so a database that stops answering holds up
        the scrape, not the process."""
        self._tasks.read()

    def observe(self, tool: str, outcome: str, seconds: float) -> None:
        """One tool call (every call pays this): a dict look-up and three increments."""
        c = self._collector
        if c.owner != get_ident():
            c.observe_shared(tool, outcome, seconds)
        else:
            c.owned.add(tool, outcome, seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
