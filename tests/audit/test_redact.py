"""Redaction: sensitive names, sensitive values, and argument fingerprints."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json

import orjson
import pytest

from truecall import redact, redact_text
from truecall.audit.redaction import REDACTED, fingerprint, is_sensitive_name, redact_free_text

JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA7bq98vYqPZ2f1ZxQ0nV7aPLx0example0body0line0one\n"
    "Zx1example0body0line0two0only0for0tests0not0a0real0key0at0all==\n"
    "-----END RSA PRIVATE KEY-----"
)
AWS = "AKIAIOSFODNN7EXAMPLE"
VISA = "4111111111111111"  # Luhn-valid test number
VISA_SPACED = "4111 1111 1111 1111"
MASTERCARD_DASHED = "5500-0000-0000-0004"
NOT_LUHN = "4111111111111112"  # one digit off: fails the Luhn check


# -- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["password", "Password", "db_passwd", "passphrase", "client_secret", "SECRET", "access_token", "refresh-token",
     "api_key", "apiKey", "API-KEY", "x-api-key", "aws_access_key", "private_key", "Authorization", "Cookie",
     "set-cookie", "credentials", "signature", "card_number", "cardNumber", "pin", "user.pin", "otp", "ssn", "cvv",
     "pwd", "session", "session_id", "auth"],
)
def test_sensitive_names(name):
    assert is_sensitive_name(name)
    assert redact({name: "whatever-value", "keep": "visible"}) == {name: REDACTED, "keep": "visible"}


@pytest.mark.parametrize("name", ["service", "count", "tenant", "spin", "opinion", "author", "description", "id",
                                  "shipping", "compassion"])
def test_ordinary_names_are_kept(name):
    assert not is_sensitive_name(name)
    assert redact({name: "plain"}) == {name: "plain"}


def test_name_redaction_applies_to_any_value_type_and_nesting():
    data = {
        "outer": {"password": {"deep": "x"}, "items": [{"token": 12345}, {"ok": 1}]},
        "secret": ["a", "b"],
        "note": None,
    }
    assert redact(data) == {
        "outer": {"password": REDACTED, "items": [{"token": REDACTED}, {"ok": 1}]},
        "secret": REDACTED,
        "note": None,
    }


# -- values ------------------------------------------------------------------------------------


def test_bearer_token_in_free_text():
    out = redact_text("curl -H 'Authorization: Bearer abcDEF0123456789xyz' https://x")
    assert "abcDEF0123456789xyz" not in out
    assert "[REDACTED:bearer]" in out
    assert out.startswith("curl -H 'Authorization: ") and out.endswith("' https://x")


def test_short_bearer_word_is_not_a_token():
    assert redact_text("the Bearer of news") == "the Bearer of news"


def test_jwt():
    out = redact_text(f"token was {JWT} yesterday")
    assert out == "token was [REDACTED:jwt] yesterday"


def test_pem_private_key_whole_block():
    out = redact_text(f"key:\n{PEM}\nafter")
    assert "MIIEowIBAAKCAQEA" not in out
    assert "example0body0line0two" not in out
    assert out == "key:\n[REDACTED:private_key]\nafter"


def test_pem_private_key_without_end_marker_is_redacted_to_the_end():
    truncated = PEM.split("-----END")[0].rstrip("\n")
    out = redact_text("pasted: " + truncated)
    assert out == "pasted: [REDACTED:private_key]"
    assert "example0body0line0two" not in out


def test_public_key_is_not_a_secret():
    pub = "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----"
    assert redact_text(pub) == pub


def test_aws_access_key_ids():
    assert redact_text(f"id={AWS};") == "id=[REDACTED:aws_key];"
    assert redact_text("ASIAY34FZKBOKMUTVV7A") == "[REDACTED:aws_key]"
    # Not 16 upper-case alphanumerics after the prefix: kept.
    assert redact_text("AKIA1234") == "AKIA1234"


@pytest.mark.parametrize("card", [VISA, VISA_SPACED, MASTERCARD_DASHED, "378282246310005"])
def test_luhn_valid_card_numbers_are_redacted(card):
    out = redact_text(f"paid with {card} today")
    digits = card.replace(" ", "").replace("-", "")
    assert digits not in out.replace(" ", "").replace("-", "")
    assert out == "paid with [REDACTED:card_number] today"


@pytest.mark.parametrize("run", [NOT_LUHN, "1234567890123", "2024010112345678", "4111 1111 1111 1112"])
def test_non_luhn_digit_runs_are_kept(run):
    text = f"order {run} shipped"
    assert redact_text(text) == text


def test_card_redaction_keeps_the_separator_after_the_number():
    assert redact_text(f"{VISA_SPACED} and {MASTERCARD_DASHED}-x") == (
        "[REDACTED:card_number] and [REDACTED:card_number]-x")


def test_lone_surrogates_are_replaced_not_raised():
    out = redact_text("a\ud800b")
    out.encode("utf-8")  # storable
    assert out.startswith("a") and out.endswith("b")


def test_short_digit_runs_are_kept():
    assert redact_text("call 555 0100 or room 4111") == "call 555 0100 or room 4111"


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("password=hunter2 please", "hunter2"),
        ("PASSWORD: correct-horse", "correct-horse"),
        ("api_key = abc123xyz", "abc123xyz"),
        ("my secret:s3cr3tvalue ok", "s3cr3tvalue"),
        ("token=tok_live_999", "tok_live_999"),
        ("access-key: AbCdEf", "AbCdEf"),
    ],
)
def test_secret_assignments(text, gone):
    out = redact_text(text)
    assert gone not in out
    assert "[REDACTED:secret_assignment]" in out


def test_text_around_secrets_is_kept():
    out = redact_text(f"user bob used {JWT} and Bearer zzzzzzzzzzzz on {AWS} at 10:00")
    assert out == "user bob used [REDACTED:jwt] and [REDACTED:bearer] on [REDACTED:aws_key] at 10:00"


def test_values_are_redacted_inside_structures_and_keys():
    data = {"note": f"here {JWT}", "list": ["Bearer abcdefghijkl", ("x", f"{AWS}")], f"k {JWT}": 1}
    out = redact(data)
    assert out == {
        "note": "here [REDACTED:jwt]",
        "list": ["[REDACTED:bearer]", ["x", "[REDACTED:aws_key]"]],
        "k [REDACTED:jwt]": 1,
    }
    # a card number in a key is redacted too (the value may go with it, never the number)
    out = redact({f"k {VISA}": 1})
    assert list(out) == ["k [REDACTED:card_number]"]


def test_scalars_pass_through():
    assert redact(None) is None
    assert redact(True) is True
    assert redact(42) == 42
    assert redact(2.5) == 2.5
    assert redact("plain words") == "plain words"


def test_unknown_objects_become_redacted_text():
    class Thing:
        def __repr__(self) -> str:
            return f"Thing(password={'hunter2'})"

    out = redact(Thing())
    assert isinstance(out, str)
    assert "hunter2" not in out


def test_redact_never_mutates_its_input():
    data = {
        "password": "hunter2",
        "nested": {"token": "t", "list": [f"Bearer {'a' * 20}", {"secret": 1}], "card": VISA},
        "tuple": (JWT,),
    }
    before = copy.deepcopy(data)
    out = redact(data)
    assert data == before
    assert out is not data
    assert out["nested"] is not data["nested"]
    assert data["nested"]["list"][0] == f"Bearer {'a' * 20}"


def test_redact_deep_structures_do_not_recurse_forever():
    deep: dict = {}
    cur = deep
    for _ in range(5000):
        cur["a"] = {}
        cur = cur["a"]
    out = redact(deep)
    # Somewhere down the chain the remainder is replaced wholesale.
    depth = 0
    while isinstance(out, dict):
        out = out["a"]
        depth += 1
    assert out == REDACTED
    assert depth < 100


# -- fingerprints ------------------------------------------------------------------------------

KEY_A = b"k" * 32
KEY_B = b"q" * 32


def _expected_hash(args, key: bytes) -> str:
    """The stored format: BLAKE2b keyed with the audit key (RFC 7693), 16-byte digest, of the
    arguments as JSON with sorted keys."""
    raw = orjson.dumps(args, option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(raw, key=key, digest_size=16).hexdigest()


def _hmac_hash(args, key: bytes) -> str:
    """What records written before December 2026 carry: HMAC-SHA256, first 32 hex digits."""
    raw = orjson.dumps(args, option=orjson.OPT_SORT_KEYS)
    return hmac.new(key, raw, hashlib.sha256).hexdigest()[:32]


def test_fingerprint_shape():
    args = {"service": "payments", "count": 3, "note": "hunter2"}
    fp = fingerprint(args, KEY_A)
    assert set(fp) == {"argKeys", "argBytes", "argHash"}
    assert fp["argKeys"] == ["service", "count", "note"]
    assert fp["argBytes"] == len(orjson.dumps(args, option=orjson.OPT_SORT_KEYS))
    assert fp["argHash"] == _expected_hash(args, KEY_A)
    assert len(fp["argHash"]) == 32 and all(c in "0123456789abcdef" for c in fp["argHash"])
    # no value travels in the fingerprint
    assert "payments" not in json.dumps(fp) and "hunter2" not in json.dumps(fp)


def test_fingerprint_hash_is_keyed_not_a_plain_hash():
    args = {"pin": "1234"}
    raw = orjson.dumps(args, option=orjson.OPT_SORT_KEYS)
    fp = fingerprint(args, KEY_A)
    assert fp["argHash"] != hashlib.sha256(raw).hexdigest()[:32]
    assert fp["argHash"] != hashlib.blake2b(raw, digest_size=16).hexdigest()  # the unkeyed BLAKE2b


def test_a_record_of_either_scheme_is_verifiable_with_the_key():
    """Records written before the switch carry HMAC-SHA256, later ones keyed BLAKE2b: whoever holds
    the key and the candidate arguments can check both; other arguments or another key match neither."""
    from truecall.audit.redaction import arg_hash, arg_hash_matches, legacy_arg_hash

    args = {"service": "payments", "count": 3}
    assert arg_hash(args, KEY_A) == fingerprint(args, KEY_A)["argHash"] == _expected_hash(args, KEY_A)
    assert legacy_arg_hash(args, KEY_A) == _hmac_hash(args, KEY_A)
    for recorded in (_expected_hash(args, KEY_A), _hmac_hash(args, KEY_A)):
        assert arg_hash_matches(args, KEY_A, recorded)
        assert arg_hash_matches({"count": 3, "service": "payments"}, KEY_A, recorded)
        assert not arg_hash_matches({"service": "checkout", "count": 3}, KEY_A, recorded)
        assert not arg_hash_matches(args, KEY_B, recorded)


def test_a_key_longer_than_blake2b_takes_still_keys_the_hash():
    long_a, long_b = b"a" * 65 + b"1", b"a" * 65 + b"2"
    args = {"service": "payments"}
    assert fingerprint(args, long_a)["argHash"] != fingerprint(args, long_b)["argHash"]
    assert fingerprint(args, long_a)["argHash"] == fingerprint(args, long_a)["argHash"]


def test_cached_argument_keys_are_the_computed_ones_and_never_shared_with_a_caller():
    declared = frozenset({"service", "limit"})
    first = fingerprint({"service": "a", "limit": 1}, KEY_A, declared)
    first["argKeys"].append("mutated by the caller")
    again = fingerprint({"service": "b", "limit": 2}, KEY_A, declared)
    assert again["argKeys"] == ["service", "limit"]
    assert fingerprint({"limit": 2, "service": "b"}, KEY_A, declared)["argKeys"] == ["limit", "service"]
    assert fingerprint({"service": "b", "sk-live-1a2b": 2}, KEY_A, declared)["argKeys"] == ["service", "[undeclared]"]


def test_fingerprint_is_stable_for_the_same_key_and_order_independent():
    a = fingerprint({"x": 1, "y": [1, 2]}, KEY_A)
    b = fingerprint({"y": [1, 2], "x": 1}, KEY_A)
    assert a["argHash"] == b["argHash"]
    assert a["argBytes"] == b["argBytes"]


def test_fingerprint_differs_for_another_key():
    args = {"service": "payments"}
    assert fingerprint(args, KEY_A)["argHash"] != fingerprint(args, KEY_B)["argHash"]
    assert fingerprint(args, KEY_A)["argKeys"] == fingerprint(args, KEY_B)["argKeys"]


def test_fingerprint_differs_for_different_values():
    assert fingerprint({"service": "payments"}, KEY_A)["argHash"] != fingerprint({"service": "checkout"}, KEY_A)["argHash"]


def test_fingerprint_size_grows_with_the_value():
    small = fingerprint({"s": "x"}, KEY_A)["argBytes"]
    big = fingerprint({"s": "x" * 1000}, KEY_A)["argBytes"]
    assert big - small == 999


def test_fingerprint_of_non_objects_has_no_keys():
    for value in ([1, 2, 3], "text", 5, None):
        fp = fingerprint(value, KEY_A)
        assert fp["argKeys"] == []
        assert fp["argBytes"] > 0


def test_fingerprint_keys_are_redacted_and_bounded():
    fp = fingerprint({f"Bearer {'z' * 30}": 1, "k" * 500: 2}, KEY_A)
    assert all("zzzzzzzz" not in k for k in fp["argKeys"])
    assert all(len(k) <= 64 for k in fp["argKeys"])


def test_fingerprint_of_non_json_values_still_works():
    fp = fingerprint({"s": {1, 2}, "b": b"\xff"}, KEY_A)
    assert fp["argKeys"] == ["s", "b"]
    assert fp["argBytes"] > 0 and len(fp["argHash"]) == 32


def test_fingerprint_of_very_deep_arguments_does_not_raise():
    deep: dict = {}
    cur = deep
    for _ in range(10_000):
        cur["a"] = {}
        cur = cur["a"]
    fp = fingerprint(deep, KEY_A)
    assert fp["argKeys"] == ["a"]
    assert len(fp["argHash"]) == 32


def test_fingerprint_with_lone_surrogates_is_json_safe():
    fp = fingerprint({"\ud800key": "\udfffvalue"}, KEY_A)
    orjson.dumps(fp)  # the audit log must be able to store it
    assert len(fp["argHash"]) == 32


def test_fingerprint_keys_that_are_or_name_secrets_are_not_recorded():
    fp = fingerprint({"service": 1, "服务": 2, "SeCrEtAbC123xyz": 3, "api_key": 4, JWT: 5, f"Bearer {'y' * 20}": 6}, KEY_A)
    assert fp["argKeys"] == ["service", "服务", REDACTED, REDACTED, REDACTED, REDACTED]


# -- what has no shape (issue 25, case 9) -----------------------------------------------------------------


def _aws_secret() -> str:
    import secrets
    import string

    return "".join(secrets.choice(string.ascii_letters + string.digits + "+/") for _ in range(40))


@pytest.mark.parametrize("template", [
    "login failed: password {pw} for admin",
    "the password is {pw}",
    "client_secret={pw}&scope=read",
    '{{"pin": "{pw}"}}',
    "vault said no to {pw} today",  # no context at all: a password-like token (all four classes)
])
def test_an_unshaped_password_is_redacted_by_its_context_or_its_make(template: str) -> None:
    import secrets

    pw = f"Blue{secrets.token_hex(4)}Sky7!"
    text = template.format(pw=pw)
    assert redact_text(text) == text  # no shape: the per-call redaction cannot see it
    out = redact_free_text(text)
    assert pw not in out and pw[4:12] not in out and "[REDACTED:" in out


def test_a_40_character_aws_secret_key_is_redacted_by_its_randomness() -> None:
    key = _aws_secret()
    while not any(c.isdigit() for c in key) or not any(c.isupper() for c in key):
        key = _aws_secret()
    out = redact_free_text(f"RuntimeError: upstream refused {key}.")
    assert key not in out and out == "RuntimeError: upstream refused [REDACTED:high_entropy]."


@pytest.mark.parametrize("text", [
    'File "/srv/app/.venv/lib/python3.11/site-packages/truecall/_pipeline.py", line 42, in call_tool',
    "request 59877149-1c1d-4140-a707-27c8753d48ff failed",
    "password is required",
    "TypeError: SomeClassName.methodName() takes 2 positional arguments but 3 were given",
    "sqlite3.OperationalError: database is locked",
    "incident://acme/INC-1001",
])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_free_text(text) == text


def test_a_long_id_is_redacted_before_it_is_cut() -> None:
    """Case 5: a shaped secret across the 128th character of a JSON-RPC id loses none of itself."""
    from truecall.server._pipeline import _audited_id

    secret = "sk_live_" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    kept = _audited_id("r" * 109 + "-" + secret)
    assert isinstance(kept, str) and len(kept) <= 128 and "A1b2C3" not in kept
