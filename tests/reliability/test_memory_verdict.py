"""The fuzzers' memory verdict reads growth, not where the allocator happened to stand.

CI's stdio fuzz run (seed 3320093363) was failed for a leak it did not have: RSS read 42.8 MiB
at mid-run and 97.2 MiB at the end, while the same documents sent again and again move RSS
between 39 and 64 MiB as glibc keeps or returns a parse's buffer.  The verdict now measures
against the high-water mark the kernel kept at mid-run (VmHWM), which the memory primers set.
"""

from __future__ import annotations

from pathlib import Path

from stress.common import ServerProcess, proc_stats
from stress.fuzz import memory_verdict
from stress.strategies import memory_primers


def _summary(mid: float, mark: float | None, end: float, peak: float = 120.0) -> dict[str, float | None]:
    return {"rss_mid_run_mib": mid, "rss_high_water_mid_run_mib": mark, "rss_end_mib": end,
            "rss_max_mib": peak, "fds_start": 17, "fds_end": 18}


def test_an_end_at_the_mark_the_first_half_reached_is_no_leak() -> None:
    # CI's numbers; the mark is what the primers leave (measured below)
    assert memory_verdict(_summary(42.8, 99.3, 97.2)) == []


def test_growth_past_the_first_halfs_mark_is_a_leak() -> None:
    problems = memory_verdict(_summary(42.8, 60.0, 140.0))
    assert len(problems) == 1 and "grew from 42.8 MiB" in problems[0] and "140.0 MiB (end)" in problems[0]


def test_without_a_mark_the_mid_run_reading_is_the_baseline() -> None:
    assert memory_verdict(_summary(42.8, None, 80.0)) == []
    assert memory_verdict(_summary(42.8, None, 90.0)) != []


def test_a_peak_and_descriptors_are_still_bounded() -> None:
    assert memory_verdict({**_summary(50.0, 60.0, 55.0, peak=600.0)}) == ["RSS peaked at 600.0 MiB"]
    assert memory_verdict({**_summary(50.0, 60.0, 55.0), "fds_end": 30}) == ["file descriptors 17 -> 30"]


def test_the_primers_set_a_mark_no_later_rss_reading_exceeds(tmp_path: Path) -> None:
    """The mechanism the verdict relies on, on a real server: after the primers, sending each of
    them again moves RSS about, but never above the mark the first round set."""
    server = ServerProcess(tmp_path)
    server.start()
    try:
        proc = server.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None

        def send(body: bytes) -> None:
            proc.stdin.write(body + b"\n")
            proc.stdin.flush()
            assert proc.stdout.readline().startswith(b'{"jsonrpc":"2.0"')

        primers = memory_primers("stdio")
        for case in primers:
            send(case.body)
        mark = proc_stats(server.pid).hwm_kb
        readings = []
        for _ in range(2):
            for case in primers:
                send(case.body)
                readings.append(proc_stats(server.pid).rss_kb)
        print(f"mark {mark / 1024:.1f} MiB; RSS after each primer again "
              f"{[round(r / 1024, 1) for r in readings]}")
        assert max(readings) <= mark * 1.25 + 32 * 1024
    finally:
        server.stop()
