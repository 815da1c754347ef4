"""The one judge of words: what a narrative claims, what a form asks for, what a value is.

Every judgment truecall makes about text is made here, from one vocabulary kept as data
(``_vocabulary``: every entry with its language and reason), over one normalised form of the text
(``_normalise``): the client's "is this result really done?" and "does this error name an unknown
tool?", the server's form lint, the client's refusal of credential forms, the probe (references,
internals, crashes, environment dumps), and redaction's check of names.

Nothing of it runs on the server's per-call path except :func:`names_credential`, cached.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._claims import Claim, claim_in_result, claim_in_text
    from ._forms import CredentialAsk, asks_to_paste, credential_ask, names_credential, names_destructive
    from ._normalise import normalise
    from ._secrets import looks_secret, secret_spans
    from ._signs import (environment_names, leaks_internals, names_reference, reference_key, says_crashed,
                         says_unknown_tool)

#: Where each public name lives.  The vocabulary's tables are compiled when a module is first imported
#: (≈200 ms for them all), and a server needs at most a few of them (``names_credential`` for its
#: redaction of names, the form lint at registration): each module is imported on its first use
#: (PEP 562), so ``import truecall`` and a server's start pay only for what they use.
_HOME = {
    "Claim": "_claims", "claim_in_result": "_claims", "claim_in_text": "_claims",
    "CredentialAsk": "_forms", "asks_to_paste": "_forms", "credential_ask": "_forms",
    "names_credential": "_forms", "names_destructive": "_forms",
    "normalise": "_normalise",
    "looks_secret": "_secrets", "secret_spans": "_secrets",
    "environment_names": "_signs", "leaks_internals": "_signs", "names_reference": "_signs",
    "reference_key": "_signs", "says_crashed": "_signs", "says_unknown_tool": "_signs",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'truecall.judge' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # (found directly from now on)
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = ["Claim", "claim_in_text", "claim_in_result", "CredentialAsk", "credential_ask", "names_credential",
           "looks_secret", "secret_spans", "normalise", "asks_to_paste", "names_destructive", "names_reference",
           "reference_key", "leaks_internals", "says_crashed", "environment_names", "says_unknown_tool"]
