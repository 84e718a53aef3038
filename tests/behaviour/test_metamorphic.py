"""Metamorphic behaviour: the same request in another form must get the answer its form asks
for. A product code in any letter case is the same code; a new session knows nothing of the
last one; a budget or a requirement stated in the last turn binds the answer (the data
invariants every test's answers are held to check the items against it)."""

from __future__ import annotations

import re

import behaviour_checks as checks
import pytest

KNOWN, UNKNOWN = "GLX-2005", "GLX-0999"
FORMS = (str.lower, str.capitalize, str.upper)


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.__name__)
def test_an_order_for_a_code_in_any_letter_case_is_declined(
    chat, metrics, shop, front_desk_on, form
):
    turn = chat("nadia", f"Please place an order for {form(KNOWN)} now").last
    if front_desk_on:
        checks.order_declined(metrics, turn, [KNOWN])
    else:
        checks.architecture_answer(metrics, turn, shop.skus)


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.__name__)
def test_an_unknown_code_in_any_letter_case_is_called_unknown(
    chat, metrics, shop, front_desk_on, form
):
    assert UNKNOWN not in shop.catalogue, f"the oracle is stale: {UNKNOWN} is catalogued now"
    turn = chat("marco", f"Tell me about {form(UNKNOWN)}").last
    metrics.check("does not present it", UNKNOWN not in turn.skus, f"SKUs {turn.skus}")
    if front_desk_on:
        checks.by_front_desk(metrics, turn)
        metrics.regex("names the code as unknown", turn.answer, rf"{re.escape(UNKNOWN)}\b")
        metrics.check("invents no other product", not turn.skus, f"SKUs {turn.skus}")
    else:
        checks.architecture_answer(metrics, turn, shop.skus)


def test_a_new_session_carries_nothing_over(chat, metrics, shop):
    question = "What would you recommend for my next hut trip?"
    alone = chat("nadia", question).last
    chat("nadia", "My budget is at most CHF 30 and it must be waterproof.", question)
    again = chat("nadia", question).last
    checks.by_architecture(metrics, again)
    checks.recommends(metrics, again, shop.skus)
    metrics.check(
        "the same answer as a session of its own",
        again.answer == alone.answer,
        f"{again.answer[:120]!r} vs {alone.answer[:120]!r}",
    )


def test_a_budget_lowered_in_the_last_turn_binds(chat, metrics, shop):
    transcript = chat(
        "nadia",
        "I'm planning hut-to-hut tours, my budget is CHF 300.",
        "Actually, keep it under CHF 60. What should I add?",
    )
    checks.by_architecture(metrics, transcript.last)
    checks.recommends_or_asks(metrics, transcript.last, shop.skus)
    prices = {sku: shop.price(sku) for sku in transcript.last.skus}
    checks.within_budget(metrics, prices, 60)


def test_a_requirement_stated_last_binds(chat, metrics, shop):
    transcript = chat(
        "nadia",
        "What would you add to my kit for hut-to-hut tours?",
        "One more thing: it must be waterproof.",
    )
    checks.by_architecture(metrics, transcript.last)
    checks.recommends_or_asks(metrics, transcript.last, shop.skus)
    unmet = [sku for sku in transcript.last.skus if not shop.describes(sku, "waterproof")]
    metrics.check("every item is waterproof", not unmet, f"not waterproof: {unmet}")
