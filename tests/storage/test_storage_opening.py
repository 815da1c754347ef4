"""A database made now and opened later (``connect=False``), on both backends.

What the stores ask of it before it opens — their migrations, the work that needs the tables
(``when_open``) — is done at ``open()``, in the order asked; a statement before it is refused in
one line; ``open()`` is idempotent, and a failed one can be tried again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pg_support import backend, db_target, db_targets, pg_schemas  # noqa: F401  (fixtures)
from truecall.storage import CannotOpenDatabase, NotOpen, open_database


def test_what_is_asked_before_the_opening_is_done_at_it_in_order(db_target: str) -> None:
    db = open_database(db_target, connect=False)
    done: list[str] = []
    db.migrate([("opening-1", "CREATE TABLE seen (word TEXT NOT NULL)")])
    db.when_open(lambda: done.append("first") or db.execute("INSERT INTO seen VALUES (?)", ("first",)))
    db.migrate([("opening-2", "CREATE TABLE later (n INTEGER NOT NULL)")])
    db.when_open(lambda: done.append("second") or db.execute("INSERT INTO later VALUES (?)", (2,)))
    assert not db.connected and done == []
    with pytest.raises(NotOpen, match="is not open yet: its open\\(\\) opens it"):
        db.fetchall("SELECT 1")
    try:
        assert db.open() is db and db.open() is db  # once: the second call does nothing again
        assert db.connected and done == ["first", "second"]
        assert db.fetchall("SELECT word FROM seen") == [("first",)] and db.fetchall("SELECT n FROM later") == [(2,)]
        db.when_open(lambda: done.append("now"))  # open already: done at once
        assert done == ["first", "second", "now"]
    finally:
        db.close()


def test_a_failed_opening_can_be_tried_again(tmp_path: Path) -> None:
    folder = tmp_path / "not-yet"
    db = open_database(str(folder / "a.db"), connect=False)  # the setting is read; nothing is checked yet
    db.migrate([("opening-1", "CREATE TABLE seen (word TEXT NOT NULL)")])
    with pytest.raises(CannotOpenDatabase, match="does not exist"):
        db.open()
    folder.mkdir()
    try:
        db.open()
        assert db.fetchall("SELECT name FROM _migrations") == [("opening-1",)]
    finally:
        db.close()


def test_closing_a_database_never_opened_touches_nothing(tmp_path: Path) -> None:
    db = open_database(str(tmp_path / "a.db"), connect=False)
    db.close()
    assert list(tmp_path.iterdir()) == []
