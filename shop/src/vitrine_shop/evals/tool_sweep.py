"""An exhaustive sweep of the tool surface: every tool, every product, every customer.

A model reaches the tools along the paths it chooses; the catalogue is small enough to reach
all of them. The sweep calls the real tool box (validation, scoping, journal and all) for
every product (details, stock and price, reviews, similar, complements, a search bounded at
its own price and filtered every way), every department and category path, and, as each
customer in turn, their own and every other customer's records, presentations of what they
own or cannot buy, and unapproved orders. Every answer is held to the tool contracts of
:mod:`vitrine_shop.evals.invariants`, searches and listings also to completeness: a result
shorter than its limit must hold every product the filters admit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.invariants import ToolOutput, Violation, World, tool_violations
from vitrine_shop.operations import ShopServices
from vitrine_shop.tools import ToolBox

__all__ = ["customer_calls", "observe_tool_sweep", "sweep_calls"]

Call = tuple[str, dict[str, Any]]
_EXAMPLES = 8
_WIDE = 20  # the tools' largest limit: a shorter answer must be the whole admissible set


def _catalogue_calls(world: World) -> Iterator[Call]:
    products = sorted(world.catalogue, key=lambda p: p.sku)
    for product in products:
        sku = product.sku
        yield "get_product_details", {"sku": sku}
        yield "get_stock_and_price", {"sku": sku}
        yield "get_review_digest", {"sku": sku}
        yield "find_similar", {"sku": sku, "limit": 3}
        yield "find_complements", {"sku": sku, "limit": 3}
        search: dict[str, Any] = {
            "query": product.name,
            "limit": _WIDE,
            "department": product.department.display_name,
            "exclude_skus": [products[0].sku],
        }
        if product.price_chf is not None:
            # Bounded at the product's own price: the product itself must still be admitted.
            search["max_price_chf"] = float(product.price_chf)
        yield "search_products", search
        tagged = [t for t in product.tags if not t.startswith("compat:")]
        if tagged:
            yield (
                "search_products",
                {
                    "query": product.name,
                    "limit": _WIDE,
                    "require_tags": [tagged[0]],
                    "in_stock_only": True,
                },
            )
    departments = sorted({p.department for p in products}, key=lambda d: d.value)
    for department in departments:
        for named in (department.display_name, department.value, str(department.number)):
            yield "browse_category", {"category": named, "limit": _WIDE}
    for path in sorted({" > ".join(p.category_path) for p in products}):
        yield "browse_category", {"category": path, "limit": _WIDE}
    yield "list_departments", {}
    yield "get_catalogue_statistics", {}
    yield "get_product_details", {"sku": "GLX-0000"}


def customer_calls(world: World, customer: str | None) -> Iterator[Call]:
    others = sorted(set(world.personas) - {customer or ""})
    for tool in ("get_user_profile", "get_purchase_history", "get_interest_map"):
        yield tool, {}
        if customer is not None:
            yield tool, {"customer_id": customer}
        for other in others[:3]:
            yield tool, {"customer_id": other}
    persona = world.personas.get(customer) if customer else None
    owned = sorted(p.sku for p in persona.purchase_history if not p.gift) if persona else []
    empty = sorted(p.sku for p in world.catalogue if p.stock_units == 0)
    for sku in [*owned, *empty, "GLX-0000"]:
        yield "present_recommendation", {"items": [{"sku": sku, "reason": "because it fits you"}]}
    first = sorted(world.catalogue.skus)[0]
    doubled = [{"sku": first, "reason": "because it fits you"}] * 2
    yield "present_recommendation", {"items": doubled}
    yield "place_order", {"sku": first, "quantity": 1}
    yield "add_to_cart", {"sku": first, "quantity": 1}


def sweep_calls(world: World) -> Iterator[tuple[str | None, Call]]:
    """Every (customer, call) of the sweep: the catalogue once, anonymously, then each customer."""
    for call in _catalogue_calls(world):
        yield None, call
    for customer in (None, *sorted(world.personas)):
        for call in customer_calls(world, customer):
            yield customer, call


async def _gate_and_budget(services: ShopServices, world: World) -> list[Violation]:
    """What no conversation reaches, since none is ever approved or runs out of calls: an
    approval is one conversation's, used up by one order; a budget of N calls refuses the
    next one. Each contract is read from the tool box's own arguments."""
    found: list[Violation] = []
    sku = sorted(p.sku for p in world.catalogue if p.stock_units > 0)[0]
    customer = sorted(world.personas)[0]
    approved = ToolBox(services, customer_id=customer, traced=False)
    approved.approvals.approve("place_order", sku)
    stranger = ToolBox(services, customer_id=customer, traced=False)
    order = {"sku": sku, "quantity": 1}
    if (await stranger.call("place_order", order)).status.value == "ok":
        found.append(Violation("tool-contract", "place_order: another conversation's approval"))
    first, second = [await approved.call("place_order", order) for _ in range(2)]
    if first.status.value != "ok":
        found.append(Violation("tool-contract", f"place_order: refused an approved order of {sku}"))
    if second.status.value == "ok":
        found.append(Violation("tool-contract", "place_order: one approval placed two orders"))
    for budget in (0, 1, 3):
        box = ToolBox(services, customer_id=None, max_calls=budget, traced=False)
        statuses = [
            (await box.call("get_stock_and_price", {"sku": sku})).status.value
            for _ in range(budget + 1)
        ]
        if statuses[:budget] != ["ok"] * budget or statuses[budget] != "refused":
            found.append(
                Violation("tool-contract", f"a budget of {budget} call(s) answered {statuses}")
            )
        if box.calls_left != 0:
            found.append(
                Violation("tool-contract", f"{box.calls_left} calls left of a spent budget")
            )
    return found


async def observe_tool_sweep(services: ShopServices, world: World | None = None) -> dict[str, Any]:
    """Run the sweep against ``services``; how many calls, and every contract they broke."""
    world = world or World.shipped()
    boxes: dict[str | None, ToolBox] = {}
    for number, (customer, (name, arguments)) in enumerate(sweep_calls(world)):
        box = boxes.get(customer)
        if box is None:
            box = boxes[customer] = ToolBox(services, customer_id=customer, traced=False)
        await box.call(name, arguments, call_id=f"call-sweep-{number}")
    violations: list[Violation] = []
    calls = 0
    for customer, box in boxes.items():
        outputs = [ToolOutput.from_dict(o) for o in box.outputs]
        calls += len(outputs)
        violations += tool_violations(outputs, ShopRequest(customer, ("(tool sweep)",)), world)
    violations += await _gate_and_budget(services, world)
    return {
        "calls": calls,
        "tools": len({o["name"] for box in boxes.values() for o in box.outputs}),
        "violations": len(violations),
        "rules": dict(Counter(v.rule for v in violations)),
        "examples": [v.to_dict() for v in violations[:_EXAMPLES]],
    }
