"""The protocol's two offline modes, and the order every mode flag is listed in.

``--self-test`` and ``--controls-only`` exist for every suite (and are refused by name for one
that does not declare them), so their words are the harness's; every other mode is a suite's
own (:class:`vitrine.pipeline.Mode`). Kept apart from the suite declarations, and free of
dataclasses, because ``vitrine --help`` builds these flags.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import NamedTuple

__all__ = ["CONTROLS_ONLY", "NO_MODE", "PROTOCOL_MODES", "SELF_TEST", "canonical_modes"]

SELF_TEST = "self-test"
CONTROLS_ONLY = "controls-only"
# request.mode when the operator chose no mode: the ordinary evaluation.
NO_MODE = "suite"


class ProtocolMode(NamedTuple):
    help: str
    live_refusal: str  # why a live or safety plan does not accept the flag


PROTOCOL_MODES: Mapping[str, ProtocolMode] = MappingProxyType(
    {
        SELF_TEST: ProtocolMode(
            "run the suite's self-test mode (suites that declare it)",
            "the self-test proves the deterministic offline checks, not live models",
        ),
        CONTROLS_ONLY: ProtocolMode(
            "run only the suite's registered controls (suites that declare it)",
            "the registered controls perturb the offline evaluators, not live models",
        ),
    }
)


def canonical_modes(declared: Iterable[str]) -> tuple[str, ...]:
    """Every mode flag in the order the command line lists (and refusals name) them: the
    self-test first, the suite's own modes as declared, the controls last."""
    own = [name for name in declared if name not in PROTOCOL_MODES]
    return (SELF_TEST, *own, CONTROLS_ONLY)
