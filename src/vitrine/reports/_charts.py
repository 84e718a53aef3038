"""Charts as inline SVG, drawn on the server: interval plots, paired differences, trends.

Every page vitrine writes must open offline under a Content-Security-Policy with no scripts,
so a chart is markup the page carries, never a library loaded from elsewhere. Colours come
from CSS classes (``.chart .ci``, ``.chart .pt`` ...) that each stylesheet maps to its
palette, light and dark; the presentation attributes are the fallback when no stylesheet
applies. A chart is readable without colour: every row carries its numbers as text, every
mark has a ``<title>`` a browser shows on hover, and a value that was not measured is written
as such, never drawn as a zero.

Labels and titles come from check keys, arm names and run ids a user chose: all of it is
escaped here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

__all__ = [
    "DifferenceRow",
    "IntervalRow",
    "TrendMark",
    "difference_chart",
    "interval_chart",
    "trend_chart",
]

_ROW = 22  # pixels per row of an interval or difference plot
_LABEL = 250  # width kept for the row labels
_VALUE = 250  # width kept for the numbers written right of the plot
_PLOT = 320  # width of the plotting area
_TOP = 24  # room for the axis labels above the rows


@dataclass(frozen=True, slots=True)
class IntervalRow:
    """One rate with its interval; ``estimate`` None means nothing was measured."""

    label: str
    estimate: float | None
    lower: float | None
    upper: float | None
    marker: float | None = None  # a floor or threshold the rate is judged against
    marker_label: str = "floor"
    note: str = ""  # e.g. "3/4", written beside the numbers


@dataclass(frozen=True, slots=True)
class DifferenceRow:
    """One paired difference (challenger minus reference) with its interval."""

    label: str
    estimate: float | None
    lower: float | None
    upper: float | None
    note: str = ""


@dataclass(frozen=True, slots=True)
class TrendMark:
    """One run's point of a trend: its rate and interval, and where its page lives."""

    label: str  # the run id, shown on hover
    estimate: float | None
    lower: float | None
    upper: float | None
    href: str | None = None


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _x_scale(lo: float, hi: float) -> Callable[[float], float]:
    def x(value: float) -> float:
        clipped = min(hi, max(lo, value))
        return _LABEL + _PLOT * (clipped - lo) / (hi - lo)

    return x


def _axis(lo: float, hi: float, ticks: Sequence[float], height: int, fmt: str) -> list[str]:
    x = _x_scale(lo, hi)
    parts = []
    for tick in ticks:
        at = _num(x(tick))
        parts.append(
            f'<line class="grid" x1="{at}" y1="{_TOP - 4}" x2="{at}" y2="{height - 4}" '
            'stroke="#d1d9e0" stroke-width="1"></line>'
            f'<text x="{at}" y="{_TOP - 8}" text-anchor="middle" font-size="11" '
            f'fill="#59636e">{format(tick, fmt)}</text>'
        )
    return parts


def _rows_chart(
    rows: Sequence[IntervalRow | DifferenceRow],
    *,
    lo: float,
    hi: float,
    ticks: Sequence[float],
    tick_format: str,
    reference: float | None,
    caption: str,
    value_format: str,
) -> Markup:
    height = _TOP + _ROW * len(rows) + 6
    width = _LABEL + _PLOT + _VALUE
    x = _x_scale(lo, hi)
    parts = _axis(lo, hi, ticks, height, tick_format)
    if reference is not None:
        at = _num(x(reference))
        parts.append(
            f'<line class="zero" x1="{at}" y1="{_TOP - 4}" x2="{at}" y2="{height - 4}" '
            'stroke="#1f2328" stroke-width="1.5"></line>'
        )
    for i, row in enumerate(rows):
        y = _TOP + _ROW * i + _ROW // 2
        # Cut in the middle: the row's distinguishing part (the check) sits at its end.
        label = escape(
            row.label if len(row.label) <= 36 else row.label[:14] + "…" + row.label[-21:]
        )
        parts.append(
            f'<text class="label" x="{_LABEL - 8}" y="{y + 4}" text-anchor="end" '
            f'font-size="11" fill="#1f2328">{label}<title>{escape(row.label)}</title></text>'
        )
        value_x = _LABEL + _PLOT + 10
        if row.estimate is None or row.lower is None or row.upper is None:
            parts.append(
                f'<text class="nm" x="{_num(x((lo + hi) / 2))}" y="{y + 4}" '
                'text-anchor="middle" font-size="11" font-style="italic" fill="#9a6700">'
                "not measured</text>"
                f'<text x="{value_x}" y="{y + 4}" font-size="11" fill="#59636e">'
                f"{escape(row.note) or 'not measured'}</text>"
            )
            continue
        numbers = (
            f"{format(row.estimate, value_format)} [{format(row.lower, value_format)}, "
            f"{format(row.upper, value_format)}]"
        )
        title = escape(f"{row.label}: {numbers}" + (f" ({row.note})" if row.note else ""))
        if isinstance(row, IntervalRow) and row.marker is not None:
            at = _num(x(row.marker))
            parts.append(
                f'<line class="floor" x1="{at}" y1="{y - 8}" x2="{at}" y2="{y + 8}" '
                'stroke="#cf222e" stroke-width="2" stroke-dasharray="3 2">'
                f"<title>{escape(row.marker_label)} {row.marker:.3f}</title></line>"
            )
        parts.append(
            f'<g class="mark"><title>{title}</title>'
            f'<line class="ci" x1="{_num(x(row.lower))}" y1="{y}" x2="{_num(x(row.upper))}" '
            f'y2="{y}" stroke="#0969da" stroke-width="3" stroke-linecap="round"></line>'
            f'<circle class="pt" cx="{_num(x(row.estimate))}" cy="{y}" r="4.5" '
            'fill="#0969da" stroke="#ffffff" stroke-width="1.5"></circle></g>'
            f'<text x="{value_x}" y="{y + 4}" font-size="11" fill="#59636e">'
            f"{escape(numbers)}{escape('  ' + row.note) if row.note else ''}</text>"
        )
    body = "".join(parts)
    return Markup(
        f'<figure class="chart-figure"><svg class="chart" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(caption)}">'
        f'{body}</svg><figcaption class="small muted">{escape(caption)}</figcaption></figure>'
    )


def interval_chart(rows: Sequence[IntervalRow], caption: str) -> Markup:
    """Rates on a 0-1 axis, each with its interval and, where judged, its floor as a dashed
    tick: a dot-and-whisker plot, one row per rate."""
    if not rows:
        return Markup("")
    return _rows_chart(
        rows,
        lo=0.0,
        hi=1.0,
        ticks=(0.0, 0.25, 0.5, 0.75, 1.0),
        tick_format=".2f",
        reference=None,
        caption=caption,
        value_format=".3f",
    )


def difference_chart(rows: Sequence[DifferenceRow], caption: str) -> Markup:
    """Paired differences on a -1..1 axis around a zero line: left of it the challenger is
    worse, right of it better; an interval that crosses zero has not shown a difference."""
    if not rows:
        return Markup("")
    return _rows_chart(
        rows,
        lo=-1.0,
        hi=1.0,
        ticks=(-1.0, -0.5, 0.0, 0.5, 1.0),
        tick_format="+.1f",
        reference=0.0,
        caption=caption,
        value_format="+.3f",
    )


def trend_chart(marks: Sequence[TrendMark], caption: str, *, width: int = 640) -> Markup:
    """Rates run after run: a y axis from 0 to 1 with ticks, the interval band, the line
    through measured points, each point a link to its run with its values on hover. A run
    that measured nothing is a gap in the line and a hollow mark on the axis, never a zero."""
    if not marks:
        return Markup("")
    left, right, top, bottom = 40, 12, 10, 24
    height = 180
    plot_w, plot_h = width - left - right, height - top - bottom
    count = max(1, len(marks) - 1)

    def x(i: int) -> float:
        return left + (plot_w * i / count if len(marks) > 1 else plot_w / 2)

    def y(value: float) -> float:
        return top + plot_h * (1 - min(1.0, max(0.0, value)))

    parts = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line class="grid" x1="{left}" y1="{_num(y(tick))}" x2="{width - right}" '
            f'y2="{_num(y(tick))}" stroke="#d1d9e0" stroke-width="1"></line>'
            f'<text x="{left - 6}" y="{_num(y(tick) + 4)}" text-anchor="end" font-size="11" '
            f'fill="#59636e">{tick:.2f}</text>'
        )
    parts.append(
        f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" '
        'stroke="#59636e"></line>'
        f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{width - right}" '
        f'y2="{top + plot_h}" stroke="#59636e"></line>'
        f'<text x="{left}" y="{height - 6}" font-size="11" fill="#59636e">run 1</text>'
        f'<text x="{width - right}" y="{height - 6}" text-anchor="end" font-size="11" '
        f'fill="#59636e">run {len(marks)} (latest)</text>'
    )
    measured = [(i, m) for i, m in enumerate(marks) if m.estimate is not None]
    banded = [(i, m) for i, m in measured if m.lower is not None and m.upper is not None]
    if banded:
        upper = [f"{_num(x(i))},{_num(y(m.upper or 0.0))}" for i, m in banded]
        lower = [f"{_num(x(i))},{_num(y(m.lower or 0.0))}" for i, m in reversed(banded)]
        parts.append(
            f'<polygon class="band" points="{" ".join(upper + lower)}" fill="#cfe3f7" '
            'fill-opacity="0.7"></polygon>'
        )
    if measured:
        line = " ".join(f"{_num(x(i))},{_num(y(m.estimate or 0.0))}" for i, m in measured)
        parts.append(
            f'<polyline class="line" points="{line}" fill="none" stroke="#0969da" '
            'stroke-width="2"></polyline>'
        )
    for i, mark in enumerate(marks):
        if mark.estimate is None:
            title = f"{mark.label}: nothing measured"
            dot = (
                f'<circle class="gap" cx="{_num(x(i))}" cy="{top + plot_h}" r="4" '
                'fill="none" stroke="#9a6700" stroke-width="1.5"></circle>'
            )
        else:
            interval = (
                ""
                if mark.lower is None or mark.upper is None
                else f" [{mark.lower:.3f}, {mark.upper:.3f}]"
            )
            title = f"{mark.label}: {mark.estimate:.3f}{interval}"
            dot = (
                f'<circle class="pt" cx="{_num(x(i))}" cy="{_num(y(mark.estimate))}" r="4" '
                'fill="#0969da" stroke="#ffffff" stroke-width="1.5"></circle>'
            )
        point = f"<title>{escape(title)}</title>{dot}"
        if mark.href:
            parts.append(f'<a href="{escape(mark.href)}">{point}</a>')
        else:
            parts.append(f"<g>{point}</g>")
    return Markup(
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(caption)}">{"".join(parts)}</svg>'
    )
