"""The ``truecall`` command: serve an app over stdio or HTTP, and inspect it."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import ipaddress
import os
import sys
from pathlib import Path
from typing import Any, Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, help="truecall: honest MCP servers.")

DEFAULT_APP = "truecall.incidents.app:build_desk"


@app.callback()
def _root() -> None:
    """truecall: honest MCP servers (serve, tasks, audit)."""


def load_app(spec: str | None) -> Any:
    """``module:attribute`` or ``path/to/file.py:attribute``; a callable is called for the server."""
    from .server import Server

    spec = spec or DEFAULT_APP
    target, _, attr = spec.partition(":")
    attr = attr or "app"
    if target.endswith(".py") or os.sep in target or "/" in target:
        path = Path(target).resolve()
        if not path.is_file():
            raise typer.BadParameter(f"no such file: {target}")
        sys.path.insert(0, str(path.parent))
        module_name = f"_truecall_app_{path.stem}"
        spec_obj = importlib.util.spec_from_file_location(module_name, path)
        if spec_obj is None or spec_obj.loader is None:
            raise typer.BadParameter(f"cannot import {target}")
        module = importlib.util.module_from_spec(spec_obj)
        sys.modules[module_name] = module
        spec_obj.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(target)
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, Server) and callable(obj):
        obj = obj()
    if not isinstance(obj, Server):
        raise typer.BadParameter(f"{spec} is not a truecall.Server (or a function returning one)")
    return obj


def _is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@app.command()
def serve(
    target: Optional[str] = typer.Argument(None, help="APP as module:attribute or file.py:attribute "
                                                      "(default: the incident desk)"),
    http: bool = typer.Option(False, "--http", help="Serve Streamable HTTP instead of stdio"),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP bind address (loopback by default)"),
    port: int = typer.Option(8000, "--port", help="HTTP port"),
    path: str = typer.Option("/mcp", "--path", help="HTTP endpoint path"),
    allowed_host: list[str] = typer.Option([], "--allowed-host", help="Extra Host/Origin names to accept"),
) -> None:
    """Serve APP over stdio (default) or Streamable HTTP."""
    server = load_app(target)
    from .protocol.engine import Engine

    engine = Engine(server)
    if not http:
        from .transports.stdio import serve_stdio

        principal = _stdio_principal(server)
        _run(serve_stdio(engine, principal))
        return
    loopback = _is_loopback(host)
    has_tokens = any(True for _ in getattr(server.tokens, "entries", lambda: [1])())
    if not loopback and (server.demo_credentials or not has_tokens):
        typer.echo("refusing to bind a non-loopback address with demo or no credentials; "
                   "configure a token file first", err=True)
        raise typer.Exit(2)
    from .transports.http import LOOPBACK_HOSTS, HttpTransport

    hosts = set(LOOPBACK_HOSTS) if loopback else set()
    hosts.update(h.lower() for h in allowed_host)
    if not loopback:
        hosts.add(host.lower())
    anonymous = server.local_principal if (loopback and not has_tokens) else None
    asgi = HttpTransport(engine, path=path, allowed_hosts=hosts, anonymous=anonymous)
    import uvicorn

    config = uvicorn.Config(asgi, host=host, port=port, log_level="warning", lifespan="on", http="httptools",
                            loop="uvloop" if _has_uvloop() else "asyncio", access_log=False)
    uvicorn.Server(config).run()


def _has_uvloop() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def _stdio_principal(server: Any) -> Any:
    """stdio has no bearer token: the principal comes from local configuration.

    ``TRUECALL_PRINCIPAL="subject,tenant,scope1 scope2"`` overrides the app's
    ``local_principal`` (the desk's default is the acme operator).
    """
    from .auth import Principal

    raw = os.environ.get("TRUECALL_PRINCIPAL")
    if raw:
        subject, tenant, scopes = (raw.split(",", 2) + ["", ""])[:3]
        return Principal(subject.strip(), tenant.strip(), frozenset(scopes.split()))
    if server.local_principal is None:
        typer.echo("no local principal: set TRUECALL_PRINCIPAL or the app's local_principal", err=True)
        raise typer.Exit(2)
    return server.local_principal


def _run(coro: Any) -> None:
    if _has_uvloop():
        import uvloop

        uvloop.run(coro)
    else:
        asyncio.run(coro)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
