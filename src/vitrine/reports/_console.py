"""The console rendering of a suite report: rich tables that read well at 100 columns.

Every string that came from a model, a case file or a check's reason is wrapped in a ``Text``
(or passed through ``rich.markup.escape`` where it joins markup), so ``[red]`` in an answer is
printed as those five characters and never restyles the operator's terminal. Control
characters are made visible first, because rich passes an ESC sequence through untouched.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from typing import TextIO

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from vitrine.reports._formatting import (
    DASH,
    StatusClass,
    authority_label,
    census_compact,
    comparison_flags,
    exit_class,
    format_delta,
    format_duration,
    format_effect,
    format_interval,
    format_p,
    gate_problems,
    power_state,
    short_hash,
    status_class,
    successes_text,
    unmeasured_items,
    visible,
    wlt_text,
)
from vitrine.reports._model import BenchmarkSection, ControlsSection, SuiteReport

__all__ = ["render_console", "render_plain", "terminal_console"]

# A CI log or a file has no terminal width; rich would assume 80 and split identifiers
# (gate names, check keys, flags) across lines.
LOG_WIDTH = 160
PLAIN_WIDTH = LOG_WIDTH

_STYLE: dict[StatusClass, str] = {
    "pass": "bold green",
    "fail": "bold red",
    "not-measured": "bold yellow",
    "na": "dim",
    "other": "bold magenta",
}


def _safe(text: str, style: str = "") -> Text:
    """Untrusted text as a literal: no markup, no emoji codes, no control characters."""
    return Text(visible(text), style=style)


def _status(status: str) -> Text:
    return _safe(status, _STYLE[status_class(status)])


@dataclass(frozen=True, slots=True)
class _Col:
    header: str
    # Numbers and short status words never wrap; free text takes the remaining width by ratio.
    fixed: bool = False
    ratio: int | None = None
    right: bool = False
    min_width: int | None = None


def _table(title: str, *columns: _Col | str) -> Table:
    specs = [c if isinstance(c, _Col) else _Col(c) for c in columns]
    table = Table(
        title=title or None,
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
        expand=any(c.ratio for c in specs),
    )
    for spec in specs:
        table.add_column(
            spec.header,
            no_wrap=spec.fixed,
            ratio=spec.ratio,
            min_width=spec.min_width
            if spec.min_width is not None
            else (12 if spec.ratio else None),
            justify="right" if spec.right else "left",
            overflow="fold",
        )
    return table


def render_console(report: SuiteReport, console: Console) -> None:
    """Print the whole report: gates, gaps, benchmarks, comparisons, controls, exit, artifacts."""
    console.print(
        Text.assemble(
            ("vitrine suite ", "bold"),
            _safe(report.suite, "bold cyan"),
            "  plan ",
            _safe(report.plan),
            "  mode ",
            _safe(report.mode),
            "  ",
            _safe(report.provenance, "dim"),
        )
    )
    console.print(
        Text(
            f"started {visible(report.started_at)}, took {format_duration(report.duration_s)}",
            style="dim",
        )
    )
    console.print()
    _print_gates(report, console)
    _print_gaps(report, console)
    for bench in report.benchmarks:
        _print_benchmark(bench, console)
        _print_comparisons(bench, console)
    if report.controls is not None:
        _print_controls(report.controls, console)
    for note in report.notes:
        console.print(Text.assemble(("note: ", "dim"), _safe(note)))
    _print_exit(report, console)


def terminal_console(file: TextIO | None = None) -> Console:
    """A console for the operator: the terminal's width, or a log-friendly width when the
    output is not a terminal (CI logs, files), where no identifier is split across lines."""
    stream = file if file is not None else sys.stdout
    if stream.isatty():
        return Console(file=stream)
    return Console(file=stream, width=LOG_WIDTH)


def render_plain(report: SuiteReport) -> str:
    """The same report without colour or box-drawing styles, for log files."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=PLAIN_WIDTH,
        color_system=None,
        force_terminal=False,
        no_color=True,
        emoji=False,
        highlight=False,
        legacy_windows=False,
    )
    render_console(report, console)
    return buffer.getvalue()


def _print_gates(report: SuiteReport, console: Console) -> None:
    table = _table(
        "Gates",
        _Col("Gate", fixed=True),
        _Col("Authority", fixed=True),
        _Col("Status", fixed=True),
        _Col("Label", ratio=1),
        _Col("Reason", ratio=2),
    )
    for gate in report.gates:
        label, qualifier = authority_label(gate.authority)
        authority = Text(label, style="bold" if gate.authority == "gate" else "cyan")
        if gate.authority == "diagnostic":
            authority.append(f"\n{qualifier}", style="dim")
        table.add_row(
            _safe(gate.name),
            authority,
            _status(gate.status),
            _safe(gate.label) if gate.label else Text(DASH, style="dim"),
            _safe("\n".join(why)) if (why := gate_problems(gate)) else Text(DASH, style="dim"),
        )
    console.print(table)
    console.print()


def _print_gaps(report: SuiteReport, console: Console) -> None:
    gaps = unmeasured_items(report)
    if not gaps:
        console.print(Text("Everything required was measured.", style="green"))
        console.print()
        return
    table = _table(
        "Not measured or not applicable",
        _Col("Where"),
        _Col("Item"),
        _Col("Status", fixed=True),
        _Col("Why", ratio=4),
    )
    for gap in gaps:
        table.add_row(_safe(gap.where), _safe(gap.item), _status(gap.status), _safe(gap.reason))
    console.print(table)
    console.print()


def _print_benchmark(bench: BenchmarkSection, console: Console) -> None:
    console.print(
        Text.assemble(
            ("Benchmark ", "bold"),
            _safe(bench.identity, "bold cyan"),
            "  ",
            (short_hash(bench.content_hash), "dim"),
            "  ",
            _safe(bench.role, "italic"),
        )
    )
    arms = ", ".join(
        f"{visible(arm)} (reference)" if arm == bench.reference_arm else visible(arm)
        for arm in bench.arms
    )
    console.print(
        Text(
            f"arms: {arms}; cases: {len(bench.cases)}; "
            f"{len(bench.runs)} runs ({bench.repetitions} per arm)",
            style="dim",
        )
    )
    runs = Table(box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0))
    for run in bench.runs:
        runs.add_row(
            _status(run.verdict),
            _safe(run.arm_id),
            f"#{run.repetition}",
            _safe(run.run_dir or DASH, "dim"),
        )
    console.print(Padding(runs, (0, 0, 0, 2)))
    table = _table(
        "",
        _Col("Arm / check", fixed=True),
        _Col("Census", ratio=1, min_width=15),
        _Col("Passed", fixed=True, right=True),
        _Col("Wilson 95%", fixed=True),
        _Col("Floor", fixed=True),
        _Col("Min p", fixed=True, right=True),
        _Col("Power", fixed=True),
    )
    previous_arm: str | None = None
    for check in bench.checks:
        # The arm heads its group of checks instead of taking a column: at 100 columns the
        # width is better spent on the census.
        if check.arm_id != previous_arm:
            table.add_row(_safe(check.arm_id, "bold"))
            previous_arm = check.arm_id
        floor_style = "yellow" if check.floor.value is None else ""
        table.add_row(
            Text.assemble("  ", _safe(check.check_key)),
            _safe(census_compact(check.census)),
            successes_text(check),
            format_interval(check.wilson_lower, check.wilson_upper),
            _safe(check.floor.display, floor_style),
            format_p(check.min_attainable_p),
            Text(power_state(check), style="yellow" if check.underpowered else ""),
        )
    console.print(table)
    console.print()


def _print_comparisons(bench: BenchmarkSection, console: Console) -> None:
    if not bench.comparisons:
        return
    table = _table(
        f"Reference comparisons ({escape(visible(bench.identity))}, sign test)",
        _Col("Check", fixed=True),
        _Col("Challenger vs reference"),
        _Col("W/L/T", fixed=True, right=True),
        _Col("Excl.", fixed=True, right=True),
        _Col("n", fixed=True, right=True),
        _Col("p", fixed=True, right=True),
        _Col("Holm p", fixed=True, right=True),
        _Col("Min p", fixed=True, right=True),
        _Col("Mean Δ", fixed=True, right=True),
        _Col("Δ pass [95%]", fixed=True, right=True),
        _Col("Flags", ratio=1, min_width=14),
    )
    for comparison in bench.comparisons:
        flags = comparison_flags(comparison)
        table.add_row(
            _safe(comparison.check_key),
            Text.assemble(
                _safe(comparison.challenger_arm),
                ("\nvs ", "dim"),
                _safe(comparison.reference_arm),
            ),
            wlt_text(comparison),
            str(comparison.excluded),
            str(comparison.effective_n),
            format_p(comparison.p_value),
            format_p(comparison.holm_p),
            format_p(comparison.min_attainable_p),
            format_delta(comparison.mean_delta),
            format_effect(comparison.effect),
            Text(", ".join(flags) if flags else DASH, style="yellow" if flags else "dim"),
        )
    console.print(table)
    console.print()


def _print_controls(controls: ControlsSection, console: Console) -> None:
    all_caught = controls.caught == controls.total
    console.print(
        Text.assemble(
            _safe(controls.heading, "bold"),
            ": ",
            (
                f"{controls.caught}/{controls.total} caught",
                "bold green" if all_caught else "bold red",
            ),
        )
    )
    console.print(_safe(controls.note, "dim"))
    missed = [row for row in controls.rows if not row.caught]
    if missed:
        table = _table(
            "Not caught",
            _Col("ID", fixed=True),
            _Col("Control", ratio=1),
            _Col("Scope", fixed=True),
            _Col("Target", ratio=1),
            _Col("Healthy", fixed=True),
            _Col("Perturbed", fixed=True),
            _Col("Restored", fixed=True),
        )
        for row in missed:
            table.add_row(
                _safe(row.id),
                _safe(row.name),
                _safe(row.scope),
                _safe(row.target),
                _status(row.healthy),
                _status(row.broken),
                _status(row.restored),
            )
        console.print(table)
    console.print()


def _print_exit(report: SuiteReport, console: Console) -> None:
    style = _STYLE[exit_class(report.exit_code)]
    console.print(
        Text.assemble(
            ("Exit ", "bold"),
            (f"{report.exit_code} ", style),
            _safe(report.exit_meaning, style),
            ": ",
            _safe(report.exit_reason),
        )
    )
    if report.artifacts:
        console.print("Reports:")
        for key, path in report.artifacts.items():
            console.print(Text.assemble("  ", _safe(key, "dim"), " ", _safe(path)))
