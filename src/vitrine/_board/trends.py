"""Pass rate and its Wilson band per check, run after run, for one definition.

Each point is one sealed run: its ``summary.json`` holds the successes over the measured
denominator per check, and the interval is :func:`vitrine.stats.wilson_interval` of those two
counts. A run with nothing measured for a check is a gap in its line, never a zero.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from vitrine._board.catalog import RunHeader
from vitrine._stats import wilson_interval
from vitrine.reports._charts import TrendMark, trend_chart
from vitrine.store._files import read_json

__all__ = ["MAX_POINTS", "TrendPoint", "TrendSeries", "trends_for"]

MAX_POINTS = 200


@dataclass(frozen=True, slots=True)
class TrendPoint:
    run_id: str
    arm: str
    timestamp: str
    commit: str | None
    successes: int
    measured: int
    rate: float | None
    lower: float | None
    upper: float | None


@dataclass(frozen=True, slots=True)
class TrendSeries:
    """One check of one arm: arms are different systems, so their lines are never pooled."""

    check_key: str
    arm: str
    points: tuple[TrendPoint, ...]

    def chart(self, href: Callable[[str], str]) -> Markup:
        """The series as an SVG trend: axes, band, line, and a linked point per run."""
        marks = [
            TrendMark(
                label=f"{p.run_id} ({p.timestamp[:19]}): {p.successes}/{p.measured}",
                estimate=p.rate,
                lower=p.lower,
                upper=p.upper,
                href=href("/run/benchmark/" + p.run_id),
            )
            for p in self.points
        ]
        return trend_chart(marks, f"pass rate of {self.check_key}, arm {self.arm}, run by run")


def trends_for(root: Path, headers: list[RunHeader], definition_hash: str) -> list[TrendSeries]:
    """The latest runs of one definition, oldest first, one series per check."""
    runs = [h for h in headers if h.kind == "benchmark" and h.definition_hash == definition_hash]
    runs = sorted(runs, key=lambda h: (h.timestamp, h.key))[-MAX_POINTS:]
    series: dict[tuple[str, str], list[TrendPoint]] = {}
    for header in runs:
        run_dir = root / header.location
        try:
            summary = read_json(run_dir / "summary.json")
            manifest = read_json(run_dir / "manifest.json")
        except (OSError, ValueError):
            continue  # a run that vanished or is damaged has no point; its page says why
        commit = manifest.get("git_commit")
        for check in summary.get("checks") or ():
            successes, measured = int(check.get("successes") or 0), int(check.get("measured") or 0)
            interval = wilson_interval(successes, measured)
            series.setdefault((str(check.get("key")), header.arm), []).append(
                TrendPoint(
                    run_id=header.key,
                    arm=header.arm,
                    timestamp=header.timestamp,
                    commit=commit if isinstance(commit, str) else None,
                    successes=successes,
                    measured=measured,
                    rate=successes / measured if measured else None,
                    lower=None if interval is None else interval.lower,
                    upper=None if interval is None else interval.upper,
                )
            )
    return [TrendSeries(key, arm, tuple(points)) for (key, arm), points in sorted(series.items())]
