"""The interest map: what a customer's own behaviour says they care about, and what it must not.

The map is derived in code, deterministically, from purchases, saved and viewed items, read
against the demo clock. Three kinds of evidence are deliberately kept out of it:

- gifts: something bought for someone else says nothing about the buyer's own taste, so gift
  purchases are listed as *signals to suppress*, never as interests;
- the sensitive department: a health purchase can reveal a condition, so such evidence is only
  counted (``withheld_sensitive``) and never named, not even by SKU;
- nothing is invented: a customer without evidence gets an empty map, and the recommender is
  expected to ask rather than guess.
"""

from __future__ import annotations

import datetime
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from vitrine_shop.catalogue import Catalogue
from vitrine_shop.domain import Department, Persona, Product

__all__ = [
    "ConsumableDue",
    "Interest",
    "InterestMap",
    "consumables_due",
    "derive_interest_map",
]

# Evidence strength: a purchase is a commitment, saving is an intention, viewing is curiosity.
_PURCHASE_WEIGHT = 3.0
_SAVED_WEIGHT = 2.0
_VIEWED_WEIGHT = 1.0
# Taste drifts: a purchase loses half its weight every year before the demo clock.
_HALF_LIFE_DAYS = 365.0
# A consumable counts as running low this many days before its cycle ends (at most a quarter
# of the cycle, so a monthly consumable is not "due" for half its life).
_DUE_WINDOW_DAYS = 14
_LABEL_CATEGORIES = 3
_LABEL_CONTEXTS = 4


@dataclass(frozen=True, slots=True)
class Interest:
    """One department the customer's own evidence points to; weights over a map sum to 1."""

    department: Department
    label: str
    weight: float
    evidence_skus: tuple[str, ...]
    contexts: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "department": self.department.display_name,
            "label": self.label,
            "weight": self.weight,
            "evidence_skus": list(self.evidence_skus),
            "contexts": list(self.contexts),
        }


@dataclass(frozen=True, slots=True)
class ConsumableDue:
    """A consumable whose typical replenishment cycle has (nearly) run out at the clock."""

    sku: str
    name: str
    last_purchased: datetime.date
    replenish_days: int
    due_on: datetime.date
    days_left: int  # negative when overdue

    def to_dict(self) -> dict[str, Any]:
        return {
            "sku": self.sku,
            "name": self.name,
            "last_purchased": self.last_purchased.isoformat(),
            "replenish_days": self.replenish_days,
            "due_on": self.due_on.isoformat(),
            "days_left": self.days_left,
        }


@dataclass(frozen=True, slots=True)
class InterestMap:
    interests: tuple[Interest, ...]
    gift_signals: tuple[str, ...]  # SKUs bought as gifts: suppressed, not evidence of taste
    withheld_sensitive: int  # how many sensitive signals were withheld; never which
    consumables_due: tuple[ConsumableDue, ...]

    @property
    def is_empty(self) -> bool:
        """No interest and nothing due: there is no evidence to recommend from."""
        return not self.interests and not self.consumables_due

    @property
    def departments(self) -> tuple[Department, ...]:
        return tuple(i.department for i in self.interests)

    def to_dict(self) -> dict[str, Any]:
        return {
            "interests": [i.to_dict() for i in self.interests],
            "gift_signals": list(self.gift_signals),
            "withheld_sensitive": self.withheld_sensitive,
            "consumables_due": [c.to_dict() for c in self.consumables_due],
            "evidence": "none: ask before recommending" if self.is_empty else "own behaviour",
        }


def _recency(purchased: datetime.date, clock: datetime.date) -> float:
    age = max(0, (clock - purchased).days)
    return float(0.5 ** (age / _HALF_LIFE_DAYS))


def _evidence(
    persona: Persona, catalogue: Catalogue, clock: datetime.date
) -> Iterable[tuple[Product, float]]:
    """Every usable (product, weight) signal, gifts excluded; unknown SKUs are skipped."""
    for purchase in persona.purchase_history:
        product = catalogue.get(purchase.sku)
        if product is not None and not purchase.gift:
            yield product, _PURCHASE_WEIGHT * _recency(purchase.date, clock)
    for skus, weight in (
        (persona.saved_items, _SAVED_WEIGHT),
        (persona.viewed_items, _VIEWED_WEIGHT),
    ):
        for sku in skus:
            product = catalogue.get(sku)
            if product is not None:
                yield product, weight


def _label(department: Department, products: list[Product]) -> tuple[str, tuple[str, ...]]:
    categories = Counter(p.leaf_category for p in products)
    contexts = Counter(c for p in products for c in p.contexts)
    # Ties break alphabetically so the label is the same on every run.
    top = sorted(categories, key=lambda c: (-categories[c], c))[:_LABEL_CATEGORIES]
    top_contexts = tuple(sorted(contexts, key=lambda c: (-contexts[c], c))[:_LABEL_CONTEXTS])
    return f"{department.display_name}: {', '.join(top)}", top_contexts


def consumables_due(
    persona: Persona, catalogue: Catalogue, clock: datetime.date
) -> tuple[ConsumableDue, ...]:
    """Own, non-sensitive consumables whose cycle (times the quantity bought) is nearly over."""
    latest: dict[str, tuple[datetime.date, int]] = {}
    for purchase in persona.purchase_history:
        if purchase.gift:
            continue
        seen = latest.get(purchase.sku)
        if seen is None or purchase.date >= seen[0]:
            latest[purchase.sku] = (purchase.date, purchase.quantity)
    due: list[ConsumableDue] = []
    for sku, (bought, quantity) in latest.items():
        product = catalogue.get(sku)
        if product is None or product.department.sensitive:
            continue
        cycle = product.typical_replenish_days
        if cycle is None:
            continue
        lasts = cycle * quantity
        due_on = bought + datetime.timedelta(days=lasts)
        days_left = (due_on - clock).days
        if days_left <= min(_DUE_WINDOW_DAYS, cycle // 4):
            due.append(ConsumableDue(sku, product.name, bought, cycle, due_on, days_left))
    return tuple(sorted(due, key=lambda d: (d.days_left, d.sku)))


def derive_interest_map(
    persona: Persona, catalogue: Catalogue, clock: datetime.date
) -> InterestMap:
    """The deterministic interest map of one persona at ``clock``."""
    weights: dict[Department, float] = defaultdict(float)
    products: dict[Department, dict[str, Product]] = defaultdict(dict)
    withheld = 0
    for product, weight in _evidence(persona, catalogue, clock):
        if product.department.sensitive:
            withheld += 1
            continue
        weights[product.department] += weight
        products[product.department].setdefault(product.sku, product)
    total = sum(weights.values())
    interests: list[Interest] = []
    for department, weight in weights.items():
        evidence = sorted(products[department].values(), key=lambda p: p.sku)
        label, contexts = _label(department, evidence)
        interests.append(
            Interest(
                department,
                label,
                round(weight / total, 3),
                tuple(p.sku for p in evidence),
                contexts,
            )
        )
    interests.sort(key=lambda i: (-i.weight, i.department.number))
    gifts: list[str] = []
    for sku in sorted(persona.gift_skus):
        gift = catalogue.get(sku)
        if gift is not None and gift.department.sensitive:
            withheld += 1  # even a gift names a health product: count it, never name it
        else:
            gifts.append(sku)
    return InterestMap(
        tuple(interests), tuple(gifts), withheld, consumables_due(persona, catalogue, clock)
    )
