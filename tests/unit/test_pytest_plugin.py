"""The pytest plugin without a service: metrics, judged thresholds, case ids and the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vitrine.judge._base import CriterionVerdict, JudgeResult
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


def test_every_metric_is_recorded_after_one_fails_and_the_verdict_names_all_failures():
    metrics = Metrics(lambda: None)
    metrics.regex("no sku", "try GLX-0001", r"GLX-\d{4}", present=False)
    metrics.regex("mentions CHF", "costs CHF 20", r"CHF \d+")
    metrics.check("in budget", False, "GLX-0002 costs CHF 300")
    assert [m.state for m in metrics.recorded] == ["failed", "passed", "failed"]
    with pytest.raises(AssertionError) as failure:
        metrics.settle()
    message = str(failure.value)
    assert "'no sku' failed" in message and "GLX-0002 costs CHF 300" in message
    assert "mentions CHF" not in message


def test_a_test_whose_metrics_all_passed_settles_without_a_verdict():
    metrics = Metrics(lambda: None)
    metrics.check("ok", True)
    metrics.settle()  # returns: nothing to report
    assert [m.state for m in metrics.recorded] == ["passed"]


@pytest.mark.parametrize("threshold", [0.5, 0.649, 1.01])
def test_a_judged_threshold_outside_the_band_is_refused(threshold):
    with pytest.raises(ValueError, match=r"between 0.65 and 1.0"):
        _judged(Metrics(lambda: FixedJudge([True, True])), threshold)


def test_a_judge_score_below_the_threshold_fails_and_above_passes():
    assert _judged(Metrics(lambda: FixedJudge([True, True]))).state == "passed"
    metrics = Metrics(lambda: FixedJudge([True, False]))
    assert _judged(metrics).state == "failed"
    with pytest.raises(AssertionError, match="fit"):
        metrics.settle()


def test_without_a_judge_a_test_with_measured_and_judged_metrics_is_skipped_not_passed():
    metrics = Metrics(lambda: None)
    metrics.check("structural", True)
    assert _judged(metrics).state == "skipped"
    with pytest.raises(pytest.skip.Exception, match="'fit' not measured: no judge configured"):
        metrics.settle()


def test_with_unmeasured_fail_an_unmeasured_judged_metric_fails_the_test():
    metrics = Metrics(lambda: None)
    _judged(metrics)
    with pytest.raises(pytest.fail.Exception, match="not measured"):
        metrics.settle("fail")


def test_a_failed_metric_outweighs_an_unmeasured_one():
    metrics = Metrics(lambda: None)
    metrics.check("structural", False, "broken")
    _judged(metrics)
    with pytest.raises(AssertionError, match="broken"):
        metrics.settle()


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
                    "layers": ["front-desk", hostile],
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
    assert "front-desk → &lt;script&gt;" in page  # which layer answered each turn, escaped
    assert "<link" not in page and "src=" not in page  # self-contained


def _run(
    tmp_path: Path, source: str, *args: str, unmeasured: str = ""
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_cases.py").write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_cases.py", *args],
        cwd=tmp_path,
        env={
            **os.environ,
            "VITRINE_JUDGE_PROVIDER": "",
            "PROMPTFOO_GRADING_PROVIDER": "",
            "VITRINE_JUDGE_FACTORY": "",
            "VITRINE_UNMEASURED": unmeasured,
        },
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
    assert "1 passed, 2 skipped" in result.stdout, result.stdout
    assert "no judge configured" in result.stdout
    document = json.loads((report / "behaviour-report.json").read_text())
    by_case = {t["case"]: t for t in document["tests"]}
    assert by_case["TC-P2-001"]["outcome"] == "skipped"
    assert [m["state"] for m in by_case["TC-P2-001"]["metrics"]] == ["passed", "skipped"]
    assert "'j' not measured" in by_case["TC-P2-001"]["detail"]
    assert by_case["TC-P2-002"]["outcome"] == "skipped"
    assert "&lt;b&gt;" in (report / "behaviour-report.html").read_text()
    assert not [p for p in report.iterdir() if p.name.startswith(".")]  # no temp files left


def test_a_repeated_case_id_is_a_usage_error(tmp_path):
    source = CASES.replace("TC-P2-002", "TC-P1-003")
    result = _run(tmp_path, source, "-q")
    assert result.returncode == 4 and "used twice" in result.stderr + result.stdout


@pytest.mark.parametrize("how", ["option", "environment"])
def test_unmeasured_judged_metrics_fail_when_asked_by_option_or_environment(tmp_path, how):
    if how == "option":
        result = _run(tmp_path, CASES, "-q", "--vitrine-unmeasured=fail")
    else:
        result = _run(tmp_path, CASES, "-q", unmeasured="fail")
    assert "2 failed, 1 passed" in result.stdout, result.stdout
    assert "not measured" in result.stdout


def test_an_unknown_unmeasured_setting_is_a_usage_error(tmp_path):
    result = _run(tmp_path, CASES, "-q", unmeasured="maybe")
    assert result.returncode == 4 and "VITRINE_UNMEASURED" in result.stderr + result.stdout


FAILING = """
import pytest

@pytest.mark.case("TC-P1-001")
def test_many(vitrine_metrics):
    vitrine_metrics.check("first", False, "first went wrong")
    vitrine_metrics.check("second", True)
    vitrine_metrics.regex("third", "no price here", r"CHF \\d+")
"""


def test_a_failing_test_records_every_metric_and_reports_their_messages(tmp_path):
    report = tmp_path / "report"
    result = _run(tmp_path, FAILING, "-q", "--vitrine-report", str(report))
    assert "1 failed" in result.stdout, result.stdout
    assert "first went wrong" in result.stdout and "'third' failed" in result.stdout
    (test,) = json.loads((report / "behaviour-report.json").read_text())["tests"]
    assert [m["state"] for m in test["metrics"]] == ["failed", "passed", "failed"]
    assert test["detail"].startswith("metric 'first' failed: first went wrong; metric 'third'")


def test_the_behaviour_report_is_sealed_so_an_edited_verdict_is_not_listed(tmp_path):
    from vitrine._board.catalog import Catalog

    store = tmp_path / "store"
    report = store / "reports" / "behaviour-1" / "behaviour-report.json"
    assert _run(tmp_path, FAILING, "-q", "--vitrine-report", str(report.parent)).returncode == 1
    assert [h.verdict for h in Catalog(store, persist=False).headers()] == ["fail"]
    report.write_text(report.read_text().replace('"exit_status": 1', '"exit_status": 0'))
    assert [h.verdict for h in Catalog(store, persist=False).headers()] == ["unverified"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("openai", ("openai", None)),
        ("openai:gpt-4o-mini", ("openai", "gpt-4o-mini")),
        ("openai:chat:gpt-4o-mini", ("openai", "gpt-4o-mini")),
        ("azureopenai:chat:shop-judge", ("azure", "shop-judge")),
        ("anthropic:messages:claude-3-5-haiku-latest", ("anthropic", "claude-3-5-haiku-latest")),
    ],
)
def test_the_specifications_grading_provider_configures_the_judge(monkeypatch, value, expected):
    from vitrine.pytest_plugin import judge_provider_setting

    monkeypatch.delenv("VITRINE_JUDGE_PROVIDER", raising=False)
    monkeypatch.setenv("PROMPTFOO_GRADING_PROVIDER", value)
    assert judge_provider_setting() == ("PROMPTFOO_GRADING_PROVIDER", *expected)
    # vitrine's own name wins when both are set.
    monkeypatch.setenv("VITRINE_JUDGE_PROVIDER", "local")
    assert judge_provider_setting() == ("VITRINE_JUDGE_PROVIDER", "local", None)


def test_an_alias_that_names_no_known_provider_is_a_reason_not_a_judge(monkeypatch):
    from vitrine.pytest_plugin import load_judge

    monkeypatch.delenv("VITRINE_JUDGE_PROVIDER", raising=False)
    monkeypatch.delenv("VITRINE_JUDGE_FACTORY", raising=False)
    monkeypatch.setenv("PROMPTFOO_GRADING_PROVIDER", "vertex:gemini-pro")
    reason = load_judge()
    assert isinstance(reason, str) and reason.startswith("PROMPTFOO_GRADING_PROVIDER='vertex")
    monkeypatch.setenv("PROMPTFOO_GRADING_PROVIDER", "openai:gpt-4o-mini")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    reason = load_judge()
    # Read and configured, then found unready: the alias is not ignored.
    assert isinstance(reason, str) and "the judge is not ready" in reason
    assert "OPENAI_API_KEY" in reason
