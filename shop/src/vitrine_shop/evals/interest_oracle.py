"""What a customer's interest map must say, worked out from their data alone.

The shop documents how it reads a customer (:mod:`vitrine_shop.interests`): a purchase for
oneself weighs 3, a saved item 2, a viewed item 1; a purchase loses half its weight per year
before the clock; gifts and the sensitive department are never evidence (sensitive signals,
gifts included, are only counted); each department's weight is its share of the whole,
rounded to 3 places, heaviest first; a consumable is due when the cycle of its latest own
purchase (times the quantity bought) ends within two weeks, or a quarter of the cycle if that
is shorter.

This module restates those rules as arithmetic over the persona and the catalogue, written
apart from the shop's code, so the map a tool serves can be compared with the map the data
implies: which interest comes first, how heavy each is, what it cites, what is due and when.
Order is what the recommender acts on, and no invariant about truth alone can see it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, NamedTuple

from vitrine_shop.domain import Persona, Product

__all__ = [
    "ExpectedInterest",
    "expected_consumables_due",
    "expected_interests",
    "interest_map_problems",
]

_OWN_PURCHASE, _SAVED, _VIEWED = 3.0, 2.0, 1.0
_HALF_LIFE = 365.0
_DUE_WITHIN = 14
_WEIGHT_TOLERANCE = 0.0015  # one unit in the third place, and float noise


class ExpectedInterest(NamedTuple):
    department: str
    number: int
    weight: float
    evidence: frozenset[str]
    label: str


def _signals(
    persona: Persona, products: Mapping[str, Product], today: datetime.date
) -> list[tuple[Product, float]]:
    found = []
    for line in persona.purchase_history:
        if line.gift or line.sku not in products:
            continue
        years = max((today - line.date).days, 0) / _HALF_LIFE
        found.append((products[line.sku], _OWN_PURCHASE * 2.0 ** (-years)))
    found += [(products[s], _SAVED) for s in persona.saved_items if s in products]
    found += [(products[s], _VIEWED) for s in persona.viewed_items if s in products]
    return found


def _top(counts: Mapping[str, int], n: int) -> list[str]:
    return sorted(counts, key=lambda k: (-counts[k], k))[:n]


def expected_interests(
    persona: Persona, products: Mapping[str, Product], today: datetime.date
) -> tuple[tuple[ExpectedInterest, ...], int]:
    """The interests in the order the data implies, and how many sensitive signals (gifts
    included) must be withheld."""
    signals = _signals(persona, products, today)
    withheld = sum(1 for product, _ in signals if product.department.sensitive)
    withheld += sum(
        1 for sku in persona.gift_skus if sku in products and products[sku].department.sensitive
    )
    kept = [(p, w) for p, w in signals if not p.department.sensitive]
    total = sum(w for _, w in kept)
    by_department: dict[str, list[tuple[Product, float]]] = {}
    for product, weight in kept:
        by_department.setdefault(product.department.display_name, []).append((product, weight))
    interests = []
    for name, rows in by_department.items():
        distinct = {p.sku: p for p, _ in rows}
        leaves: dict[str, int] = {}
        for product in distinct.values():
            leaves[product.leaf_category] = leaves.get(product.leaf_category, 0) + 1
        interests.append(
            ExpectedInterest(
                name,
                rows[0][0].department.number,
                round(sum(w for _, w in rows) / total, 3),
                frozenset(distinct),
                f"{name}: {', '.join(_top(leaves, 3))}",
            )
        )
    interests.sort(key=lambda i: (-i.weight, i.number))
    return tuple(interests), withheld


def expected_consumables_due(
    persona: Persona, products: Mapping[str, Product], today: datetime.date
) -> list[tuple[str, str, int]]:
    """(sku, due date, days left) of each own consumable running out, soonest first."""
    latest: dict[str, tuple[datetime.date, int]] = {}
    for line in persona.purchase_history:
        if not line.gift and (line.sku not in latest or line.date >= latest[line.sku][0]):
            latest[line.sku] = (line.date, line.quantity)
    due = []
    for sku, (bought, quantity) in latest.items():
        product = products.get(sku)
        cycle = product.typical_replenish_days if product is not None else None
        if product is None or cycle is None or product.department.sensitive:
            continue
        ends = bought + datetime.timedelta(days=cycle * quantity)
        left = (ends - today).days
        if left <= min(_DUE_WITHIN, cycle // 4):
            due.append((sku, ends.isoformat(), left))
    return sorted(due, key=lambda d: (d[2], d[0]))


def interest_map_problems(
    data: Mapping[str, Any],
    persona: Persona,
    products: Mapping[str, Product],
    today: datetime.date,
) -> list[str]:
    """Where a served interest map departs from the one the data implies."""
    expected, withheld = expected_interests(persona, products, today)
    served = [i for i in data.get("interests") or () if isinstance(i, Mapping)]
    problems = []
    order = [str(i.get("department")) for i in served]
    if order != [e.department for e in expected]:
        problems.append(
            f"interests in the order {order}, the data implies {[e.department for e in expected]}"
        )
    for interest, wanted in zip(served, expected, strict=False):
        weight = interest.get("weight")
        if not isinstance(weight, int | float) or abs(weight - wanted.weight) > _WEIGHT_TOLERANCE:
            problems.append(
                f"{wanted.department} weighs {weight}, the data implies {wanted.weight}"
            )
        if {str(s) for s in interest.get("evidence_skus") or ()} != wanted.evidence:
            problems.append(f"{wanted.department} cites other evidence than the customer's")
        if interest.get("label") != wanted.label:
            problems.append(
                f"{wanted.department} is labelled {interest.get('label')!r}, "
                f"the data implies {wanted.label!r}"
            )
    if data.get("withheld_sensitive") != withheld:
        problems.append(
            f"{data.get('withheld_sensitive')} sensitive signal(s) withheld, "
            f"the data has {withheld}"
        )
    gifts = sorted(
        s for s in persona.gift_skus if s not in products or not products[s].department.sensitive
    )
    if list(data.get("gift_signals") or ()) != gifts:
        problems.append(f"gift signals {data.get('gift_signals')}, the data has {gifts}")
    due = [
        (str(d.get("sku")), str(d.get("due_on")), d.get("days_left"))
        for d in data.get("consumables_due") or ()
        if isinstance(d, Mapping)
    ]
    wanted_due = expected_consumables_due(persona, products, today)
    if due != wanted_due:
        problems.append(f"consumables due {due}, the data implies {wanted_due}")
    return problems
