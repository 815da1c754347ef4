"""One seed convention for every randomised test: ``TRUECALL_TEST_SEED``.

- Hypothesis tests draw from the run's seed: ``TRUECALL_TEST_SEED`` when it is set, else a fresh one
  chosen once per run (so every run explores new inputs). conftest.py hands it to Hypothesis as
  ``--hypothesis-seed`` and prints it in the run's header.
- A test that draws with ``random`` or seeds a harness asks for the ``rng_seed`` fixture. Its default is
  the run's seed, or the fixed number of its ``@pytest.mark.seed(N)`` marker where a test's thresholds
  were measured on one sequence (a statistical bound, a fault mix); ``TRUECALL_TEST_SEED`` overrides
  either.
- Every randomised test that fails says how to replay it: a ``seed`` section in its report and a line
  in the run's summary, ``TRUECALL_TEST_SEED=N ./scripts/test NODEID``.
"""

from __future__ import annotations

import os
import random

#: The one environment variable that replays a randomised test.
ENV = "TRUECALL_TEST_SEED"


def _from_env() -> int | None:
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{ENV}={raw!r}: a seed is a whole number (the one a failed run printed)") from None


#: The seed a replay asked for, or None.
CHOSEN = _from_env()
#: Set by the first process of a run (scripts/test, or pytest's own controller) for every other
#: process of that run — its parallel workers, its serial phase — so that one run has one seed.  Unlike
#: ``TRUECALL_TEST_SEED`` it does not override a test's ``seed(N)``.
RUN_ENV = "TRUECALL_TEST_RUN_SEED"


def _run_seed() -> int:
    raw = os.environ.get(RUN_ENV, "").strip()
    if raw.isdigit():
        return int(raw)
    return random.SystemRandom().randrange(2**32)


#: This run's seed: the one asked for, else the run's shared one, else a fresh one (printed in the
#: header of the run).
RUN = CHOSEN if CHOSEN is not None else _run_seed()
os.environ.setdefault(RUN_ENV, str(RUN))  # processes this one starts (xdist workers) share it


def for_test(default: int | None = None) -> int:
    """A test's seed: ``TRUECALL_TEST_SEED`` if set, else the test's own fixed default, else the run's."""
    if CHOSEN is not None:
        return CHOSEN
    return RUN if default is None else default


def replay(seed: int, nodeid: str) -> str:
    """The line that replays one test with its seed (without the ``@group`` xdist's ``--dist loadgroup``
    adds to the id of a test in a group: conftest groups a timing-bound file's tests by its path)."""
    return f"{ENV}={seed} ./scripts/test '{nodeid.removesuffix('@' + nodeid.split('::', 1)[0])}'"
