"""The data variants of the invariants gate: clean on the shop, and each planted bug that only
variant data reaches is seen, named by its rule."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Container
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from vitrine_shop import interests, memory, operations, tools
from vitrine_shop.catalogue import Catalogue
from vitrine_shop.domain import Persona, Product
from vitrine_shop.evals import data_variants
from vitrine_shop.evals.data_variants import observe_variants
from vitrine_shop.operations import ShopServices
from vitrine_shop.scripted import agent_policy
from vitrine_shop.workflow.stages import INTEREST_MAPPER, StageOutputError, code_paths


def _observed() -> dict[str, Any]:
    return asyncio.run(observe_variants(ShopServices()))


def test_the_shop_holds_over_every_variant() -> None:
    observed = _observed()
    assert observed["violations"] == 0, observed["examples"]
    assert observed["conversations"] > 0
    assert observed["budget_relations"] > 0
    assert observed["tool_calls_read_back"] > 0


def test_the_sold_out_variant_sells_out_every_marketplace_product() -> None:
    base = ShopServices()
    variant = data_variants.sold_out(base, random.Random(data_variants.VARIANT_SEED))
    marketplace = {p.sku for p in base.catalogue if p.marketplace_seller is not None}
    assert marketplace
    assert all(not variant.services.catalogue.by_sku(sku).in_stock for sku in marketplace)
    assert all(base.catalogue.by_sku(sku).in_stock for sku in marketplace)  # data untouched


def _marketplace_always_in_stock(monkeypatch: pytest.MonkeyPatch) -> None:
    def in_stock(self: Product) -> bool:
        return self.stock_units > 0 or self.marketplace_seller is not None

    monkeypatch.setattr(Product, "in_stock", property(in_stock))


def _sensitive_never_recognised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_policy, "_is_sensitive", lambda sku, department: False)


def _budget_exclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    def affords(self: memory.Constraints, price_chf: Decimal | float | str | None) -> bool:
        if self.max_price_chf is None:
            return True
        return price_chf is not None and Decimal(str(price_chf)) < self.max_price_chf

    monkeypatch.setattr(memory.Constraints, "affords", affords)


def _sensitive_gift_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.derive_interest_map

    def derive(persona: Any, catalogue: Catalogue, clock: Any) -> Any:
        found = original(persona, catalogue, clock)
        return replace(found, gift_signals=tuple(sorted(persona.gift_skus)))

    monkeypatch.setattr(operations, "derive_interest_map", derive)


def _mapper_edited(edit: Any) -> Any:
    def plant(monkeypatch: pytest.MonkeyPatch) -> None:
        original = code_paths._CODE_PATHS[INTEREST_MAPPER]

        def mapped(payload: Any) -> dict[str, Any]:
            return edit(original(payload), payload)

        monkeypatch.setitem(code_paths._CODE_PATHS, INTEREST_MAPPER, mapped)

    return plant


def _cites_all_evidence(output: dict[str, Any], payload: Any) -> dict[str, Any]:
    full = {i["label"]: i["evidence_skus"] for i in payload["evidence"]["interests"]}
    return {
        **output,
        "interests": [
            {**i, "evidence_skus": full.get(i["label"], i["evidence_skus"])}
            for i in output["interests"]
        ],
    }


def _keeps_the_weakest(output: dict[str, Any], payload: Any) -> dict[str, Any]:
    history = [
        {
            "label": i["label"],
            "source": "history",
            "department": i["department"],
            "weight": i["weight"],
            "search_query": i["label"],
            "evidence_skus": list(i["evidence_skus"])[:12],
        }
        for i in sorted(payload["evidence"]["interests"], key=lambda i: i["weight"])
    ]
    others = [i for i in output["interests"] if i["source"] != "history"]
    return {**output, "interests": (history[:6] + others)[:6]}


def _mixed_ratings_called_poor(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.ShopServices.review_digest

    def digest(self: operations.ShopServices, sku: str) -> dict[str, Any]:
        found = original(self, sku)
        product = self.catalogue.by_sku(sku)
        average = product.rating_average
        if average is not None and not product.cold_start and 3.0 <= average < 4.0:
            found = {**found, "digest": "poorly rated"}
        return found

    monkeypatch.setattr(operations.ShopServices, "review_digest", digest)


def _presenter_ignores_marketplace_stock(monkeypatch: pytest.MonkeyPatch) -> None:
    original = tools._presentation_problems

    def problems(skus: list[str], *, catalogue: Catalogue, owned: Container[str]) -> list[str]:
        found = original(skus, catalogue=catalogue, owned=owned)
        market = [s for s in skus if (p := catalogue.get(s)) and p.marketplace_seller]
        return [f for f in found if not ("out of stock" in f and any(s in f for s in market))]

    monkeypatch.setattr(tools, "_presentation_problems", problems)


def _evidence_is_purchases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Persona, "has_evidence", property(lambda self: bool(self.purchase_history)))


def _due_window_a_day_wider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interests, "_DUE_WINDOW_DAYS", interests._DUE_WINDOW_DAYS + 1)


def test_restock_edges_stand_on_both_sides_of_the_due_window() -> None:
    base = ShopServices()
    variant = data_variants.restock_edges(base, random.Random(data_variants.VARIANT_SEED))
    assert variant.customers and variant.requests
    for customer in variant.customers:
        due = variant.services.interest_map(customer).consumables_due
        bought = variant.services.persona(customer).purchase_history
        assert 0 < len(due) < len(bought)  # some at the edge (due), some a day past it (not)


def test_window_shoppers_have_taste_but_nothing_bought() -> None:
    base = ShopServices()
    variant = data_variants.window_shoppers(base, random.Random(data_variants.VARIANT_SEED))
    assert variant.customers and variant.requests
    for customer in variant.customers:
        persona = variant.services.persona(customer)
        assert not persona.purchase_history and persona.saved_items and persona.viewed_items
        assert variant.services.interest_map(customer).interests  # saves and views are taste
        assert base.persona(customer).purchase_history  # the installed data is untouched


@pytest.mark.parametrize(
    ("plant", "rule"),
    [
        (_marketplace_always_in_stock, "in-stock"),
        (_sensitive_never_recognised, "sensitive"),
        (_budget_exclusive, "budget-edge"),
        (_presenter_ignores_marketplace_stock, "tool-contract"),
        (_sensitive_gift_listed, "interest-order"),
        (_mapper_edited(_keeps_the_weakest), "interests-kept"),
        (_mixed_ratings_called_poor, "tool-contract"),
        (_evidence_is_purchases, "tool-contract"),
        (_due_window_a_day_wider, "interest-order"),
    ],
    ids=[
        "marketplace in stock",
        "sensitive filter",
        "budget <",
        "presenter stock",
        "gift",
        "mapper keeps the weakest",
        "mixed ratings called poor",
        "evidence read as purchases only",
        "due window a day wider",
    ],
)
def test_a_bug_only_variant_data_reaches_is_seen(
    monkeypatch: pytest.MonkeyPatch, plant: Any, rule: str
) -> None:
    plant(monkeypatch)
    observed = _observed()
    assert observed["rules"].get(rule, 0) > 0, observed["rules"]


def test_a_mapper_that_cites_past_its_bound_fails_on_a_heavy_buyer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only the heavy buyers hold more evidence in one interest than the stage may cite.
    _mapper_edited(_cites_all_evidence)(monkeypatch)
    with pytest.raises(StageOutputError, match="evidence_skus"):
        _observed()
