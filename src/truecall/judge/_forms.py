"""Whether an elicitation form asks for a credential, payment data, a recovery phrase or an identity
secret.

Structure is read before words: ``format: password`` or ``writeOnly`` is an ask whatever the field is
called; a boolean, a choice among fixed options, or a number *about* a credential ("2FA enabled?",
"token count") is not; a free-text string whose name, title or description names one is.  The form's
message and the schema's own title and description ask only when the form has a field that could
carry the answer, and not when the sentence is negated ("do not give us your PIN") or a yes/no
question about a credential ("password policy accepted?").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from ._anchors import ENDINGS, alternatives, anchors, matches, starts_word
from ._normalise import irregular_case, normalise, normalise_name
from ._vocabulary import (ABOUT_AFTER, ABOUT_BEFORE, ABOUT_EXCEPTIONS, ASK_NEGATION_IDIOMS, ASK_NEGATIONS_AFTER,
                          ASK_NEGATIONS_BEFORE, ASK_NEGATIONS_IN_CLAUSE, ASK_STARTS, CODE_NAMES, CONTRASTS,
                          CREDENTIAL_FORMATS, DESTRUCTIVE, FORMS, HOW_OFTEN, LABEL_ENDINGS, LABEL_WORDS, NEGATIONS,
                          PASSWORD_SPELLINGS, PASTE, QUANTITY_WORDS, WH_WORDS, YES_NO_MARKS, FormCategory, Term, every)

__all__ = ["CredentialAsk", "credential_ask", "names_credential", "asks_to_paste", "names_destructive"]

Category = FormCategory


@dataclass(frozen=True)
class CredentialAsk:
    """Why a form must not be shown: what it asks for (``category``), where it says so (``where``:
    "message", "title", "description" or the field's name), the field (``None`` for the message and
    the schema's title/description) and the ``reason`` in words."""

    category: Category
    where: str
    field: str | None
    reason: str


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")


def _compile(terms: list[tuple[int, Term]]) -> re.Pattern[str]:
    """One alternation of terms: Latin terms that match whole words (their start is checked after a
    match (a look-behind first would make the engine try every alternative at every position:
    150 µs for a short name where this takes a few), or Chinese/Japanese terms and compounds, which
    may start anywhere (``accesstoken``)."""
    parts = []
    for i, term in terms:
        if _CJK.search(term.pattern):
            parts.append(f"(?P<t{i}>{term.pattern})")
        elif term.compound:
            parts.append(f"(?P<t{i}>(?:{term.pattern})(?:s|n|en|e)?(?![a-z0-9]))")
        else:
            parts.append(f"(?P<t{i}>(?:{term.pattern})s?(?![a-z0-9]))")
    return re.compile("|".join(parts) if parts else "(?!)")


def _is_word_term(term: Term) -> bool:
    return not term.compound and not _CJK.search(term.pattern)


def _anchor_words(terms: list[Term]) -> frozenset[str]:
    """The words a text must hold one of for any of these (whole-word) terms to match."""
    return frozenset(w + ending for term in terms for alt in alternatives(term.pattern)
                     for w in anchors(alt)[0] for ending in ENDINGS)


_INDEXED = list(enumerate(FORMS))
#: (regex, its matches must start a word) for the terms of any text, and those of a field's own name.
_ANY_WORDS = _anchor_words([t for t in FORMS if t.scope == "any" and _is_word_term(t)])
#: Each anchor word of the whole-word terms, and the terms it anchors (a term matches only in a text
#: that holds one of its own anchors): a text runs an alternation of just those terms.
_WORD_TERMS: dict[str, frozenset[int]] = {}
for _i, _term in _INDEXED:
    if _term.scope == "any" and _is_word_term(_term):
        for _w in _anchor_words([_term]):
            _WORD_TERMS[_w] = _WORD_TERMS.get(_w, frozenset()) | {_i}


def _word_terms(words: list[str]) -> frozenset[int]:
    """The whole-word terms a text with these words could match (by their anchors)."""
    found: frozenset[int] = frozenset()
    for w in _ANY_WORDS.intersection(words):
        found |= _WORD_TERMS[w]
    return found


@lru_cache(maxsize=512)
def _word_regex(terms: frozenset[int]) -> re.Pattern[str]:
    """The alternation of some whole-word terms, in the vocabulary's order (compiled once per set: the
    sets a process meets are few — the anchor words of field names and messages)."""
    return _compile([(i, t) for i, t in _INDEXED if i in terms])
_ANY_RES = [(_compile([(i, t) for i, t in _INDEXED if t.scope == "any" and _is_word_term(t)]), True),
            (_compile([(i, t) for i, t in _INDEXED if t.scope == "any" and t.compound]), False),
            (_compile([(i, t) for i, t in _INDEXED if t.scope == "any" and _CJK.search(t.pattern)]), False)]
_NAME_RES = [(_compile([(i, t) for i, t in _INDEXED if t.scope == "name" and _is_word_term(t)]), True),
             (_compile([(i, t) for i, t in _INDEXED if t.scope == "name" and not _is_word_term(t)]),
              False)]
_TERMS = {f"t{i}": t for i, t in _INDEXED}
#: Compound terms anywhere in a squashed name (a name written in no case convention: ``SeCrEtAbC1``).
_SQUASHED_RE = re.compile("|".join(f"(?P<t{i}>{t.pattern})" for i, t in _INDEXED if t.compound))
_ABOUT_AFTER = every(ABOUT_AFTER)
_ABOUT_BEFORE = every(ABOUT_BEFORE)
_ASK_STARTS = every(ASK_STARTS)
_WORD = re.compile(r"[a-z0-9]+")
_LATIN_NEG = frozenset(c for lang, cues in NEGATIONS.items() if lang not in ("zh", "ja") for c in cues
                       if " " not in c and c not in ("0", "n"))


def _alternation(words: tuple[str, ...]) -> str:
    """Latin words as whole words, Chinese and Japanese ones as they stand."""
    return "|".join(re.escape(w) if _CJK.search(w) else f"(?<![a-z0-9]){re.escape(w)}(?![a-z0-9])" for w in words)


_NEG_CJK_BEFORE = re.compile(_alternation(every(ASK_NEGATIONS_BEFORE)))
_NEG_JA_AFTER = re.compile(_alternation(every(ASK_NEGATIONS_AFTER)))
_NEG_LATIN_CLAUSE = re.compile(_alternation(every(ASK_NEGATIONS_IN_CLAUSE)))
_NEG_IDIOMS = re.compile(_alternation(every(ASK_NEGATION_IDIOMS)))
_CLAUSE_END = re.compile(r"[.!;\n。！；]|" + _alternation(every(CONTRASTS)))
_ABOUT_EXCEPTIONS = every(ABOUT_EXCEPTIONS)
_HOW_OFTEN = re.compile(_alternation(every(HOW_OFTEN)))


def _asks_how_often(norm: str, start: int) -> bool:
    """Whether the clause before a credential word asks how often or at what interval (``HOW_OFTEN``):
    the word is then the topic of a schedule ("À quelle fréquence … changer votre mot de passe ?")."""
    return _HOW_OFTEN.search(norm, _clause_start(norm, start), start) is not None


def _clause_start(norm: str, start: int) -> int:
    """Where the clause that holds ``start`` begins (after the last clause end before it)."""
    return max((m.end() for m in _CLAUSE_END.finditer(norm, 0, start)), default=0)


@dataclass(frozen=True)
class _Hit:
    term: Term
    phrase: str


def _damerau1(a: str, b: str) -> bool:
    """Whether ``a`` is ``b`` with one letter added, dropped, changed, or two swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return a == b
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


_TYPO = Term("password (one letter off)", "credential", "en", "a misspelt password is still a password")


def _about(norm: str, start: int, end: int) -> bool:
    """Whether the word at ``start:end`` is a topic: a topic word after it ("password policy") or
    before it ("number of tokens") — whole Latin words: "admin pw" holds no "min", "token countries"
    no "count" (Chinese and Japanese cues stand where they are: "令牌数量")."""
    after = norm[end:end + 24].lstrip(" ")
    if after.startswith(_ABOUT_AFTER) and not after.startswith(_ABOUT_EXCEPTIONS):
        for cue in _ABOUT_AFTER:
            if after.startswith(cue) and not (cue[-1:].isascii() and after[len(cue):len(cue) + 1].isalnum()):
                return True
    before = norm[max(0, start - 24):start].rstrip(" ")
    if before.endswith(_ABOUT_BEFORE):
        at = max(0, start - 24) + len(before)  # where ``before`` ends in ``norm``
        for cue in _ABOUT_BEFORE:
            if before.endswith(cue) and (at == len(cue) or not cue[:1].isascii() or not norm[at - len(cue) - 1].isalnum()):
                return True
    return False


def _negated(norm: str, start: int, end: int) -> bool:
    clause_start = _clause_start(norm, start)
    clause_end_m = _CLAUSE_END.search(norm, end)
    clause = norm[clause_start:clause_end_m.start() if clause_end_m else len(norm)]
    before = norm[clause_start:start]
    if any(w in _LATIN_NEG for w in _WORD.findall(before)):
        return True
    if _NEG_CJK_BEFORE.search(before):
        return True
    after = clause[start - clause_start:]
    if _NEG_JA_AFTER.search(after):
        return True
    # German and French put the negation after the verb: "geben Sie Ihre PIN nicht ein", "ne ... pas"
    return bool(_NEG_LATIN_CLAUSE.search(clause)) and not _NEG_IDIOMS.search(clause)


_CJK_YES_NO = re.compile(_alternation(every(YES_NO_MARKS)))
_WH = re.compile(_alternation(every(WH_WORDS)))


def _yes_no_question(norm: str) -> bool:
    """A yes/no question (about a credential, not asking for it): its last sentence ends with a
    question mark and neither starts as an ask for a value nor asks "what/which/how" ("What is your
    PIN?" and "Security question: what was your first pet's name?" ask; "2FA enabled?" does not).
    Chinese and Japanese say yes/no with their own particles (吗, 是否, ですか)."""
    text = norm.strip()
    if not text.endswith(("?", "？")) and not _CJK_YES_NO.search(text[-6:]):
        return False
    sentence = re.split(r"[.!:;。！：；\n]\s*", text.rstrip("?？ "))[-1].lstrip("¿ ")
    if _CJK.search(sentence):
        return bool(_CJK_YES_NO.search(sentence)) and not _WH.search(sentence)
    return not sentence.startswith(_ASK_STARTS) and not _WH.search(sentence)


#: When a text names several things, the most specific is reported ("secret recovery phrase" is a
#: recovery phrase, not a secret).
_SPECIFIC = {"recovery": 0, "identity": 1, "payment": 2, "credential": 3}
_SPACED = re.compile(r"(?<![a-z0-9])(?:[a-z] ){3,}[a-z](?![a-z0-9])")


def _most_specific(hits: list[_Hit | None]) -> _Hit | None:
    found = [h for h in hits if h is not None]
    return min(found, key=lambda h: _SPECIFIC[h.term.kind]) if found else None


def _find(norm: str, *, field_name: bool, sentence: bool) -> _Hit | None:
    """The most specific credential term in ``norm`` that is not a topic ("token count"), not negated
    and (for sentences) not in a yes/no question; letters spaced out ("p a s s w o r d") are read
    joined."""
    if sentence and _yes_no_question(norm):
        return None
    hits = [_find_terms(norm, field_name=field_name, sentence=sentence)]
    if _SPACED.search(norm):
        hits.append(_find_terms(_SPACED.sub(lambda m: m.group().replace(" ", ""), norm), field_name=field_name,
                                sentence=sentence))
    return _most_specific(hits)


def _find_terms(norm: str, *, field_name: bool, sentence: bool) -> _Hit | None:
    found: list[_Hit | None] = []
    patterns = _ANY_RES + _NAME_RES if field_name else _ANY_RES
    if norm.isascii():  # no Chinese or Japanese term can match
        patterns = patterns[:2] + patterns[3:]
    words = _WORD.findall(norm)
    if _ANY_WORDS.isdisjoint(words):  # none of the word terms' anchors: skip their regex
        patterns = patterns[1:]
    selected = _word_terms(words) if patterns[0] is _ANY_RES[0] else frozenset()
    if selected:  # the whole-word terms this text's words anchor, not all of them
        patterns = [(_word_regex(selected), True), *patterns[1:]]
    for pattern, word_start in patterns:
        for m in matches(pattern, norm, starts_word if word_start else None):
            term = _TERMS[m.lastgroup or ""]
            start, end = m.span()
            if _about(norm, start, end):
                continue
            if sentence and (_negated(norm, start, end) or _asks_how_often(norm, start)):
                continue
            if term.scope == "name" and (end != len(norm) or len(norm.split()) > 3):
                continue  # the name's last word ("db pwd", not "session date"), not a phrase holding it
            found.append(_Hit(term, m.group()))
    if found:
        return _most_specific(found)
    for m in _WORD.finditer(norm):
        word = m.group()
        if 7 <= len(word) <= 11 and word not in PASSWORD_SPELLINGS and \
                any(_damerau1(word, s) for s in PASSWORD_SPELLINGS) and not _about(norm, *m.span()) and \
                not (sentence and _negated(norm, *m.span())):
            return _Hit(_TYPO, word)
    return None


@lru_cache(maxsize=8192)
def _names(text: str, field_name: bool, sentence: bool) -> _Hit | None:
    hit = _find(normalise_name(text), field_name=field_name, sentence=sentence)
    if hit is None and field_name and irregular_case(text):
        m = _SQUASHED_RE.search(re.sub(r"[\W_]+", "", normalise(text.lower())))
        if m is not None:
            return _Hit(_TERMS[m.lastgroup or ""], m.group())
    return hit


@lru_cache(maxsize=8192)
def names_credential(text: str, *, field_name: bool = False) -> bool:
    """Whether a name or phrase names a credential, payment data, a recovery phrase or an identity
    secret (``field_name``: the text is a field's or key's own name, where ``pw``, ``session`` or
    ``authorization`` mean the thing).  Cached: redaction asks it for every argument name."""
    return _names(str(text), field_name, False) is not None


def _reason(hit: _Hit) -> str:
    return f"names '{hit.phrase}' ({hit.term.kind})"


def _is_choice(spec: dict[str, Any]) -> bool:
    if "enum" in spec or "const" in spec:
        return True
    for key in ("oneOf", "anyOf"):
        options = spec.get(key)
        if isinstance(options, list) and options and all(isinstance(o, dict) and "const" in o for o in options):
            return True
    return False


def _free_alternatives(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """``oneOf``/``anyOf`` entries that are free-text schemas (no ``const``): their titles name what
    the field takes."""
    out = []
    for key in ("oneOf", "anyOf"):
        options = spec.get(key)
        if isinstance(options, list):
            out += [o for o in options if isinstance(o, dict) and "const" not in o and "enum" not in o]
    return out


_CODE_NAMES = frozenset(every(CODE_NAMES))
#: A JSON Schema ``pattern`` that accepts digits only, a fixed or bounded count of them.
_DIGITS_PATTERN = re.compile(r"\^?(?:\\d|\[0-9\])\{(\d+)(?:,(\d+))?\}\$?")


def _digit_code(name: str, spec: dict[str, Any]) -> bool:
    """Whether a free-text field named only "code" (``CODE_NAMES``) takes 4 to 8 digits and nothing
    else (its ``pattern``): a one-time code, whatever its title says."""
    pattern = spec.get("pattern")
    if not isinstance(pattern, str) or normalise_name(name) not in _CODE_NAMES:
        return False
    m = _DIGITS_PATTERN.fullmatch(pattern.strip())
    return m is not None and 4 <= int(m.group(1)) and int(m.group(2) or m.group(1)) <= 8


def _field_ask(name: str, spec: dict[str, Any]) -> CredentialAsk | None:
    fmt = spec.get("format")
    if spec.get("writeOnly") is True:
        return CredentialAsk("credential", name, name, "writeOnly")
    if isinstance(fmt, str) and fmt.lower() in CREDENTIAL_FORMATS:
        return CredentialAsk(CREDENTIAL_FORMATS[fmt.lower()], name, name, f"format: {fmt}")
    if not _can_carry(spec):
        return None
    if "pattern" in spec and _digit_code(name, spec):
        return CredentialAsk("credential", name, name, f"a code of digits only (pattern {spec['pattern']})")
    alternatives = _free_alternatives(spec)
    numeric = spec.get("type") in ("number", "integer")
    if numeric and _measures(name, spec, title=True):
        return None  # "min_length", "days until the password expires": a number about the credential
    texts: list[tuple[str, str, bool, bool]] = [(name, name, True, False)]
    for key in ("title", "description"):
        value = spec.get(key)
        if isinstance(value, str):
            texts.append((value, key, False, True))
    for option in alternatives:
        for key in ("title", "description"):
            value = option.get(key)
            if isinstance(value, str):
                texts.append((value, f"{key} of a {'oneOf' if option in spec.get('oneOf', []) else 'anyOf'} entry",
                              False, True))
    if isinstance(fmt, str):
        texts.append((fmt, "format", False, False))
    best: tuple[_Hit, str] | None = None
    for text, where, as_name, sentence in texts:
        hit = _names(text, as_name, sentence)
        if hit is None or (numeric and not hit.term.numeric):
            continue
        if best is None or _SPECIFIC[hit.term.kind] < _SPECIFIC[best[0].term.kind]:
            best = (hit, where)
    if best is None:
        return None
    hit, where = best
    return CredentialAsk(hit.term.kind, name if where == name else where, name,  # type: ignore[arg-type]  # a Category
                         _reason(hit))


def _free_items(spec: dict[str, Any]) -> bool:
    """Whether an array field's items are free text (a list of words typed one by one: a recovery
    phrase's 12 or 24 words), not a multiple choice."""
    items = spec.get("items")
    return isinstance(items, dict) and items.get("type", "string") == "string" and not _is_choice(items)


def _can_carry(spec: Any) -> bool:
    """Whether a field could carry a secret typed by the user: free text (or a list of it) or a number."""
    if not isinstance(spec, dict):
        return False
    if spec.get("type") == "boolean" or spec.get("type") == "array" and not _free_items(spec):
        return False
    return not _is_choice(spec) or bool(_free_alternatives(spec))


_LABEL_LATIN = frozenset(w for w in every(LABEL_WORDS) if not _CJK.search(w))
_LABEL_ENDINGS = every(LABEL_ENDINGS)
_LABEL_CJK = tuple(w for w in every(LABEL_WORDS) if _CJK.search(w))
_LABEL_LEAD = re.compile(r"(?:[a-z0-9]+ ){0,2}(?:"
                         + "|".join(re.escape(w) for w in sorted(_LABEL_LATIN, key=len, reverse=True))
                         + r")(?![a-z0-9])")
_QUANTITY_LATIN = frozenset(w for w in every(QUANTITY_WORDS) if not _CJK.search(w))
_QUANTITY_CJK = tuple(w for w in every(QUANTITY_WORDS) if _CJK.search(w))


def _names_a_label(name: str, spec: dict[str, Any]) -> bool:
    """Whether a free-text field takes a name, label or description (``LABEL_WORDS``): its own name
    holds one ("key_label", "nombre_clave"; a German compound ends with one), or its title or
    description begins with one ("A name to help you recognise this key"; Chinese and Japanese: begins
    or ends with one, "密钥名称")."""
    words = normalise_name(name).split()
    if not _LABEL_LATIN.isdisjoint(words) or any(w.endswith(_LABEL_ENDINGS) for w in words):
        return True
    if name.startswith(_LABEL_CJK) or name.endswith(_LABEL_CJK):
        return True
    for key in ("title", "description"):
        text = spec.get(key)
        if isinstance(text, str) and text:
            norm = normalise(text.lower()).strip(" .:：。（）()")
            if _LABEL_LEAD.match(norm) or norm.startswith(_LABEL_CJK) or norm.endswith(_LABEL_CJK):
                return True
    return False


def _measures(name: str, spec: dict[str, Any], *, title: bool) -> bool:
    """Whether a number field measures something (``QUANTITY_WORDS`` in its own name, "min_length",
    or with ``title`` in its title, "Días hasta que caduque la contraseña", 密码最短长度): a setting
    about a credential, not one typed as digits.  (A title is read only where the field itself names
    a credential: "Code (expires in 10 minutes)" still carries the code the message asks for.)"""
    for text in (name, spec.get("title") if title else None):
        if isinstance(text, str) and text:
            if not _QUANTITY_LATIN.isdisjoint(normalise_name(text).split()) or any(w in text for w in _QUANTITY_CJK):
                return True
    return False


def _carries_answer(name: str, spec: dict[str, Any]) -> bool:
    """Whether a field that could carry a secret (:func:`_can_carry`) carries the credential, payment
    data or recovery phrase the form's message names: it is neither a name or label of it nor a
    number that measures it.  (An identity answer may be a name: "your first pet's name".)"""
    if spec.get("type") in ("number", "integer"):
        return not _measures(name, spec, title=False)
    return not _names_a_label(name, spec)


def credential_ask(message: str, requested_schema: Any) -> CredentialAsk | None:
    """Whether an elicitation form asks for a credential, payment data, a recovery phrase or an
    identity secret, and where; ``None`` when it does not."""
    schema = requested_schema if isinstance(requested_schema, dict) else {}
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    for name, spec in props.items():
        if isinstance(spec, dict):
            ask = _field_ask(str(name), spec)
            if ask is not None:
                return ask
    could_carry = [(str(name), spec) for name, spec in props.items() if _can_carry(spec)]
    if not could_carry:
        return None
    carriers: list[dict[str, Any]] | None = None  # read only when the message names something
    for where, text in (("message", message), ("title", schema.get("title")), ("description", schema.get("description"))):
        if isinstance(text, str) and text:
            hit = _names(text, False, True)
            if hit is None:
                continue
            if hit.term.kind == "identity":  # the answer to "your mother's maiden name?" is a name: any field carries it
                pool = [spec for _, spec in could_carry]
            else:
                if carriers is None:
                    carriers = [spec for name, spec in could_carry if _carries_answer(name, spec)]
                pool = carriers
            numbers_only = all(spec.get("type") in ("number", "integer") for spec in pool)
            if pool and (hit.term.numeric or not numbers_only):  # a number field carries no password
                return CredentialAsk(hit.term.kind, where, None, _reason(hit))  # type: ignore[arg-type]  # a Category
    return None


_PASTE_RE = re.compile("|".join(f"(?:{t.pattern})" for t in PASTE))
_DESTRUCTIVE_RE = re.compile("|".join(f"(?:{t.pattern})" for t in DESTRUCTIVE))


def asks_to_paste(text: str) -> bool:
    """Whether a form's text invites pasting arbitrary content ("paste the page's HTML")."""
    return bool(_PASTE_RE.search(normalise(text)))


def names_destructive(text: str) -> bool:
    """Whether a form's text names an action that cannot be undone (delete, drop, wipe, 删除 …)."""
    return bool(_DESTRUCTIVE_RE.search(normalise(text, split_names=False)))
