"""Registered mutation controls: proof that a check can fail, and recover.

See ``docs/controls.md``. The model (``ControlSpec``, the manifest and its validation) is in
:mod:`vitrine.controls._model`; the healthy/broken/restored runner in
:mod:`vitrine.controls._runner`.
"""

from vitrine.controls._model import (
    ControlSpec,
    ManifestError,
    ManifestExpectation,
    ScopeClass,
    load_manifest,
    validate_manifest,
)
from vitrine.controls._runner import (
    Control,
    ControlOutcome,
    ControlRegistry,
    ControlResult,
    OutcomeState,
    run_control,
    run_controls,
)

__all__ = [
    "Control",
    "ControlOutcome",
    "ControlRegistry",
    "ControlResult",
    "ControlSpec",
    "ManifestError",
    "ManifestExpectation",
    "OutcomeState",
    "ScopeClass",
    "load_manifest",
    "run_control",
    "run_controls",
    "validate_manifest",
]
