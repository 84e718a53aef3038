"""Subject mutants and the kill matrix: evidence that the suite sees the subject fail.

The model (``Mutant``, ``MutantCatalogue``) is imported eagerly, because a suite's catalogue
module imports it; the runner and the matrix load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from vitrine.mutants.model import Mutant, MutantCatalogue, MutantPlanter

if TYPE_CHECKING:
    from vitrine.mutants.report import MutantMatrix
    from vitrine.mutants.runner import MutantRunError, run_mutants

__all__ = [
    "Mutant",
    "MutantCatalogue",
    "MutantMatrix",
    "MutantPlanter",
    "MutantRunError",
    "run_mutants",
]

_LAZY = {
    "MutantMatrix": "vitrine.mutants.report",
    "MutantRunError": "vitrine.mutants.runner",
    "run_mutants": "vitrine.mutants.runner",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'vitrine.mutants' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
