"""What a subject hands back from one trial, and the facts checks read from it.

Each optional field keeps ``None`` distinct from empty: a tool journal of ``None`` means the
subject keeps no journal, ``()`` means it keeps one and called nothing. Checks rely on that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from vitrine._redact import bound_text
from vitrine.errors import ImpossibleCensusError

__all__ = [
    "AttemptOutcome",
    "ImpossibleCensusError",
    "ModelCallRecord",
    "StageAttemptCensus",
    "StageStatus",
    "SubjectResponse",
    "TokenUsage",
    "ToolCallRecord",
    "ToolCallStatus",
    "WorkflowTrace",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class ToolCallStatus(StrEnum):
    """How one tool call ended: it ran (``ok``), it raised (``error``), or it said no."""

    OK = "ok"
    ERROR = "error"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One journal entry: a tool call as the subject made it, with a bounded result summary."""

    name: str
    arguments: Mapping[str, Any]
    status: ToolCallStatus
    result_summary: str = ""
    duration_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "arguments": dict(self.arguments),
            "status": self.status.value,
            "result_summary": self.result_summary,
            "duration_ms": round(self.duration_ms, 3),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCallRecord:
        return cls(
            str(data["name"]),
            MappingProxyType(dict(data.get("arguments") or {})),
            ToolCallStatus(data.get("status", "ok")),
            str(data.get("result_summary") or ""),
            float(data.get("duration_ms") or 0.0),
        )


@dataclass(frozen=True, slots=True)
class WorkflowTrace:
    """The executors a workflow visited, in order, and the edges it took between them."""

    executors: tuple[str, ...]
    route: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"executors": list(self.executors), "route": list(self.route)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkflowTrace:
        return cls(tuple(data.get("executors") or ()), tuple(data.get("route") or ()))


@dataclass(frozen=True, slots=True)
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # only when the provider reports it; never estimated

    def __add__(self, other: TokenUsage) -> TokenUsage:
        cost = None
        if self.cost_usd is not None or other.cost_usd is not None:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return TokenUsage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens, cost
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
        }


@dataclass(frozen=True, slots=True)
class ModelCallRecord:
    """One call the subject made to a model, as an adapter saw it go out and come back.

    ``sdk_retries`` are the tries the client made on its own before this answer (the OpenAI
    SDK's ``max_retries``), so faults absorbed inside the client still show in the census.
    ``cached`` says the answer came from vitrine's model-call cache, not from the model.
    ``error`` is the sanitized reason of a call that got no usable answer.
    """

    model: str
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float = 0.0
    finish_reason: str | None = None
    sdk_retries: int = 0
    cached: bool = False
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "provider": self.provider,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "latency_ms": round(self.latency_ms, 3),
            "finish_reason": self.finish_reason,
            "sdk_retries": self.sdk_retries,
            "cached": self.cached,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelCallRecord:
        def count(key: str) -> int | None:
            value = data.get(key)
            return None if value is None else int(value)

        return cls(
            str(data["model"]),
            None if data.get("provider") is None else str(data["provider"]),
            count("input_tokens"),
            count("output_tokens"),
            float(data.get("latency_ms") or 0.0),
            None if data.get("finish_reason") is None else str(data["finish_reason"]),
            int(data.get("sdk_retries") or 0),
            bool(data.get("cached", False)),
            None if data.get("error") is None else str(data["error"]),
        )


class AttemptOutcome(StrEnum):
    """How one logical attempt of a model stage ended."""

    USABLE = "usable"
    UNUSABLE = "unusable"
    PROVIDER_FAILURE = "provider_failure"
    CANCELLED = "cancelled"


class StageStatus(StrEnum):
    """How one workflow stage ended, judged over all of its attempts."""

    MEASURED = "measured"  # first attempt usable
    RECOVERED = "recovered"  # an earlier attempt failed, a later one was usable
    FINAL_FALLBACK = "final_fallback"  # no usable response; the stage's code path answered
    UNRECOVERED = "unrecovered"  # the provider kept failing; nothing usable, no fallback
    CANCELLED = "cancelled"

    @property
    def keeps_quality_measurable(self) -> bool:
        return self in (StageStatus.MEASURED, StageStatus.RECOVERED)


@dataclass(frozen=True, slots=True)
class StageAttemptCensus:
    """The logical-attempt census of one workflow model stage.

    Built from the ordered attempt outcomes with :meth:`from_attempts`, which cannot produce an
    impossible census; :meth:`validate` rejects one read from elsewhere (a file, a provider).
    """

    stage: str
    attempts: int
    responses: int
    unusable: int
    provider_failures: int
    cancellations: int
    status: StageStatus
    last_usable: int | None
    last_unusable: int | None

    def __post_init__(self) -> None:
        self.validate()

    @classmethod
    def from_attempts(
        cls, stage: str, outcomes: Sequence[AttemptOutcome], *, fell_back: bool = False
    ) -> StageAttemptCensus:
        for ordinal, outcome in enumerate(outcomes[:-1], start=1):
            if outcome in (AttemptOutcome.USABLE, AttemptOutcome.CANCELLED):
                raise ImpossibleCensusError(
                    f"stage {stage!r}: attempt {ordinal} was {outcome.value}, yet attempts "
                    "followed it: a stage stops at its first usable response or cancellation"
                )
        last_usable = last_unusable = None
        for ordinal, outcome in enumerate(outcomes, start=1):
            if outcome is AttemptOutcome.USABLE:
                last_usable = ordinal
            elif outcome is AttemptOutcome.UNUSABLE:
                last_unusable = ordinal
        usable = sum(o is AttemptOutcome.USABLE for o in outcomes)
        unusable = sum(o is AttemptOutcome.UNUSABLE for o in outcomes)
        failures = sum(o is AttemptOutcome.PROVIDER_FAILURE for o in outcomes)
        cancels = sum(o is AttemptOutcome.CANCELLED for o in outcomes)
        if outcomes and outcomes[-1] is AttemptOutcome.CANCELLED:
            status = StageStatus.CANCELLED
        elif usable and outcomes[-1] is AttemptOutcome.USABLE:
            status = StageStatus.MEASURED if len(outcomes) == 1 else StageStatus.RECOVERED
        elif fell_back:
            status = StageStatus.FINAL_FALLBACK
        else:
            status = StageStatus.UNRECOVERED
        return cls(
            stage,
            len(outcomes),
            usable + unusable,
            unusable,
            failures,
            cancels,
            status,
            last_usable,
            last_unusable,
        )

    def validate(self) -> None:
        def bad(why: str) -> ImpossibleCensusError:
            return ImpossibleCensusError(f"stage {self.stage!r}: impossible attempt census: {why}")

        if not self.stage:
            raise bad("the stage has no name")
        if not isinstance(self.status, StageStatus):
            raise bad(f"unknown status {self.status!r}")
        counts = (
            self.attempts,
            self.responses,
            self.unusable,
            self.provider_failures,
            self.cancellations,
        )
        if any(c < 0 for c in counts):
            raise bad("negative count")
        if self.attempts < 1:
            raise bad("a model stage records at least one attempt")
        if self.responses + self.provider_failures + self.cancellations != self.attempts:
            raise bad(
                f"responses {self.responses} + provider failures {self.provider_failures} + "
                f"cancellations {self.cancellations} != attempts {self.attempts}"
            )
        if self.unusable > self.responses:
            raise bad(f"unusable {self.unusable} exceeds responses {self.responses}")
        usable = self.responses - self.unusable
        for name, ordinal, count in (
            ("last usable", self.last_usable, usable),
            ("last unusable", self.last_unusable, self.unusable),
        ):
            if (ordinal is None) != (count == 0):
                raise bad(f"{name} ordinal {ordinal} disagrees with a count of {count}")
            if ordinal is not None and not 1 <= ordinal <= self.attempts:
                raise bad(f"{name} ordinal {ordinal} outside attempts 1..{self.attempts}")
        if self.last_usable is not None and self.last_usable == self.last_unusable:
            raise bad("one attempt cannot be both usable and unusable")
        if usable > 1 or (usable == 1 and self.last_usable != self.attempts):
            raise bad("a stage stops at its first usable response, so only the last can be usable")
        status = self.status
        if status is StageStatus.MEASURED and (self.attempts != 1 or usable != 1):
            raise bad("measured means a single, usable attempt")
        if status is StageStatus.RECOVERED and (
            self.last_usable != self.attempts or self.attempts < 2
        ):
            raise bad("recovered means a failed attempt followed by a final usable one")
        if status in (StageStatus.FINAL_FALLBACK, StageStatus.UNRECOVERED) and usable:
            raise bad(f"{status.value} with a usable response")
        if status is StageStatus.FINAL_FALLBACK and self.unusable + self.provider_failures == 0:
            raise bad("a fallback needs failed attempts before it")
        if status is StageStatus.CANCELLED and self.cancellations == 0:
            raise bad("cancelled without a cancellation")

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "attempts": self.attempts,
            "responses": self.responses,
            "unusable": self.unusable,
            "provider_failures": self.provider_failures,
            "cancellations": self.cancellations,
            "status": self.status.value,
            "last_usable": self.last_usable,
            "last_unusable": self.last_unusable,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StageAttemptCensus:
        try:
            status = StageStatus(data["status"])
        except (KeyError, ValueError) as exc:
            raise ImpossibleCensusError(
                f"stage {data.get('stage')!r}: unknown status {data.get('status')!r}"
            ) from exc
        return cls(
            str(data.get("stage") or ""),
            int(data["attempts"]),
            int(data["responses"]),
            int(data["unusable"]),
            int(data["provider_failures"]),
            int(data["cancellations"]),
            status,
            data.get("last_usable"),
            data.get("last_unusable"),
        )


def validate_stage_set(
    censuses: Iterable[StageAttemptCensus], required: Iterable[str]
) -> tuple[StageAttemptCensus, ...]:
    """Reject duplicate stage ownership and missing required model stages."""
    seen: dict[str, StageAttemptCensus] = {}
    for census in censuses:
        if census.stage in seen:
            raise ImpossibleCensusError(f"stage {census.stage!r} reported twice")
        seen[census.stage] = census
    missing = [name for name in required if name not in seen]
    if missing:
        raise ImpossibleCensusError(f"missing required model stages: {', '.join(missing)}")
    return tuple(seen.values())


@dataclass(frozen=True, slots=True)
class SubjectResponse:
    """One trial's output from a subject.

    ``answer`` is None when the subject produced no answer at all (absent), and ``""`` when it
    produced an empty one (a measured failure for most checks).
    """

    answer: str | None
    tool_calls: tuple[ToolCallRecord, ...] | None = None
    trace: WorkflowTrace | None = None
    usage: TokenUsage | None = None
    stages: tuple[StageAttemptCensus, ...] | None = None
    structured: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    provenance: str = "offline-deterministic"
    model_calls: tuple[ModelCallRecord, ...] | None = None

    def tool_names(self) -> tuple[str, ...] | None:
        if self.tool_calls is None:
            return None
        return tuple(call.name for call in self.tool_calls)

    def to_dict(self, preview_limit: int = 1000) -> dict[str, Any]:
        """A bounded, persistable account of the response."""

        data: dict[str, Any] = {
            "answer_preview": None
            if self.answer is None
            else bound_text(self.answer, preview_limit),
            "answer_chars": None if self.answer is None else len(self.answer),
            "tool_calls": None
            if self.tool_calls is None
            else [call.to_dict() for call in self.tool_calls],
            "trace": None if self.trace is None else self.trace.to_dict(),
            "usage": None if self.usage is None else self.usage.to_dict(),
            "stages": None if self.stages is None else [s.to_dict() for s in self.stages],
            "structured": dict(self.structured),
            "provenance": self.provenance,
        }
        # Only a subject an adapter watched has model calls; the rest keep their old shape.
        if self.model_calls is not None:
            data["model_calls"] = [call.to_dict() for call in self.model_calls]
        return data
