"""What the probe saw: findings with their evidence and rule, observations, per-era facts, the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from ._rules import RULES, excerpt

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

    def __post_init__(self) -> None:
        self.rule = self.rule or RULES.get(self.code, "")

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "layer": self.layer, "code": self.code, "era": self.era,
                "tool": self.tool, "summary": self.summary,
                "evidence": {"request": self.request, "answer": self.answer}, "rule": self.rule}


@dataclass
class Observation:
    """A call and what a user would be told about it (``describe()``)."""

    era: str
    tool: str
    purpose: str  # "generated", "missing_argument", "wrong_type", "unknown_tool"
    arguments: Any
    outcome: str  # done, failed, contract_broken, accepted, protocol_error, timeout, input
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
    def exit_status(self) -> int:
        if not self.reached or any(f.severity == "failure" for f in self.findings):
            return 2
        return 1 if self.findings else 0

    def summary(self) -> str:
        failures = sum(f.severity == "failure" for f in self.findings)
        warnings = sum(f.severity == "warning" for f in self.findings)
        eras = ", ".join(e.version or e.requested for e in self.reached) or "none reached"
        probed = sorted({t for e in self.reached for t in e.probed})
        return (f"{_n(failures, 'failure')}, {_n(warnings, 'warning')}; {_n(len(probed), 'tool')} probed; "
                f"eras: {eras}; exit {self.exit_status}")

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "eras": [e.to_dict() for e in self.eras],
                "findings": [f.to_dict() for f in self.findings],
                "observations": [o.to_dict() for o in self.observations], "notes": self.notes,
                "summary": self.summary(), "exitStatus": self.exit_status}


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
