"""The budget an answer restates, held to the customer's: proved on the producer (the shop's
own amount formatting), and the budget reader that every budget rule shares."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from vitrine_shop import memory
from vitrine_shop.agent import ShopAgent
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.invariants import answer_violations, latest_budget
from vitrine_shop.evals.stated_budget import stated_budget_problems
from vitrine_shop.operations import ShopServices
from vitrine_shop.scripted import ScriptedShopModel
from vitrine_shop.workflow import ShopWorkflow

# A budget with cents, so that a restatement rounded to francs names another amount.
_REQUEST = ShopRequest(
    "marco", ("Could you suggest something new for me? Under CHF 49.90, please.",)
)


def _answers() -> list[str]:
    async def run() -> list[str]:
        services = ShopServices()
        workflow = await ShopWorkflow(None, services).answer(_REQUEST)
        agent = await ShopAgent(ScriptedShopModel(), services, traced=False).answer(_REQUEST)
        return [workflow.answer or "", agent.answer or ""]

    return asyncio.run(run())


def _rules(answer: str) -> list[str]:
    return [v.rule for v in answer_violations(answer, _REQUEST)]


def test_both_architectures_restate_the_budget_they_were_given():
    answers = _answers()
    assert all("your CHF 49.90 budget" in a for a in answers), answers
    assert all("stated-budget" not in _rules(a) for a in answers)


def test_a_budget_restated_rounded_breaks_the_rule(monkeypatch):
    # The planted bug: the shop's amount formatting rounds a budget with cents to francs.
    monkeypatch.setattr(memory, "_format_amount", lambda amount: f"{amount:.0f}")
    answers = _answers()
    assert all("your CHF 50 budget" in a for a in answers), answers
    assert all("stated-budget" in _rules(a) for a in answers)


@pytest.mark.parametrize(
    ("answer", "latest", "wrong"),
    [
        ("I kept to what you told me: within your CHF 250 budget.", Decimal(250), False),
        ("within your CHF 250.00 budget", Decimal(250), False),
        ("within your CHF 25 budget", Decimal(250), True),
        ("your budget of CHF 80", None, True),  # no budget stated, none on the profile
        ("Tell me your budget, and I will look again.", None, False),
    ],
)
def test_the_amount_called_your_budget_is_read_as_a_number(answer, latest, wrong):
    assert bool(stated_budget_problems(answer, latest, None)) is wrong


def test_a_budget_written_in_francs_with_the_abbreviation_is_read():
    # "Fr." ends no sentence: the amount after it belongs to the budget before it.
    assert latest_budget(("My budget is at most Fr. 79.-.", "Something new?")) == Decimal(79)
    assert latest_budget(("My budget is 329 francs.", "Make that at most Fr. 59.-.")) == 59
