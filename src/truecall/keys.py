"""Shared secrets from configuration: base64url text, padding optional."""

from __future__ import annotations

import base64
import os

__all__ = ["b64url_decode", "keys_from_env"]


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def keys_from_env(name: str) -> list[bytes]:
    """``NAME=key1,key2`` → the decoded keys, in order (none when unset)."""
    return [b64url_decode(k.strip()) for k in os.environ.get(name, "").split(",") if k.strip()]
