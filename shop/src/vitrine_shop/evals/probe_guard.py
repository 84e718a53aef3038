"""A probe of the invariants gate that raised: the shop's measured failure, or the suite's own.

The probes (tool sweep, contract, delivery, data variants, isolation, provider faults, the
latest turn) drive the real shop with inputs it must handle. When the shop's own code raises on
one of them, the probe's instrument worked and found a defect: it is a measured violation (rule
``raised``), as a trial that crashed is for the gate's arms, and it stays with the invariants
gate instead of taking every other gate's evidence down with it. When the exception was raised
in the suite's own code (``vitrine_shop.evals``, or the scripted models in
``vitrine_shop.scripted`` that stand in for a provider), the evaluator failed, not the shop: it
propagates, and the gate is not measured.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import vitrine_shop

__all__ = ["guarded", "raised_by_suite"]

_PACKAGE = Path(vitrine_shop.__file__).resolve().parent
_SUITE = (_PACKAGE / "evals", _PACKAGE / "scripted")


def raised_by_suite(exc: BaseException) -> bool:
    """Whether the frame that raised ``exc`` is the suite's own code (or unknown)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return True
    origin = Path(frames[-1].filename).resolve()
    return any(origin.is_relative_to(part) for part in _SUITE)


async def guarded(what: str, probe: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """The probe's facts, or one ``raised`` violation when the shop raised inside it."""
    try:
        return await probe
    except Exception as exc:
        if raised_by_suite(exc):
            raise
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        detail = (
            f"the shop raised {type(exc).__name__}: {exc} "
            f"(in {Path(frame.filename).name}:{frame.lineno})"
        )
        return {
            "calls": 1,
            "violations": 1,
            "rules": {"raised": 1},
            "examples": [{"case": what, "detail": detail, "rule": "raised"}],
        }
