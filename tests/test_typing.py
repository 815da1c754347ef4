"""The package's type hints hold: ``mypy`` (strict, configured in ``pyproject.toml``) finds nothing.

Users' editors and type checkers read these hints (``py.typed`` ships with the package), so a hint
that lies is a bug a user meets; this runs the same check a maintainer runs, as part of the suite.
"""

from __future__ import annotations

import subprocess
import sys
from _paths import ROOT


def test_mypy_strict_finds_nothing_in_the_package() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--config-file",
                           str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, "mypy --strict src/truecall:\n" + done.stdout[-6000:] + done.stderr[-2000:]
    assert "Success: no issues found" in done.stdout


def test_the_package_says_it_is_typed() -> None:
    assert (ROOT / "src" / "truecall" / "py.typed").is_file()
