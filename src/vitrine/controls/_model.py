"""The control model: what a registered control claims, and the manifest that lists them.

A control's row is pure data (id, scope class, name, category, target, mutation, observation
producer, evaluator, tranche). The manifest is validated on load, against expectations the
caller states (how many rows, how they split across tranches and scope classes), so that a
missing, duplicated or misfiled control is refused before any control runs.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from vitrine.errors import ManifestError

__all__ = [
    "ControlSpec",
    "ManifestError",
    "ManifestExpectation",
    "ScopeClass",
    "load_manifest",
    "validate_manifest",
]


class ScopeClass(StrEnum):
    """What kind of evidence a control gives.

    A production observation perturbs state the shipped subject produced and judges it with the
    shipped decision seam. A boundary or calibration fixture exercises an independently authored
    public contract; it claims nothing about an analogous production path.
    """

    PRODUCTION_OBSERVATION = "production-observation"
    BOUNDARY_CALIBRATION_FIXTURE = "boundary-calibration-fixture"


_TEXT_FIELDS = ("id", "name", "category", "target", "mutation", "producer", "evaluator", "tranche")


@dataclass(frozen=True, slots=True)
class ControlSpec:
    """One registered control, as its manifest row states it.

    Every text field is free text for the reader of the report, required and non-blank:

    - ``id``: the row's id, ``{prefix}01``, ``{prefix}02``, ... (see :class:`ManifestExpectation`);
    - ``scope``: what kind of evidence the control gives (:class:`ScopeClass`);
    - ``name`` and ``category``: a short title and the family it belongs to ("grounding",
      "safety", ...), used to group the controls in reports;
    - ``target``: the contract or decision seam under perturbation (a check, a screen, a gate);
    - ``mutation``: the one isolated perturbation, in words ("drop the last tool call");
    - ``producer``: what produces the observation the evaluator reads (the shipped agent's
      answer, a stored run, an authored fixture), so a reader knows whose output is perturbed;
    - ``evaluator``: the check or function that must turn red (the same one that stays green
      on the healthy and restored observations);
    - ``tranche``: a label you choose to group controls into batches (a release, a review
      round, a team); :class:`ManifestExpectation` can pin how many rows each tranche holds,
      so that a row filed under the wrong batch is refused. A single tranche is fine.

    ``expected_exception`` names the one exception type whose raise in the broken arm counts
    as a contained fault; every other control must be caught by a measured failure.
    """

    id: str
    scope: ScopeClass
    name: str
    category: str
    target: str
    mutation: str
    producer: str
    evaluator: str
    tranche: str
    expected_exception: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any], where: str = "row") -> ControlSpec:
        if not isinstance(row, Mapping):
            raise ManifestError(f"{where}: expected an object, got {type(row).__name__}")
        unknown = sorted(set(row) - {*_TEXT_FIELDS, "scope", "expected_exception"})
        if unknown:
            raise ManifestError(f"{where}: unknown field(s) {', '.join(unknown)}")
        values: dict[str, str] = {}
        for name in _TEXT_FIELDS:
            value = row.get(name)
            if not isinstance(value, str) or not value.strip():
                raise ManifestError(f"{where}: field {name!r} is missing or blank")
            values[name] = value
        scope = row.get("scope")
        try:
            scope_class = ScopeClass(str(scope))
        except ValueError:
            allowed = ", ".join(s.value for s in ScopeClass)
            raise ManifestError(
                f"{where}: field 'scope' is {scope!r}; every row needs a scope class ({allowed})"
            ) from None
        expected = row.get("expected_exception")
        if expected is not None and (not isinstance(expected, str) or not expected.strip()):
            raise ManifestError(f"{where}: field 'expected_exception' must name a type or be null")
        return cls(scope=scope_class, expected_exception=expected, **values)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope.value,
            "name": self.name,
            "category": self.category,
            "target": self.target,
            "mutation": self.mutation,
            "producer": self.producer,
            "evaluator": self.evaluator,
            "tranche": self.tranche,
            "expected_exception": self.expected_exception,
        }


@dataclass(frozen=True, slots=True)
class ManifestExpectation:
    """The shape a manifest must have; ``None`` for a split means "not constrained".

    Ids must run ``{prefix}01`` .. ``{prefix}{count}`` without gaps, zero-padded to the width
    of ``count`` (at least two digits). The prefix is yours to choose (``"CTL-"``, ``"AIR-"``);
    there is no default, so one project's ids are never checked against another's.
    """

    count: int
    prefix: str
    tranches: Mapping[str, int] | None = None
    scopes: Mapping[ScopeClass, int] | None = None
    max_expected_exceptions: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.prefix, str) or not self.prefix.strip():
            raise ManifestError(
                "ManifestExpectation needs a non-blank id prefix (e.g. prefix='CTL-'): the ids "
                "of a manifest are checked against it"
            )

    def expected_id(self, ordinal: int) -> str:
        width = max(2, len(str(self.count)))
        return f"{self.prefix}{ordinal:0{width}d}"


@dataclass(frozen=True, slots=True)
class _Split:
    label: str
    expected: Mapping[str, int]
    observed: Counter[str] = field(default_factory=Counter)

    def check(self) -> None:
        if dict(self.observed) != dict(self.expected):
            raise ManifestError(
                f"the {self.label} split is {_describe(self.observed)}; expected "
                f"{_describe(self.expected)}"
            )


def _describe(split: Mapping[str, int]) -> str:
    return "/".join(f"{k} {v}" for k, v in sorted(split.items())) or "empty"


def validate_manifest(rows: object, expect: ManifestExpectation) -> tuple[ControlSpec, ...]:
    """Parse and validate manifest rows; every error names the row and the field."""
    if isinstance(rows, str | bytes) or not isinstance(rows, Sequence):
        raise ManifestError("a control manifest is a list of rows")
    specs = tuple(
        ControlSpec.from_row(row, f"row {i} ({_row_id(row)})") for i, row in enumerate(rows, 1)
    )
    for ordinal, spec in enumerate(specs, start=1):
        wanted = expect.expected_id(ordinal)
        if spec.id != wanted:
            raise ManifestError(
                f"row {ordinal}: field 'id' is {spec.id!r}, expected {wanted!r}: ids run "
                f"{expect.expected_id(1)}..{expect.expected_id(expect.count)} in order, "
                "without gaps or repeats"
            )
    if len(specs) != expect.count:
        raise ManifestError(
            f"the manifest registers {len(specs)} controls; expected {expect.count} "
            f"({expect.expected_id(1)}..{expect.expected_id(expect.count)})"
        )
    if expect.tranches is not None:
        _Split("tranche", expect.tranches, Counter(s.tranche for s in specs)).check()
    if expect.scopes is not None:
        _Split(
            "scope class",
            {k.value: v for k, v in expect.scopes.items()},
            Counter(s.scope.value for s in specs),
        ).check()
    contained = [s.id for s in specs if s.expected_exception]
    if len(contained) > expect.max_expected_exceptions:
        raise ManifestError(
            f"{len(contained)} rows declare an expected exception ({', '.join(contained)}); "
            f"at most {expect.max_expected_exceptions} may catch through a contained fault"
        )
    return specs


def _row_id(row: object) -> str:
    value = row.get("id") if isinstance(row, Mapping) else None
    return value if isinstance(value, str) and value else "no id"


def load_manifest(
    path: str | os.PathLike[str], expect: ManifestExpectation
) -> tuple[ControlSpec, ...]:
    """Read a JSON manifest (``{"controls": [...]}`` or a bare list) and validate it."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ManifestError(
            f"{Path(path).name}: not valid JSON ({exc.msg}, line {exc.lineno})"
        ) from exc
    rows = document.get("controls") if isinstance(document, Mapping) else document
    if rows is None:
        raise ManifestError(f"{Path(path).name}: no 'controls' list")
    return validate_manifest(rows, expect)
