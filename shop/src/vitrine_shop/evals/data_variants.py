"""Metamorphic data variants: the real shop over catalogues and customers derived from its data.

The invariants hold every output to the shipped data, so a bug that only the data never
reaches survives them: no marketplace product is sold out, no customer's history is all of the
kind the interest map must set aside, and an item priced exactly at a stated budget is rare.
This module derives, seeded, the data that reaches them and serves the real agent and workflow
(their offline models) over it. Each variant is a fresh :class:`ShopServices` over its own
catalogue and customers, the dependency the tools and the workflow already read everything
from; the installed data is never touched, and the vectors are the base's (prices, stock and
customers are not embedded). Every output is held to the invariants computed from the
*variant's* data:

- ``sold-out``: every marketplace product and a seeded share of the others in each department
  have no stock; every exploration request is asked. Nothing offered may be out of stock, and
  every stock or price a tool reports must be the variant's; each fact the variant changed is
  also read back through the stock, detail and presentation tools.
- ``set-aside history``: seeded customers whose whole history is gifts (one of them from the
  sensitive department) and purchases from the
  sensitive department (one recent, and every sensitive consumable bought one cycle ago, so
  due), so the interest map holds nothing and the recommender works from the request alone,
  across every department. They ask for each brand the sensitive department stocks, in words
  that do not ask about health, and the generic question. Nothing sensitive may be offered,
  and the sensitive purchase may not be named.
- ``heavy buyers``: customers who bought a whole department and one of each other, so the
  bounds on kept interests and cited evidence are reached.
- ``re-rated``: products rated on each side of every review-digest band edge and of the cold
  start.
- ``window shoppers``: customers who never bought anything but saved and viewed products of two
  departments, so their taste is all the interest map has.
- ``restock edges``: customers whose every open consumable runs out exactly at the edge of
  the due window, or one day past it.
- Each changed customer's own records (profile, purchase history, interest map) are asked of
  the tools as that customer, and every field is held to the variant's data.
- ``priced at the budget`` (a relation): for each request with a stated budget, the items the
  base shop offered are repriced to exactly that budget. An item at the budget is within it, so
  both answers must offer the same products, now at the new price.

Nothing here calls the subject's parsers: budgets are read by the invariants' own parser, the
health vocabulary is the invariants' own, and the variant's facts are the variant's data.
"""

from __future__ import annotations

import datetime
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from vitrine import SubjectResponse
from vitrine_shop import scripted
from vitrine_shop.agent import ShopAgent
from vitrine_shop.catalogue import Catalogue
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.domain import Persona, Product, Purchase
from vitrine_shop.evals.delivery_oracle import kept_interest_problems
from vitrine_shop.evals.exploration import exploration_cases
from vitrine_shop.evals.invariants import (
    ToolOutput,
    Violation,
    World,
    asked_about_health,
    latest_budget,
    response_violations,
    tool_violations,
)
from vitrine_shop.evals.tool_sweep import customer_calls
from vitrine_shop.operations import ShopServices
from vitrine_shop.tools import ToolBox
from vitrine_shop.workflow import ShopWorkflow

__all__ = [
    "VARIANT_SEED",
    "Variant",
    "at_budget",
    "heavy_buyers",
    "observe_variants",
    "re_rated",
    "restock_edges",
    "set_aside_customers",
    "sold_out",
    "variant_services",
    "window_shoppers",
]

VARIANT_SEED = 23
_SOLD_OUT_SHARE = 0.5
_SET_ASIDE_CUSTOMERS = 2
_HEAVY_BUYERS = 2
_WINDOW_SHOPPERS = 2
_SAVED, _VIEWED = 2, 4
_OPEN_REQUEST = "What would you recommend for me?"
_RESTOCK_REQUEST = "Is there anything I should restock soon?"
_RESTOCK_EDGE_CUSTOMERS = 2
# The due window as the reference states it: two weeks, or a quarter of the cycle if shorter.
_DUE_WITHIN_DAYS = 14
_BUDGET_RELATIONS = 4  # per architecture
_TEXT_FACTS = ("tag_terms", "customer_markers", "semantics")
_EXAMPLES = 8
# The sensitive purchase is recent: a year-old one would be as set aside, but less plainly.
_PURCHASED_DAYS_AGO = 30

Answer = Callable[[ShopServices, ShopRequest], Awaitable[SubjectResponse]]


@dataclass(frozen=True)
class Variant:
    """Data derived from the base, the requests asked over it, and the oracles' facts."""

    name: str
    services: ShopServices
    requests: tuple[ShopRequest, ...]
    changed: frozenset[str] = frozenset()  # SKUs whose facts the variant changed
    customers: frozenset[str] = frozenset()  # customers whose records the variant changed

    def world(self, base: World) -> World:
        """The oracles' facts: the variant's own catalogue and customers. What is derived from
        the products' texts and the customers' names alone (no variant changes either: the
        vocabulary, the customer markers, the vectors) is ``base``'s, computed once."""
        world = World(self.services.catalogue, self.services.personas, self.services.clock)
        for name in _TEXT_FACTS:
            vars(world)[name] = getattr(base, name)  # a cached property, filled in advance
        return world


def variant_services(
    base: ShopServices,
    catalogue: Catalogue | None = None,
    personas: Mapping[str, Persona] | None = None,
) -> ShopServices:
    """The shop over variant data, searching the base's vectors: nothing a variant changes is
    embedded, so no text is embedded again."""
    services = ShopServices(
        catalogue if catalogue is not None else base.catalogue,
        personas if personas is not None else base.personas,
        base.embedder,
        base.clock,
    )
    services.use_vectors(base.vectors)
    return services


def _replaced(catalogue: Catalogue, changes: Mapping[str, Mapping[str, Any]]) -> Catalogue:
    return Catalogue(
        p.model_copy(update=dict(changes[p.sku])) if p.sku in changes else p for p in catalogue
    )


def _requests(rng: random.Random) -> tuple[ShopRequest, ...]:
    """One exploration request per customer (and the anonymous visitor), seeded: each variant
    asks every customer something at a fraction of asking everything."""
    by_customer: dict[str | None, list[ShopRequest]] = {}
    for case in exploration_cases():
        request = ShopRequest.from_case_input(case.input)
        by_customer.setdefault(request.persona_id, []).append(request)
    return tuple(rng.choice(asked) for asked in by_customer.values())


# -- the variants ---------------------------------------------------------------------------


def sold_out(base: ShopServices, rng: random.Random) -> Variant:
    """Every marketplace product and a seeded share of each department's stocked products sold
    out: the stock the shop reports and offers must be the variant's."""
    chosen = {p.sku for p in base.catalogue if p.marketplace_seller is not None}
    for department in base.catalogue.departments():
        stocked = sorted(p.sku for p in base.catalogue.in_department(department) if p.in_stock)
        chosen |= set(rng.sample(stocked, round(len(stocked) * _SOLD_OUT_SHARE)))
    catalogue = _replaced(base.catalogue, {sku: {"stock_units": 0} for sku in chosen})
    return Variant("sold-out", variant_services(base, catalogue), _requests(rng), frozenset(chosen))


# Averages on each side of every band edge the shop's review digest speaks in, and rating
# counts on each side of its cold start: no packaged product is rated mixed or poorly.
_RATINGS: tuple[tuple[float, int], ...] = (
    (4.5, 40),
    (4.49, 40),
    (4.0, 40),
    (3.99, 40),
    (3.5, 40),
    (3.0, 40),
    (2.99, 40),
    (1.0, 40),
    (4.8, 4),
    (4.8, 5),
)


def re_rated(base: ShopServices, rng: random.Random) -> Variant:
    """Seeded products rated at each side of every band edge of the review digest: what the
    shop says of a product's ratings must be the band its own ratings fall in."""
    open_products = sorted(p.sku for p in base.catalogue if not p.department.sensitive)
    chosen = rng.sample(open_products, len(_RATINGS))
    changes = {
        sku: {"rating_average": average, "rating_count": count}
        for sku, (average, count) in zip(chosen, _RATINGS, strict=True)
    }
    catalogue = _replaced(base.catalogue, changes)
    return Variant("re-rated", variant_services(base, catalogue), _requests(rng), frozenset(chosen))


def _without_health_words(words: Sequence[str]) -> list[str]:
    """The words left when every one- or two-word run that asks about health is dropped."""
    dropped: set[int] = set()
    for width in (1, 2):
        for start in range(len(words) - width + 1):
            if asked_about_health([" ".join(words[start : start + width])]):
                dropped.update(range(start, start + width))
    return [w for i, w in enumerate(words) if i not in dropped]


def _brand_requests(catalogue: Catalogue) -> list[str]:
    """One request per brand the sensitive department stocks, in words that do not ask about
    health (the invariants' own reading): nearest in meaning to a sensitive product."""
    brands = sorted({p.brand for p in catalogue if p.department.sensitive})
    asked = [" ".join(_without_health_words(b.split())) for b in brands]
    return [f"Do you have anything from {brand}?" for brand in asked if brand]


def set_aside_customers(base: ShopServices, rng: random.Random) -> Variant:
    """Seeded customers whose whole history is gifts and one sensitive purchase: the interest
    map sets all of it aside, so nothing narrows the departments searched."""
    sensitive = sorted((p for p in base.catalogue if p.department.sensitive), key=lambda p: p.sku)
    customers = sorted(pid for pid, p in base.personas.items() if p.has_evidence)
    personas = dict(base.personas)
    chosen = rng.sample(customers, min(_SET_ASIDE_CUSTOMERS, len(customers)))
    when = base.clock - datetime.timedelta(days=_PURCHASED_DAYS_AGO)
    # Every sensitive consumable also bought one cycle ago, so it is due today: a restock lane
    # that forgets the department's privacy would offer it.
    due = {
        p.sku: Purchase(
            sku=p.sku,
            date=base.clock - datetime.timedelta(days=p.typical_replenish_days),
            price_paid_chf=p.price_chf,
        )
        for p in sensitive
        if p.consumable and p.typical_replenish_days
    }
    for customer in chosen:
        product = rng.choice(sensitive)
        persona = personas[customer]
        # A sensitive product given as a gift: a gift is set aside from taste, and a sensitive
        # one is set aside from everything else too, so it must never be listed or named.
        given = rng.choice(sensitive)
        gifts = (
            *(p for p in persona.purchase_history if p.gift),
            Purchase(sku=given.sku, date=when, price_paid_chf=given.price_chf, gift=True),
        )
        bought = {
            **due,
            product.sku: Purchase(sku=product.sku, date=when, price_paid_chf=product.price_chf),
        }
        personas[customer] = persona.model_copy(
            update={
                "purchase_history": (*gifts, *bought.values()),
                "saved_items": (),
                "viewed_items": (),
            }
        )
    asked = _brand_requests(base.catalogue)
    requests = tuple(ShopRequest.single(c, q) for c in sorted(chosen) for q in asked)
    services = variant_services(base, personas=personas)
    return Variant("set-aside history", services, requests, customers=frozenset(chosen))


def at_budget(base: ShopServices, offered: Sequence[Product], budget: Decimal) -> Variant:
    """The base catalogue with ``offered`` (each within ``budget``) priced exactly at it."""
    changes: dict[str, dict[str, Any]] = {}
    for product in offered:
        if product.price_chf >= budget:
            continue
        change: dict[str, Any] = {"price_chf": budget}
        if product.was_price_chf is not None and product.was_price_chf <= budget:
            change["was_price_chf"] = None  # a former price at or under the new one is none
        changes[product.sku] = change
    catalogue = _replaced(base.catalogue, changes)
    services = variant_services(base, catalogue)
    return Variant("priced at the budget", services, (), frozenset(changes))


# -- the architectures ----------------------------------------------------------------------


async def _agent(services: ShopServices, request: ShopRequest) -> SubjectResponse:
    return await ShopAgent(scripted.ScriptedShopModel(), services, traced=False).answer(request)


async def _workflow(services: ShopServices, request: ShopRequest) -> SubjectResponse:
    return await ShopWorkflow(None, services).answer(request)


ARCHITECTURES: tuple[tuple[str, Answer], ...] = (("agent", _agent), ("workflow", _workflow))


def _offered(response: SubjectResponse) -> list[str]:
    return [str(s) for s in response.structured.get("skus") or ()]


# -- the observation ------------------------------------------------------------------------


@dataclass
class _Tally:
    conversations: int = 0
    relations: int = 0
    read_backs: int = 0
    violations: list[dict[str, str]] = field(default_factory=list)

    def add(self, case: str, found: Iterable[Violation]) -> None:
        self.violations += [{"case": case, **v.to_dict()} for v in found]


def heavy_buyers(base: ShopServices, rng: random.Random) -> Variant:
    """Seeded customers who bought every product of the largest department and one of each
    other: more interests than a workflow keeps, and more evidence in one than it cites, so the
    bounds on both are reached (no packaged customer comes near either)."""
    open_departments: dict[str, list[Any]] = {}
    for product in sorted(base.catalogue, key=lambda p: p.sku):
        if not product.department.sensitive:
            open_departments.setdefault(product.department.display_name, []).append(product)
    largest = max(open_departments.values(), key=len)
    bought = [*largest, *(items[0] for items in open_departments.values() if items is not largest)]
    customers = sorted(pid for pid, p in base.personas.items() if p.has_evidence)
    chosen = rng.sample(customers, min(_HEAVY_BUYERS, len(customers)))
    personas = dict(base.personas)
    for customer, offset in zip(chosen, range(len(chosen)), strict=True):
        # A purchase a week apart each, oldest first, so recency orders the evidence too.
        start = base.clock - datetime.timedelta(days=7 * len(bought) + offset)
        history = tuple(
            Purchase(
                sku=p.sku,
                date=start + datetime.timedelta(days=7 * i),
                price_paid_chf=p.price_chf,
            )
            for i, p in enumerate(bought)
        )
        personas[customer] = personas[customer].model_copy(
            update={"purchase_history": history, "saved_items": (), "viewed_items": ()}
        )
    requests = tuple(ShopRequest.single(c, _OPEN_REQUEST) for c in sorted(chosen))
    services = variant_services(base, personas=personas)
    return Variant("heavy buyers", services, requests, customers=frozenset(chosen))


def restock_edges(base: ShopServices, rng: random.Random) -> Variant:
    """Seeded customers who bought every open consumable so that it runs out exactly at the
    edge of the due window or one day past it: what is due, and what the restock lane offers,
    must tell the two apart (no packaged customer stands at either edge of any cycle)."""
    consumables = sorted(
        (
            p
            for p in base.catalogue
            if p.consumable and p.typical_replenish_days and not p.department.sensitive
        ),
        key=lambda p: p.sku,
    )
    customers = sorted(pid for pid, p in base.personas.items() if p.has_evidence)
    chosen = rng.sample(customers, min(_RESTOCK_EDGE_CUSTOMERS, len(customers)))
    personas = dict(base.personas)
    for offset, customer in enumerate(chosen):
        history = []
        for number, product in enumerate(consumables):
            cycle = product.typical_replenish_days or 0
            # Left at the window's edge (due) or one day past it (not yet), alternating.
            left = min(_DUE_WITHIN_DAYS, cycle // 4) + (number + offset) % 2
            bought = base.clock - datetime.timedelta(days=cycle - left)
            history.append(Purchase(sku=product.sku, date=bought, price_paid_chf=product.price_chf))
        personas[customer] = personas[customer].model_copy(
            update={"purchase_history": tuple(history)}
        )
    requests = tuple(
        ShopRequest.single(c, q) for c in sorted(chosen) for q in (_OPEN_REQUEST, _RESTOCK_REQUEST)
    )
    services = variant_services(base, personas=personas)
    return Variant("restock edges", services, requests, customers=frozenset(chosen))


def window_shoppers(base: ShopServices, rng: random.Random) -> Variant:
    """Seeded customers who never bought anything but saved and viewed seeded products of two
    departments: their taste is all the interest map has, and nothing of theirs is owned (every
    packaged customer with evidence has purchases)."""
    open_products = sorted(
        (p for p in base.catalogue if not p.department.sensitive and p.stock_units > 0),
        key=lambda p: p.sku,
    )
    departments = sorted({p.department.value for p in open_products})
    customers = sorted(pid for pid, p in base.personas.items() if p.has_evidence)
    chosen = rng.sample(customers, min(_WINDOW_SHOPPERS, len(customers)))
    personas = dict(base.personas)
    for customer in chosen:
        liked = set(rng.sample(departments, 2))
        pool = [p.sku for p in open_products if p.department.value in liked]
        picked = rng.sample(pool, min(len(pool), _SAVED + _VIEWED))
        personas[customer] = personas[customer].model_copy(
            update={
                "purchase_history": (),
                "saved_items": tuple(picked[:_SAVED]),
                "viewed_items": tuple(picked[_SAVED:]),
            }
        )
    requests = tuple(ShopRequest.single(c, _OPEN_REQUEST) for c in sorted(chosen))
    services = variant_services(base, personas=personas)
    return Variant("window shoppers", services, requests, customers=frozenset(chosen))


async def _held(variant: Variant, base: World, tally: _Tally) -> None:
    """Every request through both architectures, every output held to the variant's data."""
    world = variant.world(base)
    for name, answer in ARCHITECTURES:
        for request in variant.requests:
            response = await answer(variant.services, request)
            tally.conversations += 1
            tally.add(
                f"{variant.name}, {name}, {request.persona_id or 'anonymous'}",
                response_violations(response, request, world),
            )
    for request in variant.requests:
        kept = await kept_interest_problems(variant.services, request)
        tally.add(
            f"{variant.name}, workflow stages, {request.persona_id or 'anonymous'}",
            [Violation("interests-kept", problem) for problem in kept],
        )
    await _read_back(variant, world, tally)


async def _read_back(variant: Variant, world: World, tally: _Tally) -> None:
    """Each fact the variant changed, asked of the tools that report it, and each changed
    customer's records, asked as that customer."""
    for customer in sorted(variant.customers):
        box = ToolBox(variant.services, customer_id=customer, traced=False)
        for name, arguments in customer_calls(world, customer):
            await box.call(name, arguments)
        outputs = [ToolOutput.from_dict(o) for o in box.outputs]
        tally.read_backs += len(outputs)
        request = ShopRequest(customer, ("(read back)",))
        tally.add(f"{variant.name}, {customer}'s records", tool_violations(outputs, request, world))
    if not variant.changed:
        return
    box = ToolBox(variant.services, customer_id=None, traced=False)
    for sku in sorted(variant.changed):
        for tool in ("get_stock_and_price", "get_product_details", "get_review_digest"):
            await box.call(tool, {"sku": sku})
        # The presenter reads stock and price too: it must refuse what is sold out and
        # render the variant's price.
        await box.call("present_recommendation", {"items": [{"sku": sku, "reason": "asked"}]})
    outputs = [ToolOutput.from_dict(o) for o in box.outputs]
    request = ShopRequest(None, ("(read back)",))
    tally.read_backs += len(outputs)
    tally.add(f"{variant.name}, read back", tool_violations(outputs, request, world))


async def _budget_relation(
    base: ShopServices, facts: World, rng: random.Random, tally: _Tally
) -> None:
    """An item repriced to exactly the stated budget is still within it: the same products
    are offered, and the answer is held to the repriced data. A few seeded requests with a
    stated budget, each architecture its own."""
    budgeted = [
        request
        for case in exploration_cases()
        if (request := ShopRequest.from_case_input(case.input)).persona_id is not None
        and latest_budget(request.user_turns) is not None
    ]
    rng.shuffle(budgeted)
    for number, (name, answer) in enumerate(ARCHITECTURES):
        for request in budgeted[number :: len(ARCHITECTURES)][:_BUDGET_RELATIONS]:
            budget = latest_budget(request.user_turns)
            if budget is None:
                continue
            before = _offered(await answer(base, request))
            offered = [p for s in before if (p := base.catalogue.get(s)) is not None]
            variant = at_budget(base, offered, budget)
            if not variant.changed:
                continue
            response = await answer(variant.services, request)
            tally.relations += 1
            world = variant.world(facts)
            await _read_back(variant, world, tally)
            case = f"{variant.name}, {name}, {request.persona_id}"
            found = response_violations(response, request, world)
            after = _offered(response)
            if sorted(after) != sorted(before):
                found.append(
                    Violation(
                        "budget-edge",
                        f"priced at the CHF {budget} budget, {sorted(set(before) - set(after))} "
                        f"are no longer offered (offered {after}, was {before})",
                    )
                )
            tally.add(case, found)


async def observe_variants(base: ShopServices, seed: int = VARIANT_SEED) -> dict[str, Any]:
    """Serve every variant derived from ``base``'s data; how many conversations and relations
    were held, and every violation of the variant's own data."""
    rng = random.Random(seed)
    tally = _Tally()
    variants = (
        sold_out(base, rng),
        set_aside_customers(base, rng),
        heavy_buyers(base, rng),
        re_rated(base, rng),
        window_shoppers(base, rng),
        restock_edges(base, rng),
    )
    facts = World(base.catalogue, base.personas, base.clock)
    for variant in variants:
        await _held(variant, facts, tally)
    await _budget_relation(base, facts, rng, tally)
    found = tally.violations
    return {
        "calls": tally.conversations + tally.relations + tally.read_backs,
        "conversations": tally.conversations,
        "budget_relations": tally.relations,
        "tool_calls_read_back": tally.read_backs,
        "variants": [v.name for v in variants],
        "violations": len(found),
        "rules": dict(Counter(v["rule"] for v in found)),
        "examples": found[:_EXAMPLES],
    }
