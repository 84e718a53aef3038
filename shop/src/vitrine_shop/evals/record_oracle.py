"""Every field of every tool record, held to the data it reports.

The pinned tool contract holds what a tool accepts; this holds what it answers. Each tool
declares the fields its records carry, and each field has an oracle derived from the stored
product, customer or catalogue data, written apart from the code that builds the record
(:mod:`vitrine_shop.operations`), so a derived figure is computed here again from the stored
fields it comes from (a discount from the two prices, stock from the units), never read from
the property the code under test also reads. Three things are each a problem:

- a field whose value the data refutes;
- a declared field the record lacks (a dropped field reads as nothing, never as agreement);
- a field no oracle knows. This is the fail-closed rule: a field the code starts sending is
  unverified until someone writes its oracle, and the gate says so instead of passing it.
"""

from __future__ import annotations

import datetime
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from vitrine_shop.domain import Persona, Product

if TYPE_CHECKING:
    from vitrine_shop.evals.invariants import World

__all__ = [
    "candidate_fields",
    "declared_complements",
    "history_line_fields",
    "record_problems",
]

_COLD_START_RATINGS = 5  # fewer ratings than this support no argument from ratings
_SENSITIVE_DEPARTMENT = "health-personal-care"
_SCORE_TOLERANCE = 5e-4  # scores are served rounded to four places


def _discount(product: Product) -> Decimal:
    was = product.was_price_chf
    return Decimal("0.00") if was is None else was - product.price_chf


# Each product field a record may carry, from the product's stored data.
_PRODUCT_FIELD: Mapping[str, Callable[[Product], Any]] = {
    "sku": lambda p: p.sku,
    "name": lambda p: p.name,
    "brand": lambda p: p.brand,
    "department": lambda p: p.department.display_name,
    "category": lambda p: " > ".join(p.category_path),
    "price_chf": lambda p: p.price_chf,
    "was_price_chf": lambda p: p.was_price_chf,
    "discounted": lambda p: p.was_price_chf is not None,
    "discount_chf": _discount,
    "in_stock": lambda p: p.stock_units > 0,
    "stock_units": lambda p: p.stock_units,
    "rating_average": lambda p: p.rating_average,
    "rating_count": lambda p: p.rating_count,
    "cold_start": lambda p: p.rating_count < _COLD_START_RATINGS,
    "consumable": lambda p: p.consumable,
    "typical_replenish_days": lambda p: p.typical_replenish_days,
    "gtin": lambda p: p.gtin,
    "specs": lambda p: dict(p.specs),
    "description": lambda p: p.description,
    "tags": lambda p: list(p.tags),
    "markets": lambda p: list(p.markets),
    "energy_label": lambda p: p.energy_label,
    "release_year": lambda p: p.release_year,
    "marketplace_seller": lambda p: p.marketplace_seller,
    "second_hand": lambda p: p.second_hand,
}
_SUMMARY = frozenset(
    {"sku", "name", "brand", "department", "category", "price_chf", "in_stock"}
    | {"rating_average", "consumable"}
)
_HIT = _SUMMARY | {"score", "match"}
_DETAILS = _SUMMARY | {
    "gtin",
    "was_price_chf",
    "specs",
    "description",
    "tags",
    "rating_count",
    "stock_units",
    "markets",
    "energy_label",
    "release_year",
    "marketplace_seller",
    "second_hand",
    "typical_replenish_days",
    "cold_start",
}
_STOCK = frozenset(
    {"sku", "price_chf", "was_price_chf", "discounted", "discount_chf", "in_stock"}
    | {"stock_units", "markets", "marketplace_seller", "second_hand"}
)
# "digest" is held to the rating bands by the invariants gate's own digest rule.
_DIGEST = frozenset({"sku", "name", "rating_average", "rating_count", "cold_start", "digest"})
_PRODUCT_RECORDS: Mapping[str, frozenset[str]] = {
    "search_products": _HIT,
    "find_similar": _HIT,
    "find_complements": _HIT,
    "browse_category": _SUMMARY,
    "get_product_details": _DETAILS,
    "get_stock_and_price": _STOCK,
    "get_review_digest": _DIGEST,
}
_HISTORY_LINE = frozenset(
    {"sku", "name", "department", "date", "quantity", "price_paid_chf", "gift", "consumable"}
)
_INTEREST_MAP = frozenset(
    {"interests", "gift_signals", "withheld_sensitive", "consumables_due", "evidence"}
)
_INTEREST = frozenset({"department", "label", "weight", "evidence_skus", "contexts"})
_DUE = frozenset({"sku", "name", "last_purchased", "replenish_days", "due_on", "days_left"})
_DEPARTMENT = frozenset({"department", "slug", "number", "product_count", "sensitive"})
_NO_EVIDENCE = "none: ask before recommending"


def record_problems(
    name: str,
    arguments: Mapping[str, Any],
    data: Any,
    persona: Persona | None,
    world: World,
) -> list[str]:
    """What the data refutes in one successful tool answer, one sentence per problem."""
    if name in _PRODUCT_RECORDS:
        return _product_records(name, arguments, data, world)
    checker = _OTHER_RECORDS.get(name)
    if checker is None:
        return [f"answered, but no oracle knows the records of {name!r}"]
    return checker(arguments, data, persona, world)


# -- products -----------------------------------------------------------------------------


def _product_records(name: str, arguments: Mapping[str, Any], data: Any, world: World) -> list[str]:
    records = data if isinstance(data, list) else [data]
    problems: list[str] = []
    for record in records:
        if not isinstance(record, Mapping) or not isinstance(record.get("sku"), str):
            problems.append(f"a record without a SKU: {_short(record)}")
            continue
        product = world.catalogue.get(record["sku"])
        if product is None:
            problems.append(f"{record['sku']} is not in the catalogue")
            continue
        fields = _PRODUCT_RECORDS[name]
        expected = {f: _PRODUCT_FIELD[f](product) for f in fields if f in _PRODUCT_FIELD}
        problems += _field_problems(product.sku, record, expected, fields)
        if name in ("search_products", "find_similar", "find_complements"):
            problems += _hit_problems(name, arguments, record, product, world)
    return problems


def _hit_problems(
    name: str, arguments: Mapping[str, Any], hit: Mapping[str, Any], product: Product, world: World
) -> list[str]:
    """A hit's match says why it is listed and its score how near it is: a declared
    compatibility (either way round, from the tags) scores 1.0, anything else is the vectors'
    cosine similarity to the query or to the product asked about."""
    asked = world.catalogue.get(str(arguments.get("sku", "")))
    compat = (
        name == "find_complements"
        and asked is not None
        and product.sku in declared_complements(asked, world.catalogue)
    )
    match, score = hit.get("match"), hit.get("score")
    wanted = "compat" if compat else "semantic"
    if match != wanted:
        return [f"{product.sku} is listed as a {match!r} match, the data makes it {wanted!r}"]
    if not isinstance(score, int | float) or isinstance(score, bool):
        return [f"{product.sku} has score {score!r}"]
    expected = 1.0 if compat else _cosine(name, arguments, product.sku, world)
    if expected is not None and abs(score - expected) > _SCORE_TOLERANCE:
        return [f"{product.sku} scores {score}, the vectors give {expected:.4f}"]
    return []


def _cosine(name: str, arguments: Mapping[str, Any], sku: str, world: World) -> float | None:
    semantics = world.semantics
    if semantics is None:
        return None  # the vectors are not this catalogue's: the score cannot be recomputed
    if name == "search_products":
        scores = semantics.scores_for_query(str(arguments.get("query", "")))
    else:
        scores = semantics.scores_near(str(arguments.get("sku", "")))
    return None if scores is None else scores.get(sku)


def declared_complements(product: Product, catalogue: Iterable[Product]) -> frozenset[str]:
    """The SKUs declared compatible with ``product`` either way round, read from the tags."""
    mark = f"compat:{product.sku}"
    products = {p.sku: p for p in catalogue}
    declared = {p.sku for p in products.values() if mark in p.tags}
    declared |= {
        t.split(":", 1)[1]
        for t in product.tags
        if t.startswith("compat:") and t.split(":", 1)[1] in products
    }
    declared.discard(product.sku)
    return frozenset(declared)


# -- the workflow's candidates -------------------------------------------------------------

_CANDIDATE = frozenset(
    {"sku", "name", "department", "category", "contexts", "price_chf", "lane", "interests"}
    | {"score", "goes_with", "due"}
)
_LANES = ("explore", "replenish")


def candidate_fields(
    candidate: Mapping[str, Any], product: Product, persona: Persona | None, today: datetime.date
) -> list[str]:
    """A candidate the workflow hands its Ranker, field by field: the product as the catalogue
    has it (its most specific category, its usage contexts), a lane the Ranker knows, and a
    restock's timing as the customer's own latest purchase gives it."""
    where = f"candidate {product.sku}"
    expected = {
        "sku": product.sku,
        "name": product.name,
        "department": product.department.display_name,
        "category": product.category_path[-1],
        "contexts": [t.split(":", 1)[1] for t in product.tags if t.startswith("context:")],
        "price_chf": product.price_chf,
    }
    problems = _field_problems(where, candidate, expected, _CANDIDATE)
    lane, score = candidate.get("lane"), candidate.get("score")
    if lane not in _LANES:
        problems.append(f"{where} is in lane {lane!r}, not one of {_LANES}")
    if not isinstance(score, int | float) or isinstance(score, bool) or not -1 <= score <= 1:
        problems.append(f"{where} has score {score!r}, not a similarity")
    due = candidate.get("due")
    if lane != "replenish":
        if due is not None:
            problems.append(f"{where} explores but carries a restock timing {_short(due)}")
        return problems
    return problems + _restock_timing(where, due, product, persona, today)


def _restock_timing(
    where: str, due: Any, product: Product, persona: Persona | None, today: datetime.date
) -> list[str]:
    own = (
        [p for p in persona.purchase_history if p.sku == product.sku and not p.gift]
        if persona
        else []
    )
    cycle = product.typical_replenish_days
    if not own or cycle is None:
        return [f"{where} is restocked but was never bought for themselves, or never runs out"]
    latest = max(own, key=lambda p: p.date)
    runs_out = latest.date + datetime.timedelta(days=cycle * latest.quantity)
    expected = {
        "last_purchased": latest.date.isoformat(),
        "replenish_days": cycle,
        "days_left": (runs_out - today).days,
    }
    if not isinstance(due, Mapping):
        return [f"{where} is restocked without its timing"]
    return _field_problems(f"{where}'s timing", due, expected, frozenset(expected))


# -- customers ----------------------------------------------------------------------------


def _profile(_: Mapping[str, Any], data: Any, persona: Persona | None, __: World) -> list[str]:
    if persona is None or not isinstance(data, Mapping):
        return []  # whose profile it is, the customer scoping rule decides
    expected = {
        "customer_id": persona.id,
        "display_name": persona.display_name,
        "profile": persona.profile,
        "stated_interests": list(persona.interests),
        "constraints": dict(persona.constraints),
        "purchase_count": len(persona.purchase_history),
        "saved_count": len(persona.saved_items),
        "viewed_count": len(persona.viewed_items),
        "has_evidence": bool(
            persona.purchase_history or persona.saved_items or persona.viewed_items
        ),
    }
    return _field_problems(persona.id, data, expected, frozenset(expected))


def history_line_fields(line: Mapping[str, Any], product: Product | None, where: str) -> list[str]:
    """A purchase line's own field set, and what only the product can say of it (the order,
    quantities, prices, gifts and withheld names are the purchase-history rule's)."""
    return _field_problems(
        where, line, {"consumable": bool(product is not None and product.consumable)}, _HISTORY_LINE
    )


def _interest_map(
    _: Mapping[str, Any], data: Any, persona: Persona | None, world: World
) -> list[str]:
    if persona is None or not isinstance(data, Mapping):
        return []
    interests = [i for i in data.get("interests") or () if isinstance(i, Mapping)]
    due = [d for d in data.get("consumables_due") or () if isinstance(d, Mapping)]
    empty = not interests and not due
    problems = _field_problems(
        "the interest map",
        data,
        {"evidence": _NO_EVIDENCE if empty else "own behaviour"},
        _INTEREST_MAP,
    )
    for interest in interests:
        where = f"interest {interest.get('department')!r}"
        problems += _field_problems(where, interest, {}, _INTEREST)
        evidence = [world.catalogue.get(str(s)) for s in interest.get("evidence_skus") or ()]
        problems += _context_problems(where, interest.get("contexts"), [p for p in evidence if p])
    for item in due:
        problems += _due_problems(item, persona, world)
    return problems


def _context_problems(where: str, served: Any, evidence: Sequence[Product]) -> list[str]:
    """An interest's contexts are its evidence's most frequent usage contexts, most frequent
    first (ties alphabetical)."""
    counts = Counter(c for p in evidence for c in p.contexts)
    ranked = sorted(counts, key=lambda c: (-counts[c], c))
    if not isinstance(served, list) or served != ranked[: len(served)]:
        return [f"{where}: contexts {_short(served)}, its evidence ranks {ranked}"]
    if ranked and not served:
        return [f"{where}: no contexts, its evidence has {ranked}"]
    return []


def _due_problems(item: Mapping[str, Any], persona: Persona, world: World) -> list[str]:
    sku = str(item.get("sku"))
    product = world.catalogue.get(sku)
    own = [p for p in persona.purchase_history if p.sku == sku and not p.gift]
    if product is None or not own:
        return []  # a due item never bought is the customer-record rule's
    latest = max(own, key=lambda p: p.date)
    cycle = product.typical_replenish_days
    expected = {
        "name": product.name,
        "last_purchased": latest.date.isoformat(),
        "replenish_days": cycle,
    }
    problems = _field_problems(f"due {sku}", item, expected, _DUE)
    if cycle is not None:
        due_on = latest.date + datetime.timedelta(days=cycle * latest.quantity)
        if item.get("due_on") != due_on.isoformat():
            problems.append(f"due {sku}: due on {item.get('due_on')!r}, the data gives {due_on}")
    return problems


# -- the catalogue ------------------------------------------------------------------------


def _departments(_: Mapping[str, Any], data: Any, __: Persona | None, world: World) -> list[str]:
    if not isinstance(data, list):
        return [f"departments answered as {_short(data)}"]
    counts = Counter(p.department for p in world.catalogue)
    expected = {
        d.value: {
            "department": d.display_name,
            "slug": d.value,
            "number": int(next(p.sku for p in world.catalogue if p.department is d)[4]),
            "product_count": n,
            "sensitive": d.value == _SENSITIVE_DEPARTMENT,
        }
        for d, n in counts.items()
    }
    served = {str(r.get("slug")): r for r in data if isinstance(r, Mapping)}
    in_order = sorted(expected, key=lambda slug: expected[slug]["number"])
    if [slug for slug in served if slug in expected] != [s for s in in_order if s in served]:
        return [f"departments are not listed by number: {list(served)}"]
    problems = [f"department {slug} is missing" for slug in sorted(set(expected) - set(served))]
    problems += [
        f"department {slug} is not the catalogue's" for slug in set(served) - set(expected)
    ]
    for slug in sorted(set(expected) & set(served)):
        problems += _field_problems(f"department {slug}", served[slug], expected[slug], _DEPARTMENT)
    return problems


def _statistics(_: Mapping[str, Any], data: Any, __: Persona | None, world: World) -> list[str]:
    products = list(world.catalogue)
    if not isinstance(data, Mapping) or not products:
        return [f"statistics answered as {_short(data)}"]
    prices = sorted(p.price_chf for p in products)
    rated = [p.rating_average for p in products if p.rating_average is not None]
    departments = Counter(p.department.value for p in products)
    tiers = Counter(p.tier.value for p in products)
    expected = {
        "product_count": len(products),
        "department_count": len(departments),
        "per_department": dict(departments),
        "per_tier": dict(tiers),
        "price_min_chf": prices[0],
        "price_median_chf": Decimal(statistics.median(prices)).quantize(Decimal("0.01")),
        "price_max_chf": prices[-1],
        "in_stock_count": sum(p.stock_units > 0 for p in products),
        "out_of_stock_count": sum(p.stock_units == 0 for p in products),
        "discounted_count": sum(p.was_price_chf is not None for p in products),
        "consumable_count": sum(p.consumable for p in products),
        "cold_start_count": sum(p.rating_count < _COLD_START_RATINGS for p in products),
        "second_hand_count": sum(p.second_hand for p in products),
        "marketplace_count": sum(p.marketplace_seller is not None for p in products),
        "rated_count": len(rated),
        "mean_rating": round(statistics.fmean(rated), 2) if rated else None,
    }
    return _field_problems("the statistics", data, expected, frozenset(expected))


def _presentation(
    arguments: Mapping[str, Any], data: Any, _: Persona | None, world: World
) -> list[str]:
    items = [i for i in arguments.get("items") or () if isinstance(i, Mapping)]
    asked = [str(i.get("sku")) for i in items]
    if not isinstance(data, Mapping):
        return [f"presentation answered as {_short(data)}"]
    problems = _field_problems(
        "the presentation", data, {"skus": asked}, frozenset({"text", "skus"})
    )
    text = data.get("text")
    if not isinstance(text, str):
        return [*problems, "the presentation has no text"]
    return problems + _presented_lines(text, items, arguments.get("note"), world)


def _presented_lines(
    text: str, items: Sequence[Mapping[str, Any]], note: Any, world: World
) -> list[str]:
    """One numbered line per item, in the order given, naming the product as the catalogue
    does and giving the reason it was given; then the note, if there was one."""
    lines = [line for line in text.splitlines() if line.strip()]
    problems: list[str] = []
    for number, item in enumerate(items, start=1):
        product = world.catalogue.get(str(item.get("sku")))
        line = lines[number - 1] if number <= len(lines) else ""
        if product is None:
            continue
        reason = str(item.get("reason") or "").strip()
        missing = [
            what
            for what, words in (("name", product.name), ("SKU", product.sku), ("reason", reason))
            if words not in line
        ]
        if not line.startswith(f"{number}. "):
            missing.insert(0, f"number {number}")
        if missing:
            problems.append(f"line {number} ({_short(line)}) lacks the {', '.join(missing)}")
    if isinstance(note, str) and note.strip() and note.strip() not in text:
        problems.append("the note given is not in the presentation")
    return problems


def _executed(_: Mapping[str, Any], __: Any, ___: Persona | None, ____: World) -> list[str]:
    return []  # any executed order is already a breach: no approval is given in a conversation


_Checker = Callable[[Mapping[str, Any], Any, Persona | None, "World"], list[str]]
_OTHER_RECORDS: Mapping[str, _Checker] = {
    "get_user_profile": _profile,
    "get_interest_map": _interest_map,
    "get_purchase_history": lambda *_: [],  # line by line, in the purchase-history rule
    "list_departments": _departments,
    "get_catalogue_statistics": _statistics,
    "present_recommendation": _presentation,
    "add_to_cart": _executed,
    "place_order": _executed,
}


# -- comparison ---------------------------------------------------------------------------


def _field_problems(
    where: str, record: Mapping[str, Any], expected: Mapping[str, Any], fields: frozenset[str]
) -> list[str]:
    problems = [f"{where} lacks {f}" for f in sorted(fields - set(record))]
    problems += [
        f"{where} carries {f!r}, which no oracle reads" for f in sorted(set(record) - fields)
    ]
    problems += [
        f"{where}.{f} is {_short(record[f])}, the data says {_short(value)}"
        for f, value in expected.items()
        if f in record and not _same(record[f], value)
    ]
    return problems


def _same(served: Any, expected: Any) -> bool:
    """Equal as JSON reads them: money by value however it is spelt, a flag only as a flag."""
    if isinstance(expected, bool) or isinstance(served, bool):
        return served is expected
    if isinstance(expected, Decimal):
        if not isinstance(served, int | float | str):
            return False
        try:
            return Decimal(str(served)) == expected
        except InvalidOperation:
            return False
    if isinstance(expected, Mapping):
        return (
            isinstance(served, Mapping)
            and set(served) == set(expected)
            and all(_same(served[k], v) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(served, list)
            and len(served) == len(expected)
            and all(_same(a, b) for a, b in zip(served, expected, strict=True))
        )
    if isinstance(expected, int | float) and isinstance(served, int | float):
        return served == expected
    return type(served) is type(expected) and bool(served == expected)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
