"""Every field of every tool record held to the data: clean on the shop, and each bug planted
in the code that builds a record (not in the record the oracle reads) is seen by the sweep,
with the field named."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from vitrine_shop import interests, operations, tools
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.domain import SHOP_TOOL_NAMES
from vitrine_shop.evals.invariants import ToolOutput, World, tool_violations
from vitrine_shop.evals.record_oracle import record_problems
from vitrine_shop.evals.tool_sweep import observe_tool_sweep
from vitrine_shop.workflow import discovery, shop_workflow
from vitrine_shop.workflow.stages import COVERAGE_REVIEWER, PRESENTER

Edit = Callable[[Any], Any]


def _sweep() -> dict[str, Any]:
    """The sweep on services with nothing cached, so a plant in a derived record shows."""
    from vitrine_shop.arms import shared_services

    base = shared_services()
    shop = operations.ShopServices(base.catalogue, base.personas, base.embedder, base.clock)
    shop.use_vectors(base.vectors)
    return asyncio.run(observe_tool_sweep(shop))


def _details(sweep: dict[str, Any]) -> str:
    return " | ".join(e["detail"] for e in sweep["examples"])


def test_every_record_of_the_sweep_agrees_with_the_data() -> None:
    sweep = _sweep()
    assert sweep["violations"] == 0, sweep["examples"]
    assert sweep["tools"] == len(SHOP_TOOL_NAMES)  # every tool answered, so every oracle ran


def _method(name: str, edit: Edit) -> Callable[[pytest.MonkeyPatch], None]:
    """A plant: ``ShopServices.name`` returns its answer through ``edit``."""

    def plant(monkeypatch: pytest.MonkeyPatch) -> None:
        original = getattr(operations.ShopServices, name)

        def edited(self: operations.ShopServices, *args: Any, **kwargs: Any) -> Any:
            return edit(original(self, *args, **kwargs))

        monkeypatch.setattr(operations.ShopServices, name, edited)

    plant.__name__ = f"{name}_edited"
    return plant


def _each(edit: Callable[[dict[str, Any]], dict[str, Any]]) -> Edit:
    return lambda records: [edit(dict(r)) for r in records]


def _without(record: dict[str, Any], field: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != field}


def _hits_edited(edit: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    def plant(monkeypatch: pytest.MonkeyPatch) -> None:
        original = operations.SearchHit.to_dict
        monkeypatch.setattr(operations.SearchHit, "to_dict", lambda self: edit(original(self)))

    return plant


def _interest_map_edited(edit: Callable[[interests.InterestMap], interests.InterestMap]) -> Any:
    def plant(monkeypatch: pytest.MonkeyPatch) -> None:
        original = operations.derive_interest_map
        monkeypatch.setattr(operations, "derive_interest_map", lambda *a: edit(original(*a)))

    return plant


def _statistics_edited(**changes: Callable[[Any], Any]) -> Any:
    def plant(monkeypatch: pytest.MonkeyPatch) -> None:
        original = operations.catalogue_statistics

        def statistics(catalogue: Any) -> Any:
            found = original(catalogue)
            return found.model_copy(update={k: f(found) for k, f in changes.items()})

        monkeypatch.setattr(operations, "catalogue_statistics", statistics)

    return plant


def _details_edited(edit: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    def plant(monkeypatch: pytest.MonkeyPatch) -> None:
        original = tools.product_details
        monkeypatch.setattr(tools, "product_details", lambda product: edit(original(product)))

    return plant


_PLANTS: list[tuple[str, Any, str]] = [
    (
        "discount sign flipped",
        _method("stock_and_price", lambda r: {**r, "discount_chf": -r["discount_chf"]}),
        "discount_chf",
    ),
    (
        "marketplace seller dropped",
        _method("stock_and_price", lambda r: {**r, "marketplace_seller": None}),
        "marketplace_seller",
    ),
    (
        "a stock field left out",
        _method("stock_and_price", lambda r: _without(r, "markets")),
        "lacks markets",
    ),
    (
        "a field nobody checks added",
        _method("stock_and_price", lambda r: {**r, "eta_days": 2}),
        "no oracle reads",
    ),
    (
        "second-hand goods described as new",
        _details_edited(lambda r: {**r, "second_hand": False}),
        "second_hand",
    ),
    (
        "the cold start inverted in the digest",
        _method("review_digest", lambda r: {**r, "cold_start": not r["cold_start"]}),
        "cold_start",
    ),
    (
        "purchase count without gifts",
        _method(
            "profile",
            lambda r: {**r, "purchase_count": r["purchase_count"] - (r["purchase_count"] > 1)},
        ),
        "purchase_count",
    ),
    (
        "the sensitive department not marked",
        _method("departments", _each(lambda d: {**d, "sensitive": False})),
        "sensitive",
    ),
    (
        "one department miscounted",
        _method(
            "departments",
            lambda ds: [{**ds[0], "product_count": ds[0]["product_count"] + 1}, *ds[1:]],
        ),
        "product_count",
    ),
    (
        "departments listed by name, not number",
        _method("departments", lambda ds: sorted(ds, key=lambda d: d["slug"])),
        "not listed by number",
    ),
    (
        "consumable lines not marked",
        _method("purchase_history", _each(lambda line: {**line, "consumable": False})),
        "consumable",
    ),
    (
        "out-of-stock count of the consumables only",
        _statistics_edited(out_of_stock_count=lambda s: s.out_of_stock_count - 1),
        "out_of_stock_count",
    ),
    (
        "a declared compatibility served as a semantic match",
        _hits_edited(lambda h: {**h, "match": "semantic"}),
        "match",
    ),
    (
        "scores rounded to one place",
        _hits_edited(lambda h: {**h, "score": round(h["score"], 1)}),
        "the vectors give",
    ),
    (
        "an interest's contexts reversed",
        _interest_map_edited(
            lambda m: replace(
                m,
                interests=tuple(
                    replace(i, contexts=tuple(reversed(i.contexts))) for i in m.interests
                ),
            )
        ),
        "contexts",
    ),
    (
        "a due item named after another product",
        _interest_map_edited(
            lambda m: replace(
                m, consumables_due=tuple(replace(d, name=d.name + " XL") for d in m.consumables_due)
            )
        ),
        "due",
    ),
]


@pytest.mark.parametrize(
    ("plant", "field"), [(p, f) for _, p, f in _PLANTS], ids=[n for n, _, _ in _PLANTS]
)
def test_a_bug_in_the_code_that_builds_a_record_is_seen(
    monkeypatch: pytest.MonkeyPatch, plant: Any, field: str
) -> None:
    plant(monkeypatch)
    sweep = _sweep()
    assert sweep["rules"].get("tool-contract", 0) > 0, sweep["rules"]
    assert field in _details(sweep)


def test_a_tool_no_oracle_knows_is_a_problem_not_a_pass() -> None:
    world = World.shipped()
    assert record_problems("get_weather", {}, {"sky": "blue"}, None, world) == [
        "answered, but no oracle knows the records of 'get_weather'"
    ]


def test_a_flag_is_not_a_number_and_money_is_a_value() -> None:
    world = World.shipped()
    product = next(p for p in world.catalogue if p.was_price_chf is not None)
    facts = {
        "sku": product.sku,
        "price_chf": str(product.price_chf),  # money spelt as text is still that amount
        "was_price_chf": float(product.was_price_chf or 0),
        "discounted": 1,  # but a 1 is not True
        "discount_chf": float((product.was_price_chf or Decimal(0)) - product.price_chf),
        "in_stock": product.stock_units > 0,
        "stock_units": product.stock_units,
        "markets": list(product.markets),
        "marketplace_seller": product.marketplace_seller,
        "second_hand": product.second_hand,
    }
    output = ToolOutput("get_stock_and_price", {"sku": product.sku}, "ok", facts)
    details = [v.detail for v in tool_violations([output], ShopRequest(None, ("x",)), world)]
    assert len(details) == 1 and "discounted is 1" in details[0], details


# -- the workflow's candidates, as its Ranker is handed them ---------------------------------


def _delivery() -> dict[str, Any]:
    from vitrine_shop.evals.delivery_oracle import observe_delivery

    return asyncio.run(observe_delivery(operations.ShopServices()))


def _candidates_edited(edit: Callable[[dict[str, Any]], None]) -> Any:
    """A plant in the discovery stage: every candidate it adds to the pool is edited."""

    def plant(monkeypatch: pytest.MonkeyPatch) -> None:
        original = discovery.Discovery._add

        def add(pool: dict[str, dict[str, Any]], *args: Any, **kwargs: Any) -> None:
            original(pool, *args, **kwargs)
            for candidate in pool.values():
                edit(candidate)

        monkeypatch.setattr(discovery.Discovery, "_add", staticmethod(add))

    return plant


def _root_category(candidate: dict[str, Any]) -> None:
    candidate["category"] = candidate["department"]


def _former_price(candidate: dict[str, Any]) -> None:
    candidate["price_chf"] = round(candidate["price_chf"] * 1.2, 2)


def _overdue_read_as_due(candidate: dict[str, Any]) -> None:
    if candidate["due"]:
        candidate["due"] = {**candidate["due"], "days_left": abs(candidate["due"]["days_left"])}


def _unknown_lane(candidate: dict[str, Any]) -> None:
    candidate["lane"] = "explore" if candidate["lane"] == "replenish" else candidate["lane"]


@pytest.mark.parametrize(
    ("plant", "field"),
    [
        (_candidates_edited(_root_category), "category"),
        (_candidates_edited(_former_price), "price_chf"),
        (_candidates_edited(_overdue_read_as_due), "days_left"),
        (_candidates_edited(_unknown_lane), "restock timing"),
    ],
    ids=["root category", "inflated price", "overdue read as due", "restock filed as explore"],
)
def test_a_candidate_the_data_refutes_is_seen(
    monkeypatch: pytest.MonkeyPatch, plant: Any, field: str
) -> None:
    plant(monkeypatch)
    observed = _delivery()
    assert observed["rules"].get("candidates", 0) > 0, observed["rules"]
    assert field in " | ".join(e["detail"] for e in observed["examples"])


def _presenter_payload_edited(edit: Callable[[dict[str, Any]], None]) -> Any:
    """A plant in what the workflow hands its Presenter."""

    def plant(monkeypatch: pytest.MonkeyPatch) -> None:
        original = shop_workflow.ShopWorkflow._stage

        async def stage(
            self: Any, record: Any, name: str, payload: dict[str, Any], *a: Any, **k: Any
        ) -> Any:
            if name == PRESENTER:
                edit(payload)
            return await original(self, record, name, payload, *a, **k)

        monkeypatch.setattr(shop_workflow.ShopWorkflow, "_stage", stage)

    return plant


def _never_partial(payload: dict[str, Any]) -> None:
    payload["partial"] = False


def _one_lane(payload: dict[str, Any]) -> None:
    for pick in payload["picks"]:
        pick["lane"] = "explore"


def _picks_reversed(payload: dict[str, Any]) -> None:
    payload["picks"].reverse()


def _reviewer_told_one_more_loop_back(monkeypatch: pytest.MonkeyPatch) -> None:
    original = shop_workflow.ShopWorkflow._stage

    async def stage(
        self: Any, record: Any, name: str, payload: dict[str, Any], *a: Any, **k: Any
    ) -> Any:
        if name == COVERAGE_REVIEWER:
            payload["loopbacks_left"] += 1
        return await original(self, record, name, payload, *a, **k)

    monkeypatch.setattr(shop_workflow.ShopWorkflow, "_stage", stage)


def _rendered_in_one_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    original = shop_workflow.render_answer

    def render(presentation: Any, payload: Any) -> str:
        picks = [{**p, "lane": "explore"} for p in payload["picks"]]
        return original(presentation, {**payload, "picks": picks})

    monkeypatch.setattr(shop_workflow, "render_answer", render)


@pytest.mark.parametrize(
    ("plant", "rule"),
    [
        (_presenter_payload_edited(_never_partial), "handoff"),
        (_presenter_payload_edited(_one_lane), "handoff"),
        (_presenter_payload_edited(_picks_reversed), "handoff"),
        (_rendered_in_one_lane, "delivery"),
        (_reviewer_told_one_more_loop_back, "handoff"),
    ],
    ids=[
        "gaps left, list not partial",
        "restocks handed over as new",
        "picks out of order",
        "restocks rendered under the new heading",
        "a loop-back past the bound",
    ],
)
def test_what_a_stage_is_handed_must_be_what_the_stages_before_it_replied(
    monkeypatch: pytest.MonkeyPatch, plant: Any, rule: str
) -> None:
    plant(monkeypatch)
    observed = _delivery()
    assert observed["rules"].get(rule, 0) > 0, observed["rules"]
