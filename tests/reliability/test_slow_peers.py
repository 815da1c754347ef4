"""Reliability battery, CI slice of issue 8, part 4: slow and hostile HTTP peers.

The normal client keeps being served; streams of peers that leave are released; and the timeouts and
limits hold (slow body, slow headers, idle connections, header size, shutdown with open streams).  The
long version is ``stress/slow_peers.py`` (see ``stress/README.md``).

Apart from ``test_reliability.py``, which runs alone (it loads the machine): this run mostly waits on
its peers (5 CPU-seconds in 31), so it runs in the timing-bound phase beside the others, all its tests
on one worker (one shared run, module-scoped: ``conftest.py`` groups a serial file's tests).
"""

from __future__ import annotations

from typing import Any

import pytest


# -- slow and hostile peers --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from stress.slow_peers import Runner, print_summary as print_peers

    runner = Runner(tmp_path_factory.mktemp("slow-peers"), long=False, probe_p99_ms=500.0, hold=3.0,
                    announcements=100_000, shutdown_wait=5.0, fd_exhaustion=False, session_flood=False,
                    progress=False)
    runner.run()
    summary = runner.summary(strict=False)
    print_peers(summary)
    return summary


#: What the normal client lives through, in the order the runner plays it (stress.slow_peers.Runner.run; the
#: shutdown that ends the run has its own limit below and no probe window).
HOSTILE_SCENARIOS = ["baseline", "slow_body", "slow_headers", "idle", "oversized_headers", "sse_never_read"]


def _scenario(summary: dict[str, Any], name: str) -> dict[str, Any]:
    for sc in summary["scenarios"]:
        if sc["name"] == name:
            return sc
    raise AssertionError(f"the slow-peers run has no scenario {name!r}: {[s['name'] for s in summary['scenarios']]}")


def _limit(summary: dict[str, Any], scenario: str, name: str) -> tuple[str, str]:
    for limit, verdict, evidence in _scenario(summary, scenario)["limits"]:
        if limit.startswith(name):
            return verdict, evidence
    raise AssertionError(f"no {name!r} in {scenario}")


def test_the_slow_peers_run_played_every_scenario(hostile_run: dict[str, Any]) -> None:
    assert [sc["name"] for sc in hostile_run["scenarios"]] == HOSTILE_SCENARIOS + ["shutdown"]
    unattributed = [p for p in hostile_run["problems"] if p.split(":", 1)[0] not in HOSTILE_SCENARIOS]
    assert not unattributed, unattributed


@pytest.mark.parametrize("scenario", HOSTILE_SCENARIOS)
def test_normal_client_is_served_while_peers_misbehave(hostile_run: dict[str, Any], scenario: str) -> None:
    """Slow bodies, slowloris headers, 200 idle connections, 8 MiB headers and streams that are never
    read, one scenario at a time (one shared run, module-scoped): the normal client never fails, its p99
    stays under 500 ms, the server lives, and what the hostile peers held (descriptors, stream
    listeners, memory) is released when they go."""
    probe = _scenario(hostile_run, scenario)["probe"]
    assert probe, f"{scenario}: the normal client was not probed"
    assert probe["call"]["failures"] == 0 and probe["fresh"]["failures"] == 0, probe
    problems = [p for p in hostile_run["problems"] if p.split(":", 1)[0] == scenario]
    assert not problems, problems


@pytest.mark.parametrize("scenario,limit", [
    ("slow_body", "request body read timeout"),
    ("slow_headers", "request header timeout"),
    ("idle", "idle timeout before the first request"),
    ("idle", "keep-alive idle timeout"),
    ("oversized_headers", "request header size limit"),
    ("sse_never_read", "memory per stream"),
    ("sse_never_read", "streams of departed peers released"),
    ("shutdown", "graceful shutdown bounded in time"),
])
def test_timeouts_and_limits_hold(hostile_run: dict[str, Any], scenario: str, limit: str) -> None:
    verdict, evidence = _limit(hostile_run, scenario, limit)
    assert verdict == "HELD", f"{limit}: {evidence}"
