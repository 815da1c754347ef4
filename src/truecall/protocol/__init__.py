"""The sans-IO MCP engine: JSON-RPC framing, eras, sessions, dispatch."""

from .engine import Engine, Outbox, Session
from ._exchange import Plan, Reply, named_param
from .jsonrpc import Limits
from ._sealing import Sealer
from .versions import LATEST, LEGACY, MODERN, SUPPORTED

__all__ = ["Engine", "Outbox", "Session", "Plan", "Reply", "named_param", "Limits", "Sealer", "LATEST", "LEGACY",
           "MODERN", "SUPPORTED"]
