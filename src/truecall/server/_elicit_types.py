"""An elicitation asked with a type, as FastMCP and the SDK's ``MCPServer`` ask it.

``await ctx.elicit("Your name?", response_type=str)`` asks for one field and answers
``.data == "Ada"``; a dataclass, ``TypedDict`` or pydantic model is the form and ``.data`` an
instance; a list of strings (or a ``Literal``/``Enum``) is a choice; ``None`` asks for nothing but
the answer.  The form is derived here, once per type, with the same type → schema work as tool
parameters (:mod:`truecall.server._typed`), and still meets the red lines (:func:`truecall.forms.check_form`)
when it is asked.
"""

from __future__ import annotations

import functools
import typing
from typing import Any, Callable

from .context import ElicitAction, Elicitation

__all__ = ["TypedForm", "typed_form"]

#: Where a scalar answer goes in the form (FastMCP's field name for it).
VALUE = "value"


class TypedForm:
    """The ``requestedSchema`` for a type and how an accepted answer becomes that type."""

    __slots__ = ("schema", "convert", "wrapped")

    def __init__(self, schema: dict[str, Any], convert: Callable[[Any], Any] | None, wrapped: bool) -> None:
        self.schema = schema
        self.convert = convert
        self.wrapped = wrapped

    def read(self, answer: Elicitation) -> Elicitation:
        """``answer`` with ``data`` set (only an accepted answer carries any)."""
        if answer.action is not ElicitAction.ACCEPT or self.convert is None:
            return answer
        content = answer.content
        value = content.get(VALUE) if self.wrapped else content
        return Elicitation(answer.action, content, self.convert(value))


def typed_form(response_type: Any) -> TypedForm:
    """The form for ``response_type`` (a type, a list of choices or ``None``)."""
    if isinstance(response_type, list):
        if not response_type or not all(isinstance(c, str) for c in response_type):
            raise ValueError("a list given as response_type is a list of choices (strings)")
        return TypedForm(_wrap({"type": "string", "enum": list(response_type)}), str, True)
    return _cached(response_type)


@functools.lru_cache(maxsize=256)
def _cached(response_type: Any) -> TypedForm:
    from . import _typed
    from ._typed import RegistrationError

    if response_type is None:
        return TypedForm({"type": "object", "properties": {}}, None, False)
    [schema], defs = _typed._schemas([response_type], lambda _i, why: RegistrationError(
        f"elicit: response_type {why}"))
    convert = _typed._converter(VALUE, response_type)
    if _typed._is_structured(schema, defs):
        form = _typed._inline_root(schema, defs)
        form.pop("title", None)
        return TypedForm(form, convert, False)
    if defs:  # an Enum: its values inline, a form is flat
        ref = schema.get("$ref", "")
        schema = dict(defs.get(ref.rpartition("/")[2], schema)) if isinstance(ref, str) else schema
    base = _typed._strip_annotated(response_type)
    if typing.get_origin(base) is typing.Literal and "type" not in schema:
        schema = {"type": "string", **schema}
    return TypedForm(_wrap(schema), convert, True)


def _wrap(field: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {VALUE: field}, "required": [VALUE]}
