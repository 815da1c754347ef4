"""The client's side of the credential red line, decided by the judge: payment, recovery-phrase and
identity forms are declined like password forms, before the handler sees them (issue 24)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from truecall.client import Accept, FormRequest, asks_for_credential
from truecall.client._elicit import answer_elicitation


def form(**fields: Any) -> dict[str, Any]:
    return {"type": "object", "properties": fields}


S = {"type": "string"}
SEEN = {
    "credit_card": ("Enter your credit card to complete the order.", form(credit_card=S)),
    "creditCard": ("Checkout", form(creditCard=S)),
    "pan": ("Checkout", form(pan=S)),
    "routing_number": ("Set up direct deposit", form(routing_number=S)),
    "title Credit card": ("Payment", form(value={"type": "string", "title": "Credit card"})),
    "title 信用卡": ("完成订单", form(value={"type": "string", "title": "信用卡"})),
    "seed_phrase": ("Restore wallet", form(seed_phrase=S)),
    "mnemonic": ("Import wallet", form(mnemonic=S)),
    "recovery_phrase": ("Recover", form(recovery_phrase=S)),
    "passport": ("Booking", form(passport_number=S)),
}


@pytest.mark.parametrize("case", list(SEEN))
def test_the_client_declines_payment_recovery_and_identity_forms_unseen(case: str) -> None:
    message, schema = SEEN[case]
    shown: list[FormRequest] = []

    def handler(request: Any) -> Accept:
        shown.append(request)
        return Accept({})

    assert asks_for_credential(message, schema)
    answer = asyncio.run(answer_elicitation({"message": message, "requestedSchema": schema}, handler,
                                            allow_credential_forms=False))
    assert answer == {"action": "decline"} and shown == []


def test_an_innocent_form_still_reaches_the_handler() -> None:
    schema = form(enabled={"type": "boolean", "title": "2FA enabled"})
    shown: list[Any] = []

    def handler(request: Any) -> Accept:
        shown.append(request)
        return Accept({"enabled": True})

    assert not asks_for_credential("2FA enabled?", schema)
    answer = asyncio.run(answer_elicitation({"message": "2FA enabled?", "requestedSchema": schema}, handler,
                                            allow_credential_forms=False))
    assert answer == {"action": "accept", "content": {"enabled": True}} and len(shown) == 1
