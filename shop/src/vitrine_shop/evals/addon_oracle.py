"""The add-ons the workflow owes a customer, computed from the catalogue's declarations.

Discovery declares its policy for what the customer owns: for each history interest, the
products the catalogue declares compatible with an owned durable the interest cites (the
complements lookup's first eight, declared ones first) are taken in order, three at most per
interest, each only if the customer may be offered it. The candidates oracle says each
candidate handed to the Ranker is admissible; this one says none of the admissible add-ons was
left out: every product the policy owes an interest must be a candidate found for it, and no
candidate may be handed over as an add-on the policy does not owe (past an interest's bound,
say).

Admissibility is read from the data fields (stock, price, purchases, the sensitive
department, the kinds of durable bought for oneself) and the budget from the customer's turns
by the invariants' own reader, or their profile; a request that requires attributes or rules
terms out is not judged, since what those admit depends on words this oracle does not parse.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from vitrine_shop.conversation import ShopRequest
from vitrine_shop.domain import Persona, Product
from vitrine_shop.evals.invariants import World, excluded_terms, latest_budget, required_attributes
from vitrine_shop.evals.stated_budget import profile_budget

__all__ = ["addon_problems"]

_PER_INTEREST = 3
_LOOKUP = 8  # Discovery asks the complements lookup for this many
_SENSITIVE = "health-personal-care"


def _declared(owned: Product, world: World) -> list[Product]:
    """The declared complements of ``owned`` in the lookup's order, its first eight at most."""
    seen = {owned.sku}
    found: list[Product] = []
    declared = [*world.catalogue.compatible_with(owned.sku)]
    declared += [p for s in owned.compat_skus if (p := world.catalogue.get(s)) is not None]
    for product in declared:
        if product.sku not in seen:
            seen.add(product.sku)
            found.append(product)
    return found[:_LOOKUP]


def _durables(persona: Persona, world: World) -> dict[str, Product]:
    """What the customer bought for themselves that lasts."""
    return {
        p.sku: product
        for p in persona.purchase_history
        if not p.gift and (product := world.catalogue.get(p.sku)) is not None
        if not product.consumable
    }


def addon_problems(payload: Mapping[str, Any], request: ShopRequest, world: World) -> list[str]:
    """Each add-on the policy owes a history interest that is not among the Ranker's candidates."""
    persona = world.personas.get(request.persona_id) if request.persona_id else None
    turns = request.user_turns
    if persona is None or required_attributes(turns, world) or excluded_terms(turns):
        return []
    latest = latest_budget(turns)
    budget: Decimal | None = latest if latest is not None else profile_budget(persona)
    durables = _durables(persona, world)
    kinds = {p.leaf_category for p in durables.values()}
    bought = {p.sku for p in persona.purchase_history}

    def admissible(product: Product) -> bool:
        return (
            product.sku not in bought
            and (product.stock_units or 0) > 0
            and product.department.value != _SENSITIVE
            and (product.consumable or product.leaf_category not in kinds)
            and (budget is None or (product.price_chf is not None and product.price_chf <= budget))
        )

    found_for: dict[str, set[str]] = {}
    for candidate in payload["candidates"]:
        for label in candidate["interests"]:
            found_for.setdefault(str(label), set()).add(str(candidate["sku"]))
    problems: list[str] = []
    owed_any: set[str] = set()
    for interest in payload["interests"]:
        if interest.get("source") != "history":
            continue
        owed: list[str] = []
        for sku in interest.get("evidence_skus") or ():
            owned = durables.get(str(sku))
            for product in _declared(owned, world) if owned is not None else ():
                if len(owed) < _PER_INTEREST and admissible(product):
                    owed.append(product.sku)
        owed_any.update(owed)
        label = str(interest["label"])
        missing = [sku for sku in owed if sku not in found_for.get(label, set())]
        if missing:
            problems.append(
                f"{label!r} is owed the add-ons {owed} for what the customer owns; "
                f"{missing} are not among its candidates"
            )
    # Nor more than owed: an add-on past an interest's bound, or one the policy never owes.
    extra = sorted(
        str(c["sku"])
        for c in payload["candidates"]
        if c.get("goes_with") and c["sku"] not in owed_any
    )
    if extra:
        problems.append(f"{extra} are handed over as add-ons, but the policy owes no interest them")
    return problems
