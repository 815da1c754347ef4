"""Elicitation red lines, checked before anybody is asked anything.

A form asks for the parameters a task needs.  It never asks for credentials
(those come from authorization, or a URL-mode page the user trusts), never
invites the user to paste arbitrary content into the conversation, and never
stands in for a destructive action's confirmation typed as text (that is
``ctx.confirm()``: one boolean, and only ``accept`` with ``true`` counts).

``check_form`` also enforces the spec's restricted schema: a flat object of
primitive fields.
"""

from __future__ import annotations

import re
from typing import Any, Iterable
from urllib.parse import parse_qsl, unquote, urlsplit

from .redact import redact_text

__all__ = ["FormError", "check_form", "check_forms", "check_url", "names_credential", "refused_result"]


class FormError(ValueError):
    """A form or URL that must not be shown to a user.

    ``rule`` names the red line in a word (``credential``, ``paste``, ``confirmation``, ``url``,
    ``schema``): what a caller is told when a tool breaks it at run time.
    """

    def __init__(self, message: str, rule: str = "schema") -> None:
        super().__init__(message)
        self.rule = rule


#: What each red line means for the person who would have been asked (fixed text, safe for a client).
_RULES = {
    "credential": "it asked for a credential, which forms never collect",
    "paste": "it invited pasting arbitrary content",
    "confirmation": "it asked to confirm a destructive action with typed text instead of ctx.confirm()",
    "url": "its link was unsafe (credentials, secrets or personal data, or not http(s))",
    "schema": "its form is not one a client can show (flat primitive fields only)",
}


def check_forms(forms: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The lint a tool's registration runs over its declared ``forms=``: each ``(message,
    requestedSchema)`` pair must pass :func:`check_form`; returns them as a list."""
    declared = list(forms)
    for message, schema in declared:
        check_form(message, schema)
    return declared


def refused_result(exc: FormError) -> Any:
    """The honest result when a tool breaks a red line at run time: nobody was asked, so the step
    that needed the answer did not run — an unanswered question (``declined``, not retryable), with
    the rule that stopped it; not an unexplained ``internal`` fault."""
    from .results import ErrorKind, tool_error

    why = _RULES.get(exc.rule, _RULES["schema"])
    return tool_error(ErrorKind.DECLINED, f"nothing was asked: the server refused this tool's question because "
                      f"{why}; the step that needed the answer did not run", refusedBy="server", redLine=exc.rule)


# -- the credential lint ---------------------------------------------------------------------------
#
# Text is cut into ASCII words (``mfa_code``, ``cvvCode``, ``API-Key``, ``2FA code`` → mfa code, cvv
# code, api key, 2fa code), so that whole words decide: ``auth`` is a credential, ``author`` is not,
# ``pin`` is, ``spinner`` is not.  Words written together (``accesstoken``, ``userpassword``) are
# caught by the stems that are never part of an ordinary word.  Chinese has no spaces: its terms
# are matched as they stand.

#: A word that names a credential on its own (compared singular: ``tokens`` → ``token``).
_CREDENTIAL_WORDS = frozenset({
    "password", "passwd", "pwd", "pw", "passphrase", "passcode", "pin", "pincode", "otp", "totp", "hotp", "mfa",
    "2fa", "tfa", "secret", "token", "bearer", "jwt", "auth", "apikey", "credential", "cvv", "cvv2", "cvc",
    "cvc2", "iban", "cookie", "sessionid", "ssn",
})
#: Two words that together name one (``api key``, ``card number``, ``one time`` …).
_CREDENTIAL_PAIRS = frozenset({
    ("pass", "word"), ("pass", "phrase"), ("pass", "code"),
    ("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"), ("signing", "key"), ("ssh", "key"),
    ("encryption", "key"), ("license", "key"), ("licence", "key"), ("master", "key"), ("recovery", "key"),
    ("gpg", "key"), ("pgp", "key"), ("session", "key"),
    ("verification", "code"), ("authenticator", "code"), ("authentication", "code"), ("security", "code"),
    ("sms", "code"), ("recovery", "code"), ("backup", "code"), ("access", "code"), ("login", "code"),
    ("two", "factor"), ("two", "step"), ("2", "step"),
    ("card", "number"), ("card", "no"), ("cc", "number"), ("cc", "num"),
    ("session", "id"), ("social", "security"), ("bank", "account"),
})
#: Only as a field's own name (a field called ``Authorization`` holds the header's value; the word
#: in a sentence — "card authorisations are failing" — is ordinary English).
_CREDENTIAL_NAMES = frozenset({"authorization", "authorisation"})
#: Stems that are never part of an ordinary word, anywhere in a word written together.
_CREDENTIAL_STEMS = ("password", "passwd", "passphrase", "passcode", "credential", "apikey", "cookie")
#: ... and stems that end such a word (``accesstoken``, ``clientsecret``; not ``tokenizer``, ``secretary``).
_CREDENTIAL_ENDINGS = ("token", "secret", "cookie", "pwd")
_CREDENTIAL_SENTENCE = re.compile(
    r"\bcode\b.{0,24}\b(sent|texted|emailed|send|text)\b|\b(sent|texted|emailed)\b.{0,24}\bcode\b|"
    r"\bauthenticator\s+app\b|\bone[\s_-]?time[\s_-]?(pass(word|code)?|code|pin|token|key)s?\b",
    re.IGNORECASE,
)
_CREDENTIAL_ZH = re.compile(
    r"密码|口令|验证码|校验码|动态码|认证码|授权码|令牌|密钥|秘钥|私钥|凭据|凭证|卡号|安全码|身份证|"
    r"两步验证|双重验证|双因素|二次验证|一次性(代)?码|会话\s*(id|标识)",
    re.IGNORECASE,
)
#: ``format`` values that announce a credential (``password`` is the one browsers know).
_CREDENTIAL_FORMATS = frozenset({"password", "otp", "pin", "credit-card", "card", "cc", "token", "secret", "cvv",
                                 "iban", "one-time-code"})
_ASCII_WORDS = re.compile(r"[A-Za-z0-9]+")


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def names_credential(text: str, *, field_name: bool = False) -> bool:
    """Whether ``text`` (a field's name, title or description, or a form's message) asks for a
    credential: passwords, passphrases, PINs, one-time and MFA codes, tokens, keys, secrets, card
    numbers, CVV, IBAN or session cookies, in English or Chinese."""
    if _CREDENTIAL_ZH.search(text) or _CREDENTIAL_SENTENCE.search(text):
        return True
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text)
    words = [_singular(w.lower()) for w in _ASCII_WORDS.findall(spaced)]
    previous = ""
    for word in words:
        if word in _CREDENTIAL_WORDS or (previous, word) in _CREDENTIAL_PAIRS:
            return True
        if field_name and word in _CREDENTIAL_NAMES:
            return True
        if len(word) > 6 and (any(stem in word for stem in _CREDENTIAL_STEMS) or word.endswith(_CREDENTIAL_ENDINGS)):
            return True
        previous = word
    return False


def _field_names_credential(name: str, spec: dict[str, Any]) -> bool:
    fmt = spec.get("format")
    if isinstance(fmt, str) and (fmt.lower() in _CREDENTIAL_FORMATS or names_credential(fmt)):
        return True
    return names_credential(str(name), field_name=True) or any(
        names_credential(str(spec.get(key, ""))) for key in ("title", "description"))


_PASTE_ANYTHING = re.compile(
    r"\bpaste\b|\bhtml\b|page\s+source|entire\s+(page|file|document)|full\s+(page|file|document)|"
    r"粘贴|完整.{0,4}(html|页面|网页|文件)|页面源码|网页源码",
    re.IGNORECASE,
)
_DESTRUCTIVE = re.compile(
    r"\bdelete\b|\bdestroy\b|\bdrop\b|\bwipe\b|\berase\b|\bpurge\b|remove\s+all|"
    r"删除|销毁|清空|抹掉|格式化",
    re.IGNORECASE,
)
_PRIMITIVE_KEYS = {
    "string": {"type", "title", "description", "minLength", "maxLength", "format", "default", "enum", "enumNames",
               "oneOf"},
    "number": {"type", "title", "description", "minimum", "maximum", "default"},
    "integer": {"type", "title", "description", "minimum", "maximum", "default"},
    "boolean": {"type", "title", "description", "default"},
    "array": {"type", "title", "description", "minItems", "maxItems", "items", "default"},
}
_FORMATS = {"email", "uri", "date", "date-time"}


def _text_of(name: str, spec: dict[str, Any]) -> str:
    return " ".join(str(x) for x in (name, spec.get("title", ""), spec.get("description", "")))


def _words(text: str) -> str:
    """``text`` plus a copy where ``card_cvv``, ``cvvCode`` or ``page-html`` are separate words,
    so that the ``\\b`` in the patterns also sees names written the way code writes them."""
    split = re.sub(r"[_\-.]+", " ", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text))
    return text if split == text else f"{text} {split}"


def check_form(message: str, schema: Any) -> None:
    """Raise :class:`FormError` unless ``schema`` is a form a user may safely be shown."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise FormError("a form's requestedSchema is an object schema (type: object)")
    props = schema.get("properties")
    if not isinstance(props, dict):
        raise FormError("a form needs properties")
    for name, spec in props.items():
        if not isinstance(spec, dict):
            raise FormError(f"form field '{name}' must be a schema object")
        kind = spec.get("type")
        allowed = _PRIMITIVE_KEYS.get(kind) if isinstance(kind, str) else None
        if allowed is None:
            raise FormError(f"form field '{name}' must be a string, number, integer, boolean or a multi-select "
                            "array; forms are flat")
        extra = set(spec) - allowed - {"$comment"}
        if extra:
            raise FormError(f"form field '{name}' uses keywords forms do not allow: {sorted(extra)}")
        if _field_names_credential(name, spec):
            raise FormError(f"form field '{name}' asks for a credential; forms must never collect passwords, "
                            "tokens, keys or payment data — send the user to a trusted page with URL mode "
                            "(ctx.elicit(message, url=...)) or get it from authorization", "credential")
        if kind == "string" and "format" in spec and spec["format"] not in _FORMATS:
            raise FormError(f"form field '{name}': format must be one of {sorted(_FORMATS)}")
        if kind == "array":
            items = spec.get("items")
            if not isinstance(items, dict) or not (("enum" in items) or ("anyOf" in items)):
                raise FormError(f"form field '{name}': arrays are multi-selects of fixed options only")
        if _PASTE_ANYTHING.search(_words(_text_of(name, spec))):
            raise FormError(f"form field '{name}' invites pasting arbitrary content; ask for the specific "
                            "parameters the task needs", "paste")
    if names_credential(str(message)):
        raise FormError("the form's message asks for a credential; use URL mode or authorization instead", "credential")
    if _PASTE_ANYTHING.search(_words(message)):
        raise FormError("the form's message invites pasting arbitrary content; ask for specific parameters", "paste")
    destructive = _DESTRUCTIVE.search(message) or any(
        _DESTRUCTIVE.search(_text_of(name, spec)) for name, spec in props.items())
    if destructive and not _is_boolean_confirmation(props, schema):
        raise FormError("a destructive action is confirmed with ctx.confirm() (a single boolean that only "
                        "'accept' with true satisfies), not with text a prompt injection could imitate", "confirmation")


def _is_boolean_confirmation(props: dict[str, Any], schema: dict[str, Any]) -> bool:
    return len(props) == 1 and next(iter(props.values())).get("type") == "boolean" and \
        list(props) == list(schema.get("required", list(props)))


def check_url(url: str) -> None:
    """A URL-mode link: http(s), no embedded credentials, no secrets or personal data in it."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise FormError("a URL-mode link must be an absolute http(s) URL", "url")
    if parts.username or parts.password:
        raise FormError("a URL-mode link must not carry credentials", "url")
    decoded = unquote(url)  # %20 and friends must not hide a secret from the patterns below
    if redact_text(decoded) != decoded or re.search(r"[^\s/@]+@[^\s/@]+\.[A-Za-z]{2,}", decoded):
        raise FormError("a URL-mode link must not carry secrets or personal data", "url")
    # The fragment (#access_token=… in implicit-flow style links) is as visible as the query.
    for key, _ in parse_qsl(parts.query, keep_blank_values=True) + parse_qsl(parts.fragment, keep_blank_values=True):
        if names_credential(key, field_name=True):
            raise FormError(f"a URL-mode link must not carry credentials (query parameter '{key}')", "url")
