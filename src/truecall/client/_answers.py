"""What this client answers when the server asks: ``ping``, elicitation, ``roots/list``.

The server asks in two ways — as a JSON-RPC request of its own (the handshake era, and
legacy tasks while ``tasks/result`` blocks) or as ``inputRequests`` inside a result
(2026-07-28, answered by repeating the request with ``inputResponses``).  Both reach
the same :func:`answer`, so what the client offers is decided in one place and does not
depend on the era.  Only what the caller configured is offered; anything else is
``MethodNotFound`` (as a request) or ``MissingCapability`` (as an input request).
"""

from __future__ import annotations

from typing import Any, Protocol

from ..errors import InvalidParams, MethodNotFound, MissingCapability, ProtocolError
from ._elicit import ElicitationHandler, answer_elicitation

__all__ = ["Answering", "answer", "answer_inputs", "next_round"]


class Answering(Protocol):
    """What the caller offers the server (read at use time from the client)."""

    elicitation: ElicitationHandler | None
    allow_credential_forms: bool
    roots: list[dict[str, Any]] | None


async def answer(offer: Answering, method: Any, params: Any, tool: str | None = None) -> dict[str, Any]:
    """What this client answers to a server's request (handshake era) or input request (2026-07-28)."""
    if method == "ping":
        return {}
    if method == "elicitation/create":
        return await answer_elicitation(params, offer.elicitation,
                                        allow_credential_forms=offer.allow_credential_forms, tool=tool)
    if method == "roots/list" and offer.roots is not None:
        return {"roots": list(offer.roots)}
    raise MethodNotFound(f"This client does not offer {str(method)[:100]}")


async def answer_inputs(offer: Answering, requests: Any, tool: str | None) -> dict[str, Any]:
    """The ``inputResponses`` for a result's ``inputRequests`` (every key answered, or an error)."""
    if not isinstance(requests, dict) or not requests:
        raise InvalidParams("The server asked for input without saying what")
    answers: dict[str, Any] = {}
    for key, request in requests.items():
        method = request.get("method") if isinstance(request, dict) else None
        try:
            answers[key] = await answer(offer, method, request.get("params") if isinstance(request, dict) else None,
                                        tool)
        except ProtocolError:
            raise MissingCapability(f"The server asked for {str(method)[:100]}, which this client does not "
                                    "offer") from None
    return answers


async def next_round(offer: Answering, params: dict[str, Any], result: dict[str, Any],
                     tool: str | None) -> dict[str, Any]:
    """The retry of a request that ended ``input_required`` (2026-07-28): the same parameters with this
    round's ``inputResponses`` and this round's ``requestState`` — none when the server sent none, never
    an earlier round's (already spent: a server refuses a state twice)."""
    retry = {**params, "inputResponses": await answer_inputs(offer, result.get("inputRequests"), tool)}
    state = result.get("requestState")
    if isinstance(state, str):
        retry["requestState"] = state
    else:
        retry.pop("requestState", None)
    return retry
