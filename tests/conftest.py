"""Shared fixtures for the foundation suite (owned by the test suite; do not edit elsewhere).

Fixture names say what they give:

- ``desk_db_path``   – a fresh SQLite path for the incident desk, under ``tmp_path``;
- ``desk``           – ``truecall.incidents.build_desk`` on that path;
- ``operator_token`` – the demo token for ``newton@acme`` (read + write on tenant acme);
- ``reader_token``   – the demo token for ``alice@acme`` (read only);
- ``make_server``    – a factory: ``make_server(tokens={token: Principal}, name=...)`` → a bare
  ``truecall.Server`` on its own database under ``tmp_path`` with those plain tokens.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Callable

import pytest

from truecall import Principal, Server, StaticTokens
from truecall.incidents import DEMO_TOKENS, build_desk

#: Plain tokens used by the ``make_server`` default table.
ACME_ALL = "test-acme-all"
ACME_READ = "test-acme-read"
ACME_NONE = "test-acme-none"
GLOBEX_ALL = "test-globex-all"

DEFAULT_TEST_TOKENS: dict[str, Principal] = {
    ACME_ALL: Principal("root@acme", "acme", frozenset({"read", "write"})),
    ACME_READ: Principal("reader@acme", "acme", frozenset({"read"})),
    ACME_NONE: Principal("nobody@acme", "acme", frozenset()),
    GLOBEX_ALL: Principal("root@globex", "globex", frozenset({"read", "write"})),
}


@pytest.fixture
def desk_db_path(tmp_path: Path) -> Path:
    return tmp_path / "desk.db"


@pytest.fixture
def desk(desk_db_path: Path) -> Server:
    server = build_desk(desk_db_path)
    yield server
    server.db.close()


@pytest.fixture
def operator_token() -> str:
    token = "demo-acme-operator"
    assert token in DEMO_TOKENS
    return token


@pytest.fixture
def reader_token() -> str:
    token = "demo-acme-reader"
    assert token in DEMO_TOKENS
    return token


@pytest.fixture
def make_server(tmp_path: Path) -> Callable[..., Server]:
    """Factory for bare servers with plain test tokens (defaults: ``DEFAULT_TEST_TOKENS``)."""
    made: list[Server] = []
    counter = itertools.count()

    def factory(tokens: dict[str, Principal] | None = None, name: str = "test-server") -> Server:
        db = tmp_path / f"server-{next(counter)}.db"
        server = Server(name, tokens=StaticTokens.from_plain(tokens or DEFAULT_TEST_TOKENS), db=db)
        made.append(server)
        return server

    yield factory
    for server in made:
        server.db.close()
