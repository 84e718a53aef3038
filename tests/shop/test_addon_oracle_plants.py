"""The add-ons oracle, proved on the producer: Discovery taking fewer declared add-ons than its
policy owes, or none, or more, must be named; the shipped workflow owes none it leaves out."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from vitrine_shop.evals.delivery_oracle import observe_delivery
from vitrine_shop.operations import ShopServices
from vitrine_shop.workflow import discovery


def _observed() -> dict[str, Any]:
    return asyncio.run(observe_delivery(ShopServices()))


def test_the_shipped_workflow_offers_every_add_on_it_owes():
    observed = _observed()
    assert observed["rankings"] > 0
    assert "add-ons" not in observed["rules"], observed["examples"]


@pytest.mark.parametrize("cap", [0, 2], ids=["no-add-ons", "two-per-interest"])
def test_fewer_add_ons_than_the_policy_owes_are_named(monkeypatch, cap):
    monkeypatch.setattr(discovery, "_COMPLEMENTS_PER_INTEREST", cap)
    observed = _observed()
    assert observed["rules"].get("add-ons", 0) > 0, observed["rules"]


def test_more_add_ons_than_the_policy_owes_are_named(monkeypatch):
    monkeypatch.setattr(discovery, "_COMPLEMENTS_PER_INTEREST", 4)
    observed = _observed()
    assert observed["rules"].get("add-ons", 0) > 0, observed["rules"]
    assert any("owes no interest" in e["detail"] for e in observed["examples"])


def test_the_shipped_workflow_finds_every_nearest_product_it_owes():
    assert "discovery" not in _observed()["rules"]


def test_a_search_cut_short_is_named(monkeypatch):
    # Discovery asking for three nearest products where its policy says four.
    monkeypatch.setattr(discovery, "_SEARCH_LIMIT", 3)
    observed = _observed()
    assert observed["rules"].get("discovery", 0) > 0, observed["rules"]
