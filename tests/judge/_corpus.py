"""The labelled corpus and its figures: precision and recall per class and per language."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

import orjson

from _paths import TESTS
from truecall.judge import claim_in_result, credential_ask

CORPUS = TESTS / "judge" / "corpus"
NONE = "none"


def load(name: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (CORPUS / name).read_text("utf-8").splitlines() if line.strip()]


def claim_label(case: dict[str, Any]) -> str:
    claim = claim_in_result({"content": [{"type": "text", "text": case["text"]}], "isError": False})
    return claim.kind if claim is not None else NONE


def form_label(case: dict[str, Any]) -> str:
    ask = credential_ask(case["message"], case["schema"])
    return ask.category if ask is not None else NONE


@dataclass
class Figures:
    """Counts of one class: true positives, false positives, false negatives."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0


def measure(cases: list[dict[str, Any]], judge: Callable[[dict[str, Any]], str], show: Callable[[dict[str, Any]], str],
            ) -> tuple[dict[str, Figures], dict[tuple[str, str], Figures]]:
    """Figures per class (``none`` excluded: it is what is left) and per (language, class)."""
    overall: dict[str, Figures] = defaultdict(Figures)
    by_language: dict[tuple[str, str], Figures] = defaultdict(Figures)
    for case in cases:
        want, got = case["label"], judge(case)
        for table, key in ((overall, "{}"), (by_language, case["language"])):
            def at(label: str) -> Figures:
                return table[label] if key == "{}" else table[(key, label)]  # type: ignore[index]

            if want == got:
                if want != NONE:
                    at(want).tp += 1
                continue
            if want != NONE:
                at(want).fn += 1
                if key == "{}":
                    at(want).misses.append(f"missed ({got}): {show(case)}")
            if got != NONE:
                at(got).fp += 1
                if key == "{}":
                    at(got).misses.append(f"false ({want}): {show(case)}")
    return dict(overall), dict(by_language)


def report(title: str, overall: dict[str, Figures], by_language: dict[tuple[str, str], Figures]) -> str:
    lines = [f"== {title}", f"{'class':<12}{'precision':>10}{'recall':>8}  (tp/fp/fn)"]
    for label, fig in sorted(overall.items()):
        lines.append(f"{label:<12}{fig.precision:>10.1%}{fig.recall:>8.1%}  ({fig.tp}/{fig.fp}/{fig.fn})")
    lines.append(f"{'language/class':<22}{'precision':>10}{'recall':>8}")
    for (language, label), fig in sorted(by_language.items()):
        lines.append(f"{language + '/' + label:<22}{fig.precision:>10.1%}{fig.recall:>8.1%}  ({fig.tp}/{fig.fp}/{fig.fn})")
    for label, fig in sorted(overall.items()):
        lines += [f"  {label}: {m}" for m in fig.misses]
    return "\n".join(lines)
