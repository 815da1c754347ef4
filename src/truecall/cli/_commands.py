"""The ``truecall`` command: serve an app over stdio or HTTP, and inspect it."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from . import serving
from ._audit_export import audit_export
from ._options import _db_path, _name_db_option, _parse_time
from .._misuse import debug_from_env, report, take_debug

#: ``--debug`` as :func:`main` found it; ``None``: ``TRUECALL_DEBUG`` decides (e.g. under a test runner).
_debug: bool | None = None

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="truecall: honest MCP servers.  Any command takes --debug (or TRUECALL_DEBUG=1) "
                       "to show the traceback of an error, not only its line.")


def _command(group: typer.Typer, name: str, prog: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``group.command(name)``, run so that whatever stops it is one line on stderr
    (:mod:`truecall._misuse`: exit 2 for a misuse, 1 for a bug) instead of a traceback box.
    What the command says on purpose (``typer.Exit``, a bad option value) passes as it is."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        return group.command(name)(_reported(fn, prog))

    return register


def _reported(fn: Callable[..., Any], prog: str) -> Callable[..., Any]:
    """``fn``, whatever stops it said as one line (see :func:`_command`)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.BadParameter):
            raise
        except Exception as exc:
            raise typer.Exit(report(exc, prog, debug_from_env() if _debug is None else _debug)) from None

    return run


def _print_version(value: bool) -> None:
    if value:
        from .._version import __version__

        typer.echo(f"truecall {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", "-V", callback=_print_version, is_eager=True,
                                       help="Print truecall's version and exit")) -> None:
    """truecall: honest MCP servers (serve, tasks, audit)."""
    from ..texts import LocaleError, current_locale

    try:
        current_locale()  # TRUECALL_LANG is checked before any command runs
    except LocaleError as exc:
        typer.echo(f"truecall: {exc}", err=True)
        raise typer.Exit(2) from None


def load_app(spec: str | None) -> Any:
    """``module:attribute`` or ``path/to/file.py:attribute``; a callable is called for the server
    (a :class:`~truecall.cli.serving.ServeError` when it cannot be: one line, exit 2)."""
    return serving.load_app(spec)


@_command(app, "serve", "truecall serve")
def serve(
    target: Optional[str] = typer.Argument(None, metavar="APP", help="APP as module:attribute or file.py:attribute "
                                                                   "(default: the incident desk)"),
    http: bool = typer.Option(False, "--http", help="Serve Streamable HTTP instead of stdio"),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP bind address (loopback by default)"),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="HTTP port (0: any free port)"),
    path: str = typer.Option("/mcp", "--path", help="HTTP endpoint path"),
    allowed_host: list[str] = typer.Option([], "--allowed-host", help="Extra Host/Origin names to accept"),
    token_file: Optional[Path] = typer.Option(None, "--token-file", envvar="TRUECALL_TOKEN_FILE",
                                              help="JSON file of hashed bearer tokens (replaces the app's)"),
    jwt_issuer: Optional[str] = typer.Option(None, "--jwt-issuer", envvar="TRUECALL_JWT_ISSUER",
                                             help="Accept bearer JWTs from this issuer"),
    jwt_audience: Optional[str] = typer.Option(None, "--jwt-audience", envvar="TRUECALL_JWT_AUDIENCE",
                                               help="This server's resource URL; tokens must name it"),
    jwks: Optional[str] = typer.Option(None, "--jwks", envvar="TRUECALL_JWKS",
                                       help="The issuer's JWKS: a file path or an https URL"),
    tenant_claim: str = typer.Option("tenant", "--tenant-claim", help="JWT claim holding the tenant"),
    scope_claim: str = typer.Option("scope", "--scope-claim", help="JWT claim holding the scopes"),
    workers: Optional[str] = typer.Option(None, "--workers", metavar="N",
                                          help="HTTP served by N processes behind one socket, sharing the "
                                               "database; 'auto': one per available core (default: 1)"),
) -> None:
    """Serve APP over stdio (default) or Streamable HTTP.  Ctrl-C stops it."""
    # (``truecall serve`` runs the same without typer: truecall.cli.serving, for a server's memory.)
    if _debug and workers is not None:  # worker processes say their errors with the traceback too
        from .._misuse import ENV_DEBUG

        os.environ[ENV_DEBUG] = "1"
    try:
        serving.serve(target, http=http, host=host, port=port, path=path, allowed_host=allowed_host,
                      token_file=token_file, jwt_issuer=jwt_issuer, jwt_audience=jwt_audience, jwks=jwks,
                      tenant_claim=tenant_claim, scope_claim=scope_claim, workers=workers)
    except KeyboardInterrupt:
        raise typer.Exit(serving.interrupted("truecall serve")) from None


@_command(app, "config", "truecall config")
def config(
    target: Optional[str] = typer.Argument(None, metavar="APP", help="APP as module:attribute or "
                                           "file.py:attribute (default: the incident desk)"),
    name: Optional[str] = typer.Option(None, "--name", help="The entry's name (default: the server's name)"),
    file: Optional[Path] = typer.Option(None, "--file", help="The assistant's configuration file (default: "
                                        "Claude Desktop's)"),
    env: list[str] = typer.Option([], "--env", help="NAME=VALUE for the server's environment (repeatable), "
                                  "e.g. TRUECALL_PRINCIPAL"),
    show: bool = typer.Option(False, "--print", help="Print the mcpServers entry instead of writing it"),
) -> None:
    """Write the mcpServers entry that starts APP over stdio into a desktop assistant's configuration
    (as fastmcp install does); other servers there are kept."""
    import json

    from ._config import default_config_path, entry_for, parse_env, write_entry

    server = serving.load_app(target)  # it must load: a broken entry is said now, not by the assistant
    entry = entry_for(target, parse_env(env))
    key = name or server.name
    if show:
        typer.echo(json.dumps({"mcpServers": {key: entry}}, indent=2))
        return
    path = file or default_config_path()
    replaced = write_entry(path, key, entry)
    typer.echo(f"{'replaced' if replaced else 'added'} the mcpServers entry {key!r} in {path}; restart the "
               "assistant to load it")


@_command(app, "inspect", "truecall inspect")
def inspect_app(
    target: Optional[str] = typer.Argument(None, help="APP as module:attribute or file.py:attribute "
                                                      "(default: the incident desk)"),
    as_json: bool = typer.Option(False, "--json", help="The definitions as JSON (what the list methods answer)"),
) -> None:
    """Print each tool, resource and prompt with the schemas a client will see."""
    from ._inspect import inventory, render
    from ..server._typed import RegistrationError

    try:
        server = serving.load_app(target)
    except (serving.ServeError, RegistrationError) as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from None
    data = inventory(server)
    if as_json:
        import orjson

        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        render(data)


@_command(app, "migrate", "truecall migrate")
def migrate(
    target: Optional[str] = typer.Argument(None, help="APP (default: the incident desk)"),
    db: Optional[str] = typer.Option(None, "--db", help="Database: a path or a postgresql:// URL (default "
                                     "$TRUECALL_DB or .truecall/desk.db); for apps that read $TRUECALL_DB, "
                                     "as the desk does"),
) -> None:
    """Apply the app's schema migrations to its database and say what was done: the migrations
    applied now (with their ISO times), or that the database was already up to date.

    Safe to run while replicas start: PostgreSQL migrations take an advisory lock."""
    import time

    from ..incidents.ops import iso, shown

    if db:
        os.environ["TRUECALL_DB"] = db  # what the app opens, when it reads the setting (the desk does)
    from ..storage import CannotOpenDatabase

    from ..protocol.engine import Engine
    from ..transports._session_store import SessionStore

    started = time.time()
    try:
        # The app's database opens at its start: the server's, the stores' and the engine's own tables.
        server = Engine(load_app(target)).start(recover=False).server
    except CannotOpenDatabase as exc:  # the app opened what --db named: say --db, not TRUECALL_DB
        _name_db_option(exc, db)
        raise
    SessionStore(server.db)
    where = f"{shown(server.db.path)} ({server.db.dialect})"
    if db and not _same_database(db, server.db.path):
        typer.echo(f"{target or serving.DEFAULT_APP} opens its own database, {where}, not --db {shown(db)}: its "
                   "migrations went there (--db works for apps that read $TRUECALL_DB)", err=True)
        raise typer.Exit(2)
    rows = server.db.fetchall("SELECT name, applied_at FROM _migrations ORDER BY applied_at, name")
    now = [(name, applied) for name, applied in rows if applied >= started]
    if not now:
        last = iso(max(applied for _, applied in rows)) if rows else None
        typer.echo(f"{where} is up to date: {_n(len(rows), 'migration')}"
                   + (f", the last applied {last}" if last else ""))
        return
    before = len(rows) - len(now)
    typer.echo(f"applied {_n(len(now), 'migration')} to {where}"
               + (f" ({before} applied before)" if before else "") + ":")
    for name, applied in now:
        typer.echo(f"  {iso(applied)}  {name}")


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _same_database(wanted: str, opened: str) -> bool:
    def strip(path: str) -> str:
        return path[len("sqlite:///"):] if path.startswith("sqlite:///") else path

    wanted, opened = strip(wanted), strip(opened)
    if "://" in wanted or "://" in opened or ":memory:" in (wanted, opened):
        return wanted == opened
    return os.path.abspath(wanted) == os.path.abspath(opened)


#: ``truecall audit`` queries the trail; ``truecall audit export`` (its own module) writes it to files.
audit_app = typer.Typer(add_completion=False, help="Query the audit trail, or export it (truecall audit export).")
app.add_typer(audit_app, name="audit")


def audit(
    ctx: typer.Context,
    db: Optional[str] = typer.Option(None, "--db", help="Database: a path or URL (default $TRUECALL_DB or "
                                     ".truecall/desk.db)"),
    tenant: Optional[str] = typer.Option(None, "--tenant"),
    subject: Optional[str] = typer.Option(None, "--subject"),
    tool: Optional[str] = typer.Option(None, "--tool"),
    outcome: Optional[str] = typer.Option(None, "--outcome", help="ok, an error kind, a code, denied, cancelled"),
    kind: Optional[str] = typer.Option(None, "--kind", help="e.g. tool.called, tool.denied, task.created"),
    since: Optional[str] = typer.Option(None, "--since", help="epoch, ISO 8601, or an age like 2h"),
    until: Optional[str] = typer.Option(None, "--until"),
    limit: int = typer.Option(50, "--limit", min=1, help="At most this many records"),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line"),
    wide: bool = typer.Option(False, "--wide", help="Every column on one line per row, however wide"),
) -> None:
    """Query the audit trail (newest first). The table fits the terminal (facts stacked in fewer
    columns when a row would not fit); --wide prints every column; --json every field."""
    if ctx.invoked_subcommand is not None:
        return
    from ..audit._log import AuditLog
    from ..audit._journal import journal_dir, unloaded_bytes, wait_loaded
    from ..storage import open_database

    from ..storage import CannotOpenDatabase

    path = _db_path(db)
    try:
        log = AuditLog(open_database(path))  # opening loads the journals of servers that were killed
    except CannotOpenDatabase as exc:
        _name_db_option(exc, db)
        raise
    if journal_dir(log.db) is not None and not wait_loaded(path, timeout=2.0):
        typer.echo(f"note: {unloaded_bytes(path)} bytes of audit records that a running server acknowledged "
                   "are not in the table yet (it loads them as soon as the database takes them)", err=True)
    records = log.query(kind=kind, tenant=tenant, subject=subject, tool=tool, outcome=outcome,
                        since=_parse_time(since), until=_parse_time(until), limit=limit)
    if as_json:
        import orjson

        for record in records:
            sys.stdout.write(orjson.dumps(record.to_dict()).decode() + "\n")
        return
    _render_audit(records, wide)


audit_app.callback(invoke_without_command=True)(_reported(audit, "truecall audit"))
_command(audit_app, "export", "truecall audit export")(audit_export)


def _render_audit(records: list[Any], wide: bool) -> None:
    from rich import box
    from rich.table import Table

    from ..incidents.ops import cell, console, fitted, iso, print_table, stacked

    title = f"audit ({len(records)} records, newest first; times UTC)"
    rows = []
    for r in records:
        when = iso(r.ts) or "-"
        ms = r.fields.get("durationMs")
        details = [f"{k}={cell(v)}" for k, v in r.fields.items()
                   if k not in ("durationMs", "argHash") and v is not None]
        rows.append((when, r, "-" if ms is None else str(ms), details))

    table = Table()
    for column in ("time", "kind", "tenant", "subject", "tool", "outcome", "ms", "details"):
        table.add_column(column, no_wrap=True)
    for when, r, ms, details in rows:
        table.add_row(when, r.kind, cell(r.tenant), cell(r.subject), cell(r.tool), cell(r.outcome), ms,
                      ", ".join(details) or "-")

    def narrow() -> Any:
        stack = Table(box=box.SIMPLE_HEAD, leading=1, pad_edge=False)
        stack.add_column("time, event, tool", overflow="fold", width=fitted(
            v for when, r, _, _ in rows for v in (when.replace("T", " "), r.kind, cell(r.outcome), cell(r.tool))))
        stack.add_column("caller", overflow="fold",
                         width=fitted((v for _, r, _, _ in rows for v in (cell(r.subject), cell(r.tenant))), 20))
        stack.add_column("details", overflow="fold", ratio=1)
        for when, r, ms, details in rows:
            stack.add_row(stacked(when.replace("T", " "), r.kind, cell(r.outcome), cell(r.tool)),
                          stacked(cell(r.subject), cell(r.tenant)),
                          stacked(*([f"ms={ms}"] if ms != "-" else []), *details) or "-")
        return stack

    out = console(wide)
    out.print(title)
    print_table(table, narrow, wide=wide, out=out)


# -- operators: tasks and reconcile (over a server's database) -------------------------------------

tasks_app = typer.Typer(add_completion=False, no_args_is_help=True,
                        help="Inspect and cancel tasks in a server's database (default: the desk's).")
app.add_typer(tasks_app, name="tasks")

_DB_HELP = "SQLite database (default: $TRUECALL_DB or .truecall/desk.db)"


_WIDE_HELP = "Every column on one line per row, however wide (default: fit the terminal)"


def _ops(fn: Any, render: Any, as_json: bool, *args: Any, wide: bool = False, **kwargs: Any) -> None:
    from ..incidents import ops
    from ..storage import CannotOpenDatabase

    try:
        data = fn(*args, **kwargs)
    except CannotOpenDatabase as exc:
        _name_db_option(exc, args[0] if args else None)
        raise
    except ops.OpsError as exc:
        if as_json:
            ops.print_json(exc.payload)
        else:
            typer.echo(str(exc), err=True)
        raise typer.Exit(exc.status) from None
    if as_json:
        ops.print_json(data)
    else:
        render(data, wide)


@_command(tasks_app, "list", "truecall tasks list")
def tasks_list(
    db: Optional[str] = typer.Option(None, "--db", help=_DB_HELP),
    status: Optional[str] = typer.Option(None, "--status", help="Only tasks in this status"),
    tool: Optional[str] = typer.Option(None, "--tool", help="Only tasks of this tool"),
    limit: int = typer.Option(200, "--limit", min=1, help="At most this many tasks: the newest, listed oldest first"),
    as_json: bool = typer.Option(False, "--json", help="JSON instead of a table"),
    wide: bool = typer.Option(False, "--wide", help=_WIDE_HELP),
) -> None:
    """List tasks (all tenants): status, outcome, ticket and settlement."""
    from ..incidents import ops

    _ops(ops.tasks_list, ops.render_list, as_json, db, status=status, tool=tool, limit=limit, wide=wide)


@_command(tasks_app, "show", "truecall tasks show")
def tasks_show(
    task_id: str = typer.Argument(..., help="The task id (one starting with '-' goes after '--')"),
    db: Optional[str] = typer.Option(None, "--db", help=_DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="JSON instead of a table"),
    wide: bool = typer.Option(False, "--wide", help="One line per field, however long"),
) -> None:
    """One task in full: its result as it ended, the desk's records and any later settlement."""
    from ..incidents import ops

    _ops(ops.tasks_show, ops.render_show, as_json, db, task_id, wide=wide)


@_command(tasks_app, "cancel", "truecall tasks cancel")
def tasks_cancel(
    task_id: str = typer.Argument(..., help="The task id (one starting with '-' goes after '--')"),
    db: Optional[str] = typer.Option(None, "--db", help=_DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="JSON instead of text"),
) -> None:
    """Cancel a task through the task state table; a refusal names the current status (exit 1)."""
    from ..incidents import ops

    _ops(ops.tasks_cancel, ops.render_cancel, as_json, db, task_id)


@_command(tasks_app, "reseal", "truecall tasks reseal")
def tasks_reseal(
    db: Optional[str] = typer.Option(None, "--db", help=_DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="JSON instead of text"),
) -> None:
    """Seal every task's stored values again under the first key of TRUECALL_STATE_KEYS (after a rotation,
    before the old key is dropped)."""
    from ..incidents import ops

    _ops(ops.tasks_reseal, ops.render_reseal, as_json, db)


@_command(app, "reconcile", "truecall reconcile")
def reconcile(
    db: Optional[str] = typer.Option(None, "--db", help=_DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="JSON instead of tables"),
    wide: bool = typer.Option(False, "--wide", help=_WIDE_HELP),
) -> None:
    """Settle incident.handle tasks whose outcome was unknown against the ticket table."""
    from ..incidents import ops

    _ops(ops.run_reconcile, ops.render_reconcile, as_json, db, wide=wide)


# -- calling a server (the client side) --------------------------------------------------------------


@_command(app, "call", "truecall call")
def call_tool(
    tool: str = typer.Argument(..., help="The tool's name"),
    command: Optional[list[str]] = typer.Argument(None, help="After --: the command line of a stdio server"),
    args: Optional[str] = typer.Option(None, "--args", help="The arguments, as a JSON object"),
    url: Optional[str] = typer.Option(None, "--url", help="A Streamable HTTP server's URL"),
    token: Optional[str] = typer.Option(None, "--token", envvar="TRUECALL_TOKEN", help="Bearer token (HTTP)"),
    wait: bool = typer.Option(False, "--wait", help="Wait for an accepted task to end"),
    as_json: bool = typer.Option(False, "--json", help="One JSON object instead of a sentence and the result"),
    timeout: Optional[float] = typer.Option(60.0, "--timeout", help="Seconds to wait for an answer"),
    version: Optional[str] = typer.Option(None, "--version", help="Pin a protocol version (default: negotiate)"),
    lang: Optional[str] = typer.Option(None, "--lang", help="Language of the sentence: en or zh "
                                                            "(default: $TRUECALL_LANG, else en)"),
) -> None:
    """Call one tool: prints one sentence saying what happened, and the result. Exit status: 0 done, 1 failed,
    2 protocol or usage error, 3 accepted and not waited for, 4 unknown (it may have happened),
    5 unconfirmed (success flagged, but the text says only accepted, or failed: not done)."""
    from ..client._cli import run_call
    from ..texts import LocaleError, resolve_locale

    try:
        locale = resolve_locale(lang)
    except LocaleError as exc:
        typer.echo(f"truecall: --lang: {exc}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(run_call(tool, args, url=url, command=command or [], token=token, wait=wait, timeout=timeout,
                              version=version, locale=locale, as_json=as_json))


@_command(app, "probe", "truecall probe")
def probe_server(
    command: Optional[list[str]] = typer.Argument(None, help="After --: the command line of a stdio server"),
    url: Optional[str] = typer.Option(None, "--url", help="A Streamable HTTP server's URL"),
    token: Optional[str] = typer.Option(None, "--token", envvar="TRUECALL_TOKEN", help="Bearer token (HTTP)"),
    tool: list[str] = typer.Option([], "--tool", help="Probe this tool (repeatable; read-only or not)"),
    allow_writes: bool = typer.Option(False, "--allow-writes", help="Also call tools not annotated "
                                                                    "readOnlyHint: true"),
    as_json: bool = typer.Option(False, "--json", help="The report as one JSON object"),
    timeout: float = typer.Option(30.0, "--timeout", help="Seconds each call may take"),
    value: list[str] = typer.Option([], "--value", help="NAME=VALUE: the value of every argument called NAME "
                                                        "(repeatable; VALUE is JSON, or else a string)"),
) -> None:
    """Tell whether a server's results can be trusted: the findings per era and per tool, with the
    evidence and the rule. Calls only read-only tools unless --tool or --allow-writes. Exit status:
    0 nothing found, 1 warnings, 2 failures (or the server could not be reached), 3 no tool probed
    (none is read-only, or --tool named none the server lists): nothing of the tools was checked."""
    import asyncio

    from ..client._cli import server_target
    from ..probe import probe, render

    target = server_target(url, command or [])
    if target is None:
        raise typer.Exit(2)
    if timeout <= 0:
        raise typer.BadParameter("--timeout must be positive")
    values: dict[str, object] = {}
    for given in value:
        name, sep, raw = given.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"--value {given!r}: expected NAME=VALUE")
        import orjson

        try:
            values[name] = orjson.loads(raw)
        except orjson.JSONDecodeError:
            values[name] = raw
    report = asyncio.run(probe(target, token=token, tools=tool, allow_writes=allow_writes, timeout=timeout,
                               values=values))
    if as_json:
        import orjson

        sys.stdout.write(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2, default=str).decode() + "\n")
    else:
        typer.echo(render(report))
    raise typer.Exit(report.exit_status)


def main() -> None:
    """The ``truecall`` command: ``--debug`` is taken out of the arguments wherever it is."""
    global _debug
    args, _debug = take_debug(sys.argv[1:])
    app(args=args, prog_name="truecall")


if __name__ == "__main__":
    main()
