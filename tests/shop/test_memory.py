"""Conversation memory: constraint extraction, the ablation, and the deterministic recall judge."""

from __future__ import annotations

from decimal import Decimal

import pytest

from vitrine_shop.memory import (
    BUDGET,
    RECALL_PROBE,
    RECALL_REQUEST,
    Constraints,
    MemoryProbe,
    extract_constraints,
    judge_recall,
    normalise_text,
)


@pytest.mark.parametrize(
    ("turn", "budget"),
    [
        ("my maximum budget is CHF 250.", "250"),
        ("Budget: 180 CHF, not more", "180"),
        ("something under CHF 99.50 please", "99.50"),
        ("no more than 1200 francs", "1200"),
        ("I'd spend CHF 400 max", "400"),
        ("at most Fr. 75", "75"),
    ],
)
def test_budget_is_read_from_the_ways_customers_state_it(turn: str, budget: str) -> None:
    assert extract_constraints([turn]).max_price_chf == Decimal(budget)


def test_required_attributes_and_exclusions_are_read_and_kept_in_order() -> None:
    constraints = extract_constraints(
        [
            "For the rain gear, it must be waterproof.",
            "They need to be lightweight, and I don't want anything from Kochwerk.",
        ]
    )
    assert constraints.required_attributes == ("waterproof", "lightweight")
    assert constraints.excluded_terms == ("kochwerk",)
    assert constraints.keys == ("waterproof", "lightweight", "kochwerk")


def test_a_later_budget_replaces_an_earlier_one() -> None:
    constraints = extract_constraints(["my budget is CHF 300", "actually, under CHF 200"])
    assert constraints.max_price_chf == Decimal(200)


def test_a_conversation_without_constraints_yields_none() -> None:
    constraints = extract_constraints(["Hi, what do you recommend for me?"])
    assert constraints.is_empty
    assert constraints.restatements() == ()


def test_phrases_that_only_look_like_requirements_are_not_attributes() -> None:
    assert extract_constraints(["it must be able to fold"]).required_attributes == ()


def test_the_canonical_scenario_states_exactly_two_constraints() -> None:
    constraints = extract_constraints(RECALL_REQUEST.user_turns)
    assert constraints.max_price_chf == Decimal(250)
    assert constraints.required_attributes == ("waterproof",)
    assert constraints.keys == (BUDGET, "waterproof")
    assert RECALL_REQUEST.persona_id == "nadia"
    assert RECALL_REQUEST.query == "What would you recommend for my next hut trip?"


def test_forgetting_removes_exactly_one_constraint() -> None:
    constraints = extract_constraints(RECALL_REQUEST.user_turns)
    assert constraints.forget("waterproof").keys == (BUDGET,)
    assert constraints.forget(BUDGET).keys == ("waterproof",)
    assert constraints.forget(None) == constraints
    assert constraints.forget("not-a-constraint") == constraints


def test_admits_checks_price_required_attributes_and_exclusions() -> None:
    constraints = Constraints(Decimal(250), ("waterproof",), ("kochwerk",))
    assert constraints.admits(price_chf="189.00", text="Packlight rain jacket, waterproof")
    assert not constraints.admits(price_chf=329, text="Storm shell, waterproof")
    assert not constraints.admits(price_chf=100, text="Fleece jacket, warm")
    assert not constraints.admits(price_chf=100, text="Kochwerk waterproof kettle")
    # Without a known price a budget cannot be shown to hold.
    assert not constraints.admits(price_chf=None, text="waterproof")


def test_restatements_name_each_honoured_constraint() -> None:
    constraints = extract_constraints(RECALL_REQUEST.user_turns)
    assert constraints.restatements() == ("within your CHF 250 budget", "it must be waterproof")


def test_recall_judge_finds_both_facts_in_a_healthy_answer() -> None:
    answer = "I kept to what you told me: within your CHF 250 budget; it must be waterproof."
    judgment = judge_recall(answer, RECALL_PROBE)
    assert (judgment.recalled, judgment.expected, judgment.score) == (2, 2, 1.0)
    assert judgment.missing == () and judgment.forbidden_found == ()
    assert judgment.passed


def test_recall_judge_does_not_credit_a_product_name_for_a_forgotten_requirement() -> None:
    answer = (
        "- Ridge GTX Waterproof Trail Shoes (GLX-2101, CHF 219.00)\nWithin your CHF 250 budget."
    )
    judgment = judge_recall(answer, RECALL_PROBE)
    assert judgment.found == ("CHF 250",)
    assert judgment.missing == ("must be waterproof",)
    assert judgment.score == 0.5
    assert "missing: must be waterproof" in judgment.explanation


def test_recall_judge_reports_forbidden_facts_separately() -> None:
    probe = MemoryProbe("q?", ("CHF 250",), ("not waterproof",))
    judgment = judge_recall("Under CHF 250, but not waterproof.", probe)
    assert judgment.score == 1.0
    assert judgment.forbidden_found == ("not waterproof",)
    assert not judgment.passed


def test_matching_ignores_case_punctuation_and_swiss_price_notation() -> None:
    probe = MemoryProbe("q?", ("CHF 250", "must be waterproof"))
    assert judge_recall("chf 250.- max; It MUST be water-proof", probe).found == ("CHF 250",)
    assert judge_recall("CHF 250.00, it must be  Waterproof!", probe).recalled == 2
    assert normalise_text("Zürich, CHF 250.-") == ("zurich", "chf", "250")


def test_a_fact_never_matches_inside_a_longer_number() -> None:
    assert judge_recall("budget CHF 2500", MemoryProbe("q?", ("CHF 250",))).recalled == 0
    assert judge_recall("budget CHF 250", MemoryProbe("q?", ("CHF 25",))).recalled == 0


def test_no_answer_recalls_nothing() -> None:
    judgment = judge_recall(None, RECALL_PROBE)
    assert judgment.score == 0.0
    assert "no answer" in judgment.explanation


def test_a_probe_without_expected_facts_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one expected fact"):
        MemoryProbe("q?", ())
    with pytest.raises(ValueError, match="letter or digit"):
        MemoryProbe("q?", ("...",))


async def test_the_healthy_agent_recalls_both_constraints_and_the_ablated_one_recalls_one() -> None:
    from vitrine_shop.agent import ShopAgent
    from vitrine_shop.arms import shared_services
    from vitrine_shop.scripted import ScriptedFaults, ScriptedShopModel

    services = shared_services()
    healthy = await ShopAgent(ScriptedShopModel(), services).answer(RECALL_REQUEST)
    ablated = await ShopAgent(
        ScriptedShopModel(ScriptedFaults(forget_constraint="waterproof")), services
    ).answer(RECALL_REQUEST)

    healthy_judgment = judge_recall(healthy.answer, RECALL_PROBE)
    ablated_judgment = judge_recall(ablated.answer, RECALL_PROBE)
    assert (healthy_judgment.recalled, healthy_judgment.expected) == (2, 2)
    assert (ablated_judgment.recalled, ablated_judgment.expected) == (1, 2)
    assert ablated_judgment.missing == ("must be waterproof",)
    # Recall is not just wording: the healthy agent's picks all honour the budget.
    search = next(c for c in healthy.tool_calls or () if c.name == "search_products")
    assert search.arguments["max_price_chf"] == 250.0
    assert search.arguments["require_tags"] == ["waterproof"]


_WORDS = ("a", "light", "stove", "for", "two", "nights")


@pytest.mark.parametrize("at", range(len(_WORDS) + 1))
@pytest.mark.parametrize("term", ["kochwerk", "waterproof", "ultra light"])
def test_a_term_is_found_wherever_it_stands_in_the_text(at: int, term: str) -> None:
    """First word, last word or between: a term's place in the text never hides it."""
    text = " ".join([*_WORDS[:at], term.title(), *_WORDS[at:]]) + "."
    constraints = Constraints(None, (term,), (term,))
    assert constraints.excludes(text)
    assert constraints.attributes_in(text) == (term,)
    probe = MemoryProbe("What did I say?", (term,))
    assert judge_recall(text, probe).passed
