"""Checks on request parameters that several methods share."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidParams
from ..redact import redact_text

__all__ = ["str_param", "check_cursor", "shown"]


def str_param(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"{name} must be a non-empty string")
    return value


def check_cursor(params: dict[str, Any]) -> None:
    cursor = params.get("cursor")
    if cursor is not None:  # everything fits on one page: any cursor is one we never issued
        raise InvalidParams("Invalid cursor")


def shown(uri: str) -> str:
    """A client's URI as an answer or a record may repeat it: redacted first, then cut (a cut first
    could leave a piece of a secret too short for any pattern)."""
    return redact_text(uri)[:256]
