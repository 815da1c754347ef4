"""Per-principal token buckets: a caller that calls too often is told when to come back."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

__all__ = ["RateLimit"]


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimit:
    """``rate`` calls per second on average, bursts of up to ``burst``, per (tenant, subject)."""

    def __init__(self, rate: float, burst: int, *, max_principals: int = 100_000) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self.rate, self.burst = rate, burst
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._lock = threading.Lock()
        self._max = max_principals

    def take(self, tenant: str, subject: str) -> float:
        """0 when the call may go ahead, else the milliseconds to wait before the next one."""
        now = time.monotonic()
        key = (tenant, subject)
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                if len(self._buckets) >= self._max:
                    # Bounded memory: forget the least recently seen principal (dicts keep order).
                    self._buckets.pop(next(iter(self._buckets)))
                bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            else:
                self._buckets[key] = self._buckets.pop(key)  # most recently seen last
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                return 0.0
            return (1 - bucket.tokens) / self.rate * 1000.0
