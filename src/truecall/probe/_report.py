"""What the probe saw: findings with their evidence and rule, observations, per-era facts, the report."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


from ._rules import RULES, excerpt

#: The exit status of a run that reached the server but called none of its tools (none is read-only,
#: or --tool named none it lists): not a pass, since nothing of the tools was checked.
NOTHING_PROBED = 3
#: A secret-looking value the probe sends in two calls, one the tool may serve and one that fails its
#: validation (a validation error that repeats every argument is where secrets are echoed most): an
#: error that repeats it echoes secrets.  The report never shows it, whole or as the tail a server's cut
#: echo leaves ("…lprobe0bb5612ae9b5'").
PLANTED_PREFIX = "sk_live_truecallprobe"
_PLANTED = re.compile(r"(?:sk_live_truecall)?\w{0,5}probe[0-9a-f]{8,16}\b")


def scrub(value: Any) -> Any:
    """``value`` as the report may show it: every secret the server sent back (or the probe planted)
    replaced by its kind — the probe's own report is read and pasted as widely as any transcript."""
    from ..judge import secret_spans
    from ..audit.redaction import redact

    def text(s: str) -> str:
        s = _PLANTED.sub("[REDACTED:planted]", s)
        spans = secret_spans(s)
        for start, end, kind in sorted(spans, reverse=True):
            s = s[:start] + f"[REDACTED:{kind}]" + s[end:]
        return s

    def walk(v: Any, depth: int = 0) -> Any:
        if isinstance(v, str):
            return text(v)
        if isinstance(v, dict) and depth < 32:
            return {k: walk(item, depth + 1) for k, item in v.items()}
        if isinstance(v, (list, tuple)) and depth < 32:
            return [walk(item, depth + 1) for item in v]
        return v

    return redact(walk(value))

@dataclass
class Finding:
    """One thing the probe saw, with what shows it."""

    severity: str  # "failure" | "warning"
    layer: str  # "protocol" | "tool" | "red line"
    code: str
    era: str
    tool: str | None
    summary: str
    request: dict[str, Any]
    answer: Any
    rule: str = ""
    #: Every era that showed the same cause (the first one's call is the evidence): one cause, one finding.
    eras: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rule = self.rule or RULES.get(self.code, "")
        self.eras = self.eras or [self.era]

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "layer": self.layer, "code": self.code, "era": self.era,
                "eras": self.eras, "tool": self.tool, "summary": self.summary,
                "evidence": {"request": self.request, "answer": self.answer}, "rule": self.rule}


@dataclass
class Observation:
    """A call and what a user would be told about it (``describe()``)."""

    era: str
    tool: str
    purpose: str  # "generated", "missing_argument", "wrong_type", "unknown_tool"
    arguments: Any
    outcome: str  # done, unconfirmed, failed, contract_broken, accepted, protocol_error, timeout, input
    describe: str

    def to_dict(self) -> dict[str, Any]:
        return {"era": self.era, "tool": self.tool, "purpose": self.purpose, "arguments": self.arguments,
                "outcome": self.outcome, "describe": self.describe}


@dataclass
class EraReport:
    requested: str
    version: str | None = None
    server: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    tools: list[str] = field(default_factory=list)
    probed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    duplicate: bool = False  # the server chose a version already probed

    def to_dict(self) -> dict[str, Any]:
        return {"requested": self.requested, "version": self.version, "server": self.server, "error": self.error,
                "tools": self.tools, "probed": self.probed, "skipped": self.skipped}


@dataclass
class Report:
    target: str
    eras: list[EraReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def reached(self) -> list[EraReport]:
        return [e for e in self.eras if e.version is not None and not e.duplicate]

    @property
    def probed(self) -> list[str]:
        return sorted({t for e in self.reached for t in e.probed})

    @property
    def exit_status(self) -> int:
        """0 nothing found, 1 warnings, 2 failures (or no era reached), 3 no tool probed and no failure:
        the protocol checks alone are not a pass."""
        if not self.reached or any(f.severity == "failure" for f in self.findings):
            return 2
        if not self.probed:
            return NOTHING_PROBED
        return 1 if self.findings else 0

    def summary(self) -> str:
        failures = sum(f.severity == "failure" for f in self.findings)
        warnings = sum(f.severity == "warning" for f in self.findings)
        eras = ", ".join(e.version or e.requested for e in self.reached) or "none reached"
        probed = self.probed
        tools = f"{_n(len(probed), 'tool')} probed" if probed or not self.reached else \
            "no tool probed, so no tool was checked (name tools with --tool, or --allow-writes)"
        return f"{_n(failures, 'failure')}, {_n(warnings, 'warning')}; {tools}; eras: {eras}; exit {self.exit_status}"

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "eras": [e.to_dict() for e in self.eras],
                "findings": [f.to_dict() for f in self.findings],
                "observations": [o.to_dict() for o in self.observations], "notes": self.notes,
                "summary": self.summary(), "exitStatus": self.exit_status}


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
