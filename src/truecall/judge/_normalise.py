"""The one text normaliser every rule of the judge reads through.

A word list compared with raw text is beaten by a spelling: ``pаssword`` with a Cyrillic ``а``,
``ｐａｓｓｗｏｒｄ`` in fullwidth letters, ``pass\u200bword`` with a zero-width space, ``ṗassword``
with a dot above, ``dbPassword`` written the way code writes names.  So text is brought to one
form first, and the vocabulary (normalised the same way when it is loaded) is compared with that.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["normalise", "normalise_name", "irregular_case"]

#: Characters that render as nothing: zero-width space/joiners, word joiner, BOM, soft hyphen,
#: the Mongolian vowel separator and the bidi marks (used to hide a word inside another).
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u180e"
                                     "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"), None)

#: Letters of other scripts that look like Latin ones (Unicode's confusables, the ones that matter
#: for words: Cyrillic and Greek lower case after case folding, and a few Latin look-alikes).
_CONFUSABLES = str.maketrans({
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t",
    "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l",
    "ɡ": "g", "ɑ": "a",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "ω": "w", "ς": "s", "σ": "s",
    # Latin look-alikes that NFKC keeps
    "ı": "i", "ȷ": "j", "ł": "l", "ø": "o", "đ": "d", "ħ": "h",
})

#: Combining marks of the Latin range (accents, dots above and below): removed after decomposing,
#: so ``ṗ`` is ``p`` and ``contraseña`` is ``contrasena``.  Japanese voicing marks (U+3099/309A) are
#: outside this range and stay.
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")
#: camelCase / PascalCase / ABBRWord boundaries.
#: Accents typed as characters of their own after the letter they belong to (``cre´e´``, ``cafe¨``,
#: ``creˊe``: spacing accents and modifier letters, which NFKC would make a space and a mark, cutting
#: the word in two): removed like the combining marks they stand for.  Only after a letter: alone
#: they are symbols.
_SPACING_ACCENTS = re.compile("[\u00a8\u00b4\u00b8\u02c6-\u02cb\u02d8-\u02dd]+")  # (a class first: scanned for at once)
#: UTF-8 read as Latin-1 or Windows-1252 (``crÃ©Ã©`` for ``créé``): a lead character ``Â Ã Å``
#: (bytes C2 C3 C5) and its continuation characters (bytes 80–BF as either code page shows them).
#: Compiled when a text first holds a lead character (rare: not every process pays for it).
_MOJIBAKE_PATTERN = ("[\u00c2\u00c3\u00c5][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e"
                     "\u0192\u02c6\u02dc\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a"
                     "\u20ac\u2122]")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
#: Whether a text holds any of the characters a table maps, or a camelCase boundary: a class or a
#: pair scanned for at once, where ``translate`` with a dictionary looks every character up (~0.1 µs
#: each) and ``_CAMEL`` (look-behinds first) is tried at every position.
_ANY_INVISIBLE = re.compile("[" + "".join(map(chr, _INVISIBLE)) + "]")
_ANY_CONFUSABLE = re.compile("[" + "".join(map(chr, _CONFUSABLES)) + "]")
#: (Whether a text holds one: the class alone, which the engine scans for at once; a repeat first, as in
#: the patterns that replace them, is entered at every position — 0.7 µs where this takes 0.3 over 70
#: characters.)
_ANY_SPACING_ACCENT = re.compile(_SPACING_ACCENTS.pattern.removesuffix("+"))
_ANY_COMBINING = re.compile(_COMBINING.pattern.removesuffix("+"))
_ANY_CAMEL = re.compile("[A-Z](?:(?<=[a-z][A-Z])|(?=[A-Z][a-z]))")  # ([a-z][A-Z] or [A-Z][A-Z][a-z]: one class first)
_APOSTROPHES = ("'", "\u2019", "`")


#: A run of ``_ - .`` is a space between two letters or digits (``db_pass``, ``e-mail``,
#: ``user.pin``), and always when it holds an underscore; a full stop ends a sentence.  (Two patterns,
#: each of one branch that starts with the run's own characters, which the engine skips to — a
#: pattern of two branches is tried at every position — with the letter before checked by a
#: look-behind after its first character: no Python call per match.  A run with an underscore is
#: replaced first; what is left are runs of ``-`` and ``.`` alone: those that start with ``-``, then
#: those that start with ``.`` — each pattern starts with one literal character, which the engine
#: finds as ``str.find`` does, where a class of two is tested at every position.  The same runs as
#: one pattern ``[-.](?<=[^\W_][-.])[-.]*(?=[^\W_])``: a run replaced ends before a letter, so it
#: changes nothing the other pattern reads.)
_JOIN_UNDERSCORE = re.compile(r"(?:[-.]+_|_)[-._]*")
_JOIN_DASH = re.compile(r"-(?<=[^\W_]-)[-.]*(?=[^\W_])")
_JOIN_DOT = re.compile(r"\.(?<=[^\W_]\.)[-.]*(?=[^\W_])")
#: ASCII letters as their case (``a`` lower, ``A`` upper, `` `` anything else): camelCase is then
#: ``aA`` or ``AAa``, found from the few upper-case letters (a literal the engine skips to).
_CASES = bytes(97 if 97 <= b <= 122 else 65 if 65 <= b <= 90 else 32 for b in range(256))
_CAMEL_CASES = re.compile(b"A(?:(?<=aA)|(?=Aa))")
_SPACES = re.compile(r"[ \t\r\f\v]+")


@lru_cache(maxsize=1)
def _mojibake() -> re.Pattern[str]:
    return re.compile(_MOJIBAKE_PATTERN)


def _redecode(match: re.Match[str]) -> str:
    """A character UTF-8 encoded then read as Latin-1 / Windows-1252, decoded again (as it was when
    it does not decode)."""
    found = match.group()
    try:
        return found.encode("cp1252" if max(found) > "\u00ff" else "latin-1").decode("utf-8")
    except UnicodeError:
        return found


def _after_letter(match: re.Match[str]) -> str:
    """A spacing accent after a letter is removed; elsewhere it stays (a symbol)."""
    at = match.start()
    return "" if at and match.string[at - 1].isalpha() else match.group()


def _latin1_tables() -> tuple[bytes, bytes]:
    """For a text of Latin-1 characters: (each byte to the one :func:`_fold_unicode`'s steps make of
    its character — an accented letter its ASCII base letter, any other itself —, the bytes whose
    characters that holds for).  Read from Unicode's data, not listed: a character is taken when
    NFKC keeps it, no step before casefolding removes or maps it (mojibake's lead characters, spacing
    accents, invisible characters, confusables), and either NFD makes it an ASCII letter and marks
    the combining class removes, or no step before casefolding changes it (and what casefolding
    makes of it is no confusable).  Steps that read more than one character (NFKC and NFD reorder
    and compose marks) find nothing to join in such a text: Latin-1 has no combining character."""
    table, safe = bytearray(range(256)), bytearray(range(128))
    for b in range(128, 256):
        c = chr(b)
        if (c in "\u00c2\u00c3\u00c5" or b in _INVISIBLE or b in _CONFUSABLES or _ANY_SPACING_ACCENT.match(c)
                or unicodedata.normalize("NFKC", c) != c):
            continue
        base = _COMBINING.sub("", unicodedata.normalize("NFD", c))
        if base == c and not any(ord(folded) in _CONFUSABLES for folded in c.casefold()):
            safe.append(b)  # (casefolding, "ß" to "ss", is a step of both paths)
        elif base != c and len(base) == 1 and base.isascii() and base.isalpha():
            table[b] = ord(base)
            safe.append(b)
    global _LATIN1
    _LATIN1 = bytes(table), bytes(safe)
    return _LATIN1


#: (Built when a text first holds a character of Latin-1 beyond ASCII: 0.2-0.3 ms that an import of the judge
#: for its names alone need not pay.)
_LATIN1: tuple[bytes, bytes] | None = None
#: A character beyond Latin-1 (found at once in Chinese or Japanese text: a class the engine scans for).
_BEYOND_LATIN1 = re.compile("[^\x00-\xff]")


def _fold(text: str, split: bool) -> str:
    if not text.isascii():
        if text[-1] <= "\u00ff" and _BEYOND_LATIN1.search(text) is None:  # (Chinese, Japanese: mostly "。" last)
            latin = text.encode("latin-1")
            fold, safe = _LATIN1 or _latin1_tables()
            if not latin.translate(None, safe):  # (every character one of those the table folds)
                # Spanish, French, German, Portuguese text (most of what is not ASCII): its accents taken
                # off by one C-level translate of its bytes, where NFKC, NFD, the marks' removal and NFC
                # each went over it — the same text (_latin1_tables)
                folded = latin.translate(fold).decode("latin-1")
                if folded.isascii():
                    return _fold(folded, split)
                if split and _ANY_CAMEL.search(folded) is not None:  # (the steps left: no other changes it)
                    folded = _CAMEL.sub(" ", folded)
                return folded.casefold()
        return _fold_unicode(text, split)
    lowered = text.lower()
    if not split or lowered == text:
        return lowered
    if _CAMEL_CASES.search(text.encode("ascii").translate(_CASES)) is None:
        return lowered
    return _CAMEL.sub(" ", text).lower()


def _fold_unicode(text: str, split: bool) -> str:
    """:func:`_fold` of any text: mojibake decoded again, spacing accents after a letter removed,
    NFKC, invisible characters removed, Latin combining marks removed, camelCase split, casefolded,
    confusables mapped."""
    if ("\u00c3" in text or "\u00c2" in text or "\u00c5" in text) and _mojibake().search(text) is not None:
        text = _mojibake().sub(_redecode, text)
    if _ANY_SPACING_ACCENT.search(text) is not None:
        text = _SPACING_ACCENTS.sub(_after_letter, text)
    text = _nfkc(text)
    if _ANY_INVISIBLE.search(text) is not None:
        text = text.translate(_INVISIBLE)
    # decomposed once, and only when something decomposes (Chinese does not); marks already apart stay apart
    decomposed = text if unicodedata.is_normalized("NFD", text) else unicodedata.normalize("NFD", text)
    if _ANY_COMBINING.search(decomposed) is not None:
        text = unicodedata.normalize("NFC", _COMBINING.sub("", decomposed))
    if split and _ANY_CAMEL.search(text) is not None:
        text = _CAMEL.sub(" ", text)
    text = text.casefold()
    return text.translate(_CONFUSABLES) if _ANY_CONFUSABLE.search(text) is not None else text


#: Chinese and Japanese text's fullwidth punctuation and space, each with what NFKC makes of it.
_WIDE = tuple((wide, unicodedata.normalize("NFKC", wide)) for wide in "，：；！？（）\u3000")


def _nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``: a text NFKC keeps is kept; one whose only change is its
    fullwidth punctuation (``，`` ``：`` …: most Chinese text) gets those replaced — each by what NFKC
    makes of it, so the text decomposes as before, and when what results is in NFKC it is NFKC's
    answer — where normalising it cost ~3 µs over 30 characters."""
    if unicodedata.is_normalized("NFKC", text):
        return text
    replaced = text
    for wide, narrow in _WIDE:
        if wide in replaced:
            replaced = replaced.replace(wide, narrow)
    if replaced != text and unicodedata.is_normalized("NFKC", replaced):
        return replaced
    return unicodedata.normalize("NFKC", text)


def normalise(text: str, *, split_names: bool = True) -> str:
    """``text`` in the judge's one form: NFKC, zero-width and bidi characters removed, Latin
    combining marks (dots, accents) removed, camelCase / snake_case / kebab-case / dotted.names
    split into words (unless ``split_names`` is false: ``dropOffPoint`` stays one word), apostrophes
    made spaces (``don't`` is ``don t``, ``d'accès`` is ``d acces``), case folded, Cyrillic and Greek
    look-alikes mapped to Latin letters, runs of spaces made one.  Punctuation and line breaks stay:
    negation and questions are read from them."""
    return _joined(_fold(text, split_names), split_names)


def normalise_uncamelled_ascii(text: str) -> str:
    """:func:`normalise` of an ASCII text the caller knows to hold no camelCase boundary (it has read
    the text it was cut from: ``_claims``' head of a result whose raw bytes it checked), so that the
    check is not made twice: lower-cased and joined as :func:`normalise` does."""
    return _joined(text.lower(), True)


def _joined(text: str, split_names: bool) -> str:
    """A folded text's names split (``_ - .`` runs between letters), apostrophes made spaces, runs
    of white space made one space."""
    if split_names:
        if "_" in text:
            text = _JOIN_UNDERSCORE.sub(" ", text)
        if "-" in text:
            text = _JOIN_DASH.sub(" ", text)
        if "." in text:
            text = _JOIN_DOT.sub(" ", text)
    for mark in _APOSTROPHES:
        if mark in text:
            text = text.replace(mark, " ")
    if "\t" in text or "\r" in text or "\f" in text or "\v" in text:
        text = _SPACES.sub(" ", text)
    if "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text.strip()
    return " ".join(filter(None, text.split(" "))).strip()


@lru_cache(maxsize=8192)
def normalise_name(text: str) -> str:
    """:func:`normalise` for names (fields, keys, titles), cached: the same few names come again."""
    return normalise(text)


_ONE_LOWER = re.compile(r"(?<=[A-Z])[a-z](?=[A-Z])")


def irregular_case(text: str) -> bool:
    """Whether a name is written in a case that is no convention (``SeCrEtKey``): camelCase split
    would cut it into nonsense, so such a name is read squashed, the way it would be spoken."""
    return len(_ONE_LOWER.findall(text)) >= 2
