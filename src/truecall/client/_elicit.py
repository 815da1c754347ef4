"""Elicitation on the caller's side: what a handler is shown, and what it may answer.

A handler gets a :class:`FormRequest` (message + flat schema) or a :class:`UrlRequest`
and returns :class:`Accept` (with content, for a form), :class:`Decline` or
:class:`Cancel` — types, not strings, so a typo can never read as consent.

The spec's red line holds from this side too: a form that asks for a password, an
API key, a token or payment data is declined without being shown to the handler
(and logged) — and so is one that asks for a card, a recovery phrase or an identity
secret — unless the client was built with ``allow_credential_forms=True``.  An
accepted form's content is checked against the form's schema before it is sent; an
answer that does not fit is sent as ``cancel`` (never as consent) and logged.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Union

from ..judge import credential_ask  # the one judge of forms, shared with check_form
from ..schema import SchemaError, Validator

__all__ = ["FormRequest", "UrlRequest", "Accept", "Decline", "Cancel", "ElicitationHandler", "Answer",
           "asks_for_credential", "answer_elicitation"]

log = logging.getLogger("truecall.client")


@dataclass(frozen=True)
class FormRequest:
    """The server asks the user to fill in a form."""

    message: str
    schema: dict[str, Any]
    #: The tool call this question belongs to (its name), when the client knows it.
    tool: str | None = None


@dataclass(frozen=True)
class UrlRequest:
    """The server asks the user to open a page (sign-in, payment: what forms must never collect)."""

    message: str
    url: str
    elicitation_id: str | None = None
    tool: str | None = None


@dataclass(frozen=True)
class Accept:
    """The user agreed; for a form, ``content`` holds the answers."""

    content: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Decline:
    """The user said no."""


@dataclass(frozen=True)
class Cancel:
    """The user dismissed the question without choosing."""


Answer = Union[Accept, Decline, Cancel]
ElicitationHandler = Callable[[Union[FormRequest, UrlRequest]], Union[Answer, Awaitable[Answer]]]


def asks_for_credential(message: str, schema: Any) -> bool:
    """True when a form asks for a credential, payment data, a recovery phrase or an identity secret —
    by its message, its title or description, or any field's name, title, description, format or
    ``oneOf``/``anyOf`` titles (the judge's :func:`~truecall.judge.credential_ask`)."""
    return credential_ask(message or "", schema) is not None


def _as_wire(answer: Any) -> dict[str, Any]:
    if isinstance(answer, Accept):
        return {"action": "accept", "content": dict(answer.content)}
    if isinstance(answer, Decline):
        return {"action": "decline"}
    return {"action": "cancel"}


async def answer_elicitation(params: Any, handler: ElicitationHandler | None, *, allow_credential_forms: bool,
                             tool: str | None = None) -> dict[str, Any]:
    """The ``ElicitResult`` to send for one ``elicitation/create`` request's params."""
    params = params if isinstance(params, dict) else {}
    message = params.get("message") if isinstance(params.get("message"), str) else ""
    mode = params.get("mode", "form")
    if mode == "url":
        url = params.get("url")
        if not isinstance(url, str) or handler is None:
            return {"action": "decline"}
        eid = params.get("elicitationId")
        request: FormRequest | UrlRequest = UrlRequest(message, url, eid if isinstance(eid, str) else None, tool)
        schema = None
    else:
        schema = params.get("requestedSchema")
        if not isinstance(schema, dict) or handler is None:
            return {"action": "decline"}
        if not allow_credential_forms and asks_for_credential(message, schema):
            log.warning("declined a form that asks for a credential (tool %s); it was not shown to the handler",
                        tool or "?")
            return {"action": "decline"}
        request = FormRequest(message, schema, tool)
    answer = handler(request)
    if inspect.isawaitable(answer):
        answer = await answer
    if not isinstance(answer, (Accept, Decline, Cancel)):
        log.warning("an elicitation handler returned %s, not Accept/Decline/Cancel: sent as cancel",
                    type(answer).__name__)
        return {"action": "cancel"}
    if isinstance(answer, Accept) and schema is not None:
        try:
            problems = Validator(schema).violations(answer.content, limit=5)
        except (SchemaError, ValueError):
            problems = []
            log.warning("the form's schema cannot be checked: the answer is sent as cancel")
            return {"action": "cancel"}
        if problems:
            log.warning("an accepted answer does not match the form (%s): sent as cancel",
                        "; ".join(p.message for p in problems))
            return {"action": "cancel"}
    if isinstance(answer, Accept) and schema is None:
        return {"action": "accept"}  # URL mode: consent to open the page, no content
    return _as_wire(answer)
