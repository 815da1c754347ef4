"""The judge's cost: ``claim_in_result`` on a 200-character result, ``credential_ask`` per form,
``names_credential`` as redaction asks it (cached, by argument name).

    python bench/judge_cost.py [--rounds 5] [--number 20000]
    python bench/judge_cost.py --corpus [--compare REF]
    python bench/judge_cost.py --samples

Not a test.  Each figure is the best of ``--rounds`` timings of ``--number`` calls (``timeit``),
per call.  ``claim_in_result`` is timed three ways: on results never seen before (distinct texts:
the judge's own small cache misses, the cost a client pays for a new result) that hold no claim
word (most results: the anchor check alone) or that claim acceptance (the full judgment), and on
the same result again (the cache hits).  The cost of making each new result is measured and taken
off.  The goal for the client's check is 5 µs per 200-character result.

The judgment runs in C where ``truecall.judge._speedups`` was built (at install, where a C compiler
is) for a text whose words are ASCII once normalised; the first line printed says which.  ``TRUECALL_PURE_PYTHON=1`` times the Python
judgment instead (the same answers: tests/judge/test_speedups.py).

``--samples`` times each result of ``bench/judge_samples.jsonl`` (about 200 characters each, in the
shapes a client meets and in six languages) uncached, and the Python judgment of it in the same
process, and counts those at most 5 µs.

``--corpus`` times ``claim_in_text`` uncached on every text of the labelled claims corpora
(tests/judge/corpus/claims*.jsonl): each text's cost is the best of 5 timings of 20 calls (CPU time
of the process: a shared machine's other work is not counted), and the
figure is the median over the texts, for the texts that hold a claim word (this tree's anchors find
one: the whole judgment runs) and for those that hold none (the anchor check alone).  The goal is
5 µs per text in both.  ``--compare REF`` times REF's judge the same way, in this process, each
text right after this tree's, and prints both and the median of the texts' own ratios.
"""

from __future__ import annotations

import argparse
import importlib
import io
import itertools
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import timeit
from pathlib import Path
from typing import Callable

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


ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "judge" / "corpus"


def _corpus_rows() -> list[dict[str, str]]:
    import orjson

    return [orjson.loads(line) for path in sorted(CORPUS.glob("claims*.jsonl"))
            for line in path.read_text("utf-8").splitlines() if line.strip()]


def _corpus_texts() -> list[str]:
    return [row["text"] for row in _corpus_rows()]


#: Results of about 200 characters in the shapes a client meets (bench/judge_samples.jsonl): one line, status
#: lines, curly apostrophes, a dash, a colon, negations, a listing, JSON; English, Spanish, German, French,
#: Chinese, Japanese.
SAMPLES = Path(__file__).resolve().parent / "judge_samples.jsonl"


def _python_judgment(text: str) -> object:
    """The Python judgment of one text: the Chinese and Japanese anchors looked up in Python too (where
    ``_speedups`` is built, the Python judgment looks them up in C)."""
    from truecall.judge import _claims

    if text.isascii():
        return _claims._judge_ascii_python(text)
    in_c, _claims._cjk_pieces = _claims._cjk_pieces, _claims._cjk_pieces_python
    try:
        return _claims._judge_unicode(text)
    finally:
        _claims._cjk_pieces = in_c


def samples_main(rounds: int) -> None:
    """Each sample's judgment (uncached: what a new result costs) by what this process runs and by the
    Python judgment, CPU time, best of ``rounds`` timings of 20 calls."""
    import orjson

    from truecall.judge import _claims

    rows = [orjson.loads(line) for line in SAMPLES.read_text("utf-8").splitlines() if line.strip()]
    judge = _claims._claim_cached.__wrapped__
    print("the judgment: " + ("C where a text's words are ASCII (truecall.judge._speedups)" if _claims._fast is not None
                              else "Python (no truecall.judge._speedups, or TRUECALL_PURE_PYTHON set)"))
    fast, slow = [], []
    for row in rows:
        text = row["text"]
        claim = judge(text)
        assert claim == _python_judgment(text), row["name"]
        a = min(_cost(judge, text) for _ in range(rounds))
        b = min(_cost(_python_judgment, text) for _ in range(rounds))
        fast.append(a)
        slow.append(b)
        kind = getattr(claim, "kind", None)
        print(f"{row['name']:<34} {len(text):4d} chars  {str(kind):<9}  {a:7.2f} µs   Python {b:7.2f} µs")
    print(f"median over the {len(rows)} samples: {statistics.median(fast):.2f} µs (Python {statistics.median(slow):.2f}); "
          f"at most 5 µs: {sum(a <= 5 for a in fast)} of {len(rows)}")


def _cost(judge: Callable[[str], object], text: str) -> float:
    return min(timeit.repeat(lambda: judge(text), number=20, repeat=3, timer=time.process_time)) / 20 * 1e6


def corpus_main(compare: str | None, rounds: int) -> None:
    """Each text timed ``rounds`` times (best of 3 timings of 20 calls each time, CPU time) and its
    figure the best of those.  ``compare``: REF's judge package (``git archive REF
    src/truecall/judge``: it imports nothing of truecall's) is loaded in this same process under
    another name and each text is timed with it right after this tree's, round by round — a shared
    machine runs a process slower or faster for seconds at a time, which moved two processes'
    figures by more than the difference.  The medians are over the texts with / without a claim
    word (this tree's anchors say which: the same two sets for both), and the ratio is the median of
    the texts' own ratios (this tree ÷ REF)."""
    from truecall.judge import _claims

    texts = _corpus_texts()
    holds = [bool(_claims._candidates(text)) for text in texts]
    print("the judgment: " + ("C where a text's words are ASCII" if _claims._fast is not None else "Python") +
          f"; {sum(map(str.isascii, texts))} of the {len(texts)} texts are ASCII")
    judges: dict[str, Callable[[str], object]] = {"this tree": _claims._claim_cached.__wrapped__}
    scratch = tempfile.TemporaryDirectory()
    if compare:
        archive = subprocess.run(["git", "archive", compare, "src/truecall/judge"], check=True,
                                 capture_output=True, cwd=ROOT).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(scratch.name, filter="data")
        (Path(scratch.name) / "src" / "truecall" / "judge").rename(Path(scratch.name) / "judge_at_ref")
        sys.path.insert(0, scratch.name)
        reference = importlib.import_module("judge_at_ref._claims")
        judges[compare] = reference._claim_cached.__wrapped__
        print(f"{compare}: its judgment in Python (its C extension is not built from the archive)")
    best: dict[str, list[float]] = {name: [] for name in judges}
    for text in texts:
        for judge in judges.values():
            judge(text)  # a piece's regex is compiled on its first use: not timed
        figures: dict[str, float] = {}
        for _ in range(rounds):
            for name, judge in judges.items():
                figures[name] = min(figures.get(name, float("inf")), _cost(judge, text))
        for name, figure in figures.items():
            best[name].append(figure)
    languages = [row["language"] for row in _corpus_rows()]
    for name, costs in best.items():
        with_word = [c for c, h in zip(costs, holds) if h]
        without = [c for c, h in zip(costs, holds) if not h]
        print(f"{name:<12} claim_in_text over the corpus, uncached: median {statistics.median(with_word):6.2f} µs over "
              f"{len(with_word)} texts with a claim word, {statistics.median(without):6.2f} µs over {len(without)} without")
        by_language = {lang: [c for c, h, la in zip(costs, holds, languages) if h and la == lang]
                       for lang in sorted(set(languages))}
        print(f"{'':<12} with a claim word, by language (median; how many at most 5 µs): " + ", ".join(
            f"{lang} {statistics.median(c):.2f} ({sum(x <= 5 for x in c)} of {len(c)})" for lang, c in by_language.items()))
        latin = [c for c, la in zip(costs, languages) if la not in ("zh", "ja")]
        wide = [c for c, la in zip(costs, languages) if la in ("zh", "ja")]
        print(f"{'':<12} at most 5 µs: {sum(c <= 5 for c in costs)} of {len(costs)} texts, "
              f"{sum(c <= 5 for c in latin)} of {len(latin)} in Latin languages, "
              f"{sum(c <= 5 for c in wide)} of {len(wide)} in Chinese and Japanese")
        ordered = sorted(costs)
        print(f"{'':<12} the tail: 90th percentile {ordered[int(0.9 * len(ordered))]:.2f} µs, 99th "
              f"{ordered[int(0.99 * len(ordered))]:.2f} µs, slowest {ordered[-1]:.2f} µs; over 10 µs: "
              f"{sum(c > 10 for c in costs)} texts")
    if compare:
        for label, want in (("with a claim word", True), ("without", False)):
            ratios = [a / b for a, b, h in zip(best["this tree"], best[compare], holds) if h is want]
            print(f"this tree ÷ {compare}, texts {label}: median of the texts' ratios {statistics.median(ratios):.2f}")
    print(f"(CPU time per call, best of {rounds} rounds per text; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs)")
    scratch.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--corpus", action="store_true", help="the median over the corpus texts")
    parser.add_argument("--compare", metavar="REF", help="with --corpus: also time git archive REF src")
    parser.add_argument("--samples", action="store_true", help="each result of bench/judge_samples.jsonl")
    args = parser.parse_args()
    if args.corpus:
        corpus_main(args.compare, args.rounds)
        return
    if args.samples:
        samples_main(args.rounds)
        return
    n, r = args.number, args.rounds
    from truecall.judge import _claims

    print("the judgment: " + ("C where a text's words are ASCII (truecall.judge._speedups)" if _claims._fast is not None
                              else "Python (no truecall.judge._speedups, or TRUECALL_PURE_PYTHON set)"))
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
