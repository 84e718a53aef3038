"""Judges: criteria in, per-criterion verdicts out, through one interface for every judge.

A model judge is admitted only after it agrees with labelled calibration examples
(:func:`admit_judge`); a refused judge says which examples it got wrong.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine.judge._admission import (
        CalibrationExample as CalibrationExample,
        JudgeAdmission as JudgeAdmission,
        RefusedJudge as RefusedJudge,
        admit_judge as admit_judge,
    )
    from vitrine.judge._base import (
        Criterion as Criterion,
        CriterionVerdict as CriterionVerdict,
        DeterministicJudge as DeterministicJudge,
        Judge as Judge,
        JudgeResult as JudgeResult,
        Rule as Rule,
        rubric_hash as rubric_hash,
    )
    from vitrine.judge._llm import (
        DEFAULT_JUDGE_MAX_OUTPUT_TOKENS as DEFAULT_JUDGE_MAX_OUTPUT_TOKENS,
        LLMJudge as LLMJudge,
    )

__getattr__, __dir__ = lazy_exports(__name__)
