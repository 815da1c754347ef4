"""A fresh clone is the whole product: nothing in it reads outside its own root.

``conftest.py`` refuses, for the whole run, every file the suite opens in a folder beside the
checkout; these tests pin that guard and scan the sources for paths that would climb out.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, outside_the_repository

#: ``../shared``, ``parent / "shared"``, ``parents[2]``: the ways a path climbs out of the checkout.
_CLIMBS = re.compile(r"\.\./shared|['\"]shared['\"]\s*/|/\s*['\"]shared['\"]|ROOT\.parent\b|parents\[[2-9]\]")


def test_the_guard_refuses_a_folder_beside_the_checkout() -> None:
    beside = ROOT.parent / "shared" / "mcp-spec" / "2026-07-28" / "schema.json"
    assert outside_the_repository(beside)
    assert outside_the_repository(str(ROOT.parent / "other-clone" / "x.py"))
    assert not outside_the_repository(ROOT / "spec" / "2026-07-28" / "schema.json")
    assert not outside_the_repository(Path(tempfile.gettempdir()) / "x")
    assert not outside_the_repository("/usr/lib/x")
    if ROOT.parent != Path(ROOT.anchor):
        with pytest.raises(PermissionError, match="outside the repository"):
            open(beside, "rb")  # noqa: SIM115 - the guard refuses before anything is opened


def test_the_schemas_are_vendored_in_the_repository() -> None:
    import mcp_schema

    assert ROOT in Path(mcp_schema.SPEC_DIR).resolve().parents
    for version in ("2025-06-18", "2025-11-25", "2026-07-28", "ext-tasks"):
        assert (Path(mcp_schema.SPEC_DIR) / version / "schema.json").is_file(), version
    assert "CallToolResult" in mcp_schema._schema("2026-07-28")["$defs"]
    assert "commit" in (ROOT / "spec" / "README.md").read_text()


def _repository_files() -> list[Path]:
    """What a clone holds: the files git tracks (and new ones it does not ignore), not what a run
    leaves behind (a virtualenv, node_modules, bench peers)."""
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    return [ROOT / name for name in listed if name and (ROOT / name).is_file()]


def test_no_source_climbs_out_of_the_checkout() -> None:
    offenders = []
    for path in _repository_files():
        if path.suffix not in ("", ".py", ".sh", ".toml", ".mjs", ".js", ".json", ".yml"):
            continue
        if path in (Path(__file__), ROOT / "tests" / "conftest.py"):  # the guard and its test name them
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if _CLIMBS.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "paths that climb out of the checkout:\n" + "\n".join(offenders)


#: ``__file__`` followed by ``.parent``/``.parents``: a path that is right only at one depth under tests/.
_FROM_OWN_DEPTH = re.compile(r"__file__\)?(\.resolve\(\))?\.parents?\b")


def test_tests_find_the_checkout_through_paths_not_their_own_depth() -> None:
    """A test that moves to another folder keeps working: the root comes from tests/_paths.py."""
    offenders = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
                 for path in sorted((ROOT / "tests").rglob("*.py")) if path.name != "_paths.py"
                 for number, line in enumerate(path.read_text().splitlines(), 1) if _FROM_OWN_DEPTH.search(line)]
    assert not offenders, "use _paths.ROOT / TESTS / EXAMPLES / CONFORMANCE:\n" + "\n".join(offenders)


def test_test_files_have_unique_names_and_documented_folders() -> None:
    """pytest's default import mode imports a test file by its name: two with one name collide.  Each
    folder of tests is in tests/README.md's map, so a maintainer finds where a module's tests are."""
    files = sorted(p for p in (ROOT / "tests").rglob("test_*.py") if ".venv" not in p.parts)
    names = [p.name for p in files]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    readme = (ROOT / "tests" / "README.md").read_text()
    folders = {p.parent.relative_to(ROOT / "tests").as_posix() for p in files} - {"."}
    assert folders and all(f"`{folder}/`" in readme for folder in folders), folders


def test_the_private_postgres_is_what_the_suite_uses() -> None:
    import conftest
    import pg_support

    url = os.environ["TRUECALL_TEST_PG_URL"]
    assert pg_support.PG_URL == url
    if conftest._private_pg is not None:  # no server was named: the suite runs its own
        assert url == conftest._private_pg.url
        assert Path(tempfile.gettempdir()).resolve() in conftest._private_pg.folder.resolve().parents
        with pg_support.admin() as conn:
            assert conn.execute("SHOW fsync").fetchone() == ("off",)


def test_the_serial_phase_names_files_that_exist_and_the_run_shares_one_seed() -> None:
    """scripts/test runs conftest.SERIAL after the parallel phase (a file per worker, SPREAD's test by
    test) and, of those, ALONE last, one at a time: a renamed file would silently move a timing-bound
    test into the parallel phase, or a test that loads the machine beside a timing-bound one.  Every
    process of one run draws from one seed."""
    import _seeds
    from conftest import ALONE, SERIAL, SPREAD

    for entry in SERIAL + ALONE + SPREAD:
        assert (ROOT / entry).exists(), f"conftest names {entry}, which is not in the suite"
    for entry in ALONE:
        assert entry.startswith(SERIAL), f"conftest.ALONE names {entry}, which is not in SERIAL"
    for entry in SPREAD:
        assert entry.startswith(SERIAL) and not entry.startswith(ALONE), f"conftest.SPREAD names {entry}, " \
            "which is not a timing-bound file of the second phase"
    if _seeds.CHOSEN is None:  # (a replay's TRUECALL_TEST_SEED is every process's seed anyway)
        assert os.environ[_seeds.RUN_ENV] == str(_seeds.RUN)  # what an xdist worker or the serial phase inherits


def test_a_replay_line_names_the_test_as_pytest_selects_it() -> None:
    """The timing-bound phase groups a file's tests (``--dist loadgroup``): xdist then adds ``@<file>`` to
    their ids, which no ``pytest`` selection names; the replay line leaves it out (an ``@`` of the test's
    own id stays)."""
    import _seeds

    grouped = "tests/desk/test_desk_faults.py::test_x[ops@acme]@tests/desk/test_desk_faults.py"
    assert _seeds.replay(7, grouped).endswith("./scripts/test 'tests/desk/test_desk_faults.py::test_x[ops@acme]'")
    plain = "tests/reliability/test_stalls.py::test_y[a@b]"
    assert _seeds.replay(7, plain).endswith(f"./scripts/test '{plain}'")
