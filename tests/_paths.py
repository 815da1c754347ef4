"""Where the repository is, for tests in any folder under ``tests/``.

A test's own ``__file__`` says nothing stable about the checkout (its depth changes when it moves to
another folder): the root is the nearest folder holding ``pyproject.toml``, found once here.
"""

from __future__ import annotations

from pathlib import Path


def _root() -> Path:
    here = Path(__file__).resolve().parent
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    raise RuntimeError(f"no pyproject.toml above {here}: the tests run from a checkout of truecall")


#: The checkout (the folder with ``pyproject.toml``).
ROOT = _root()
#: The suite's own folder: the helpers (http_support.py, rogue_server.py, client_peers/, ...) live here.
TESTS = ROOT / "tests"
#: The example servers (examples/*.py) that the docs and the tests run.
EXAMPLES = ROOT / "examples"
#: The conformance fixture and the pinned Node packages (conformance/package.json).
CONFORMANCE = ROOT / "conformance"
