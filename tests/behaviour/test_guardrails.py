"""Turns a recommender must not improvise: policy, ordering, nonsense and unknown products."""

from __future__ import annotations

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
def test_policy_questions_get_an_honest_cannot_help(chat, metrics, persona_id, question):
    checks.policy_honest(metrics, chat(persona_id, question).last)


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
def test_orders_are_refused_without_approval(chat, metrics, persona_id, request_text):
    checks.order_refused(metrics, chat(persona_id, request_text).last)


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
def test_nonsense_gets_a_clarifying_question(chat, metrics, persona_id, message):
    checks.clarifies(metrics, chat(persona_id, message).last)


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
def test_an_unknown_product_code_is_called_unknown(chat, metrics, shop, persona_id, message, code):
    assert code not in shop.catalogue, f"the oracle is stale: {code} is catalogued now"
    checks.unknown_product(metrics, chat(persona_id, message).last, code)
