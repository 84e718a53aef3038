"""The catalogue-shape gate: a schema check of the loaded catalogue, personas and tool specs.

Every expectation is authored here from the reference description of the shop (department
numbers and names, tier counts, the price band of a consumer shop, the fifteen tools), never
read from the data files or from the loader's own constants. A loading bug that drops a
department, parses prices as cents or loses the tags fails it, and every problem is named.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from vitrine import Observation

__all__ = ["catalogue_problems", "evaluate_catalogue_shape"]

# department slug -> (the first digit of its SKUs, its name: the root of its category paths)
DEPARTMENTS: Mapping[str, tuple[int, str]] = {
    "photography": (1, "Photography"),
    "outdoor-hiking": (2, "Outdoor & Hiking"),
    "home-espresso": (3, "Home Espresso"),
    "gaming": (4, "Gaming"),
    "kitchen-appliances": (5, "Kitchen & Small Appliances"),
    "cycling": (6, "Cycling"),
    "home-audio": (7, "Home Audio"),
    "power-travel-tech": (8, "Power & Travel Tech"),
    "health-personal-care": (9, "Health & Personal Care"),
}
SENSITIVE_DEPARTMENT = "health-personal-care"
PRODUCTS = 99
CORE_PER_DEPARTMENT = 9
EXTENSION_PRODUCTS = 23
SENSITIVE_PRODUCTS = 4
# A consumer shop's prices, in CHF: nothing is free, nothing costs a car. A price parsed in
# cents lands far outside this band.
PRICE_BAND = (Decimal("0.01"), Decimal("5000"))
PERSONAS = 14
NAMED_PERSONAS = frozenset({"nadia", "marco", "sofia", "luca", "elena"})
TOOLS = frozenset(
    {
        "search_products",
        "find_similar",
        "find_complements",
        "get_user_profile",
        "get_purchase_history",
        "get_product_details",
        "get_stock_and_price",
        "browse_category",
        "get_review_digest",
        "get_interest_map",
        "list_departments",
        "get_catalogue_statistics",
        "present_recommendation",
        "add_to_cart",
        "place_order",
    }
)
_SKU = re.compile(r"^GLX-(\d)\d{3}$")
_GTIN = re.compile(r"^\d{13}$")
_TAG_PREFIXES = frozenset({"context", "compat", "consumable"})
_JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_MAX_LISTED = 12


def _gtin_ok(gtin: str) -> bool:
    if not _GTIN.match(gtin):
        return False
    weighted = sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(gtin[:12]))
    return (10 - weighted % 10) % 10 == int(gtin[12])


def _price(value: Any) -> Decimal | None:
    try:
        return None if value is None else Decimal(str(value))
    except InvalidOperation:
        return None


def _product_problems(product: Mapping[str, Any], skus: set[str]) -> list[str]:
    sku = str(product.get("sku"))
    problems: list[str] = []
    match = _SKU.match(sku)
    department = DEPARTMENTS.get(str(product.get("department")))
    if match is None:
        problems.append(f"{sku}: not a GLX-dddd SKU")
    if department is None:
        problems.append(f"{sku}: unknown department {product.get('department')!r}")
    elif match is not None and int(match.group(1)) != department[0]:
        problems.append(f"{sku}: first digit does not follow its department ({department[0]})")
    if not _gtin_ok(str(product.get("gtin"))):
        problems.append(f"{sku}: GTIN {product.get('gtin')!r} is not a valid EAN-13")
    for field in ("name", "brand", "description"):
        if not str(product.get(field) or "").strip():
            problems.append(f"{sku}: {field} is missing")
    path = list(product.get("category_path") or [])
    if len(path) < 2 or (department is not None and path[0] != department[1]):
        problems.append(f"{sku}: category path {path} does not start at its department")
    price = _price(product.get("price_chf"))
    low, high = PRICE_BAND
    if price is None or not low <= price <= high or price != price.quantize(Decimal("0.01")):
        problems.append(f"{sku}: price {product.get('price_chf')!r} is not a CHF price")
    was = _price(product.get("was_price_chf"))
    if was is not None and (price is None or was <= price or was > high):
        problems.append(f"{sku}: was-price {was} is not above its price")
    tags = list(product.get("tags") or [])
    if not tags:
        problems.append(f"{sku}: no tags")
    for tag in tags:
        prefix, colon, rest = str(tag).partition(":")
        if colon and (prefix not in _TAG_PREFIXES or not rest):
            problems.append(f"{sku}: malformed tag {tag!r}")
        if prefix == "compat" and rest not in skus:
            problems.append(f"{sku}: compat tag names {rest}, which is not in the catalogue")
    if bool(product.get("consumable")) != (product.get("replenish_days") is not None):
        problems.append(f"{sku}: a consumable needs a replenish period, and only a consumable")
    if not product.get("markets"):
        problems.append(f"{sku}: sold in no market")
    return problems


def _count_problems(products: Sequence[Mapping[str, Any]]) -> list[str]:
    problems = []
    if len(products) != PRODUCTS:
        problems.append(f"{len(products)} products, expected {PRODUCTS}")
    for label, values in (
        ("SKU", [p.get("sku") for p in products]),
        ("GTIN", [p.get("gtin") for p in products]),
    ):
        repeated = sorted(str(v) for v, n in Counter(values).items() if n > 1)
        if repeated:
            problems.append(f"repeated {label}s: {', '.join(repeated[:_MAX_LISTED])}")
    tiers = Counter((p.get("department"), p.get("tier")) for p in products)
    for slug in DEPARTMENTS:
        if slug == SENSITIVE_DEPARTMENT:
            continue
        core = tiers[(slug, "core")]
        if core != CORE_PER_DEPARTMENT:
            problems.append(f"{slug}: {core} core products, expected {CORE_PER_DEPARTMENT}")
    extension = sum(n for (_, tier), n in tiers.items() if tier == "extension")
    if extension != EXTENSION_PRODUCTS:
        problems.append(f"{extension} extension products, expected {EXTENSION_PRODUCTS}")
    sensitive = tiers[(SENSITIVE_DEPARTMENT, "sensitive")]
    stray = sum(
        n
        for (dept, tier), n in tiers.items()
        if (tier == "sensitive") != (dept == SENSITIVE_DEPARTMENT)
    )
    if sensitive != SENSITIVE_PRODUCTS or stray:
        problems.append(
            f"{sensitive} sensitive products in {SENSITIVE_DEPARTMENT} and {stray} misplaced, "
            f"expected {SENSITIVE_PRODUCTS} and 0"
        )
    return problems


def _persona_problems(personas: Sequence[Mapping[str, Any]], skus: set[str]) -> list[str]:
    problems = []
    ids = [str(p.get("id")) for p in personas]
    if len(ids) != PERSONAS or len(set(ids)) != len(ids):
        problems.append(f"{len(set(ids))} distinct personas of {len(ids)}, expected {PERSONAS}")
    missing = sorted(NAMED_PERSONAS - set(ids))
    if missing:
        problems.append(f"named personas missing: {', '.join(missing)}")
    for persona in personas:
        for field in ("purchased", "saved", "viewed"):
            unknown = sorted(set(persona.get(field) or ()) - skus)
            if unknown:
                problems.append(f"persona {persona.get('id')}: {field} {unknown} not in catalogue")
    return problems


def _schema_problem(schema: Any) -> str | None:
    """A tool's parameters must be a JSON-schema object whose properties are typed schemas."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return "parameters are not a JSON-schema object"
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        return "properties is not an object"
    for name, prop in properties.items():
        if not isinstance(prop, Mapping):
            return f"property {name!r} is not a schema"
        kinds = prop.get("type")
        typed = kinds is not None or any(k in prop for k in ("anyOf", "oneOf", "enum", "$ref"))
        listed = kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []
        if not typed or any(k not in _JSON_TYPES for k in listed):
            return f"property {name!r} has no valid type"
    required = schema.get("required", [])
    if not isinstance(required, list | tuple) or not set(required) <= set(properties):
        return "required names a property that is not declared"
    return None


def _tool_problems(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    names = [str(t.get("name")) for t in tools]
    problems = []
    if len(names) != len(TOOLS) or set(names) != TOOLS:
        extra, absent = sorted(set(names) - TOOLS), sorted(TOOLS - set(names))
        problems.append(
            f"{len(names)} tools, expected {len(TOOLS)} (unexpected {extra}, missing {absent})"
        )
    for tool in tools:
        problem = _schema_problem(tool.get("parameters"))
        if problem:
            problems.append(f"tool {tool.get('name')}: {problem}")
    return problems


def catalogue_problems(evidence: Mapping[str, Any]) -> list[str]:
    """Every way the observed catalogue, personas and tools depart from the authored schema."""
    products = list(evidence["products"])
    skus = {str(p.get("sku")) for p in products}
    problems = _count_problems(products)
    for product in products:
        problems.extend(_product_problems(product, skus))
    problems.extend(_persona_problems(list(evidence["personas"]), skus))
    problems.extend(_tool_problems(list(evidence["tools"])))
    return problems


def evaluate_catalogue_shape(evidence: Mapping[str, Any]) -> Observation:
    """Pass only when the loaded data meets every authored expectation."""
    if not all(
        isinstance(evidence.get(k), list | tuple) for k in ("products", "personas", "tools")
    ):
        return Observation.not_measured("the catalogue, personas and tools were not observed")
    problems = catalogue_problems(evidence)
    counts = {k: len(evidence[k]) for k in ("products", "personas", "tools")}
    return Observation.measured(
        0.0 if problems else 1.0,
        not problems,
        evidence={
            "observed": counts,
            "expected": {"products": PRODUCTS, "personas": PERSONAS, "tools": len(TOOLS)},
            "problems": problems[:_MAX_LISTED],
            "problem_count": len(problems),
        },
        label=(
            f"products {counts['products']}/{PRODUCTS}, personas {counts['personas']}/{PERSONAS}, "
            f"tools {counts['tools']}/{len(TOOLS)}, {len(problems)} schema problem(s)"
        ),
    )
