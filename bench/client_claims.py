"""What the client's claim check adds to judging one result (``truecall.client._outcomes.judge``).

    python bench/client_claims.py [--rounds 5] [--number 20000]

Not a test.  ``judge()`` is what every ``tools/call`` answer (and a task's final result) goes
through; since issue #24 it asks :func:`truecall.judge.claim_in_result` once, and only for a
success that is not a task.  Each line times ``judge()`` on a 200-character result two ways: as it
is, and with the claim check replaced by a stub that finds nothing — the difference is what the
check costs the client per result (goal: at most 5 µs).  Results are distinct (a counter in the
text), so the judge's own cache does not hide the cost of a result never seen before.  An error
result shows that the check costs nothing where it is not made.  Best of ``--rounds`` timings of
``--number`` calls each, per call.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import timeit
from pathlib import Path
from typing import Any, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from truecall.client import _outcomes  # noqa: E402
from truecall.schema import Validator  # noqa: E402

#: 200 characters each.
HONEST = ("payments: 2 open incidents. INC-1001 (P2, checkout latency) opened 09:12 by oncall, INC-1004 "
          "(P3, refund retries) opened 11:40 by the finance bot; both assigned to team Orion, next review at 16:00 h!.")
PLAIN = ("Current conditions in Oslo: light snow, -3 degrees, wind from the north at 12 km/h. Sunrise at  "
         "09:03, sunset at 15:14. Tomorrow: overcast with a high of -1 and a low of -6 degrees later on overnight!")
ACCEPTED = ("Your request has been received and will be processed shortly. We will email you when the export "
            "is ready; reference REQ-20931. Thank you for your patience, the team at Example Corp (customer support).")
SCHEMA = Validator({"type": "object", "properties": {"service": {"type": "string"}, "count": {"type": "integer"}},
                    "required": ["service", "count"]})


def _results(text: str, **extra: Any) -> Iterator[dict[str, Any]]:
    for i in itertools.count():
        yield {"content": [{"type": "text", "text": text[:-6] + f"{i % 1_000_000:06d}"}], **extra}


def _per_call(fn: Callable[[], object], number: int, rounds: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=rounds)) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=20000)
    args = parser.parse_args()
    assert len(HONEST) == len(PLAIN) == len(ACCEPTED) == 200, (len(HONEST), len(PLAIN), len(ACCEPTED))
    cases: dict[str, tuple[Callable[[], dict[str, Any]], Validator | None]] = {
        "honest text without a claim word, no outputSchema": (_results(PLAIN).__next__, None),
        "honest text ('both assigned'), no outputSchema": (_results(HONEST).__next__, None),
        "honest text + structuredContent, outputSchema": (
            _results(HONEST, structuredContent={"service": "payments", "count": 2}).__next__, SCHEMA),
        "'received and will be processed' (Unconfirmed)": (_results(ACCEPTED).__next__, None),
        "isError: true (no claim check)": (_results(HONEST, isError=True).__next__, None),
    }
    real = _outcomes.claim_in_result
    print(f"{'judge() on a 200-character result':<50} {'with check':>11} {'without':>9} {'check costs':>12}")
    for name, (make, schema) in cases.items():
        _outcomes.claim_in_result = real
        with_check = _per_call(lambda: _outcomes.judge("t", make(), schema), args.number, args.rounds)
        _outcomes.claim_in_result = lambda result: None
        without = _per_call(lambda: _outcomes.judge("t", make(), schema), args.number, args.rounds)
        _outcomes.claim_in_result = real
        print(f"{name:<50} {with_check * 1e6:8.2f} µs {without * 1e6:6.2f} µs {(with_check - without) * 1e6:9.2f} µs")


if __name__ == "__main__":
    main()
