"""The package's type hints hold: ``mypy`` (strict, configured in ``pyproject.toml``) finds nothing.

Users' editors and type checkers read these hints (``py.typed`` ships with the package), so a hint
that lies is a bug a user meets; this runs the same check a maintainer runs, as part of the suite.
"""

from __future__ import annotations

import re
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


_IGNORE = re.compile(r"#\s*type:\s*ignore\b(?P<rest>.*)$")
_WELL_FORMED = re.compile(r"\[[a-z-]+(?:, *[a-z-]+)*\]\s+#\s*\S.*")


def test_every_type_ignore_names_its_error_and_says_why() -> None:
    """``# type: ignore[code]  # why`` on one line: the code keeps mypy from hiding any other error on the
    line, and the reason tells the next reader why the checker is wrong there (or why it is not worth
    convincing), so that an ignore whose reason is gone is seen and removed."""
    package = ROOT / "src" / "truecall"
    bad = []
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found = _IGNORE.search(line)
            if found and not _WELL_FORMED.fullmatch(found["rest"].strip()):
                bad.append(f"{where}:{number}: {line.strip()}")
    assert not bad, "a type: ignore without [code] and '# reason' on its line:\n" + "\n".join(bad)


def test_the_ignore_check_reads_what_it_should() -> None:
    ok = "x = f()  # type: ignore[no-any-return]  # the stub says Any"
    assert _WELL_FORMED.fullmatch(_IGNORE.search(ok)["rest"].strip())  # type: ignore[index]  # it matches
    for wrong in ("x = f()  # type: ignore", "x = f()  # type: ignore[arg-type]", "x = f()  # type: ignore  # why",
                  "x = f()  # type: ignore[arg-type]  #"):
        assert not _WELL_FORMED.fullmatch(_IGNORE.search(wrong)["rest"].strip()), wrong  # type: ignore[index]  # matches
