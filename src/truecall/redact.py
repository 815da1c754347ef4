"""Redaction before anything is written.

Two nets: sensitive *names* (a field called ``password`` is never written, whatever
its value) and sensitive *values* (a bearer token pasted into a free-text field).
For tool arguments we go further and keep only a fingerprint: keys, sizes and a
keyed hash, so the audit trail can prove *what* was sent without holding it.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any, Callable

import orjson

__all__ = ["REDACTED", "UNDECLARED", "is_sensitive_name", "redact", "redact_text", "shown_uri", "fingerprint", "fingerprint_into",
           "hmac_pads"]

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


def _replace(kind: str) -> Callable[[re.Match[str]], str]:
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


def shown_uri(uri: str) -> str:
    """A client's URI as an answer or a record may repeat it: redacted first, then cut (a cut first
    could leave a piece of a secret too short for any pattern)."""
    return redact_text(uri)[:256]


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
    doc: dict[str, Any] = {}
    fingerprint_into(doc, arguments, hmac_pads(key), declared)
    return doc


def fingerprint_into(doc: dict[str, Any], arguments: Any, pads: "HmacPads",
                     declared: "frozenset[str] | set[str] | None" = None) -> None:
    """:func:`fingerprint`, written into ``doc`` (``argKeys``, ``argBytes``, ``argHash``) with the
    key's pads at hand: the audit's per-call record builds no second dict and looks up no key."""
    try:
        raw = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        try:
            raw = repr(arguments).encode("utf-8", "replace")
        except RecursionError:  # nested deeper than repr can go: the fingerprint says so
            raw = f"<{type(arguments).__name__} nested too deeply>".encode()
    if not isinstance(arguments, dict):
        doc["argKeys"] = []
    elif declared is None:
        doc["argKeys"] = [_safe_key(k) for k in arguments]
    else:
        doc["argKeys"] = [_safe_key(k) if k in declared else UNDECLARED for k in arguments]
    doc["argBytes"] = len(raw)
    inner, outer = pads
    inner = inner.copy()
    inner.update(raw)
    outer = outer.copy()
    outer.update(inner.digest())
    doc["argHash"] = outer.hexdigest()[:32]


#: SHA-256 states after the key's inner and outer pad blocks (RFC 2104): an HMAC is then two
#: copies and two updates.  ``hmac.HMAC.copy()`` + ``hexdigest()`` cost about twice as much
#: (two Python-level objects, OpenSSL's HMAC context copied twice), paid by every tool call.
HmacPads = tuple["hashlib._Hash", "hashlib._Hash"]
_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))


def _builtin_sha256() -> Callable[[bytes], "hashlib._Hash"]:
    """CPython's own SHA-256 when it has one: its ``copy()`` is a struct copy where OpenSSL's
    (an EVP context) costs more than the two short compressions an argument hash needs
    (callgrind: 10.7k instructions per HMAC against 13k).  Same digests, either way."""
    import importlib

    for name in ("_sha256", "_sha2"):  # (3.11; 3.12 renamed it)
        try:
            constructor: Callable[[bytes], "hashlib._Hash"] = importlib.import_module(name).sha256
        except (ImportError, AttributeError):
            continue
        return constructor
    return hashlib.sha256


_sha256 = _builtin_sha256()


@lru_cache(maxsize=8)
def hmac_pads(key: bytes) -> HmacPads:
    """The key schedule of HMAC-SHA256 under ``key``, done once per key."""
    block = hashlib.sha256(key).digest() if len(key) > 64 else key
    block = block.ljust(64, b"\0")
    return _sha256(block.translate(_IPAD)), _sha256(block.translate(_OPAD))


@lru_cache(maxsize=4096, typed=True)  # typed: 1, 1.0 and True are different keys with different names
def _safe_key(key: Any) -> str:
    """An argument name fit for the audit trail: keys are client data too, so a key that
    is itself a secret (or names one) is recorded as ``[REDACTED]``."""
    name = redact_text(str(key))
    return REDACTED if name != str(key) or is_sensitive_name(name) else name[:64]
