"""Admission: a judge earns trust on labelled answers before its verdicts count.

A judge model that parses every time can still be noise: at 135M or 270M parameters it grades
a good answer and a deliberately bad one the same way. Nothing in a verdict shows that, so
before a session uses a judge, :func:`admit_judge` has it grade a small calibration set
(answers written independently of the subject, each labelled met / not met per criterion) and
compares. The agreement, its Wilson 95% interval and the bar are reported; a judge is admitted
only when its agreement reaches ``min_agreement`` *and* the interval's lower bound lies above
``chance`` (an always-yes, always-no or coin-flip judge lands near 0.5 on a balanced set).

Agreement counts labels, so a judge can clear the bar and still pass the answers that matter
most: a non-answer, a "step limit reached" message, a refusal. Examples marked ``hard`` are
therefore also judged whole: the judge passes an answer when it calls every criterion met, and
on a hard example that verdict must match the labels (a hard negative failed, a hard positive
passed). A judge that confuses more than ``max_hard_confusions`` of them is refused, and the
reason names what it confused.

A refused judge is replaced by :class:`RefusedJudge`, which answers every evaluation as failed
with the refusal as its reason and makes no call, so quality is *not measured*, never a pass or
a fail decided by noise. An evaluation the judge could not complete counts as a disagreement:
a judge that cannot judge is not admitted either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vitrine._redact import sanitize_text
from vitrine._stats import wilson_interval
from vitrine.errors import InvalidArgumentError
from vitrine.judge._base import Criterion, Judge, JudgeResult

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
    # How a refusal names this example when the judge confuses it ("the step-limit message");
    # None for an example that only counts towards agreement.
    hard: str | None = None

    @property
    def passes(self) -> bool:
        """Whether the answer, as labelled, passes: every criterion met."""
        return all(self.labels.values())

    def __post_init__(self) -> None:
        ids = [c.id for c in self.criteria]
        if not ids or set(ids) != set(self.labels):
            raise InvalidArgumentError(
                f"calibration example {self.case}/{self.label} must label exactly its criteria"
            )


@dataclass(frozen=True, slots=True)
class AdmissionPolicy:
    """The bar: point agreement at least ``min_agreement``, Wilson lower bound above ``chance``,
    and at most ``max_hard_confusions`` hard examples judged the wrong way as a whole."""

    min_agreement: float = 0.80
    chance: float = 0.50
    max_hard_confusions: int = 0

    def __post_init__(self) -> None:
        if not 0.0 < self.min_agreement <= 1.0 or not 0.0 <= self.chance < 1.0:
            raise InvalidArgumentError("need 0 < min_agreement <= 1 and 0 <= chance < 1")
        if self.max_hard_confusions < 0:
            raise InvalidArgumentError("max_hard_confusions cannot be negative")


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
    confused: tuple[str, ...] = ()  # the hard examples judged the wrong way, as "case/label"

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
            "bar": {
                "min_agreement": self.policy.min_agreement,
                "chance": self.policy.chance,
                "max_hard_confusions": self.policy.max_hard_confusions,
            },
            "hard_confusions": list(self.confused),
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
    confusions: list[_Confusion] = []
    for example in examples:
        result = await judge.evaluate(example.input, example.answer, example.criteria)
        verdicts = {v.criterion: v.met for v in result.verdicts} if result.usable else {}
        matched = sum(1 for cid, met in example.labels.items() if verdicts.get(cid) is met)
        labels += len(example.labels)
        agreed += matched
        unusable += 0 if result.usable else 1
        passed = result.usable and all(verdicts.get(cid) is True for cid in example.labels)
        if example.hard is not None and passed is not example.passes:
            confusions.append(_Confusion(example.hard, example.case, example.label, passed))
        rows.append(_row(example, result, matched, passed))
    interval = wilson_interval(agreed, labels)
    bounds = None if interval is None else (interval.lower, interval.upper)
    agrees = (
        bounds is not None and agreed / labels >= policy.min_agreement and bounds[0] > policy.chance
    )
    separates = len(confusions) <= policy.max_hard_confusions
    admitted = agrees and separates
    confused = None if separates else _confusion_sentence(confusions)
    reason = _reason(agrees, confused, agreed, labels, unusable, bounds, policy)
    return JudgeAdmission(
        judge.judge_id,
        admitted,
        reason,
        labels,
        agreed,
        unusable,
        policy,
        bounds,
        tuple(rows),
        tuple(f"{c.case}/{c.label}" for c in confusions),
    )


@dataclass(frozen=True, slots=True)
class _Confusion:
    """A hard example the judge judged the wrong way as a whole."""

    name: str
    case: str
    label: str
    passed: bool  # what the judge did with it


def _confusion_sentence(confusions: Sequence[_Confusion]) -> str:
    """The sentence naming what the judge confused, one name per kind of hard example with the
    cases where it happened: "the judge passed the step-limit message (...) and the refusal
    (...), and failed the correct answer in other words (...)"."""
    by_name: dict[tuple[bool, str], list[str]] = {}
    for confusion in confusions:
        by_name.setdefault((confusion.passed, confusion.name), []).append(confusion.case)
    clauses = []
    for verb, passed in (("passed", True), ("failed", False)):
        names = [
            f"{name} ({', '.join(cases)})"
            for (was_passed, name), cases in by_name.items()
            if was_passed is passed
        ]
        if names:
            clauses.append(f"{verb} {_listing(names)}")
    return "the judge " + ", and ".join(clauses)


def _listing(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _row(
    example: CalibrationExample, result: JudgeResult, matched: int, passed: bool
) -> dict[str, Any]:
    return {
        "case": example.case,
        "label": example.label,
        "hard": example.hard,
        "agreed": matched,
        "labels": len(example.labels),
        "usable": result.usable,
        "passed": passed,
        "should_pass": example.passes,
        "verdicts": {v.criterion: v.met for v in result.verdicts},
        "summary": sanitize_text(result.summary, 200) if not result.usable else None,
    }


def _reason(
    agrees: bool,
    confused: str | None,
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
        f"{policy.chance:.2f}, and at most {policy.max_hard_confusions} hard case(s) judged "
        "the wrong way"
    )
    if agrees and confused is None:
        return f"admitted: {figures}; {bar}"
    if not agrees:
        chance_like = bounds is None or bounds[0] <= policy.chance
        verdict = (
            "its verdicts are indistinguishable from chance on answers of known quality"
            if chance_like
            else "it agrees with the labels more often than chance, but not often enough"
        )
    else:
        verdict = "it agrees with enough labels, but cannot tell these answers from good ones"
    lead = f"refused: {confused}; " if confused else "refused: "
    return (
        f"{lead}{figures}; {bar}. {verdict.capitalize()}, so quality is not measured; "
        + _STRONGER_JUDGE.format(bar=policy.min_agreement)
    )


class RefusedJudge:
    """Stands in for a judge that failed admission: no call, every evaluation not measured."""

    def __init__(self, admission: JudgeAdmission) -> None:
        if admission.admitted:
            raise InvalidArgumentError("an admitted judge needs no stand-in")
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
