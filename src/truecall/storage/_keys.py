"""Shared secrets from configuration: base64url text, padding optional."""

from __future__ import annotations

import base64
import os

from .._misuse import SettingError

__all__ = ["b64url_decode", "keys_from_env"]


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def keys_from_env(name: str, size: int | None = None) -> list[bytes]:
    """``NAME=key1,key2`` → the decoded keys, in order (none when unset).

    A key that is not base64url, or not ``size`` bytes when a size is given, is a
    :class:`~truecall.SettingError` naming ``NAME`` and the key's position (never the key)."""
    keys = []
    for n, text in enumerate(k.strip() for k in os.environ.get(name, "").split(",")):
        if not text:
            continue
        try:
            key = b64url_decode(text)
        except (ValueError, TypeError):
            raise SettingError(f"{name}: key {n + 1} is not base64url") from None
        if size is not None and len(key) != size:
            raise SettingError(f"{name}: key {n + 1} is {len(key)} bytes, not {size} "
                               f"(make one: python -c 'import base64, os; "
                               f"print(base64.urlsafe_b64encode(os.urandom({size})).decode())')")
        keys.append(key)
    return keys
