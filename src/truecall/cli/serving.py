"""``truecall serve``: load an app and serve it over stdio or Streamable HTTP.

Kept free of the CLI framework on purpose: ``truecall serve`` parses its options with
``argparse`` (:mod:`truecall.__main__`) and starts without importing typer and click,
which a server would carry in memory for nothing.  ``truecall.cli`` offers the same
command, with the other operator commands, on top of these functions.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import gc
import importlib
import importlib.util
import ipaddress
import os
import socket
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from .._misuse import DEBUG_FLAG, ENV_DEBUG, Misuse, ServeError, debug_from_env, describe, report
from ._workers import REUSE_PORT, WorkerSide, resolve_workers, supervise

if TYPE_CHECKING:
    from ..server._server import Server

__all__ = ["DEFAULT_APP", "ServeError", "load_app", "serve", "serve_parser", "main"]

DEFAULT_APP = "truecall.incidents.app:build_desk"


#: What APP looks like, for the lines that say it was not found.
_APP_FORM = "APP is module:attribute or path/to/file.py:attribute"


def load_app(spec: "str | Server | None") -> Any:
    """``module:attribute`` or ``path/to/file.py:attribute``; a callable is called for the server.

    Whatever goes wrong on the way is a :class:`ServeError` naming APP: a missing file, module or
    attribute, and an exception raised by the app's own code while it is imported or built (that
    one keeps the exception as its cause, for ``--debug``).  A misuse the app's code ran into (a
    setting with a value that cannot work) is raised as it is: it names its setting itself.
    """
    from ..server._server import Server

    if isinstance(spec, Server):  # server.run(): the app is already made
        return spec
    spec = spec or DEFAULT_APP
    target, _, attr = spec.partition(":")
    attr = attr or "app"
    if target.endswith(".py") or os.sep in target or "/" in target:
        path = Path(target).resolve()
        if not path.is_file():
            raise ServeError(f"no such file: {target}")
        sys.path.insert(0, str(path.parent))
        module_name = f"_truecall_app_{path.stem}"
        spec_obj = importlib.util.spec_from_file_location(module_name, path)
        if spec_obj is None or spec_obj.loader is None:
            raise ServeError(f"cannot import {target}")
        module = importlib.util.module_from_spec(spec_obj)
        sys.modules[module_name] = module
        with _app_code(target), _own_argv(str(path)):
            spec_obj.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        try:
            with _app_code(target), _own_argv(target):
                module = importlib.import_module(target)
        except ServeError as exc:
            missing = exc.__cause__
            if isinstance(missing, ModuleNotFoundError) and missing.name and \
                    (target == missing.name or target.startswith(missing.name + ".")):
                raise ServeError(f"no module named {target!r} ({_APP_FORM})") from None
            raise
    obj: Any = module
    for depth, part in enumerate(attr.split(".")):
        if not hasattr(obj, part):
            where = target if depth == 0 else f"{target}:{'.'.join(attr.split('.')[:depth])}"
            servers = sorted(k for k, v in vars(module).items() if isinstance(v, Server))
            found = f"; its servers: {', '.join(servers)}" if servers and depth == 0 else ""
            raise ServeError(f"{where} has no attribute {part!r} ({_APP_FORM}{found})")
        obj = getattr(obj, part)
    if not isinstance(obj, Server) and callable(obj):
        with _app_code(spec):
            obj = obj()
    if not isinstance(obj, Server):
        raise ServeError(f"{spec} is not a truecall.Server (or a function returning one)")
    return obj


@contextmanager
def _own_argv(program: str) -> Iterator[None]:
    """The app's module sees a command line of its own while it is imported (its name, no
    arguments), not truecall's: a module that parses ``sys.argv`` at import (argparse, click)
    would otherwise read ``serve app.py:mcp --http`` as its own options."""
    saved = sys.argv
    sys.argv = [program]
    try:
        yield
    finally:
        sys.argv = saved


@contextmanager
def _app_code(where: str) -> Iterator[None]:
    """Running the app's own code: an exception it raises is one line naming ``where``."""
    try:
        yield
    except Misuse:
        raise
    except Exception as exc:
        error = ServeError(f"{where}: {describe(exc)}")
        error.traceback_helps = True
        raise error from exc


def _is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(
    target: "str | Server | None" = None,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    allowed_host: Sequence[str] = (),
    token_file: Path | None = None,
    jwt_issuer: str | None = None,
    jwt_audience: str | None = None,
    jwks: str | None = None,
    tenant_claim: str = "tenant",
    scope_claim: str = "scope",
    workers: int | str | None = None,
    worker: "WorkerSide | None" = None,
) -> None:
    """Serve APP over stdio (default) or Streamable HTTP; raises :class:`ServeError` on bad usage.

    ``workers``: HTTP served by that many processes behind one socket (``"auto"``: one per core
    this process may run on; see :mod:`truecall.cli._workers`).  ``worker`` is how such a process is
    told it is one (the supervisor makes it)."""
    if not 0 <= port <= 65535:
        raise ServeError(f"--port must be 0-65535 (0: any free port), not {port}")
    if workers is not None and not http:
        raise ServeError("--workers is for --http: stdio serves one client on one pipe, in one process")
    if worker is None and workers is not None:
        count = resolve_workers(workers)
        if count > 1:
            if not isinstance(target, (str, type(None))):
                raise ServeError("workers= serves an APP by name (module:attribute), which each process loads")
            _supervise(count, target=target, host=host, port=port, path=path, allowed_host=list(allowed_host),
                       token_file=str(token_file) if token_file is not None else None, jwt_issuer=jwt_issuer,
                       jwt_audience=jwt_audience, jwks=jwks, tenant_claim=tenant_claim, scope_claim=scope_claim)
            return
    keys = worker.shared_keys() if worker is not None else nullcontext()
    with keys:
        server = load_app(target)
        _configure_credentials(server, token_file, jwt_issuer, jwt_audience, jwks, tenant_claim, scope_claim)
        from ..protocol.engine import Engine

        # Before anything listens: the server's start (its database opened, every store's migrations, the
        # audit journals of ended processes loaded; the app was built without I/O), the engine's tables,
        # and what an earlier process left unfinished.  Inside the supervisor's keys, like the app.
        engine = Engine(server).start()
    _tune_gc()
    if not http:
        from ..transports.stdio import serve_stdio

        principal = _stdio_principal(server)
        _say_started(f"{_served(server)} over stdio", "end its input (or Ctrl-C) to stop")
        try:
            _run(_in_lifespan(server, serve_stdio(engine, principal)))
        finally:
            engine.flush()  # Ctrl-C included: every acknowledged audit record is written
        return
    loopback = _is_loopback(host)
    entries = getattr(server.tokens, "entries", None)
    has_tokens = entries is None or any(True for _ in entries())
    if not loopback and (server.demo_credentials or not has_tokens):
        raise ServeError("refusing to bind a non-loopback address with demo or no credentials; "
                         "configure a token file first")
    from ..transports.http import LOOPBACK_HOSTS, HttpTransport

    hosts = set(LOOPBACK_HOSTS) if loopback else set()
    hosts.update(h.lower() for h in allowed_host)
    if not loopback:
        hosts.add(host.lower())
    anonymous = server.local_principal if (loopback and not has_tokens) else None
    asgi = HttpTransport(engine, path=path, allowed_hosts=hosts, anonymous=anonymous)
    import uvicorn

    from ..transports.guarded import SHUTDOWN_TIMEOUT_S, GuardedHttpToolsProtocol

    listener = worker.listener if worker is not None else _listen(host, port)
    if not has_tokens and (worker is None or worker.banner):
        shown = f"[{host.strip('[]')}]" if ":" in host else host  # an IPv6 address in a URL
        _say_how_to_configure_credentials(server, f"http://{shown}:{port}{path}")
    config = uvicorn.Config(asgi, host=host, port=port, log_level="warning", lifespan="on",
                            http=GuardedHttpToolsProtocol, timeout_graceful_shutdown=SHUTDOWN_TIMEOUT_S,
                            loop="uvloop" if _has_uvloop() else "asyncio", access_log=False,
                            proxy_headers=False)
    if worker is not None:
        worker.ready()
    if worker is None or worker.banner:
        shown = f"[{host.strip('[]')}]" if ":" in host else host
        try:
            bound = listener.getsockname()[1]  # the port itself when --port 0 asked for any free one
        except (AttributeError, OSError):
            bound = port
        _say_started(f"{_served(server)} on http://{shown}:{bound}{path}", "Ctrl-C to stop")
    try:
        _server_class()(config).run(sockets=[listener])
    finally:
        listener.close()
        engine.flush()


def _server_class() -> Any:
    """uvicorn's ``Server``, except that a SIGTERM it stopped on gracefully is not raised again.

    After its graceful shutdown uvicorn restores the previous handlers and raises the signals it
    caught, so the process died of its own SIGTERM (status -15) after stopping cleanly.  A
    service manager reads that as a crash; 0 is the convention for a clean stop.  SIGINT is still
    raised again (an interactive ^C ends as one).
    """
    import signal

    import uvicorn

    class Server(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                try:
                    yield
                finally:
                    self._captured_signals = [s for s in self._captured_signals if s != signal.SIGTERM]

    return Server


def _supervise(count: int, **options: Any) -> None:
    """Bind once here, then serve with ``count`` worker processes on that socket (:mod:`truecall.cli._workers`)."""
    listeners = [_listen(options["host"], options["port"])]
    try:
        if REUSE_PORT:  # one socket per worker on the same address: the kernel spreads connections evenly
            # The plain bind above proved the address free: a socket of another server already on it
            # (an old `serve --workers` still running) would otherwise be joined silently.
            address = listeners[0].getsockname()
            listeners.pop().close()
            listeners += [_listen(options["host"], options["port"], reuse_port=True, address=address)
                          for _ in range(count)]
        status = supervise(options, count, listeners, debug=debug_from_env())
    finally:
        for listener in listeners:
            listener.close()
    if status:
        raise SystemExit(status)


def _listen(host: str, port: int, *, reuse_port: bool = False, address: Any = None) -> socket.socket:
    """The listening socket, bound here rather than by uvicorn: a port in use (or an address that
    is not this host's) is then one line naming ``--host``/``--port``, instead of uvicorn's log line
    and exit after the app has already started.

    ``reuse_port``: one of several sockets on one address (``SO_REUSEPORT``, ``--workers``), bound to
    ``address`` when given (the first one's: its port, when ``--port 0`` let the system choose)."""
    try:
        family, kind, proto, _, resolved = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM,
                                                              flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ServeError(f"--host {host}: cannot be resolved ({describe(exc)})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # what uvicorn does: restart at once
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address if address is not None else resolved)
    except OSError as exc:
        sock.close()
        setting = f"--port {port}" if exc.errno in (errno.EADDRINUSE, errno.EACCES) else f"--host {host}"
        raise ServeError(f"{setting}: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def _configure_credentials(server: Any, token_file: Path | None, issuer: str | None, audience: str | None,
                           jwks: str | None, tenant_claim: str, scope_claim: str) -> None:
    """Credentials from configuration replace the app's (and its demo tokens)."""
    if issuer or jwks or audience:  # any one of them means JWTs were meant: never fall back silently
        if not (issuer and jwks and audience):
            raise ServeError("JWT verification needs --jwt-issuer, --jwt-audience and --jwks")
        from ..auth.oauth import ClaimNames, JWTVerifier

        try:
            server.tokens = JWTVerifier(issuer=issuer, audience=audience, jwks=jwks,
                                        claims=ClaimNames(tenant=tenant_claim, scope=scope_claim),
                                        scopes_supported=sorted({s for t in server.registry.tools.values()
                                                                 for s in t.scopes}),
                                        resource_name=server.title or server.name)
        except Misuse:
            raise
        except Exception as exc:
            raise ServeError(f"--jwks {jwks}: {describe(exc)}") from exc
        server.demo_credentials = False
    elif token_file is not None:
        from ..auth._principals import TOKEN_FILE_FORMAT, StaticTokens

        try:
            server.tokens = StaticTokens.from_file(token_file)
        except OSError as exc:
            raise ServeError(f"--token-file {token_file} (or TRUECALL_TOKEN_FILE): {exc.strerror or exc}") from exc
        except Exception as exc:
            reason = str(exc) if isinstance(exc, ValueError) else describe(exc)
            raise ServeError(f"--token-file {token_file} (or TRUECALL_TOKEN_FILE): not a token file "
                             f"({reason}); the format: {TOKEN_FILE_FORMAT}") from exc
        server.demo_credentials = False


#: Collect the youngest generation after this many new container objects instead of 700: a
#: tool call allocates a few hundred, so the default collects every couple of calls.
GC_GEN0_THRESHOLD = 20_000


def _tune_gc() -> None:
    """What a long-running server does once it is loaded: the objects made at start-up (modules,
    the app, its compiled schemas) are moved out of the collector's way for good, and young
    collections run less often.  Reference cycles are still collected, only in bigger batches."""
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


def _has_uvloop() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def _stdio_principal(server: Any) -> Any:
    """stdio has no bearer token: the principal comes from local configuration.

    ``TRUECALL_PRINCIPAL="subject,tenant,scope1 scope2"`` overrides the app's
    ``local_principal`` (the desk's default is the acme operator).  With neither, the server runs
    as :meth:`~truecall.Server.local_user` and says so once on stderr, so that nobody mistakes it
    for a configured principal.
    """
    from ..auth._principals import LOCAL_TENANT, Principal

    raw = os.environ.get("TRUECALL_PRINCIPAL")
    if raw:
        subject, tenant, scopes = (raw.split(",", 2) + ["", ""])[:3]
        if not subject.strip() or not tenant.strip():
            raise ServeError(f"TRUECALL_PRINCIPAL must be \"subject,tenant,scope1 scope2\", not {raw!r}")
        return Principal(subject.strip(), tenant.strip(), frozenset(scopes.split()))
    if server.local_principal is not None:
        return server.local_principal
    principal = server.local_user()
    print(f"truecall serve: no principal configured: serving as the local user {principal.subject!r} "
          f"(tenant {LOCAL_TENANT!r}, every declared scope); TRUECALL_PRINCIPAL chooses another",
          file=sys.stderr, flush=True)
    return principal


def _say_how_to_configure_credentials(server: Any, url: str) -> None:
    """HTTP on loopback with no credentials: what every request will meet, and how to change it.

    Said at start instead of letting the first client discover a 401 (or, when the app has a
    ``local_principal``, an unauthenticated caller served as it) with no word of why."""
    from ..auth._principals import TOKEN_FILE_FORMAT

    if server.local_principal is not None:
        p = server.local_principal
        first = (f"no credentials configured: every request to {url} is served as the app's local principal "
                 f"{p.subject!r} (tenant {p.tenant!r}), without a token, while bound to loopback.")
    else:
        first = f"no credentials configured: every request to {url} will be answered 401."
    print("\n".join([
        f"truecall serve: {first}",
        "  Configure bearer tokens with --token-file FILE (or TRUECALL_TOKEN_FILE); the file holds each token's",
        "  SHA-256, never the token:",
        f"    {TOKEN_FILE_FORMAT}",
        "  Make a token and its digest (the token goes to the client as 'Authorization: Bearer <token>'):",
        "    python -c 'import truecall; t = truecall.new_token(); print(t, truecall.hash_token(t))'",
        "  Or OAuth: --jwt-issuer, --jwt-audience and --jwks.  To try a client first: the incident desk",
        "  (truecall serve --http) takes its demo tokens on loopback, e.g. 'Bearer demo-acme-operator'.",
    ]), file=sys.stderr, flush=True)


def _served(server: Any) -> str:
    registry = server.registry
    counts = [(len(registry.tools), "tool"), (len(registry.resources) + len(registry.templates), "resource"),
              (len(registry.prompts), "prompt")]
    parts = ", ".join(f"{n} {noun}{'' if n == 1 else 's'}" for n, noun in counts if n)
    return f"{server.name!r} ({parts or 'nothing registered'})"


def _say_started(what: str, how_to_stop: str) -> None:
    """One line on stderr when serving starts: what, where, how to stop."""
    print(f"truecall serve: serving {what}; {how_to_stop}", file=sys.stderr, flush=True)


async def _in_lifespan(server: Any, coro: Any) -> None:
    """Run ``coro`` inside the app's ``lifespan`` (``Server(lifespan=...)``)."""
    try:
        await server.start_lifespan()
    except BaseException:
        coro.close()
        raise
    try:
        await coro
    finally:
        await server.stop_lifespan()


def run_server(server: Any, *, http: bool, host: str, port: int, path: str) -> int:
    """``server.run()``: serve ``server`` and return the exit status, a mistake said in one line."""
    try:
        serve(server, http=http, host=host, port=port, path=path)
    except KeyboardInterrupt:
        return interrupted("truecall")
    except Exception as exc:
        return report(exc, "truecall", debug_from_env())
    return 0


def interrupted(prog: str) -> int:
    """Ctrl-C: one line, status 130 (the shell's for SIGINT); records were flushed on the way out."""
    print(f"{prog}: stopped (Ctrl-C)", file=sys.stderr, flush=True)
    return 130


def _run(coro: Any) -> None:
    if _has_uvloop():
        import uvloop

        uvloop.run(coro)
    else:
        asyncio.run(coro)


def serve_parser() -> argparse.ArgumentParser:
    """The options of ``truecall serve`` (the same as ``truecall.cli``'s serve command)."""
    env = os.environ.get
    p = argparse.ArgumentParser(prog="truecall serve", description="Serve APP over stdio (default) or "
                                "Streamable HTTP.")
    p.add_argument("target", nargs="?", default=None, metavar="APP",
                   help="APP as module:attribute or file.py:attribute (default: the incident desk)")
    p.add_argument("--http", action="store_true", help="Serve Streamable HTTP instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (loopback by default)")
    p.add_argument("--port", type=int, default=8000, help="HTTP port")
    p.add_argument("--path", default="/mcp", help="HTTP endpoint path")
    p.add_argument("--allowed-host", action="append", default=[], help="Extra Host/Origin names to accept")
    p.add_argument("--token-file", type=Path, default=env("TRUECALL_TOKEN_FILE") or None,
                   help="JSON file of hashed bearer tokens (replaces the app's) [env TRUECALL_TOKEN_FILE]")
    p.add_argument("--jwt-issuer", default=env("TRUECALL_JWT_ISSUER") or None,
                   help="Accept bearer JWTs from this issuer [env TRUECALL_JWT_ISSUER]")
    p.add_argument("--jwt-audience", default=env("TRUECALL_JWT_AUDIENCE") or None,
                   help="This server's resource URL; tokens must name it [env TRUECALL_JWT_AUDIENCE]")
    p.add_argument("--jwks", default=env("TRUECALL_JWKS") or None,
                   help="The issuer's JWKS: a file path or an https URL [env TRUECALL_JWKS]")
    p.add_argument("--workers", default=None, metavar="N",
                   help="HTTP served by N processes behind one socket, sharing the database; 'auto': one "
                        "per available core (default: 1)")
    p.add_argument("--tenant-claim", default="tenant", help="JWT claim holding the tenant")
    p.add_argument("--scope-claim", default="scope", help="JWT claim holding the scopes")
    p.add_argument(DEBUG_FLAG, action="store_true", default=debug_from_env(),
                   help=f"Show the traceback of an error, not only its line [env {ENV_DEBUG}=1]")
    return p


def main(argv: Sequence[str]) -> int:
    """``truecall serve ARGS``: the exit status.  Whatever stops it is one line on stderr
    (:mod:`truecall._misuse`); ``--debug`` or ``TRUECALL_DEBUG=1`` adds the traceback."""
    options = vars(serve_parser().parse_args(list(argv)))
    debug = options.pop("debug")
    if debug and options.get("workers") is not None:  # worker processes say their errors with the traceback too
        os.environ[ENV_DEBUG] = "1"
    try:
        serve(options.pop("target"), **options)
    except KeyboardInterrupt:
        return interrupted("truecall serve")
    except Exception as exc:
        return report(exc, "truecall serve", debug)
    return 0
