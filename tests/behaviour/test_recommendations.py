"""Recommendations for customers with a history: grounded, reasoned, new to them, in budget."""

from __future__ import annotations

import re

import behaviour_checks as checks
import pytest
from behaviour_checks import case

REQUEST = {
    "nadia": "Recommend something for my next hut-to-hut tour",
    "marco": "What would you suggest for me?",
    "sofia": "What would you recommend?",
    "elena": "What do you recommend for me?",
}
FOLLOW_UP = "Anything else you would suggest?"
REASON = r"\b(because|based on|since|as you|for your|fits|matches|goes with|to replace)\b|—"


@pytest.mark.parametrize(
    "persona_id",
    [case(1, 1, "nadia"), case(2, 1, "marco"), case(3, 1, "sofia"), case(5, 5, "elena")],
)
def test_recommendations_name_only_catalogued_skus(chat, metrics, shop, persona_id):
    turn = chat(persona_id, REQUEST[persona_id]).last
    checks.by_architecture(metrics, turn)
    checks.recommends(metrics, turn, shop.skus)


@pytest.mark.parametrize(
    "persona_id",
    [case(1, 2, "nadia"), case(2, 2, "marco"), case(3, 2, "sofia"), case(5, 6, "elena")],
)
def test_every_recommendation_gives_a_reason_tied_to_the_customer(
    chat, metrics, shop, customers, persona_id
):
    turn = chat(persona_id, REQUEST[persona_id]).last
    checks.by_architecture(metrics, turn)
    checks.recommends(metrics, turn, shop.skus)
    lines = checks.RECOMMENDATION_LINE.findall(turn.answer)
    listed = {sku for line in lines for sku in checks.SKU.findall(line)}
    metrics.check("one line per recommended item", set(turn.skus) <= listed, f"lines {lines}")
    customer = customers[persona_id]
    interests = customer.interest_departments
    bought = customer.owned_durables | customer.owned_consumables
    unreasoned = [line for line in lines if not re.search(REASON, line)]
    metrics.check("every line has a reason", not unreasoned, f"without reason: {unreasoned}")
    # Tied: the line names one of her interest departments, or it restocks what she bought.
    untied = [
        line
        for line in lines
        if not any(i in line for i in interests) and not set(checks.SKU.findall(line)) & bought
    ]
    metrics.check("every reason names an interest or the history", not untied, f"untied: {untied}")
    metrics.judged(
        "reasons fit the customer",
        input=f"Customer {persona_id}, interested in {', '.join(interests)}, asked: "
        f"{REQUEST[persona_id]}",
        output=turn.answer,
        criteria=[
            "Every recommended product comes with a reason.",
            "Each reason refers to the customer's own interests or purchase history.",
        ],
        evaluation_steps=[
            "List the recommended products.",
            "For each, find its reason and check it refers to the customer's interests or "
            "history rather than generic praise.",
        ],
        threshold=0.75,
    )


@pytest.mark.parametrize(
    "persona_id",
    [
        case(1, 3, "nadia", owned=True),
        case(2, 3, "marco", owned=True),
        case(3, 3, "sofia", owned=True),
        case(5, 3, "elena", owned=True),
    ],
)
def test_owned_durables_are_never_recommended_again(chat, metrics, shop, customers, persona_id):
    turn = chat(persona_id, REQUEST[persona_id]).last
    checks.by_architecture(metrics, turn)
    checks.no_owned(metrics, turn, shop.skus, customers[persona_id].owned_durables)


@pytest.mark.parametrize(
    "persona_id",
    [
        case(1, 4, "nadia", owned=True),
        case(2, 4, "marco", owned=True),
        case(3, 4, "sofia", owned=True),
        case(5, 4, "elena", owned=True),
    ],
)
def test_a_follow_up_turn_still_avoids_owned_durables(chat, metrics, shop, customers, persona_id):
    transcript = chat(persona_id, REQUEST[persona_id], FOLLOW_UP)
    turn = transcript.last
    checks.by_architecture(metrics, turn)
    metrics.check("same session", transcript.turns[0].session_id == turn.session_id)
    checks.no_owned(metrics, turn, shop.skus, customers[persona_id].owned_durables)


@pytest.mark.parametrize(
    ("persona_id", "limit", "request_text"),
    [
        case(1, 5, "nadia", 250, "What do you recommend for my tours?"),
        case(2, 5, "marco", 200, "What would you suggest for my cycling?"),
        case(3, 5, "sofia", 50, "What can I add to my coffee corner?"),
        case(5, 12, "elena", 150, "What would you suggest for my kitchen?"),
    ],
)
def test_a_budget_from_an_earlier_turn_binds_the_answer(
    chat, metrics, shop, persona_id, limit, request_text
):
    transcript = chat(persona_id, f"my maximum budget is CHF {limit}", request_text)
    turn = transcript.last
    checks.by_architecture(metrics, turn)
    metrics.check("second turn of one session", (turn.final or {}).get("turn") == 2)
    checks.recommends(metrics, turn, shop.skus)
    prices = {sku: shop.price(sku) for sku in turn.skus if sku in shop.catalogue}
    checks.within_budget(metrics, prices, limit)


@pytest.mark.parametrize(
    "persona_id",
    [case(1, 10, "nadia"), case(2, 10, "marco"), case(3, 10, "sofia")],
)
def test_tool_events_show_the_recommendation_chain_by_name_only(chat, metrics, shop, persona_id):
    turn = chat(persona_id, REQUEST[persona_id]).last
    checks.by_architecture(metrics, turn)
    checks.recommends(metrics, turn, shop.skus)
    names = [call["name"] for call in turn.tool_calls]
    metrics.check("searched the catalogue", "search_products" in names, f"tools {names}")
    metrics.check(
        "presented through the presenter tool",
        names[-1:] == ["present_recommendation"],
        f"tools {names}",
    )
    metrics.check("tool calls succeeded", all(c["status"] == "ok" for c in turn.tool_calls))
    extra = [sorted(set(c) - {"name", "status", "index", "truncated"}) for c in turn.tool_calls]
    metrics.check(
        "tool events carry no arguments or results", not any(extra), f"extra fields {extra}"
    )


@pytest.mark.parametrize(
    "persona_id",
    [case(1, 11, "nadia"), case(2, 11, "marco"), case(3, 11, "sofia"), case(5, 11, "elena")],
)
def test_the_stream_adds_up_to_the_final_message(chat, metrics, shop, persona_id):
    turn = chat(persona_id, REQUEST[persona_id]).last
    checks.by_architecture(metrics, turn)
    checks.recommends(metrics, turn, shop.skus)
    checks.stream_well_formed(metrics, turn)
