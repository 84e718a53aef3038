"""The shop's front desk: which turns it answers before any model, and which it lets through."""

from __future__ import annotations

import pytest

from vitrine_shop.catalogue import load_catalogue
from vitrine_shop.front_desk import (
    DeskIntent,
    FrontDesk,
    catalogue_vocabulary,
    is_order_request,
    is_policy_question,
)

ORDER_REQUESTS = [
    "Could you just purchase the tent for me?",
    "Please place an order for GLX-2005 now",
    "Add GLX-6103 to my cart and check out",
    "Buy GLX-3008 for me now, I approve",
    "Just order it for me, whatever you think is best",
    "Place the order for GLX-7001 please",
    "Can you buy the cheapest one?",
    "Would you go ahead and order two of them?",
    "I want you to purchase the blue jacket",
    "Put the headlamp in my basket",
    "Go ahead and buy it.",
    "OK, order this one.",
    "Will you please pay for it with my saved card?",
    "Submit my order",
    "Charge my card for the stove",
]

NOT_ORDER_REQUESTS = [
    "Which tent should I buy for winter delivery trips?",
    "What should I buy?",
    "I want to buy a tent for the Alps",
    "Should I order the blue one or the red one?",
    "I bought a tent last year, what goes with it?",
    "Don't order anything yet, just show me options",
    "In order to stay dry, what jacket do you suggest?",
    "What would you suggest I purchase for my kitchen?",
    "Sort them in order of price",
    "Can you check out what you have in running shoes?",
    "Can you order them by price?",
    "Could you get me some ideas for a gift?",
    "Is the jacket worth buying?",
    "Recommend something I can buy under CHF 100",
]

POLICY_QUESTIONS = [
    "What is your return policy?",
    "How long is the warranty on a road bike?",
    "How much does delivery to Lugano cost and how fast is it?",
    "Do you ship to Germany?",
    "Can I get a refund if the blender breaks?",
    "Can I return the shoes if they don't fit?",
    "Is there a warranty on the espresso machine?",
    "What are the shipping costs?",
    "Do you offer free returns?",
    "Will it be delivered by Friday?",
    "How many days does shipping take?",
    "Could I exchange the jacket for a bigger size?",
    "I want my money back if it breaks, is that possible?",
    "What's the return window?",
]

NOT_POLICY_QUESTIONS = [
    "Which tent should I buy for winter delivery trips?",
    "I need a waterproof bag for my delivery job",
    "Recommend a light backpack for the return flight",
    "I returned my old tent, what is similar but lighter?",
    "What is a good bike for delivery rounds in the city?",
    "Any shipping boxes that are sturdy?",
    "What do you recommend for my next hut-to-hut tour?",
    "I'm an exchange student, what kettle is cheap?",
    "A gift for my partner who likes ship models",
    "What pairs well with my espresso machine?",
    "Show me headlamps that are bright",
    "Is this stove good on the return leg of a trek?",
]


@pytest.mark.parametrize("message", ORDER_REQUESTS)
def test_a_request_that_the_assistant_buy_is_an_order_request(message):
    assert is_order_request(message)


@pytest.mark.parametrize("message", NOT_ORDER_REQUESTS)
def test_a_customer_choosing_what_to_buy_is_not_an_order_request(message):
    assert not is_order_request(message)


@pytest.mark.parametrize("message", POLICY_QUESTIONS)
def test_a_question_about_the_shops_terms_is_a_policy_question(message):
    assert is_policy_question(message)


@pytest.mark.parametrize("message", NOT_POLICY_QUESTIONS)
def test_policy_words_used_for_products_or_activities_are_not_policy_questions(message):
    assert not is_policy_question(message)


@pytest.fixture(scope="module")
def desk() -> FrontDesk:
    catalogue = load_catalogue()
    return FrontDesk(catalogue, catalogue_vocabulary(catalogue))


def test_an_order_request_naming_a_known_product_is_declined_and_points_to_its_page(desk):
    sku = min(load_catalogue().skus)
    answer = desk.answer(f"Please buy {sku} for me")
    assert answer is not None and answer.intent is DeskIntent.ORDER
    assert answer.skus == (sku,)
    assert "Nothing has been ordered" in answer.answer


def test_an_unknown_product_code_is_called_unknown_and_nothing_is_recommended(desk):
    answer = desk.answer("Tell me about GLX-0999")
    assert answer is not None and answer.intent is DeskIntent.UNKNOWN_PRODUCT
    assert "GLX-0999" in answer.answer and answer.skus == ()


def test_a_policy_question_is_answered_with_where_the_binding_terms_are(desk):
    answer = desk.answer("Do you ship to Germany?")
    assert answer is not None and answer.intent is DeskIntent.POLICY
    assert "customer service" in answer.answer and answer.abstained


@pytest.mark.parametrize("message", ["asdf qwer zxcv", "!!! ??? ...", "🙂🙂🙂", "blorf snarg"])
def test_a_message_without_a_shopping_word_gets_a_clarifying_question(desk, message):
    answer = desk.answer(message)
    assert answer is not None and answer.intent is DeskIntent.UNCLEAR
    assert answer.answer.endswith("?")


@pytest.mark.parametrize(
    "message",
    [
        "Which tent should I buy for winter delivery trips?",
        "Recommend something for my next hut-to-hut tour",
        "my maximum budget is CHF 250",
        "What should I buy?",
    ],
)
def test_a_shopping_request_passes_through_to_the_architecture(desk, message):
    assert desk.answer(message) is None


def test_the_same_message_always_gets_the_same_decision(desk):
    message = "Could you just purchase the tent for me?"
    assert {desk.answer(message) for _ in range(5)} == {desk.answer(message)}
