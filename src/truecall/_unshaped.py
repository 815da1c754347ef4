"""Secrets with no shape of their own: found by their context or by their randomness.

Shape patterns (:mod:`truecall.redact`) find what announces itself (``sk_live_…``, a JWT, a
bearer header, an AWS key id).  A password has no prefix and an AWS *secret* access key is forty
characters of base64 like any other: they are found here instead, in free text (an exception's
message, a URI, a client's self-description), in two ways.

- **Context**: the value after words that name a credential — ``password: hunter2``,
  ``secret key is …``, ``aws_secret_access_key=…``, ``?token=…``.
- **Randomness**: a token that mixes upper case, lower case and digits over at least 20
  characters with a Shannon entropy of at least 4 bits a character (random base64 has about
  4.6 over 40 characters; words, paths, identifiers and UUIDs fall short of one test or the
  other), 24 or more hex digits (a key or a digest), or a password-like token (10–64 characters
  mixing all four classes, symbols included).

Chosen over ``detect-secrets`` (Yelp, 1.5.0): its entropy plugins only read quoted strings
(``"…"``/``'…'``), so an unquoted key in an exception message goes unseen, and a scan costs a
plugin pass per line (measured: see the closing note of the change that added this).  This runs
where text is not on a call's path (a failure's traceback, a session saved once) and costs one
regex pass plus a count per candidate token.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = ["unshaped_spans", "entropy", "random_token"]

#: Words that name a credential, before the value they introduce.
_CREDENTIAL_WORDS = (
    r"pass(?:word|wd|phrase|code)?|pwd|secret(?:[ _-]?(?:access[ _-]?)?key)?|"
    r"(?:access|auth|api|refresh|session|bearer|id)?[ _-]?token|api[ _-]?key|access[ _-]?key|private[ _-]?key|"
    r"credentials?|client[ _-]?secret|pin|otp|passcode|signing[ _-]?key"
)
_CONTEXT = re.compile(
    rf"(?i)(?<![A-Za-z0-9])(?:{_CREDENTIAL_WORDS})(?![A-Za-z0-9])"
    r"(?:\s*[\"']?\s*(?:[:=]|=>|\bis\b|\bwas\b|\bof\b)\s*|\s+)"  # password: x, password=x, password is x, password x
    r"[\"'`]?(?P<value>[^\s\"'`,;&)\]}<>]{4,})"
)
#: Candidate tokens for randomness: runs of base64/base64url/hex characters (and a few symbols a
#: password may hold); split on everything else.
_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-!@#$%^&*~.]{10,}")
_SYMBOLS = frozenset("!@#$%^&*~")
_HEX = re.compile(r"[0-9a-fA-F]{24,}")
#: Values after a credential word that are words, not secrets ("password is required").
_NOT_VALUES = frozenset({"is", "was", "required", "missing", "invalid", "incorrect", "wrong", "expired", "must",
                         "should", "field", "fields", "for", "the", "a", "an", "not", "none", "null", "policy",
                         "reset", "changed", "please", "and", "or", "to", "of", "in", "on", "with", "from"})


def entropy(token: str) -> float:
    """Shannon entropy of ``token``'s characters, in bits a character."""
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in Counter(token).values()) if n else 0.0


def random_token(token: str) -> bool:
    """Whether ``token`` looks drawn at random (a key) or chosen to be hard to guess (a password)."""
    n = len(token)
    if n < 10 or n > 512:
        return False
    if n >= 24 and _HEX.fullmatch(token):  # a hex key or digest: random hex has about 3.7 bits a character
        return entropy(token) >= 3.3 and any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
    upper = any(c.isupper() for c in token)
    lower = any(c.islower() for c in token)
    digit = any(c.isdigit() for c in token)
    if not (upper and lower and digit):
        return False
    if n >= 20:
        core = token.strip("=")
        return entropy(core) >= 4.0 and _not_words(core)
    return n <= 64 and any(c in _SYMBOLS for c in token) and entropy(token) >= 3.0


def _not_words(token: str) -> bool:
    """A dotted or slashed name made of words (``os.path.JoinPath3``) is not random: more than
    half its length in runs of 4+ lower-case letters is a name."""
    words = sum(len(m) for m in re.findall(r"[a-z]{4,}", token))
    return words * 2 < len(token)


def unshaped_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of the secrets in ``text`` that only their context or randomness gives away."""
    spans: list[tuple[int, int, str]] = []
    for m in _CONTEXT.finditer(text):
        value = m.group("value")
        if value.lower().rstrip(".:") in _NOT_VALUES:
            continue
        spans.append((m.start("value"), m.end("value"), "context"))
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        # Trailing sentence punctuation is not part of a key.
        stripped = token.rstrip(".")
        if random_token(stripped):
            spans.append((m.start(), m.start() + len(stripped), "high_entropy"))
    return _merged(spans)


def _merged(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(spans):
        if out and start <= out[-1][1]:
            last = out[-1]
            out[-1] = (last[0], max(last[1], end), last[2])
        else:
            out.append((start, end, kind))
    return out
