"""The one judge of words: what a narrative claims, what a form asks for, what a value is.

Every judgment truecall makes about text is made here, from one vocabulary kept as data
(``_vocabulary``: every entry with its language and reason), over one normalised form of the text
(``_normalise``): the client's "is this result really done?" and "does this error name an unknown
tool?", the server's form lint, the client's refusal of credential forms, the probe (references,
internals, crashes, environment dumps), and redaction's check of names.

Nothing of it runs on the server's per-call path except :func:`names_credential`, cached.
"""

from __future__ import annotations

from ._claims import Claim, claim_in_result, claim_in_text
from ._forms import CredentialAsk, asks_to_paste, credential_ask, names_credential, names_destructive
from ._normalise import normalise
from ._secrets import looks_secret, secret_spans
from ._signs import environment_names, leaks_internals, names_reference, reference_key, says_crashed, says_unknown_tool

__all__ = ["Claim", "claim_in_text", "claim_in_result", "CredentialAsk", "credential_ask", "names_credential",
           "looks_secret", "secret_spans", "normalise", "asks_to_paste", "names_destructive", "names_reference",
           "reference_key", "leaks_internals", "says_crashed", "environment_names", "says_unknown_tool"]
