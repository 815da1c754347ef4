"""The report as text."""

from __future__ import annotations

import orjson

from ._report import Report, _n
from ._rules import _EXCERPT


def render(report: Report) -> str:
    """The report as text: eras, what a user would be told, the findings with evidence, one summary line."""
    out = [f"truecall probe {report.target}"]
    for era in report.eras:
        if era.error is not None and era.version is None:
            out.append(f"  era {era.requested}: not reached ({era.error})")
            continue
        name = era.server.get("name", "?")
        asked = "" if era.version == era.requested else f" (asked {era.requested})"
        out.append(f"  era {era.version}{asked}: server {name} {era.server.get('version', '')}"
                   .rstrip() + f"; {_n(len(era.tools), 'tool')}, probed: {', '.join(era.probed) or 'none'}")
        if era.error:
            out.append(f"    {era.error}")
        for skipped, why in sorted(era.skipped.items()):
            out.append(f"    skipped {skipped}: {why}")
    if report.observations:
        out.append("what a user would be told:")
        for o in report.observations:
            args = orjson.dumps(o.arguments, default=str).decode()
            said = " ".join(o.describe.split())
            out.append(f"  [{o.era}] {o.tool} {args[:80]} ({o.purpose}) -> {o.outcome}: {said[:200]}")
    if report.findings:
        out.append("findings:")
        for f in report.findings:
            out.append(f"  {f.severity.upper()} {f.layer} {f.code} [{', '.join(f.eras)}] {f.tool or '(server)'}: {f.summary}")
            out.append(f"    sent:    {orjson.dumps(f.request, default=str).decode()[:300]}")
            answer = f.answer if isinstance(f.answer, str) else orjson.dumps(f.answer, default=str).decode()
            out.append(f"    answer:  {answer[:_EXCERPT]}")
            out.append(f"    rule:    {f.rule}")
    for note in report.notes:
        out.append(f"note: {note}")
    out.append(f"summary: {report.summary()}")
    return "\n".join(out)
