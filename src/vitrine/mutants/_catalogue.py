"""Finding a suite's mutant catalogue, its seams, and the plan its mutants run through."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from vitrine._plans.base import PlanKind, UsageError
from vitrine._redact import describe_exception
from vitrine._suite import Suite
from vitrine.errors import CatalogueImportError, UnknownKeyError
from vitrine.mutants._model import Mutant, MutantCatalogue
from vitrine.mutants._operators import generate_mutants
from vitrine.mutants._seams import Seams

__all__ = [
    "MUTANTS_COMPONENT",
    "SEAMS_COMPONENT",
    "CatalogueImportError",
    "SuiteMutants",
    "catalogue_plan",
    "suite_catalogue",
    "suite_mutants",
    "suite_seams",
]

MUTANTS_COMPONENT = "mutants"
SEAMS_COMPONENT = "seams"

_T = TypeVar("_T")


def suite_catalogue(suite: Suite) -> MutantCatalogue:
    """The suite's ``mutants`` component; a suite without one is a usage error."""
    if MUTANTS_COMPONENT not in suite.components:
        raise UsageError(
            f"suite {suite.name} declares no mutant catalogue: add "
            f'components={{"{MUTANTS_COMPONENT}": "module:ATTR"}} naming a MutantCatalogue'
        )
    return _component(suite, MUTANTS_COMPONENT, MutantCatalogue)


def suite_seams(suite: Suite) -> Seams:
    """The suite's ``seams`` component; a suite without one cannot generate mutants."""
    if SEAMS_COMPONENT not in suite.components:
        raise UsageError(
            f"suite {suite.name} declares no seams, so --generate has nothing to plant at: add "
            f'components={{"{SEAMS_COMPONENT}": "module:ATTR"}} naming a vitrine.mutants.Seams'
        )
    return _component(suite, SEAMS_COMPONENT, Seams)


def _component(suite: Suite, name: str, kind: type[_T]) -> _T:
    try:
        value = suite.component(name)
    except UsageError:
        raise
    except Exception as exc:
        raise CatalogueImportError(
            f"suite {suite.name}: importing its {name} component failed ({describe_exception(exc)})"
        ) from exc
    if not isinstance(value, kind):
        raise UsageError(
            f"suite {suite.name}: its {name!r} component is a {type(value).__name__}, "
            f"not a {kind.__name__}"
        )
    return value


@dataclass(frozen=True, slots=True)
class SuiteMutants:
    """Every mutant a run may plant: the hand-written catalogue, then the generated ones."""

    catalogue: MutantCatalogue | None
    seams: Seams | None
    mutants: tuple[Mutant, ...]

    @property
    def minimum_score(self) -> float:
        return 0.0 if self.catalogue is None else self.catalogue.minimum_score

    @property
    def description(self) -> str:
        parts = [c.description for c in (self.catalogue, self.seams) if c and c.description]
        return "; ".join(parts)

    def get(self, mutant_id: str) -> Mutant:
        for mutant in self.mutants:
            if mutant.id == mutant_id:
                return mutant
        raise UnknownKeyError(f"no mutant {mutant_id!r} in this suite")


def suite_mutants(suite: Suite, *, generate: bool = False) -> SuiteMutants:
    """The catalogue's mutants and, with ``generate``, those generated from the suite's seams.

    A suite with seams but no catalogue can still generate; one with neither is refused.
    """
    if not generate:
        written = suite_catalogue(suite)
        return SuiteMutants(written, None, tuple(written))
    seams = suite_seams(suite)
    catalogue = suite_catalogue(suite) if MUTANTS_COMPONENT in suite.components else None
    mutants: Sequence[Mutant] = () if catalogue is None else tuple(catalogue)
    generated = generate_mutants(seams)
    clash = sorted({m.id for m in mutants} & {m.id for m in generated})
    if clash:
        raise UsageError(
            f"suite {suite.name}: hand-written mutants {', '.join(clash)} take ids the "
            "generated mutants need; rename them"
        )
    return SuiteMutants(catalogue, seams, (*mutants, *generated))


def catalogue_plan(suite: Suite, mutants: SuiteMutants) -> str:
    """The plan every mutant runs through: the catalogue's, the seams', else the suite's default.

    It must be offline: the plan runs once per mutant, and a paid plan would multiply its cost
    by the size of the catalogue without anyone confirming it.
    """
    declared = [c.plan for c in (mutants.catalogue, mutants.seams) if c is not None and c.plan]
    if len(set(declared)) > 1:
        raise UsageError(
            f"suite {suite.name}: the mutant catalogue runs plan {declared[0]} and the seams "
            f"plan {declared[1]}; one run has one baseline, so name the same plan"
        )
    name = declared[0] if declared else suite.default_plan
    if name is None:
        raise UsageError(
            f"suite {suite.name}: the mutant catalogue names no plan and the suite has no "
            "default plan; set MutantCatalogue(plan=...)"
        )
    plan = suite.plan(name)
    if plan.kind is not PlanKind.OFFLINE:
        raise UsageError(
            f"mutants run plan {name} once per mutant, so it must be offline; it is "
            f"{plan.kind.value}"
        )
    if not plan.available:
        raise UsageError(f"{name} is not available: {plan.unavailable_reason}")
    return name
