"""The judge's cost: ``claim_in_result`` on a 200-character result, ``credential_ask`` per form,
``names_credential`` as redaction asks it (cached, by argument name).

    python bench/judge_cost.py [--rounds 5] [--number 20000]
    python bench/judge_cost.py --corpus [--compare REF]

Not a test.  Each figure is the best of ``--rounds`` timings of ``--number`` calls (``timeit``),
per call.  ``claim_in_result`` is timed three ways: on results never seen before (distinct texts:
the judge's own small cache misses, the cost a client pays for a new result) that hold no claim
word (most results: the anchor check alone) or that claim acceptance (the full judgment), and on
the same result again (the cache hits).  The cost of making each new result is measured and taken
off.  The goal for the client's check is 5 µs per 200-character result.

``--corpus`` times ``claim_in_text`` uncached on every text of the labelled claims corpora
(tests/judge/corpus/claims*.jsonl): each text's cost is the best of 5 timings of 20 calls (CPU time
of the process: a shared machine's other work is not counted), and the
figure is the median over the texts, for the texts that hold a claim word (this tree's anchors find
one: the whole judgment runs) and for those that hold none (the anchor check alone).  The goal is
5 µs per text in both.  ``--compare REF`` times ``git archive REF src`` the same way in a child
process, in alternating rounds with this tree (a shared machine's load moves figures by more than
the difference), and prints both.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import timeit
from pathlib import Path

from truecall.judge import claim_in_result, credential_ask, names_credential
from truecall.judge._claims import _claim_cached

TEXT_CLAIM = ("Your request has been received and will be processed shortly. We will email you when the export "
              "is ready; reference REQ-20931. Thank you for your patience, the team at Example Corp (customer support).")
TEXT_PLAIN = ("Current conditions in Oslo: light snow, -3 degrees, wind from the north at 12 km/h. Sunrise at  "
              "09:03, sunset at 15:14. Tomorrow: overcast with a high of -1 and a low of -6 degrees later on overnight!")
FORM = ("Enter your credit card to complete the order.",
        {"type": "object", "properties": {"name": {"type": "string", "title": "Name on the order"},
                                          "credit_card": {"type": "string"},
                                          "express": {"type": "boolean", "title": "Express delivery?"}}})


def _per_call(fn: object, number: int, rounds: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=rounds)) / number  # type: ignore[arg-type]


CORPUS = Path(__file__).resolve().parent.parent / "tests" / "judge" / "corpus"


def _corpus_texts() -> list[str]:
    import orjson

    return [orjson.loads(line)["text"] for path in sorted(CORPUS.glob("claims*.jsonl"))
            for line in path.read_text("utf-8").splitlines() if line.strip()]


def corpus_figures(holds_claim_word: list[bool]) -> tuple[float, int, float, int]:
    """(median µs, count) for the corpus texts with a claim word, then for those without, this
    interpreter's truecall, uncached (``_claim_cached.__wrapped__`` is the judgment itself).  Which
    texts hold a claim word is said by the caller (this tree's anchors), so that two trees are
    timed on the same two sets."""
    judge = _claim_cached.__wrapped__  # type: ignore[attr-defined]
    with_word: list[float] = []
    without: list[float] = []
    for text, holds in zip(_corpus_texts(), holds_claim_word, strict=True):
        judge(text)  # a piece's regex is compiled on its first use: not timed
        cost = min(timeit.repeat(lambda: judge(text), number=20, repeat=5, timer=time.process_time)) / 20
        (with_word if holds else without).append(cost)
    return (statistics.median(with_word) * 1e6, len(with_word), statistics.median(without) * 1e6, len(without))


def corpus_main(compare: str | None, rounds: int) -> None:
    from truecall.judge import _claims

    trees: dict[str, str | None] = {"this tree": None}
    scratch = tempfile.TemporaryDirectory()
    holds = Path(scratch.name) / "holds.json"
    holds.write_text(json.dumps([bool(_claims._candidates(text)) for text in _corpus_texts()]))
    if compare:
        archive = subprocess.run(["git", "archive", compare, "src"], check=True, capture_output=True,
                                 cwd=CORPUS.parents[2]).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(scratch.name, filter="data")
        trees[compare] = str(Path(scratch.name) / "src")
    figures: dict[str, list[tuple[float, ...]]] = {name: [] for name in trees}
    for _ in range(rounds):
        for name, src in trees.items():
            env = dict(os.environ)
            if src is not None:
                env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
            out = subprocess.run([sys.executable, __file__, "--corpus-child", str(holds)], check=True,
                                 capture_output=True, text=True, env=env).stdout
            figures[name].append(tuple(float(x) for x in out.split()))
    for name, rows in figures.items():
        best = [min(row[k] for row in rows) for k in range(4)]
        print(f"{name:<12} claim_in_text over the corpus, uncached: median {best[0]:6.2f} µs over {int(best[1])} "
              f"texts with a claim word, {best[2]:6.2f} µs over {int(best[3])} without (best of {rounds} rounds)")
    print(f"(CPU time per call; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    scratch.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--corpus", action="store_true", help="the median over the corpus texts")
    parser.add_argument("--compare", metavar="REF", help="with --corpus: also time git archive REF src")
    parser.add_argument("--corpus-child", metavar="HOLDS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.corpus_child:
        print(*corpus_figures(json.loads(Path(args.corpus_child).read_text())))
        return
    if args.corpus:
        corpus_main(args.compare, args.rounds)
        return
    n, r = args.number, args.rounds
    assert len(TEXT_CLAIM) == 200 and len(TEXT_PLAIN) == 200, (len(TEXT_CLAIM), len(TEXT_PLAIN))

    # Distinct results: a counter at the end of the text (still 200 characters) defeats the cache.
    fresh = ({"content": [{"type": "text", "text": TEXT_CLAIM[:-6] + f"{i % 1000000:06d}"}], "isError": False}
             for i in itertools.count())
    fresh_plain = ({"content": [{"type": "text", "text": TEXT_PLAIN[:-6] + f"{i % 1000000:06d}"}], "isError": False}
                   for i in itertools.count())
    same = {"content": [{"type": "text", "text": TEXT_CLAIM}], "isError": False}

    def new_claim() -> object:
        _claim_cached.cache_clear() if _claim_cached.cache_info().currsize > 1500 else None
        return claim_in_result(next(fresh))

    def new_plain() -> object:
        _claim_cached.cache_clear() if _claim_cached.cache_info().currsize > 1500 else None
        return claim_in_result(next(fresh_plain))

    def make_plain() -> object:  # what new_plain spends on making its result, taken off its figure
        _claim_cached.cache_info()
        return next(fresh_plain)

    overhead = _per_call(make_plain, n, r)
    figures = {
        "(scale) str.split() of the 200-char text": _per_call(TEXT_PLAIN.split, n, r),
        "claim_in_result, new 200-char result without a claim word": _per_call(new_plain, n, r) - overhead,
        "claim_in_result, new 200-char result that claims acceptance": _per_call(new_claim, n, r) - overhead,
        "claim_in_result, the same result again (cached)": _per_call(lambda: claim_in_result(same), n, r),
    }
    names = ["service", "password", "incident_id", "api_key", "limit"]
    cycle = itertools.cycle(names)
    figures["names_credential(name, field_name=True), cached"] = _per_call(
        lambda: names_credential(next(cycle), field_name=True), n, r)

    from truecall.judge import _forms

    fresh_names = (f"field_{i}_name" for i in itertools.count())

    def new_name() -> object:
        _forms._names.cache_clear() if _forms._names.cache_info().currsize > 4000 else None
        return names_credential(next(fresh_names), field_name=True)

    figures["names_credential, a name never seen (the cache misses)"] = _per_call(new_name, max(n // 10, 100), r)

    def new_form() -> object:
        _forms._names.cache_clear()
        return credential_ask(*FORM)

    figures["credential_ask, a 3-field form (uncached)"] = _per_call(new_form, max(n // 10, 100), r)
    figures["credential_ask, the same form again"] = _per_call(lambda: credential_ask(*FORM), n, r)
    width = max(map(len, figures))
    for name, seconds in figures.items():
        print(f"{name:<{width}}  {seconds * 1e6:8.2f} µs")
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: the figures scale with it; the "
          "str.split line is a yardstick)")


if __name__ == "__main__":
    main()
