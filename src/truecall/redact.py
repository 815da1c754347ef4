"""Redaction before anything is written.

Two nets: sensitive *names* (a field called ``password`` is never written, whatever
its value) and sensitive *values* (a bearer token pasted into a free-text field).
For tool arguments we go further and keep only a fingerprint: keys, sizes and a
keyed hash, so the audit trail can prove *what* was sent without holding it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from functools import lru_cache
from typing import Any

import orjson

__all__ = ["REDACTED", "UNDECLARED", "is_sensitive_name", "redact", "redact_text", "fingerprint"]

REDACTED = "[REDACTED]"

_SENSITIVE_NAME = re.compile(
    r"pass(word|wd|code|phrase)|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|"
    r"authori[sz]ation|cookie|credential|signature|card[_-]?(number|no)|cardnumber|"
    r"(^|[_\-.\s])(pin|otp|ssn|cvv|cvc|pwd|auth|session|bearer)($|[_\-.\s])",
    re.IGNORECASE,
)

# Value patterns, most specific first.  Each match is replaced, the rest of the
# text is kept so that a log line stays readable.
_SENSITIVE_VALUES: tuple[tuple[str, re.Pattern[str]], ...] = (
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


@lru_cache(maxsize=4096)
def is_sensitive_name(name: str) -> bool:
    return bool(_SENSITIVE_NAME.search(name))


def _luhn(digits: str) -> bool:
    total, parity = 0, len(digits) % 2
    for i, ch in enumerate(digits):
        d = ord(ch) - 48
        if i % 2 == parity:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _replace(kind: str):
    def repl(match: re.Match[str]) -> str:
        if kind == "card_number":
            digits = re.sub(r"\D", "", match.group(0))
            if not (13 <= len(digits) <= 19 and _luhn(digits)):
                return match.group(0)
        return f"[REDACTED:{kind}]"

    return repl


_REPLACERS = tuple((pattern, _replace(kind)) for kind, pattern in _SENSITIVE_VALUES)


# One pass that finds whether any pattern *could* match; most strings (names,
# ids, tenants) have none, and then the ten substitutions are skipped.
_ANY_SENSITIVE = re.compile("|".join(f"(?:{p.pattern})" for _, p in _SENSITIVE_VALUES), re.S | re.I)


def redact_text(value: str) -> str:
    """Replace every sensitive pattern inside a string."""
    if len(value) <= 256:
        return _redact_short(value)
    return _redact(value)


def _redact(value: str) -> str:
    if not value.isascii():  # lone surrogates cannot be stored or encoded anywhere: replace them
        value = value.encode("utf-8", "replace").decode("utf-8")
    if not _ANY_SENSITIVE.search(value):
        return value
    for pattern, repl in _REPLACERS:
        value = pattern.sub(repl, value)
    return value


_redact_short = lru_cache(maxsize=4096)(_redact)


def redact(value: Any, _depth: int = 0) -> Any:
    """A copy of ``value`` with sensitive names and values replaced; never mutates."""
    if _depth > 32:
        return REDACTED
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            skey = redact_text(str(key))
            out[skey] = REDACTED if is_sensitive_name(skey) else redact(item, _depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [redact(item, _depth + 1) for item in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return redact_text(repr(value))


#: What the audit trail writes for an argument name the tool does not declare.
UNDECLARED = "[undeclared]"


def fingerprint(arguments: Any, key: bytes, declared: "frozenset[str] | set[str] | None" = None) -> dict[str, Any]:
    """Keys, size and a keyed hash of ``arguments``: enough to audit, nothing to leak.

    The hash is an HMAC so that a low-entropy secret (a PIN, a short password)
    cannot be recovered by hashing guesses without the deployment's audit key.
    ``declared``: the names the tool's schema declares; any other key is client data that no
    pattern may recognise (``sk-live-1a2b``, a random marker) and is written as ``[undeclared]``.
    """
    try:
        raw = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        try:
            raw = repr(arguments).encode("utf-8", "replace")
        except RecursionError:  # nested deeper than repr can go: the fingerprint says so
            raw = f"<{type(arguments).__name__} nested too deeply>".encode()
    if not isinstance(arguments, dict):
        keys: list[str] = []
    elif declared is None:
        keys = [_safe_key(k) for k in arguments]
    else:
        keys = [_safe_key(k) if k in declared else UNDECLARED for k in arguments]
    mac = _hmac_for(key).copy()  # the key schedule is done once per key, not once per call
    mac.update(raw)
    return {
        "argKeys": keys,
        "argBytes": len(raw),
        "argHash": mac.hexdigest()[:32],
    }


@lru_cache(maxsize=8)
def _hmac_for(key: bytes) -> "hmac.HMAC":
    return hmac.new(key, digestmod=hashlib.sha256)


@lru_cache(maxsize=4096, typed=True)  # typed: 1, 1.0 and True are different keys with different names
def _safe_key(key: Any) -> str:
    """An argument name fit for the audit trail: keys are client data too, so a key that
    is itself a secret (or names one) is recorded as ``[REDACTED]``."""
    name = redact_text(str(key))
    return REDACTED if name != str(key) or is_sensitive_name(name) else name[:64]
