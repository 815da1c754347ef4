"""The judge measured on the labelled corpus (tests/judge/corpus): result texts in six languages
(claims of acceptance, completion and failure, and honest data that merely contains the words) and
elicitation forms (credential, payment, recovery-phrase and identity asks, innocent controls that use
the words, adversarial spellings).  Each class must reach 97 % recall and 97 % precision; the
figures per class and per language are printed (``-s``) and shown with a failure."""

from __future__ import annotations

import json

import pytest
from _corpus import claim_label, form_label, load, measure, report

GOAL = 0.97
CLAIMS = load("claims.jsonl")
FORMS = load("forms.jsonl")


def _show_claim(case: dict) -> str:
    return f"[{case['language']}] {case['text'][:90]!r}"


def _show_form(case: dict) -> str:
    return f"[{case['language']}] {case['message'][:60]!r} {json.dumps(case['schema']['properties'], ensure_ascii=False)[:90]}"


def test_the_corpus_is_a_population() -> None:
    assert len(CLAIMS) >= 300 and len(FORMS) >= 200
    for cases in (CLAIMS, FORMS):
        assert {c["language"] for c in cases} == {"en", "zh", "ja", "es", "de", "fr"}
        assert all(c["why"] for c in cases)
    assert {c["label"] for c in CLAIMS} == {"accepted", "completed", "failed", "none"}
    assert {c["label"] for c in FORMS} == {"credential", "payment", "recovery", "identity", "none"}


@pytest.mark.parametrize("corpus", ["claims", "forms"])
def test_precision_and_recall_per_class(corpus: str) -> None:
    cases, judge, show = (CLAIMS, claim_label, _show_claim) if corpus == "claims" else (FORMS, form_label, _show_form)
    overall, by_language = measure(cases, judge, show)
    text = report(f"{corpus}: {len(cases)} cases", overall, by_language)
    print(text)
    low = [label for label, fig in overall.items() if fig.recall < GOAL or fig.precision < GOAL]
    assert not low, f"below {GOAL:.0%} in {low}\n{text}"


@pytest.mark.parametrize("case", [c for c in FORMS if c.get("adversarial")],
                         ids=lambda c: c["why"])
def test_every_adversarial_spelling_is_caught(case: dict) -> None:
    assert form_label(case) == case["label"]
