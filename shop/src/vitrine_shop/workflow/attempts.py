"""The attempts of one model-stage visit, and the degradation policy that closes them.

A usable reply ends the visit; an unusable one or a retryable provider error is tried again,
up to the attempt limit; then the stage's code path answers (see :mod:`vitrine_shop.workflow`
for the policy). Every attempt of every stage runs through :func:`attempt_stage`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vitrine import tracing
from vitrine.providers import ChatModel, ProviderError, ProviderFailure
from vitrine.redact import sanitize_text
from vitrine.subjects import AttemptOutcome, StageAttemptCensus
from vitrine.tracing import STAGE_OUTCOME
from vitrine_shop.workflow.graph import StageVisit, WorkflowRecord
from vitrine_shop.workflow.stages import (
    StageOutputError,
    parse_stage_output,
    stage_code_path,
    stage_request,
)

__all__ = ["StageCheck", "attempt_stage"]

StageCheck = Callable[[dict[str, Any]], str | None]


async def attempt_stage(
    model: ChatModel,
    record: WorkflowRecord,
    stage: str,
    payload: dict[str, Any],
    *,
    max_attempts: int,
    retry_backoff_s: float = 0.0,
    canary: str | None = None,
    check: StageCheck | None = None,
) -> dict[str, Any]:
    """One visit of a model stage: up to ``max_attempts`` attempts at a usable reply, recorded
    as one census in ``record``; the code path's output when none was usable."""
    visit = int(payload["visit"])
    request = stage_request(stage, payload, canary=canary)
    outcomes: list[AttemptOutcome] = []
    problems: list[str] = []

    def close(*, code_path: bool, fell_back: bool) -> None:
        census = StageAttemptCensus.from_attempts(stage, outcomes, fell_back=fell_back)
        record.visits.append(StageVisit(stage, visit, census, code_path, tuple(problems)))

    for attempt in range(1, max_attempts + 1):
        with tracing.stage_attempt(stage, visit=visit, attempt=attempt) as span:
            try:
                completion = await tracing.complete(model, request)
            except asyncio.CancelledError:
                outcomes.append(AttemptOutcome.CANCELLED)
                span.set(STAGE_OUTCOME, AttemptOutcome.CANCELLED.value)
                close(code_path=False, fell_back=False)
                raise
            except ProviderError as exc:
                if exc.failure is ProviderFailure.CANCELLED:
                    outcomes.append(AttemptOutcome.CANCELLED)
                    span.set(STAGE_OUTCOME, AttemptOutcome.CANCELLED.value)
                    problems.append(f"provider failure: {exc.failure.value}")
                    close(code_path=False, fell_back=False)
                    raise
                outcomes.append(AttemptOutcome.PROVIDER_FAILURE)
                span.set(STAGE_OUTCOME, AttemptOutcome.PROVIDER_FAILURE.value)
                problems.append(f"provider failure: {exc.failure.value}")
                if not exc.retryable:
                    break
                if retry_backoff_s:
                    await asyncio.sleep(retry_backoff_s)
                continue
            record.add_usage(completion.usage)
            try:
                output = _usable(stage, completion.content, completion.tool_calls, payload, check)
            except StageOutputError as exc:
                outcomes.append(AttemptOutcome.UNUSABLE)
                span.set(STAGE_OUTCOME, AttemptOutcome.UNUSABLE.value)
                problems.append(sanitize_text(str(exc)))
                continue
            outcomes.append(AttemptOutcome.USABLE)
            span.set(STAGE_OUTCOME, AttemptOutcome.USABLE.value)
            close(code_path=False, fell_back=False)
            return output
    # No usable reply. A run of attempts that ended on the provider is unrecovered; one
    # that ended on an unusable reply is a content fallback. The customer gets the code
    # path's output in both cases (see :mod:`vitrine_shop.workflow`).
    close(code_path=True, fell_back=outcomes[-1] is AttemptOutcome.UNUSABLE)
    return stage_code_path(stage, payload)


def _usable(
    stage: str,
    content: str | None,
    tool_calls: Sequence[object],
    payload: Mapping[str, Any],
    check: StageCheck | None,
) -> dict[str, Any]:
    if tool_calls:
        raise StageOutputError(f"{stage}: asked for a tool call; workflow stages offer none")
    output = parse_stage_output(stage, content, payload)
    problem = check(output) if check else None
    if problem:
        raise StageOutputError(f"{stage}: {problem}")
    return output
