"""The one judge of words: what a narrative claims, what a form asks for, what a value is.

Every judgment truecall makes about text is made here, from one vocabulary kept as data
(``_vocabulary``: every entry with its language and reason), over one normalised form of the text
(``_normalise``): the client's "is this result really done?", the server's form lint, the client's
refusal of credential forms, the probe, and redaction's check of names.

Nothing of it runs on the server's per-call path except :func:`names_credential`, cached.
"""

from __future__ import annotations

from ._claims import Claim, claim_in_result, claim_in_text
from ._forms import CredentialAsk, asks_to_paste, credential_ask, names_credential, names_destructive
from ._normalise import normalise
from ._secrets import looks_secret, secret_spans

__all__ = ["Claim", "claim_in_text", "claim_in_result", "CredentialAsk", "credential_ask", "names_credential",
           "looks_secret", "secret_spans", "normalise", "asks_to_paste", "names_destructive"]
