"""Comparisons shown together carry Holm and BH p-values and a paired effect with its interval.

The arms are real subjects with known pass patterns, so the adjusted values and the effect are
checked against numbers worked out here from the cases, not read back from the report.
"""

from __future__ import annotations

import io

import pytest
from rich.console import Console

import vitrine
from vitrine.stats import benjamini_hochberg, holm

CASES = [vitrine.Case(f"c{i:02d}", i) for i in range(20)]


def _short(case: vitrine.Case, response: vitrine.SubjectResponse) -> bool:
    return len(response.answer or "") <= 3


def _even(case: vitrine.Case, response: vitrine.SubjectResponse) -> bool:
    return (response.answer or "").startswith("e")


def _arm(short_below: int, even_below: int):
    def subject(case: vitrine.Case) -> vitrine.SubjectResponse:
        i = int(case.input)
        short = "ok" if i < short_below else "too long"
        return vitrine.SubjectResponse(answer=("e" if i < even_below else "o") + short)

    return subject


@pytest.fixture(scope="module")
def result():
    evaluation = vitrine.Evaluation(
        "multiplicity",
        cases=CASES,
        checks=[_short, _even],
        # The reference passes `short` on 10 cases and `even` on 10; the challengers on more.
        arms={"reference": _arm(10, 10), "better": _arm(18, 14), "same": _arm(10, 11)},
        reference="reference",
        retry=vitrine.RetryPolicy(retries=0),
    )
    return evaluation.run(controls=False, mutants=False)


def test_every_comparison_carries_holm_and_bh_over_the_whole_family(result):
    (bench,) = result.report().benchmarks
    raw = [c.p_value for c in bench.comparisons]
    assert len(raw) == 4
    assert [c.holm_p for c in bench.comparisons] == holm(raw)
    assert [c.bh_p for c in bench.comparisons] == benjamini_hochberg(raw)
    assert all(c.holm_p >= c.p_value for c in bench.comparisons)


def test_the_effect_is_the_paired_difference_of_pass_rates_with_an_interval(result):
    (bench,) = result.report().benchmarks
    by = {(c.challenger_arm, c.check_key.strip("_-")): c for c in bench.comparisons}
    better_short = by[("better", "short")].effect
    assert better_short is not None
    assert better_short.estimate == pytest.approx((18 - 10) / 20)
    assert better_short.lower < 0.4 < better_short.upper
    assert better_short.lower > 0.0  # eight wins and no loss: clearly above zero
    same_even = by[("same", "even")].effect
    assert same_even is not None and same_even.estimate == pytest.approx(1 / 20)
    assert same_even.lower < 0.0 < same_even.upper


def test_the_console_and_json_show_them_beside_the_raw_p(result):
    out = io.StringIO()
    result.runs.print_summary(console=Console(file=out, width=240, color_system=None))
    text = out.getvalue()
    assert "Holm p" in text and "Δ pass [95%]" in text
    assert "+0.40 [" in text
    data = result.report().model_dump(mode="json")
    comparison = data["benchmarks"][0]["comparisons"][0]
    assert {"holm_p", "bh_p", "effect"} <= set(comparison)


def test_the_html_report_shows_them_too(result, tmp_path):
    written = result.write_reports(tmp_path)
    html = written["html"].read_text(encoding="utf-8")
    assert ">Holm p</abbr>" in html and ">Δ pass [95%]</abbr>" in html
    assert "+0.40 [+0.14, +0.60]" in html
