"""The catalogue-shape gate checks the loaded data against an authored schema."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest

from vitrine_shop.arms import shared_services
from vitrine_shop.catalogue import load_catalogue
from vitrine_shop.evals.catalogue_schema import catalogue_problems, evaluate_catalogue_shape
from vitrine_shop.evals.structural_evidence import observe_loaded_data


@pytest.fixture(scope="module")
def loaded() -> dict[str, Any]:
    return observe_loaded_data(load_catalogue(), shared_services())


def test_the_shipped_data_meets_the_schema(loaded):
    observation = evaluate_catalogue_shape(loaded)
    assert observation.is_measured and observation.passed, observation.evidence["problems"]
    assert observation.evidence["observed"] == {"products": 99, "personas": 14, "tools": 15}


def _products(edit):
    def change(data: dict[str, Any]) -> None:
        data["products"] = [edit(p) for p in data["products"] if edit(p) is not None]

    return change


def _drop_department(slug: str):
    return _products(lambda p: None if p["department"] == slug else p)


def _in_cents(product: dict[str, Any]) -> dict[str, Any]:
    return {**product, "price_chf": str(Decimal(product["price_chf"]) * 100)}


def _first(key: str, **changes: Any):
    def change(data: dict[str, Any]) -> None:
        data[key][0] = {**data[key][0], **changes}

    return change


def _second_gtin_repeats_first(data: dict[str, Any]) -> None:
    data["products"][1] = {**data["products"][1], "gtin": data["products"][0]["gtin"]}


def _persona_owns_ghost(data: dict[str, Any]) -> None:
    data["personas"][0] = {**data["personas"][0], "purchased": ["GLX-9999"]}


def _one_persona_fewer(data: dict[str, Any]) -> None:
    data["personas"] = data["personas"][1:]


def _untyped_tool_parameter(data: dict[str, Any]) -> None:
    tool = data["tools"][0]
    data["tools"][0] = {**tool, "parameters": {"type": "object", "properties": {"q": {}}}}


@pytest.mark.parametrize(
    ("break_it", "named"),
    [
        (_drop_department("home-audio"), "home-audio: 0 core products, expected 9"),
        (_products(_in_cents), "is not a CHF price"),
        (_products(lambda p: {**p, "tags": []}), "no tags"),
        (_first("products", sku="GLX-9001"), "first digit does not follow its department"),
        (_first("products", gtin="7640168110018"), "is not a valid EAN-13"),
        (_first("products", category_path=["Gaming", "Cameras"]), "does not start at"),
        (_first("products", brand=""), "brand is missing"),
        (_second_gtin_repeats_first, "repeated GTINs"),
        (_persona_owns_ghost, "['GLX-9999'] not in catalogue"),
        (_one_persona_fewer, "13 distinct personas of 13, expected 14"),
        (_first("tools", name="delete_everything"), "unexpected ['delete_everything']"),
        (_untyped_tool_parameter, "property 'q' has no valid type"),
    ],
)
def test_each_departure_from_the_schema_fails_the_gate_by_name(loaded, break_it, named):
    broken = copy.deepcopy(loaded)
    break_it(broken)
    observation = evaluate_catalogue_shape(broken)
    assert observation.failed
    assert any(named in p for p in catalogue_problems(broken)), catalogue_problems(broken)


def test_unobserved_data_is_not_measured():
    assert evaluate_catalogue_shape({"products": None}).state.value == "not_measured"
