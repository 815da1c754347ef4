"""What a FastMCP (or the SDK's ``MCPServer``) file expects of its server object, for truecall's.

A file written for FastMCP runs on truecall with its import line changed
(``from truecall import FastMCP``): the constructor's settings, ``mcp.run()``, and the name a
server gets when it is given none.  Settings that would change what the server does and that
truecall cannot honour (``auth=`` providers, middleware) are refused at construction, naming the
setting; settings about how FastMCP's own server is run are accepted and change nothing.
"""

from __future__ import annotations

import inspect
import os
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any

from .._misuse import SettingError

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["check_settings", "default_name", "run", "TRANSPORTS"]

#: FastMCP / MCPServer constructor and ``run()`` settings that say how *their* server runs:
#: accepted, and ``host``/``port``/``streamable_http_path`` read by :func:`run`.
ACCEPTED = frozenset({
    "host", "port", "log_level", "debug", "dependencies", "json_response", "stateless_http", "website_url",
    "icons", "mask_error_details", "on_duplicate_tools", "on_duplicate_resources", "on_duplicate_prompts",
    "on_duplicate", "warn_on_duplicate_tools", "warn_on_duplicate_resources", "warn_on_duplicate_prompts",
    "streamable_http_path", "sse_path", "message_path", "mount_path", "show_banner", "include_fastmcp_meta",
    "cache_expiration_seconds", "resource_prefix_format", "uvicorn_config", "middleware_config", "version",
    "transport_security", "warn_on_duplicate", "list_page_size",
})

#: Settings that would change behaviour truecall does not have: refused, with what to use instead.
REFUSED = {
    "auth": "truecall authenticates with tokens= (a TokenVerifier), --token-file or --jwt-issuer; see the "
            "authorization guide",
    "token_verifier": "pass tokens= (a truecall TokenVerifier) instead",
    "middleware": "truecall has no middleware chain; every call goes through its one pipeline",
    "tools": "register tools with @server.tool",
    "tool_serializer": "a tool's text block is its value (str) or its JSON; return a ToolResult to write it",
    "include_tags": "truecall filters tools by scopes=, not tags",
    "exclude_tags": "truecall filters tools by scopes=, not tags",
    "sampling_handler": "truecall samples through the client (ctx.sample)",
    "event_store": "truecall's Streamable HTTP keeps its own sessions",
    "strict_input_validation": "truecall always validates input against the inputSchema; "
                               "extra_arguments='ignore' admits unknown arguments",
}

#: ``run(transport=...)`` values and whether each is HTTP.
TRANSPORTS = {"stdio": False, "http": True, "streamable-http": True, "streamable_http": True}


def check_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The FastMCP settings given to ``Server(...)``; a refused or unknown one raises, naming it."""
    for key in settings:
        if key in REFUSED:
            raise SettingError(f"Server({key}=...) is FastMCP's and not supported: {REFUSED[key]}")
        if key not in ACCEPTED:
            raise TypeError(f"Server() got an unexpected keyword argument {key!r}")
    return dict(settings)


def default_name() -> str:
    """The name of a server made without one: the stem of the file that made it."""
    frame: FrameType | None = inspect.currentframe()
    here = os.path.dirname(os.path.dirname(__file__))  # the truecall package, every folder of it
    while frame is not None and frame.f_code.co_filename.startswith(here):
        frame = frame.f_back
    if frame is None:
        return "truecall"
    stem = os.path.splitext(os.path.basename(frame.f_code.co_filename))[0]
    return stem if stem and not stem.startswith("<") else "truecall"


def run(server: "Server", transport: str, *, host: str | None, port: int | None, path: str,
        options: dict[str, Any]) -> None:
    """``server.run(...)``: serve it as ``truecall serve`` would, then return (exit on a misuse)."""
    from ..cli import serving

    if transport == "sse":
        raise SettingError("run(transport='sse'): the HTTP+SSE transport was replaced by Streamable HTTP in "
                           "MCP 2025-03-26; use transport='http'")
    if transport not in TRANSPORTS:
        raise SettingError(f"run(transport={transport!r}): use 'stdio' or 'http' (also 'streamable-http')")
    check_settings(options)
    settings = {**server.settings, **options}
    http = TRANSPORTS[transport]
    if path == "/mcp" and isinstance(settings.get("streamable_http_path"), str):
        path = settings["streamable_http_path"]
    status = serving.run_server(server, http=http, host=host or settings.get("host") or "127.0.0.1",
                                port=int(port if port is not None else settings.get("port") or 8000), path=path)
    if status:
        raise SystemExit(status)


def _plain(value: Any) -> Any:
    """A pydantic object (the SDK's message types) as JSON data; anything else as it is."""
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class SessionCalls:
    """``ctx.session`` as the SDK's tools use it, on truecall's context: list-changed notices,
    sampling and log messages.  The answers are the SDK's types when the tool's module has the SDK
    loaded (it had to, to call these with its message types), else plain data."""

    __slots__ = ("ctx",)

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx

    async def send_tool_list_changed(self) -> None:
        self.ctx.server.list_changed("tools")

    async def send_resource_list_changed(self) -> None:
        self.ctx.server.list_changed("resources")

    async def send_prompt_list_changed(self) -> None:
        self.ctx.server.list_changed("prompts")

    async def send_log_message(self, level: str, data: Any, logger: str | None = None, **_: Any) -> None:
        await self.ctx.log(level, data, logger)

    async def create_message(self, messages: Any, *, max_tokens: int, **options: Any) -> Any:
        """``sampling/createMessage`` through :meth:`~truecall.ToolContext.sample`."""
        names = {"system_prompt": "systemPrompt", "include_context": "includeContext",
                 "stop_sequences": "stopSequences", "model_preferences": "modelPreferences"}
        extra = {names.get(k, k): _plain(v) for k, v in options.items() if v is not None and k != "related_request_id"}
        result = await self.ctx.sample(_plain(list(messages)), max_tokens, **extra)
        types = sys.modules.get("mcp.types") or sys.modules.get("mcp_types")
        model = getattr(types, "CreateMessageResult", None) if types is not None else None
        return model.model_validate(result) if model is not None else result


async def complete_with(handler: Any, ref: dict[str, Any], argument: dict[str, Any],
                        context: dict[str, Any] | None) -> list[str]:
    """Ask a ``@server.completion()`` handler, in the SDK's types when its module has them loaded."""
    import inspect

    types = sys.modules.get("mcp.types") or sys.modules.get("mcp_types")

    def as_type(name: str, data: Any) -> Any:
        model = getattr(types, name, None) if types is not None else None
        return model.model_validate(data) if model is not None and data is not None else data

    kind = "PromptReference" if ref.get("type") == "ref/prompt" else "ResourceTemplateReference"
    out = handler(as_type(kind, ref), as_type("CompletionArgument", argument), as_type("CompletionContext", context))
    if inspect.isawaitable(out):
        out = await out
    values = getattr(out, "values", None) if out is not None and not isinstance(out, dict) else \
        (out or {}).get("values")
    return [str(v) for v in (values or [])][:100]
