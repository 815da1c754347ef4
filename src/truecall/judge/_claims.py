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

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, Mapping

import orjson

from ._normalise import normalise
from ._vocabulary import (AFTER_NEGATIONS, CLAIM_ABOUT_AFTER, CLAIMS, CONTRASTS, DATA_INTROS, NEGATIONS, NONE_COUNTS,
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


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")


_RANK = {"failed": 0, "accepted": 1, "completed": 2}

# -- anchors: which terms a text could hold, found with a few C-level string operations ------------
#
# A regular expression of hundreds of alternatives costs hundreds of microseconds over a 200-character
# text in CPython (every alternative is tried at every position).  So each term is run only when the
# text holds one of its *anchors*: the words its pattern cannot match without (a whole word, in every
# form the pattern's optional letters and letter classes give it), or, for Chinese and Japanese, the
# first character of one of its phrases.  Finding the text's words is one ``bytes.translate`` and one
# ``split``; a text none of whose words is an anchor makes no claim and costs nothing more.

#: Words too common to tell anything (a pattern never matches on them alone).
_STOP = frozenset(
    "is are was were has have had been be the a an your you we it its this that to for of on in at by and or "
    "with from into now still just will ll ve de la le les el los las su tu se der die das den des ist sind wurde "
    "wurden est sont ete en et y un une del al ha han sido fue fueron mise mis".split())
#: ... and words that rarely stand alone in a phrase: anchors only where the phrase has no other.
_WEAK = frozenset(
    "as os es du id im all up off out go con para pour dans not no nicht miss does did back know file number job "
    "task order request message payment report application instruction submission review approval confirmation "
    "execution way".split())


def _without_lookarounds(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith(("(?!", "(?=", "(?<!", "(?<="), i):
            depth = 0
            while i < len(pattern):
                if pattern[i] == "\\":
                    i += 2
                    continue
                depth += {"(": 1, ")": -1}.get(pattern[i], 0)
                i += 1
                if depth == 0:
                    break
            continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


_ATOMS = re.compile(r"(?:[a-z]|\[[a-z]+\])\??")


def _spellings(run: str) -> set[str]:
    """Every word a run of letters, letter classes and optional letters (``aceptad[oa]``,
    ``acceptee?s?``) spells."""
    words = {""}
    for atom in _ATOMS.findall(run):
        optional = atom.endswith("?")
        letters = atom.rstrip("?").strip("[]")
        words = {w + c for w in words for c in letters} | (words if optional else set())
    return words


def _anchors(term: Term) -> tuple[set[str], set[str]]:
    """The words (Latin) and first characters (Chinese, Japanese) a match of ``term`` holds one of."""
    source = re.sub(r"\\[a-zA-Z]", " ", _without_lookarounds(term.pattern))
    every = {w for run in re.findall(r"(?:[a-z]|\[[a-z]+\])(?:[a-z]|\[[a-z]+\]|\?)*", source)
             for w in _spellings(run) if len(w) > 1}
    words = (every - _STOP - _WEAK) or (every - _STOP) or every
    cjk = {run[0] for run in _CJK_RUN.findall(source)}
    return words, cjk


#: Endings a group after the word may add (``(creee?|envoyee?)s?``): the anchors hold those forms too.
_ENDINGS = ("", "s", "e", "es", "n", "en", "o", "a", "os", "as")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]+")


def _alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern (``a|b(c|d)|e`` → ``a``, ``b(c|d)``, ``e``)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i = pattern.index("]", i + 1) + 1
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    return parts + [pattern[start:]]


#: Every alternative of every term, run on its own when the text holds one of its anchors: (index of
#: its term in CLAIMS, the alternative as a term of its own).
_PIECES: list[tuple[int, Term]] = [(i, term._replace(pattern=alt)) for i, term in enumerate(CLAIMS)
                                   for alt in _alternatives(term.pattern)]
_BY_WORD: dict[str, list[int]] = {}
_BY_CHAR: dict[str, list[int]] = {}
_COMPOUND: list[tuple[bytes, int]] = []  # ASCII stems that may end a longer word ("verbindungsfehler")
for _i, (_, _piece) in enumerate(_PIECES):
    _latin, _cjk = _anchors(_piece)
    assert _latin or _cjk, f"a claim pattern without an anchor word: {_piece.pattern}"
    for _w in _latin:
        for _ending in _ENDINGS:
            _BY_WORD.setdefault(_w + _ending, []).append(_i)
    if _piece.compound:  # its words may end a longer one ("verbindungsfehler"): looked for inside the bytes
        _COMPOUND += [(w.encode(), _i) for w in sorted(_latin)]
    for _c in _cjk:
        _BY_CHAR.setdefault(_c, []).append(_i)
_WORDS = frozenset(_BY_WORD)
_CHARS = frozenset(_BY_CHAR)


def _piece_regex(piece: Term) -> tuple[re.Pattern[str], bool, bool]:
    """A piece compiled to start with its own first characters (a look-behind first would make the
    engine try every position: 15 µs where a literal start takes 1); that it starts a word (Latin
    terms) or a sentence (a pattern that starts with ``^``) is checked after a match: (regex, needs a
    word start, needs a sentence start)."""
    pattern, at_sentence = piece.pattern, piece.pattern.startswith("^")
    assert "^" not in pattern[1:], f"'^' inside a claim pattern's alternative: {pattern}"
    pattern = pattern.lstrip("^")
    if _CJK.search(piece.pattern):
        return re.compile(pattern), False, at_sentence
    if piece.compound:
        return re.compile(f"(?:{pattern})(?:s|n|en|e)?(?![a-z0-9])"), False, at_sentence
    return re.compile(f"(?:{pattern})(?![a-z0-9])"), True, at_sentence


_SINGLE = [_piece_regex(piece) for _, piece in _PIECES]
_EVERY = list(range(len(_PIECES)))
_ENDS = frozenset(".!?;:\n。！？；：")


def _starts_word(norm: str, at: int) -> bool:
    return at == 0 or not ("a" <= norm[at - 1] <= "z" or "0" <= norm[at - 1] <= "9")


def _starts_sentence(norm: str, at: int) -> bool:
    return at == 0 or norm[at - 1] in _ENDS or (norm[at - 1] == " " and at >= 2 and norm[at - 2] in _ENDS)


def _piece_matches(norm: str, i: int) -> list[re.Match[str]]:
    regex, word, sentence = _SINGLE[i]
    found: list[re.Match[str]] = []
    at = 0
    while True:
        m = regex.search(norm, at)
        if m is None:
            return found
        start = m.start()
        if (not word or _starts_word(norm, start)) and (not sentence or _starts_sentence(norm, start)):
            found.append(m)
            at = m.end() if m.end() > start else start + 1
        else:
            at = start + 1
#: Lower case, and every character that is not part of a word a space: then ``split`` gives words.
_SEPARATORS = b"\t\n\r.,;:!?()[]{}<>\"'`_-/\\|*#=+&%$@~^"
_WORD_BYTES = bytes.maketrans(bytes(range(65, 91)) + _SEPARATORS, bytes(range(97, 123)) + b" " * len(_SEPARATORS))


def _candidates(text: str) -> list[int]:
    """The pieces (alternatives of terms) ``text`` could match, by its anchors; empty for most texts."""
    found: set[int] = set()
    if text.isascii():
        raw = text.encode("ascii").translate(_WORD_BYTES)
        words = _WORDS.intersection(raw.decode("ascii").split())
        for stem, i in _COMPOUND:
            if stem in raw:
                found.add(i)
    else:
        norm = normalise(text)
        words = _WORDS.intersection(norm.encode("utf-8").translate(_WORD_BYTES).decode("utf-8").split())
        if not _CHARS.isdisjoint(norm):
            for ch in _CHARS.intersection(norm):
                found.update(_BY_CHAR[ch])
        for stem, i in _COMPOUND:
            if stem.decode() in norm:
                found.add(i)
    for w in words:
        found.update(_BY_WORD[w])
    return sorted(found)

# -- data ------------------------------------------------------------------------------------------

#: A line that is data from its first character: a heading, a list item, a table row, code, a
#: quotation, a listing entry, an indented block, a log line (a timestamp first).
_DATA_LINE = re.compile(
    r"\s*(?:#{1,6}\s|#\d+\s|[-*+•·]\s|\d+[.)]\s|\||```|>\s|\[(?:FILE|DIR|file|dir)\]|[{\[<]|"
    r"\d{4}[-/]\d\d[-/]\d\d[ T]\d\d:\d\d|\[?\d\d:\d\d:\d\d|\[(?:INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL)\])|\t|    |"
    # a line of code, a config assignment, a CSV header, a mail header
    r"(?:def|class|import|from|function|const|let|var|public|private|package|async def|return)\s+\w|"
    r"[\w.-]+\s?=\s?\S|[^,\s]+(?:,[^,\s]*)+$|(?:From|To|Cc|Subject|Date|Reply-To):\s")
#: Quoted content (it is what something says, not what the server claims), paths, URLs and file names.
_QUOTED = re.compile(  # every branch starts with its quote character: the engine skips to those
    r"\"[^\"\n]{0,400}\"|\u201c[^\u201d\n]{0,400}\u201d|\u2018[^\u2019\n]{0,400}\u2019|«[^»\n]{0,400}»|"
    r"「[^」\n]{0,400}」|『[^』\n]{0,400}』|《[^》\n]{0,400}》|„[^“”\n]{0,400}[“”]|`[^`\n]{0,400}`|'[^'\n]{1,400}'")
#: Paths, URLs, file names, command-line flags: names, not words of a claim (looked for only when the
#: text has a character they need).
_NAMES = re.compile(
    r"(?<!\S)--?[A-Za-z][\w-]*|(?<!\S)[^\s/\\]*[/\\]\S*|"
    r"(?<![\w.-])[\w.-]+\.(?:txt|md|json|jsonl|log|csv|py|js|ts|yaml|yml|toml|html|xml|pdf|png|jpg|sh|cfg|ini)\b", re.I)
_NAME_HINT = re.compile(r"[/\\]|\.(?:txt|md|json|jsonl|log|csv|py|js|ts|yaml|yml|toml|html|xml|pdf|png|jpg|sh|cfg|ini)\b|"
                        r"(?<!\S)-", re.I)


def _unquote(match: re.Match[str]) -> str:
    text = match.group()
    if text[0] == "'" and (match.start() > 0 and match.string[match.start() - 1].isalnum()
                           or match.end() < len(match.string) and match.string[match.end()].isalnum()):
        return text  # an apostrophe ("don't ... it's"), not a quotation
    return " \u2026 "
_INTRO = re.compile(r"^[^:：\n]{0,30}?(?<!\w)(?:" + "|".join(re.escape(w) for w in every(DATA_INTROS)) +
                    r")(?!\w)[^:：\n]{0,60}[:：]", re.I)


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
    lines = text.split("\n", 3)
    if _DATA_LINE.match(lines[0]):
        return ""
    head = []
    for line in lines[:3]:
        if not line.strip() or _DATA_LINE.match(line):
            break
        intro = _INTRO.match(line)
        if intro:
            head.append(line[:intro.end() - 1])
            break
        head.append(line)
    text = _QUOTED.sub(_unquote, "\n".join(head)[:400])
    return _NAMES.sub(" \u2026 ", text) if _NAME_HINT.search(text) else text


# -- reading a match ----------------------------------------------------------------------------


def _alternation(words: tuple[str, ...]) -> str:
    """Latin words as whole words, Chinese and Japanese ones as they stand."""
    return "|".join(re.escape(w) if _CJK.search(w) else f"(?<![a-z0-9]){re.escape(w)}(?![a-z0-9])" for w in words)


_CLAUSE_END = re.compile(r"[.!?;\n。！？；,，、]|" + _alternation(every(CONTRASTS)))
_SENTENCE_END = re.compile(r"[.!?\n。！？]")
_WORD = re.compile(r"[a-z0-9]+")
_ABOUT_AFTER = re.compile(r"(?: (?:" + "|".join(re.escape(w) for w in every(CLAIM_ABOUT_AFTER) if not _CJK.search(w)) +
                          r")(?![a-z0-9])|(?:" + "|".join(w for w in every(CLAIM_ABOUT_AFTER) if _CJK.search(w)) + "))")
_REPORTED = re.compile(r"(?<![a-z0-9])(?:" + "|".join(re.escape(w) for w in every(REPORTED_SPEECH)) + r")(?![a-z0-9])")
_NEG_ZH = re.compile("(?:" + "|".join(NEGATIONS["zh"]) + r")\s?$")
_NEG_JA_AFTER = re.compile(r"^.{0,5}?(?:" + "|".join(AFTER_NEGATIONS["ja"]) + ")")
_NEG_AFTER = re.compile(r"\s?[:=]\s?(?:" + _alternation(every(NONE_COUNTS)) + ")")
_YES_NO = re.compile(_alternation(every(YES_NO_MARKS)))
_LATIN_NEG = {lang: frozenset(cues) for lang, cues in NEGATIONS.items() if lang not in ("zh", "ja")}
_ALL_LATIN_NEG = frozenset().union(*_LATIN_NEG.values())


def _negated(norm: str, start: int, end: int, term: Term) -> bool:
    clause_start = max((m.end() for m in _CLAUSE_END.finditer(norm, 0, start)), default=0)
    before = norm[clause_start:start]
    if _NEG_AFTER.match(norm, end):
        return True
    if term.language == "zh":
        return bool(_NEG_ZH.search(before))
    if term.language == "ja":
        tail = norm[end:end + 8]
        return bool(_NEG_JA_AFTER.match(tail)) and "ません" not in norm[start:end]
    cues = _LATIN_NEG.get(term.language, _ALL_LATIN_NEG)
    words = _WORD.findall(before)[-4:]
    if any(w in cues for w in words):
        return True
    if term.language == "de":  # "wurde angenommen? nein" is rare; "wurde nicht angenommen" is caught above
        return norm[end:end + 7].startswith((" nicht", " keine"))
    return False


def _question(norm: str, start: int, end: int) -> bool:
    sentence_start = max((m.end() for m in _SENTENCE_END.finditer(norm, 0, start)), default=0)
    m = _SENTENCE_END.search(norm, end)
    stop = m.start() if m else len(norm)
    mark = norm[stop:stop + 1]
    sentence = norm[sentence_start:stop]
    if mark in ("?", "？") or "¿" in sentence:
        return True
    return bool(_YES_NO.search(sentence))


def _reported(norm: str, start: int) -> bool:
    """Whether the word is in someone else's reported words ("the vendor said the order is pending")."""
    sentence_start = max((m.end() for m in _SENTENCE_END.finditer(norm, 0, start)), default=0)
    return bool(_REPORTED.search(norm, sentence_start, start))


def _evidence(original: str, phrase: str) -> str:
    lowered = original.casefold()
    at = lowered.find(phrase)
    if at >= 0:
        return original[at:at + len(phrase)][:80]
    return phrase[:80]


def _valid(norm: str, term: Term, m: re.Match[str]) -> bool:
    """Whether a match is a claim: not a topic ("error rate"), not negated, not asked, not reported."""
    start, end = m.span()
    return not (_ABOUT_AFTER.match(norm, end) or _negated(norm, start, end, term) or _question(norm, start, end)
                or _reported(norm, start))


def _claim(head: str, candidates: list[int] | None = None) -> Claim | None:
    """The claim of the head: the first valid match of the highest-ranked kind (failed, then accepted,
    then completed), a kind at a time, stopping at the first kind that has a valid match.  Only the
    ``candidates`` pieces run; without them, every piece (the reference the anchors are tested
    against)."""
    norm = normalise(head)
    found: tuple[Term, re.Match[str]] | None = None
    for kind in ("failed", "accepted", "completed"):
        matches = sorted(((CLAIMS[_PIECES[i][0]], m) for i in candidates or _EVERY if _PIECES[i][1].kind == kind
                          for m in _piece_matches(norm, i)), key=lambda tm: tm[1].start())
        found = next(((term, m) for term, m in matches if _valid(norm, term, m)), None)
        if found is not None:
            break
    if found is None:
        return None
    term, m = found
    return Claim(term.kind, term.language, _evidence(head, m.group()))  # type: ignore[arg-type]


def _judge(text: str, *, anchored: bool = True) -> Claim | None:
    candidates = _candidates(text) if anchored else None
    if candidates == []:
        return None
    head = _head(text)
    return _claim(head, candidates) if head else None


@lru_cache(maxsize=2048)
def _claim_cached(text: str) -> Claim | None:
    return _judge(text)


def claim_in_text(text: str) -> Claim | None:
    """The claim ``text`` makes about the work it was asked to do; ``None`` when it makes none, when
    the claim is negated or a question, or when the text is data (JSON, a log line, a listing, quoted
    file content).  Failure beats acceptance, and acceptance beats completion ("received and will be
    processed" is accepted, not completed)."""
    if len(text) <= 512:
        return _claim_cached(text)
    return _judge(text)


def claim_in_result(result: Mapping[str, Any]) -> Claim | None:
    """:func:`claim_in_text` over a ``CallToolResult``: only its text blocks count, and of those not
    the ones that are data (JSON, the serialisation of ``structuredContent``); embedded resources,
    links, images and audio are content, never the server's claim."""
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
        claim = claim_in_text(text)
        if claim is not None and (best is None or _RANK[claim.kind] < _RANK[best.kind]):
            best = claim
            if claim.kind == "failed":
                break
    return best
