"""The console view of a kill matrix: one rich table, the survivors' reasons and the score."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from vitrine.mutants._coverage import coverage_by_kind
from vitrine.mutants._report import KillerChange, MutantMatrix
from vitrine.reports._console import _STYLE, _Col, _safe, _table
from vitrine.reports._formatting import status_class

__all__ = ["render_matrix_console"]

_CONSOLE_KILLERS = 8  # per mutant; a killer list of dozens of tests would bury the table

# Outcomes printed in the report's status colours: a kill is the suite doing its job.
_OUTCOME_STATUS = {
    "killed": "PASS",
    "survived": "FAIL",
    "not measured": "NOT MEASURED",
    "errored": "ERROR",
}


def render_matrix_console(matrix: MutantMatrix, console: Console) -> None:
    """Print the mutants table, why each survivor survived, the score and the exit."""
    table = _table(
        f"Mutants of {matrix.suite} (plan {matrix.plan})",
        _Col("Mutant", fixed=True),
        _Col("Component", ratio=1),
        _Col("Outcome", fixed=True),
        _Col("Killers", ratio=2),
    )
    for row in matrix.mutants:
        outcome = _safe(row.outcome, _STYLE[status_class(_OUTCOME_STATUS[row.outcome])])
        killers = (
            _killer_lines(row.killers) if row.outcome == "killed" and row.killers else row.reason
        )
        table.add_row(_safe(row.id), _safe(row.component), outcome, _safe(killers))
    console.print(table)
    _render_coverage(matrix, console)
    # A generated survivor is evidence, not a broken promise: the coverage above sums them up.
    survivors = [
        row
        for row in matrix.mutants
        if row.outcome != "killed" and (row.must_kill or not row.generated)
    ]
    for row in survivors:
        must = "must-kill " if row.must_kill else ""
        console.print(
            Text.assemble(
                (f"{must}{row.outcome}: ", "bold"), _safe(row.id), ": ", _safe(row.reason)
            )
        )
    for row in matrix.mutants:
        # Unmeasured is not unseen: a mutant that never ran saw nothing either way.
        if row.expected_not_seen and row.outcome in ("killed", "survived"):
            console.print(
                Text.assemble(
                    ("expected but not seen: ", "yellow"),
                    _safe(f"{row.id}: {', '.join(row.expected_not_seen)}"),
                )
            )
    for note in matrix.notes:
        console.print(Text.assemble(("note: ", "dim"), _safe(note)))
    console.print(Text(matrix.score_text, style="bold"))
    style = "bold green" if matrix.exit_code == 0 else "bold red"
    console.print(Text.assemble((f"exit {matrix.exit_code}: ", style), _safe(matrix.exit_reason)))
    for artifact in matrix.artifacts.values():
        console.print(Text.assemble(("artifact: ", "dim"), _safe(artifact)))


def _render_coverage(matrix: MutantMatrix, console: Console) -> None:
    kinds = coverage_by_kind(matrix.coverage)
    if not kinds:
        return
    table = _table(
        "Seam coverage: which seams does no check see?",
        _Col("Seam kind", fixed=True),
        _Col("Seams seen", fixed=True, right=True),
        _Col("Mutants killed", fixed=True, right=True),
        _Col("Seams no check sees", ratio=2),
    )
    for kind in kinds:
        unseen = ", ".join(kind.unseen) or "none"
        if kind.unmeasured:
            unseen += f" (not measured: {', '.join(kind.unmeasured)})"
        table.add_row(
            _safe(kind.kind),
            _safe(f"{kind.seen}/{kind.seams}"),
            _safe(f"{kind.killed}/{kind.mutants}"),
            _safe(unseen),
        )
    console.print(table)


def _killer_lines(killers: list[KillerChange]) -> str:
    lines = [
        f"{k.killer}{_also(k.aliases)} {k.healthy} -> {k.mutant}"
        for k in killers[:_CONSOLE_KILLERS]
    ]
    if len(killers) > _CONSOLE_KILLERS:
        lines.append(f"and {len(killers) - _CONSOLE_KILLERS} more (see the matrix)")
    return "\n".join(lines)


def _also(aliases: list[str]) -> str:
    return f" ({', '.join(aliases)})" if aliases else ""
