"""truecall: MCP tools whose results never claim more than really happened."""

from .server._typed import RegistrationError
from ._misuse import SettingError
from .audit import AuditLog, AuditRecord
from .auth import Principal, StaticTokens, TokenVerifier, hash_token, new_token
from .server.context import (Elicitation, ElicitAction, ElicitationRefused, ElicitationUnavailable, InputRequired, Peer,
                             ToolContext)
from .describe import describe
from .errors import (
    AccessDenied,
    HeaderMismatch,
    InsufficientScope,
    InternalError,
    InvalidCredential,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    MissingCapability,
    NotFound,
    ParseError,
    ProtocolError,
    ServiceUnavailable,
    TaskRequired,
    TenantMismatch,
    UnknownTool,
    UnsupportedVersion,
)
from .forms import FormError, check_form, check_url
from .auth.ratelimit import RateLimit
from .audit.redaction import redact, redact_text
from .results import (
    MISSING_INPUT_TEXT,
    ErrorKind,
    ToolError,
    ToolResult,
    audio,
    embedded_resource,
    image,
    resource_link,
    text,
    tool_error,
)
from .schema import SchemaError, Validator
from .server import Server, ServerNotStarted
from .storage import Database, Storage
from .texts import LocaleError, current_locale, say
from .tasks import InvalidTransition, LeaseLost, Task, TaskInputInvalid, TaskNotFound, TaskStatus, TaskStore
from .server.tools import Prompt, Resource, ResourceTemplate, Tool

from ._version import __version__
from . import _aliases

_aliases.install()  # the module paths of before the layout by layer (truecall.oauth, truecall.redact, ...)

#: The names a FastMCP or ``MCPServer`` file imports, so that porting one is changing its import line
#: (``from truecall import FastMCP, Context``): the same classes as truecall's own.
FastMCP = Server
MCPServer = Server
Context = ToolContext

_LAZY = {"ClaimNames": "auth.oauth", "JWTVerifier": "auth.oauth", "ProtectedResource": "auth.oauth",
         "Image": "media", "Audio": "media", "File": "media"}
# The client loads on first use too: a server never imports it (nor httpx).
_LAZY.update({name: "client" for name in (
    "Client", "Done", "Unconfirmed", "Failed", "Accepted", "Unknown", "Cancelled", "Outcome", "FormRequest",
    "UrlRequest", "Accept", "Decline", "Cancel", "ConnectionLost", "NotSent", "ClientStateError")})


def __getattr__(name: str) -> object:
    """JOSE support and the client load on first use: servers do not pay their import time."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'truecall' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)

__all__ = [
    "Audio",
    "Context",
    "FastMCP",
    "File",
    "Image",
    "MCPServer",
    "Accept",
    "Accepted",
    "Cancel",
    "Cancelled",
    "Client",
    "ClientStateError",
    "ConnectionLost",
    "Decline",
    "Done",
    "Failed",
    "FormRequest",
    "NotSent",
    "Outcome",
    "Unconfirmed",
    "Unknown",
    "UrlRequest",
    "AccessDenied",
    "ClaimNames",
    "FormError",
    "JWTVerifier",
    "ProtectedResource",
    "RateLimit",
    "RegistrationError",
    "check_form",
    "check_url",
    "AuditLog",
    "ServerNotStarted",
    "AuditRecord",
    "Database",
    "ElicitAction",
    "Elicitation",
    "ElicitationRefused",
    "ElicitationUnavailable",
    "ErrorKind",
    "HeaderMismatch",
    "InputRequired",
    "InsufficientScope",
    "InternalError",
    "InvalidCredential",
    "InvalidParams",
    "InvalidRequest",
    "InvalidTransition",
    "LeaseLost",
    "LocaleError",
    "MISSING_INPUT_TEXT",
    "MethodNotFound",
    "MissingCapability",
    "NotFound",
    "ParseError",
    "Peer",
    "Principal",
    "Prompt",
    "ProtocolError",
    "ServiceUnavailable",
    "Resource",
    "ResourceTemplate",
    "SchemaError",
    "Server",
    "SettingError",
    "StaticTokens",
    "Storage",
    "Task",
    "TaskInputInvalid",
    "TaskNotFound",
    "TaskRequired",
    "TaskStatus",
    "TaskStore",
    "TenantMismatch",
    "TokenVerifier",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "UnknownTool",
    "UnsupportedVersion",
    "Validator",
    "audio",
    "current_locale",
    "describe",
    "embedded_resource",
    "hash_token",
    "image",
    "new_token",
    "redact",
    "redact_text",
    "resource_link",
    "say",
    "text",
    "tool_error",
]
