"""Subject mutants and the kill matrix: evidence that the suite sees the subject fail.

The model (``Mutant``, ``MutantCatalogue``) and the seam declaration (``Seams`` and its parts)
are imported eagerly, because a suite's catalogue module imports them; the runner, the
operators and the matrix load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from vitrine.mutants.model import Mutant, MutantCatalogue, MutantPlanter
from vitrine.mutants.seams import (
    ModelTransform,
    Seams,
    SeamTarget,
    Threshold,
    Tool,
    ToolCall,
    ToolFault,
    ToolNext,
    ToolOutput,
    TurnsTransform,
)

if TYPE_CHECKING:
    from vitrine.mutants.operators import generate_mutants
    from vitrine.mutants.report import MutantMatrix
    from vitrine.mutants.runner import MutantRunError, run_mutants

__all__ = [
    "ModelTransform",
    "Mutant",
    "MutantCatalogue",
    "MutantMatrix",
    "MutantPlanter",
    "MutantRunError",
    "SeamTarget",
    "Seams",
    "Threshold",
    "Tool",
    "ToolCall",
    "ToolFault",
    "ToolNext",
    "ToolOutput",
    "TurnsTransform",
    "generate_mutants",
    "run_mutants",
]

_LAZY = {
    "generate_mutants": "vitrine.mutants.operators",
    "MutantMatrix": "vitrine.mutants.report",
    "MutantRunError": "vitrine.mutants.runner",
    "run_mutants": "vitrine.mutants.runner",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'vitrine.mutants' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
