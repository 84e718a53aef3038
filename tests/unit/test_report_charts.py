"""Charts drawn on the server, and a passing report that a reader takes in at a glance.

An interval plot never draws a not-measured rate as a zero, a difference plot has its zero
line, a trend links every point to its run, every label is escaped; a passing report folds
its detail and a failing one shows it open.
"""

from __future__ import annotations

import re

from test_reports import sample_report

from vitrine.reports._charts import (
    DifferenceRow,
    IntervalRow,
    TrendMark,
    difference_chart,
    interval_chart,
    trend_chart,
)
from vitrine.reports._html import render_html


def test_an_interval_plot_draws_each_rate_with_its_interval_and_floor():
    svg = interval_chart(
        [
            IntervalRow("good · grounded", 0.75, 0.3, 0.95, marker=0.2, note="3/4"),
            IntervalRow("bad · grounded", 0.0, 0.0, 0.6, note="0/4"),
        ],
        "rates",
    )
    assert svg.count('<circle class="pt"') == 2
    assert svg.count('class="floor"') == 1  # only the row whose floor is derivable
    assert "0.750 [0.300, 0.950]" in svg and "3/4" in svg
    # 0.75 sits three quarters along the 320 px plot that starts at 250 px.
    assert 'cx="490"' in svg


def test_a_rate_that_was_not_measured_is_written_never_drawn_as_zero():
    svg = interval_chart([IntervalRow("arm · check", None, None, None)], "rates")
    assert "not measured" in svg
    assert "<circle" not in svg and 'class="ci"' not in svg


def test_a_difference_plot_has_a_zero_line_and_signed_numbers():
    svg = difference_chart([DifferenceRow("c: b vs a", -0.5, -0.9, -0.1, note="p 0.031")], "Δ")
    assert svg.count('class="zero"') == 1
    assert "-0.500 [-0.900, -0.100]" in svg and "p 0.031" in svg
    assert 'cx="330"' in svg  # -0.5 is a quarter along the -1..1 axis


def test_labels_and_titles_are_escaped():
    svg = interval_chart([IntervalRow("<script>x</script>", 0.5, 0.1, 0.9)], "<b>caption</b>")
    assert "<script>" not in svg and "<b>" not in svg
    assert "&lt;script&gt;" in svg


def test_a_trend_links_every_point_and_shows_a_gap_as_a_hollow_mark():
    svg = trend_chart(
        [
            TrendMark("run-1", 0.5, 0.2, 0.8, href="/run/benchmark/run-1"),
            TrendMark("run-2", None, None, None, href="/run/benchmark/run-2"),
            TrendMark("run-3", 1.0, 0.6, 1.0, href="/run/benchmark/run-3"),
        ],
        "trend",
    )
    assert svg.count("<a href=") == 3
    assert svg.count('class="axis"') == 2
    assert 'class="gap"' in svg and "run-2: nothing measured" in svg
    line = re.search(r'<polyline class="line" points="([^"]+)"', svg)
    assert line is not None and len(line.group(1).split()) == 2  # the gap is not a zero


def _opening_tags(html: str, css_class: str) -> list[str]:
    return re.findall(rf'<details class="fold {css_class}"[^>]*>', html)


def test_a_passing_report_folds_its_detail_and_a_failing_one_shows_it():
    failing = sample_report()
    assert failing.exit_code != 0
    passing = failing.model_copy(update={"exit_code": 0})
    folded, shown = render_html(passing), render_html(failing)
    assert _opening_tags(folded, "bench-detail") == ['<details class="fold bench-detail">']
    assert _opening_tags(shown, "bench-detail") == ['<details class="fold bench-detail" open>']
    assert "<svg" in folded  # the charts are there, folded with their tables


def test_controls_fold_only_when_every_one_was_caught_and_misses_come_first():
    report = sample_report()
    controls = report.controls
    assert controls is not None and controls.caught < controls.total
    html = render_html(report)
    section = html[html.index('id="controls"') :]
    assert re.search(r'<details class="fold" open>\s*<summary>1 of 3 controls not caught', section)
    first_row = section[section.index("<tbody>") :].split("</tr>")[0]
    assert "MISSED" in first_row
    caught_rows = [row.model_copy(update={"caught": True}) for row in controls.rows]
    all_caught = controls.model_copy(update={"caught": controls.total, "rows": caught_rows})
    html = render_html(report.model_copy(update={"controls": all_caught}))
    section = html[html.index('id="controls"') :]
    assert re.search(r'<details class="fold">\s*<summary>All 3 controls caught', section)
