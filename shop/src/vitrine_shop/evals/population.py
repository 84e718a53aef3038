"""A generated population of customers: histories the packaged personas do not have.

Fourteen hand-written personas cannot hold every shape of history the shop must handle. This
module draws more from the catalogue, seeded: each synthetic customer owns durables in two
departments, bought one consumable twice (an older and a recent purchase, sometimes more than
one unit), saved and viewed a product, and, in turn, bought a gift for someone else, a product
from the sensitive department, or a consumable that is now out of stock; every other one states
a budget in their profile. The shop is served these customers beside its own, and the agent,
the workflow and the explorative model answer each of them three ways, every answer held to
the data invariants against the population itself.
"""

from __future__ import annotations

import datetime
import functools
import random
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from vitrine import (
    BenchmarkDefinition,
    Case,
)
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.domain import Persona, Product, Purchase
from vitrine_shop.evals.invariants import World, invariant_check
from vitrine_shop.operations import ShopServices

__all__ = [
    "POPULATION_KEY",
    "population_definition",
    "population_services",
    "population_world",
    "synthetic_customers",
]

POPULATION_KEY = "vitrine-population"
POPULATION_SEED = 0
POPULATION_SIZE = 8
# Names no product uses, so an answer that names one names a customer.
_NAMES = ("Ines", "Tomasz", "Aiko", "Brigitte", "Kwame", "Lotte", "Rafael", "Yusuf")
_QUESTIONS = ("Is there anything I'm about to run out of?",)


def _days_ago(clock: datetime.date, days: int) -> datetime.date:
    return clock - datetime.timedelta(days=days)


def _purchase(product: Product, date: datetime.date, quantity: int = 1, gift: bool = False) -> Any:
    return Purchase(
        sku=product.sku,
        date=date,
        quantity=quantity,
        price_paid_chf=product.price_chf or Decimal(0),
        gift=gift,
    )


def _customer(number: int, rng: random.Random, world: World) -> Persona:
    clock = world.today
    everyday = [p for p in world.catalogue if p.department.value != "health-personal-care"]
    departments = sorted({p.department.value for p in everyday})
    first, second = rng.sample(departments, 2)
    durables = [p for p in everyday if p.department.value == first and not p.consumable]
    consumables = [
        p for p in everyday if p.consumable and p.typical_replenish_days and p.stock_units > 0
    ]
    history = [
        _purchase(product, _days_ago(clock, rng.randint(60, 400)))
        for product in rng.sample(durables, min(2, len(durables)))
    ]
    staple = rng.choice(consumables)
    quantity = rng.randint(1, 2)
    cycle = int(staple.typical_replenish_days or 30) * quantity
    history.append(_purchase(staple, _days_ago(clock, cycle + rng.randint(60, 200))))
    # The recent purchase sets the due date: within a few days of running out, either side.
    history.append(_purchase(staple, _days_ago(clock, cycle + rng.randint(-6, 4)), quantity))
    kind = number % 4
    if kind == 0:
        gifts = [p for p in everyday if p.department.value not in (first, second)]
        history.append(_purchase(rng.choice(gifts), _days_ago(clock, 90), gift=True))
    elif kind == 1:
        sensitive = [p for p in world.catalogue if p.department.value == "health-personal-care"]
        history.append(_purchase(rng.choice(sensitive), _days_ago(clock, 45)))
    elif kind == 2:
        gone = [p for p in world.catalogue if p.consumable and p.stock_units == 0]
        if gone:
            history.append(_purchase(rng.choice(gone), _days_ago(clock, 400)))
    others = [p for p in everyday if p.department.value == second]
    saved, viewed = rng.sample(others, 2) if len(others) >= 2 else (others * 2)[:2]
    constraints: dict[str, str] = {}
    if number % 2:
        constraints["budget_chf"] = str(rng.choice((80, 150, 300)))
    return Persona(
        id=f"synthetic-{number + 1:02d}",
        display_name=_NAMES[number % len(_NAMES)],
        profile=f"A generated customer who shops for {first} and {second}.",
        interests=(first.replace("-", " "), second.replace("-", " ")),
        purchase_history=tuple(history),
        saved_items=(saved.sku,),
        viewed_items=(viewed.sku,),
        constraints=constraints,
    )


def synthetic_customers(
    world: World, count: int = POPULATION_SIZE, seed: int = POPULATION_SEED
) -> tuple[Persona, ...]:
    rng = random.Random(seed)
    return tuple(_customer(number, rng, world) for number in range(count))


@functools.cache
def population_world() -> World:
    """The packaged world with the synthetic customers added: the population's oracle."""
    shipped = World.shipped()
    extra = {p.id: p for p in synthetic_customers(shipped)}
    return World(shipped.catalogue, {**shipped.personas, **extra}, shipped.today)


def population_services(base: ShopServices) -> ShopServices:
    """``base``'s catalogue and embedder serving the packaged customers and the population."""
    personas = {**base.personas, **{p.id: p for p in synthetic_customers(World.shipped())}}
    services = ShopServices(base.catalogue, personas, base.embedder, base.clock)
    services.use_vectors(base.vectors)
    return services


def _cases(customers: Sequence[Persona]) -> list[Case]:
    cases = []
    for persona in customers:
        prices = sorted(p.price_paid_chf for p in persona.purchase_history)
        stated = prices[len(prices) // 2]
        if "budget_chf" in persona.constraints:
            # Well under the profile's budget: what the customer says now is what binds.
            stated = min(stated, Decimal(persona.constraints["budget_chf"]) / 4)
        budget = f"My budget is at most CHF {stated:.0f}. What would you add?"
        for number, text in enumerate((*_QUESTIONS, budget)):
            request = ShopRequest.single(persona.id, text)
            cases.append(
                Case(
                    f"{persona.id}-{number + 1}",
                    request.to_case_input(),
                    {"persona_id": persona.id},
                )
            )
    return cases


@functools.cache
def population_definition() -> BenchmarkDefinition:
    customers = synthetic_customers(World.shipped())
    return BenchmarkDefinition(
        POPULATION_KEY,
        "1.0.0",
        _cases(customers),
        [invariant_check(population_world())],
        bindings={"seed": POPULATION_SEED, "customers": len(customers)},
        description="A generated population of customers, held to the data invariants",
    )
