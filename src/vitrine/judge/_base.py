"""The judge interface shared by the deterministic judge and LLM judges.

A judge that could not evaluate says so (``evaluation_failed``); callers turn that into a
not-measured observation, never a pass.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from vitrine._bench.model import canonical_json
from vitrine._redact import sanitize_text

__all__ = [
    "EXPLANATION_LIMIT",
    "Criterion",
    "CriterionVerdict",
    "DeterministicJudge",
    "Judge",
    "JudgeResult",
    "rubric_hash",
]

EXPLANATION_LIMIT = 320


@dataclass(frozen=True, slots=True)
class Criterion:
    id: str
    description: str


def rubric_hash(criteria: Sequence[Criterion]) -> str:
    """A stable hash of the criteria (ids and wording), recorded so a changed rubric is visible."""

    payload = [{"id": c.id, "description": c.description} for c in criteria]
    return "sha256:" + hashlib.sha256(canonical_json(payload).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class CriterionVerdict:
    criterion: str
    met: bool | None  # None: the judge gave no usable verdict for this criterion
    explanation: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"criterion": self.criterion, "met": self.met, "explanation": self.explanation}


@dataclass(frozen=True, slots=True)
class JudgeResult:
    score: float | None  # 0-100; None when the evaluation failed
    summary: str
    verdicts: tuple[CriterionVerdict, ...]
    evaluation_failed: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    judge_calls: int = 1

    @property
    def usable(self) -> bool:
        return (
            not self.evaluation_failed
            and self.score is not None
            and math.isfinite(self.score)
            and all(v.met is not None for v in self.verdicts)
        )

    @property
    def criteria_met(self) -> int:
        return sum(1 for v in self.verdicts if v.met)

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "summary": self.summary,
            "verdicts": [v.to_dict() for v in self.verdicts],
            "evaluation_failed": self.evaluation_failed,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "judge_calls": self.judge_calls,
        }

    @classmethod
    def failed(cls, why: str, criteria: Sequence[Criterion]) -> JudgeResult:
        return cls(
            None,
            sanitize_text(why, EXPLANATION_LIMIT),
            tuple(CriterionVerdict(c.id, None, None) for c in criteria),
            evaluation_failed=True,
        )


@runtime_checkable
class Judge(Protocol):
    """What every judge is: an id, and per-criterion verdicts on one output for one input."""

    @property
    def judge_id(self) -> str: ...

    async def evaluate(
        self, input: str, output: str, criteria: Sequence[Criterion]
    ) -> JudgeResult: ...


Rule = Callable[[str, str], tuple[bool, str]]


class DeterministicJudge:
    """A judge whose criteria are code: each rule returns (met, explanation).

    It exists so the offline lane exercises the same judge interface, projection and
    persistence as a live LLM judge, with verdicts that are repeatable bit for bit.
    """

    def __init__(self, rules: Mapping[str, Rule], judge_id: str = "deterministic-judge") -> None:
        self._rules = dict(rules)
        self._judge_id = judge_id
        self.calls = 0

    @property
    def judge_id(self) -> str:
        return self._judge_id

    async def evaluate(self, input: str, output: str, criteria: Sequence[Criterion]) -> JudgeResult:
        self.calls += 1
        missing = [c.id for c in criteria if c.id not in self._rules]
        if missing:
            return JudgeResult.failed(f"no rule for criteria: {', '.join(missing)}", criteria)
        verdicts = []
        for criterion in criteria:
            met, why = self._rules[criterion.id](input, output)
            verdicts.append(
                CriterionVerdict(criterion.id, met, sanitize_text(why, EXPLANATION_LIMIT))
            )
        score = 100.0 * sum(v.met is True for v in verdicts) / len(verdicts) if verdicts else 0.0
        met_count = sum(v.met is True for v in verdicts)
        return JudgeResult(score, f"{met_count} of {len(verdicts)} criteria met", tuple(verdicts))
