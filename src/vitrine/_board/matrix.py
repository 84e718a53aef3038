"""The kill matrix as a compact heat map: what the board draws from a mutant session.

A matrix of 37 mutants by some 80 killers is unreadable as a table of words. The heat map
puts the survivors (what no check saw, the rows that need work) first, draws a kill as the
good outcome it is, numbers the killers so a column is one narrow cell wide, and keeps each
mutant's description in its row and each killer's name in a legend the column links to, so
nothing is only in a mouse-over tooltip.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["KillMap", "KillRow", "Killer", "kill_map"]

# The order rows are shown in: what needs attention first, the good outcome last.
_OUTCOME_ORDER = {"survived": 0, "errored": 1, "not measured": 2, "killed": 3}


@dataclass(frozen=True, slots=True)
class Killer:
    """One column: its number in the legend, its name, and the kind of evidence it is."""

    number: int
    name: str
    family: str  # gate, check, control or test: the part of the name before its colon
    kills: int  # how many mutants it killed


@dataclass(frozen=True, slots=True)
class KillRow:
    """One mutant: its outcome, and which of the columns killed it."""

    id: str
    component: str
    description: str
    outcome: str
    reason: str
    must_kill: bool
    generated: bool
    cells: tuple[bool, ...]  # one per column of :attr:`KillMap.killers`, in their order

    @property
    def kill_count(self) -> int:
        """How many killers noticed this mutant."""
        return sum(self.cells)


@dataclass(frozen=True, slots=True)
class KillMap:
    """The rows (survivors first) and numbered columns of one kill matrix."""

    rows: tuple[KillRow, ...]
    killers: tuple[Killer, ...]

    def count(self, outcome: str) -> int:
        """How many mutants ended with ``outcome``."""
        return sum(1 for row in self.rows if row.outcome == outcome)


def kill_map(matrix: Any) -> KillMap:
    """The heat map of a :class:`vitrine.mutants.MutantMatrix` (or anything of its shape)."""
    names: Sequence[str] = list(matrix.killers)
    rows = []
    for mutant in matrix.mutants:
        hit = set(mutant.killer_names)
        rows.append(
            KillRow(
                id=mutant.id,
                component=mutant.component,
                description=mutant.description,
                outcome=mutant.outcome,
                reason=mutant.reason,
                must_kill=bool(mutant.must_kill),
                generated=bool(getattr(mutant, "generated", False)),
                cells=tuple(name in hit for name in names),
            )
        )
    # Stable: within one outcome the session's own order is kept.
    rows.sort(key=lambda r: _OUTCOME_ORDER.get(r.outcome, 1))
    killers = tuple(
        Killer(
            number=i,
            name=name,
            family=name.split(":", 1)[0] if ":" in name else "other",
            kills=sum(1 for r in rows if r.cells[i - 1]),
        )
        for i, name in enumerate(names, start=1)
    )
    return KillMap(tuple(rows), killers)
