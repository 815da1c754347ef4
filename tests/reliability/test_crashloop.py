"""Crash loop (short version of ``stress/crashloop.py``): a real desk SIGKILLed at random moments.

Ten rounds: six clients fire ``incident.search`` and ``incident.handle`` (tasks) at a real
``truecall serve --http`` on 127.0.0.1 (SQLite in ``tmp_path``) while its upstream queue delays,
stalls, errors and loses acks; the process is SIGKILLed after a random delay (or dies of the
desk's own ``kill`` fault mid-task), then restarted on the same database.  Afterwards: the
database is intact, every acknowledged ``tools/call`` has its audit record (matched by
``requestId``), no task is left working, what a client saw before a kill is what is stored,
and the ticket table agrees with every reported outcome.  ``python stress/crashloop.py`` runs
the 50-round version.
"""

from __future__ import annotations

from pathlib import Path

from stress import crashloop


def test_ten_rounds_of_sigkill_lose_nothing_acknowledged(tmp_path: Path) -> None:
    report = crashloop.run(10, seed=20260728, workdir=tmp_path, clients=6)
    assert report.ok, report.summary()
    assert report.rounds == 10 and report.kills_external + report.kills_internal == 10
    # the kills hit work in flight, and the checks had something to check
    assert report.unanswered > 0 and report.orphans_at_kills > 0, report.summary()
    assert report.orphans_settled_by_restart == report.orphans_at_kills
    assert report.acked_results > 100 and report.acked_tasks > 50, report.summary()
    assert report.audit_matched == report.acked_calls
    assert report.final_status.get("working", 0) == 0 and report.final_status.get("input_required", 0) == 0
    kinds = report.final_kinds
    assert kinds.get("success", 0) > 0 and kinds.get("dependency_unavailable", 0) > 0, report.summary()
    assert report.success_with_ticket == kinds["success"]
    assert report.unavailable_without_ticket == kinds["dependency_unavailable"]
    assert sum(report.unknown_settled.values()) == kinds.get("outcome_unknown", 0)
    assert report.seen_before_kill_checked > 0
    assert report.seconds < 40, report.summary()
