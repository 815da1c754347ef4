"""Who is calling, and how often: principals and static tokens (``_principals``), the OAuth 2.1
resource server (``oauth``, loaded on first use) and per-principal rate limits (``ratelimit``)."""

from ._principals import Principal, TokenVerifier, StaticTokens, TOKEN_FILE_FORMAT, hash_token, new_token

__all__ = ["Principal", "TokenVerifier", "StaticTokens", "TOKEN_FILE_FORMAT", "hash_token", "new_token"]
