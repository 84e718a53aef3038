"""Restocks must say why they are due: proved on the producer (the Ranker's reason for a
replenish-lane pick), over the workflow's answers to the exploration customers."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.exploration import exploration_cases
from vitrine_shop.evals.invariants import response_violations
from vitrine_shop.operations import ShopServices
from vitrine_shop.workflow import ShopWorkflow
from vitrine_shop.workflow.stages import code_paths


def _workflow_rules() -> tuple[Counter[str], int]:
    async def run() -> tuple[Counter[str], int]:
        services = ShopServices()
        rules: Counter[str] = Counter()
        restocks = 0
        for case in exploration_cases():
            request = ShopRequest.from_case_input(case.input)
            response = await ShopWorkflow(None, services).answer(request)
            ranked = response.structured.get("ranked") or ()
            restocks += sum(1 for p in ranked if p["lane"] == "replenish")
            rules.update(v.rule for v in response_violations(response, request))
        return rules, restocks

    return asyncio.run(run())


def test_every_restock_the_workflow_offers_says_when_it_was_bought():
    rules, restocks = _workflow_rules()
    assert restocks > 0  # the rule is exercised
    assert rules["restock"] == 0


def test_a_restock_reason_without_its_purchase_breaks_the_rule(monkeypatch):
    healthy = code_paths._reason

    def reason(candidate: dict[str, Any], interest: dict[str, Any]) -> str:
        # The planted bug: a restock is given the reason of a new product.
        return healthy({**candidate, "lane": "explore"}, interest)

    monkeypatch.setattr(code_paths, "_reason", reason)
    rules, restocks = _workflow_rules()
    assert restocks > 0
    assert rules["restock"] > 0
