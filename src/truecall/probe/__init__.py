"""``truecall probe``: whether an MCP server's results can be trusted, shown with evidence.

The accident in the project's story is common in public servers: a failure sent as
ordinary text with ``isError: false``, an unknown tool answered as a tool result,
structured content that breaks its own ``outputSchema``, "accepted" (已受理) with no task
and no reference.  The probe connects in every era the server offers (2026-07-28 and the
handshake), calls the tools it may call (``readOnlyHint: true`` unless told otherwise) with
arguments made from their schemas and with deliberately wrong ones, and reports each
finding with its severity, its evidence (the request and the part of the answer that
shows it) and the rule it breaks.  Every call is bounded in time; nothing here retries.

Severities: ``failure`` (the answer breaks a rule a client relies on), ``warning`` (a
heuristic read of words, or a rule whose era allows both), and the exit status follows
the worst: 0 nothing found, 1 warnings, 2 failures (or no era could be reached), 3 no tool
probed (none is read-only, or ``--tool`` named none the server lists): the protocol checks
alone are not a pass.  Every judgment about words (a claim of acceptance or failure, a form
asking for a credential, a value that is a secret) is the judge's (:mod:`truecall.judge`);
no secret the server sent, and not the probe's planted one, is repeated in the report.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ._arguments import Seen
from ._eras import _one_era
from ._raw import _raw_checks, _raw_http
from ._render import render
from ._report import NOTHING_PROBED, Finding, Report

__all__ = ["Finding", "Report", "probe", "render", "ERAS", "NOTHING_PROBED"]

#: One connection per era: 2026-07-28 (server/discover) and the handshake (the server may choose 2025-06-18).
ERAS = ("2026-07-28", "2025-11-25")


async def probe(target: Any, *, token: str | None = None, tools: Sequence[str] = (), allow_writes: bool = False,
                timeout: float = 30.0, eras: Sequence[str] = ERAS, env: Any = None,
                values: Mapping[str, Any] | None = None) -> Report:
    """Probe one server (a command line, a URL or a :class:`truecall.Server`) in each era it offers.

    ``values`` gives the value of an argument by its name (``{"url": "http://127.0.0.1:8000/"}``), where
    the schema and what the server's own read-only tools list cannot: those are the caller's, like every
    path on the command line, and never held against the server as a leak."""
    shown = target if isinstance(target, str) else " ".join(target) if isinstance(target, (list, tuple)) \
        else type(target).__name__
    report = Report(target=shown)
    seen = Seen(values=dict(values or {}))
    if isinstance(target, (list, tuple)):
        seen.supplied(str(arg) for arg in target[1:])
    seen.known.update(str(v) for v in (env or {}).values())
    seen.known.update(str(v) for v in seen.values.values())
    for requested in eras:
        await _one_era(report, target, requested, token=token, timeout=timeout, tools=tools,
                       allow_writes=allow_writes, env=env, seen=seen)
    if isinstance(target, (list, tuple)) and report.reached:
        await _raw_checks(report, target, modern=any(e.version == "2026-07-28" for e in report.reached), env=env,
                          timeout=timeout)
    elif isinstance(target, str) and any(e.version == "2026-07-28" for e in report.reached):
        await _raw_http(report, target, token=token, timeout=timeout)
    elif report.reached:
        report.notes.append("raw JSON-RPC checks (parse error, invalid request, unsupported version) run over "
                            "stdio, and over HTTP when the server speaks 2026-07-28")
    return report
