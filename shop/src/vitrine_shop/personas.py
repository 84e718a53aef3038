"""The demo personas and the fixed demo clock their histories are read against."""

from __future__ import annotations

import datetime
import functools
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vitrine_shop.catalogue import Catalogue, load_catalogue
from vitrine_shop.domain import (
    Persona,
    PersonaError,
    format_validation_error,
    read_json_document,
    record_label,
)

__all__ = ["DEFAULT_PERSONAS_PATH", "DEMO_CLOCK", "PersonaError", "load_personas"]

# Every "how long ago" in the demo (replenishment, recency) is measured against this date, so
# results do not change with the day the suite is run.
DEMO_CLOCK = datetime.date(2026, 9, 6)

DEFAULT_PERSONAS_PATH = Path(__file__).parent / "data" / "personas.json"


def _parse(raw: Any, label: str) -> list[Persona]:
    if not isinstance(raw, dict) or not isinstance(raw.get("personas"), list):
        raise PersonaError(f"{label}: expected an object with a 'personas' list")
    personas: list[Persona] = []
    errors: list[str] = []
    for index, item in enumerate(raw["personas"]):
        try:
            personas.append(Persona.model_validate(item))
        except ValidationError as exc:
            errors.append(
                format_validation_error(label, "persona", record_label(item, "id", index), exc)
            )
    if errors:
        raise PersonaError("\n".join(errors))
    return personas


def _problems(personas: list[Persona], catalogue: Catalogue, label: str) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    for persona in personas:
        where = f"{label}: persona {persona.id}"
        if persona.id in seen:
            problems.append(f"{where} field id: duplicate persona id")
        seen.add(persona.id)
        for index, purchase in enumerate(persona.purchase_history):
            if purchase.sku not in catalogue:
                problems.append(
                    f"{where} field purchase_history.{index}.sku: "
                    f"{purchase.sku} is not in the catalogue"
                )
            if purchase.date > DEMO_CLOCK:
                # A purchase after the demo clock would be a purchase from the future.
                problems.append(
                    f"{where} field purchase_history.{index}.date: "
                    f"{purchase.date} is after the demo clock {DEMO_CLOCK}"
                )
        for field in ("saved_items", "viewed_items"):
            for index, sku in enumerate(getattr(persona, field)):
                if sku not in catalogue:
                    problems.append(f"{where} field {field}.{index}: {sku} is not in the catalogue")
    return problems


def _load(path: Path, catalogue: Catalogue) -> dict[str, Persona]:
    label = path.name
    personas = _parse(read_json_document(path, PersonaError), label)
    problems = _problems(personas, catalogue, label)
    if problems:
        raise PersonaError("\n".join(problems))
    return {p.id: p for p in personas}


@functools.cache
def _load_default() -> dict[str, Persona]:
    return _load(DEFAULT_PERSONAS_PATH, load_catalogue())


def load_personas(
    path: Path | None = None, *, catalogue: Catalogue | None = None
) -> dict[str, Persona]:
    """Personas by id, validated against the catalogue (the packaged one by default).

    The returned dict is a fresh copy each call (personas themselves are immutable), so a
    caller that adds or removes entries cannot change what the next caller sees.
    """
    if path is None and catalogue is None:
        return dict(_load_default())
    return _load(path or DEFAULT_PERSONAS_PATH, catalogue or load_catalogue())
