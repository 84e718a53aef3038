"""A trial's check results as evaluation events, and its measurement state, on its span.

Each result is also forwarded to the scores APIs tracing is configured with: Langfuse scores,
Phoenix span annotations (:mod:`vitrine.tracing._phoenix`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from vitrine._outcomes import (
    MeasurementState,
    Observation,
    Status,
    Verdict,
    run_verdict,
    status_of_label,
)
from vitrine.tracing import _semconv as sc
from vitrine.tracing._spans import NULL_SPAN, Span, evaluation, installed_backend

__all__ = ["CheckRow", "describe_trial", "record_observation", "record_outcome"]


class CheckRow(Protocol):
    """One check's row of a trial (a :class:`vitrine.runs.ScenarioRow`)."""

    @property
    def check_key(self) -> str: ...

    @property
    def observation(self) -> Observation: ...


def describe_trial(span: Span, rows: Sequence[CheckRow], error: str | None) -> None:
    """Put every check result and the trial's measurement state and verdict on ``span``.

    The state is ``not_measured`` when any check could not be measured, else ``measured`` when
    any check was, else ``not_applicable``. A trial whose subject failed or whose verdict is
    ``fail`` gets an error status; one with checks not measured does not (absence is not
    failure).
    """
    if span is NULL_SPAN:
        return
    for row in rows:
        record_observation(row.check_key, row.observation)
    observations = [row.observation for row in rows]
    states = {o.state for o in observations}
    if MeasurementState.NOT_MEASURED in states:
        state = MeasurementState.NOT_MEASURED
    elif MeasurementState.MEASURED in states:
        state = MeasurementState.MEASURED
    else:
        state = MeasurementState.NOT_APPLICABLE
    verdict = run_verdict(observations)
    span.set(sc.MEASUREMENT_STATE, state.value)
    span.set(sc.VERDICT, verdict.value)
    if error is not None:
        span.set(sc.ERROR_TYPE, "subject_error")
        span.fail(error)
    elif verdict is Verdict.FAIL:
        failed = [row.check_key for row in rows if row.observation.failed]
        span.fail("failed checks: " + ", ".join(failed))


def record_observation(
    check_key: str, observation: Observation, *, value_as_score: bool = False
) -> None:
    """One check's observation as a ``gen_ai.evaluation.result`` event on the open span.

    A measured check scores 1.0 (passed) or 0.0 (failed) with the label ``pass`` or ``fail``;
    with ``value_as_score`` (a metric whose value is itself a score, such as a RAG metric in
    [0, 1]) it scores its raw value instead. A check that was not measured or did not apply has
    only its state as the label, never a score: absence is not failure. The state, pass flag
    and raw value go to the scores APIs as metadata.
    """
    metadata = {
        "state": observation.state.value,
        "passed": observation.passed,
        "value": observation.value,
    }
    if observation.state is MeasurementState.MEASURED:
        passed = bool(observation.passed)
        verdict = 1.0 if passed else 0.0
        evaluation(
            check_key,
            label="pass" if passed else "fail",
            score=observation.value if value_as_score else verdict,
            explanation=observation.reason or observation.label or None,
            metadata=metadata,
        )
    else:
        evaluation(
            check_key,
            label=observation.state.value,
            explanation=observation.reason,
            metadata=metadata,
        )


def record_outcome(
    name: str, outcome: str, detail: str = "", *, value: float | None = None
) -> None:
    """A result stored under one of vitrine's outcome labels (``passed``, ``failed``,
    ``skipped``, ``resisted``, ``compromised``, ``inconclusive``, ``excluded``, ...) as an
    evaluation, by :func:`record_observation`'s rule: only what the label says was measured
    carries a score, ``value`` when given, else 1.0 (passed) or 0.0 (failed); ``detail`` is
    the explanation.
    """
    if installed_backend() is None:
        return
    status = status_of_label(outcome)
    reason = detail or outcome
    observation: Observation
    if status.state is MeasurementState.MEASURED:
        passed = status is Status.PASS
        measured = float(passed) if value is None else value
        observation = Observation.measured(measured, passed, label=detail)
    elif status.state is MeasurementState.NOT_APPLICABLE:
        observation = Observation.not_applicable(reason)
    else:
        observation = Observation.not_measured(reason)
    record_observation(name, observation, value_as_score=value is not None)
