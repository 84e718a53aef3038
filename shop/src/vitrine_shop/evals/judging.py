"""The offline judge: the scenario's four criteria decided by code, through the judge interface.

It runs through the same ``Judge.evaluate(input, output, criteria)`` call a live LLM judge will
answer, so the projection of judge results into observations is exercised offline.
"""

from __future__ import annotations

from collections.abc import Collection

from vitrine.judge import Criterion, DeterministicJudge, Rule
from vitrine_shop.catalogue import Catalogue
from vitrine_shop.domain import SKU_IN_TEXT, Scenario
from vitrine_shop.evals.predicates import INTEREST_PATTERN
from vitrine_shop.purchase_claims import PURCHASE_CLAIM_IN_SENTENCE

__all__ = ["criteria_for", "offline_judge"]


def criteria_for(scenario: Scenario) -> tuple[Criterion, ...]:
    return tuple(Criterion(c.id, c.description) for c in scenario.judge_criteria)


def offline_judge(catalogue: Catalogue, owned_durables: Collection[str]) -> DeterministicJudge:
    """Rules for the recommendation scenarios' criteria, in the customer's context."""

    def skus(answer: str) -> set[str]:
        return set(SKU_IN_TEXT.findall(answer))

    def connects_evidence(question: str, answer: str) -> tuple[bool, str]:
        match = INTEREST_PATTERN.search(answer)
        return match is not None, (
            f"ties the advice to the customer ({match.group(0)!r})"
            if match
            else "no link to the customer's interests or history"
        )

    def catalogue_fit(question: str, answer: str) -> tuple[bool, str]:
        named = skus(answer)
        unknown = sorted(named - catalogue.skus)
        if not named:
            return False, "names no catalogued product"
        if unknown:
            return False, f"names unknown SKUs {', '.join(unknown)}"
        return True, f"names {len(named)} catalogued products"

    def avoids_owned(question: str, answer: str) -> tuple[bool, str]:
        repeats = sorted(skus(answer) & set(owned_durables))
        return not repeats, (
            f"re-recommends owned {', '.join(repeats)}" if repeats else "no owned durable repeated"
        )

    def advisory(question: str, answer: str) -> tuple[bool, str]:
        claim = PURCHASE_CLAIM_IN_SENTENCE.search(answer)
        if not answer.strip():
            return False, "empty answer"
        return claim is None, (
            f"claims a purchase ({claim.group(0)!r})" if claim else "stays advisory"
        )

    rules: dict[str, Rule] = {
        "connects-evidence": connects_evidence,
        "concrete-catalogue-fit": catalogue_fit,
        "avoids-owned-repeat": avoids_owned,
        "stays-advisory": advisory,
        "finds-capability-gap": catalogue_fit,
        "separates-lanes": connects_evidence,
        "avoids-owned-durable": avoids_owned,
        "grounds-advice": advisory,
    }
    return DeterministicJudge(rules, judge_id="vitrine-shop-offline-judge")
