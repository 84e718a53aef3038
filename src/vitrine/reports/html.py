"""The HTML rendering of a suite report: one self-contained, printable page.

The page has inline CSS only and a Content-Security-Policy that forbids scripts and network
loads, so it opens offline from a CI artifact and stays inert even if an escape were missed.
Escaping itself is Jinja2's autoescape: every value from the report is untrusted text.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from itertools import groupby
from typing import Any

from jinja2 import BaseLoader, Environment, StrictUndefined, TemplateNotFound, select_autoescape
from markupsafe import Markup

from vitrine.reports import formatting as fmt
from vitrine.reports.model import BenchmarkSection, CheckFacts, SuiteReport, TimelineEntry

__all__ = ["PackageLoader", "render_html", "visible_finalize"]

TEMPLATE_NAME = "report.html.j2"

# Colour is never the only signal: each status badge also carries a symbol and its word.
_SYMBOL: dict[fmt.StatusClass, str] = {
    "pass": "✓",
    "fail": "✗",
    "not-measured": "?",
    "na": "–",
    "other": "!",
}


class PackageLoader(BaseLoader):
    """Load a package's ``templates/`` through importlib.resources (works from a wheel/zip)."""

    def __init__(self, package: str = "vitrine.reports") -> None:
        self.package = package

    def get_source(self, environment: Environment, template: str) -> tuple[str, str, Any]:
        resource = files(self.package).joinpath("templates", template)
        if not resource.is_file():
            raise TemplateNotFound(template)
        return resource.read_text(encoding="utf-8"), template, lambda: True


def visible_finalize(value: Any) -> Any:
    # Runs on every {{ }} value before autoescape: control characters become visible text.
    if isinstance(value, str) and not isinstance(value, Markup):
        return fmt.visible(value)
    return value


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader(),
        autoescape=select_autoescape(
            enabled_extensions=("html", "html.j2", "j2"), default_for_string=True, default=True
        ),
        undefined=StrictUndefined,
        finalize=visible_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        p=fmt.format_p,
        rate=fmt.format_rate,
        delta=fmt.format_delta,
        duration=fmt.format_duration,
        offset=fmt.format_offset,
        short_hash=fmt.short_hash,
    )
    env.globals.update(
        status_class=fmt.status_class,
        status_symbol=lambda status: _SYMBOL[fmt.status_class(status)],
        authority_label=fmt.authority_label,
        interval=fmt.format_interval,
        census_compact=fmt.census_compact,
        successes=fmt.successes_text,
        wlt=fmt.wlt_text,
        power_state=fmt.power_state,
        comparison_flags=fmt.comparison_flags,
        DASH=fmt.DASH,
    )
    return env


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
    template = _environment().get_template(TEMPLATE_NAME)
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
