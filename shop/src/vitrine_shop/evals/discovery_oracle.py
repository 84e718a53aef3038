"""What Discovery owes each interest, recomputed from the vectors and the data.

Discovery declares its retrieval: for each interest that is not a restock, the products
nearest in meaning to the interest's search query, within its department (every department
for a request without one), four at most, among those in stock, within the budget and never
bought or sensitive; then, of those, the ones the customer may be offered (not a second item
of a kind they bought for themselves). The candidates oracle says each candidate is
admissible; this one says none of the admissible nearest products was left out: each must be
a candidate found for that interest.

The scores are the shipped vectors' own (no model is run: a query without a shipped vector is
not judged), the admissibility is read from the data fields, and the budget from the
customer's turns by the invariants' own reader, or their profile. A request that requires
attributes or rules terms out is not judged, since what those admit depends on words this
oracle does not parse.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from vitrine_shop.conversation import ShopRequest
from vitrine_shop.domain import Department, Product
from vitrine_shop.evals.invariants import World, excluded_terms, latest_budget, required_attributes
from vitrine_shop.evals.stated_budget import profile_budget

__all__ = ["discovery_problems"]

_NEAREST = 4  # Discovery's search limit for an interest
_SENSITIVE = "health-personal-care"


def discovery_problems(payload: Mapping[str, Any], request: ShopRequest, world: World) -> list[str]:
    """Each admissible nearest product of an interest's search that is not its candidate."""
    semantics = world.semantics
    turns = request.user_turns
    if semantics is None or required_attributes(turns, world) or excluded_terms(turns):
        return []
    persona = world.personas.get(request.persona_id) if request.persona_id else None
    latest = latest_budget(turns)
    budget: Decimal | None = latest if latest is not None else profile_budget(persona)
    bought = {p.sku for p in persona.purchase_history} if persona else set()
    kinds = {
        product.leaf_category
        for p in (persona.purchase_history if persona else ())
        if not p.gift and (product := world.catalogue.get(p.sku)) is not None
        if not product.consumable
    }

    def searched(product: Product, department: Department | None) -> bool:
        return (
            (department is None or product.department is department)
            and product.stock_units > 0
            and (budget is None or product.price_chf <= budget)
            and product.sku not in bought
            and product.department.value != _SENSITIVE
        )

    found_for: dict[str, set[str]] = {}
    for candidate in payload["candidates"]:
        for label in candidate["interests"]:
            found_for.setdefault(str(label), set()).add(str(candidate["sku"]))
    problems: list[str] = []
    for interest in payload["interests"]:
        if interest.get("source") == "replenishment":
            continue
        scores = semantics.scores_for_query(str(interest.get("search_query", "")))
        if scores is None:
            continue  # no shipped vector for this query: not judged, the model is never run
        department = _department(interest.get("department"))
        nearest = heapq.nsmallest(
            _NEAREST,
            (sku for sku in scores if searched(world.products[sku], department)),
            key=lambda sku: (-scores[sku], sku),
        )
        owed = [
            sku
            for sku in nearest
            if world.products[sku].consumable or world.products[sku].leaf_category not in kinds
        ]
        label = str(interest.get("label"))
        missing = [sku for sku in owed if sku not in found_for.get(label, set())]
        if missing:
            problems.append(
                f"{label!r} is owed its nearest admissible products {owed}; "
                f"{missing} are not among its candidates"
            )
    return problems


def _department(named: Any) -> Department | None:
    if not named:
        return None
    try:
        return Department.parse(str(named))
    except ValueError:
        return None
