"""The tool on truecall's public API, served by the ``truecall serve`` CLI.

    python -m truecall.cli serve bench/peers/truecall_app.py:app            # stdio
    python -m truecall.cli serve bench/peers/truecall_app.py:app --http --port N
    ... truecall_app.py:app_noaudit ...                                      # audit off
    ... truecall_app.py:app_typed ...                                        # the type-hinted twin

Default configuration: input and output validation and the durable SQLite audit
trail on (``app_noaudit`` turns only the audit off).  No bearer tokens are
configured, so on loopback every caller is the local principal, as with the
peers, which have no auth either.  The database lives at ``$BENCH_TRUECALL_DB``
(the orchestrator points it at a fresh temporary folder).

``app_typed`` serves the same tool written the type-hinted way (issue 15): no hand-written schema,
the input schema from ``Annotated[str, Meta(...)]``, the output schema from a ``TypedDict``, the
structured value returned as is.  Its server CPU per call against ``app``'s is the price of the
convenience (the goal: within 5 %).
"""

import os
import sys
import tempfile
from typing import Annotated, TypedDict

from msgspec import Meta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _tool  # noqa: E402
from truecall import Principal, Server, ToolResult, text  # noqa: E402

SCOPE = "incidents:read"


def _build(audit: bool) -> Server:
    db = os.environ.get("BENCH_TRUECALL_DB") or os.path.join(tempfile.mkdtemp(prefix="truecall-bench-"), "bench.db")
    server = Server("bench-truecall", "1.0.0", db=db, audit=audit)
    server.local_principal = Principal("bench@local", "bench", frozenset({SCOPE}))

    @server.tool(_tool.NAME, description=_tool.DESCRIPTION, input_schema=_tool.INPUT_SCHEMA,
                 output_schema=_tool.OUTPUT_SCHEMA, scopes={SCOPE})
    def incident_search(ctx, service: str) -> ToolResult:
        message, structured = _tool.search(service)
        return ToolResult([text(message)], structured)

    return server


Service = Annotated[str, Meta(min_length=1, max_length=128, description="Service name, e.g. payments")]


class Found(TypedDict):
    service: str
    count: Annotated[int, Meta(ge=0)]


def _build_typed() -> Server:
    db = os.environ.get("BENCH_TRUECALL_DB") or os.path.join(tempfile.mkdtemp(prefix="truecall-bench-"), "bench.db")
    server = Server("bench-truecall", "1.0.0", db=db)
    server.local_principal = Principal("bench@local", "bench", frozenset({SCOPE}))

    @server.tool(_tool.NAME, description=_tool.DESCRIPTION, scopes={SCOPE})
    def incident_search(service: Service) -> Found:
        count = _tool.INCIDENTS.get(service, 0)
        return {"service": service, "count": count}

    return server


def app() -> Server:
    return _build(audit=True)


def app_noaudit() -> Server:
    return _build(audit=False)


def app_typed() -> Server:
    return _build_typed()
