"""Admission: a judge earns trust on labelled answers before its verdicts count.

A judge model that parses every time can still be noise: at 135M or 270M parameters it grades
a good answer and a deliberately bad one the same way. Nothing in a verdict shows that, so
before a session uses a judge, :func:`admit_judge` has it grade a small calibration set
(answers written independently of the subject, each labelled met / not met per criterion) and
compares. The agreement, its Wilson 95% interval and the bar are reported; a judge is admitted
only when its agreement reaches ``min_agreement`` *and* the interval's lower bound lies above
``chance`` (an always-yes, always-no or coin-flip judge lands near 0.5 on a balanced set).

A refused judge is replaced by :class:`RefusedJudge`, which answers every evaluation as failed
with the refusal as its reason and makes no call, so quality is *not measured*, never a pass or
a fail decided by noise. An evaluation the judge could not complete counts as a disagreement:
a judge that cannot judge is not admitted either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vitrine.judge.base import Criterion, Judge, JudgeResult
from vitrine.redact import sanitize_text
from vitrine.stats import wilson_interval

__all__ = [
    "AdmissionPolicy",
    "CalibrationExample",
    "JudgeAdmission",
    "RefusedJudge",
    "admit_judge",
]

_STRONGER_JUDGE = (
    "a judge that agrees with the labels at least {bar:.0%} of the time is needed: in practice "
    "an instruction-tuned model of several billion parameters (a 7B-class model on a local "
    "server, or a hosted model), chosen with --judge-provider and --judge-model"
)


@dataclass(frozen=True, slots=True)
class CalibrationExample:
    """One hand-written answer and, per criterion id, whether it meets that criterion."""

    case: str
    label: str  # what the answer was written to be, e.g. "meets-all"
    input: str
    answer: str
    criteria: tuple[Criterion, ...]
    labels: Mapping[str, bool]

    def __post_init__(self) -> None:
        ids = [c.id for c in self.criteria]
        if not ids or set(ids) != set(self.labels):
            raise ValueError(
                f"calibration example {self.case}/{self.label} must label exactly its criteria"
            )


@dataclass(frozen=True, slots=True)
class AdmissionPolicy:
    """The bar: point agreement at least ``min_agreement``, Wilson lower bound above ``chance``."""

    min_agreement: float = 0.80
    chance: float = 0.50

    def __post_init__(self) -> None:
        if not 0.0 < self.min_agreement <= 1.0 or not 0.0 <= self.chance < 1.0:
            raise ValueError("need 0 < min_agreement <= 1 and 0 <= chance < 1")


@dataclass(frozen=True, slots=True)
class JudgeAdmission:
    """The admission result, with every figure a reader needs to check it."""

    judge_id: str
    admitted: bool
    reason: str
    labels: int
    agreed: int
    unusable: int
    policy: AdmissionPolicy
    interval: tuple[float, float] | None
    examples: tuple[dict[str, Any], ...] = field(default=())

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.labels if self.labels else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge_id,
            "admitted": self.admitted,
            "reason": self.reason,
            "labels": self.labels,
            "agreed": self.agreed,
            "unusable_evaluations": self.unusable,
            "agreement": self.agreement,
            "wilson_95": None
            if self.interval is None
            else {"lower": self.interval[0], "upper": self.interval[1]},
            "bar": {"min_agreement": self.policy.min_agreement, "chance": self.policy.chance},
            "judge_calls": len(self.examples),
            "examples": list(self.examples),
        }


async def admit_judge(
    judge: Judge,
    examples: Sequence[CalibrationExample],
    policy: AdmissionPolicy | None = None,
) -> JudgeAdmission:
    """Grade ``examples`` with ``judge`` (one call each, in order) and decide admission."""
    policy = policy or AdmissionPolicy()
    if not examples:
        return JudgeAdmission(
            judge.judge_id,
            False,
            "no calibration examples for the selected cases: the judge cannot be checked, so "
            "its verdicts cannot count",
            0,
            0,
            0,
            policy,
            None,
        )
    labels = agreed = unusable = 0
    rows: list[dict[str, Any]] = []
    for example in examples:
        result = await judge.evaluate(example.input, example.answer, example.criteria)
        verdicts = {v.criterion: v.met for v in result.verdicts} if result.usable else {}
        matched = sum(1 for cid, met in example.labels.items() if verdicts.get(cid) is met)
        labels += len(example.labels)
        agreed += matched
        unusable += 0 if result.usable else 1
        rows.append(_row(example, result, matched))
    interval = wilson_interval(agreed, labels)
    bounds = None if interval is None else (interval.lower, interval.upper)
    admitted = (
        bounds is not None and agreed / labels >= policy.min_agreement and bounds[0] > policy.chance
    )
    return JudgeAdmission(
        judge.judge_id,
        admitted,
        _reason(admitted, agreed, labels, unusable, bounds, policy),
        labels,
        agreed,
        unusable,
        policy,
        bounds,
        tuple(rows),
    )


def _row(example: CalibrationExample, result: JudgeResult, matched: int) -> dict[str, Any]:
    return {
        "case": example.case,
        "label": example.label,
        "agreed": matched,
        "labels": len(example.labels),
        "usable": result.usable,
        "verdicts": {v.criterion: v.met for v in result.verdicts},
        "summary": sanitize_text(result.summary, 200) if not result.usable else None,
    }


def _reason(
    admitted: bool,
    agreed: int,
    labels: int,
    unusable: int,
    bounds: tuple[float, float] | None,
    policy: AdmissionPolicy,
) -> str:
    interval = "" if bounds is None else f", Wilson 95% [{bounds[0]:.2f}, {bounds[1]:.2f}]"
    figures = f"agreement {agreed}/{labels} = {agreed / labels:.2f}{interval}"
    if unusable:
        figures += f"; {unusable} calibration evaluation(s) gave no usable verdict"
    bar = (
        f"the bar is agreement >= {policy.min_agreement:.2f} with a lower bound above "
        f"{policy.chance:.2f}"
    )
    if admitted:
        return f"admitted: {figures}; {bar}"
    chance_like = bounds is None or bounds[0] <= policy.chance
    verdict = (
        "its verdicts are indistinguishable from chance on answers of known quality"
        if chance_like
        else "it agrees with the labels more often than chance, but not often enough"
    )
    return (
        f"refused: {figures}; {bar}. {verdict.capitalize()}, so quality is not measured; "
        + _STRONGER_JUDGE.format(bar=policy.min_agreement)
    )


class RefusedJudge:
    """Stands in for a judge that failed admission: no call, every evaluation not measured."""

    def __init__(self, admission: JudgeAdmission) -> None:
        if admission.admitted:
            raise ValueError("an admitted judge needs no stand-in")
        self._admission = admission

    @property
    def judge_id(self) -> str:
        return self._admission.judge_id

    async def evaluate(self, input: str, output: str, criteria: Sequence[Criterion]) -> JudgeResult:
        del input, output
        result = JudgeResult.failed(
            f"the judge was refused at admission ({self._admission.agreed}/"
            f"{self._admission.labels} calibration labels matched)",
            criteria,
        )
        return JudgeResult(
            result.score, result.summary, result.verdicts, evaluation_failed=True, judge_calls=0
        )
