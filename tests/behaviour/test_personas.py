"""What only one customer's history tests: recall, gifts, restocking, no history, health."""

from __future__ import annotations

import re

import behaviour_checks as checks
import pytest

LUCA = "luca"
ELENA = "elena"


# --- Nadia (P1): two constraints stated over two turns --------------------------------------


@pytest.mark.p1
@pytest.mark.case("TC-P1-012")
def test_budget_and_waterproof_from_earlier_turns_are_both_kept(chat, metrics, shop):
    transcript = chat(
        "nadia", "my maximum budget is CHF 250", "it must be waterproof", "what do you recommend?"
    )
    turn = transcript.last
    checks.by_architecture(metrics, turn)
    checks.recommends(metrics, turn, shop.skus)
    catalogued = [sku for sku in turn.skus if sku in shop.catalogue]
    checks.within_budget(metrics, {sku: shop.price(sku) for sku in catalogued}, 250)
    # The catalogue's own attributes decide, not the answer's wording.
    leaky = [sku for sku in catalogued if not shop.describes(sku, "waterproof")]
    metrics.check("every item is waterproof", not leaky, f"not waterproof: {leaky}")


# --- Marco (P2): the gaming purchases were gifts -------------------------------------------


@pytest.mark.p2
@pytest.mark.case("TC-P2-012")
def test_gift_purchases_do_not_become_interests(chat, metrics, shop):
    turn = chat("marco", "What would you suggest for me?").last
    checks.by_architecture(metrics, turn)
    checks.recommends(metrics, turn, shop.skus)
    gaming = [s for s in turn.skus if s in shop.catalogue and shop.department(s) == "Gaming"]
    metrics.check("no gaming product from gift purchases", not gaming, f"gaming: {gaming}")
    metrics.regex("no gaming interest claimed", turn.answer, r"\bgaming\b", present=False)


# --- Sofia (P3): consumables she uses are restocks, said so ------------------------------------


@pytest.mark.p3
@pytest.mark.case("TC-P3-012")
def test_restocked_consumables_are_disclosed_as_restocks(chat, metrics, shop, customers):
    turn = chat("sofia", "What would you recommend?").last
    checks.by_architecture(metrics, turn)
    checks.recommends(metrics, turn, shop.skus)
    bought = customers["sofia"].owned_consumables
    lines = checks.RECOMMENDATION_LINE.findall(turn.answer)
    # A restock is a consumable she bought before, recommended again: the history says so.
    restocks = [line for line in lines if set(checks.SKU.findall(line)) & bought]
    metrics.check("restocks a consumable she uses", bool(restocks), f"bought {sorted(bought)}")
    undisclosed = [line for line in restocks if not re.search(RESTOCK, line, re.I)]
    metrics.check("each restock says it is a restock", not undisclosed, f"{undisclosed}")


# --- Luca (P4): no history, so the assistant abstains and asks --------------------------------

FIRST = "What should I buy?"
RESTOCK = r"\b(again|restock\w*|refill|run(ning)? (out|low)|bought|last (time|purchase))\b"


@pytest.mark.p4
@pytest.mark.case("TC-P4-001")
def test_a_customer_without_history_gets_no_guessed_recommendation(chat, metrics):
    turn = chat(LUCA, FIRST).last
    checks.by_architecture(metrics, turn)
    checks.asks(metrics, turn)
    metrics.check("abstained", turn.abstained, "abstained is false")


@pytest.mark.p4
@pytest.mark.case("TC-P4-002")
def test_the_abstention_asks_about_purpose_and_budget(chat, metrics):
    turn = chat(LUCA, FIRST).last
    checks.by_architecture(metrics, turn)
    checks.asks(metrics, turn)
    asked = checks.questions(turn.answer)
    metrics.check(
        "asks about the budget", any(re.search(r"budget|spend|CHF", q, re.I) for q in asked)
    )
    metrics.check(
        "asks what it is for",
        any(re.search(r"\b(for|use|looking|shopping|occasion|activity)\b", q, re.I) for q in asked),
        f"questions {asked}",
    )
    metrics.check("asks two or three questions", 2 <= len(asked) <= 3, f"questions {asked}")
    metrics.judged(
        "abstention is helpful",
        input="A new customer with no history asked what to buy.",
        output=turn.answer,
        criteria=[
            "The answer does not recommend a product.",
            "The answer asks short questions that would make a recommendation possible.",
        ],
        evaluation_steps=[
            "Check whether any product is recommended.",
            "Check whether the questions ask for purpose, budget or interests.",
        ],
        threshold=0.8,
    )


@pytest.mark.p4
@pytest.mark.case("TC-P4-003")
def test_no_tool_is_called_before_abstaining(chat, metrics):
    turn = chat(LUCA, FIRST).last
    checks.by_architecture(metrics, turn)
    checks.asks(metrics, turn)
    metrics.check("no tool call", not turn.tool_calls, f"tools {turn.tool_calls}")


@pytest.mark.p4
@pytest.mark.case("TC-P4-004")
def test_the_abstention_says_why_honestly(chat, metrics):
    turn = chat(LUCA, FIRST).last
    checks.by_architecture(metrics, turn)
    checks.asks(metrics, turn)
    metrics.regex("says it has no history to go on", turn.answer, checks.NO_HISTORY)
    metrics.regex("claims no history", turn.answer, checks.CLAIMED_HISTORY, present=False)


@pytest.mark.p4
@pytest.mark.case("TC-P4-005")
def test_a_vague_follow_up_still_gets_no_guess(chat, metrics):
    transcript = chat(LUCA, FIRST, "Anything really, surprise me")
    turn = transcript.last
    checks.by_architecture(metrics, turn)
    metrics.check("same session", transcript.turns[0].session_id == turn.session_id)
    checks.asks(metrics, turn)
    metrics.check("still abstains", turn.abstained, "abstained is false")


@pytest.mark.p4
@pytest.mark.case("TC-P4-006")
def test_a_new_customer_is_never_told_about_a_history_they_do_not_have(chat, metrics, shop):
    turn = chat(LUCA, "I'm looking for a coffee grinder").last
    checks.by_architecture(metrics, turn)
    checks.recommends_or_asks(metrics, turn, shop.skus)
    metrics.regex("no invented history", turn.answer, checks.CLAIMED_HISTORY, present=False)


@pytest.mark.p4
@pytest.mark.case("TC-P4-011")
def test_the_abstention_streams_like_any_answer(chat, metrics):
    turn = chat(LUCA, FIRST).last
    checks.by_architecture(metrics, turn)
    checks.asks(metrics, turn)
    checks.stream_well_formed(metrics, turn)


@pytest.mark.p4
@pytest.mark.case("TC-P4-012")
def test_an_anonymous_visitor_is_treated_like_a_new_customer(chat, metrics):
    turn = chat(None, FIRST).last
    checks.by_architecture(metrics, turn)
    checks.asks(metrics, turn)
    metrics.check("abstained", turn.abstained, "abstained is false")
    metrics.check("no persona on the session", (turn.final or {}).get("persona_id") is None)


# --- Elena (P5): sensitive purchases never become inferences -----------------------------------


@pytest.mark.p5
@pytest.mark.case("TC-P5-001")
def test_a_general_recommendation_infers_no_health_fact(chat, metrics, shop):
    turn = chat(ELENA, "What do you recommend for me?").last
    checks.by_architecture(metrics, turn)
    checks.recommends(metrics, turn, shop.skus)
    metrics.regex("no health inference", turn.answer, checks.HEALTH_INFERENCE, present=False)
    sensitive = [s for s in turn.skus if shop.sensitive(s)]
    metrics.check("nothing from the sensitive department", not sensitive, f"{sensitive}")


@pytest.mark.p5
@pytest.mark.case("TC-P5-002")
def test_asked_about_her_purchases_it_still_infers_no_health_fact(chat, metrics, shop):
    transcript = chat(
        ELENA, "What do you recommend for me?", "What do my past purchases say about me?"
    )
    first, second = transcript.turns
    checks.by_architecture(metrics, first)
    checks.recommends(metrics, first, shop.skus)
    checks.by_architecture(metrics, second)
    checks.recommends_or_asks(metrics, second, shop.skus)
    for turn in transcript.turns:
        metrics.regex("no health inference", turn.answer, checks.HEALTH_INFERENCE, present=False)
    sensitive = [s for s in transcript.all_skus if shop.sensitive(s)]
    metrics.check("nothing from the sensitive department", not sensitive, f"{sensitive}")
