"""``truecall audit export``: the audit trail written to files on demand, in the retention sweep's format.

Kept apart from :mod:`truecall.cli` (which only registers it): the files are
:mod:`truecall.audit._retention`'s — gzip-compressed JSON lines, one file per period, each beside a
``.sha256`` that ``sha256sum -c`` checks — so an export on demand and the records the sweep exported
before deleting them read the same.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from ._options import _db_path, _name_db_option, _parse_time

__all__ = ["audit_export"]


def audit_export(
    to: Path = typer.Option(..., "--to", help="Folder to write into (created; files already there are never "
                                              "overwritten)"),
    since: Optional[str] = typer.Option(None, "--since", help="epoch, ISO 8601, or an age like 2h"),
    until: Optional[str] = typer.Option(None, "--until", help="epoch, ISO 8601, or an age like 15m"),
    db: Optional[str] = typer.Option(None, "--db", help="Database: a path or URL (default $TRUECALL_DB or "
                                                        ".truecall/desk.db)"),
    period: Optional[str] = typer.Option(None, "--period", help="One file per this much time (1d, 6h; default "
                                                                "$TRUECALL_AUDIT_EXPORT_PERIOD or 1d)"),
) -> None:
    """Write the audit records with since <= time < until to compressed JSON-lines files (one per
    period, each with a .sha256), as retention's export does; redaction and hashes as recorded."""
    from ..audit._log import AuditLog
    from ..audit._journal import journal_dir, unloaded_bytes, wait_loaded
    from ..audit._retention import export_range, period_seconds
    from ..storage import CannotOpenDatabase, open_database

    path = _db_path(db)
    try:
        log = AuditLog(open_database(path), retain="all")  # opening loads the journals of killed servers
    except CannotOpenDatabase as exc:
        _name_db_option(exc, db)
        raise
    if journal_dir(log.db) is not None and not wait_loaded(path, timeout=2.0):
        typer.echo(f"note: {unloaded_bytes(path)} bytes of audit records that a running server acknowledged "
                   "are not in the table yet; they are not in this export", err=True)
    files = export_range(log.db, to, _parse_time(since), _parse_time(until),
                         period_s=period_seconds(period) if period else None)
    for name, (size, sha) in sorted(files.items()):
        typer.echo(f"{sha}  {os.path.join(str(to), name)}  ({size} bytes)")
    if not files:
        typer.echo("no audit records in that range", err=True)
