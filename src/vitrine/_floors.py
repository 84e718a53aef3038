"""Chance floors: what a check's success rate would be by chance alone.

A floor is only honest when there is a random-draw population to derive it from. For
deterministic invariants and open-language predicates there is none, and the floor says so
(``not-derivable``) instead of pretending 0.5.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from math import comb
from types import MappingProxyType
from typing import Any

from vitrine.errors import FloorNotDerivableError, InvalidArgumentError

__all__ = [
    "ChanceFloor",
    "FloorKind",
    "FloorNotDerivableError",
]


class FloorKind(StrEnum):
    """How a chance floor was derived, or why it could not be."""

    HYPERGEOMETRIC_AT_LEAST_ONE = "hypergeometric-at-least-one"
    HYPERGEOMETRIC_AVOIDS_ALL = "hypergeometric-avoids-all"
    UNIFORM_CHOICE = "uniform-choice"
    PRIOR_RATE = "prior-rate"
    EMPIRICAL_POLICY = "empirical-policy"
    NOT_DERIVABLE = "not-derivable"


@dataclass(frozen=True, slots=True)
class ChanceFloor:
    kind: FloorKind
    rate: float | None
    reason: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if self.kind is FloorKind.NOT_DERIVABLE:
            if self.rate is not None:
                raise InvalidArgumentError("a not-derivable floor has no rate")
            if not self.reason or not self.reason.strip():
                raise InvalidArgumentError(
                    "a not-derivable floor needs a reason: say why no random-draw population "
                    "exists for this check"
                )
        elif self.rate is None or not 0.0 <= self.rate <= 1.0:
            raise InvalidArgumentError(
                f"a {self.kind.value} floor needs a rate in [0, 1], got {self.rate}"
            )

    @property
    def derivable(self) -> bool:
        return self.kind is not FloorKind.NOT_DERIVABLE

    @property
    def value(self) -> float:
        if self.rate is None:
            raise FloorNotDerivableError(
                f"this chance floor is not derivable ({self.reason}); there is no chance rate "
                "to compare against, so no floor p-value exists"
            )
        return self.rate

    def describe(self) -> str:
        if self.rate is None:
            return "NOT DERIVABLE"
        return f"{self.kind.value} {self.rate:.4f}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "value": self.rate,
            "reason": self.reason,
            "parameters": dict(self.parameters),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChanceFloor:
        return cls(
            FloorKind(data["kind"]),
            data.get("value"),
            data.get("reason"),
            MappingProxyType(dict(data.get("parameters") or {})),
        )

    # Factories: one per kind, each deriving the rate from the population it names.

    @classmethod
    def hypergeometric_at_least_one(
        cls, population: int, successes: int, draws: int
    ) -> ChanceFloor:
        """P(at least one of ``successes`` good items among ``draws`` drawn without replacement)."""
        _check_population(population, successes, draws)
        rate = 1.0 - comb(population - successes, draws) / comb(population, draws)
        return cls(
            FloorKind.HYPERGEOMETRIC_AT_LEAST_ONE,
            rate,
            parameters=MappingProxyType(
                {"population": population, "successes": successes, "draws": draws}
            ),
        )

    @classmethod
    def hypergeometric_avoids_all(cls, population: int, bad: int, draws: int) -> ChanceFloor:
        """P(none of ``bad`` items among ``draws`` drawn without replacement)."""
        _check_population(population, bad, draws)
        rate = comb(population - bad, draws) / comb(population, draws)
        return cls(
            FloorKind.HYPERGEOMETRIC_AVOIDS_ALL,
            rate,
            parameters=MappingProxyType({"population": population, "bad": bad, "draws": draws}),
        )

    @classmethod
    def uniform_choice(cls, options: int) -> ChanceFloor:
        if options < 1:
            raise InvalidArgumentError(f"a uniform choice needs at least one option, got {options}")
        return cls(
            FloorKind.UNIFORM_CHOICE,
            1.0 / options,
            parameters=MappingProxyType({"options": options}),
        )

    @classmethod
    def prior_rate(cls, rate: float, source: str) -> ChanceFloor:
        if not source.strip():
            raise InvalidArgumentError("a prior-rate floor must name where the prior comes from")
        return cls(FloorKind.PRIOR_RATE, rate, parameters=MappingProxyType({"source": source}))

    @classmethod
    def empirical_policy(cls, rate: float, policy: str) -> ChanceFloor:
        if not policy.strip():
            raise InvalidArgumentError(
                "an empirical-policy floor must name the policy it was measured on"
            )
        return cls(
            FloorKind.EMPIRICAL_POLICY, rate, parameters=MappingProxyType({"policy": policy})
        )

    @classmethod
    def not_derivable(cls, reason: str) -> ChanceFloor:
        return cls(FloorKind.NOT_DERIVABLE, None, reason)


def _check_population(population: int, marked: int, draws: int) -> None:
    if population < 1:
        raise InvalidArgumentError(f"population must be at least 1, got {population}")
    if not 0 <= marked <= population:
        raise InvalidArgumentError(f"marked items must be within 0..{population}, got {marked}")
    if not 1 <= draws <= population:
        raise InvalidArgumentError(f"draws must be within 1..{population}, got {draws}")
