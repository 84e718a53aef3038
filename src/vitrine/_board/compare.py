"""Two runs of one definition side by side, paired by case, with the sign test per check.

The pairing, the exclusions and the p-value are :func:`vitrine._bench.score.against_reference`;
the board only sorts its pairs into buckets. The baseline plays the reference and the candidate
the challenger, so two runs of the same arm (yesterday's and today's) can be compared too: each
side is relabelled before scoring, since the scorer rightly refuses to pair an arm with itself
inside one benchmark. Two live sessions are compared arm by arm, each side holding that arm's
repetitions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from vitrine._bench.results import RunResult
from vitrine._bench.score import (
    ComparisonError,
    ReferenceComparison,
    RepCollapse,
    against_reference,
)
from vitrine._board.runs import BoardError

__all__ = ["BUCKETS", "CheckComparison", "CompareView", "compare_runs", "compare_sides"]

BUCKETS = ("regressed", "fixed", "still failing", "unchanged", "not comparable")
_BASELINE, _CANDIDATE = "baseline", "candidate"


@dataclass(frozen=True, slots=True)
class PairRow:
    case_id: str
    bucket: str
    baseline: float | None
    candidate: float | None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class CheckComparison:
    check_key: str
    facts: ReferenceComparison
    rows: tuple[PairRow, ...]

    def count(self, bucket: str) -> int:
        return sum(1 for row in self.rows if row.bucket == bucket)


@dataclass(frozen=True, slots=True)
class CompareView:
    """One arm's comparison: the baseline side's runs against the candidate side's."""

    baseline: tuple[RunResult, ...]
    candidate: tuple[RunResult, ...]
    checks: tuple[CheckComparison, ...]

    @property
    def label(self) -> str:
        arms = {self.baseline[0].arm_id, self.candidate[0].arm_id}
        return " vs ".join(sorted(arms)) if len(arms) > 1 else arms.pop()

    def total(self, bucket: str) -> int:
        return sum(check.count(bucket) for check in self.checks)


def _bucket(baseline: float, candidate: float, pass_at: float) -> str:
    before, after = baseline >= pass_at, candidate >= pass_at
    if before and not after:
        return "regressed"
    if after and not before:
        return "fixed"
    return "unchanged" if after else "still failing"


def compare_runs(
    baseline: Sequence[RunResult], candidate: Sequence[RunResult], pass_at: float = 1.0
) -> CompareView:
    """Pair two sides case by case on every check; refuse different definitions.

    A side is one run, or the repetitions of one arm in a session (collapsed per case with
    ``all``, as the protocol's comparison plan does).
    """
    first, other = baseline[0], candidate[0]
    shared = {r.run_id for r in baseline} & {r.run_id for r in candidate}
    if shared:
        raise BoardError(
            f"run {sorted(shared)[0]} is on both sides: a run compared with itself only "
            "manufactures ties",
            400,
        )
    if first.definition_hash != other.definition_hash:
        raise BoardError(
            f"these runs measure different definitions ({first.identity} "
            f"{first.definition_hash} vs {other.identity} {other.definition_hash}): "
            "their cases, checks or bindings differ, so a case-by-case comparison would pair "
            "things that do not measure the same thing",
            409,
        )
    # A lone run is repetition 1 of its side, whatever number it had in its own session.
    left = [
        replace(r, arm_id=_BASELINE, repetition=r.repetition if len(baseline) > 1 else 1)
        for r in baseline
    ]
    right = [
        replace(r, arm_id=_CANDIDATE, repetition=r.repetition if len(candidate) > 1 else 1)
        for r in candidate
    ]
    checks = []
    for info in first.checks:
        try:
            facts = against_reference(left, right, info.key, RepCollapse.ALL, pass_at)
        except ComparisonError as exc:
            raise BoardError(str(exc), 409) from exc
        rows = [
            PairRow(
                p.case_id,
                _bucket(p.reference_value, p.challenger_value, pass_at),
                p.reference_value,
                p.challenger_value,
            )
            for p in facts.pairs
        ]
        rows.extend(
            PairRow(
                e.case_id,
                "not comparable",
                None,
                None,
                e.reason.replace("reference", _BASELINE).replace("challenger", _CANDIDATE),
            )
            for e in facts.exclusions
        )
        checks.append(CheckComparison(info.key, facts, tuple(rows)))
    return CompareView(tuple(baseline), tuple(candidate), tuple(checks))


def compare_sides(
    baseline: Mapping[str, Sequence[RunResult]], candidate: Mapping[str, Sequence[RunResult]]
) -> list[CompareView]:
    """Two runs, or two sessions arm by arm; a lone run on each side is compared whatever
    its arm (that is the point of comparing, say, yesterday's agent with today's workflow)."""
    if sum(map(len, baseline.values())) == 1 and sum(map(len, candidate.values())) == 1:
        (left,) = baseline.values()
        (right,) = candidate.values()
        return [compare_runs(left, right)]
    arms = [arm for arm in baseline if arm in candidate]
    if not arms:
        raise BoardError(
            f"the two sides share no arm (baseline: {', '.join(baseline) or 'none'}; candidate: "
            f"{', '.join(candidate) or 'none'}): sessions are compared arm by arm",
            409,
        )
    return [compare_runs(baseline[arm], candidate[arm]) for arm in arms]
