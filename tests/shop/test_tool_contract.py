"""The pinned tool contract and the delivery oracles: healthy passes, planted drift fails."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from vitrine_shop.arms import shared_services
from vitrine_shop.evals import tool_contract
from vitrine_shop.evals.delivery_oracle import observe_delivery, ranking_problems
from vitrine_shop.evals.tool_contract import (
    boundary_probes,
    contract_drift,
    load_contract,
    observe_contract,
    published_contract,
)


def test_the_code_publishes_the_pinned_contract() -> None:
    assert contract_drift(load_contract(), published_contract(shared_services())) == []


def test_a_moved_bound_is_one_sentence_naming_it() -> None:
    pinned = load_contract()
    moved = copy.deepcopy(pinned)
    moved["tools"]["search_products"]["parameters"]["properties"]["query"]["maxLength"] = 301
    assert contract_drift(pinned, moved) == [
        "tools.search_products.parameters.properties.query.maxLength is 300 in the pinned "
        "contract, the code publishes 301"
    ]


def test_the_probes_hold_on_the_shipped_shop() -> None:
    observed = asyncio.run(observe_contract(shared_services()))
    assert observed["calls"] > 200 and observed["violations"] == 0, observed


def test_probes_are_generated_either_side_of_each_bound() -> None:
    schema = load_contract()["tools"]["add_to_cart"]["parameters"]
    probes = {(p.label, p.valid) for p in boundary_probes(schema, lambda _p, _i: "GLX-2001")}
    assert ("quantity: maximum 10: 10", True) in probes
    assert ("quantity: maximum 10: 11", False) in probes
    assert ("quantity: a wrong type ('5')", False) in probes
    assert ("sku missing", False) in probes


def test_validation_that_drifts_from_the_contract_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A pinned contract stricter than the code: the code still publishes its own schema, so
    # only the probes generated from the pinned one can see the tool admit a refused value.
    pinned: dict[str, Any] = load_contract()
    pinned["tools"]["add_to_cart"]["parameters"]["properties"]["quantity"]["maximum"] = 9
    observed = asyncio.run(observe_contract(shared_services(), pinned))
    details = [e["detail"] for e in observed["examples"]]
    assert any("add_to_cart: the contract refuses quantity: maximum 9: 10" in d for d in details)


def test_pinning_writes_what_the_code_publishes(tmp_path: Any) -> None:
    path = tool_contract.pin_contract(shared_services(), tmp_path / "contract.json")
    assert load_contract(path) == published_contract(shared_services())


def test_the_delivery_oracles_hold_on_the_shipped_shop() -> None:
    observed = asyncio.run(observe_delivery(shared_services()))
    assert observed["rankings"] > 0 and observed["budget_edges_at_price"] > 0
    assert observed["violations"] == 0, observed["examples"]


def test_an_ascending_ranking_is_not_the_declared_order() -> None:
    payload = {
        "interests": [{"label": "a", "weight": 0.5, "source": "history"}],
        "candidates": [
            {
                "sku": f"GLX-100{n}",
                "interests": ["a"],
                "score": s,
                "lane": "explore",
                "category": f"c{n}",
                "goes_with": None,
            }
            for n, s in ((1, 0.9), (2, 0.5), (3, 0.1))
        ],
        "max_explore": 2,
        "max_replenish": 3,
        "owned_durables": [],
    }
    best = {"picks": [{"sku": "GLX-1001", "interest": "a"}, {"sku": "GLX-1002", "interest": "a"}]}
    worst = {"picks": [{"sku": "GLX-1003", "interest": "a"}, {"sku": "GLX-1002", "interest": "a"}]}
    assert ranking_problems(payload, best) == []
    assert any("declared value" in p for p in ranking_problems(payload, worst))
