"""Finding a suite's mutant catalogue and the plan its mutants run through."""

from __future__ import annotations

from vitrine.errors import VitrineError
from vitrine.mutants.model import MutantCatalogue
from vitrine.plans.base import PlanKind, UsageError
from vitrine.redact import describe_exception
from vitrine.suite import Suite

__all__ = ["MUTANTS_COMPONENT", "CatalogueImportError", "catalogue_plan", "suite_catalogue"]

MUTANTS_COMPONENT = "mutants"


class CatalogueImportError(RuntimeError, VitrineError):
    """The catalogue's module exists but raised while it was imported: a broken installation."""


def suite_catalogue(suite: Suite) -> MutantCatalogue:
    """The suite's ``mutants`` component; a suite without one is a usage error."""
    if MUTANTS_COMPONENT not in suite.components:
        raise UsageError(
            f"suite {suite.name} declares no mutant catalogue: add "
            f'components={{"{MUTANTS_COMPONENT}": "module:ATTR"}} naming a MutantCatalogue'
        )
    try:
        catalogue = suite.component(MUTANTS_COMPONENT)
    except UsageError:
        raise
    except Exception as exc:
        raise CatalogueImportError(
            f"suite {suite.name}: importing its mutant catalogue failed ({describe_exception(exc)})"
        ) from exc
    if not isinstance(catalogue, MutantCatalogue):
        raise UsageError(
            f"suite {suite.name}: its {MUTANTS_COMPONENT!r} component is a "
            f"{type(catalogue).__name__}, not a MutantCatalogue"
        )
    return catalogue


def catalogue_plan(suite: Suite, catalogue: MutantCatalogue) -> str:
    """The plan every mutant runs through: the catalogue's, else the suite's default.

    It must be offline: the plan runs once per mutant, and a paid plan would multiply its cost
    by the size of the catalogue without anyone confirming it.
    """
    name = catalogue.plan or suite.default_plan
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
