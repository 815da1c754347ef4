"""What a value is: the shapes of secrets (keys, tokens, card numbers), in free text and alone.

``SENSITIVE_VALUES`` are the shapes redaction replaces (``redact.redact_text``), most specific first;
:func:`secret_spans` finds them (with Luhn-checked card numbers, a value after "password:", and
long high-entropy tokens) and :func:`looks_secret` says whether one value is a secret, by its
shape or by the key it is stored under.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = ["SENSITIVE_VALUES", "luhn", "looks_secret", "secret_spans"]

#: Value shapes, most specific first.  Each match is a secret of the named kind (a card number only
#: when its digits pass the Luhn check).
SENSITIVE_VALUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private_key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", re.S)),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*")),
    ("bearer", re.compile(r"\b(?:Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}", re.I)),
    ("aws_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}\b")),
    ("gcp_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("truecall_token", re.compile(r"\btc_[A-Za-z0-9_-]{20,}")),
    ("api_key", re.compile(r"\b(?:sk|pk|rk)[-_](?:live|test|proj)?[-_]?[A-Za-z0-9]{16,}")),
    ("secret_assignment", re.compile(
        r"\b(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)\s*[:=]\s*\S+", re.I)),
    ("card_number", re.compile(r"\b\d(?:[ -]?\d){12,18}\b")),
)


def luhn(digits: str) -> bool:
    """The Luhn check digit test (payment card numbers)."""
    total, parity = 0, len(digits) % 2
    for i, ch in enumerate(digits):
        d = ord(ch) - 48
        if i % 2 == parity:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.~]{24,}")


def _entropy(text: str) -> float:
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _high_entropy(token: str) -> bool:
    """A long random-looking token: mixed letters and digits, no word shape, ≥ 4 bits per character."""
    if len(token) < 24 or token.isdigit() or token.isalpha():
        return False
    if "/" in token and not re.search(r"[A-Z].*\d|\d.*[A-Z]", token):
        return False  # a path
    classes = sum(bool(re.search(p, token)) for p in (r"[a-z]", r"[A-Z]", r"\d"))
    return classes >= 2 and _entropy(token) >= 4.0


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of every secret in free text: known shapes, Luhn-valid card numbers, a
    value after "password:" and long high-entropy tokens; sorted, not overlapping."""
    spans: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e in taken)

    for kind, pattern in SENSITIVE_VALUES:
        for m in pattern.finditer(text):
            if kind == "card_number":
                digits = re.sub(r"\D", "", m.group(0))
                if not (13 <= len(digits) <= 19 and luhn(digits)):
                    continue
            if free(*m.span()):
                spans.append((m.start(), m.end(), kind))
                taken.append(m.span())
    for m in _TOKEN.finditer(text):
        if free(*m.span()) and _high_entropy(m.group(0)):
            spans.append((m.start(), m.end(), "high_entropy"))
            taken.append(m.span())
    return sorted(spans)


def looks_secret(value: str, *, key: str | None = None) -> bool:
    """Whether ``value`` is a secret: stored under a key that names a credential, or shaped like
    one (a known shape, a Luhn-valid card number, a long high-entropy token)."""
    if key is not None and value:
        from ._forms import names_credential

        if names_credential(key, field_name=True):
            return True
    return bool(secret_spans(value))
