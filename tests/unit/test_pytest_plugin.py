"""The pytest plugin without a service: metrics, judged thresholds, case ids and the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vitrine.judge.base import CriterionVerdict, JudgeResult
from vitrine.pytest_plugin import Metrics, parse_sse, render_html


class FixedJudge:
    def __init__(self, met: list[bool]) -> None:
        self.met = met

    @property
    def judge_id(self) -> str:
        return "fixed"

    async def evaluate(self, input, output, criteria):
        verdicts = tuple(
            CriterionVerdict(c.id, m, "why") for c, m in zip(criteria, self.met, strict=True)
        )
        score = 100.0 * sum(self.met) / len(self.met)
        return JudgeResult(score, "fixed verdicts", verdicts)


def _judged(metrics: Metrics, threshold: float = 0.75):
    return metrics.judged(
        "fit",
        input="q",
        output="a",
        criteria=["one", "two"],
        evaluation_steps=["read", "decide"],
        threshold=threshold,
    )


def test_a_deterministic_metric_that_fails_raises_with_its_detail():
    metrics = Metrics(lambda: None)
    metrics.regex("mentions CHF", "costs CHF 20", r"CHF \d+")
    with pytest.raises(AssertionError, match="GLX"):
        metrics.regex("no sku", "try GLX-0001", r"GLX-\d{4}", present=False)
    assert [m.state for m in metrics.recorded] == ["passed", "failed"]


@pytest.mark.parametrize("threshold", [0.5, 0.649, 1.01])
def test_a_judged_threshold_outside_the_band_is_refused(threshold):
    with pytest.raises(ValueError, match=r"between 0.65 and 1.0"):
        _judged(Metrics(lambda: FixedJudge([True, True])), threshold)


def test_a_judge_score_below_the_threshold_fails_and_above_passes():
    assert _judged(Metrics(lambda: FixedJudge([True, True]))).score == 1.0
    with pytest.raises(AssertionError, match="fit"):
        _judged(Metrics(lambda: FixedJudge([True, False])))


def test_without_a_judge_a_judged_only_test_is_skipped_with_the_reason():
    with pytest.raises(pytest.skip.Exception, match="no judge configured"):
        _judged(Metrics(lambda: None))


def test_without_a_judge_a_judged_metric_after_measured_ones_is_recorded_as_skipped():
    metrics = Metrics(lambda: None)
    metrics.check("structural", True)
    assert _judged(metrics).state == "skipped"


def test_sse_lines_become_events_with_json_data():
    lines = ["event: message.delta", 'data: {"text": "hi"}', "", ": keep-alive", "event: x"]
    lines += ["data: not json", ""]
    events = list(parse_sse(iter(lines)))
    assert [(e.type, e.data) for e in events] == [
        ("message.delta", {"text": "hi"}),
        ("x", {"raw": "not json"}),
    ]


def test_the_html_report_escapes_everything_a_test_wrote():
    hostile = "<script>alert(1)</script>"
    page = render_html(
        {
            "tests": [
                {
                    "nodeid": hostile,
                    "case": "TC-P1-001",
                    "outcome": "failed",
                    "markers": [hostile],
                    "detail": hostile,
                    "metrics": [
                        {
                            "name": hostile,
                            "kind": "regex",
                            "score": 0.0,
                            "threshold": 1.0,
                            "state": "failed",
                            "detail": hostile,
                        }
                    ],
                }
            ],
            "totals": {"passed": 0, "failed": 1, "skipped": 0},
            "api_url": hostile,
            "created": "now",
        }
    )
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<link" not in page and "src=" not in page  # self-contained


def _run(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_cases.py").write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_cases.py", *args],
        cwd=tmp_path,
        env={**os.environ, "VITRINE_JUDGE_PROVIDER": "", "VITRINE_JUDGE_FACTORY": ""},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


CASES = """
import pytest

@pytest.mark.case("TC-P1-003")
def test_one(vitrine_metrics):
    vitrine_metrics.check("ok", True)

@pytest.mark.case("TC-P2-001")
def test_two(vitrine_metrics):
    vitrine_metrics.regex("html <b>", "<b>", "<b>")
    vitrine_metrics.judged("j", input="i", output="o", criteria=["c"],
                           evaluation_steps=["s"], threshold=0.7)

@pytest.mark.case("TC-P2-002")
def test_three(vitrine_metrics):
    vitrine_metrics.judged("j", input="i", output="o", criteria=["c"],
                           evaluation_steps=["s"], threshold=0.7)
"""


def test_a_case_id_selects_its_test_and_the_report_lists_the_metrics(tmp_path):
    selected = _run(tmp_path, CASES, "-k", "TC-P1-003", "-q")
    assert "1 passed, 2 deselected" in selected.stdout, selected.stdout
    report = tmp_path / "report"
    result = _run(tmp_path, CASES, "-q", "-rs", "--vitrine-report", str(report))
    assert "2 passed, 1 skipped" in result.stdout, result.stdout
    assert "no judge configured" in result.stdout
    document = json.loads((report / "behaviour-report.json").read_text())
    by_case = {t["case"]: t for t in document["tests"]}
    assert by_case["TC-P2-001"]["outcome"] == "passed"
    assert [m["state"] for m in by_case["TC-P2-001"]["metrics"]] == ["passed", "skipped"]
    assert by_case["TC-P2-002"]["outcome"] == "skipped"
    assert "&lt;b&gt;" in (report / "behaviour-report.html").read_text()
    assert not [p for p in report.iterdir() if p.name.startswith(".")]  # no temp files left


def test_a_repeated_case_id_is_a_usage_error(tmp_path):
    source = CASES.replace("TC-P2-002", "TC-P1-003")
    result = _run(tmp_path, source, "-q")
    assert result.returncode == 4 and "used twice" in result.stderr + result.stdout
