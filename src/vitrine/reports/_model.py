"""The suite report: one versioned document that the console, JSON and HTML views all render.

It is built from the stored runs after they are sealed, never from in-memory state alone, so
what a person reads is what an auditor can recompute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from vitrine._gates import GateResult
    from vitrine.controls._runner import ControlResult

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "AnswerSample",
    "BenchmarkSection",
    "CheckFacts",
    "ComparisonFacts",
    "ControlRow",
    "ControlsSection",
    "FloorFacts",
    "GateRow",
    "RunRef",
    "SuiteReport",
    "TimelineEntry",
]

REPORT_SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GateRow(_Model):
    """One decided gate as a report shows it: its status, its evidence, its exit class."""

    name: str
    authority: Literal["gate", "diagnostic"]
    status: str  # PASS | FAIL | NOT MEASURED | N/A
    state: str
    value: float | None
    label: str = ""
    reason: str | None = None
    exit_code: int | None  # None for a diagnostic: it has no exit authority
    evidence: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, gate: GateResult) -> GateRow:
        """The report row of a decided gate."""
        obs = gate.observation
        return cls(
            name=gate.name,
            authority=gate.authority.value,
            status=gate.status,
            state=obs.state.value,
            value=obs.value,
            label=obs.label,
            reason=obs.reason,
            exit_code=None if gate.exit_code is None else int(gate.exit_code),
            evidence=dict(obs.evidence),
        )


class RunRef(_Model):
    run_id: str
    arm_id: str
    repetition: int
    run_dir: str  # relative to the store root
    verdict: str
    census: dict[str, int]


class FloorFacts(_Model):
    kind: str
    value: float | None
    reason: str | None
    display: str  # "NOT DERIVABLE" for a not-derivable floor, never a fabricated 0.5


class CheckFacts(_Model):
    arm_id: str
    check_key: str
    authority: str
    census: dict[str, int]
    census_text: str
    successes: int
    measured: int
    mean_value: float | None
    wilson_lower: float | None
    wilson_upper: float | None
    floor: FloorFacts
    floor_p: float | None
    min_attainable_p: float | None
    underpowered: bool


class EffectFacts(_Model):
    """How big a paired difference is: challenger minus reference pass rate, with its interval."""

    estimate: float
    lower: float
    upper: float
    confidence: float
    interval: str = "Newcombe hybrid score (method 10)"


class ComparisonFacts(_Model):
    check_key: str
    reference_arm: str
    challenger_arm: str
    collapse: str
    cases: int
    total_repetitions: int
    mean_repetitions_per_case: float | None
    wins: int
    losses: int
    ties: int
    excluded: int
    effective_n: int
    p_value: float
    min_attainable_p: float
    mean_delta: float | None
    underpowered_by_construction: bool
    undecidable: bool
    # Adjusted over every comparison of the benchmark shown together: Holm keeps the
    # family-wise error rate, Benjamini-Hochberg the false discovery rate.
    holm_p: float | None = None
    bh_p: float | None = None
    effect: EffectFacts | None = None


class BenchmarkSection(_Model):
    """One benchmark of the suite as the report shows it: identity, arms, runs and comparisons."""

    identity: str
    content_hash: str
    role: str  # what this benchmark is for in the suite
    reference_arm: str | None
    arms: list[str]
    repetitions: int
    cases: list[str]
    runs: list[RunRef]
    checks: list[CheckFacts]
    comparisons: list[ComparisonFacts]


class ControlRow(_Model):
    """One registered control as the report shows it: healthy, perturbed and restored outcomes."""

    id: str
    scope: str
    target: str
    name: str
    category: str
    tranche: str
    healthy: str
    broken: str
    restored: str
    caught: bool
    detail: str = ""


class ControlsSection(_Model):
    """The registered controls: how many ran, how many were caught, one row each."""

    heading: str = "Registered control mutations"
    total: int
    caught: int
    rows: list[ControlRow]
    note: str = (
        "Each control proves that one check can turn red under one isolated perturbation and "
        "green again when restored; it does not estimate how often such defects occur."
    )

    @classmethod
    def of(cls, results: Sequence[ControlResult]) -> ControlsSection:
        """The report section of the controls that ran, one row each, in the order they ran."""
        return cls(
            total=len(results),
            caught=sum(1 for r in results if r.caught),
            rows=[
                ControlRow(
                    id=r.spec.id,
                    scope=r.spec.scope.value,
                    target=r.spec.target,
                    name=r.spec.name,
                    category=r.spec.category,
                    tranche=r.spec.tranche,
                    healthy=r.healthy.state.value,
                    broken=r.broken.state.value,
                    restored=r.restored.state.value,
                    caught=r.caught,
                    detail=r.detail,
                )
                for r in results
            ],
        )


class AnswerSample(_Model):
    """What a subject actually said, bounded: a reader should see the answer, not only scores."""

    benchmark: str
    arm_id: str
    case_id: str
    repetition: int
    answer_preview: str | None  # None: no answer object at all; "" an empty answer
    tool_calls: int | None  # None: the subject keeps no tool journal


class TimelineEntry(_Model):
    node: str
    kind: str
    status: str  # COMPLETED | FAILED | SKIPPED
    started_s: float
    duration_s: float
    detail: str = ""


class SuiteReport(_Model):
    """The versioned report document that the console, JSON and HTML views all render."""

    schema_version: int = REPORT_SCHEMA_VERSION
    suite: str
    plan: str
    mode: str
    provenance: str
    started_at: str
    duration_s: float
    exit_code: int
    exit_meaning: str
    exit_reason: str
    gates: list[GateRow]
    benchmarks: list[BenchmarkSection]
    controls: ControlsSection | None = None
    samples: list[AnswerSample] = Field(default_factory=list)
    timeline: list[TimelineEntry] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    store_root: str = "."
    artifacts: dict[str, str] = Field(default_factory=dict)
