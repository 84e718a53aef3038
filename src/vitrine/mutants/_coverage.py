"""Seam coverage: for each seam (the model, a tool, a prompt rule, a turn, a threshold), whether
any check saw a defect planted there.

A surviving mutant says one bug went unseen. A seam at which *every* mutant survived says more:
nothing the suite observes depends on that part of the subject, so it could be deleted or
broken in any way these operators break it and the suite would stay green.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vitrine.mutants._report import MutantRow, SeamCoverage
from vitrine.mutants._seams import SEAM_KINDS

__all__ = ["KindCoverage", "coverage_by_kind", "seam_coverage"]

_UNMEASURED = frozenset({"not measured", "errored"})


def seam_coverage(rows: Sequence[MutantRow]) -> list[SeamCoverage]:
    """One entry per seam any row was planted at, in the order the seams first appear."""
    groups: dict[tuple[str, str], list[MutantRow]] = {}
    for row in rows:
        if row.seam_kind is None or row.seam_target is None:
            continue
        groups.setdefault((row.seam_kind, row.seam_target), []).append(row)
    return [
        SeamCoverage(
            kind=kind,
            target=target,
            mutants=len(members),
            killed=sum(1 for row in members if row.outcome == "killed"),
            unseen=[_operator(row) for row in members if row.outcome == "survived"],
            unmeasured=[_operator(row) for row in members if row.outcome in _UNMEASURED],
        )
        for (kind, target), members in groups.items()
    ]


def _operator(row: MutantRow) -> str:
    return row.operator or row.id


@dataclass(frozen=True, slots=True)
class KindCoverage:
    """One seam kind's line of the coverage summary: its seams, the seen ones, the unseen."""

    kind: str
    seams: int
    seen: int
    mutants: int
    killed: int
    unseen: tuple[str, ...]  # seams where no mutant was killed and some survived
    unmeasured: tuple[str, ...] = ()  # seams where no mutant could be judged at all


def coverage_by_kind(coverage: Sequence[SeamCoverage]) -> list[KindCoverage]:
    """The coverage folded per seam kind, in the harness's order of kinds."""
    order: dict[str, int] = {kind: index for index, kind in enumerate(SEAM_KINDS)}
    kinds = sorted({c.kind for c in coverage}, key=lambda kind: order.get(kind, len(order)))
    found = []
    for kind in kinds:
        members = [c for c in coverage if c.kind == kind]
        found.append(
            KindCoverage(
                kind=kind,
                seams=len(members),
                seen=sum(1 for c in members if c.seen),
                mutants=sum(c.mutants for c in members),
                killed=sum(c.killed for c in members),
                unseen=tuple(c.target for c in members if not c.seen and c.unseen),
                unmeasured=tuple(c.target for c in members if not c.seen and not c.unseen),
            )
        )
    return found
