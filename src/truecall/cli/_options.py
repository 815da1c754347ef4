"""What several commands of ``truecall`` read from their options: the database, a point in time.

Below :mod:`truecall.cli` and the command modules it registers (``_audit_export``), which share
these: in ``_commands`` they made ``_audit_export`` import ``_commands`` back, from inside its command.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

import typer

__all__ = ["_db_path", "_name_db_option", "_parse_time"]


def _db_path(db: Optional[str]) -> str:
    path = str(db) if db else os.environ.get("TRUECALL_DB") or os.path.join(".truecall", "desk.db")
    if path.startswith("sqlite:///"):
        path = path[len("sqlite:///"):]
    # A server URL (postgresql://…) names a database that is not a file: open_database decides.
    if path != ":memory:" and "://" not in path and not Path(path).exists():
        typer.echo(f"no database at {path}", err=True)
        raise typer.Exit(2)
    return path


def _name_db_option(exc: Any, db: Optional[str]) -> None:
    """A database named by ``--db`` is reported under that name (``TRUECALL_DB`` otherwise)."""
    if db and exc.names(db):
        exc.setting = "--db"


def _parse_time(value: Optional[str]) -> Optional[float]:
    """An epoch number, an ISO 8601 time, or a relative age like 15m / 2h / 7d."""
    if value is None:
        return None
    import re
    import time
    from datetime import datetime

    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", value.strip())
    if m:
        return time.time() - float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise typer.BadParameter(f"not a time: {value!r} (use epoch seconds, ISO 8601, or 15m/2h/7d)") from None
