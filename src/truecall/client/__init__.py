"""The caller's half: a client whose outcomes cannot be mistaken (``truecall.Client``).

Public names are re-exported at the package root (``from truecall import Client, Done``);
importing ``truecall`` does not import this package (nor httpx) until one is used.
"""

from ._client import Client, LogHandler, NotificationHandler, ProgressHandler
from ._connection import ClientConnection
from ._elicit import Accept, Cancel, Decline, ElicitationHandler, FormRequest, UrlRequest, asks_for_credential
from ._errors import ConnectionLost, NotSent
from ._outcomes import (CONTRACT_BROKEN, UNKNOWN_KIND, Accepted, Cancelled, Done, Failed, Outcome, Unconfirmed,
                        Unknown)
from ._connection_state import ClientState, ClientStateError

__all__ = [
    "Accept", "Accepted", "CONTRACT_BROKEN", "Cancel", "Cancelled", "Client", "ClientConnection", "ClientState",
    "ClientStateError", "ConnectionLost", "Decline", "Done", "ElicitationHandler", "Failed", "FormRequest",
    "LogHandler", "NotSent", "NotificationHandler", "Outcome", "ProgressHandler", "UNKNOWN_KIND", "Unconfirmed",
    "Unknown", "UrlRequest", "asks_for_credential",
]
