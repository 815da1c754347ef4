"""What a call that got no answer comes to, by how far it got — one table (h11's style, like ``_state``).

A transport says *how* an answer stopped coming (``lost(reason, request_id)``, see ``_transport``);
what that means for the work depends on where the call was:

    CALLING   + not_sent            -> nothing happened    (NotSent: the tools/call never left)
    CALLING   + any other loss      -> Unknown(reason)     (it left: the tool may have run)
    ACCEPTED  + any loss, not_sent too -> Unknown(reason, task_id)

``ACCEPTED`` is every request about a task the server accepted (``tasks/get``, ``tasks/result``,
``tasks/update``, ``tasks/cancel``): one of them failing to leave says nothing about the task,
which was accepted and may have run — so "not sent" there is never "nothing happened".  An HTTP
5xx that carries no JSON-RPC answer (a gateway's 502/503/504, a crash's bare 500) is a loss like a
reset connection: whoever answered was not the server saying what happened.  A server that says
itself that nothing happened answers with a JSON-RPC error (truecall's own ``ServiceUnavailable``,
-32603 with ``data.retryable: true``), which is an answer, not a loss, and is raised as such.
"""

from __future__ import annotations

import enum

__all__ = ["Stage", "NOTHING_HAPPENED", "LOSSES", "SILENCE", "after_loss", "gateway_loss"]


class Stage(str, enum.Enum):
    CALLING = "calling"    # a tools/call is on its way or waiting for its answer
    ACCEPTED = "accepted"  # the server accepted the work as a task; this is a request about that task


#: The one verdict that is not :class:`~._outcomes.Unknown`.
NOTHING_HAPPENED = "nothing_happened"

#: Every way an answer can stop coming, as the transports and the session say it.
LOSSES = ("not_sent", "connection_lost", "server_exited", "timeout", "unreachable",
          "http_500", "http_502", "http_503", "http_504")

#: (stage, loss) -> NOTHING_HAPPENED, or the reason an Unknown carries.
SILENCE: dict[tuple[Stage, str], str] = {
    **{(Stage.CALLING, loss): loss for loss in LOSSES},
    **{(Stage.ACCEPTED, loss): loss for loss in LOSSES},
    (Stage.CALLING, "not_sent"): NOTHING_HAPPENED,
    # A request about an accepted task could not leave: the connection had ended (its reason, when
    # the session knows it) or the server could no longer be reached.
    (Stage.ACCEPTED, "not_sent"): "unreachable",
}

#: HTTP statuses that, without a JSON-RPC body, are a loss after the request left (see the module).
_GATEWAY = {500: "http_500", 502: "http_502", 503: "http_503", 504: "http_504"}


def after_loss(stage: Stage, loss: str, dead: str | None = None) -> str:
    """NOTHING_HAPPENED or the Unknown's reason; ``dead`` is why the connection ended, if it has."""
    verdict = SILENCE.get((stage, loss), loss)
    if stage is Stage.ACCEPTED and loss == "not_sent" and dead is not None:
        return dead
    return verdict


def gateway_loss(status: int) -> str | None:
    """The loss an HTTP status without a JSON-RPC answer stands for, or None (a refusal: nothing ran)."""
    return _GATEWAY.get(status)
