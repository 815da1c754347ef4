"""Issue 24's speed line: the claim judgment of a Latin text runs in C (``truecall.judge._speedups``,
built at install where a C compiler is) and says what the Python judgment says — the same claim,
kind, language and evidence — on the corpus, its variants, the shortcuts' edge cases and generated
texts; it keeps no reference it should not; bad input is a clear error, never a crash; and where it
is not built (or ``TRUECALL_PURE_PYTHON`` is set) the Python judgment runs."""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tracemalloc
from typing import Any

import pytest

from truecall.judge import _claims

from _paths import ROOT
from test_judge_units import _SHORTCUT_EDGES, _WORD_EDGES, _corpus_claim_texts, _variants

SPEEDUPS = _claims._fast


def _python(text: str) -> _claims.Claim | None:
    """The Python judgment of one text (uncached), whatever is built."""
    return _claims._judge_ascii_python(text) if text.isascii() else _claims._judge_unicode(text)


def _compiler() -> str | None:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc)


needs_speedups = pytest.mark.skipif(SPEEDUPS is None, reason="truecall.judge._speedups is not built here (no C "
                                                                  "compiler at install): the Python judgment runs")


def test_the_extension_is_built_where_a_compiler_is() -> None:
    """Where the install had a C compiler the judgment runs in C: a build that failed silently (the
    extension is optional) must not pass for one that worked."""
    if _compiler() is None:
        pytest.skip("no C compiler here: the extension is optional, and the Python judgment runs")
    assert SPEEDUPS is not None, "a C compiler is here but truecall.judge._speedups was not built or not bound"


def _texts() -> list[str]:
    return [v for t in _corpus_claim_texts() + _SHORTCUT_EDGES + _WORD_EDGES for v in _variants(t)]


@needs_speedups
def test_the_c_judgment_is_the_python_one_on_the_corpus_and_its_variants() -> None:
    assert SPEEDUPS is not None
    texts = _texts()
    differ = [(t, SPEEDUPS(t), _python(t)) for t in texts if SPEEDUPS(t) != _python(t)]
    assert not differ, differ[:5]
    claims = sum(_python(t) is not None for t in texts if t.isascii())
    assert claims > 1000  # (the comparison is of claims, not of Nones)


#: What generated texts are made of: claim words and their cues, the marks each shortcut reads (lines,
#: colons, quotations, apostrophes, names, flags, extensions, camelCase, separators, control characters,
#: a count of none, a data line's start, a code word, a phrase hint), and filler.
_PIECES = [
    "Your request has been received", "will be processed", "has been queued", "is pending", "was accepted",
    "failed", "timed out", "upload failed", "completed", "done", "processed", "Processed.", "not", "no", "never",
    "if", "when", "unless", "can", "cannot", "said", "according to", "the vendor said", "errors: 0", "failed=0",
    "still processing", "se enviaron", "Verbindungsfehler", "wurde angenommen", " nicht", "keine", "abgeschickt",
    "Der Auftrag", "La commande", "envoyée", "ok", "yet", "edited", "iert", "gefunden", "rate", " rate", " count",
    " ", " ", " ", "  ", ".", ". ", "...", ",", ";", ":", "?", "!", "\n", "\n\n", "\t", "\x0b", "\x0c", "\r", "\x1c",
    "\x01", "'", "''", "`", '"', "/", "\\", "-", " -", "--", "_", "__", "._-", "-.", ".-", "a.txt", ".JSON", ".jsonl",
    "notes.md", "dbPassword", "orderIsQueued", "HTTPServer", "ABc", "REQ-20931", "s000123", "x_y", "e-mail",
    "{", "[", "<", "#", "# ", "- ", "1. ", "> ", "| ", "    ", "return x", "from the team", "key = value",
    "a,b,c", "true", "null", "From: x", "Contents of notes.txt: ", "**Sent** ", "> done", "* ", "~", "=", "==",
    "0", "42", "x" * 30, "y" * 45, "ge" + "z" * 3 + "t", "ado", "ida", "received", "queued", "PENDING", "Accepted",
    # Latin-1 (normalised first, then read as ASCII is), and beyond it (read in Python)
    "é", "ñ", "ß", "ü", "Ü", "«", "»", "\xa0", "\x85", "¿", "¡", "°", "ª", "²", "×", "Ã©", "recibió", "envió",
    "übermittelt", "fehlgeschlagen", "ça", "À", "d'accès", "n'a pas été", "Straße", "—", "…", "已受理", "ｑｕｅｕｅｄ",
    "’", "We’ve received", "“queued”", "×2", "‘", "‘queued’", "it’ll be processed", "l’équipe", "reçue", "¤", "ÉTÉ",
    "aÉ", "Été", "µ", "Ð", "ð", "þ", "ÿ", "\xad", " — ", " – ", "–", "2–3", "patience—the", "——", " —\n", "—.", ".—",
    " € ", "59,00 €", "€5", "→", " → ", "20 °C", "°", "©", " £5", "3 × 4", "‰", "§ 3", "¶",
    # Chinese and Japanese (normalised in C), fullwidth forms, the ideographic space
    "您的请求已受理", "，", "。", "处理中", "已完成", "失败了", "ご依頼を受け付けました", "、", "「済み」", "ー", "々", "\u3000",
    "ｑ", "Ｑｕｅｕｅ", "（", "）", "：", "受付-完了", "A-处理", "ｄｂＰａｓｓ", "未", "不", "没有", "ません",
    # quotations a head blanks out (in C now), with the names and apostrophes around them
    "`src/a.py`", "`queued`", '"queued"', "'done'", " « a » ", "``", '""', " 'failed' ", "`notes.txt`", "'é'",
    # lines and colons: status lines, intros, mail headers, table rows, data lines after the first
    "Status: queued\n", "Ticket created.\n", "id | status\n", "101 | open", "Subject: hello", "From: me", "Cc: x",
    "Contents of notes.txt: ", "Output:\n", "\n\n", " | ", "a | b", "x" * 41 + " | y", "Error: upload failed",
    "Reply-To: x", "def f", "class X", "import os", "  indented", "- item\n", "1. first\n", "2024-01-01 10:00 ",
    "[INFO] ", "data: 1", "note: queued", "Note: the job is queued", "Response:\n", "Found 3 results:\n",
    # failures told as past, retries, and what succeeded after them (read in C since failures are kept apart)
    "The first attempt failed", "timed out, so I've set the job to try again", "on the second try",
    "the first upload timed out", "A retry has been scheduled", "El primer intento falló", "pero el segundo funcionó",
    "La première tentative a échoué", "mais la seconde a réussi", "前回はタイムアウトで失敗しましたが", "第一次上传失败",
    "重试后成功", "will retry in 5 minutes", "then succeeded", "Der erste Versuch ist fehlgeschlagen",
]


@needs_speedups
def test_the_c_judgment_is_the_python_one_on_generated_texts(rng_seed: int) -> None:
    assert SPEEDUPS is not None
    rng = random.Random(rng_seed)
    differ, claims = [], 0
    for _ in range(30000):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 16)))
        if rng.random() < 0.05:
            text = text * rng.randint(2, 40)  # (beyond 400 and 512 characters: the head's cut, no cache)
        fast, python = SPEEDUPS(text), _python(text)
        claims += python is not None
        if fast != python:
            differ.append((text, fast, python))
    assert not differ, differ[:5]
    assert claims > 2000


@needs_speedups
def test_every_ascii_character_and_long_texts() -> None:
    assert SPEEDUPS is not None
    texts = [chr(c) for c in range(128)] + [f"Your order was received{chr(c)}" for c in range(128)]
    texts += [f"{chr(c)}Your order was received" for c in range(128)]
    texts += ["Your order was received. " * 4000, "a" * 100_000 + " received", "received " + "\x00" * 1000, ""]
    assert [SPEEDUPS(t) for t in texts] == [_python(t) for t in texts]


def _results(rng: random.Random) -> list[Any]:
    texts = ["Your request has been received", "Upload failed", "Done.", "已受理", "", "{\"ok\": true}", "x" * 600,
             "The export completed", "Your order is pending", "not received"]
    blocks: list[Any] = [{"type": "text", "text": t} for t in texts] + [
        {"type": "image", "data": "", "mimeType": "image/png"}, {"type": "text"}, {"type": "text", "text": 5},
        {"text": "received"}, "received", None, {"type": 1, "text": "queued"}]
    results: list[Any] = [{}, {"content": None}, {"content": "received"}, {"content": ()}, {"isError": False}]
    for _ in range(400):
        results.append({"content": [rng.choice(blocks) for _ in range(rng.randint(0, 5))]})
    return results


@needs_speedups
def test_claim_in_result_in_c_is_the_python_one(rng_seed: int) -> None:
    from collections import UserDict

    results = _results(random.Random(rng_seed))
    results.append(UserDict({"content": [{"type": "text", "text": "Your order is pending"}]}))  # (a Mapping, no dict)
    for result in results:
        assert _claims.claim_in_result(result) == _claims._claim_in_result_python(result), result
    with pytest.raises(AttributeError):
        _claims.claim_in_result(["not", "a", "mapping"])  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        _claims._claim_in_result_python(["not", "a", "mapping"])  # type: ignore[arg-type]


@needs_speedups
def test_bad_input_is_a_clear_error_never_a_crash() -> None:
    from truecall.judge import _speedups

    for bad in (b"received", 5, None, ["received"]):
        with pytest.raises(TypeError, match="takes a str"):
            _speedups.judge(bad)  # type: ignore[arg-type]
    assert _speedups.bind({}) is False  # (bound once, by _claims: a second namespace changes nothing)


@needs_speedups
def test_the_c_judgment_keeps_no_reference_and_no_memory() -> None:
    """Judging the same texts again allocates nothing that stays (tracemalloc sees the C allocations
    and the objects it makes) and leaves every object's reference count as it was."""
    assert SPEEDUPS is not None
    latin = [t for t in _texts() if not t.isascii() and max(t) < "\u3000"][:1500]  # (normalised in C too)
    wide = [t for t in _texts() if _claims._CJK.search(t)][:1500]  # (read in C: candidates, head, quick rule)
    texts = [t for t in _texts() if t.isascii()][:3000] + latin + wide + [
        "Your request has been received and will be processed.", "您的请求已受理，我们将尽快处理。"]
    assert len(latin) > 500 and len(wide) > 500
    for _ in range(2):  # (the first rounds fill the tables a text's words and pieces are kept in)
        for t in texts:
            SPEEDUPS(t)
    watched = [None, True, False, texts[-1], *_claims._PIECE_KIND[:3], *_claims._PIECE_LANGUAGE[:3]]
    counts = [sys.getrefcount(o) for o in watched]
    for _ in range(5):
        for t in texts:
            SPEEDUPS(t)
    # (a reference kept per call would be thousands; a few come and go with the interpreter's own work)
    assert [abs(sys.getrefcount(o) - c) < 10 for o, c in zip(watched, counts)] == [True] * len(watched)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in range(5):
        for t in texts:
            SPEEDUPS(t)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename") if stat.size_diff > 0)
    assert grown < 64 * 1024, [str(s) for s in after.compare_to(before, "lineno")[:5]]


def test_the_python_judgment_runs_where_the_extension_is_not_used() -> None:
    probe = ("from truecall.judge import _claims, claim_in_result; "
             "print(_claims._fast is None, claim_in_result({'content': [{'type': 'text', 'text': '已受理'}]}).kind, "
             "_claims.claim_in_text('Your request has been received').kind)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT,
                          env={**__import__("os").environ, "TRUECALL_PURE_PYTHON": "1"})
    assert done.stdout.split() == ["True", "accepted", "accepted"]


class _BlockWithItsOwnGet(dict):  # (a dict subclass: _claim_in_result_python asks its get, not its items)
    def get(self, key: Any, default: Any = None) -> Any:
        return {"type": "text", "text": "Upload failed"}.get(key, default)


class _ListWithItsOwnIter(list):  # (a list subclass: ``for block in content`` runs its __iter__)
    def __iter__(self) -> Any:
        return iter([{"type": "text", "text": "Upload failed"}])


class _NotEqualAlways:  # (``block.get("type") != "text"`` asks __ne__, whatever __eq__ says)
    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class _PassesForADict:  # (isinstance asks __class__ too: a proxy or a mock passes for what it stands for)
    @property
    def __class__(self) -> type:  # type: ignore[override]
        return dict

    def get(self, key: Any, default: Any = None) -> Any:
        return {"type": "text", "text": "Upload failed"}.get(key, default)


class _PassesForAList:
    @property
    def __class__(self) -> type:  # type: ignore[override]
        return list

    def __iter__(self) -> Any:
        return iter([{"type": "text", "text": "Upload failed"}])


class _Raises(dict):
    def get(self, key: Any, default: Any = None) -> Any:
        raise LookupError("get")


@needs_speedups
def test_claim_in_result_in_c_reads_hostile_mappings_as_python_does() -> None:
    def growing() -> dict[str, Any]:  # (a type whose comparison adds blocks: the list mutated while judged)
        content: list[Any] = [{"type": "text", "text": "Your order is pending"}]

        class Growing:
            def __eq__(self, other: object) -> bool:
                if len(content) < 4:
                    content.append({"type": "text", "text": "Upload failed"})
                return other == "text"

            def __ne__(self, other: object) -> bool:
                return not self.__eq__(other)

            __hash__ = object.__hash__

        content.insert(0, {"type": Growing(), "text": "The export completed"})
        return {"content": content}

    results = [lambda: {"content": [_BlockWithItsOwnGet(type="image", text="Your order is pending")]},
               lambda: {"content": _ListWithItsOwnIter([{"type": "text", "text": "Your order is pending"}])},
               lambda: {"content": [{"type": _NotEqualAlways(), "text": "Your order is pending"}]},
               lambda: {"content": [_PassesForADict()]}, lambda: {"content": _PassesForAList()}, growing]
    for result in results:  # (each judgment its own result: the hostile ones change theirs)
        assert _claims.claim_in_result(result()) == _claims._claim_in_result_python(result()), result()
    for hostile in (_Raises(), {"content": [_Raises(type="text")]}):
        with pytest.raises(LookupError):
            _claims.claim_in_result(hostile)
        with pytest.raises(LookupError):
            _claims._claim_in_result_python(hostile)


def test_claim_in_result_in_c_holds_what_it_reads_while_python_runs() -> None:
    """A block's "type" whose comparison empties the block: the value was read borrowed from the dict
    and used after the dict let it go (a crash under the debug allocator, which fills freed memory)."""
    probe = ("from truecall.judge import _claims\n"
             "class T:\n"
             "    def __eq__(self, other):\n"
             "        block.clear()\n"
             "        return NotImplemented\n"
             "    __ne__ = __eq__\n"
             "    __hash__ = object.__hash__\n"
             "for _ in range(100):\n"
             "    block = {'type': T(), 'text': 'Your order is pending'}\n"
             "    _claims.claim_in_result({'content': [block]})\n"
             "print('survived')\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                          env={**__import__("os").environ, "PYTHONMALLOC": "debug"})
    assert done.returncode == 0 and done.stdout.split() == ["survived"], (done.returncode, done.stderr[-2000:])


#: Judges more fresh words that hold an in-word literal than the kept tables hold, C against Python; run in
#: a process of its own (the tables stay full: a process's later judgments would read every such word again).
_KEPT_WORDS_FULL = """
import random, sys, tracemalloc
from truecall.judge import _claims
fast, rng = _claims._fast, random.Random(int(sys.argv[1]))
endings = ["ed", "iert", "fehler", "ado", "gezt", "yet", "d", ""]
def python(t):
    return _claims._judge_ascii_python(t)
def fresh():
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(6, 12))) + rng.choice(endings)
def text():
    return " ".join(fresh() for _ in range(12)) + rng.choice(["", " was received", " failed", " is queued"])
judged = [text() for _ in range(_claims._WORDS_KEPT // 10 + 500)]
differ = [t for t in judged if fast(t) != python(t)]
assert not differ, differ[:5]
literal = {w for t in judged for w in t.encode().split() if any(x in w for x in _claims._IN_WORD_LITERALS)}
assert len(literal) > _claims._WORDS_KEPT + 5000, len(literal)  # (the C table of such words full, and beyond it)
texts = [text() for _ in range(500)]
for t in texts:
    fast(t)
tracemalloc.start()
before = tracemalloc.take_snapshot()
for _ in range(3):
    for t in texts:
        fast(t)
after = tracemalloc.take_snapshot()
grown = sum(stat.size_diff for stat in after.compare_to(before, "filename") if stat.size_diff > 0)
assert grown < 64 * 1024, [str(s) for s in after.compare_to(before, "lineno")[:5]]
print("ok")
"""


@needs_speedups
def test_the_c_judgment_is_the_python_one_once_the_kept_words_are_full(rng_seed: int) -> None:
    """More fresh words that hold an in-word literal ("…ed", "…iert", "…fehler") than either judgment
    keeps (_WORDS_KEPT): beyond it each is read again every time, to the same claim, and what is not
    kept is freed."""
    done = subprocess.run([sys.executable, "-c", _KEPT_WORDS_FULL, str(rng_seed)], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0 and done.stdout.split() == ["ok"], (done.returncode, done.stderr[-3000:])


@needs_speedups
def test_a_long_text_of_one_claim_word_again_and_again_costs_what_its_words_do() -> None:
    """A megabyte of one anchor word ("creees creees …": 25 pieces each time) gives its pieces once, as
    the Python judgment's set of words does: the C one added them for every time the word came (2.5
    million ints, sorted: 37 MB and 14 times the Python judgment's time)."""
    assert SPEEDUPS is not None
    word = max(_claims._BY_WORD_BYTES, key=lambda w: len(_claims._BY_WORD_BYTES[w]) / (len(w) + 1)).decode()
    assert len(_claims._BY_WORD_BYTES[word.encode()]) >= 10
    for text in ((word + " ") * (1_000_000 // (len(word) + 1)), (word + " received ") * 60_000):
        assert SPEEDUPS(text) == _python(text)
        peaks = []
        for judge in (SPEEDUPS, _python):
            tracemalloc.start()
            judge(text)
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        assert peaks[0] < 2 * peaks[1], peaks


@pytest.mark.parametrize(("pattern", "width", "spaces"), [
    ("a b", 3, 1), (r"\w+", -1, 0), (".+", -1, -1), ("(a |b ){2,3}", 6, 3), ("[^x]", 1, 1), ("[^ ]+", -1, 0),
    (r"\S+ \S+", -1, 1), ("x(?= +)", 1, 0), (r"(?<=a )b", 1, 0), ("[a-z ]{0,4}", 4, 4), ("[!-~]", 1, 0),
    (r"[\s]", 1, 1), (r"\W", 1, 1), (r"\D{2}", 2, 2), ("(a)b\\1", -1, -1), (r"(?>a |b)+c", -1, -1),
])
def test_the_bounds_of_a_match_are_read_from_the_pattern(pattern: str, width: int, spaces: int) -> None:
    """_bounds reads a pattern's literals, escapes, classes, groups, alternatives and quantifiers; what it
    does not read (a back-reference, an atomic group) has no bound."""
    assert _claims._bounds(re.compile(pattern)) == (width, spaces)


def test_each_piece_s_width_is_what_the_regex_engine_says() -> None:
    """Over every piece that holds words or runs, the width _bounds reads is the one the standard library's
    own parser gives (``re._parser``, read by this test only): never smaller (a match would be skipped),
    bounded wherever the engine's is."""
    from re import _parser  # type: ignore[attr-defined]

    compared = 0
    for i in range(len(_claims._PIECES)):
        regex, _, _, words, runs, width, _ = _claims._SINGLE[i] or _claims._single(i)
        if not (words or runs):
            continue
        widest = _parser.parse(regex.pattern, regex.flags).getwidth()[1]
        assert width == (widest if widest < _parser.MAXREPEAT else -1), regex.pattern
        compared += 1
    assert compared > 1000


def test_no_match_of_a_piece_spans_more_than_its_bounds(rng_seed: int) -> None:
    """Every match of every piece that holds words or runs, in the corpus's texts and generated ones, spans at
    most its width and its spaces: where _speedups starts searching (least_start) skips no match."""
    from truecall.judge._normalise import normalise

    rng = random.Random(rng_seed)
    texts = [normalise(t) for t in _corpus_claim_texts()]
    texts += [normalise("".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 16)))) for _ in range(3000)]
    bounded, matched = 0, 0
    for i in range(len(_claims._PIECES)):
        regex, _, _, words, runs, width, spaces = _claims._SINGLE[i] or _claims._single(i)
        if not (words or runs) or (width < 0 and spaces < 0):
            continue
        bounded += 1
        for norm in texts:
            if any(run not in norm for run in runs) or any(w.decode() not in norm for w in words):
                continue
            m = regex.search(norm)
            while m is not None:  # (a match at every start, overlapping ones too)
                matched += 1
                assert width < 0 or m.end() - m.start() <= width, (regex.pattern, m.group())
                assert spaces < 0 or m.group().count(" ") <= spaces, (regex.pattern, m.group())
                m = regex.search(norm, m.start() + 1)
    assert bounded > 1000 and matched > 1000, (bounded, matched)


def _literal_search(entries: tuple[tuple[str, bool], ...], text: str, pos: int) -> tuple[int, int] | None:
    """What _speedups' search_in does with an alternation's literals: the first place one is (the first
    of those there, in order), a word's end after it where it must end a word."""
    for q in range(pos, len(text)):
        for literal, ends_word in entries:
            e = q + len(literal)
            if text.startswith(literal, q) and not (ends_word and e < len(text) and re.match("[a-z0-9]", text[e])):
                return q, e
    return None


def test_an_alternation_is_its_literals_in_order(rng_seed: int) -> None:
    """Every pattern kept in _ALTERNATIONS finds what its literals do (the C search reads those): the
    same first match at every position of generated and corpus texts."""
    from truecall.judge._normalise import normalise

    rng = random.Random(rng_seed)
    texts = [normalise(t) for t in _corpus_claim_texts()[:400]]
    texts += [normalise("".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 12)))) for _ in range(300)]
    assert len(_claims._ALTERNATIONS) >= 8
    found = 0
    for regex, entries in _claims._ALTERNATIONS.items():
        for text in texts:
            for pos in range(0, len(text) + 1, 7):
                m = regex.search(text, pos)
                assert (m.span() if m else None) == _literal_search(entries, text, pos), (regex.pattern[:60], text, pos)
                found += m is not None
    assert found > 1000


@needs_speedups
def test_what_c_normalises_is_what_normalise_makes(rng_seed: int) -> None:
    """Every text the C judgment normalises itself (Latin-1, curly apostrophes, "…", the inert symbols;
    Chinese and Japanese with fullwidth forms; camelCase split in any of them) gets normalise()'s form
    exactly; the others are handed to it."""
    from truecall.judge import _speedups  # type: ignore[attr-defined]
    from truecall.judge._normalise import normalise

    rng = random.Random(rng_seed)
    texts = [t for t in _texts() if not t.isascii()]
    texts += ["".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 12))) for _ in range(20000)]
    texts += [chr(c) for c in range(0x80, 0x3100)] + [chr(c) for c in range(0xfe00, 0x10000)]
    texts += [chr(c) for c in range(0x1f000, 0x1fb00)]
    cases = ["a", "B", "C", "d", "É", "é", "ß", " ", "-", ".", "_", "'", "已", "Ａ", "ｂ", "€", "1", "GmbH", "iPhone", "ABCd",
             "«", "»", "°", "µ", "ª", "Ã©", "“", "✅", "—"]
    texts += ["".join(rng.choice(cases) for _ in range(rng.randint(1, 10))) for _ in range(20000)]  # (camelCase)
    texts += ["已" + chr(c) + "a" for c in range(0x2000, 0x3100)] + ["a" + chr(c) + "1" for c in range(0x2000, 0x3100)]
    made = [(t, _speedups.normalise(t)) for t in texts if not t.isascii()]
    differ = [(t, c, normalise(t)) for t, c in made if c is not None and c != normalise(t)]
    assert not differ, differ[:5]
    wide = sum(c is not None and not c.isascii() and max(c) >= "\u3000" for _, c in made)
    assert sum(c is not None for _, c in made) > 10000 and wide > 1000, wide


@needs_speedups
def test_the_chinese_and_japanese_anchors_in_c_are_the_python_ones(rng_seed: int) -> None:
    """_speedups.cjk_pieces gives the pieces _cjk_pieces_python does: on the corpus's normalised texts,
    generated ones, every anchor with a line break or the text's end after it, and every character of
    the BMP's CJK blocks."""
    from truecall.judge import _speedups  # type: ignore[attr-defined]
    from truecall.judge._normalise import normalise

    assert _claims._cjk_pieces is _speedups.cjk_pieces
    rng = random.Random(rng_seed)
    keys = list(_claims._BY_CJK)
    texts = [normalise(t) for t in _corpus_claim_texts()]
    texts += [normalise("".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 12)))) for _ in range(5000)]
    texts += ["".join(rng.choice(keys) + rng.choice(["", "\n", " ", "x", "。"]) for _ in range(rng.randint(1, 8)))
              for _ in range(5000)]
    texts += [k[0] for k in keys] + [k + "\n" for k in keys] + [k[0] + "\n" + k[1:] for k in keys if len(k) == 2]
    texts += ["".join(map(chr, range(a, a + 64))) for a in range(0x3000, 0xa000, 64)]
    found = 0
    for norm in texts:
        c = set(_speedups.cjk_pieces(norm))
        assert c == _claims._cjk_pieces_python(norm), norm
        found += bool(c)
    assert found > 3000


@needs_speedups
def test_the_candidates_of_chinese_and_japanese_text_in_c_are_the_python_ones(rng_seed: int, monkeypatch) -> None:
    """_speedups.wide_candidates gives a normalised text beyond ASCII the pieces _normalised_candidates gives
    it (anchors looked up in Python) and the words _Reading.tokens reads, or hands it to Python: on the
    corpus's texts and generated ones that mix Chinese and Japanese with Latin words — claim words,
    stems, phrase hints, words written into the other characters, white space str.split reads and
    bytes.split does not.  Most are read in C (the test could fail by handing all to Python)."""
    from truecall.judge import _speedups  # type: ignore[attr-defined]
    from truecall.judge._normalise import normalise

    monkeypatch.setattr(_claims, "_cjk_pieces", _claims._cjk_pieces_python)
    rng = random.Random(rng_seed)
    latin = ["completed", "fehler", "Verbindungsfehler", "gespeichert", "queued", "still processing", "REQ-20931",
             "accepted", "ok", "x", "12", "e", "enviado", "abgeschickt", "procesando", "in progress", "will be sent"]
    glue = ["", " ", "-", ".", "\n", "\t", "\x85", "\u2028", "，", "。", "、", "「", "」", "/", "é", "ß", "\u3000"]
    wide = ["已受理", "订单", "受け付けました", "処理中", "完成", "正在处理", "失败", "注文", "您的请求", "メール"]
    texts = [normalise(t) for t in _corpus_claim_texts()]
    texts += [normalise("".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 12)))) for _ in range(3000)]
    texts += [normalise("".join(rng.choice(rng.choice((latin, glue, wide))) for _ in range(rng.randint(1, 14))))
              for _ in range(20000)]
    texts += [normalise(rng.choice(wide) + "\x1c" + rng.choice(latin)) for _ in range(100)]  # (handed to Python)
    read = total = 0
    for norm in texts:
        if norm.isascii():
            continue
        total += 1
        c = _speedups.wide_candidates(norm)
        if c is None:
            continue
        read += 1
        candidates, tokens = c
        assert candidates == _claims._normalised_candidates(norm), norm
        assert tokens == _claims._Reading(norm).tokens(), norm
    assert read > total // 2, (read, total)


@needs_speedups
def test_a_chinese_or_japanese_head_c_calls_the_whole_text_is_the_whole_text(rng_seed: int) -> None:
    """Where _speedups.wide_head_whole says a text is its own head, _head gives the text itself: on the
    corpus's texts and generated ones with colons (intros before them and not), quotation marks, names,
    extensions (spelt with letters re.I takes for ASCII ones), data-line starts (code, mail headers, list
    items, bullets, log lines, headings), symbols and letters first, and white space.  It
    says so of most of the corpus's Chinese and Japanese texts whose head is the text (the test could
    fail by saying it of none)."""
    from truecall.judge import _speedups  # type: ignore[attr-defined]

    rng = random.Random(rng_seed)
    pieces = ["已受理", "订单", "受け付けました", "处理中", "内容", "日志", "ログ", "メモ", "状态", "：", ":", "，", ",", "。",
              " ", "\n", "\t", "-", " -", ".", ".txt", ".TXT", ".ſh", ".\u212aey", ".cn", ".log文件", ".md_", "/", "\\",
              "「", "」", "“", "\"", "'", "`", "=", "Contents of", "contents", "Résultats", "résultats", "notes", "ok",
              "12", "x", "_", "й", "ñ", "１２", "Ｔ", "　", "\x85", "\u2028", "{", "•", "#"]
    wide_first = ["已受理", "订单", "受け付けました", "内容", "状态", "処理", "Order ", "def ", "def", "class x", "From:", "From ",
                  "Subject: ", "return ✅", "async def f", "É", "ünd ", "✅ ", "• ", "•", "→ ", "“x” ", "‘", "„", "—", "1. ", "12 ",
                  "2024-01-01 10:00 ", "-x", "- ", "# ", "> ", "[INFO] ", "{", "\t", "    ", "🎉", "Ｔ", "１", "x✅", "ok—"]
    texts = [t for t in _corpus_claim_texts() if _claims._CJK.search(t)]
    corpus_whole = [t for t in texts if _claims._head(t) == t]
    texts += [rng.choice(wide_first) + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
              for _ in range(30000)]
    texts += [rng.choice(wide_first) * rng.randint(60, 140)]
    said = 0
    for text in texts:
        if _speedups.wide_head_whole(text):
            said += 1
            assert _claims._head(text) == text, text
    assert sum(map(_speedups.wide_head_whole, corpus_whole)) > len(corpus_whole) * 0.8, len(corpus_whole)
    assert said > 3000, said


def _wide_mixes(rng: random.Random, count: int) -> list[str]:
    """Chinese and Japanese texts made of the corpus's clauses (cut after their marks) and the words the rules
    read — negations, questions, reported speech, conditions, earlier attempts, quotation marks, Latin words."""
    chunks = sorted({c for t in _corpus_claim_texts() if _claims._CJK.search(t)
                     for c in re.split(r"(?<=[。，、；！？：,.!?;:\n])", t) if c})
    cues = ["不", "没", "未", "吗", "？", "?", "如果", "据说", "之前", "但是", "，", "。", "：", "已受理", "失败", "ok", "Example",
            "fehler", "completed", "「", "」", "“", "”", " ", "…", "—", "✅", "请", "将", "正在处理", "受け付けました",
            "ません", "でしょうか", "場合", "前回", "再実行"]
    return ["".join(rng.choice(chunks) if rng.random() < 0.5 else rng.choice(cues) for _ in range(rng.randint(1, 6)))
            for _ in range(count)]


@needs_speedups
def test_the_c_judgment_of_chinese_and_japanese_text_is_the_python_one(rng_seed: int, monkeypatch) -> None:
    """A Chinese or Japanese text judged in C (its candidates, its head where it is the whole text, the
    first valid match by the quick rule; the other rules in Python) gets the Python judgment's claim —
    every step of that one in Python (anchors, cue texts, the head's normalising) — on texts made of the
    corpus's clauses and the rules' words; most of them have a head C reads as the whole text."""
    from truecall.judge import _speedups  # type: ignore[attr-defined]
    from truecall.judge._normalise import normalise

    monkeypatch.setattr(_claims, "_cjk_pieces", _claims._cjk_pieces_python)
    monkeypatch.setattr(_claims, "_any_text_in", _claims._any_text_in_python)
    monkeypatch.setattr(_claims, "_normalise_head", normalise)
    texts = [t for t in _wide_mixes(random.Random(rng_seed), 12000) if t.strip()]
    texts += ["订单已处理。fatal 错误", "任务已受理。report not saved because 磁盘已满", "注文を受け付けました。fatal エラー"]
    differ = [(t, SPEEDUPS(t), _python(t)) for t in texts if SPEEDUPS(t) != _python(t)]
    assert not differ, differ[:5]
    whole = sum(_speedups.wide_head_whole(t) for t in texts)
    claims = sum(SPEEDUPS(t) is not None for t in texts)
    assert whole > len(texts) // 4 and claims > len(texts) // 4, (whole, claims, len(texts))


@needs_speedups
def test_the_cue_texts_looked_for_in_c_are_the_pattern_s(rng_seed: int) -> None:
    """_speedups.any_text_in finds one of a tuple of texts where the pattern of them finds one (and ``in``
    finds one), for every language's plain-reading cues and the rules' other tuples (yes/no marks,
    reported speech, earlier attempts, conditions, modals) over Chinese, Japanese and Latin texts —
    texts beyond the BMP too; anything but a tuple of non-empty strs is a clear TypeError."""
    from truecall.judge import _speedups  # type: ignore[attr-defined]

    rng = random.Random(rng_seed)
    texts = _wide_mixes(rng, 3000) + [t for t in _texts() if not t.isascii()][:2000]
    keys = [(language, failed) for language in ("en", "de", "es", "fr", "zh", "ja") for failed in (False, True)]
    found = 0
    for key in keys:
        cues = _claims._PLAIN_CUES.get(key) or _claims._plain_cues(key)
        for text in texts:
            c = _speedups.any_text_in(text, cues[5], cues[2])
            assert c == (cues[2].search(text) is not None) == any(t in text for t in cues[5]), (key, text)
            found += c
    others = [_claims._YES_NO_WORDS, _claims._REPORTED_CJK, _claims._HISTORY_CJK] + [
        cues[2] for table in (_claims._CONDITION_CUES, _claims._MODAL_CUES) for cues in table.values()]
    for texts_ in others:
        for text in texts[:1500]:
            assert _speedups.any_text_in(text, texts_, None) == any(t in text for t in texts_), (texts_, text)
    odd = ("\U0001f389", "已受理", "\U0001f389x")
    for text in ("x已受理", "x", "🎉", "a🎉x", "已受", ""):
        assert _speedups.any_text_in(text, odd, None) == any(t in text for t in odd), text
    assert not _speedups.any_text_in("x", (), None)
    for bad in (("x", ("",), None), ("x", ("a", 1), None), ("x", ["a"], None), (5, ("a",), None), ("x", ("a",))):
        with pytest.raises(TypeError):
            _speedups.any_text_in(*bad)
    assert 0 < found < len(keys) * len(texts)


@needs_speedups
def test_a_latin_line_s_data_intro_is_read_in_c_as_python_reads_it(rng_seed: int) -> None:
    """A line of Latin-1 letters with a colon is cut at a data intro ("Résultats de la recherche : …") or not as
    _intro cuts it: its words before the colon read with Latin-1's \\w and lower case (É, Ü, ª, ß, µ), a
    character beyond Latin-1 before it left to _INTRO — on generated lines of the intros, their words in
    other cases, accented words, claims and colons."""
    rng = random.Random(rng_seed)
    intros = [w for w in _claims._INTROS if not _claims._CJK.search(w)]
    words = ["la commande a été acceptée", "Ticket créé", "élément", "ÉTAT", "Größe", "ªb", "µs", "ß", "x", "—", "“a”",
             "wurde angenommen", "Ihre Anfrage wurde gespeichert", "queued", "€", "¤", "1²", "_", " ", " : ", ":", "：", "\n"]
    accented = [w for w in intros if not w.isascii()]
    assert accented
    for intro in accented:  # (its first word in capitals: Latin-1's lower case finds it)
        for text in (f"{intro.upper()} : la commande a été acceptée", f"{intro} : Ticket créé", f"x{intro}: queued"):
            assert SPEEDUPS(text) == _python(text), text
    made = 0
    for _ in range(6000):
        parts = [rng.choice(intros).upper() if rng.random() < 0.2 else rng.choice(intros)] if rng.random() < 0.6 else []
        parts += [rng.choice(words) for _ in range(rng.randint(1, 6))]
        rng.shuffle(parts)
        text = " ".join(parts)
        assert SPEEDUPS(text) == _python(text), text
        made += ":" in text and not text.isascii()
    assert made > 1000


@needs_speedups
def test_the_head_c_reads_is_the_one_head_makes(rng_seed: int) -> None:
    """The head the C judgment reads of a Latin-1 text — a part of it, or one built with its quotations and
    names (paths, flags, file names: word by word as _unnamed reads them) blanked out — is _head's, on the
    corpus's texts and generated ones of names, quotation marks, apostrophes, white space and Latin-1
    letters; most of those it builds itself (the test could fail by handing all to _head)."""
    from truecall.judge import _speedups  # type: ignore[attr-defined]

    rng = random.Random(rng_seed)
    pieces = ["a", "Z", "9", "-", "--", "/", "\\\\", ".", ".txt", ".md", ".PY", ".json", ".jsonl", " ", "  ", "\\t", "\\n", "_",
              ":", "(", "é", "É", "x", "tmp", "http://", "é.log", ".Txt", "txt", ".ts", "s", "-.", ".-", "\\x85", "\\xa0", "'",
              '"', "`", "«", "»", "ok", "done", "-x", "--force", "a/b", "report.pdf.bak", "ß", "ª", "µ", "1²", "¤", "€",
              "saved to", "Commit abc1234 pushed to origin/main.", "File written"]
    texts = [t for t in _corpus_claim_texts() if max(t) <= "\\xff"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 14))) for _ in range(30000)]
    built = 0
    for text in texts:
        head = _speedups.head(text)
        if head is not None:
            assert head == _claims._head(text), text
            built += head != text.strip()
    assert built > 10000, built
