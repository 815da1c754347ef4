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
from ._vocabulary import CLAIM_ABOUT_AFTER, CLAIMS, DATA_INTROS, NEGATIONS, Term

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
_SENTENCE_START = r"(?:^|(?<=[.!?;:\n。！？；：] )|(?<=[.!?;:\n。！？；：]))"


def _compile(terms: tuple[Term, ...]) -> re.Pattern[str]:
    parts = []
    for i, term in enumerate(terms):
        pattern = term.pattern
        if pattern.startswith("^"):
            pattern = _SENTENCE_START + "(?:" + pattern[1:] + ")"
        if _CJK.search(term.pattern):
            parts.append(f"(?P<t{i}>{pattern})")
        elif term.compound:  # also the end of a word written together ("Verbindungsfehler")
            parts.append(f"(?P<t{i}>(?:{pattern})(?:s|n|en|e)?(?![a-z0-9]))")
        else:
            parts.append(f"(?P<t{i}>(?<![a-z0-9])(?:{pattern})(?![a-z0-9]))")
    return re.compile("|".join(parts), re.M)


_CLAIMS_RE = _compile(CLAIMS)
_TERMS = {f"t{i}": term for i, term in enumerate(CLAIMS)}
_RANK = {"failed": 0, "accepted": 1, "completed": 2}

# -- data ------------------------------------------------------------------------------------------

#: A line that is data from its first character: a heading, a list item, a table row, code, a
#: quotation, a listing entry, an indented block, a log line (a timestamp first).
_DATA_LINE = re.compile(
    r"\s*(?:#{1,6}\s|[-*+•·]\s|\d+[.)]\s|\||```|>\s|\[(?:FILE|DIR|file|dir)\]|[{\[<]|\d{4}[-/]\d\d[-/]\d\d[ T]\d\d:\d\d|"
    r"\[?\d\d:\d\d:\d\d|\[(?:INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL)\])|\t|    ")
#: Quoted content (it is what something says, not what the server claims), paths, URLs and file names.
_QUOTED = re.compile(
    r"\"[^\"\n]{0,400}\"|\u201c[^\u201d\n]{0,400}\u201d|\u2018[^\u2019\n]{0,400}\u2019|«[^»\n]{0,400}»|"
    r"「[^」\n]{0,400}」|『[^』\n]{0,400}』|`[^`\n]{0,400}`|(?<![\w])'[^'\n]{1,400}'(?![\w])|"
    r"\S*[/\\]\S+|\b[\w.-]+\.(?:txt|md|json|jsonl|log|csv|py|js|ts|yaml|yml|toml|html|xml|pdf|png|jpg|sh|cfg|ini)\b",
    re.I)
_INTRO = re.compile(r"^\s*(?:" + "|".join(re.escape(w) for w in DATA_INTROS) + r")\b[^:：\n]{0,60}[:：]", re.I)
_NEG_EN = NEGATIONS


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
    return _QUOTED.sub(" \u2026 ", "\n".join(head)[:400])


# -- reading a match ----------------------------------------------------------------------------

_CLAUSE_END = re.compile(r"[.!?;\n。！？；,，、]| but | however | aber | pero | mais |但|が、")
_SENTENCE_END = re.compile(r"[.!?\n。！？]")
_WORD = re.compile(r"[a-z0-9]+")
_ABOUT_AFTER = tuple(" " + w for w in CLAIM_ABOUT_AFTER)
_NEG_ZH = re.compile("(?:" + "|".join(NEGATIONS["zh"]) + r")\s?$")
_NEG_JA_AFTER = re.compile(r"^.{0,5}?(?:ありません|ないです|ない|なし|ません)")
_NEG_AFTER = re.compile(r"\s?[:=]\s?(?:0|none|no|keine|aucune?|ninguno|无|なし)\b")
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
        return not term.pattern.endswith("ません") and bool(_NEG_JA_AFTER.match(tail)) and "ません" not in norm[start:end]
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
    return bool(re.search(r"吗|是否|有没有|ですか|ますか", sentence))


def _evidence(original: str, phrase: str) -> str:
    lowered = original.casefold()
    at = lowered.find(phrase)
    if at >= 0:
        return original[at:at + len(phrase)][:80]
    return phrase[:80]


def _claim(head: str) -> Claim | None:
    norm = normalise(head)
    best: tuple[int, Term, str] | None = None
    for m in _CLAIMS_RE.finditer(norm):
        term = _TERMS[m.lastgroup or ""]
        start, end = m.span()
        if norm.startswith(_ABOUT_AFTER, end) or _negated(norm, start, end, term) or _question(norm, start, end):
            continue
        rank = _RANK[term.kind]
        if best is None or rank < best[0]:
            best = (rank, term, m.group())
            if rank == 0:
                break
    if best is None:
        return None
    _, term, phrase = best
    return Claim(term.kind, term.language, _evidence(head, phrase))  # type: ignore[arg-type]


@lru_cache(maxsize=2048)
def _claim_cached(text: str) -> Claim | None:
    head = _head(text)
    return _claim(head) if head else None


def claim_in_text(text: str) -> Claim | None:
    """The claim ``text`` makes about the work it was asked to do; ``None`` when it makes none, when
    the claim is negated or a question, or when the text is data (JSON, a log line, a listing, quoted
    file content).  Failure beats acceptance, and acceptance beats completion ("received and will be
    processed" is accepted, not completed)."""
    if len(text) <= 512:
        return _claim_cached(text)
    head = _head(text)
    return _claim(head) if head else None


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
