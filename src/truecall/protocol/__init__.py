"""The sans-IO MCP engine: JSON-RPC framing, eras, sessions, dispatch.

No I/O here: bytes and sockets are the transports', rows the stores' (the handshake-era session table
is :mod:`truecall.transports._session_store`).  The engine (``engine``) serves one exchange per
message (``_exchange``: the plan a transport follows, the reply it writes); each era's differences are
one table (``versions``); a session's states another (``_session_state``); a request as served
(``_request_context``), the tasks methods (``_task_methods``) and the rest live by seam."""

from .engine import Engine, Outbox, Session
from ._exchange import Plan, Reply, named_param
from .jsonrpc import Limits
from ._sealing import Sealer
from .versions import LATEST, LEGACY, MODERN, SUPPORTED

__all__ = ["Engine", "Outbox", "Session", "Plan", "Reply", "named_param", "Limits", "Sealer", "LATEST", "LEGACY",
           "MODERN", "SUPPORTED"]
