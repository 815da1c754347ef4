"""What a value is: a secret by its shape, its context or its randomness, in free text and alone.

``SENSITIVE_VALUES`` are the shapes redaction replaces on every call (``redact.redact_text``: cheap,
cached), most specific first.  What has no shape — a password with no prefix, an AWS *secret* access
key (forty characters of base64 like any other) — is found by :func:`secret_spans` as well:

- **context**: the value after words that name a credential ("password hunter2", "the secret key
  is …", ``client_secret=…``: a pair's name is asked of :func:`names_credential`);
- **randomness**: :func:`random_token` (long mixed-class tokens at ≥ 4 bits a character, long hex,
  short password-like tokens mixing all four character classes).

:func:`secret_spans` is for text off a call's path (``redact.redact_free_text``: a failure's
traceback, URIs an answer or a record repeats, a session's subscriptions and clientInfo): it costs
a scan per shape, one per context form and a count per candidate token.  Written here rather than
taken from ``detect-secrets`` (Yelp, 1.5.0): its entropy plugins read quoted strings only, so an
unquoted key in an exception message goes unseen, and its scan of one line costs about a hundred
times this one's (figures in the change that chose it).
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = ["SENSITIVE_VALUES", "luhn", "looks_secret", "secret_spans", "random_token"]

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


#: Words that name a credential, before the value they introduce in prose ("password hunter2",
#: "the secret key is …"); a ``name=value`` or ``name: value`` pair asks :func:`names_credential`.
_CREDENTIAL_WORDS = (
    r"pass(?:word|wd|phrase|code)?|pwd|secret(?:[ _-]?(?:access[ _-]?)?key)?|"
    r"(?:access|auth|api|refresh|session|bearer|id)?[ _-]?token|api[ _-]?key|access[ _-]?key|private[ _-]?key|"
    r"credentials?|client[ _-]?secret|pin|otp|signing[ _-]?key"
)
_PROSE = re.compile(
    rf"(?i)(?<![A-Za-z0-9])(?:{_CREDENTIAL_WORDS})(?![A-Za-z0-9])"
    r"(?:\s*[\"']?\s*(?:[:=]|=>|\bis\b|\bwas\b|\bof\b)\s*|\s+)"
    r"[\"'`]?(?P<value>[^\s\"'`,;&)\]}<>]{4,})"
)
_PAIR = re.compile(r"(?P<key>[A-Za-z][A-Za-z0-9_.\-]{1,40})[\"']?\s*[:=]\s*[\"'`]?(?P<value>[^\s\"'`,;&)\]}<>]{4,})")
#: What follows a credential word without being a value ("password is required").
_NOT_VALUES = frozenset({"is", "was", "required", "missing", "invalid", "incorrect", "wrong", "expired", "must",
                         "should", "field", "fields", "for", "the", "a", "an", "not", "none", "null", "policy",
                         "reset", "changed", "please", "and", "or", "to", "of", "in", "on", "with", "from",
                         "[redacted]", "true", "false"})
#: Candidate tokens for randomness: runs of base64/base64url/hex characters and the symbols a
#: password may hold, split on everything else.
_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-!@#$%^&*~.]{10,}")
_SYMBOLS = frozenset("!@#$%^&*~")
_HEX = re.compile(r"[0-9a-fA-F]{24,}")


def _entropy(text: str) -> float:
    """Shannon entropy of ``text``'s characters, in bits a character."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0


def random_token(token: str) -> bool:
    """Whether ``token`` looks drawn at random (a key) or chosen to be hard to guess (a password).

    - 24+ hex digits (a key or a digest: random hex has about 3.7 bits a character);
    - 20+ characters mixing upper case, lower case and digits at ≥ 4 bits a character, not mostly
      words (random base64 has about 4.6 over 40 characters; paths, identifiers and UUIDs fail a test);
    - 10–64 characters mixing all four classes, symbols included (a password someone chose).
    """
    n = len(token)
    if n < 10 or n > 512:
        return False
    if n >= 24 and _HEX.fullmatch(token):
        return _entropy(token) >= 3.3 and any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
    if not (any(c.isupper() for c in token) and any(c.islower() for c in token) and any(c.isdigit() for c in token)):
        return False
    if n >= 20:
        core = token.strip("=")
        return _entropy(core) >= 4.0 and sum(len(w) for w in re.findall(r"[a-z]{4,}", core)) * 2 < len(core)
    return n <= 64 and any(c in _SYMBOLS for c in token) and _entropy(token) >= 3.0


def _context_spans(text: str) -> list[tuple[int, int, str]]:
    """Values that words naming a credential introduce: in prose, or as a ``name=value`` pair whose
    name :func:`names_credential` recognises (``aws_secret_access_key=…``, ``"pin": "…"``)."""
    from ._forms import names_credential

    spans = []
    for m in _PROSE.finditer(text):
        if m.group("value").lower().rstrip(".:") not in _NOT_VALUES:
            spans.append((m.start("value"), m.end("value"), "context"))
    for m in _PAIR.finditer(text):
        if m.group("value").lower() not in _NOT_VALUES and names_credential(m.group("key"), field_name=True):
            spans.append((m.start("value"), m.end("value"), "context"))
    return spans


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of every secret in free text, sorted and not overlapping: known shapes
    (Luhn-checked card numbers), values that words naming a credential introduce ("password: …",
    ``client_secret=…``, "the password is …") and random-looking tokens (:func:`random_token`).
    Where spans overlap the first found wins: a shape before its context, context before randomness."""
    spans: list[tuple[int, int, str]] = []
    for kind, pattern in SENSITIVE_VALUES:
        for m in pattern.finditer(text):
            if kind == "card_number":
                digits = re.sub(r"\D", "", m.group(0))
                if not (13 <= len(digits) <= 19 and luhn(digits)):
                    continue
            spans.append((m.start(), m.end(), kind))
    spans += _context_spans(text)
    for m in _TOKEN.finditer(text):
        token = m.group(0).rstrip(".")  # a sentence's full stop is not part of a key
        if random_token(token):
            spans.append((m.start(), m.start() + len(token), "high_entropy"))
    out: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(spans, key=lambda s: (s[0], -s[1])):
        if out and start < out[-1][1]:  # overlapping: one span covering both, the first kind
            out[-1] = (out[-1][0], max(out[-1][1], end), out[-1][2])
        else:
            out.append((start, end, kind))
    return out


def looks_secret(value: str, *, key: str | None = None) -> bool:
    """Whether ``value`` is a secret: stored under a key that names a credential, or holding one
    (a known shape, a Luhn-valid card number, a value a credential word introduces, a random token)."""
    if key is not None and value:
        from ._forms import names_credential

        if names_credential(key, field_name=True):
            return True
    return bool(secret_spans(value))
