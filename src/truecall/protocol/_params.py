"""Checks on request parameters that several methods share."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidParams

__all__ = ["str_param", "check_cursor"]


def str_param(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"{name} must be a non-empty string")
    return value


def check_cursor(params: dict[str, Any]) -> None:
    cursor = params.get("cursor")
    if cursor is not None:  # everything fits on one page: any cursor is one we never issued
        raise InvalidParams("Invalid cursor")
