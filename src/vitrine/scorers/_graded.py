"""Model-graded criteria: a judge grades the answer, and only an admitted judge's grade counts.

The judge is any :class:`vitrine.judge.Judge` (an :class:`~vitrine.judge.LLMJudge`, a
:class:`~vitrine.judge.DeterministicJudge`). Before its first grade counts it must pass
:func:`vitrine.judge.admit_judge` on labelled calibration examples written for these criteria;
a judge that does not is never consulted, and every trial it would have graded is *not
measured*, with the admission's reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from vitrine._bench.model import AdmittedCheck, Authority, Case, canonical_json
from vitrine._bench.response import SubjectResponse
from vitrine._floors import ChanceFloor
from vitrine._outcomes import Observation
from vitrine._redact import describe_exception
from vitrine.errors import JudgeNotAdmittedError, RunningLoopError, ScorerError
from vitrine.judge._admission import (
    AdmissionPolicy,
    CalibrationExample,
    JudgeAdmission,
    admit_judge,
)
from vitrine.judge._base import Criterion, Judge, rubric_hash
from vitrine.scorers._common import admitted

__all__ = ["graded"]

_NO_FLOOR = (
    "a judge's verdict on the subject's own wording: there is no random-draw population of "
    "answers to derive a chance rate from"
)


def _criteria(given: Sequence[Criterion | str] | Criterion | str) -> tuple[Criterion, ...]:
    items = [given] if isinstance(given, Criterion | str) else list(given)
    out: list[Criterion] = []
    for i, item in enumerate(items):
        if isinstance(item, Criterion):
            out.append(item)
        elif isinstance(item, str) and item.strip():
            out.append(Criterion(f"c{i + 1}", item))
        else:
            raise ScorerError(
                f"criteria[{i}]: a criterion is a vitrine.judge.Criterion or its wording as a "
                f"non-blank string; got {item!r}"
            )
    ids = [c.id for c in out]
    if not out:
        raise ScorerError("graded() needs at least one criterion: an empty rubric grades nothing")
    if len(set(ids)) != len(ids) or not all(isinstance(c, str) and c.strip() for c in ids):
        raise ScorerError(f"graded(): criterion ids must be non-blank and distinct, got {ids}")
    return tuple(out)


def _calibration(
    examples: Sequence[CalibrationExample], criteria: Sequence[Criterion]
) -> tuple[CalibrationExample, ...]:
    listed = tuple(examples)
    if not listed:
        raise ScorerError(
            "graded() needs calibration examples: a judge nobody has checked against answers "
            "of known quality cannot be admitted, so its grades could never count"
        )
    rubric = {c.id for c in criteria}
    for example in listed:
        if not isinstance(example, CalibrationExample):
            raise ScorerError(
                "calibration lists vitrine.judge.CalibrationExample objects, got "
                f"{type(example).__name__}"
            )
        if {c.id for c in example.criteria} != rubric:
            raise ScorerError(
                f"calibration example {example.case}/{example.label} labels criteria "
                f"{sorted(c.id for c in example.criteria)}, not this rubric's {sorted(rubric)}: "
                "it would calibrate the judge on a different question"
            )
    return listed


def _text_input(case: Case) -> str:
    return case.input if isinstance(case.input, str) else canonical_json(case.input)


class _Admission:
    """The judge's admission, decided once for this check and shared by every trial."""

    def __init__(
        self,
        judge: Judge,
        examples: Sequence[CalibrationExample],
        policy: AdmissionPolicy | None,
    ) -> None:
        self.judge = judge
        self.examples = examples
        self.policy = policy
        self.result: JudgeAdmission | None = None
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    async def decide(self) -> JudgeAdmission:
        if self.result is not None:
            return self.result
        # Trials run concurrently; the first decides and the rest wait for it. A lock belongs
        # to one event loop, and Evaluation.run starts a fresh loop each time.
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        async with self._lock[1]:
            if self.result is None:
                self.result = await admit_judge(self.judge, self.examples, self.policy)
        return self.result


def graded(
    criteria: Sequence[Criterion | str] | Criterion | str,
    *,
    judge: Judge,
    calibration: Sequence[CalibrationExample],
    policy: AdmissionPolicy | None = None,
    admit_now: bool = True,
    input_of: Callable[[Case], str] | None = None,
    key: str = "graded",
    version: str = "1.0.0",
    floor: ChanceFloor | None = None,
    authority: Authority | str = Authority.GATE,
) -> AdmittedCheck:
    """A check that a judge finds every criterion met by the answer.

    ``criteria`` are :class:`vitrine.judge.Criterion` objects or their wording (ids ``c1``,
    ``c2``, ... are given in order). ``judge`` is any :class:`vitrine.judge.Judge`.
    ``calibration`` are labelled :class:`vitrine.judge.CalibrationExample` answers for exactly
    these criteria; the judge must pass :func:`vitrine.judge.admit_judge` on them (under
    ``policy``, an :class:`vitrine.judge.AdmissionPolicy`) before any grade counts.

    With ``admit_now=True`` (the default) admission runs here, and a judge that fails it
    raises :class:`vitrine.errors.JudgeNotAdmittedError` with the admission's reason: the
    check is never built. With ``admit_now=False`` admission runs once, at the first trial
    (for a module that must not call a model when it is imported, or code inside an event
    loop); a refused judge then leaves every trial not measured, with the same reason. Deferred
    admission runs inside the first trial's check, under the check time limit (30 s by
    default): a judge whose calibration takes longer leaves those trials not measured, so
    admit a slow model judge now.

    The judge sees ``input_of(case)`` (by default the case's input, as JSON when it is not a
    string) and the answer. The admission and the rubric hash are in every observation's
    evidence, and the rubric hash is in the check's version, so a changed rubric is a changed
    benchmark.

    Three states:

    * **pass**: the judge calls every criterion met;
    * **fail** (measured): it calls at least one not met; the evidence has each verdict and
      its explanation. An empty answer ``""`` is graded like any other;
    * **not measured**: ``answer is None`` (no call is made), the judge was refused at
      admission, or the judge's evaluation failed (it raised, or its reply could not be read
      as one verdict per criterion).

    The value is the share of criteria met, so 1.0 is exactly a pass.

    Chance floor: not derivable (a verdict on the subject's own wording has no random-draw
    population behind it).
    """
    rubric = _criteria(criteria)
    examples = _calibration(calibration, rubric)
    if not isinstance(judge, Judge):
        raise ScorerError(
            f"judge must be a vitrine.judge.Judge (an id and async evaluate), got "
            f"{type(judge).__name__}"
        )
    admission = _Admission(judge, examples, policy)
    if admit_now:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RunningLoopError(
                "graded(admit_now=True) admits the judge before it returns, which cannot run "
                "inside a running event loop: pass admit_now=False there, and the judge is "
                "admitted at the first trial"
            )
        decided = asyncio.run(admission.decide())
        if not decided.admitted:
            raise JudgeNotAdmittedError(
                f"graded check {key!r}: judge {decided.judge_id!r} was not admitted: "
                f"{decided.reason}",
                decided,
            )
    read_input = input_of or _text_input
    hashed = rubric_hash(rubric)

    async def score(case: Case, response: SubjectResponse) -> Observation:
        if response.answer is None:
            return Observation.not_measured(
                "the subject produced no answer (answer is None), so there was nothing to grade"
            )
        decided = await admission.decide()
        trust: dict[str, Any] = {
            "judge": decided.judge_id,
            "rubric_hash": hashed,
            "admitted": decided.admitted,
            "agreement": decided.agreement,
        }
        if not decided.admitted:
            return Observation.not_measured(
                f"the judge was not admitted, so its grade cannot count: {decided.reason}",
                evidence=trust,
            )
        try:
            result = await judge.evaluate(read_input(case), response.answer, rubric)
        except Exception as exc:
            # A judge that could not judge measured nothing: never a pass, never a fail.
            return Observation.not_measured(
                f"the judge raised {describe_exception(exc)}", evidence=trust
            )
        if not result.usable:
            return Observation.not_measured(
                f"the judge gave no usable verdict: {result.summary}", evidence=trust
            )
        answered = sorted(v.criterion for v in result.verdicts)
        if answered != sorted(c.id for c in rubric):
            return Observation.not_measured(
                f"the judge answered criteria {answered}, not the rubric's "
                f"{sorted(c.id for c in rubric)}",
                evidence=trust,
            )
        met = result.criteria_met
        verdicts = {
            v.criterion: {"met": v.met, "explanation": v.explanation} for v in result.verdicts
        }
        return Observation.measured(
            met / len(rubric),
            met == len(rubric),
            evidence={**trust, "verdicts": verdicts, "score": result.score},
        )

    return admitted(
        key=key,
        version=version,
        scoring=score,
        description="a judge, admitted on calibration examples, finds every criterion met",
        configuration={
            "scorer": "graded",
            "rubric_hash": hashed,
            "judge": judge.judge_id,
            "calibration": len(examples),
            "policy": None
            if policy is None
            else [policy.min_agreement, policy.chance, policy.max_hard_confusions],
            "input_of": input_of,
        },
        floor=floor,
        default_floor=_NO_FLOOR,
        authority=authority,
    )
