"""Shared fixtures for the foundation suite (owned by the test suite; do not edit elsewhere).

Fixture names say what they give:

- ``desk_db_path``   – a fresh SQLite path for the incident desk, under ``tmp_path``;
- ``desk``           – ``truecall.incidents.build_desk`` on that path, started;
- ``operator_token`` – the demo token for ``newton@acme`` (read + write on tenant acme);
- ``reader_token``   – the demo token for ``alice@acme`` (read only);
- ``lang``           – ``lang("zh")`` sets ``TRUECALL_LANG`` for one test (the setting is read once per
  process: this also forgets what was read);
- ``make_server``    – a factory: ``make_server(tokens={token: Principal}, name=...)`` → a bare
  ``truecall.Server`` on its own database under ``tmp_path`` with those plain tokens, started;
- ``rng_seed``       – the seed of a randomised test (``TRUECALL_TEST_SEED`` replays it; see _seeds.py).
"""

from __future__ import annotations

import gc
import itertools
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest

# One request, one final audit record: a second one fails the test that made it (here and in every
# server process a test starts, which inherits the environment) instead of being logged.
os.environ["TRUECALL_AUDIT_STRICT"] = "1"

from truecall import Principal, Server, StaticTokens  # noqa: E402
from truecall.audit import AuditLog  # noqa: E402
from truecall.incidents import DEMO_TOKENS, build_desk  # noqa: E402
import _seeds  # noqa: E402
from _paths import ROOT  # noqa: E402

AuditLog.strict = True  # (if truecall was imported before this file set the environment)


def outside_the_repository(path: "str | bytes | os.PathLike[Any]") -> bool:
    """True for a path in a folder beside the checkout (``../shared``, a sibling clone): the suite
    must pass from a clone with nothing beside it, so it may read nothing there.

    The temporary directory is never "beside" (a clone at ``/work/r`` with ``/work/tmp`` as the
    temporary directory).  A clone directly in the temporary directory (``/tmp/r``) has temporary
    files for siblings, so there only ``shared/`` counts."""
    full = Path(os.path.abspath(os.fsdecode(path)))
    parent = ROOT.parent
    if full == ROOT or ROOT in full.parents or parent not in full.parents:
        return False
    sibling = parent / full.relative_to(parent).parts[0]
    temp = Path(tempfile.gettempdir()).resolve()
    if parent == temp:
        return sibling.name == "shared"
    return not (sibling == temp or sibling in temp.parents)


def _refuse_reads_beside_the_checkout(event: str, args: tuple[Any, ...]) -> None:
    if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
        if outside_the_repository(args[0]):
            raise PermissionError(f"the test suite read {os.fsdecode(args[0])}, outside the repository; "
                                  "a fresh clone has nothing beside it")


if ROOT.parent != Path(ROOT.anchor):
    sys.addaudithook(_refuse_reads_beside_the_checkout)

_private_pg: Any = None


#: The seed Hypothesis draws from in this run (``--hypothesis-seed`` if given, else the run's seed).
HYPOTHESIS_SEED = pytest.StashKey[int]()
#: The seed a test asked for with the ``rng_seed`` fixture.
TEST_SEED = pytest.StashKey[int]()


@pytest.hookimpl(tryfirst=True)  # before Hypothesis's own pytest_configure reads --hypothesis-seed
def pytest_configure(config: pytest.Config) -> None:
    """Give Hypothesis the run's seed; start a private PostgreSQL (tests/pg_server.py) unless
    ``TRUECALL_TEST_PG_URL`` names one."""
    global _private_pg
    config.addinivalue_line("markers", "seed(n): the fixed default seed of a test that asks for rng_seed "
                                       "(TRUECALL_TEST_SEED overrides it)")
    config.addinivalue_line("markers", "serial: runs after the parallel phase of scripts/test, a file per worker "
                                       "(it measures latency or races a deadline: see SERIAL)")
    config.addinivalue_line("markers", "alone: a serial test that loads the machine itself; runs last, one at "
                                       "a time (see ALONE)")
    given = config.getoption("hypothesis_seed", None)
    if given is None:
        config.option.hypothesis_seed = str(_seeds.RUN)
    config.stash[HYPOTHESIS_SEED] = int(given) if given is not None else _seeds.RUN
    _compile_the_package_once()
    if os.environ.get("TRUECALL_TEST_PG_URL"):
        return
    import pg_server

    _private_pg = pg_server.start()
    os.environ["TRUECALL_TEST_PG_URL"] = _private_pg.url  # server processes the tests start inherit it


def _compile_the_package_once() -> None:
    """Write ``src/truecall``'s bytecode before the tests start their interpreters.

    The package is installed editable, so nothing compiled it at install time; with
    ``PYTHONDONTWRITEBYTECODE`` set (as on the development machines) no interpreter ever writes
    it either, and each ``python -m truecall …`` process the suite starts compiled the whole
    package again (≈0.15 s of CPU per interpreter: a ``truecall call`` with its ``serve`` child
    took 0.69 s of CPU, 0.40 s with the bytecode written).  ``compileall`` writes it once (into the
    ignored ``__pycache__`` folders, or under ``PYTHONPYCACHEPREFIX``); every process reads it.
    Without that setting the first import writes the same files, so this only moves the work."""
    if not sys.dont_write_bytecode:
        return
    import compileall

    compileall.compile_dir(str(ROOT / "src" / "truecall"), quiet=2)


def pytest_unconfigure(config: pytest.Config) -> None:
    global _private_pg
    if _private_pg is not None:
        _private_pg.stop()
        os.environ.pop("TRUECALL_TEST_PG_URL", None)
        _private_pg = None


def pytest_report_header(config: pytest.Config) -> str:
    chosen = "" if _seeds.CHOSEN is None else f" (from {_seeds.ENV})"
    return f"seed {config.stash[HYPOTHESIS_SEED]}{chosen}: replay a randomised test with {_seeds.ENV}=N"


def _seed_for(node: pytest.Item | pytest.Collector) -> int:
    marker = node.get_closest_marker("seed")
    value = _seeds.for_test(int(marker.args[0]) if marker else None)
    node.stash[TEST_SEED] = value
    print(f"seed {value}; replay: {_seeds.replay(value, node.nodeid)}")
    return value


@pytest.fixture
def rng_seed(request: pytest.FixtureRequest) -> int:
    """The seed of a test that draws at random: printed (shown with the failure) and replayable."""
    return _seed_for(request.node)


@pytest.fixture(scope="module")
def module_rng_seed(request: pytest.FixtureRequest) -> int:
    """``rng_seed`` for a module-scoped run that several tests then check (``pytestmark = seed(N)``)."""
    return _seed_for(request.node)


def _seed_of(item: pytest.Item) -> int | None:
    for node in reversed(item.listchain()):  # the test's own seed, else its module's
        if TEST_SEED in node.stash:
            return node.stash[TEST_SEED]
    if item.get_closest_marker("hypothesis") is not None:
        return item.config.stash[HYPOTHESIS_SEED]
    return None


#: Test files that run after scripts/test's parallel phase, never beside its CPU-bound work: they bound
#: a latency (a replica answering while another is frozen or its database stalls), or race a lease or a
#: deadline on purpose.  They mostly wait (a stall, a lease, a kill: ~37 % of two CPUs over the phase
#: one at a time), so the phase runs as many workers as the first: each file whole on one worker, but
#: SPREAD's test by test.  Everything else runs in parallel first.
SERIAL = ("tests/reliability/", "tests/desk/test_desk_kill.py", "tests/desk/test_desk_faults.py",
          "tests/probe/", "tests/cli/test_misuse.py", "tests/security/test_secrets_at_rest.py")
#: Of those, the files that load the machine themselves (the fuzz and load runs, a retention under steady
#: load, the crash loop, seven published servers probed at once) or bound a p99 under that load: they run
#: last, alone, one test at a time.
ALONE = ("tests/reliability/test_reliability.py", "tests/reliability/test_retention.py",
         "tests/reliability/test_crashloop.py", "tests/reliability/test_memory_verdict.py",
         "tests/probe/test_probe_published.py")


#: Of the timing-bound files that share the machine (SERIAL, not ALONE), those whose tests go to the
#: workers one by one: they share nothing (no module-scoped fixture) and one of them held 144 of the
#: phase's 288 s.  Every other such file goes to one worker whole (``--dist loadgroup``, the file its
#: group): its module-scoped servers and runs are made once, not on each worker that gets one of its tests.
SPREAD = ("tests/reliability/test_stalls.py",)


@pytest.hookimpl(tryfirst=True)  # (before xdist's, which reads the groups on a worker)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)
            if item.nodeid.startswith(ALONE):
                item.add_marker(pytest.mark.alone)
            elif not item.nodeid.startswith(SPREAD):
                item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection made (``gc.freeze``): the suite's ~220,000 objects are then never scanned
    again.  Unfrozen, every full collection in a test's process scanned them (~165 ms), pausing every
    thread of it — a pause a test that times a server from here charged to the server (CI saw a
    /healthz sample of 182 ms against a 100 ms bound; tests/test_gc_frozen.py)."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    """A failed randomised test's report ends with the line that replays it."""
    report: pytest.TestReport = yield
    seed = _seed_of(item)
    if report.failed and seed is not None:
        report.sections.append(("seed", _seeds.replay(seed, item.nodeid)))
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collected where reports arrive (the one process, or xdist's controller) for the summary."""
    if report.failed:
        for name, line in report.sections:
            if name == "seed":
                _replays.append(line)


_replays: list[str] = []


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Every run says which seed it drew from (even under -q, where the header is not shown)."""
    seed = config.stash[HYPOTHESIS_SEED]
    terminalreporter.write_line(f"randomised tests drew from seed {seed} (replay: {_seeds.ENV}={seed}; "
                                "tests marked seed(N) use N unless it is set)")
    replays = _replays
    if replays:
        terminalreporter.section("replay the randomised tests that failed")
        for line in dict.fromkeys(replays):
            terminalreporter.line(line)


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


# The suite asserts the default language (English): a developer's own TRUECALL_LANG must not leak in.
os.environ.pop("TRUECALL_LANG", None)


@pytest.fixture
def lang(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    from truecall.texts import current_locale

    def choose(value: str) -> None:
        monkeypatch.setenv("TRUECALL_LANG", value)
        current_locale.cache_clear()

    yield choose
    monkeypatch.delenv("TRUECALL_LANG", raising=False)
    current_locale.cache_clear()


@pytest.fixture
def desk_db_path(tmp_path: Path) -> Path:
    return tmp_path / "desk.db"


@pytest.fixture
def desk(desk_db_path: Path) -> Server:
    server = build_desk(desk_db_path).start()  # (its direct API, server.call_tool…, needs it started)
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
        server = Server(name, tokens=StaticTokens.from_plain(tokens or DEFAULT_TEST_TOKENS), db=db).start()
        made.append(server)
        return server

    yield factory
    for server in made:
        server.db.close()
