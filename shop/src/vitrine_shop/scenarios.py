"""The scenario registry: the single source of cases for the offline and the live plans."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vitrine_shop.catalogue import Catalogue, load_catalogue
from vitrine_shop.domain import (
    Persona,
    Scenario,
    ScenarioError,
    format_validation_error,
    read_json_document,
    record_label,
)
from vitrine_shop.personas import load_personas

__all__ = [
    "DEFAULT_SCENARIOS_PATH",
    "LIVE_SCENARIO_IDS",
    "OFFLINE_BENCHMARK_SCENARIO_IDS",
    "ScenarioError",
    "load_scenarios",
]

DEFAULT_SCENARIOS_PATH = Path(__file__).parent / "data" / "scenarios.json"

# Fixed by the protocol; the registry is checked against these so a renamed scenario cannot
# silently drop out of a plan.
LIVE_SCENARIO_IDS: tuple[str, ...] = (
    "nadia-cross-category",
    "sofia-capability-gap",
    "marco-gift-trap",
    "luca-safe-abstention",
)
OFFLINE_BENCHMARK_SCENARIO_IDS: tuple[str, ...] = ("nadia-cross-category", "sofia-capability-gap")


def _parse(raw: Any, label: str) -> list[Scenario]:
    if not isinstance(raw, dict) or not isinstance(raw.get("scenarios"), list):
        raise ScenarioError(f"{label}: expected an object with a 'scenarios' list")
    scenarios: list[Scenario] = []
    errors: list[str] = []
    for index, item in enumerate(raw["scenarios"]):
        try:
            scenarios.append(Scenario.model_validate(item))
        except ValidationError as exc:
            errors.append(
                format_validation_error(label, "scenario", record_label(item, "id", index), exc)
            )
    if errors:
        raise ScenarioError("\n".join(errors))
    return scenarios


def _problems(
    scenarios: list[Scenario],
    personas: dict[str, Persona],
    catalogue: Catalogue,
    label: str,
) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    for scenario in scenarios:
        where = f"{label}: scenario {scenario.id}"
        if scenario.id in seen:
            problems.append(f"{where} field id: duplicate scenario id")
        seen.add(scenario.id)
        for persona_id in scenario.personas:
            if persona_id not in personas:
                problems.append(f"{where} field persona_id: unknown persona {persona_id}")
        expectation = scenario.tool_expectation
        for field, skus in (
            ("relevant_skus", scenario.relevant_skus),
            ("tool_expectation.forbidden_presented_skus", expectation.forbidden_presented_skus),
        ):
            for sku in skus:
                if sku not in catalogue:
                    problems.append(f"{where} field {field}: {sku} is not in the catalogue")
        # Presenting a durable the customer already bought is the error the forbidden list
        # exists to catch, so the list must cover every one. Consumables are exempt: buying
        # descaler again when the last bottle is used up is replenishment, not a repeat.
        bought = frozenset().union(
            *(personas[p].purchased_skus for p in scenario.personas if p in personas)
        )
        durables = {sku for sku in bought if (item := catalogue.get(sku)) and not item.consumable}
        missing = durables - set(expectation.forbidden_presented_skus)
        if expectation.kind == "tool-use" and missing:
            problems.append(
                f"{where} field tool_expectation.forbidden_presented_skus: "
                f"omits purchased durables {sorted(missing)}"
            )
    if scenarios and not problems:
        absent = [s for s in LIVE_SCENARIO_IDS if s not in seen]
        if absent:
            problems.append(f"{label}: live scenarios missing from the registry: {absent}")
    return problems


def _load(path: Path, personas: dict[str, Persona], catalogue: Catalogue) -> dict[str, Scenario]:
    label = path.name
    scenarios = _parse(read_json_document(path, ScenarioError), label)
    problems = _problems(scenarios, personas, catalogue, label)
    if problems:
        raise ScenarioError("\n".join(problems))
    return {s.id: s for s in scenarios}


@functools.cache
def _load_default() -> dict[str, Scenario]:
    return _load(DEFAULT_SCENARIOS_PATH, load_personas(), load_catalogue())


def load_scenarios(
    path: Path | None = None,
    *,
    personas: dict[str, Persona] | None = None,
    catalogue: Catalogue | None = None,
) -> dict[str, Scenario]:
    """Scenarios by id, in registry order, validated against personas and catalogue.

    Returns a fresh dict each call; the scenarios themselves are immutable.
    """
    if path is None and personas is None and catalogue is None:
        return dict(_load_default())
    catalogue = catalogue or load_catalogue()
    return _load(
        path or DEFAULT_SCENARIOS_PATH,
        personas if personas is not None else load_personas(catalogue=catalogue),
        catalogue,
    )
