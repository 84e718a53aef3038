"""The HTML rendering of a suite report: one self-contained, printable page.

The page has inline CSS only and a Content-Security-Policy that forbids scripts and network
loads, so it opens offline from a CI artifact and stays inert even if an escape were missed.
Escaping itself is Jinja2's autoescape: every value from the report is untrusted text.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

from markupsafe import Markup

from vitrine.reports import _formatting as fmt
from vitrine.reports._charts import DifferenceRow, IntervalRow, difference_chart, interval_chart
from vitrine.reports._model import BenchmarkSection, CheckFacts, SuiteReport, TimelineEntry
from vitrine.reports._templates import environment

__all__ = ["render_html"]

TEMPLATE_NAME = "report.html.j2"


@dataclass(frozen=True, slots=True)
class _Bar:
    """Where one timeline node sits on a 0-100 % axis of the suite's wall time."""

    entry: TimelineEntry
    left: float
    width: float


def _timeline_bars(entries: list[TimelineEntry]) -> list[_Bar]:
    span = max((e.started_s + e.duration_s for e in entries), default=0.0)
    if span <= 0:
        return [_Bar(e, 0.0, 0.0) for e in entries]
    bars = []
    for e in entries:
        left = min(100.0, 100.0 * e.started_s / span)
        # A visible sliver for instant nodes, so a completed node never looks like a missing one.
        width = max(0.6, 100.0 * e.duration_s / span) if e.duration_s > 0 else 0.6
        bars.append(_Bar(e, round(left, 2), round(min(width, 100.0 - left), 2)))
    return bars


@dataclass(frozen=True, slots=True)
class _BenchView:
    """A benchmark with its checks grouped by arm and its floor reasons numbered once.

    Every admitted check may carry the same not-derivable reason; printing it in every row
    buries the numbers, so each distinct reason becomes one footnote.
    """

    bench: BenchmarkSection
    arm_groups: list[tuple[str, list[CheckFacts]]]
    floor_notes: list[str]

    def note_number(self, check: CheckFacts) -> int | None:
        reason = check.floor.reason
        return None if not reason else self.floor_notes.index(reason) + 1

    def check_chart(self) -> Markup:
        rows = [
            IntervalRow(
                label=f"{c.arm_id} · {c.check_key}",
                estimate=c.successes / c.measured if c.measured else None,
                lower=c.wilson_lower,
                upper=c.wilson_upper,
                marker=c.floor.value,
                marker_label=f"floor ({c.floor.kind})",
                note=f"{c.successes}/{c.measured}" if c.measured else "",
            )
            for c in self.bench.checks
        ]
        return interval_chart(
            rows,
            "Pass rate per arm and check with its Wilson 95% interval; a dashed tick is the "
            "check's chance floor where one is derivable.",
        )

    def comparison_chart(self) -> Markup:
        rows = [
            DifferenceRow(
                label=f"{c.check_key}: {c.challenger_arm} vs {c.reference_arm}",
                estimate=None if c.effect is None else c.effect.estimate,
                lower=None if c.effect is None else c.effect.lower,
                upper=None if c.effect is None else c.effect.upper,
                note=f"p {fmt.format_p(c.p_value)}",
            )
            for c in self.bench.comparisons
        ]
        return difference_chart(
            rows,
            "Challenger minus reference pass rate over the paired cases, Newcombe 95% "
            "interval: right of zero the challenger passed more often.",
        )


def _bench_view(bench: BenchmarkSection) -> _BenchView:
    groups = [(arm, list(rows)) for arm, rows in groupby(bench.checks, key=lambda c: c.arm_id)]
    notes: list[str] = []
    for check in bench.checks:
        if check.floor.reason and check.floor.reason not in notes:
            notes.append(check.floor.reason)
    return _BenchView(bench, groups, notes)


def render_html(report: SuiteReport) -> str:
    """Render the report as a complete HTML document (a string; the caller writes it)."""
    gates_total = sum(1 for g in report.gates if g.authority == "gate")
    gates_passed = sum(
        1 for g in report.gates if g.authority == "gate" and fmt.status_class(g.status) == "pass"
    )
    template = environment().get_template(TEMPLATE_NAME)
    return template.render(
        report=report,
        exit_class=fmt.exit_class(report.exit_code),
        gates_total=gates_total,
        gates_passed=gates_passed,
        benches=[_bench_view(b) for b in report.benchmarks],
        runs_total=sum(len(b.runs) for b in report.benchmarks),
        gaps=fmt.unmeasured_items(report),
        bars=_timeline_bars(report.timeline),
        exit_glossary=fmt.EXIT_CODE_GLOSSARY,
    )
