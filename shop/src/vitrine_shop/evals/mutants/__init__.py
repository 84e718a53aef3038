"""The shop's mutant catalogue: ordinary bugs planted through the shop's real seams.

Each side of the shop keeps its mutants in its own module; this one only assembles them.
``vitrine mutants`` runs the offline suite against each of them in a process of its own.
"""

from __future__ import annotations

from vitrine.mutants import MutantCatalogue
from vitrine_shop.evals.mutants.agent_side import AGENT_MUTANTS
from vitrine_shop.evals.mutants.service_side import SERVICE_MUTANTS
from vitrine_shop.evals.mutants.workflow_side import WORKFLOW_MUTANTS

__all__ = ["CATALOGUE"]

CATALOGUE = MutantCatalogue(
    (*AGENT_MUTANTS, *WORKFLOW_MUTANTS, *SERVICE_MUTANTS),
    minimum_score=0.9,
    plan="offline-suite",
    description="ordinary bugs in the shop's producers, each planted through a real seam",
)
