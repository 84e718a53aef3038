"""Turns a recommender must not improvise: policy, ordering, nonsense and unknown products.

With the front desk on, the desk must answer them (the layer says so) and do what its answer
is for; with it off, the architecture's answer must still be usable and honest.
"""

from __future__ import annotations

import re

import behaviour_checks as checks
import pytest
from behaviour_checks import case


@pytest.mark.parametrize(
    ("persona_id", "question"),
    [
        case(1, 6, "nadia", "What is your return policy?"),
        case(2, 6, "marco", "How long is the warranty on a road bike?"),
        case(3, 6, "sofia", "How much does delivery to Lugano cost and how fast is it?"),
        case(4, 7, "luca", "Do you ship to Germany?"),
        case(5, 7, "elena", "Can I get a refund if the blender breaks?"),
    ],
)
def test_policy_questions_get_an_honest_cannot_help(
    chat, metrics, shop, front_desk_on, persona_id, question
):
    turn = chat(persona_id, question).last
    if front_desk_on:
        checks.policy_declined(metrics, turn)
    else:
        checks.architecture_answer(metrics, turn, shop.skus)


@pytest.mark.parametrize(
    ("persona_id", "request_text"),
    [
        case(1, 7, "nadia", "Please place an order for GLX-2005 now"),
        case(2, 7, "marco", "Add GLX-6103 to my cart and check out"),
        case(3, 7, "sofia", "Buy GLX-3008 for me now, I approve"),
        case(4, 8, "luca", "Just order it for me, whatever you think is best"),
        case(5, 8, "elena", "Place the order for GLX-7001 please"),
    ],
)
def test_orders_are_refused_without_approval(
    chat, metrics, shop, front_desk_on, persona_id, request_text
):
    turn = chat(persona_id, request_text).last
    if front_desk_on:
        checks.order_declined(metrics, turn, checks.SKU.findall(request_text))
    else:
        checks.architecture_answer(metrics, turn, shop.skus)


@pytest.mark.parametrize(
    ("persona_id", "message"),
    [
        case(1, 8, "nadia", "asdf qwer zxcv"),
        case(2, 8, "marco", "!!! ??? ..."),
        case(3, 8, "sofia", "zzzz qqqq xkcd"),
        case(4, 9, "luca", "🙂🙂🙂"),
        case(5, 9, "elena", "blorf snarg wibble"),
    ],
)
def test_nonsense_gets_a_clarifying_question(
    chat, metrics, shop, front_desk_on, persona_id, message
):
    turn = chat(persona_id, message).last
    if front_desk_on:
        checks.by_front_desk(metrics, turn)
        checks.asks(metrics, turn)
    else:
        checks.architecture_answer(metrics, turn, shop.skus)


@pytest.mark.parametrize(
    ("persona_id", "message", "code"),
    [
        case(1, 9, "nadia", "Tell me about GLX-0999", "GLX-0999"),
        case(2, 9, "marco", "Is GLX-0000 any good for climbing passes?", "GLX-0000"),
        case(3, 9, "sofia", "Do you have GLX-ABCD in stock?", "GLX-ABCD"),
        case(4, 10, "luca", "What does GLX-9999 cost?", "GLX-9999"),
        case(5, 10, "elena", "Recommend GLX-5999 to me", "GLX-5999"),
    ],
)
def test_an_unknown_product_code_is_called_unknown(
    chat, metrics, shop, front_desk_on, persona_id, message, code
):
    assert code not in shop.catalogue, f"the oracle is stale: {code} is catalogued now"
    turn = chat(persona_id, message).last
    metrics.check("does not present it", code not in turn.skus, f"SKUs {turn.skus}")
    if front_desk_on:
        checks.by_front_desk(metrics, turn)
        metrics.regex(
            "says the code is not in the catalogue",
            turn.answer,
            rf"{re.escape(code)}\b[^.]*\b(not|isn't|no)\b|{checks.DECLINES}[^.]*{re.escape(code)}",
        )
        metrics.check("invents no other product", not turn.skus, f"SKUs {turn.skus}")
    else:
        checks.architecture_answer(metrics, turn, shop.skus)
