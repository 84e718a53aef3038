"""Subject mutants and the kill matrix: evidence that the suite sees the subject fail.

Names load on first use: a suite's catalogue module imports the model and the seams without
paying for the runner, the operators or the matrix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine.mutants._model import (
        Mutant as Mutant,
        MutantCatalogue as MutantCatalogue,
        MutantPlanter as MutantPlanter,
    )
    from vitrine.mutants._operators import (
        generate_mutants as generate_mutants,
    )
    from vitrine.mutants._report import (
        MutantMatrix as MutantMatrix,
    )
    from vitrine.mutants._runner import (
        MutantRunError as MutantRunError,
        run_mutants as run_mutants,
    )
    from vitrine.mutants._seams import (
        ModelTransform as ModelTransform,
        Seams as Seams,
        SeamTarget as SeamTarget,
        Threshold as Threshold,
        Tool as Tool,
        ToolCall as ToolCall,
        ToolFault as ToolFault,
        ToolNext as ToolNext,
        ToolOutput as ToolOutput,
        TurnsTransform as TurnsTransform,
    )

__getattr__, __dir__ = lazy_exports(__name__)
