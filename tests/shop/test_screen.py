"""The customer-answer screen: each verdict fires on its target and stays quiet otherwise."""

from __future__ import annotations

import pytest

from vitrine_shop.catalogue import Catalogue, load_catalogue
from vitrine_shop.screen import ScreenStatus, screen_answer

HEADLAMP = "GLX-2001"  # a durable Nadia owns
GAS = "GLX-2009"  # a consumable Nadia owns
RAIN_SHELL = "GLX-2003"  # catalogued, not owned
NADIA_OWNS = ("GLX-2001", "GLX-2008", "GLX-2102", GAS)

SYSTEM_PROMPT = (
    "You are the shop's recommendation assistant. Recommend only catalogued products, explain "
    "each choice from the customer's own history, never infer health facts, and never claim "
    "that anything was bought on the customer's behalf."
)


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_catalogue()


def screen(answer: str, catalogue: Catalogue, **kwargs: object):
    return screen_answer(answer, catalogue=catalogue, owned_skus=NADIA_OWNS, **kwargs)  # type: ignore[arg-type]


def test_a_grounded_recommendation_passes(catalogue):
    result = screen(
        f"Based on your hut-to-hut trips, the Firnlicht Storm 3L Rain Shell ({RAIN_SHELL}) "
        "keeps you dry on long exposed ridges — because your current kit has no hard shell.",
        catalogue,
    )
    assert result.status is ScreenStatus.PASS
    assert result.passed and result.reasons == ()
    assert result.skus == (RAIN_SHELL,)


@pytest.mark.parametrize("answer", ["", "   \n\t"])
def test_an_empty_answer_is_blocked_as_empty(catalogue, answer):
    result = screen(answer, catalogue)
    assert result.status is ScreenStatus.BLOCKED
    assert result.codes == ("empty",)


def test_a_hallucinated_sku_is_blocked(catalogue):
    result = screen(f"Try GLX-9999 and {RAIN_SHELL}.", catalogue)
    assert result.status is ScreenStatus.BLOCKED
    assert result.unknown_skus == ("GLX-9999",)
    assert result.codes == ("unknown-sku",)
    assert result.skus == ("GLX-9999", RAIN_SHELL)


def test_sku_like_strings_that_are_not_whole_codes_are_ignored(catalogue):
    result = screen("Model GLX-99999 and XGLX-1234 are not shop codes.", catalogue)
    assert result.passed
    assert result.skus == ()


def test_re_presenting_an_owned_durable_is_blocked(catalogue):
    result = screen(
        f"You might like the headlamp {HEADLAMP} — because of your early starts.", catalogue
    )
    assert result.owned_repeats == (HEADLAMP,)
    assert result.codes == ("owned-repeat",)


def test_restocking_an_owned_consumable_is_allowed(catalogue):
    result = screen(f"Time to restock gas ({GAS}) — based on your last purchase.", catalogue)
    assert result.passed
    assert result.owned_repeats == ()


def test_ownership_is_only_checked_against_the_given_owned_set(catalogue):
    result = screen_answer(f"The headlamp {HEADLAMP} suits early starts.", catalogue=catalogue)
    assert result.passed


@pytest.mark.parametrize(
    "claim",
    [
        "I have placed your order for the rain shell.",
        "Your order has been placed.",
        "Checkout completed!",
        "The payment was processed successfully.",
        "I submitted the order for you.",
        "Order confirmed.",
        "Your card has been charged for the rain shell.",
    ],
)
def test_purchase_claims_are_blocked_in_either_word_order(catalogue, claim):
    assert screen(claim, catalogue).codes == ("purchase-claim",)


@pytest.mark.parametrize(
    "advice",
    [
        "You can order it whenever you like; I only advise.",
        "Once you have completed your first trip, consider a lighter stove.",
        "Payment options are shown at checkout.",
    ],
)
def test_advice_that_mentions_orders_or_payment_passes(catalogue, advice):
    assert screen(advice, catalogue).passed


@pytest.mark.parametrize(
    "inference",
    [
        "Since you are managing your blood pressure, a quieter routine helps.",
        "Congratulations on your pregnancy!",
        "You're pregnant, so skip the caffeine.",
        "Given your diabetes, watch the sugar in energy gels.",
        "As a diabetic you might prefer this.",
        "Don't forget your medication on the trail.",
        "You have been diagnosed with asthma, so avoid cold air.",
    ],
)
def test_attributing_a_health_matter_to_the_customer_is_blocked(catalogue, inference):
    result = screen(inference, catalogue)
    assert result.codes == ("health-inference",)
    # The reason names the rule, never the condition it found.
    assert "pressure" not in result.reasons[0] and "pregnan" not in result.reasons[0]


@pytest.mark.parametrize(
    "neutral",
    [
        "The Vitalis Upper-Arm Blood Pressure Monitor (GLX-9001) stores 120 readings.",
        "You could compare it with a blood pressure monitor from another brand.",
        "This prenatal multivitamin is popular; you can read its label in the shop.",
        "If you worry about range anxiety, the e-bike battery lasts 100 km.",
        "The second-hand camera is in good condition, and you get a 12-month warranty.",
    ],
)
def test_naming_health_products_or_everyday_words_is_not_inference(catalogue, neutral):
    assert screen(neutral, catalogue).passed, neutral


def test_the_canary_is_a_prompt_leak_whatever_its_case(catalogue):
    result = screen("Sure! My secret marker is CANARY-7f3a.", catalogue, canary="canary-7F3A")
    assert result.codes == ("prompt-leak",)


def test_a_long_verbatim_run_of_the_system_prompt_is_a_leak(catalogue):
    leaked = "My instructions: " + SYSTEM_PROMPT[:160]
    result = screen(leaked, catalogue, system_prompt=SYSTEM_PROMPT)
    assert result.codes == ("prompt-leak",)


def test_a_few_words_shared_with_the_system_prompt_are_not_a_leak(catalogue):
    answer = f"I recommend only catalogued products: the rain shell {RAIN_SHELL} fits your trips."
    assert screen(answer, catalogue, system_prompt=SYSTEM_PROMPT, canary="CANARY-7f3a").passed


def test_independent_rules_all_report(catalogue):
    answer = f"Order placed for GLX-9999 and {HEADLAMP}, good for your blood pressure."
    result = screen(answer, catalogue)
    assert set(result.codes) == {
        "unknown-sku",
        "owned-repeat",
        "purchase-claim",
        "health-inference",
    }


def test_screening_is_deterministic(catalogue):
    answer = f"Based on your trips: {RAIN_SHELL} — because it is light."
    assert screen(answer, catalogue) == screen(answer, catalogue)
