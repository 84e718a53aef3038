"""Checks and what they observe: admission, authorities, chance floors, verdicts and gates.

The root exports the names a first suite needs (:func:`vitrine.check`, :func:`vitrine.admit`,
:class:`vitrine.Observation`, :class:`vitrine.ChanceFloor`); the rest of that vocabulary is here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine._bench.model import (
        AdmissionError as AdmissionError,
        AdmittedCheck as AdmittedCheck,
        Authority as Authority,
        Check as Check,
        DefinitionError as DefinitionError,
        FunctionCheck as FunctionCheck,
        admit as admit,
        canonical_json as canonical_json,
        check as check,
    )
    from vitrine._floors import (
        ChanceFloor as ChanceFloor,
        FloorKind as FloorKind,
        FloorNotDerivableError as FloorNotDerivableError,
    )
    from vitrine._gates import (
        GateDecision as GateDecision,
        GateResult as GateResult,
        decide as decide,
    )
    from vitrine._outcomes import (
        Census as Census,
        ExitCode as ExitCode,
        MeasurementState as MeasurementState,
        Observation as Observation,
        Status as Status,
        Verdict as Verdict,
        aggregate_exit_codes as aggregate_exit_codes,
        run_verdict as run_verdict,
        status_of_label as status_of_label,
    )

__getattr__, __dir__ = lazy_exports(__name__)
