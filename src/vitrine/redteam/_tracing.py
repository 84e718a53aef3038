"""A red-team probe as a span, its outcome and its assertions as evaluations.

Every probe of ``vitrine redteam run`` and ``adaptive`` is one ``probe {id}`` span, with the
target's (and the attacker's and judge's) model calls inside. Its outcome is the evaluation
``resisted`` (1.0 resisted, 0.0 compromised, no score when inconclusive); a static case's
assertions are evaluations named by their type. With tracing off each helper is a no-op.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from vitrine import tracing
from vitrine.redteam._model import Outcome
from vitrine.tracing import _semconv as sc
from vitrine.tracing._observations import record_outcome

if TYPE_CHECKING:
    from vitrine.redteam._campaign import PlannedProbe
    from vitrine.redteam._cases import AssertionResult
    from vitrine.redteam._model import ProbeResult

__all__ = ["OUTCOME", "probe_span", "record_assertions", "record_probe"]

OUTCOME = "resisted"


def probe_span(planned: PlannedProbe) -> AbstractContextManager[tracing.Span]:
    """The span of one probe, with its OWASP class, technique and severity."""
    return tracing.item_span(
        "probe",
        planned.probe.id,
        {
            sc.REDTEAM_OWASP: planned.owasp,
            sc.REDTEAM_TECHNIQUE: planned.technique,
            sc.REDTEAM_SEVERITY: planned.severity.value,
        },
    )


def record_probe(span: tracing.Span, result: ProbeResult) -> None:
    """The probe's outcome on ``span``; a compromised probe gives it an error status."""
    span.set(sc.REDTEAM_OUTCOME, result.outcome.value)
    why = result.diagnostic or ("" if result.error is None else result.error.code)
    record_outcome(OUTCOME, result.outcome.value, why)
    if result.outcome is Outcome.COMPROMISED:
        span.fail(f"compromised: {why}")


def record_assertions(assertions: Sequence[AssertionResult]) -> None:
    """Each assertion of a case as an evaluation named by its type (``not-contains``; a type
    repeated in the case is numbered: ``not-contains #2``)."""
    seen: Counter[str] = Counter()
    for assertion in assertions:
        seen[assertion.type] += 1
        count = seen[assertion.type]
        name = assertion.type if count == 1 else f"{assertion.type} #{count}"
        record_outcome(name, assertion.state, assertion.detail)
