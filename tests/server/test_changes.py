"""truecall.server._changes: the change feed behind list_changed, resources/updated and task notifications.

A listener that never reads (an SSE stream whose peer stopped reading) must cost the server
next to nothing per announcement, and a listener that reads must never miss news."""

from __future__ import annotations

import asyncio

from truecall.server._changes import ChangeFeed


def _drain(queue: asyncio.Queue[tuple[str, object]]) -> list[tuple[str, object]]:
    out = []
    while not queue.empty():
        out.append(queue.get_nowait())
    return out


def test_a_listener_that_never_reads_holds_each_waiting_change_once() -> None:
    """10,000 announcements of three list kinds leave three changes waiting, not a full queue of
    copies (before: 256 entries, each announcement dropping the oldest to append the same news,
    and the stream behind it wrote up to 256 identical events per burst: stress/slow_peers.py's
    sse_never_read spent 2.1 s of server CPU on 20 stuck streams where 0.16 s served no stream)."""
    feed = ChangeFeed(queue_size=256)
    stuck = feed.listen()
    for i in range(10_000):
        feed.publish(("tools", "prompts", "resources")[i % 3])
    assert _drain(stuck) == [("tools", None), ("prompts", None), ("resources", None)]


def test_a_change_announced_again_after_it_was_taken_is_queued_again() -> None:
    """Coalescing only merges copies still waiting: once taken, the next announcement is news."""
    feed = ChangeFeed()
    queue = feed.listen()
    feed.publish("task", "t1")
    feed.publish("task", "t1")
    assert queue.get_nowait() == ("task", "t1") and queue.empty()
    feed.publish("task", "t1")
    assert _drain(queue) == [("task", "t1")]


def test_distinct_changes_beyond_the_bound_drop_the_oldest() -> None:
    feed = ChangeFeed(queue_size=4)
    queue = feed.listen()
    for n in range(6):
        feed.publish("resource", f"file:///{n}")
    assert _drain(queue) == [("resource", f"file:///{n}") for n in range(2, 6)]
    feed.publish("resource", "file:///0")  # dropped before: waiting no longer, so it is queued again
    assert _drain(queue) == [("resource", "file:///0")]


def test_every_listener_gets_every_change_and_an_unlistened_one_none() -> None:
    feed = ChangeFeed()
    a, b = feed.listen(), feed.listen()
    feed.unlisten(b)
    feed.publish("tools")
    assert _drain(a) == [("tools", None)] and b.empty() and feed.listeners == 1
