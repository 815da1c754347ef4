"""Change notifications fan out to every listener (sessions, ``subscriptions/listen``).

In-process only: each listener owns a bounded queue; a listener too slow to keep
up loses the oldest change rather than holding the server's memory hostage.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["ChangeFeed", "Change"]

#: ``kind`` is one of tools, prompts, resources (list changed) or resource (one URI updated).
Change = tuple[str, Any]


class ChangeFeed:
    def __init__(self, queue_size: int = 256) -> None:
        self._listeners: set[asyncio.Queue[Change]] = set()
        self._queue_size = queue_size

    def listen(self) -> "asyncio.Queue[Change]":
        queue: asyncio.Queue[Change] = asyncio.Queue(self._queue_size)
        self._listeners.add(queue)
        return queue

    def unlisten(self, queue: "asyncio.Queue[Change]") -> None:
        self._listeners.discard(queue)

    @property
    def listeners(self) -> int:
        return len(self._listeners)

    def publish(self, kind: str, value: Any = None) -> None:
        for queue in list(self._listeners):
            if queue.full():
                try:
                    queue.get_nowait()
                except asyncio.QueueEmpty:
                    pass
            queue.put_nowait((kind, value))
