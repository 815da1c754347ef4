"""Change notifications fan out to every listener (sessions, ``subscriptions/listen``).

In-process only: each listener owns a bounded queue; a listener too slow to keep
up loses the oldest change rather than holding the server's memory hostage.

A change already waiting in a listener's queue is not queued again: every change is a
hint that its consumer acts on by reading the current state when it takes it (a list
changed: the client lists again; a resource or a task changed: the update or status is
read then), so a second copy still waiting would only send the same news twice.  This
is also what keeps a listener that does not read cheap: a stuck stream's queue holds
each distinct change once, and an announcement costs it one set lookup instead of
dropping the oldest entry and waking nobody (measured with ``stress/slow_peers.py``,
``sse_never_read``: 20 stuck streams made 100,000 announcements cost 2.1 s of server CPU
instead of 0.16 s, and 500,000 identical events were written to the streams).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

__all__ = ["ChangeFeed", "Change", "ChangeQueue"]

#: ``kind`` is one of tools, prompts, resources (list changed; value None), resource (value: the URI
#: updated) or task (value: the task id): hashable, so a queue knows what is already waiting.
Change = tuple[str, Any]


class ChangeQueue(asyncio.Queue[Change]):
    """One listener's queue: bounded, oldest dropped when full, a change already waiting not queued twice."""

    _queue: deque[Change]
    _waiting: set[Change]

    def _init(self, maxsize: int) -> None:
        self._queue = deque()
        self._waiting = set()

    def _put(self, item: Change) -> None:
        self._queue.append(item)
        self._waiting.add(item)

    def _get(self) -> Change:
        item = self._queue.popleft()
        self._waiting.discard(item)
        return item

    def offer(self, change: Change) -> None:
        """Queue ``change`` unless it is already waiting; when full, the oldest change makes room."""
        if change in self._waiting:
            return
        if self.full():
            try:
                self.get_nowait()
            except asyncio.QueueEmpty:
                pass
        self.put_nowait(change)


class ChangeFeed:
    def __init__(self, queue_size: int = 256) -> None:
        self._listeners: set[ChangeQueue] = set()
        self._queue_size = queue_size

    def listen(self) -> ChangeQueue:
        queue = ChangeQueue(self._queue_size)
        self._listeners.add(queue)
        return queue

    def unlisten(self, queue: ChangeQueue) -> None:
        self._listeners.discard(queue)

    @property
    def listeners(self) -> int:
        return len(self._listeners)

    def publish(self, kind: str, value: Any = None) -> None:
        change = (kind, value)
        for queue in list(self._listeners):
            queue.offer(change)
