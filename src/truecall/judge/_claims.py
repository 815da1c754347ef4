"""What a tool result's narrative claims about the work it was asked to do.

The seed's accident: a tool answered ``isError: false`` with "已受理" (accepted), a model read it as
done, and no ticket existed.  A client that wants to say "not done" needs to know what the text
*claims*: acceptance (queued, pending, received, in progress), completion, or failure.

Words are not claims by themselves.  A claim is made by the narrative's head (its first lines,
before any list, table, log line or code), in a sentence that is neither negated ("no errors") nor
a question ("has it been queued?"); text that is data is no claim at all: JSON (a graph read, an
echo of ``structuredContent``), log lines, listings, quoted content, file paths and names.
"""

from __future__ import annotations

import os
import re
import warnings
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import AbstractSet, Any, Callable, Iterable, Iterator, Literal, Mapping

import orjson

from ._anchors import (ENDINGS, STOP, WEAK, alternatives, anchors, bounds, class_end, matches, scan, starts_word,
                       top_groups)
from ._normalise import _CAMEL_CASES, _CASES, _latin1_tables, normalise, normalise_uncamelled_ascii
from ._vocabulary import (ADVICE_INTROS, AFTER_NEGATIONS, CLAIM_ABOUT_AFTER, CLAIMS, CONDITIONALS, CONDITIONALS_AFTER,
                          CONTRASTS, DATA_INTROS, DEFINITIONS, GENERIC_MODALS, HISTORY, NEGATIONS, NONE_COUNTS,
                          REPORTED_SPEECH, YES_NO_MARKS, Term, every)

__all__ = ["Claim", "claim_in_text", "claim_in_result"]

Kind = Literal["accepted", "completed", "failed"]


@dataclass(frozen=True)
class Claim:
    """A claim a narrative makes: ``kind`` (accepted = accepted/queued/pending/received/in progress),
    the ``language`` of the words that make it, and the ``evidence`` as the text has it (short)."""

    kind: Kind
    language: str
    evidence: str

    @classmethod
    def _made(cls, kind: Kind, language: str, evidence: str) -> "Claim":
        """A claim made as ``__init__`` makes it, without a frozen dataclass's three
        ``object.__setattr__`` calls (a microsecond of a judgment that takes a few)."""
        claim = _new_object(cls)
        fields = claim.__dict__
        fields["kind"] = kind
        fields["language"] = language
        fields["evidence"] = evidence
        return claim


_new_object = object.__new__

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")


_RANK = {"failed": 0, "accepted": 1, "completed": 2}

# -- anchors: which pieces a text could match (``_anchors``: a text without any costs a few string
# operations) --------------------------------------------------------------------------------------

def _expansions(piece: str) -> list[tuple[str, str]]:
    """A piece with one group of many words (``(created|saved|sent|…)``) as many pieces of one word
    each, each with the words every match of it holds (its anchor source): a text that holds
    "assigned" then runs one small regex that starts with a literal, which the engine finds at once,
    instead of trying a hundred alternatives at every position.  The group chosen is a top-level one
    (every match goes through it), not quantified, whose every branch has words of its own; a piece
    without one stays whole: [(pattern, anchor source)]."""
    best: tuple[int, int, list[str]] | None = None
    for opened, closed in top_groups(piece):
        if piece[closed + 1:closed + 2] in ("?", "*", "+", "{") or piece.startswith(("(?=", "(?!", "(?<=", "(?<!"), opened):
            continue
        inner = piece[opened + 1:closed]
        inner = inner[2:] if inner.startswith("?:") else inner
        branches = alternatives(inner)
        if len(branches) >= 3 and all(_own_words(b) for b in branches) and (best is None or len(branches) > len(best[2])):
            best = (opened, closed, branches)
    if best is None:
        return [(piece, piece)]
    opened, closed, branches = best
    return [(f"{piece[:opened]}(?:{branch}){piece[closed + 1:]}", branch) for branch in branches]


def _own_words(branch: str) -> bool:
    """Whether every match of ``branch`` holds a word that tells something (not only "has been")."""
    words, cjk = anchors(branch)
    return bool(cjk) or bool(words) and words.isdisjoint(STOP | WEAK)


#: French elides a short word before a vowel ("impossible d'enregistrer", "l'envoi", "qu'il"), and
#: normalising makes the apostrophe a space: a French pattern's "de ", "le ", "la ", "ne ", "que ",
#: "se " also match their elided form ("d ", "l ", "n ", "qu ", "s ").
_FR_ELIDABLE = re.compile(r"(?<![a-z\\?])(d|l|n|qu|s)(e|a)(?=[ |)]|$)")


def _elided(term: Term) -> Term:
    if term.language != "fr" or term.hint:
        return term
    return term._replace(pattern=_FR_ELIDABLE.sub(lambda m: m.group() + "?" if m.group() != "sa" else m.group(), term.pattern))


#: Every alternative of every term (its one-word groups expanded: ``_expansions``), run on its own
#: when the text holds one of its anchors: (index of its term in CLAIMS, the piece as a term of its own).
_PIECES: list[tuple[int, Term]] = []
_BY_WORD: dict[str, list[int]] = {}
_BY_CJK: dict[str, list[int]] = {}  # Chinese, Japanese: a phrase's first two characters (or one) -> pieces
_COMPOUND: list[tuple[bytes, int]] = []  # ASCII stems that may end a longer word ("verbindungsfehler")
_HINTED: list[tuple[re.Pattern[bytes], int]] = []  # grammar terms: (what a text they match holds, piece)
#: Pieces are numbered kind by kind in the order kinds are judged (failed, accepted, completed; each
#: kind's in the vocabulary's order): a text's candidates, sorted, are then read in that order, and the
#: first valid match is the claim.
for _t, _term in sorted(enumerate(CLAIMS), key=lambda tt: _RANK[tt[1].kind]):
    _term = _elided(_term)
    if _term.hint:
        _HINTED.append((re.compile(_term.hint.encode()), len(_PIECES)))
        _PIECES.append((_t, _term))
        continue
    for _alt in alternatives(_term.pattern):
        for _pattern, _source in ([(_alt, _alt)] if _term.compound else _expansions(_alt)):
            _i = len(_PIECES)
            _PIECES.append((_t, _term._replace(pattern=_pattern)))
            _latin, _cjk = anchors(_source, cjk_pairs=True)
            assert _latin or _cjk, f"a claim pattern without an anchor word: {_pattern}"
            for _w in _latin:
                for _ending in ENDINGS:
                    _BY_WORD.setdefault(_w + _ending, []).append(_i)
            if _term.compound:  # its words may end a longer one ("verbindungsfehler"): looked for inside the bytes
                _COMPOUND += [(w.encode(), _i) for w in sorted(_latin)]
            for _c in _cjk:
                _BY_CJK.setdefault(_c, []).append(_i)
_WORDS = frozenset(_BY_WORD)
_CHARS = frozenset(k for k in _BY_CJK if len(k) == 1)
_PAIRS = frozenset(k for k in _BY_CJK if len(k) == 2)
_FIRSTS = frozenset(k[0] for k in _BY_CJK)
#: Every two characters of a text that begin with a pair's first character, overlapping ("已受理" gives
#: "已受" and "受理" when both begin pairs): a look-ahead around a class, one C scan.
_PAIR_AT = re.compile("(?=([" + "".join(sorted(k[0] for k in _PAIRS)) + "].))")
#: The single characters that anchor pieces, as a class: found in one C scan (a set's intersection with the
#: text made a string of every character of it first).
_CHAR_AT = re.compile("[" + "".join(map(re.escape, sorted(_CHARS))) + "]" if _CHARS else "(?!)")
_BY_WORD_BYTES = {w.encode(): pieces for w, pieces in _BY_WORD.items() if w.isascii()}
_WORD_BYTES_SET = frozenset(_BY_WORD_BYTES)
_STEMS = re.compile(b"|".join(re.escape(stem) for stem in sorted({stem for stem, _ in _COMPOUND})) or b"(?!)")
assert [_RANK[piece.kind] for _, piece in _PIECES] == sorted(_RANK[piece.kind] for _, piece in _PIECES)


def _piece_regex(piece: Term) -> tuple[re.Pattern[str], bool, bool]:
    """A piece compiled to start with its own first characters (a look-behind first would make the
    engine try every position: 15 µs where a literal start takes 1); that it starts a word (Latin
    terms) or a sentence (a pattern that starts with ``^``) is checked after a match: (regex, needs a
    word start, needs a sentence start)."""
    pattern, at_sentence = piece.pattern, piece.pattern.startswith("^")
    assert "^" not in re.sub(r"\[\^?[^\]]*\]", "", pattern[1:]), f"'^' inside a claim pattern's alternative: {pattern}"
    pattern = pattern.lstrip("^")
    if _CJK.search(piece.pattern):
        return re.compile(pattern), False, at_sentence
    if piece.compound:
        return re.compile(f"(?:{pattern})(?:s|n|en|e)?(?![a-z0-9])"), False, at_sentence
    return re.compile(f"(?:{pattern})(?![a-z0-9])"), True, at_sentence


_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_META = frozenset("\\[](){}.*+?^$|")


def _group_end(pattern: str, i: int) -> int:
    """The index after the group that opens at ``pattern[i]`` (escapes and classes stepped over)."""
    for j, ch, depth in scan(pattern, i):
        if ch == ")" and depth == 1:
            return j + 1
    return len(pattern)


def _after_quantifier(pattern: str, i: int) -> tuple[int, bool]:
    """Where the element before ``i`` really ends: past a quantifier there (``?``, ``*``, ``+``,
    ``{m,n}`` and a lazy or possessive mark after it), and whether there was one."""
    if pattern[i:i + 1] in ("?", "*", "+"):
        i += 1
    elif pattern[i:i + 1] == "{" and re.match(r"\{\d*,?\d*\}", pattern[i:]):
        i = pattern.index("}", i) + 1
    else:
        return i, False
    if pattern[i:i + 1] in ("?", "+"):
        i += 1
    return i, True


def _required(pattern: str, left: bool, right: bool, wide: bool = False) -> tuple[frozenset[bytes], tuple[str, ...]]:
    """What every match of a piece holds, read from its top level: the whole words (letters and
    digits between two known non-word characters: a literal one, or the piece's start when ``left``,
    its end when ``right``) and the longer runs of letters whose edges are not known.  A text whose
    words or characters lack one of them cannot match the piece: its search is skipped.  Only what
    is sure is kept (a quantified letter, a class, an escape, a group that is not plain words ends a
    run with its edge unknown); a pattern with a top-level ``|`` requires nothing.

    ``wide``: a Chinese or Japanese piece's — no words, and every literal character is a run's, a run of
    one kept (no space sets a word apart in these languages, and a piece is a candidate for the one
    anchor it holds while its other characters are mostly missing: "未被?发送" where "发送" is all the
    text has); a pattern with a flag requires nothing."""
    if wide and any(flag in pattern for flag in ("(?a", "(?i", "(?x", "(?s", "(?u")):
        return frozenset(), ()
    words: set[bytes] = set()
    runs: list[str] = []
    run: list[str] = []
    run_left, i = left, 0

    def close(known: bool) -> None:
        text = "".join(run)
        if text and run_left and known and not wide:
            words.add(text.encode())
        elif len(text) >= (1 if wide else 3):
            runs.append(text)
        run.clear()

    while i < len(pattern):
        ch = pattern[i]
        if ch not in _META if wide else ch in _TOKEN_CHARS:
            after, quantified = _after_quantifier(pattern, i + 1)
            if quantified:  # an optional or repeated letter: the run ends before it, its edge unknown
                close(False)
                run_left, i = False, after
            else:
                run.append(ch)
                i += 1
            continue
        if ch == "(":
            end = _group_end(pattern, i)
            inner = pattern[i + 3:end - 1] if pattern.startswith("(?:", i) else pattern[i + 1:end - 1]
            after, quantified = _after_quantifier(pattern, end)
            plain = _META.isdisjoint(inner) if wide else all(c in _TOKEN_CHARS or c == " " for c in inner)
            if not quantified and inner and (pattern.startswith("(?:", i) or pattern[i + 1:i + 2] != "?") and plain:
                pattern = pattern[:i] + inner + pattern[after:]  # a plain group of words: read as if written inline
                continue
            close(False)
            run_left, i = False, after
            continue
        if ch == "|":
            return frozenset(), ()
        if ch in _META:  # an escape, a class, any character, an anchor: unknown
            close(False)
            end = i + 2 if ch == "\\" else class_end(pattern, i) if ch == "[" else i + 1
            run_left, i = False, _after_quantifier(pattern, end)[0]
            continue
        after, quantified = _after_quantifier(pattern, i + 1)  # a literal character that is no part of a word
        close(not quantified)
        run_left, i = not quantified, after
    close(right)
    return frozenset(words), tuple(runs)


#: A piece compiled (its regex, whether a match must start a word, a sentence) with what every match
#: of it holds (:func:`_required`) and the most characters and spaces a match spans (:func:`_bounds`,
#: where it holds words or runs; -1: no bound); compiled when first needed (most pieces never are in a process's
#: life; compiling them all would cost the import a tenth of a second).
_Single = tuple[re.Pattern[str], bool, bool, frozenset[bytes], tuple[str, ...], int, int]
_SINGLE: list[_Single | None] = [None] * len(_PIECES)
_EVERY = list(range(len(_PIECES)))


def _single(i: int) -> _Single:
    """Piece ``i`` compiled, with what its matches require (a grammar term's: nothing; a Chinese or
    Japanese piece's: runs of its characters)."""
    piece = _PIECES[i][1]
    regex, word, sentence = _piece_regex(piece)
    words: frozenset[bytes] = frozenset()
    runs: tuple[str, ...] = ()
    if not piece.hint:
        words, runs = _required(piece.pattern.lstrip("^"), word or sentence, not piece.compound,
                                wide=_CJK.search(piece.pattern) is not None)
    single = _SINGLE[i] = (regex, word, sentence, words, runs, *(_bounds(regex) if words or runs else (-1, -1)))
    return single


def _bounds(regex: re.Pattern[str]) -> tuple[int, int]:
    """The most characters a match of ``regex`` spans, and the most spaces it holds; -1 where one has no
    bound (:func:`bounds`).  A match holds its piece's words and runs, so it starts at most so many
    characters, and so many spaces, before the first of each from where a search starts: ``_speedups``
    searches from there (a search from the text's start tried every position before)."""
    return (-1, -1) if regex.flags & re.VERBOSE else bounds(regex.pattern)


def _next_match(reading: "_Reading", regex: re.Pattern[str], word: bool, sentence: bool,
                at: int) -> re.Match[str] | None:
    """The first match of a piece from ``at`` on that :func:`_piece_matches` lists (at a word's start
    for a Latin piece, at a sentence's start for one that says ``^``): the matches one at a time,
    for a judgment that stops at the first valid one."""
    norm = reading.norm
    if sentence:
        starts = reading.sentence_starts()
        for k in range(bisect_left(starts, at), len(starts)):
            m = regex.match(norm, starts[k])
            if m is not None:
                return m
        return None
    while True:
        m = regex.search(norm, at)
        if m is None or not word or starts_word(norm, m.start()):
            return m
        at = m.start() + 1


def _first_valid(reading: "_Reading", kind_pieces: list[int]) -> tuple[int, re.Match[str]] | None:
    """The first valid match of ``kind_pieces``, in the order :func:`_claim`'s reference reads them
    (piece by piece in their order, each piece's matches by start): each piece's matches
    are found one at a time and the reading stops at the first valid one — most claims are made by
    the first piece that matches, one search.  A piece whose words or runs (:func:`_required`) the
    text lacks is not searched."""
    norm = reading.norm
    tokens: AbstractSet[bytes] | None = None
    history: tuple[int, re.Match[str]] | None = None  # a failure told as past: the claim only if none other is
    past: list[tuple[int, int]] | None = None  # where failures told as past are (no other claim is read there)
    for i in kind_pieces:
        regex, word, sentence, words, runs, _, _ = _SINGLE[i] or _single(i)
        if words:
            if tokens is None:
                tokens = reading.tokens()
            if not words <= tokens:
                continue
        for run in runs:
            if run not in norm:
                break
        else:
            if sentence:
                m = _next_match(reading, regex, word, sentence, 0)
            else:  # (the first search inline: most pieces are searched once)
                m = regex.search(norm)
                if m is not None and word and m.start() and norm[m.start() - 1] in _TOKEN_CHARS:
                    m = _next_match(reading, regex, word, sentence, m.start() + 1)  # not a word's start: on
            if m is None:
                continue
            term = CLAIMS[_PIECES[i][0]]
            while m is not None:
                if _valid(reading, term, m):
                    if term.kind == "failed" and _historical(reading, m.start(), term, kind_pieces):
                        past = (past or []) + [m.span()]
                        if history is None:
                            history = (i, m)
                    elif past is None or not _overlaps(m, past):
                        return i, m
                m = _next_match(reading, regex, word, sentence, max(m.end(), m.start() + 1))
    return history


def _piece_matches(reading: "_Reading", i: int) -> list[re.Match[str]]:
    """Every match of piece ``i`` (at a word's start for a Latin one, at a sentence's start for one
    that says ``^``): the reference :func:`_next_match` is tested against."""
    norm = reading.norm
    regex, word, sentence = (_SINGLE[i] or _single(i))[:3]
    found: list[re.Match[str]] = []
    if not sentence:
        first = regex.search(norm)
        if first is None:  # most candidate pieces match nowhere: one search, no more
            return found
        start = first.start()
        if not word or starts_word(norm, start):
            found.append(first)
            at = max(first.end(), start + 1)
        else:
            at = start + 1
        if at >= len(norm):
            return found
        return found + matches(regex, norm, starts_word if word else None, at)  # the rest, from where the first left off
    at = 0  # tried only where a sentence starts: what searching and checking gave
    for start in reading.sentence_starts():
        if start < at or start > len(norm):
            continue
        m = regex.match(norm, start)
        if m is not None:
            found.append(m)
            at = max(m.end(), start + 1)
    return found


#: Lower case, and every character that is not part of a word a space: then ``split`` gives words.
_SEPARATORS = b"\t\n\r.,;:!?()[]{}<>\"'`_-/\\|*#=+&%$@~^"
_WORD_BYTES = bytes.maketrans(bytes(range(65, 91)) + _SEPARATORS, bytes(range(97, 123)) + b" " * len(_SEPARATORS))


def _candidates(text: str) -> list[int]:
    """The pieces (alternatives of terms) ``text`` could match, by its anchors; empty for most texts."""
    if text.isascii():
        return _ascii_candidates(text)
    return _normalised_candidates(normalise(text))


def _inside_a_word(hint: bytes) -> bool:
    """Whether every match of a hint lies inside one word: it has no space and nothing that matches
    one (``.``, ``\\W``, ``\\s``, ``\\S``, ``\\D``, a negated class)."""
    return not any(part in hint for part in (b" ", b".", b"\\W", b"\\s", b"\\S", b"\\D", b"[^"))


#: The hints read one word at a time (with the compound stems: both only ever match inside a word)
#: and those read on the whole text (a phrase: "still ...ing").
_HINTS_IN_WORD = [(hint, i) for hint, i in _HINTED if _inside_a_word(hint.pattern)]
_HINTS_ACROSS = [(hint, i) for hint, i in _HINTED if not _inside_a_word(hint.pattern)]
#: Any phrase hint (one search: most texts hold none; both start with "s", the engine skips to those).
_ANY_ACROSS = re.compile(b"|".join(hint.pattern for hint, _ in _HINTS_ACROSS) or b"(?!)")
#: Any stem or in-word hint (one search of new words: most hold none).
_ANY_IN_WORD = re.compile(b"|".join([_STEMS.pattern] + [hint.pattern for hint, _ in _HINTS_IN_WORD]))
#: Words already read for stems and in-word hints: those that hold none and are no anchor word (most),
#: and the in-word pieces the others give.  A client reads the same few thousand words again and again: a known word costs a
#: set difference, where the stems and hints were searched for in every text anew.  Bounded (a word
#: beyond the bound, or longer than ``_LONGEST_KEPT``, is read every time).
_PLAIN_WORDS: set[bytes] = set()
_WORD_PIECES: dict[bytes, tuple[int, ...]] = {}
_WORDS_KEPT = 50_000
_LONGEST_KEPT = 40


def _in_word_pieces(words: set[bytes], found: set[int]) -> None:
    """Adds to ``found`` the pieces the compound stems and in-word hints give for ``words`` (raw
    words, split at ASCII white space: a match inside a word is found in that word alone)."""
    unknown = words - _PLAIN_WORDS
    if unknown:
        _read_words(unknown, found)


def _read_words(unknown: set[bytes], found: set[int]) -> None:
    """:func:`_in_word_pieces` of words not known to be plain; those found plain are remembered (an
    anchor word never is: ``_PLAIN_WORDS`` is what gives no piece at all, and an anchor word's
    in-word pieces, none or some, are kept in ``_WORD_PIECES``)."""
    fresh: list[bytes] = []
    for w in unknown:
        pieces = _WORD_PIECES.get(w)
        if pieces is None:
            fresh.append(w)
        else:
            found.update(pieces)
    if not fresh:
        return
    if _ANY_IN_WORD.search(b" ".join(fresh)) is None:  # (one search for all the new words: most hold none)
        if len(_PLAIN_WORDS) < _WORDS_KEPT:
            for w in fresh:
                if len(w) <= _LONGEST_KEPT:
                    if w in _WORD_BYTES_SET:
                        _WORD_PIECES[w] = ()  # (anchor words are a few thousand: bounded)
                    else:
                        _PLAIN_WORDS.add(w)
        return
    for w in fresh:
        pieces = tuple([i for stem, i in _COMPOUND if stem in w] + [i for hint, i in _HINTS_IN_WORD if hint.search(w)])
        found.update(pieces)
        _remember(w, pieces, _WORD_PIECES)


def _remember(w: bytes, pieces: tuple[int, ...], table: dict[bytes, tuple[int, ...]]) -> None:
    """Keeps a fresh raw word, bounded: with its pieces in ``table`` when it gives any (or is an
    anchor word), else among the plain words (a word longer than any kept is not kept)."""
    if len(w) > _LONGEST_KEPT:
        return
    if pieces or w in _WORD_BYTES_SET:
        if len(table) < _WORDS_KEPT:
            table[w] = pieces
    elif len(_PLAIN_WORDS) < _WORDS_KEPT:
        _PLAIN_WORDS.add(w)


def _ascii_candidates(text: str) -> list[int]:
    """:func:`_candidates` of an ASCII text, read from its raw bytes (no normalising: a text without
    a claim word costs a translate, a split and a few set operations)."""
    raw = text.encode("ascii").translate(_WORD_BYTES)
    return _raw_candidates(raw, set(raw.split()))


#: A raw word that gives pieces (an anchor word, a word with a stem or an in-word hint in it) and every
#: piece it gives, anchored and in-word: a text's known words then give its candidates in one C-level
#: union (``set.update`` over ``map``), where each anchor word's list and each word's in-word pieces
#: were looked up and added one at a time.  Bounded like ``_PLAIN_WORDS``.
_RAW_PIECES: dict[bytes, tuple[int, ...]] = {}


def _learn_raw(fresh: set[bytes], found: set[int]) -> None:
    """Adds to ``found`` every piece the raw words ``fresh`` (neither plain nor in ``_RAW_PIECES``)
    give — their anchor pieces and their in-word pieces (:func:`_read_words`) — and remembers each
    word: plain in ``_PLAIN_WORDS``, any other with its pieces in ``_RAW_PIECES``."""
    if _ANY_IN_WORD.search(b" ".join(fresh)) is None:  # (one search for all the new words: most hold none)
        # (_remember's keeping written out: a new result's ids and counters are fresh words, and a call
        # of it per word cost ~2,100 instructions of the ~169,000 a new 200-character result takes)
        for w in fresh:
            anchored = _BY_WORD_BYTES.get(w)
            if anchored is not None:
                found.update(anchored)
                if len(w) <= _LONGEST_KEPT and len(_RAW_PIECES) < _WORDS_KEPT:
                    _RAW_PIECES[w] = tuple(anchored)
            elif len(w) <= _LONGEST_KEPT and len(_PLAIN_WORDS) < _WORDS_KEPT:
                _PLAIN_WORDS.add(w)
        return
    for w in fresh:
        pieces = _word_pieces(w)
        found.update(pieces)
        _remember(w, pieces, _RAW_PIECES)


def _word_pieces(w: bytes) -> tuple[int, ...]:
    """Every piece one raw word gives, sorted: its anchor pieces, the compound stems in it, the in-word
    hints it matches (what a word costs that ``_ANY_IN_WORD`` finds something in)."""
    return tuple(sorted({*_BY_WORD_BYTES.get(w, ()), *(i for stem, i in _COMPOUND if stem in w),
                         *(i for hint, i in _HINTS_IN_WORD if hint.search(w))}))


#: The candidates a set of known words (keys of ``_RAW_PIECES``) gives, sorted: a client's results say
#: the same few claim words again and again ("received", "will be processed"), so the union and the sort
#: of their pieces are done once per set of words.  Bounded (beyond it, the union is made every time).
_CANDIDATES_OF: dict[frozenset[bytes], list[int]] = {}
_SETS_KEPT = 4096


def _candidates_of(known: frozenset[bytes]) -> list[int]:
    """The sorted pieces of words in ``_RAW_PIECES`` (not to be changed by the caller: it is shared)."""
    found = _CANDIDATES_OF.get(known)
    if found is None:
        pieces: set[int] = set()
        pieces.update(*map(_RAW_PIECES.__getitem__, known))
        found = sorted(pieces)
        if len(_CANDIDATES_OF) < _SETS_KEPT:
            _CANDIDATES_OF[known] = found
    return found


def _raw_candidates(raw: bytes, words: set[bytes]) -> list[int]:
    """:func:`_ascii_candidates` of an ASCII text's raw bytes and their words: the words known to give
    nothing set aside (most of a text's), the known others' pieces looked up as one set of words
    (:func:`_candidates_of`), the new ones read (:func:`_learn_raw`), the phrase hints searched for.
    The list returned may be shared: not to be changed."""
    unknown = words - _PLAIN_WORDS  # (no anchor word is plain)
    found: set[int] | None = None
    if unknown:
        fresh = unknown.difference(_RAW_PIECES)
        if fresh:
            found = set()
            _learn_raw(fresh, found)
            unknown -= fresh
    if _ANY_ACROSS.search(raw) is not None:
        found = set() if found is None else found
        _across(raw, found)
    known = _candidates_of(frozenset(unknown)) if unknown else []
    if not found:
        return known
    found.update(known)
    return sorted(found)


def _across(raw: bytes, found: set[int]) -> None:
    """Adds to ``found`` the pieces of the phrase hints ``raw`` holds."""
    found.update(_across_pieces(raw))


def _across_pieces(raw: bytes) -> list[int]:
    """The pieces of the phrase hints ``raw`` holds."""
    return [i for hint, i in _HINTS_ACROSS if hint.search(raw) is not None]


def _literal_start(pattern: bytes) -> bytes:
    """The literal bytes every match of ``pattern`` starts with (``b""``: none known — a top-level
    ``|``, or a meta character first); a letter a quantifier follows is not part of it."""
    if len(alternatives(pattern.decode("latin-1"))) > 1:
        return b""
    end = 0
    while end < len(pattern) and pattern[end:end + 1] not in (b"\\", b"[", b"(", b".", b"^", b"$", b"*", b"+", b"?",
                                                            b"{", b")", b"]", b"}", b"|"):
        end += 1
    if pattern[end:end + 1] in (b"*", b"+", b"?", b"{"):
        end -= 1  # ("ab?": the b may be missing)
    return pattern[:max(end, 0)]


#: What every match of the compound stems or an in-word hint holds (``_speedups`` looks for these in a new
#: word before searching ``_ANY_IN_WORD``: most words hold none); empty when a hint's start is unknown.
_IN_WORD_LITERALS: tuple[bytes, ...] = tuple(sorted({stem for stem, _ in _COMPOUND}
                                                  | {_literal_start(hint.pattern) for hint, _ in _HINTS_IN_WORD}))
if not all(_IN_WORD_LITERALS):
    _IN_WORD_LITERALS = ()
#: What every match of one of the phrase hints starts with (``_speedups`` looks for these before
#: searching ``_ANY_ACROSS``: a text without any holds no hint); empty when a hint's start is unknown.
_ACROSS_LITERALS: tuple[bytes, ...] = tuple(_literal_start(hint.pattern) for hint, _ in _HINTS_ACROSS)
if not all(_ACROSS_LITERALS):
    _ACROSS_LITERALS = ()


#: Every byte of a character beyond ASCII a space: a stem or an in-word hint is ASCII letters, and
#: what ends or begins one there (no letter) ends or begins it at a space too; Chinese and Japanese
#: text then gives few words to look up.
_LATIN_ONLY = bytes(range(128)) + b" " * 128


#: The ASCII characters ``str.split`` splits at and ``bytes.split`` does not (the file, group, record and
#: unit separators).
_STR_ONLY_SPACES = re.compile(b"[\x1c-\x1f]")


def _normalised_candidates(norm: str) -> list[int]:
    """:func:`_candidates` of text already normalised (a stem in it is one in its raw bytes: those
    differ from it in separators only)."""
    raw = norm.encode("utf-8").translate(_WORD_BYTES)
    if norm.isascii() and _STR_ONLY_SPACES.search(raw) is None:
        # (Spanish, French, German text folds to ASCII: its words are then read as an ASCII result's are,
        # the known sets of them looked up at once — the same words, when no character splits a str and
        # not the bytes)
        return _raw_candidates(raw, set(raw.split()))
    found: set[int] = set()
    if _ANY_ACROSS.search(raw) is not None:
        found.update(i for hint, i in _HINTS_ACROSS if hint.search(raw) is not None)
    _in_word_pieces(set(raw.translate(_LATIN_ONLY).split()), found)
    for word in _WORDS.intersection(raw.decode("utf-8").split()):
        found.update(_BY_WORD[word])
    found.update(_cjk_pieces(norm))
    return sorted(found)


def _cjk_pieces_python(norm: str) -> set[int]:
    """The pieces of the Chinese and Japanese anchors ``norm`` holds: each two characters that begin with a
    pair's first character, each character that is one (``_speedups.cjk_pieces`` in C, where built)."""
    found: set[int] = set()
    if not norm.isascii() and not _FIRSTS.isdisjoint(norm):
        for pair in _PAIRS.intersection(_PAIR_AT.findall(norm)):
            found.update(_BY_CJK[pair])
        for ch in _CHARS.intersection(_CHAR_AT.findall(norm)):
            found.update(_BY_CJK[ch])
    return found


# -- data ------------------------------------------------------------------------------------------

#: The mail headers a line of a message starts with, before its colon (``_DATA_LINE``; ``_speedups`` too).
_MAIL_HEADERS = ("From", "To", "Cc", "Subject", "Date", "Reply-To")
#: The words a line of code starts with (``_DATA_LINE``; ``_speedups`` compares them with a line's start).
_CODE_WORDS = ("def", "class", "import", "from", "function", "const", "let", "var", "public", "private", "package",
               "async def", "return")
#: A line that is data from its first character: a heading, a list item, a table row, code, a
#: quotation, a listing entry, an indented block, a log line (a timestamp first).
_DATA_LINE_START = (
    r"\s*(?:#{1,6}\s|#\d+\s|[-*+•·]\s|\d+[.)]\s|\||```|>\s|\[(?:FILE|DIR|file|dir)\]|[{\[<]|"
    r"\d{4}[-/]\d\d[-/]\d\d[ T]\d\d:\d\d|\[?\d\d:\d\d:\d\d|\[(?:INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL)\])|\t|    |"
    # a line of code, a mail header
    r"(?:" + "|".join(map(re.escape, _CODE_WORDS)) + r")\s+\w|(?:" + "|".join(map(re.escape, _MAIL_HEADERS)) + r"):\s")
#: ... and a config assignment, a CSV header: a line with a "=", a ",".
_DATA_LINE = re.compile(_DATA_LINE_START + r"|[\w.-]+\s?=\s?\S|[^,\s]+(?:,(?!\d{3}(?!\d))[^,\s]*)+$")
#: ``_DATA_LINE`` without the branches that need a "=" or a ",": what a line without either is read
#: by (:func:`_data_line`) — the CSV branch runs over the whole first stretch of a line without a
#: space or a comma, all of a Chinese or Japanese line (~1 µs of a 100-character one, where the rest
#: take 0.15).
_DATA_LINE_PLAIN = re.compile(_DATA_LINE_START)


def _data_line(line: str) -> bool:
    """Whether ``line`` is data from its first character (``_DATA_LINE.match``: where it matches, not
    what)."""
    if "," in line or "=" in line:
        return _DATA_LINE.match(line) is not None
    return _DATA_LINE_PLAIN.match(line) is not None


#: After the first line, a table row without its outer pipes ("id | status", "101 | 完了": psql's
#: output under a title line) is data too.  (Not the first line: "estado: en_proceso | progreso: 60%"
#: is a status line, what the server says of the work.)
_TABLE_ROW = re.compile(r"[^|\n]{1,40} \| \S")
#: Quoted content (it is what something says, not what the server claims), paths, URLs and file names.
_QUOTED = re.compile(  # every branch starts with its quote character: the engine skips to those
    r"\"[^\"\n]{0,400}\"|\u201c[^\u201d\n]{0,400}\u201d|\u2018[^\u2019\n]{0,400}\u2019|«[^»\n]{0,400}»|"
    r"「[^」\n]{0,400}」|『[^』\n]{0,400}』|《[^》\n]{0,400}》|„[^“”\n]{0,400}[“”]|`[^`\n]{0,400}`|'[^'\n]{1,400}'")
#: Chinese and Japanese characters and full-width punctuation: no path or file name runs into them (a
#: Chinese or Japanese sentence has no spaces: "分支 release/2.1）已加入队列" names the branch, and the
#: rest is the claim).
_WIDE = "\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
#: The file name extensions a name ends with (one list: the patterns below and ``_speedups`` read it).
_EXTENSIONS = ("txt", "md", "json", "jsonl", "log", "csv", "py", "js", "ts", "yaml", "yml", "toml", "html", "xml", "pdf",
               "png", "jpg", "sh", "cfg", "ini")
#: Paths, URLs, file names, command-line flags: names, not words of a claim (looked for only when the
#: text has a character they need).
_NAMES = re.compile(
    r"(?<!\S)--?[A-Za-z][\w-]*|(?<!\S)[^\s/\\" + _WIDE + r"]*[/\\][^\s" + _WIDE + r"]*|"
    r"(?<![\w.-])[\w.-]+\.(?:" + "|".join(_EXTENSIONS) + r")\b", re.I)
_EXTENSION = re.compile(r"\.(?i:" + "|".join(_EXTENSIONS) + r")\b")
_SPACE_DASH = re.compile(r"-(?<=\s-)")  # (a "-" after white space: the engine skips to each "-")


def _name_hint(text: str) -> bool:
    """Whether ``text`` has a character a path, a file name or a flag needs (a few ``in`` tests and
    patterns that start with their own character: one pattern of three branches was tried at every
    position)."""
    return ("/" in text or "\\" in text or text.startswith("-") or "-" in text and _SPACE_DASH.search(text) is not None
            or "." in text and _EXTENSION.search(text) is not None)


def _unquote(match: re.Match[str]) -> str:
    text = match.group()
    if text[0] == "'" and (match.start() > 0 and match.string[match.start() - 1].isalnum()
                           or match.end() < len(match.string) and match.string[match.end()].isalnum()):
        return text  # an apostrophe ("don't ... it's"), not a quotation
    return " \u2026 "
_INTROS = every(DATA_INTROS) + every(ADVICE_INTROS)
#: (Latin intro words whole; Chinese and Japanese ones where they stand: no space sets them apart.)
_INTRO = re.compile(r"^[^:：\n]{0,30}?(?:(?<!\w)(?:" + "|".join(re.escape(w) for w in _INTROS if not _CJK.search(w)) +
                    r")(?!\w)|(?:" + "|".join(re.escape(w) for w in _INTROS if _CJK.search(w)) + r"))[^:：\n]{0,60}[:：]", re.I)
def _first_word(intro: str) -> str:
    """A Latin intro's first word: its first run of ``\\w`` ("read-only" starts with "read", which a line
    holding the intro holds as a word of its own, the hyphen being no word character)."""
    first = re.match(r"\w+", intro.lower())
    assert first is not None and ":" not in intro and max(intro) <= "\u00ff", \
        f"a Latin intro that does not start with a word of Latin-1 letters: _intro would miss {intro!r}"
    return first.group()


#: The first word of each Latin intro, lower case: an intro starts a word and its first word ends one (a
#: space, a hyphen or the intro's end follows it), so a line whose words before its first colon hold none
#: of these (and no Chinese or Japanese intro) matches no intro.  As bytes for an ASCII line (there
#: ``re.I`` is ASCII case and ``\w`` is ``[A-Za-z0-9_]``); as text for one of Latin-1, Chinese and
#: Japanese characters (none of which ``re.I`` takes for another's case but as ``str.lower`` does, and
#: the intros are Latin-1).
_INTRO_FIRST_WORDS = frozenset(_first_word(w) for w in _INTROS if not _CJK.search(w))
_INTRO_FIRSTS = frozenset(w.encode() for w in _INTRO_FIRST_WORDS if w.isascii())
#: (All of them in Latin-1, with ``\w`` and ``str.lower`` of each Latin-1 character: ``_speedups`` reads a
#: Latin-1 line's words before its colon as ``_intro`` does, a byte each.)
_INTRO_FIRSTS_LATIN1 = frozenset(w.encode("latin-1") for w in _INTRO_FIRST_WORDS)
_LATIN1_WORD = bytes(1 if chr(b).isalnum() or b == 0x5f else 0 for b in range(256))
_LATIN1_LOWER = bytes(ord(chr(b).lower()) for b in range(256))
#: ASCII letters, digits and ``_`` (``\w``) as lower case, every other byte a space.
_INTRO_WORD_BYTES = bytes(b + 32 if 65 <= b <= 90 else b if 97 <= b <= 122 or 48 <= b <= 57 or b == 95 else 32
                          for b in range(256))
#: A character beyond Latin-1 and the Chinese and Japanese blocks (the line is then read by ``_INTRO``
#: itself), the Chinese and Japanese intros, and words as ``\w`` makes them.
_INTRO_OTHER_SCRIPT = re.compile("[^\x00-\xff\u3000-\u30ff\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")
_INTRO_CJK_WORDS = tuple(w for w in _INTROS if _CJK.search(w))
_INTRO_CJK = re.compile("|".join(map(re.escape, _INTRO_CJK_WORDS)) or "(?!)")
_UNICODE_WORD = re.compile(r"\w+")


def _intro(line: str) -> re.Match[str] | None:
    """``_INTRO.match(line)``: a data intro ending with a colon ("Contents of notes.txt: …").  The
    pattern tries its hundred intros at each of the first 30 positions (3-6 µs); a line whose words
    before its first colon hold no intro's first word (:data:`_INTRO_FIRST_WORDS`) is answered
    without it."""
    colon = line.find(":")
    wide = line.find("：")
    if wide >= 0 and (colon < 0 or wide < colon):
        colon = wide
    if colon < 0:
        return None
    if line.isascii():
        if _INTRO_FIRSTS.isdisjoint(line[:colon].encode("ascii").translate(_INTRO_WORD_BYTES).split()):
            return None
    elif (_INTRO_OTHER_SCRIPT.search(line, 0, colon) is None and _INTRO_CJK.search(line, 0, colon) is None
          and _INTRO_FIRST_WORDS.isdisjoint(map(str.lower, _UNICODE_WORD.findall(line, 0, colon)))):
        return None
    return _INTRO.match(line)


#: What a word is no name without (a flag's "-", a path's "/" or "\\", a file name's extension: each
#: branch a literal first, which the engine skips to), and white space (what ends a word: no name
#: spans it).
_NAME_MARK = re.compile(r"-|/|\\|" + _EXTENSION.pattern)
_SPACE = re.compile(r"\s")


def _unnamed(text: str) -> str:
    """``_NAMES.sub(" … ", text)`` word by word: every match of :data:`_NAMES` lies inside one word
    (no branch matches white space, and what each looks at before its start — white space, or no
    word character — and ``\\b`` after its end read the same at a word's edge as at the ends of
    the word alone), so only the words with a mark of a name (:data:`_NAME_MARK`) are searched, each
    on its own — where the pattern, a look-behind first, was tried at every position of the text
    (16 µs over 200 characters)."""
    out: list[str] = []
    last, rev = 0, ""
    at = _NAME_MARK.search(text)
    while at is not None:
        mark = at.start()
        if not rev:
            rev = text[::-1]
        before = _SPACE.search(rev, len(text) - 1 - mark)  # the white space before the word, read backwards
        start = len(text) - before.start() if before is not None else 0
        after = _SPACE.search(text, mark)
        end = after.start() if after is not None else len(text)
        out.append(text[last:start])
        out.append(_NAMES.sub(" \u2026 ", text[start:end]))
        last = end
        at = _NAME_MARK.search(text, end)
    out.append(text[last:])
    return "".join(out)


def _unquoted(text: str) -> str:
    """``text`` with its quotations blanked out (:data:`_QUOTED`); an ASCII text without any of the
    three ASCII quote characters has none (three ``in`` tests, where the pattern looks at every
    character), nor any other text without a quotation's first character (:data:`_QUOTE_OPENS`)."""
    if text.isascii():
        if '"' not in text and "'" not in text and "`" not in text:
            return text
    elif _QUOTE_OPENS.search(text) is None:  # (one class scanned for: ``sub`` with a function costs more)
        return text
    return _QUOTED.sub(_unquote, text)


#: The characters :data:`_QUOTED`'s branches start with: a text without any holds no quotation.
_QUOTE_OPENS = re.compile("[\"\u201c\u2018«「『《„`']")
#: The characters that close a quotation :data:`_QUOTED` reads.
_QUOTE_CLOSES = frozenset("\"\u201d\u2019»」』》“`'")


def _is_json(text: str) -> bool:
    first = text[:1]
    if first not in "{[\"" and text not in ("true", "false", "null"):
        return False
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def _head(text: str) -> str:
    """The narrative's head: its first lines up to a blank line or a line of data (at most three
    lines, 400 characters), with quoted content, paths and file names blanked out, and what follows a
    data intro ("Contents of notes.txt: ...") cut off.  Empty when the text is data from its start."""
    text = text.strip()
    if not text or _is_json(text):
        return ""
    if "\n" not in text:  # one line (most results): no lines to split and join again
        if _data_line(text):
            return ""
        intro = _intro(text)
        text = _unquoted((text[:intro.end() - 1] if intro else text)[:400])
        return _unnamed(text) if _name_hint(text) else text
    lines = text.split("\n", 3)
    if _data_line(lines[0]):
        return ""
    head = []
    for n, line in enumerate(lines[:3]):
        if n and (not line.strip() or _data_line(line) or _TABLE_ROW.match(line)):
            break
        intro = _intro(line)  # (an intro ends with a colon)
        if intro:
            head.append(line[:intro.end() - 1])
            break
        head.append(line)
    text = _unquoted("\n".join(head)[:400])
    return _unnamed(text) if _name_hint(text) else text


# -- reading a match ----------------------------------------------------------------------------


def _alternation(words: tuple[str, ...]) -> str:
    """Latin words as whole words, Chinese and Japanese ones as they stand."""
    return "|".join(re.escape(w) if _CJK.search(w) else f"(?<![a-z0-9]){re.escape(w)}(?![a-z0-9])" for w in words)


def _words_first(words: tuple[str, ...]) -> str:
    """Words as an alternation that starts with their own characters (the engine then skips to
    them); Latin ones end a word, and that they start one is checked after a match
    (:func:`_at_word`).  The words are grouped by their first character
    (``a(?:fter…|gain…)|b(?:…)``), each group's in their order: at a position only the words of its
    character can match, and the first of those that does is the match, as in the flat alternation
    — whose every word the engine tried in turn at every position it skipped to (~3 µs over a
    70-character clause for the forty words of ``HISTORY``)."""
    groups: dict[str, list[str]] = {}
    for w in words:
        groups.setdefault(w[0], []).append(re.escape(w[1:]) + ("" if _CJK.search(w) else "(?![a-z0-9])"))
    return "|".join(re.escape(first) + (tails[0] if len(tails) == 1 else "(?:" + "|".join(tails) + ")")
                    for first, tails in groups.items())


#: The patterns that are an alternation of literals (:func:`_alternation_of`): each one's literals in
#: order, and whether each must end a word (a Latin word's ``(?![a-z0-9])``) — what ``_speedups`` finds
#: their matches by, in C, where the pattern's search tried every position for each group's words.
_ALTERNATIONS: dict[re.Pattern[str], tuple[tuple[str, bool], ...]] = {}


def _alternation_of(words: tuple[str, ...], marks: str = "") -> re.Pattern[str]:
    """``marks`` (characters, each a match of its own) then :func:`_words_first` of ``words``, compiled and
    kept in :data:`_ALTERNATIONS`."""
    assert words, "an alternation of no words matches the empty text everywhere"
    regex = re.compile("".join(re.escape(m) + "|" for m in marks) + _words_first(words))
    _ALTERNATIONS[regex] = tuple((m, False) for m in marks) + tuple((w, not _CJK.search(w)) for w in words)
    return regex


def _at_word(text: str, at: int) -> bool:
    """A match that starts with a Latin letter or digit starts a word; any other starts anywhere."""
    ch = text[at]
    return not ("a" <= ch <= "z" or "0" <= ch <= "9") or starts_word(text, at)


#: (Each mark a branch of its own: every branch then starts with a literal, whose first characters the
#: engine skips to; a class as the first branch made it try every position, 2.6 µs over 150 characters
#: where this takes 1.0.)
_CLAUSE_END = _alternation_of(every(CONTRASTS), ".!?;\n。！？；,，、")
#: What ends a sentence (one list: the pattern and ``_speedups``).
_SENTENCE_ENDS = ".!?\n。！？"
_SENTENCE_END = re.compile("[" + _SENTENCE_ENDS + "]")
#: What ends a sentence or a clause's lead-in (a sentence may start after it and one space).
_SENTENCE_MARKS = ".!?;:\n。！？；："
_SENTENCE_MARK = re.compile("[" + _SENTENCE_MARKS + "]( )?")
#: What a chat message may put before a sentence's first word: markdown marks, a bullet, an emoji.
_DECORATION_MARKS = "*_~`#>•·"
_DECORATION = re.compile("[" + _DECORATION_MARKS + "\u2600-\u27bf\u2b00-\u2bff\ufe0f\U0001f300-\U0001faff ]+")
_DECORATION_FIRST = frozenset(_DECORATION_MARKS) | frozenset(chr(c) for c in range(0x2600, 0x27c0)) | {"\ufe0f"}
_WORD = re.compile(r"[a-z0-9]+")
#: The Latin words of ``CLAIM_ABOUT_AFTER`` (``_speedups`` compares them with what follows a match).
_ABOUT_AFTER_LATIN = tuple(w for w in every(CLAIM_ABOUT_AFTER) if not _CJK.search(w))
_ABOUT_AFTER = re.compile(r"(?: (?:" + "|".join(map(re.escape, _ABOUT_AFTER_LATIN)) +
                          r")(?![a-z0-9])|(?:" + "|".join(w for w in every(CLAIM_ABOUT_AFTER) if _CJK.search(w)) + "))")
_REPORTED = _alternation_of(every(REPORTED_SPEECH))
#: The words of reported speech, as bytes (a first look at a text's words), and the Chinese and
#: Japanese ones.
_REPORTED_WORDS = frozenset(part.encode() for w in every(REPORTED_SPEECH) if not _CJK.search(w) for part in w.split()[:1])
_REPORTED_CJK = tuple(w for w in every(REPORTED_SPEECH) if _CJK.search(w))
_NEG_ZH = re.compile("(?:" + "|".join(NEGATIONS["zh"]) + r")\s?$")
_NEG_JA_AFTER = re.compile(r"^.{0,5}?(?:" + "|".join(AFTER_NEGATIONS["ja"]) + ")")
#: A polite negative ending: a match that holds it is said negatively already (not negated again after it).
_JA_POLITE_NEGATION = "ません"
#: German negates after the verb ("wurde angenommen nicht" is rare; "... keine" follows a noun).
_DE_NEGATION_AFTER = (" nicht", " keine")
_NEG_AFTER = re.compile(r"\s?[:=]\s?(?:" + _alternation(every(NONE_COUNTS)) + ")")
_YES_NO = re.compile(_alternation(every(YES_NO_MARKS)))
_LATIN_NEG = {lang: frozenset(cues) for lang, cues in NEGATIONS.items() if lang not in ("zh", "ja")}
_ALL_LATIN_NEG = frozenset().union(*_LATIN_NEG.values())
#: Every byte that is not ``[a-z0-9]`` a space: ``split`` then gives the words ``_WORD`` finds.
_TOKEN_BYTES = bytes(b if 97 <= b <= 122 or 48 <= b <= 57 else 32 for b in range(256))
#: The negation cues a clause's words are compared with, as words (a cue of two words is never one).
_LATIN_NEG_TOKENS = {lang: frozenset(c.encode() for c in cues if c.isalnum() and c.isascii())
                     for lang, cues in _LATIN_NEG.items()}
_ALL_LATIN_NEG_TOKENS = frozenset().union(*_LATIN_NEG_TOKENS.values())
_YES_NO_WORDS = every(YES_NO_MARKS)
assert all(_CJK.search(w) for w in _YES_NO_WORDS), "a Latin yes/no mark: _Reading.may_ask reads only Chinese, Japanese"


class _Reading:
    """A normalised head and the marks its matches are read against — clause ends, sentence ends,
    sentence starts, reported speech — each found once for the text (when first needed), not once
    per match by scanning the text before it."""

    __slots__ = ("norm", "_clause_ends", "_sentence_ends", "_sentence_starts", "_reported", "_clause_of", "_tokens",
                 "_asks", "_plain")

    def __init__(self, norm: str, tokens: AbstractSet[bytes] | None = None) -> None:
        self.norm = norm
        self._clause_of: tuple[int, int | None] = (-1, None)  # the last clause_start asked: negation and generality ask alike
        self._clause_ends: list[int] | None = None
        self._sentence_ends: list[int] | None = None
        self._sentence_starts: list[int] | None = None
        self._reported: list[tuple[int, int]] | None = None
        self._tokens = tokens
        self._asks: bool | None = None
        self._plain: dict[tuple[str, bool], bool] = {}

    def tokens(self) -> AbstractSet[bytes]:
        """The text's words as ``[a-z0-9]+`` finds them (every other byte of its UTF-8 is a space):
        what a piece's required words and the rules' cue words are looked up in — or words that hold
        all of those, given (a cue or a piece is only ever ruled out by its words' absence)."""
        if self._tokens is None:
            self._tokens = frozenset(self.norm.encode("utf-8").translate(_TOKEN_BYTES).split())
        return self._tokens

    def may_ask(self) -> bool:
        """Whether any sentence of the text could be a question: it holds a question mark, or a
        Chinese or Japanese yes/no mark."""
        if self._asks is None:
            norm = self.norm
            self._asks = ("?" in norm or "？" in norm or "¿" in norm
                          or not norm.isascii() and _any_text_in(norm, _YES_NO_WORDS, None))
        return self._asks

    def sentence_starts(self) -> list[int]:
        """Where a sentence may start: the text's start, and after a sentence mark (and one space) —
        and past the decoration a chat message puts before its first word ("**Sent** …", "✅ Merged")."""
        if self._sentence_starts is None:
            norm = self.norm
            starts = [0]
            for m in _SENTENCE_MARK.finditer(norm):
                at, end = m.span()
                starts.append(at + 1)
                if end - at == 2:
                    starts.append(end)
            for at in list(starts):
                if at < len(norm) and norm[at] in _DECORATION_FIRST:
                    past = _DECORATION.match(norm, at)
                    if past is not None and past.end() > at:
                        starts.append(past.end())
            self._sentence_starts = sorted(set(starts))
        return self._sentence_starts

    def clause_start(self, start: int) -> int | None:
        """Where the clause of a word at ``start`` begins, looked for in the 80 characters before it
        (``None``: further back; what the rules read of a clause is its last few words)."""
        if self._clause_of[0] == start:
            return self._clause_of[1]
        ends = [m.end() for m in _CLAUSE_END.finditer(self.norm, max(0, start - 80), start)
                if _at_word(self.norm, m.start())]
        found = ends[-1] if ends else (0 if start <= 80 else None)
        self._clause_of = (start, found)
        return found

    def clause(self, start: int, end: int) -> tuple[int, int]:
        """The clause around ``start:end``: from :meth:`clause_start` (or 80 characters back) to the
        next clause end after ``end``."""
        clause_start = self.clause_start(start)
        stop = _CLAUSE_END.search(self.norm, end)
        return (max(0, start - 80) if clause_start is None else clause_start), (stop.start() if stop else len(self.norm))

    def sentence(self, start: int, end: int) -> tuple[int, int]:
        """The sentence around ``start:end``: from after the last end mark before it to the next one."""
        if self._sentence_ends is None:
            self._sentence_ends = [m.start() for m in _SENTENCE_END.finditer(self.norm)]
        ends = self._sentence_ends
        k = bisect_left(ends, start) - 1
        after = bisect_left(ends, end)
        return (ends[k] + 1 if k >= 0 else 0), (ends[after] if after < len(ends) else len(self.norm))

    def plain(self, language: str, failed: bool) -> bool:
        """Whether the text holds no cue of any rule for a ``language``'s words (of a failure, when
        ``failed``: its modals too): no negation cue (among its words; Chinese, Japanese: anywhere), no
        question mark or yes/no mark, no reported speech, no condition.  A match at a word's start is then read from what
        follows it alone (:func:`_valid`)."""
        key = (language, failed)
        found = self._plain.get(key)
        if found is None:
            words, phrases, texts, ascii_texts, _, all_texts = _PLAIN_CUES.get(key) or _plain_cues(key)
            tokens = self.tokens()
            if self.norm.isascii():
                found = tokens.isdisjoint(words) and ascii_texts.search(self.norm) is None
            else:
                found = tokens.isdisjoint(words) and not _any_text_in(self.norm, all_texts, texts)
            if found:
                for phrase in phrases:  # (a loop: a generator costs more than the few tests)
                    if phrase <= tokens:
                        found = False
                        break
            self._plain[key] = found
        return found

    def reported(self, start: int) -> bool:
        """Whether the word is in someone else's reported words ("the vendor said the order is pending")."""
        if not self.reports():
            return False
        sentence_start = self.sentence(start, start)[0]
        return any(sentence_start <= s and e <= start for s, e in self.reports())

    def reports(self) -> list[tuple[int, int]]:
        """Where the text's reported speech is (its words: "said", "according to")."""
        if self._reported is None:
            norm = self.norm
            # (the text's words, when it holds none of reported speech's, answer for the words split at
            # separators only: a word of those made of letters alone is one of these too)
            words = () if self.tokens().isdisjoint(_REPORTED_WORDS) else norm.encode("utf-8").translate(_WORD_BYTES).split()
            if _REPORTED_WORDS.isdisjoint(words) and (norm.isascii() or not _any_text_in(norm, _REPORTED_CJK, None)):
                self._reported = []  # (most texts: a set look-up instead of a pattern tried at every letter)
            else:
                self._reported = [m.span() for m in _REPORTED.finditer(norm) if _at_word(norm, m.start())]
        return self._reported


def _negated(reading: _Reading, start: int, end: int, term: Term, quick: bool = True) -> bool:
    """Whether a match is negated: a count of none after it ("errors: 0"), a negation cue among the
    last words of its clause (Chinese: just before it; Japanese: just after it).  ``quick``: a Latin
    match at a word's start in a text that holds no cue word is decided from the text's words."""
    norm = reading.norm
    if _NEG_AFTER.match(norm, end):
        return True
    if quick and term.language not in ("zh", "ja") and starts_word(norm, start) and reading.tokens().isdisjoint(
            _LATIN_NEG_TOKENS.get(term.language, _ALL_LATIN_NEG_TOKENS)):
        return term.language == "de" and norm.startswith(_DE_NEGATION_AFTER, end)
    clause_start = reading.clause_start(start)
    if clause_start is None:  # no clause mark in the 80 characters before: the clause's end is read from those
        clause_start, whole = start - 80, False
    else:
        whole = True
    if term.language == "zh":
        return bool(_NEG_ZH.search(norm[clause_start:start]))
    if term.language == "ja":
        tail = norm[end:end + 8]
        return bool(_NEG_JA_AFTER.match(tail)) and _JA_POLITE_NEGATION not in norm[start:end]
    cues = _LATIN_NEG.get(term.language, _ALL_LATIN_NEG)
    words = _WORD.findall(norm, clause_start, start)  # the last four words of the clause
    if len(words) < 5 and not whole:
        words = _WORD.findall(norm, max((m.end() for m in _CLAUSE_END.finditer(norm, 0, start)
                                         if _at_word(norm, m.start())), default=0), start)
    last = words[-4:]
    if any(w in cues and not (k + 1 < len(last) and last[k + 1].isdigit() and w in _NUMBER_MARKS)
           for k, w in enumerate(last)):  # ("n° 77", "no. 5": a number's mark, no negation)
        return True
    if term.language == "de":  # "wurde angenommen? nein" is rare; "wurde nicht angenommen" is caught above
        return norm.startswith(_DE_NEGATION_AFTER, end)
    return False


def _question(reading: _Reading, start: int, end: int, quick: bool = True) -> bool:
    """Whether the sentence of a match asks (a question mark ends it, an inverted one is in it, a
    Chinese or Japanese yes/no mark is in it); ``quick``: a text without any of those asks nowhere."""
    if quick and not reading.may_ask():
        return False
    sentence_start, stop = reading.sentence(start, end)
    norm = reading.norm
    mark = norm[stop:stop + 1]
    sentence = norm[sentence_start:stop]
    if mark in ("?", "？") or "¿" in sentence:
        return True
    return not sentence.isascii() and bool(_YES_NO.search(sentence))  # the yes/no marks are Chinese and Japanese


def _evidence(original: str, phrase: str) -> str:
    """The words of ``original`` a normalised ``phrase`` stands for: where the phrase is in the text case
    folded (its first 80 characters), else the phrase itself."""
    at = original.find(phrase)
    if at >= 0 and original[:at + len(phrase)].casefold().find(phrase) == at:
        # (the phrase as written, and nowhere before it case folded: the place of the whole text case
        # folded — a prefix's folding is the start of the whole's — without folding all of it, ~0.5 µs
        # of a 100-character Chinese text)
        return original[at:at + len(phrase)][:80]
    lowered = original.casefold()
    at = lowered.find(phrase)
    if at >= 0:
        return original[at:at + len(phrase)][:80]
    return phrase[:80]


#: Modals and conditionals start with their own words (the engine skips to those; a look-behind first
#: was tried at every position of the clause: ~5-9 µs of a 60-character head), and that a Latin one
#: starts a word is checked after a match (:func:`_words_in`).
_MODALS = {lang: _alternation_of(words) for lang, words in GENERIC_MODALS.items()}
#: A quotation blanked out (" … ", normalised "...") and a verb that defines it: "`queued` means …".
_DEFINED = re.compile(r"\.\.\. ?(?:" + "|".join(re.escape(w) for w in every(DEFINITIONS)) + r")")
_IF_BEFORE = {lang: _alternation_of(words) for lang, words in CONDITIONALS.items()}
_IF_AFTER = {lang: _alternation_of(words) for lang, words in CONDITIONALS_AFTER.items()}


def _words_in(regex: re.Pattern[str], text: str, pos: int, endpos: int) -> Iterator[re.Match[str]]:
    """The matches of a :func:`_words_first` alternation in ``text[pos:endpos]`` that start a word
    (what ``finditer`` of its look-behind form gave)."""
    while True:
        m = regex.search(text, pos, endpos)
        if m is None:
            return
        if _at_word(text, m.start()):
            yield m
            pos = max(m.end(), m.start() + 1)
        else:
            pos = m.start() + 1
_NEG_WORDS = frozenset(every(NEGATIONS))
#: Words of an earlier attempt, each first (the engine skips to their first letters), that a match starts a
#: word checked after it (:func:`_words_in`): the alternation of look-behinds first was tried at every
#: position of the clause, ~50 µs over 70 characters where this takes ~4.  (What ``(?<![a-z0-9])``
#: said of a word's start, :func:`_at_word` says of a word that starts with a letter or digit: all do.)
_HISTORY = _alternation_of(tuple(w for w in every(HISTORY) if not _CJK.search(w)))
assert all("a" <= w[0] <= "z" or "0" <= w[0] <= "9" for w in every(HISTORY) if not _CJK.search(w)), \
    "a Latin word of HISTORY that starts with no letter or digit: _at_word would not check its start"
_HISTORY_CJK = tuple(w for w in every(HISTORY) if _CJK.search(w))
_NUMBER_MARKS = frozenset(("n", "no", "nr", "nro"))
#: The pieces of the retry terms of ``CLAIMS``: looked for after a failure only, and only those among a
#: text's candidates.
_RETRY_PIECES = frozenset(i for i, (t, _) in enumerate(_PIECES) if CLAIMS[t].retry)


_Cues = tuple[frozenset[bytes], tuple[frozenset[bytes], ...], tuple[str, ...]]


def _cue_words(before: tuple[str, ...], after: tuple[str, ...]) -> _Cues:
    """Cue phrases as what a text must hold for one to be found at a word's start: (the Latin ones
    looked for before a match as their words — one word each, then those of two or more: a match of
    one there is whole words of the text, since a phrase goes on with a space or ends a word and the
    clause before a match at a word's start ends where a word does; the text of every other: a
    Chinese or Japanese one, one that starts with no letter, and the first word of a Latin one
    looked for after the match — a clause can end inside a word, at a contrast word written into
    another, where a phrase would end no word of the text)."""
    singles: set[bytes] = set()
    multis: list[frozenset[bytes]] = []
    texts: list[str] = []
    for w in before + after:
        first = _WORD.match(w)
        if first is None or not w.isascii():
            texts.append(w)
        elif w in before:
            words = frozenset(word.encode() for word in _WORD.findall(w))
            if len(words) == 1:
                singles |= words
            else:
                multis.append(words)
        else:
            texts.append(first.group())
    return frozenset(singles), tuple(multis), tuple(dict.fromkeys(texts))


#: Per language, for :func:`_general`'s quick answer: the cues of a condition (before and after the
#: match) and, for a failure, the modals (before and after it).
_CONDITION_CUES = {lang: _cue_words(CONDITIONALS.get(lang, ()), CONDITIONALS_AFTER.get(lang, ()))
                   for lang in set(CONDITIONALS) | set(CONDITIONALS_AFTER)}
_MODAL_CUES = {lang: _cue_words((), words) for lang, words in GENERIC_MODALS.items()}
#: Chinese negation comes before a word, Japanese after it: a text without any of its language's
#: cues has no negation in it (:meth:`_Reading.plain`).
_CJK_NEGATIONS = {"zh": NEGATIONS["zh"], "ja": AFTER_NEGATIONS["ja"]}


#: Per (language, failure or not): every cue of every rule :meth:`_Reading.plain` looks for — the words
#: (negation cues of a Latin language, the first words of reported speech, one-word conditions), the
#: conditions of two or more words, and one pattern of the texts (question marks, yes/no marks,
#: Chinese and Japanese negation, reported speech and conditions, a failure's modals).  Built when a
#: language is first read.  (A text with a reported word the finer reading of :meth:`_Reading.reports`
#: would not count is not plain: read in full, to the same answer.)
_PlainCues = tuple[frozenset[bytes], tuple[frozenset[bytes], ...], re.Pattern[str], re.Pattern[str], tuple[str, ...],
                   tuple[str, ...]]
_PLAIN_CUES: dict[tuple[str, bool], _PlainCues] = {}


def _texts_pattern(texts: set[str]) -> re.Pattern[str]:
    """One pattern of literal cue texts, the longest first (``(?!)``: none)."""
    return re.compile("|".join(map(re.escape, sorted(texts, key=lambda t: (-len(t), t)))) or "(?!)")


def _plain_cues(key: tuple[str, bool]) -> _PlainCues:
    """The cues of ``key`` (``_PLAIN_CUES``), with a pattern of the texts' ASCII ones alone, what an
    ASCII text (most) is searched for: a text of ASCII holds no other, and the pattern of them all
    (mostly Chinese and Japanese marks: a class of first characters tested at every position) cost a
    microsecond where ``?`` alone is found at once; those ASCII texts as a tuple (``_speedups``
    looks for each); and all the texts as a tuple (what :func:`_any_text_in` looks for in any other)."""
    language, failed = key
    cjk = _CJK_NEGATIONS.get(language)
    words = set(_REPORTED_WORDS) | (_LATIN_NEG_TOKENS.get(language, _ALL_LATIN_NEG_TOKENS) if cjk is None else set())
    texts = ["?", "？", "¿", *_YES_NO_WORDS, *_REPORTED_CJK, *(cjk or ())]
    phrases: tuple[frozenset[bytes], ...] = ()
    for cues in (_CONDITION_CUES.get(language), _MODAL_CUES.get(language) if failed else None):
        if cues is not None:
            words |= cues[0]
            phrases += cues[1]
            texts += cues[2]
    ascii_texts = {t for t in texts if t.isascii()}
    built = _PLAIN_CUES[key] = (frozenset(words), phrases, _texts_pattern(set(texts)), _texts_pattern(ascii_texts),
                                tuple(sorted(ascii_texts)), tuple(sorted(set(texts))))
    return built


def _any_text_in_python(norm: str, texts: tuple[str, ...], pattern: re.Pattern[str] | None) -> bool:
    """Whether ``norm`` holds one of ``texts`` (``pattern``: :func:`_texts_pattern` of them, or ``None``:
    each looked for); ``_speedups.any_text_in`` in C, where built (the pattern tries a class of the texts'
    first characters at each position, ~0.5 µs of a 100-character Chinese text; ``in`` for each of a
    few dozen, more)."""
    if pattern is None:
        return any(t in norm for t in texts)
    return pattern.search(norm) is not None


def _rules_of(language: str) -> tuple[Any, ...]:
    """What the full reading rules (:func:`_negated`, :func:`_general`) read for a language's words, in
    one tuple (``_speedups`` asks once per language): the negation cues (as the words the quick look
    compares, and as text), the condition and modal cues, the condition (before, after) and modal
    patterns, and whether the language is Chinese or Japanese (read in Python)."""
    return (_LATIN_NEG_TOKENS.get(language, _ALL_LATIN_NEG_TOKENS), tuple(_LATIN_NEG.get(language, _ALL_LATIN_NEG)),
            _CONDITION_CUES.get(language), _MODAL_CUES.get(language), _IF_BEFORE.get(language),
            _IF_AFTER.get(language), _MODALS.get(language), language in ("zh", "ja"))


def _holds_cue(reading: _Reading, cues: _Cues | None) -> bool:
    """Whether the text holds what one of ``cues`` needs (:func:`_cue_words`)."""
    if cues is None:
        return False
    tokens = reading.tokens()
    return (not tokens.isdisjoint(cues[0]) or any(words <= tokens for words in cues[1])
            or _any_text_in(reading.norm, cues[2], None))


def _defines(norm: str, start: int) -> bool:
    """Whether the sentence before ``start`` defines a quoted word ("`queued` means …"): the last
    definition in the 160 characters before it, with no end of a sentence between the two (the
    quotation's own dots come before the definition's verb)."""
    last = None
    for last in _DEFINED.finditer(norm, max(0, start - 160), start):
        pass
    return last is not None and _SENTENCE_END.search(norm, last.end(), start) is None


def _general(reading: _Reading, start: int, end: int, term: Term, quick: bool = True) -> bool:
    """Whether the clause of a match states something general or hypothetical, not what happened: a
    definition earlier in its sentence ("`queued` means …"), a
    condition before it ("if the upload fails"; Japanese after it: 失敗した場合), or — for a failure
    word — a modal of possibility ("failed uploads can be retried"; not "cannot", a failure itself,
    nor "can not").  ``quick``: a match at a word's start in a text that holds no cue
    (:func:`_cue_words`) is decided at once."""
    norm = reading.norm
    if "..." in norm and _defines(norm, start):
        return True  # "`queued` means the request was accepted": what a status means, not what happened
    if quick and starts_word(norm, start) and not _holds_cue(reading, _CONDITION_CUES.get(term.language)):
        if term.kind != "failed" or not _holds_cue(reading, _MODAL_CUES.get(term.language)):
            return False
    clause_start, clause_end = reading.clause(start, end)
    cond = _IF_BEFORE.get(term.language)
    if cond is not None and any(not _ANSWERED.match(norm, m.end()) for m in _words_in(cond, norm, clause_start, start)):
        return True
    cond = _IF_AFTER.get(term.language)
    if cond is not None and next(_words_in(cond, norm, end, clause_end), None) is not None:
        return True
    modal = _MODALS.get(term.language)
    if term.kind != "failed" or modal is None:
        return False
    for m in _words_in(modal, norm, clause_start, clause_end):
        if m.start() < end and m.end() > start:
            continue  # part of the failure phrase ("can t")
        after = _WORD.findall(norm, m.end(), min(clause_end, m.end() + 12))[:1]
        before = _WORD.findall(norm, max(clause_start, m.start() - 8), m.start())[-1:]
        # a negated modal is no possibility: "can not", and where the negation comes first, "no puede",
        # "ne peut" ("Permiso denegado: tu cuenta no puede borrar…" is a refusal, not a general rule)
        if not (after and after[0] in _NEG_WORDS or before and before[0] in _NEG_WORDS):
            return True
    return False


#: A condition word that punctuation follows is none: "Ahora sí: …" (normalised "si:"), "Oui, si." — an
#: answer, no clause hangs on it.
_ANSWERED = re.compile(r" ?[:,.!;]")


def _valid(reading: _Reading, term: Term, m: re.Match[str], quick: bool = True) -> bool:
    """Whether a match is a claim: not a topic ("error rate"), not negated, not asked, not reported,
    not general or hypothetical.  ``quick``: with the shortcuts that decide the common case from the
    text's words (without them: the reference the shortcuts are tested against)."""
    start, end = m.span()
    norm = reading.norm
    if quick and starts_word(norm, start) and reading.plain(term.language, term.kind == "failed") and "..." not in norm:
        # no cue of negation, question, reported speech, condition or modal in the text: only what
        # follows the match is left to read
        return not (_ABOUT_AFTER.match(norm, end) or _NEG_AFTER.match(norm, end)
                    or term.language == "de" and norm.startswith(_DE_NEGATION_AFTER, end))
    return not (_ABOUT_AFTER.match(norm, end) or _negated(reading, start, end, term, quick)
                or _question(reading, start, end, quick) or reading.reported(start)
                or _general(reading, start, end, term, quick))


def _overlaps(m: re.Match[str], spans: list[tuple[int, int]]) -> bool:
    start, end = m.span()
    return any(start < e and s < end for s, e in spans)


def _historical(reading: _Reading, start: int, term: Term, candidates: list[int]) -> bool:
    """Whether a failure word is told as past, before the work succeeded or was taken on again: a
    word of an earlier attempt in its clause ("the first attempt timed out", "rejected the first
    attempt", "前回は失敗しましたが", "la tentative précédente avait échoué"), or a retry taken on
    after it in the text ("timed out, so I've set the job to try again in 10 minutes", "超时了，
    已设置 5 分钟后自动重试": the retry terms of ``CLAIMS``).  Such a failure is the text's claim
    only when no other claim follows (then it is all the text says).  ``candidates``: the pieces the
    text could match; without a retry piece among them no retry is looked for (most failures)."""
    clause_start, clause_end = reading.clause(start, start)
    clause = reading.norm[clause_start:clause_end]
    if term.language in ("zh", "ja"):
        if _any_text_in(clause, _HISTORY_CJK, None):
            return True
    elif next(_words_in(_HISTORY, clause, 0, len(clause)), None) is not None:
        return True
    if _RETRY_PIECES.isdisjoint(candidates):
        return False
    for i in _RETRY_PIECES.intersection(candidates):  # each piece's own regex: it starts with its own words
        regex, word, sentence = (_SINGLE[i] or _single(i))[:3]
        if _next_match(reading, regex, word, sentence, start) is not None:
            return True
    return False


def _claim(head: str, candidates: list[int] | None = None, norm: str | None = None, *,
           quick: bool = True, tokens: AbstractSet[bytes] | None = None) -> Claim | None:
    """The claim of the head: the first valid match of the pieces read in their order — kind by kind
    (failed, then accepted, then completed: the pieces are numbered so), each kind's in the
    vocabulary's order, each piece's matches by start; so the highest-ranked kind that has a valid
    match wins.  Only the ``candidates`` pieces run; without them, every piece (the reference the
    anchors are tested against).  ``norm``: the head already normalised; ``tokens``: words that hold
    all of its words (:func:`_words_hold_the_heads`).  ``quick``: matches found one at a time until
    one is valid (:func:`_first_valid`), pieces whose words the text lacks skipped, the common case
    of validity decided from the text's words; without: every match of every piece found and each
    read in full (the reference the shortcuts are tested against)."""
    reading = _Reading(normalise(head) if norm is None else norm, tokens if quick else None)
    pieces = candidates or _EVERY
    if quick:
        first = _first_valid(reading, pieces)
        if first is None:
            return None
        i, m = first
    else:
        valid = [(i, m) for i in pieces for m in _piece_matches(reading, i)
                 if _valid(reading, CLAIMS[_PIECES[i][0]], m, quick=False)]
        historical = [(i, m) for i, m in valid if CLAIMS[_PIECES[i][0]].kind == "failed"
                      and _historical(reading, m.start(), CLAIMS[_PIECES[i][0]], pieces)]
        past = [m.span() for _, m in historical]
        current = [(i, m) for i, m in valid if (i, m) not in historical and not _overlaps(m, past)]
        if not valid:
            return None
        i, m = (current or valid)[0]
    term = CLAIMS[_PIECES[i][0]]
    evidence = _evidence(head, m.group())
    return Claim._made(term.kind, term.language, evidence)  # type: ignore[arg-type]  # CLAIMS kinds are Kind


#: The bytes a raw ASCII text's words are made of when each is a word of ``[a-z0-9]`` (nothing else is
#: left in them: no control character), with white space.
_WORD_OR_SPACE = bytes(range(97, 123)) + bytes(range(48, 58)) + b" \t\n\r\x0b\x0c"


def _words_hold_the_heads(text: str, raw: bytes, camel: bool | None = None) -> bool:
    """Whether an ASCII text's raw words (``raw``: its bytes lower-cased, separators made spaces)
    hold every word of its normalised head, so that they can stand for those in the quick reading
    (:class:`_Reading` reads the words only to rule a cue or a piece out: more words than the head's
    only send a match to the full reading).  The head is the text's first lines with quotations and
    names made " … " (their edges are no part of a word), normalising lower-cases and makes the
    separators spaces as ``raw`` does — unless it splits camelCase (a word the text does not have
    as one), the head is cut at 400 characters (inside a word), or a raw word holds a byte that is
    no letter or digit (a control character: two words there).  ``camel``: :func:`_camel` of the
    text, when the caller has read it already."""
    if camel is None:
        camel = _camel(text)
    return len(text) <= 400 and not camel and not raw.translate(None, _WORD_OR_SPACE)


def _camel(text: str) -> bool:
    """Whether an ASCII text has a camelCase boundary (``aA``, ``AAa``): the boundaries of a text cut
    from it (its head: lines of it, a prefix of a line) are among its own, so a text without any
    has a head without any."""
    return _CAMEL_CASES.search(text.encode("ascii").translate(_CASES)) is not None


def _judge(text: str, *, anchored: bool = True) -> Claim | None:
    """The judgment, a text normalised once: an ASCII text is first checked for a claim word on its
    raw bytes (most texts stop there: :func:`_judge_ascii`); any other is normalised and its
    candidates read from that, and when its head is the whole text (most are) that one normalised
    form is what the pieces read.  ``anchored`` false: every piece, every match, no shortcut (the
    reference of the tests)."""
    if not anchored:
        head = _head(text)
        return _claim(head, quick=False) if head else None
    if text.isascii():
        return _judge_ascii(text)
    return _judge_unicode(text)


def _judge_unicode(text: str, norm: str | None = None) -> Claim | None:
    """:func:`_judge` of a text that is not ASCII: normalised (``norm``, when the caller has), its
    candidates read from that."""
    norm = normalise(text) if norm is None else norm
    candidates = _normalised_candidates(norm)
    if not candidates:
        return None
    return _judge_read(text, norm, candidates)


def _judge_read(text: str, norm: str, candidates: list[int], tokens: AbstractSet[bytes] | None = None) -> Claim | None:
    """:func:`_judge_unicode` once a text's ``candidates`` are read (``_speedups`` reads those of Chinese
    and Japanese text, with ``tokens``: its normalised form's words as :meth:`_Reading.tokens` reads
    them, which stand for the head's where the head is the whole text)."""
    head = _head(text)
    if not head:
        return None
    if head == text:
        return _claim(head, candidates, norm, tokens=tokens)
    norm = _normalise_head(head)
    if _read_head is not None:
        read = _read_head(head, norm, candidates)
        if read is not Ellipsis:
            return read  # type: ignore[no-any-return]  # (a Claim or None: Ellipsis is the Python reading's)
    return _claim(head, candidates, norm)


def _judge_ascii_python(text: str) -> Claim | None:
    """:func:`_judge` of an ASCII text: its raw bytes' words looked up (no normalising for a text
    without a claim word), then its head read.  ``_speedups.judge`` is this in C, where built."""
    raw = text.encode("ascii").translate(_WORD_BYTES)
    words = set(raw.split())
    candidates = _raw_candidates(raw, words)
    if not candidates:
        return None
    head = _head(text)
    if not head:
        return None
    camel = _camel(text)  # (read once: for the words and for normalising the head)
    return _claim(head, candidates, normalise_uncamelled_ascii(head) if not camel and head.isascii() else None,
                  tokens=words if _words_hold_the_heads(text, raw, camel) else None)


#: Characters beyond ASCII a Latin text holds (dashes, currency, degrees, arrows, guillemets) that
#: :func:`normalise` keeps as they are and that are no word character, no white space and none of the
#: marks the rules read (sentence and clause marks, decorations, list bullets, the first character of
#: a Chinese or Japanese piece): ``_speedups`` reads each as a byte of its own in a normalised form where
#: the Python judgment reads the normalised str.  Beyond Latin-1 none is a quotation mark either (the
#: head of a text with one is read through a stand-in that no pattern of ``_head``'s names; « and »
#: stand for themselves there).  (A list of the usual ones, each checked here.)
_INERT = "".join(c for c in "–—€→←£°©®±×§¥¢¦¶‰«»" if normalise(c) == c and not c.isalnum() and not c.isspace()
                 and c not in _FIRSTS and c not in _SENTENCE_MARKS + _DECORATION_MARKS
                 and _DECORATION.match(c) is None and _CLAUSE_END.match(c) is None and _DATA_LINE.match(c + " ") is None
                 and (c <= "\xff" or _QUOTE_OPENS.match(c) is None and c not in _QUOTE_CLOSES))

#: Each piece's kind and language (its term's, in ``CLAIMS``): what ``_speedups`` reads of a piece.
_PIECE_KIND = [CLAIMS[t].kind for t, _ in _PIECES]
_PIECE_LANGUAGE = [CLAIMS[t].language for t, _ in _PIECES]
_PIECE_TERM = [CLAIMS[t] for t, _ in _PIECES]


def _speedups() -> Callable[[str], Claim | None] | None:
    """``_speedups.judge`` (:func:`_judge` in C where a text's words are ASCII) bound to this module's tables,
    patterns and functions; ``None`` where the extension was not built (no C compiler at install) or
    ``TRUECALL_PURE_PYTHON`` is set."""
    if os.environ.get("TRUECALL_PURE_PYTHON"):
        return None
    try:
        from . import _speedups as speedups
    except ImportError:
        return None
    try:
        bound = speedups.bind(dict(globals(), normalise_uncamelled_ascii=normalise_uncamelled_ascii,
                                   _ANY_IN_WORD_search=_ANY_IN_WORD.search, _ANY_ACROSS_search=_ANY_ACROSS.search,
                                   _DATA_LINE_match=_DATA_LINE.match, _NEG_AFTER_match=_NEG_AFTER.match,
                                   _INTRO_match=_INTRO.match, _CLAUSE_END_search=_CLAUSE_END.search,
                                   _REPORTED_search=_REPORTED.search, _DEFINED_search=_DEFINED.search,
                                   _ANSWERED_match=_ANSWERED.match, _HISTORY_search=_HISTORY.search,
                                   _ABOUT_AFTER_match=_ABOUT_AFTER.match, _NEG_ZH_search=_NEG_ZH.search,
                                   _NEG_JA_AFTER_match=_NEG_JA_AFTER.match))
    except (TypeError, ValueError, KeyError, IndexError, MemoryError) as refused:
        # a vocabulary the C tables cannot hold (more literals or longer ones than they keep): the
        # Python judgment runs, and says so (tests/judge/test_speedups.py fails where a compiler is)
        warnings.warn(f"truecall.judge: the C judgment could not take this vocabulary ({refused}); the Python one "
                      "runs", RuntimeWarning, stacklevel=2)
        return None
    if not bound:
        return None  # (bound to the module imported first: this one, imported again, runs in Python)
    return speedups.judge


_fast = _speedups()
#: :func:`normalise` of a head that is not the whole text: in C where ``_speedups`` normalises it.
_normalise_head: Callable[[str], str] = normalise
#: :func:`_claim` of such a head (head, its normalised form, candidates) read in C as ``_speedups`` reads a
#: Chinese or Japanese text, Ellipsis where the Python reading answers; ``None`` where not built.
_read_head: Callable[[str, str, list[int]], Any] | None = None
#: :func:`_any_text_in_python`, in C where ``_speedups`` is bound.
_any_text_in: Callable[[str, tuple[str, ...], re.Pattern[str] | None], bool] = _any_text_in_python
#: :func:`_cjk_pieces_python`, in C where ``_speedups`` is bound and took the anchors.
_cjk_pieces: Callable[[str], Iterable[int]] = _cjk_pieces_python
_fast_result: Callable[[Mapping[str, Any]], Claim | None] | None = None
#: The judgment of one text (no cache): in C where ``_speedups`` was built (text whose normalised form
#: is not ASCII in :func:`_judge_unicode`), else :func:`_judge`.
_judge_one: Callable[[str], Claim | None] = _fast or _judge
#: The judgment of an ASCII text: :func:`_judge_one`'s, or :func:`_judge_ascii_python`.
_judge_ascii: Callable[[str], Claim | None] = _fast or _judge_ascii_python
#: The judgment of a text of at most 512 characters, cached: a client sees the same results again.
_claim_cached = lru_cache(maxsize=2048)(_judge_one)


def claim_in_text(text: str) -> Claim | None:
    """The claim ``text`` makes about the work it was asked to do; ``None`` when it makes none, when
    the claim is negated or a question, or when the text is data (JSON, a log line, a listing, quoted
    file content).  Failure beats acceptance, and acceptance beats completion ("received and will be
    processed" is accepted, not completed)."""
    return _claim_cached(text) if len(text) <= 512 else _judge_one(text)


def claim_in_result(result: Mapping[str, Any]) -> Claim | None:
    """:func:`claim_in_text` over a ``CallToolResult``: only its text blocks count, and of those not
    the ones that are data (JSON, the serialisation of ``structuredContent``); embedded resources,
    links, images and audio are content, never the server's claim."""
    if _fast_result is not None:
        return _fast_result(result)
    return _claim_in_result_python(result)


def _claim_in_result_python(result: Mapping[str, Any]) -> Claim | None:
    """:func:`claim_in_result` in Python (``_speedups.claim_in_result`` is this in C, where built)."""
    content = result.get("content")
    if not isinstance(content, list):
        return None
    best: Claim | None = None
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "text":
            continue
        text = block.get("text")
        if not isinstance(text, str) or not text:
            continue
        claim = _claim_cached(text) if len(text) <= 512 else _judge_one(text)  # (claim_in_text, inline)
        if claim is not None and (best is None or _RANK[claim.kind] < _RANK[best.kind]):
            best = claim
            if claim.kind == "failed":
                break
    return best


if _fast is not None:
    from . import _speedups as _speedups_module

    _speedups_module.bind_results(_claim_cached)
    _fast_result = _speedups_module.claim_in_result
    try:
        _speedups_module.cjk_pieces("")
        _cjk_pieces = _speedups_module.cjk_pieces
    except (RuntimeError, AttributeError):  # (anchors the C tables cannot hold, an older build: the Python look-up)
        pass
    _any_text_in = getattr(_speedups_module, "any_text_in", _any_text_in_python)

    def _normalise_head_in_c(head: str) -> str:
        """:func:`normalise` of a head, made in C where ``_speedups`` makes it (else in Python)."""
        return _speedups_module.normalise(head) or normalise(head)

    _normalise_head = _normalise_head_in_c
    _read_head = getattr(_speedups_module, "wide_claim", None)
