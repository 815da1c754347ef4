"""Who is calling, and how often: principals and static tokens (``_principals``), the OAuth 2.1
resource server (``oauth``, loaded on first use) and per-principal rate limits (``ratelimit``)."""

from ._principals import Principal, TokenVerifier, StaticTokens, TOKEN_FILE_FORMAT, hash_token, new_token
from .._aliases import forward as _forward

__all__ = ["Principal", "TokenVerifier", "StaticTokens", "TOKEN_FILE_FORMAT", "hash_token", "new_token"]

#: A public name ``truecall.auth`` had as a module besides these, read from ``_principals`` (with a warning).
__getattr__ = _forward(__name__, "truecall.auth._principals", __all__)
