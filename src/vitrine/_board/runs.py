"""What a run page and the inspector show, read from the run itself, never from the index.

A benchmark run is loaded with :func:`vitrine.store.load_run`, which verifies its seal, and
scored with :class:`vitrine._bench.score.CheckScore` (census, Wilson interval, floor test), the
same code every report uses; the board computes no statistic of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from vitrine._bench.results import RunResult
from vitrine._bench.score import CheckScore, FloorComparisonError, RepCollapse
from vitrine._outcomes import MeasurementState, Observation
from vitrine.errors import BoardError
from vitrine.reports._charts import IntervalRow, interval_chart
from vitrine.store._errors import RunStoreError
from vitrine.store._files import read_json
from vitrine.store._reader import load_run

__all__ = [
    "BoardError",
    "CheckView",
    "Gap",
    "ToolTurn",
    "TrialView",
    "check_views",
    "checks_chart",
    "load_benchmark_run",
    "read_document",
    "trial_view",
]


def read_document(root: Path, location: str) -> dict[str, Any]:
    """Read one JSON artifact under the store root, refusing anything outside it."""
    path = (root / location).resolve()
    if not path.is_relative_to(root.resolve()):
        raise BoardError("that artifact lies outside the store", 400)
    try:
        return read_json(path)
    except FileNotFoundError:
        raise BoardError(f"{location} is no longer in the store") from None
    except (OSError, ValueError) as exc:
        raise BoardError(f"{location} cannot be read as JSON ({type(exc).__name__})", 500) from exc


def load_benchmark_run(root: Path, location: str) -> RunResult:
    """Load a sealed run; a tampered or unsealed run is refused with the store's own sentence."""

    run_dir = (root / location).resolve()
    if not run_dir.is_relative_to(root.resolve()):
        raise BoardError("that run lies outside the store", 400)
    try:
        return load_run(run_dir)
    except RunStoreError as exc:
        raise BoardError(str(exc), 409) from exc
    except OSError as exc:
        raise BoardError(f"run {run_dir.name} cannot be read ({type(exc).__name__})", 500) from exc


@dataclass(frozen=True, slots=True)
class Gap:
    """A cell that was not measured or did not apply, and the reason recorded with it."""

    case_id: str
    state: str
    reason: str


@dataclass(frozen=True, slots=True)
class CheckView:
    key: str
    authority: str
    measured: int
    not_applicable: int
    not_measured: int
    successes: int
    mean_value: float | None
    wilson: tuple[float, float] | None
    floor_display: str
    floor_value: float | None
    floor_reason: str | None
    floor_p: float | None
    min_p: float | None
    underpowered: bool | None
    floor_refusal: str | None
    gaps: tuple[Gap, ...]


def check_views(run: RunResult) -> list[CheckView]:
    """One row per check of a single run, each scored by :class:`CheckScore`."""
    views = []
    for info in run.checks:
        score = CheckScore.of([run], info.key, RepCollapse.MEAN)
        refusal: str | None = None
        floor_p = min_p = None
        underpowered: bool | None = None
        try:
            floor = score.floor_comparison
            floor_p, min_p, underpowered = floor.p_value, floor.min_attainable_p, floor.underpowered
        except FloorComparisonError as exc:
            refusal = str(exc)
        views.append(
            CheckView(
                key=info.key,
                authority=info.authority,
                measured=score.census.measured,
                not_applicable=score.census.not_applicable,
                not_measured=score.census.not_measured,
                successes=score.successes,
                mean_value=score.mean_value,
                wilson=None
                if score.interval is None
                else (score.interval.lower, score.interval.upper),
                floor_display=info.floor.describe(),
                floor_value=info.floor.rate,  # None for a not-derivable floor
                floor_reason=info.floor.reason,
                floor_p=floor_p,
                min_p=min_p,
                underpowered=underpowered,
                floor_refusal=refusal,
                gaps=tuple(
                    Gap(case_id, obs.state.value, obs.reason or "")
                    for case_id, obs in score.cells.items()
                    if obs.state is not MeasurementState.MEASURED
                ),
            )
        )
    return views


def checks_chart(checks: Sequence[CheckView]) -> Markup:
    """The run's pass rates with their Wilson intervals and floors, as one interval plot."""
    return interval_chart(
        [
            IntervalRow(
                label=c.key,
                estimate=c.successes / c.measured if c.measured else None,
                lower=None if c.wilson is None else c.wilson[0],
                upper=None if c.wilson is None else c.wilson[1],
                marker=c.floor_value,
                note=f"{c.successes}/{c.measured}" if c.measured else "",
            )
            for c in checks
        ],
        "Pass rate per check with its Wilson 95% interval; a dashed tick is the chance floor.",
    )


@dataclass(frozen=True, slots=True)
class ObservationView:
    check_key: str
    state: str
    value: float | None
    passed: bool | None
    reason: str | None
    label: str
    evidence: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolTurn:
    """One tool call of the journal, with the result the subject recorded for it, if any."""

    name: str
    status: str
    arguments: Mapping[str, Any]
    summary: str
    duration_ms: float | None
    result: Any  # the tool's data, where the subject kept it (``structured.tool_outputs``)
    has_result: bool


@dataclass(frozen=True, slots=True)
class TrialView:
    """One trial: what the subject answered and did, and what every check observed."""

    case_id: str
    error: str | None
    answer: str | None
    answer_chars: int | None
    tool_calls: list[Mapping[str, Any]] | None
    route: list[str] | None
    executors: list[str] | None
    stages: list[Mapping[str, Any]] | None
    usage: Mapping[str, Any] | None
    provenance: str
    observations: list[ObservationView]
    customer_input: str | None = None
    model_calls: list[Mapping[str, Any]] | None = None
    structured: Mapping[str, Any] | None = None

    @property
    def answer_head(self) -> str:
        """The part of the answer shown unfolded: all of it, or its first lines when long."""
        return _fold(self.answer or "")[0]

    @property
    def answer_tail(self) -> str:
        """The rest of a long answer, folded under the first lines (empty when short)."""
        return _fold(self.answer or "")[1]

    @property
    def answer_bounded(self) -> bool:
        """Whether the store kept only a bounded preview of a longer answer."""
        return bool(self.answer_chars and self.answer and self.answer_chars > len(self.answer))

    @property
    def tool_turns(self) -> list[ToolTurn]:
        """The tool journal as turns, each paired with its recorded result."""
        outputs = (self.structured or {}).get("tool_outputs")
        outputs = outputs if isinstance(outputs, list) else []
        turns = []
        for i, call in enumerate(self.tool_calls or ()):
            output = outputs[i] if i < len(outputs) and isinstance(outputs[i], Mapping) else None
            # Only an output of the same tool at the same place is this call's result.
            paired = output is not None and output.get("name") == call.get("name")
            arguments = call.get("arguments")
            duration = call.get("duration_ms")
            turns.append(
                ToolTurn(
                    name=str(call.get("name") or "?"),
                    status=str(call.get("status") or "?"),
                    arguments=arguments if isinstance(arguments, Mapping) else {},
                    summary=str(call.get("result_summary") or ""),
                    duration_ms=float(duration) if isinstance(duration, int | float) else None,
                    result=output.get("data") if paired and output is not None else None,
                    has_result=paired and output is not None and "data" in output,
                )
            )
        return turns


_FOLD_AT = 600  # characters shown before a long answer folds


def _fold(text: str) -> tuple[str, str]:
    if len(text) <= _FOLD_AT + 200:  # folding away a few lines only hides them
        return text, ""
    cut = text.rfind("\n", 0, _FOLD_AT)
    cut = cut if cut > _FOLD_AT // 2 else _FOLD_AT
    return text[:cut], text[cut:]


# Where a subject may keep the customer's words in its structured output (runs written before
# the store kept each case's input beside its response).
_INPUT_FIELDS = ("query", "input", "user_message", "message", "question")


def _observation_view(check_key: str, obs: Observation) -> ObservationView:
    return ObservationView(
        check_key, obs.state.value, obs.value, obs.passed, obs.reason, obs.label, obs.evidence
    )


def trial_view(run: RunResult, case_id: str) -> TrialView:
    if case_id not in run.case_ids:
        raise BoardError(f"run {run.run_id} has no case {case_id!r}")
    response = run.responses.get(case_id) or {}
    trace = response.get("trace") if isinstance(response.get("trace"), dict) else None
    structured = response.get("structured")
    structured = structured if isinstance(structured, dict) else {}
    stored = response.get("case_input")
    customer = (
        stored
        if isinstance(stored, str) and stored.strip()
        else next(
            (v for k in _INPUT_FIELDS if isinstance(v := structured.get(k), str) and v.strip()),
            None,
        )
    )
    model_calls = response.get("model_calls")
    return TrialView(
        case_id=case_id,
        error=run.subject_errors.get(case_id),
        answer=response.get("answer_preview"),
        answer_chars=response.get("answer_chars"),
        tool_calls=response.get("tool_calls"),
        route=None if trace is None else list(trace.get("route") or ()),
        executors=None if trace is None else list(trace.get("executors") or ()),
        stages=response.get("stages"),
        usage=response.get("usage"),
        provenance=str(response.get("provenance") or ""),
        observations=[
            _observation_view(row.check_key, row.observation)
            for row in run.rows
            if row.case_id == case_id
        ],
        customer_input=customer,
        model_calls=model_calls if isinstance(model_calls, list) else None,
        structured=structured,
    )
