"""A live session's receipt as a page: trials by arm, case and repetition, and its statistics.

The receipt is a plan's sealed document: the board reads what it states and computes nothing
of its own. A trial's verdict is the receipt's (measured, passed); a comparison is drawn from
its recorded effect and interval; a whole-trial decision from its recorded Wilson bounds.
Fields a receipt lacks are shown as absent, never filled in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from vitrine.reports._charts import DifferenceRow, IntervalRow, difference_chart, interval_chart

__all__ = ["LiveTrial", "LiveView", "live_view", "trial_counts"]


@dataclass(frozen=True, slots=True)
class LiveTrial:
    arm: str
    scenario: str
    repetition: int | None
    verdict: str  # "passed", "failed" or "not measured"
    missing: tuple[str, ...]
    error: str | None
    answer: str | None
    href: str | None  # the trial's page, when its run is in this store


@dataclass(frozen=True, slots=True)
class LiveView:
    trials: list[LiveTrial]
    comparisons: list[Mapping[str, Any]]
    comparison_chart: Markup
    whole_trial: list[Mapping[str, Any]]
    whole_chart: Markup


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _trial(entry: Mapping[str, Any], href: Callable[[str, str], str | None]) -> LiveTrial:
    facts = _mapping(entry.get("trial"))
    measured, passed = facts.get("measured"), facts.get("passed")
    verdict = "not measured" if measured is not True else "passed" if passed else "failed"
    run_id, scenario = _text(entry.get("run_id")), str(entry.get("scenario") or "?")
    repetition = entry.get("repetition")
    missing = facts.get("missing_checks")
    return LiveTrial(
        arm=str(entry.get("arm") or "?"),
        scenario=scenario,
        repetition=repetition if isinstance(repetition, int) else None,
        verdict=verdict,
        missing=tuple(str(m) for m in missing) if isinstance(missing, list) else (),
        error=_text(entry.get("subject_error")),
        answer=_text(entry.get("answer_preview")),
        href=None if run_id is None else href(run_id, scenario),
    )


def _bounds(interval: Any) -> tuple[float | None, float | None]:
    if not isinstance(interval, Mapping):
        return None, None
    return _number(interval.get("lower")), _number(interval.get("upper"))


def _difference_row(c: Mapping[str, Any]) -> DifferenceRow:
    effect = _mapping(c.get("effect"))
    p = _number(c.get("p_value"))
    return DifferenceRow(
        f"{c.get('check')}: {c.get('challenger_arm')} vs {c.get('reference_arm')}",
        _number(effect.get("estimate")),
        *_bounds(effect),
        note="" if p is None else f"p {p:.3g}",
    )


def _decision_row(w: Mapping[str, Any]) -> IntervalRow:
    return IntervalRow(
        f"{w.get('arm')} · {w.get('scenario')}",
        _number(w.get("estimate")),
        *_bounds(w.get("wilson_95")),
        marker=_number(w.get("floor")),
        marker_label="the decision's bound",
        note=f"{w.get('successes')}/{w.get('measured')} → {w.get('decision')}",
    )


def live_view(doc: Mapping[str, Any], href: Callable[[str, str], str | None]) -> LiveView:
    """The page's rows and charts from a receipt; ``href(run_id, case)`` links a trial."""
    entries = [t for t in doc.get("trials") or () if isinstance(t, Mapping)]
    trials = sorted(
        (_trial(t, href) for t in entries),
        key=lambda t: (t.arm, t.scenario, t.repetition or 0),
    )
    comparisons = [c for c in doc.get("comparisons") or () if isinstance(c, Mapping)]
    whole = [w for w in doc.get("whole_trial") or () if isinstance(w, Mapping)]
    difference_rows = [_difference_row(c) for c in comparisons]
    interval_rows = [_decision_row(w) for w in whole]
    return LiveView(
        trials=trials,
        comparisons=comparisons,
        comparison_chart=difference_chart(
            difference_rows,
            "Challenger minus reference pass rate over the paired scenarios (Newcombe 95%).",
        ),
        whole_trial=whole,
        whole_chart=interval_chart(
            interval_rows,
            "Whole-trial success per arm and scenario with its Wilson 95% interval; the "
            "dashed tick is the bound its lower end must reach.",
        ),
    )


def trial_counts(trials: Sequence[LiveTrial]) -> dict[str, int]:
    """How many trials ended each way, for the heading."""
    counts: dict[str, int] = {}
    for trial in trials:
        counts[trial.verdict] = counts.get(trial.verdict, 0) + 1
    return counts
