"""Build report sections from runs, and recompute a section's claims from the run directories.

``benchmark_section`` is the only way a benchmark's numbers enter a report; ``recompute_claims``
rebuilds the same section from the sealed run directories alone and lists every number that
differs. That is what lets a report be audited instead of trusted.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vitrine._bench.results import RunResult
from vitrine._bench.score import BenchmarkScore, FloorComparisonError, PairOutcome, RepCollapse
from vitrine._multiplicity import benjamini_hochberg, holm, paired_difference
from vitrine.reports._model import (
    BenchmarkSection,
    CheckFacts,
    ComparisonFacts,
    EffectFacts,
    FloorFacts,
    RunRef,
)
from vitrine.store import load_run

__all__ = ["adjusted", "benchmark_section", "effect_of", "recompute_claims"]


def _relative(run_dir: str | None, root: Path) -> str:
    if run_dir is None:
        return ""
    try:
        return Path(os.path.relpath(run_dir, root)).as_posix()
    except ValueError:
        return Path(run_dir).name


def effect_of(pairs: Sequence[PairOutcome], pass_at: float) -> EffectFacts | None:
    """The paired difference of pass rates over the measured pairs, or None without pairs."""
    cells = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for pair in pairs:
        cells[(pair.reference_value >= pass_at, pair.challenger_value >= pass_at)] += 1
    difference = paired_difference(
        cells[(True, True)], cells[(True, False)], cells[(False, True)], cells[(False, False)]
    )
    if difference is None:
        return None
    return EffectFacts(
        estimate=difference.estimate,
        lower=difference.lower,
        upper=difference.upper,
        confidence=difference.confidence,
    )


def adjusted(comparisons: list[ComparisonFacts]) -> list[ComparisonFacts]:
    """The comparisons with Holm and Benjamini-Hochberg p-values over all of them together."""
    if not comparisons:
        return comparisons
    raw = [c.p_value for c in comparisons]
    return [
        c.model_copy(update={"holm_p": h, "bh_p": b})
        for c, h, b in zip(comparisons, holm(raw), benjamini_hochberg(raw), strict=True)
    ]


def benchmark_section(
    runs: Sequence[RunResult],
    *,
    role: str,
    store_root: Path,
    reference_arm: str | None = None,
    collapse: RepCollapse = RepCollapse.ALL,
    pass_at: float = 1.0,
) -> BenchmarkSection:
    """``pass_at`` is the bar a collapsed repetition must reach (a quality threshold below 1.0
    lets a 0.75 pass); it must agree with the checks' own pass rule."""
    score = BenchmarkScore.of(runs)
    checks: list[CheckFacts] = []
    for arm in score.arms:
        for key in score.check_keys:
            cs = score.check_score(arm, key, collapse, pass_at)
            try:
                fc = cs.floor_comparison
                floor_p, min_p, underpowered = fc.p_value, fc.min_attainable_p, fc.underpowered
            except FloorComparisonError:
                floor_p, min_p, underpowered = None, None, True
            info = runs[0].check(key)
            checks.append(
                CheckFacts(
                    arm_id=arm,
                    check_key=key,
                    authority=info.authority,
                    census=cs.census.to_dict(),
                    census_text=cs.census.describe(),
                    successes=cs.successes,
                    measured=cs.n,
                    mean_value=cs.mean_value,
                    wilson_lower=None if cs.interval is None else cs.interval.lower,
                    wilson_upper=None if cs.interval is None else cs.interval.upper,
                    floor=FloorFacts(
                        kind=cs.floor.kind.value,
                        value=cs.floor.rate,
                        reason=cs.floor.reason,
                        display=cs.floor.describe(),
                    ),
                    floor_p=floor_p,
                    min_attainable_p=min_p,
                    underpowered=underpowered,
                )
            )
    comparisons: list[ComparisonFacts] = []
    if reference_arm is not None and len(score.arms) > 1:
        for c in score.against_reference(reference_arm, collapse, pass_at):
            comparisons.append(
                ComparisonFacts(
                    check_key=c.check_key,
                    reference_arm=c.reference_arm,
                    challenger_arm=c.challenger_arm,
                    collapse=c.collapse.value,
                    cases=c.cases,
                    total_repetitions=c.total_repetitions,
                    mean_repetitions_per_case=c.mean_repetitions_per_case,
                    wins=c.wins,
                    losses=c.losses,
                    ties=c.ties,
                    excluded=c.excluded_pairs,
                    effective_n=c.effective_n,
                    p_value=c.p_value,
                    min_attainable_p=c.min_attainable_p,
                    mean_delta=c.mean_delta,
                    underpowered_by_construction=c.underpowered_by_construction,
                    undecidable=c.undecidable,
                    effect=effect_of(c.pairs, pass_at),
                )
            )
    comparisons = adjusted(comparisons)
    repetitions = max(len(score.runs(arm)) for arm in score.arms)
    return BenchmarkSection(
        identity=score.definition_identity,
        content_hash=score.definition_hash,
        role=role,
        reference_arm=reference_arm,
        arms=list(score.arms),
        repetitions=repetitions,
        cases=list(score.case_ids),
        runs=[
            RunRef(
                run_id=r.run_id,
                arm_id=r.arm_id,
                repetition=r.repetition,
                run_dir=_relative(r.run_dir, store_root),
                verdict=r.verdict.value,
                census=r.census.to_dict(),
            )
            for r in runs
        ],
        checks=checks,
        comparisons=comparisons,
    )


def _numbers(value: Any, prefix: str) -> dict[str, Any]:
    """Flatten a section into path -> leaf, so two sections compare claim by claim."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            out.update(_numbers(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.update(_numbers(item, f"{prefix}[{i}]"))
    else:
        out[prefix] = value
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return bool(a == b)


def recompute_claims(section: BenchmarkSection, store_root: Path) -> tuple[int, list[str]]:
    """Reload the section's runs from disk (seal verified), rebuild it, and diff every number.

    Returns (claims checked, mismatches). A run that cannot be read is itself a mismatch: a
    claim whose evidence is missing or tampered with is not an honest claim.
    """

    runs: list[RunResult] = []
    mismatches: list[str] = []
    for ref in section.runs:
        try:
            runs.append(load_run(store_root / ref.run_dir))
        except Exception as exc:  # any unreadable run makes every claim on it unverifiable
            mismatches.append(f"run {ref.run_id}: {type(exc).__name__}")
    claimed = _numbers(section.model_dump(mode="json"), "")
    if mismatches:
        return len(claimed), mismatches
    rebuilt = benchmark_section(
        runs,
        role=section.role,
        store_root=store_root,
        reference_arm=section.reference_arm,
        collapse=RepCollapse(section.comparisons[0].collapse)
        if section.comparisons
        else RepCollapse.ALL,
    )
    recomputed = _numbers(rebuilt.model_dump(mode="json"), "")
    for path in sorted(set(claimed) | set(recomputed)):
        if path not in claimed or path not in recomputed:
            mismatches.append(f"{path}: present on one side only")
        elif not _same(claimed[path], recomputed[path]):
            mismatches.append(
                f"{path}: report says {claimed[path]!r}, runs say {recomputed[path]!r}"
            )
    return len(claimed), mismatches
