"""What else a tool's words say, besides a claim: a reference to check the work by, the server's
insides (a traceback, an install path), a crash told as text, a dump of the process environment, a
tool that does not exist.

The probe asks these of every answer and the client asks whether an error names an unknown tool;
the words and shapes are the vocabulary's (``INTERNALS``, ``CRASHES``, ``REFERENCE_WORDS`` …), each
with its reason.  Shapes of program output (exception names, stack frames) are read on the raw text,
where their case means something; words on the normalised text.
"""

from __future__ import annotations

import re
from ._normalise import normalise
from ._vocabulary import (CRASHES, ENVIRONMENT_VARIABLES, INTERNALS, REFERENCE_KEYS, REFERENCE_WORDS, UNKNOWN_TOOL,
                          every)

__all__ = ["names_reference", "reference_key", "leaks_internals", "says_crashed", "environment_names",
           "says_unknown_tool"]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")

#: A reference by its shape (a UUID, ``ABC-123``, ``#42``) or after a word that introduces one.
_REFERENCE = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[A-Z][A-Z0-9]*-\d+\b|#\d+\b|"
    r"\b(?:" + "|".join(re.escape(w) for w in every(REFERENCE_WORDS) if not _CJK.search(w)) +
    r")[\s:=#]+[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*|"
    r"(?:" + "|".join(re.escape(w) for w in every(REFERENCE_WORDS) if _CJK.search(w)) +
    r")\s*[:：#＃=]?\s*[A-Za-z0-9_-]*\d", re.I)
_INTERNALS = [(re.compile("|".join(f"(?:{t.pattern})" for t in INTERNALS if t.kind == kind)), kind)
              for kind in dict.fromkeys(t.kind for t in INTERNALS)]
_CRASH = re.compile("|".join(f"(?:{term.pattern})" for term in CRASHES))
_ENVIRONMENT = re.compile(r"(?:^|[\s{,\"'])(" + "|".join(ENVIRONMENT_VARIABLES) + r")[\"']?\s*[:=]", re.M)
_UNKNOWN_TOOL = re.compile("|".join(f"(?:{term.pattern})" for term in UNKNOWN_TOOL))


def names_reference(text: str) -> bool:
    """Whether ``text`` carries a reference the work can be checked by (a ticket, job or request id)."""
    return _REFERENCE.search(text) is not None


def reference_key(key: str) -> bool:
    """Whether a ``structuredContent`` key holds such a reference (``ticket_id``, ``jobId``, ``ref``)."""
    return key.replace("_", "").lower() in REFERENCE_KEYS


def leaks_internals(text: str) -> list[tuple[int, int, str]]:
    """Where ``text`` shows a program's insides, as ``(start, end, kind)``: every "trace" first (a
    traceback, a stack frame, an exception's name), then every "install" path, then every system
    "path" (the caller decides which of those it supplied or the server advertised)."""
    return [(*m.span(), kind) for pattern, kind in _INTERNALS for m in pattern.finditer(text)]


def says_crashed(text: str) -> tuple[int, int] | None:
    """Where ``text`` is an exception's own words (a crash told as text), or ``None``."""
    m = _CRASH.search(text)
    return m.span() if m else None


def environment_names(text: str) -> list[tuple[int, int, str]]:
    """The variables every process environment has that ``text`` lists as keys, ``(start, end, name)``
    (three or more different ones: a dump of the environment)."""
    return [(m.start(), m.end(), m.group(1)) for m in _ENVIRONMENT.finditer(text)]


def says_unknown_tool(message: str | None) -> bool:
    """Whether an error's message says the tool named does not exist."""
    return bool(message) and _UNKNOWN_TOOL.search(normalise(message or "")) is not None
