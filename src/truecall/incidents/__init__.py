"""The incident desk: a reference app built only on truecall's public API."""

from .app import DEMO_TOKENS, build_desk

__all__ = ["DEMO_TOKENS", "build_desk"]
