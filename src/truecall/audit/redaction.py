"""Redaction before anything is written.

Two nets: sensitive *names* (a field called ``password`` is never written, whatever
its value) and sensitive *values* (a bearer token pasted into a free-text field).
For tool arguments we go further and keep only a fingerprint: keys, sizes and a
keyed hash (a MAC), so the audit trail can prove *what* was sent without holding it.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any, Callable

import orjson

from ..judge._secrets import SENSITIVE_VALUES, luhn

__all__ = ["REDACTED", "UNDECLARED", "is_sensitive_name", "redact", "redact_at", "redact_text", "redact_free_text", "shown_uri", "fingerprint", "fingerprint_into",
           "mac_state", "argument_keys", "arg_hash", "arg_hash_matches", "canonical_arguments", "legacy_arg_hash"]

REDACTED = "[REDACTED]"

# Value shapes live with the judge (``judge._secrets``), most specific first.  Each match is replaced,
# the rest of the text is kept so that a log line stays readable.
_SENSITIVE_VALUES = SENSITIVE_VALUES


@lru_cache(maxsize=4096)
def is_sensitive_name(name: str) -> bool:
    """Whether a key names a credential (the judge's :func:`~truecall.judge.names_credential`, as a
    field's own name); cached here too, so the audit path pays one dict look-up per name."""
    # (imported here: the judge's form tables take tens of milliseconds to build, and ``import truecall``
    # must not pay for them; a process that redacts a name pays once)
    from ..judge import names_credential

    return names_credential(_MARKER.sub(" ", name), field_name=True)


#: What redaction itself wrote into a key (``[REDACTED:jwt]``): not a name the key's owner chose.
_MARKER = re.compile(r"\[REDACTED(?::\w+)?\]")


def _replace(kind: str) -> Callable[[re.Match[str]], str]:
    def repl(match: re.Match[str]) -> str:
        if kind == "card_number":
            digits = re.sub(r"\D", "", match.group(0))
            if not (13 <= len(digits) <= 19 and luhn(digits)):
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


def redact_free_text(value: str) -> str:
    """:func:`redact_text`, and also what has no shape: a value after words that name a credential
    (``password: hunter2``) and random-looking tokens (an AWS secret access key), as the judge's
    :func:`~truecall.judge.secret_spans` finds them.  For text off a call's path (a failure's
    traceback, URIs an answer or a record repeats, a session's subscriptions and clientInfo)."""
    from ..judge import secret_spans

    value = redact_text(value)
    spans = secret_spans(value)
    if not spans:
        return value
    out, at = [], 0
    for start, end, kind in spans:
        out += [value[at:start], f"[REDACTED:{kind}]"]
        at = end
    out.append(value[at:])
    return "".join(out)


def shown_uri(uri: str) -> str:
    """A client's URI as an answer or a record may repeat it: redacted first, then cut (a cut first
    could leave a piece of a secret too short for any pattern).  Shapes only: the caller hears its own
    URI back; what is kept of a URI a caller chose is its template, variable sizes and a keyed hash."""
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


def redact(value: Any) -> Any:
    """A copy of ``value`` with sensitive names and values replaced; never mutates."""
    return redact_at(value, 0)


def redact_at(value: Any, depth: int) -> Any:
    """:func:`redact` for a value found ``depth`` levels down (past 32, the whole value is withheld)."""
    if depth > 32:
        return REDACTED
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            skey = redact_text(str(key))
            out[skey] = REDACTED if is_sensitive_name(skey) else redact_at(item, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [redact_at(item, depth + 1) for item in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return redact_text(repr(value))


#: What the audit trail writes for an argument name the tool does not declare.
UNDECLARED = "[undeclared]"


def fingerprint(arguments: Any, key: bytes, declared: "frozenset[str] | set[str] | None" = None) -> dict[str, Any]:
    """Keys, size and a keyed hash of ``arguments``: enough to audit, nothing to leak.

    The hash is a MAC (keyed BLAKE2b, :func:`arg_hash`) so that a low-entropy secret (a PIN, a
    short password) cannot be recovered by hashing guesses without the deployment's audit key.
    ``declared``: the names the tool's schema declares; any other key is client data that no
    pattern may recognise (``sk-live-1a2b``, a random marker) and is written as ``[undeclared]``.
    """
    doc: dict[str, Any] = {}
    fingerprint_into(doc, arguments, mac_state(key), declared)
    doc["argKeys"] = list(doc["argKeys"])  # the caller's own (fingerprint_into may share a cached one)
    return doc


def canonical_arguments(arguments: Any) -> bytes:
    """The bytes an argument hash is made of (and ``argBytes`` counts): JSON with sorted keys, or
    the ``repr`` of what is not JSON."""
    try:
        return orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        try:
            return repr(arguments).encode("utf-8", "replace")
        except RecursionError:  # nested deeper than repr can go: the fingerprint says so
            return f"<{type(arguments).__name__} nested too deeply>".encode()


def fingerprint_into(doc: dict[str, Any], arguments: Any, mac: MacState,
                     declared: "frozenset[str] | set[str] | None" = None) -> None:
    """:func:`fingerprint`, written into ``doc`` (``argKeys``, ``argBytes``, ``argHash``) with the
    key's MAC state at hand (:func:`mac_state`).  ``argKeys`` may be a tuple shared with other
    documents (:func:`argument_keys`)."""
    try:
        raw = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        raw = canonical_arguments(arguments)
    doc["argKeys"] = argument_keys(arguments, declared)
    doc["argBytes"] = len(raw)
    h = mac.copy()
    h.update(raw)
    doc["argHash"] = h.hexdigest()


def argument_keys(arguments: Any, declared: "frozenset[str] | set[str] | None") -> "tuple[str, ...] | list[str]":
    """``argKeys``: the argument names fit for the audit trail, ``[undeclared]`` for a name the
    tool does not declare (``declared``; ``None``: unknown).  Arguments that name declared fields
    only get a tuple made once and shared (it is only serialised): :data:`ARG_KEYS`."""
    if not isinstance(arguments, dict):
        return ()
    if type(declared) is frozenset:
        names = tuple(arguments)
        try:
            return ARG_KEYS[(declared, names)]
        except KeyError:
            keys = tuple([_safe_key(k) if k in declared else UNDECLARED for k in names])
            # Only declared names: the schema bounds what is kept (client-made names are not).
            if len(ARG_KEYS) < 4096 and declared.issuperset(names):
                ARG_KEYS[(declared, names)] = keys
            return keys
    if declared is None:
        return [_safe_key(k) for k in arguments]
    return [_safe_key(k) if k in declared else UNDECLARED for k in arguments]


#: (declared names, argument names) → argKeys, for arguments that use declared names only.
ARG_KEYS: dict[tuple[frozenset[str], tuple[str, ...]], tuple[str, ...]] = {}

#: The keyed hash of an argument fingerprint: BLAKE2b keyed with the audit key, 16-byte digest
#: (RFC 7693's MAC mode; 32 hex digits, as before).  It replaced HMAC-SHA256 (its first 32 hex
#: digits) in December 2026: one keyed state copied and one update per call, two BLAKE2b
#: compressions (about 2.5k instructions) where the HMAC took two SHA-256 ones (6k) and twice the
#: Python-level steps.  :func:`arg_hash_matches` checks a record of either kind.
MacState = hashlib.blake2b
_MAC_DIGEST = 16


@lru_cache(maxsize=8)
def mac_state(key: bytes) -> MacState:
    """BLAKE2b keyed with ``key``, before any data: copied for every hash (the key block is set up
    once).  A key longer than BLAKE2b takes (64 bytes) is hashed down to 64 bytes first."""
    if len(key) > 64:
        key = hashlib.blake2b(key).digest()
    return hashlib.blake2b(key=key, digest_size=_MAC_DIGEST)


def arg_hash(arguments: Any, key: bytes) -> str:
    """The ``argHash`` of ``arguments`` under ``key``, as records written now carry it."""
    h = mac_state(key).copy()
    h.update(canonical_arguments(arguments))
    return h.hexdigest()


def legacy_arg_hash(arguments: Any, key: bytes) -> str:
    """The ``argHash`` records written before December 2026 carry: HMAC-SHA256, first 32 hex digits."""
    import hmac

    return hmac.new(key, canonical_arguments(arguments), hashlib.sha256).hexdigest()[:32]


def arg_hash_matches(arguments: Any, key: bytes, recorded: str) -> bool:
    """Whether a record's ``argHash`` is the hash of ``arguments`` under ``key``, whichever of the
    two schemes wrote it (keyed BLAKE2b now, HMAC-SHA256 before): a record proves what was sent
    to whoever holds the key and the candidate arguments.  Constant-time comparisons."""
    import hmac

    return any(hmac.compare_digest(candidate, recorded)
               for candidate in (arg_hash(arguments, key), legacy_arg_hash(arguments, key)))


@lru_cache(maxsize=4096, typed=True)  # typed: 1, 1.0 and True are different keys with different names
def _safe_key(key: Any) -> str:
    """An argument name fit for the audit trail: keys are client data too, so a key that
    is itself a secret (or names one) is recorded as ``[REDACTED]``."""
    name = redact_text(str(key))
    return REDACTED if name != str(key) or is_sensitive_name(name) else name[:64]
