"""Anchors: the words a pattern cannot match without, so that a pattern runs only on text that holds one.

A regular expression of many alternatives is tried at every position of a text (hundreds of
microseconds over 200 characters in CPython); finding a text's words is one ``translate`` and one
``split``.  So every pattern of the vocabulary is run only when the text holds one of its anchors —
for Latin script the whole words every match of it contains (in every spelling its optional letters
and letter classes give, with the endings a group after it may add), for Chinese and Japanese the
first characters of its phrases.  Anchors are a shortcut, never a rule: the tests check that the
anchored judgment equals the one that runs every pattern.
"""

from __future__ import annotations

import re
from typing import Callable, Iterator

__all__ = ["alternatives", "anchors", "ENDINGS", "matches", "starts_word", "top_groups"]

#: Words too common to tell anything (a pattern never matches on them alone).
STOP = frozenset(
    "is are was were has have had been be the a an your you we it its this that to for of on in at by and or "
    "with from into now still just will ll ve de la le les el los las su tu se der die das den des ist sind wurde "
    "wurden est sont ete en et y un une del al ha han sido fue fueron mise mis".split())
#: ... and words that rarely stand alone in a phrase: anchors only where the phrase has no other.
WEAK = frozenset(
    "as os es du id im all up off out go con para pour dans not no nicht miss does did back know file number job "
    "task order request message payment report application instruction submission review approval confirmation "
    "execution way".split())


def _without_lookarounds(pattern: str) -> str:
    if "(?=" not in pattern and "(?!" not in pattern and "(?<" not in pattern:
        return pattern  # (most pieces: the character loop below is most of what building them costs)
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


_ATOMS = re.compile(r"(?:[a-z0-9]|\[[a-z0-9]+\])\??")


def _spellings(run: str) -> set[str]:
    """Every word a run of letters, letter classes and optional letters (``aceptad[oa]``,
    ``acceptee?s?``) spells."""
    if "?" not in run and "[" not in run:
        return {run}  # a plain word (most runs) spells itself
    words = {""}
    for atom in _ATOMS.findall(run):
        optional = atom.endswith("?")
        letters = atom.rstrip("?").strip("[]")
        words = {w + c for w in words for c in letters} | (words if optional else set())
    return words


_RUN = re.compile(r"(?:[a-z0-9]|\[[a-z0-9]+\])(?:[a-z0-9]|\[[a-z0-9]+\]|\?)*")


def _top_level(source: str) -> str:
    """``source`` with every top-level group (and its quantifier) blanked by ``\x00``: what is left
    is what every match goes through, in order."""
    out, depth, i = [], 0, 0
    while i < len(source):
        ch = source[i]
        if ch == "[":
            end = class_end(source, i)
            out.append("\x00" * (end - i) if depth else source[i:end])
            i = end
            continue
        if ch == "\\":
            out.append("\x00" if depth else source[i:i + 2])
            i += 2
            continue
        if ch == "(":
            depth += 1
        if depth:
            out.append("\x00")
        else:
            out.append(ch)
        if ch == ")":
            depth -= 1
            if depth == 0 and source[i + 1:i + 2] in ("?", "*", "+", "{"):
                j = i + 1 + (source[i + 1:].index("}") + 1 if source[i + 1] == "{" else 1)
                out.append("\x00" * (j - i - 1))
                i = j
                continue
        i += 1
    return "".join(out)


def _words(run: str) -> set[str]:
    return {w for w in _spellings(run) if len(w) > 1}


def anchors(pattern: str, *, cjk_pairs: bool = False) -> tuple[set[str], set[str]]:
    """The words (Latin) and first characters (Chinese, Japanese) a match of ``pattern`` (one
    alternative: see :func:`alternatives`) holds one of — sound: every match holds one.

    Latin: the spellings of one word every match goes through whole (a run of letters at the top
    level, between spaces or the pattern's ends, not a word too common to tell anything — the
    longest such); where there is none, every word the pattern spells but the common ones, which
    is sound as long as no branch of a group is common words only (a test checks every pattern of
    the vocabulary on generated matches).  ``cjk_pairs``: a run's first two characters where a
    match must hold both (``已受理`` → ``已受``; ``完成了?`` → ``完``): one character such as ``已``
    begins dozens of phrases, two tell them apart."""
    bare = _without_lookarounds(pattern)
    source = re.sub(r"\\[a-zA-Z]", " ", bare)
    glued = re.sub(r"\\[a-zA-Z]", "\x00", re.sub(r"\\s", " ", bare))  # \s a space, \w… a letter (no word's edge)
    top = _top_level(glued)
    required: list[set[str]] = []
    if not re.search(r" [?*{]|\|", top):  # no optional space ("pin ?code" is "pincode" too), no alternation
        for m in _RUN.finditer(top):
            before, after = top[m.start() - 1:m.start()], top[m.end():m.end() + 1]
            if before not in ("", " ") or after not in ("", " "):
                continue  # glued to a group, a class or a wildcard: not a whole word
            words = _spellings(m.group())
            if all(len(w) > 1 for w in words) and words.isdisjoint(STOP) and words.isdisjoint(WEAK):
                required.append(words)
    if required:
        words = max(required, key=lambda ws: min(len(w) for w in ws))
    else:  # (a run glued to a letter class — "ge\w+t" — is no word of its own: left out)
        every = {w for text in (glued, glued.replace(" ?", ""))  # "pin ?code" is "pincode" too
                 for m in _RUN.finditer(text)
                 if "\x00" not in (text[m.start() - 1:m.start()] + text[m.end():m.end() + 1])
                 and "." not in (text[m.start() - 1:m.start()] + text[m.end():m.end() + 1])
                 for w in _words(m.group())}
        words = (every - STOP) or every
    cjk = {(m.group()[:2] if cjk_pairs and (len(m.group()) > 2 or source[m.end():m.end() + 1] not in ("?", "*", "{"))
            else m.group()[0]) for m in CJK_RUN.finditer(source)}
    return words, cjk


#: Endings a group after the word may add (``(creee?|envoyee?)s?``): the anchors hold those forms too.
ENDINGS = ("", "s", "e", "es", "n", "en", "o", "a", "os", "as")
CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]+")


def class_end(pattern: str, i: int) -> int:
    """The index after the character class that opens at ``pattern[i]`` (a ``]`` first in it, or
    escaped, is one of its characters)."""
    j = i + 1
    if pattern[j:j + 1] == "^":
        j += 1
    if pattern[j:j + 1] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def scan(pattern: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """Each structural character of a pattern from ``start`` with its position and the group depth
    before it (counted from ``start``); escapes and character classes are stepped over."""
    depth, i = 0, start
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i = class_end(pattern, i)
            continue
        yield i, ch, depth
        depth += {"(": 1, ")": -1}.get(ch, 0)
        i += 1


def alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern (``a|b(c|d)|e`` → ``a``, ``b(c|d)``, ``e``)."""
    parts, start = [], 0
    for i, ch, depth in scan(pattern):
        if ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    return parts + [pattern[start:]]


def top_groups(pattern: str) -> list[tuple[int, int]]:
    """The top-level groups of a pattern, ``(index of "(", index of ")")`` each."""
    groups, opened = [], -1
    for i, ch, depth in scan(pattern):
        if ch == "(" and depth == 0:
            opened = i
        elif ch == ")" and depth == 1:
            groups.append((opened, i))
    return groups


#: (A bound beyond any text's length: "no bound" while bounds are added and multiplied.)
_NO_BOUND = 1 << 40
_QUANTIFIER = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")
#: Escapes of one character that may be a space, that may not, and that consume nothing.
_SPACE_ESCAPES, _WORD_ESCAPES, _ZERO_ESCAPES = "sWD", "wdSntrfv", "bBAZ"


class _Unknown(Exception):
    """A construct :func:`bounds` does not read (a back-reference, inline flags, an atomic group)."""


def bounds(pattern: str) -> tuple[int, int]:
    """The most characters a match of ``pattern`` spans and the most spaces (U+0020) it holds; -1 where
    either has no bound (``\\w+`` spans any number of characters but holds no space; ``.+`` bounds
    neither) or the pattern holds a construct not read here.  Read from the pattern's text: its
    literals, escapes, classes, groups, alternatives and quantifiers (look-arounds and anchors consume
    nothing)."""
    try:
        width, spaces, end = _sequence(pattern, 0)
    except (_Unknown, IndexError, ValueError):
        return -1, -1
    if end != len(pattern):
        return -1, -1
    return (width if width < _NO_BOUND else -1), (spaces if spaces < _NO_BOUND else -1)


def _sequence(p: str, i: int) -> tuple[int, int, int]:
    """Alternatives from ``p[i]`` up to an unmatched ``)`` or the end: (width, spaces, where it ended)."""
    widest = spaces = width = space = 0
    while i < len(p) and p[i] != ")":
        if p[i] == "|":
            widest, spaces = max(widest, width), max(spaces, space)
            width = space = 0
            i += 1
            continue
        w, s, i = _atom(p, i)
        m = _QUANTIFIER.match(p, i) if i < len(p) and p[i] == "{" else None
        if i < len(p) and p[i] in "?*+":
            most = 1 if p[i] == "?" else _NO_BOUND
            i += 1
        elif m is not None and (m.group(1) or m.group(3)):
            most = int(m.group(3)) if m.group(3) else _NO_BOUND if m.group(2) else int(m.group(1))
            i = m.end()
        else:
            most = -1
        if most >= 0:
            if i < len(p) and p[i] in "?+":  # (lazy, possessive)
                i += 1
            w, s = (0 if w == 0 else min(w * most, _NO_BOUND)), (0 if s == 0 else min(s * most, _NO_BOUND))
        width, space = min(width + w, _NO_BOUND), min(space + s, _NO_BOUND)
    return max(widest, width), max(spaces, space), i


def _atom(p: str, i: int) -> tuple[int, int, int]:
    """One atom at ``p[i]``: (width, spaces, the index after it)."""
    ch = p[i]
    if ch == "(":
        if p.startswith(("(?=", "(?!"), i) or p.startswith(("(?<=", "(?<!"), i):
            _, _, end = _sequence(p, i + (3 if p[i + 2] in "=!" else 4))
            return 0, 0, _closed(p, end)
        if p.startswith("(?:", i) or p.startswith("(?P<", i) or not p.startswith("(?", i):
            start = i + 3 if p.startswith("(?:", i) else p.index(">", i) + 1 if p.startswith("(?P<", i) else i + 1
            w, s, end = _sequence(p, start)
            return w, s, _closed(p, end)
        raise _Unknown(p[i:i + 4])
    if ch == "[":
        end = class_end(p, i)
        return 1, int(_class_takes_space(p[i + 1:end - 1])), end
    if ch == "\\":
        e = p[i + 1]
        if e in _ZERO_ESCAPES:
            return 0, 0, i + 2
        if e in _SPACE_ESCAPES:
            return 1, 1, i + 2
        if e in _WORD_ESCAPES:
            return 1, 0, i + 2
        if e.isdigit() or e.isalpha():  # (a back-reference, \x, \u, \N…: not read here)
            raise _Unknown(p[i:i + 2])
        return 1, int(e == " "), i + 2
    if ch in "^$":
        return 0, 0, i + 1
    if ch == ".":
        return 1, 1, i + 1
    return 1, int(ch == " "), i + 1


def _closed(p: str, end: int) -> int:
    if p[end:end + 1] != ")":
        raise _Unknown("an unclosed group")
    return end + 1


def _class_takes_space(body: str) -> bool:
    """Whether a character class (its text between the brackets) takes a space."""
    negated = body.startswith("^")
    j, takes = (1 if negated else 0), False
    while j < len(body):
        if body[j] == "\\":
            e = body[j + 1]
            if e in _SPACE_ESCAPES:
                takes = True
            elif e in _WORD_ESCAPES or e in "bB":
                pass
            elif e.isalnum():
                raise _Unknown("\\" + e)  # (\x20, \u…: not read here)
            else:
                takes = takes or e == " "
            j += 2
            continue
        if j + 2 < len(body) and body[j + 1] == "-" and body[j + 2] != "\\":
            takes = takes or body[j] <= " " <= body[j + 2]
            j += 3
            continue
        takes = takes or body[j] == " "
        j += 1
    return takes != negated


def starts_word(text: str, at: int) -> bool:
    """Whether ``at`` starts a word of normalised text (no letter or digit before it)."""
    return at == 0 or not ("a" <= text[at - 1] <= "z" or "0" <= text[at - 1] <= "9")


def matches(pattern: re.Pattern[str], text: str, starts: Callable[[str, int], bool] | None,
            at: int = 0) -> list[re.Match[str]]:
    """Every match of ``pattern`` in ``text`` from ``at`` on whose start passes ``starts`` (what a
    look-behind at the pattern's start would have said: patterns start with their own characters,
    which lets the engine skip ahead, and the start is checked here); a start that fails is tried
    again one character on."""
    found: list[re.Match[str]] = []
    while True:
        m = pattern.search(text, at)
        if m is None:
            return found
        start = m.start()
        if starts is None or starts(text, start):
            found.append(m)
            at = max(m.end(), start + 1)
        else:
            at = start + 1
