"""The incident desk plus one read-only tool that reports the process's own asyncio state.

Used only by ``stress/load.py --introspect``: asyncio tasks cannot be counted from outside
the process (/proc shows threads and descriptors, not tasks), and nothing in truecall's
server exposes them.  The desk itself is unchanged: this module builds it with
``build_desk()`` and registers ``stress.introspect`` next to its tools.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import threading

from truecall.incidents.app import build_desk


def app():
    server = build_desk()

    @server.tool("stress.introspect", description="Counts this process's asyncio tasks, threads and listeners.",
                 input_schema={"type": "object", "properties": {}, "additionalProperties": False})
    async def introspect(ctx):
        tasks = [t for t in asyncio.all_tasks() if not t.done()]
        names = collections.Counter(getattr(t.get_coro(), "__qualname__", "?") for t in tasks)
        return {
            "asyncioTasks": len(tasks),
            "byCoroutine": dict(names.most_common(8)),
            "threads": threading.active_count(),
            "changeListeners": server.changes.listeners,
            "gcObjects": len(gc.get_objects()),
        }

    return server
