"""Naming a database: the setting, the default path, and the error for one that cannot be opened."""

from __future__ import annotations

import os
import re

from .._misuse import Misuse

__all__ = ["ENV_DB", "DEFAULT_PATH", "default_path", "CannotOpenDatabase", "shown_target"]

#: The setting that names the database of the desk and of the operator commands (a path or a URL).
ENV_DB = "TRUECALL_DB"
#: Where the desk and the operator commands keep their data when nothing names a database.
DEFAULT_PATH = os.path.join(".truecall", "desk.db")


def default_path() -> str:
    """:data:`DEFAULT_PATH`, its folder created: the one database path truecall picks itself, so
    the one whose folder it may make (a path that was given must be in a folder that exists)."""
    os.makedirs(os.path.dirname(DEFAULT_PATH), exist_ok=True)
    return DEFAULT_PATH


class CannotOpenDatabase(Misuse):
    """The database named by a setting cannot be opened: a missing folder, a file that is not a
    database, a server that cannot be reached.  ``target`` is what was asked for; ``reason`` is why.
    ``setting``, when known, is what named it (``TRUECALL_DB``, ``--db``): the line starts with it.
    """

    def __init__(self, target: str, reason: str, setting: str | None = None) -> None:
        super().__init__(target, reason)
        self.target = target
        self.reason = reason
        self.setting = setting or (ENV_DB if self.names(os.environ.get(ENV_DB)) else None)

    def names(self, value: str | None) -> bool:
        """Whether ``value`` (a setting's text) names this database."""
        if not value:
            return False
        value = value[len("sqlite:///"):] if value.startswith("sqlite:///") else value
        if "://" in value or "://" in self.target:
            return value == self.target
        return os.path.abspath(value) == os.path.abspath(self.target)

    def __str__(self) -> str:
        shown = shown_target(self.target)
        where = f"{self.setting}={shown}" if self.setting else f"database {shown}"
        return f"{where}: {self.reason}"


def shown_target(target: str) -> str:
    """A database name fit for output: a URL's password (in its user part or its query) is never shown."""
    target = re.sub(r"(://[^/:@]*):[^/@]*@", r"\1:***@", target)
    return re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", target)
