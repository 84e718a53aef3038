"""The shop's 43 registered controls: the manifest, their bindings, and the report section.

The manifest (``vitrine_shop/data/controls.json``) is the ledger; ``observed`` and ``fixtures``
bind each row to its observe / perturb / evaluate seams. A row without a binding, or a binding
without a row, is refused before anything runs.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from vitrine.controls import (
    ControlRegistry,
    ControlResult,
    ControlSpec,
    ManifestError,
    ManifestExpectation,
    ScopeClass,
    load_manifest,
)
from vitrine_shop.evals.controls.blocks import Binding
from vitrine_shop.evals.controls.capture import ShippedState, capture_shipped_state
from vitrine_shop.evals.controls.fixtures import FIXTURE_BINDINGS
from vitrine_shop.evals.controls.observed import OBSERVED_BINDINGS

__all__ = [
    "EXPECTED_CONTROLS",
    "MANIFEST_PATH",
    "SHOP_MANIFEST",
    "ShippedState",
    "capture_shipped_state",
    "run_shop_controls",
    "shop_manifest",
    "shop_registry",
]

MANIFEST_PATH = Path(__file__).resolve().parents[2] / "data" / "controls.json"
EXPECTED_CONTROLS = 43
SHOP_MANIFEST = ManifestExpectation(
    count=EXPECTED_CONTROLS,
    prefix="NC-",
    tranches={"E02A": 14, "E02B": 7, "E02C": 22},
    scopes={ScopeClass.PRODUCTION_OBSERVATION: 20, ScopeClass.BOUNDARY_CALIBRATION_FIXTURE: 23},
)
_BINDINGS: dict[str, Binding] = {**OBSERVED_BINDINGS, **FIXTURE_BINDINGS}


@cache
def shop_manifest() -> tuple[ControlSpec, ...]:
    return load_manifest(MANIFEST_PATH, SHOP_MANIFEST)


def shop_registry(state: ShippedState) -> ControlRegistry:
    manifest = shop_manifest()
    unbound = sorted(set(_BINDINGS) - {s.id for s in manifest})
    if unbound:
        raise ManifestError(f"bindings without a manifest row: {', '.join(unbound)}")
    registry = ControlRegistry(manifest)
    for spec in manifest:
        seams = _BINDINGS[spec.id](state)
        registry.register(
            spec,
            observe=seams.observe,
            perturb=seams.perturb,
            evaluate=seams.evaluate,
            expected_exception=seams.expected_exception,
        )
    return registry


async def run_shop_controls(state: ShippedState) -> tuple[ControlResult, ...]:
    return await shop_registry(state).run()
