"""Elicitation red lines, checked before anybody is asked anything.

A form asks for the parameters a task needs.  It never asks for credentials
(those come from authorization, or a URL-mode page the user trusts), never
invites the user to paste arbitrary content into the conversation, and never
stands in for a destructive action's confirmation typed as text (that is
``ctx.confirm()``: one boolean, and only ``accept`` with ``true`` counts).

``check_form`` also enforces the spec's restricted schema: a flat object of
primitive fields.
"""

from __future__ import annotations

import re
from typing import Any, Iterable
from urllib.parse import parse_qsl, unquote, urlsplit

from . import judge
from .audit.redaction import redact_text

__all__ = ["FormError", "check_form", "check_forms", "check_url", "names_credential", "refused_result"]


class FormError(ValueError):
    """A form or URL that must not be shown to a user.

    ``rule`` names the red line in a word (``credential``, ``paste``, ``confirmation``, ``url``,
    ``schema``): what a caller is told when a tool breaks it at run time.
    """

    def __init__(self, message: str, rule: str = "schema") -> None:
        super().__init__(message)
        self.rule = rule


#: What each red line means for the person who would have been asked (fixed text, safe for a client).
_RULES = {
    "credential": "it asked for a credential, which forms never collect",
    "paste": "it invited pasting arbitrary content",
    "confirmation": "it asked to confirm a destructive action with typed text instead of ctx.confirm()",
    "url": "its link was unsafe (credentials, secrets or personal data, or not http(s))",
    "schema": "its form is not one a client can show (flat primitive fields only)",
}


def check_forms(forms: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The lint a tool's registration runs over its declared ``forms=``: each ``(message,
    requestedSchema)`` pair must pass :func:`check_form`; returns them as a list."""
    declared = list(forms)
    for message, schema in declared:
        check_form(message, schema)
    return declared


def refused_result(exc: FormError) -> Any:
    """The honest result when a tool breaks a red line at run time: nobody was asked, so the step
    that needed the answer did not run — an unanswered question (``declined``, not retryable), with
    the rule that stopped it; not an unexplained ``internal`` fault."""
    from .results import ErrorKind, tool_error

    why = _RULES.get(exc.rule, _RULES["schema"])
    return tool_error(ErrorKind.DECLINED, f"nothing was asked: the server refused this tool's question because "
                      f"{why}; the step that needed the answer did not run", refusedBy="server", redLine=exc.rule)


# -- the credential lint ---------------------------------------------------------------------------
#
# What a form asks for is the judge's to say (``truecall.judge.credential_ask``: structure before words,
# six languages, negation and questions understood, adversarial spellings normalised away); the lint
# refuses credential, payment, recovery-phrase and identity asks alike.

def names_credential(text: str, *, field_name: bool = False) -> bool:
    """Kept importable for callers of the old lint: the judge's own (its tables built on first use,
    not when ``truecall`` is imported)."""
    return judge.names_credential(text, field_name=field_name)


_ASKS_FOR = {
    "credential": "a credential", "payment": "payment data", "recovery": "a recovery phrase",
    "identity": "an identity secret",
}


def _credential_error(ask: judge.CredentialAsk) -> FormError:
    what = _ASKS_FOR.get(ask.category, "a credential")
    if ask.field is not None:
        return FormError(f"form field '{ask.field}' asks for a credential; forms must never collect passwords, tokens, "
                         "keys, payment data, recovery phrases or identity secrets — send the user to a trusted page "
                         f"with URL mode (ctx.elicit(message, url=...)) or get it from authorization ({what}: "
                         f"{ask.reason})", "credential")
    return FormError(f"the form's {ask.where} asks for a credential; use URL mode or authorization instead ({what}: "
                     f"{ask.reason})", "credential")


_PRIMITIVE_KEYS = {
    "string": {"type", "title", "description", "minLength", "maxLength", "format", "default", "enum", "enumNames",
               "oneOf"},
    "number": {"type", "title", "description", "minimum", "maximum", "default"},
    "integer": {"type", "title", "description", "minimum", "maximum", "default"},
    "boolean": {"type", "title", "description", "default"},
    "array": {"type", "title", "description", "minItems", "maxItems", "items", "default"},
}
_FORMATS = {"email", "uri", "date", "date-time"}


def _text_of(name: str, spec: dict[str, Any]) -> str:
    return " ".join(str(x) for x in (name, spec.get("title", ""), spec.get("description", "")))


def check_form(message: str, schema: Any) -> None:
    """Raise :class:`FormError` unless ``schema`` is a form a user may safely be shown."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise FormError("a form's requestedSchema is an object schema (type: object)")
    props = schema.get("properties")
    if not isinstance(props, dict):
        raise FormError("a form needs properties")
    ask = judge.credential_ask(str(message), schema)
    if ask is not None:
        raise _credential_error(ask)
    for name, spec in props.items():
        if not isinstance(spec, dict):
            raise FormError(f"form field '{name}' must be a schema object")
        kind = spec.get("type")
        allowed = _PRIMITIVE_KEYS.get(kind) if isinstance(kind, str) else None
        if allowed is None:
            raise FormError(f"form field '{name}' must be a string, number, integer, boolean or a multi-select "
                            "array; forms are flat")
        extra = set(spec) - allowed - {"$comment"}
        if extra:
            raise FormError(f"form field '{name}' uses keywords forms do not allow: {sorted(extra)}")
        if kind == "string" and "format" in spec and spec["format"] not in _FORMATS:
            raise FormError(f"form field '{name}': format must be one of {sorted(_FORMATS)}")
        if kind == "array":
            items = spec.get("items")
            if not isinstance(items, dict) or not (("enum" in items) or ("anyOf" in items)):
                raise FormError(f"form field '{name}': arrays are multi-selects of fixed options only")
        if judge.asks_to_paste(_text_of(name, spec)):
            raise FormError(f"form field '{name}' invites pasting arbitrary content; ask for the specific "
                            "parameters the task needs", "paste")
    if judge.asks_to_paste(message):
        raise FormError("the form's message invites pasting arbitrary content; ask for specific parameters", "paste")
    destructive = judge.names_destructive(message) or any(
        judge.names_destructive(_text_of(name, spec)) for name, spec in props.items())
    if destructive and not _is_boolean_confirmation(props, schema):
        raise FormError("a destructive action is confirmed with ctx.confirm() (a single boolean that only "
                        "'accept' with true satisfies), not with text a prompt injection could imitate", "confirmation")


def _is_boolean_confirmation(props: dict[str, Any], schema: dict[str, Any]) -> bool:
    return len(props) == 1 and next(iter(props.values())).get("type") == "boolean" and \
        list(props) == list(schema.get("required", list(props)))


def check_url(url: str) -> None:
    """A URL-mode link: http(s), no embedded credentials, no secrets or personal data in it."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise FormError("a URL-mode link must be an absolute http(s) URL", "url")
    if parts.username or parts.password:
        raise FormError("a URL-mode link must not carry credentials", "url")
    decoded = unquote(url)  # %20 and friends must not hide a secret from the patterns below
    if redact_text(decoded) != decoded or re.search(r"[^\s/@]+@[^\s/@]+\.[A-Za-z]{2,}", decoded):
        raise FormError("a URL-mode link must not carry secrets or personal data", "url")
    # The fragment (#access_token=… in implicit-flow style links) is as visible as the query.
    for key, _ in parse_qsl(parts.query, keep_blank_values=True) + parse_qsl(parts.fragment, keep_blank_values=True):
        if names_credential(key, field_name=True):
            raise FormError(f"a URL-mode link must not carry credentials (query parameter '{key}')", "url")
