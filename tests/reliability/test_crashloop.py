"""Crash loop (short version of ``stress/crashloop.py``): a real desk SIGKILLed at random moments.

Ten rounds: six clients fire ``incident.search`` and ``incident.handle`` (tasks) at a real
``truecall serve --http`` on 127.0.0.1 (SQLite in a temporary folder) while its upstream queue delays,
stalls, errors and loses acks; the process is SIGKILLed after a random delay (or dies of the
desk's own ``kill`` fault mid-task), then restarted on the same database.  The loop runs once for
the module; each test below checks one of its promises: the database is intact, every acknowledged
``tools/call`` has its audit record (matched by ``requestId``), no task is left working, what a
client saw before a kill is what is stored, and the ticket table agrees with every reported outcome.
``python stress/crashloop.py`` runs the 50-round version.
"""

from __future__ import annotations

import pytest

from stress import crashloop

#: The loop's default seed (TRUECALL_TEST_SEED replays another).
pytestmark = pytest.mark.seed(20260728)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, module_rng_seed: int) -> crashloop.Report:
    return crashloop.run(10, seed=module_rng_seed, workdir=tmp_path_factory.mktemp("crashloop"), clients=6)


def test_ten_rounds_of_sigkill_lose_nothing_acknowledged(report: crashloop.Report) -> None:
    assert report.ok, report.summary()
    assert report.rounds == 10 and report.kills_external + report.kills_internal == 10
    assert report.seconds < 40, report.summary()


def test_the_kills_hit_work_in_flight(report: crashloop.Report) -> None:
    """The checks had something to check: calls unanswered and tasks orphaned at the kills."""
    assert report.unanswered > 0 and report.orphans_at_kills > 0, report.summary()
    assert report.acked_results > 100 and report.acked_tasks > 50, report.summary()


def test_a_restart_settles_every_orphaned_task(report: crashloop.Report) -> None:
    assert report.orphans_settled_by_restart == report.orphans_at_kills, report.summary()
    assert report.final_status.get("working", 0) == 0 and report.final_status.get("input_required", 0) == 0


def test_every_acknowledged_call_has_its_audit_record(report: crashloop.Report) -> None:
    assert report.audit_matched == report.acked_calls, report.summary()


def test_what_a_client_saw_before_a_kill_was_checked_against_the_store(report: crashloop.Report) -> None:
    assert report.seen_before_kill_checked > 0, report.summary()


def test_the_ticket_table_agrees_with_every_reported_outcome(report: crashloop.Report) -> None:
    kinds = report.final_kinds
    assert kinds.get("success", 0) > 0 and kinds.get("dependency_unavailable", 0) > 0, report.summary()
    assert report.success_with_ticket == kinds["success"]
    assert report.unavailable_without_ticket == kinds["dependency_unavailable"]
    assert sum(report.unknown_settled.values()) == kinds.get("outcome_unknown", 0)
