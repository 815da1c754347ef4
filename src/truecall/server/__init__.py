"""The server and what a call goes through: registration (``Server``), the call pipeline
(``_pipeline``), the policy stage (``_policy``), Python signatures as MCP definitions
(``_typed``, ``tools``), what a running tool sees (``context``), the result check against the
schema (``_wire_check``), the change feed (``_changes``), the call metrics (``_metrics``) and
FastMCP's surface (``_fastmcp``, ``_foreign``, ``_elicit_types``)."""

from ._server import Server, State, ServerNotStarted
from .._aliases import forward as _forward

__all__ = ["Server", "State", "ServerNotStarted"]

#: A public name ``truecall.server`` had as a module besides these, read from ``_server`` (with a warning).
__getattr__ = _forward(__name__, "truecall.server._server", __all__)
