"""Suite report renderings: untrusted text stays text, gaps stay visible, writes are atomic."""

from __future__ import annotations

import io
import json
import os
import re

import pytest
from rich.console import Console

from vitrine.reports._console import render_console, render_plain
from vitrine.reports._formatting import format_p, status_class, unmeasured_items, visible
from vitrine.reports._html import render_html
from vitrine.reports._model import (
    BenchmarkSection,
    CheckFacts,
    ComparisonFacts,
    ControlRow,
    ControlsSection,
    FloorFacts,
    GateRow,
    RunRef,
    SuiteReport,
    TimelineEntry,
)
from vitrine.reports._writer import ReportSchemaError, load_report, report_json, write_reports

HOSTILE = "answer: <script>alert(1)</script> and [red]markup[/red]"
NOT_DERIVABLE = FloorFacts(
    kind="not-derivable",
    value=None,
    reason="deterministic predicate: no random-draw population",
    display="NOT DERIVABLE",
)


def _census(measured: int, na: int = 0, nm: int = 0) -> dict[str, int]:
    return {
        "measured": measured,
        "not_applicable": na,
        "not_measured": nm,
        "total": measured + na + nm,
    }


def _census_text(measured: int, na: int = 0, nm: int = 0) -> str:
    return f"{measured} of {measured + na + nm} measured, {na} n/a, {nm} not measured"


def _check(arm: str, key: str, successes: int, measured: int, *, na: int = 0, nm: int = 0):
    return CheckFacts(
        arm_id=arm,
        check_key=key,
        authority="gate",
        census=_census(measured, na, nm),
        census_text=_census_text(measured, na, nm),
        successes=successes,
        measured=measured,
        mean_value=successes / measured if measured else None,
        wilson_lower=(0.342 if successes == measured else 0.0) if measured else None,
        wilson_upper=(1.0 if successes == measured else 0.658) if measured else None,
        floor=NOT_DERIVABLE,
        floor_p=None,
        min_attainable_p=0.5**measured if measured else None,
        underpowered=True,
    )


def sample_report() -> SuiteReport:
    """A suite report with one of everything a reader must be able to tell apart."""
    runs = [
        RunRef(
            run_id=f"run-{arm}-{rep}",
            arm_id=arm,
            repetition=rep,
            run_dir=f"runs/vitrine-recommendation/{arm}/rep-{rep}",
            verdict="FAIL" if arm == "degraded-empty-answer" else "PASS",
            census=_census(10),
        )
        for arm in ("scripted-agent", "workflow", "degraded-empty-answer")
        for rep in (1, 2)
    ]
    checks = [
        _check("scripted-agent", "non-empty-answer", 2, 2),
        _check("scripted-agent", "tool-journal", 2, 2),
        _check("workflow", "non-empty-answer", 2, 2),
        _check("workflow", "tool-journal", 0, 0, na=2),
        _check("degraded-empty-answer", "non-empty-answer", 0, 2),
        _check("degraded-empty-answer", "tool-journal", 2, 2),
    ]
    comparisons = [
        ComparisonFacts(
            check_key="non-empty-answer",
            reference_arm="scripted-agent",
            challenger_arm="degraded-empty-answer",
            collapse="all",
            cases=2,
            total_repetitions=8,
            mean_repetitions_per_case=2.0,
            wins=0,
            losses=2,
            ties=0,
            excluded=0,
            effective_n=2,
            p_value=0.5,
            min_attainable_p=0.5,
            mean_delta=-1.0,
            underpowered_by_construction=True,
            undecidable=False,
        ),
        ComparisonFacts(
            check_key="non-empty-answer",
            reference_arm="scripted-agent",
            challenger_arm="workflow",
            collapse="all",
            cases=2,
            total_repetitions=8,
            mean_repetitions_per_case=2.0,
            wins=0,
            losses=0,
            ties=2,
            excluded=0,
            effective_n=0,
            p_value=1.0,
            min_attainable_p=1.0,
            mean_delta=0.0,
            underpowered_by_construction=True,
            undecidable=True,
        ),
    ]
    bench = BenchmarkSection(
        identity="vitrine-recommendation@1.0.0",
        content_hash="sha256:" + "ab12" * 16,
        role="canonical recommendation benchmark",
        reference_arm="scripted-agent",
        arms=["scripted-agent", "workflow", "degraded-empty-answer"],
        repetitions=2,
        cases=["nadia-cross-category", "sofia-budget"],
        runs=runs,
        checks=checks,
        comparisons=comparisons,
    )
    controls = ControlsSection(
        total=3,
        caught=2,
        rows=[
            ControlRow(
                id="NC-01",
                scope="production-observation",
                target="catalogue count gate",
                name="drop one SKU",
                category="catalogue",
                tranche="E02A",
                healthy="PASS",
                broken="FAIL",
                restored="PASS",
                caught=True,
            ),
            ControlRow(
                id="NC-02",
                scope="boundary-calibration-fixture",
                target="answer screen renderer",
                name="strip the canary",
                category="screen",
                tranche="E02B",
                healthy="PASS",
                broken="FAIL",
                restored="PASS",
                caught=True,
            ),
            ControlRow(
                id="NC-03",
                scope="production-observation",
                target="recall judge threshold",
                name="forget one constraint",
                category="memory",
                tranche="E02C",
                healthy="PASS",
                broken="PASS",
                restored="PASS",
                caught=False,
                detail="perturbed run stayed green",
            ),
        ],
    )
    return SuiteReport(
        suite="vitrine_shop",
        plan="offline-suite",
        mode="all",
        provenance="offline-deterministic",
        started_at="2025-01-01T10:00:00+00:00",
        duration_s=12.345,
        exit_code=3,
        exit_meaning="not measured",
        exit_reason="gate tool-journal was not measured: the journal collector failed",
        gates=[
            GateRow(
                name="catalogue-integrity",
                authority="gate",
                status="PASS",
                state="measured",
                value=1.0,
                label="99 of 99 products",
                exit_code=0,
            ),
            GateRow(
                name="screened-response",
                authority="gate",
                status="FAIL",
                state="measured",
                value=0.0,
                label="model answer",
                reason=HOSTILE,
                exit_code=1,
            ),
            GateRow(
                name="tool-journal",
                authority="gate",
                status="NOT MEASURED",
                state="not_measured",
                value=None,
                reason="the journal collector failed",
                exit_code=3,
            ),
            GateRow(
                name="matched-quality",
                authority="diagnostic",
                status="PASS",
                state="measured",
                value=1.0,
                label="matched k=1",
                exit_code=None,
            ),
        ],
        benchmarks=[bench],
        controls=controls,
        timeline=[
            TimelineEntry(
                node="benchmark", kind="persist", status="COMPLETED", started_s=0.0, duration_s=4.2
            ),
            TimelineEntry(
                node="gate:tool-journal",
                kind="gate",
                status="FAILED",
                started_s=4.2,
                duration_s=0.8,
                detail="collector raised",
            ),
            TimelineEntry(
                node="controls",
                kind="diagnostic",
                status="SKIPPED",
                started_s=5.0,
                duration_s=0.0,
                detail="suite ended before this node ran",
            ),
        ],
        notes=["offline provenance: no external model was called"],
    )


# --- HTML -----------------------------------------------------------------------------------


def test_html_escapes_a_script_in_a_gate_reason():
    page = render_html(sample_report())
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page.lower()  # the page itself runs no script at all


def test_html_shows_not_derivable_floors_and_never_a_fabricated_half():
    page = render_html(sample_report())
    assert "NOT DERIVABLE" in page
    assert "0.500 floor" not in page


def test_html_has_the_gates_comparisons_controls_and_timeline_tables():
    page = render_html(sample_report())
    assert "<caption>Gates and diagnostics" in page
    assert "no exit authority" in page
    assert "Reference comparisons — vitrine-recommendation@1.0.0" in page
    assert "0/2/0" in page and "0.500" in page  # the 0/2/0 sign test reads p = 0.5
    assert "undecidable" in page and "underpowered" in page
    assert "Registered control mutations" in page
    assert "boundary-calibration-fixture" in page and "recall judge threshold" in page
    assert "MISSED" in page
    assert "<caption>Timeline" in page
    assert "runs/vitrine-recommendation/workflow/rep-2" in page
    assert "sha256:ab12ab12ab12" in page


def test_html_lists_what_was_not_measured_and_why():
    page = render_html(sample_report())
    section = page.split('id="gaps"', 1)[1].split("</section>", 1)[0]
    assert "tool-journal" in section and "the journal collector failed" in section
    assert "workflow × tool-journal" in section and "0 of 2 measured, 2 n/a" in section
    assert "controls" in section  # the skipped timeline node


def test_html_says_so_when_everything_was_measured():
    report = sample_report()
    clean = report.model_copy(
        update={
            "gates": [g for g in report.gates if g.status == "PASS"],
            "benchmarks": [],
            "timeline": [],
        }
    )
    assert "Everything required was measured" in render_html(clean)


def test_html_is_self_contained():
    page = render_html(sample_report())
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<(link|script|img|iframe)\b", page)
    assert "Content-Security-Policy" in page


def test_html_makes_control_characters_visible():
    report = sample_report()
    gate = report.gates[0].model_copy(update={"label": "bell\x07 esc\x1b[2J"})
    page = render_html(report.model_copy(update={"gates": [gate]}))
    assert "\x1b" not in page and "\x07" not in page
    assert "esc\\x1b[2J" in page


# --- console --------------------------------------------------------------------------------


def _console_text(report: SuiteReport) -> str:
    console = Console(
        record=True, width=100, force_terminal=True, color_system="truecolor", file=io.StringIO()
    )
    render_console(report, console)
    return console.export_text()


def test_console_prints_markup_in_untrusted_text_literally():
    text = _console_text(sample_report())
    # Unescaped, rich would consume the tags and print only "markup" (in red).
    assert "[red]markup[/red]" in text
    assert "<script>alert(1)</script>" in text


def test_console_shows_every_section_key_value():
    text = render_plain(sample_report())
    flat = re.sub(r"\s+", " ", text)
    for expected in (
        "Gates",
        "DIAGNOSTIC",
        "no exit authority",
        "NOT MEASURED",
        "NOT DERIVABLE",
        "0/2/0",
        "0.500",
        "undecidable",
        "Registered control mutations: 2/3 caught",
        "NC-03",
        "production-observation",
        "recall judge",  # the target, in its own column next to the scope
        "Exit 3 not measured",
        "sha256:ab12ab12ab12",
        "runs/vitrine-recommendation/degraded-empty-answer/rep-1",
    ):
        assert expected in flat, expected
    assert "NC-01" not in flat  # caught controls are summarised, not listed


def test_plain_text_fits_a_log_line_without_splitting_identifiers_or_colour():
    from vitrine.reports._console import LOG_WIDTH

    report = sample_report()
    text = render_plain(report)
    assert "\x1b[" not in text
    assert max(len(line) for line in text.splitlines()) <= LOG_WIDTH
    names = [gate.name for gate in report.gates] + ["underpowered", "undecidable"]
    for name in names:
        assert any(name in line for line in text.splitlines()), name


def test_console_lists_artifacts_after_the_exit_code():
    report = sample_report().model_copy(
        update={"artifacts": {"json": "out/report.json", "html": "out/report.html"}}
    )
    text = render_plain(report)
    assert text.index("Exit 3") < text.index("Reports:") < text.index("out/report.html")


def test_console_neutralises_terminal_escape_sequences():
    report = sample_report()
    gate = report.gates[0].model_copy(update={"reason": "\x1b[2Jcleared"})
    text = render_plain(report.model_copy(update={"gates": [gate]}))
    assert "\x1b" not in text and "\\x1b[2Jcleared" in text


# --- shared formatting ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "—"), (0.5, "0.500"), (1.0, "1.000"), (0.0001234, "1.2e-04"), (0.0, "0.000")],
)
def test_format_p(value, expected):
    assert format_p(value) == expected


def test_status_classes_keep_absence_apart_from_failure():
    assert status_class("FAIL") == "fail"
    assert status_class("NOT MEASURED") == "not-measured"
    assert status_class("N/A") == "na"
    assert status_class("PASS") == "pass"
    assert visible("ok\tline\n") == "ok\tline\n"


def test_unmeasured_items_cover_gates_checks_and_skipped_nodes():
    gaps = unmeasured_items(sample_report())
    assert [(g.where, g.status) for g in gaps] == [
        ("gate", "NOT MEASURED"),
        ("vitrine-recommendation@1.0.0", "N/A"),
        ("timeline", "SKIPPED"),
    ]


# --- writer ---------------------------------------------------------------------------------


def test_write_reports_writes_json_and_html_and_explicit_copies(tmp_path):
    out = tmp_path / "suite"
    written = write_reports(
        sample_report(),
        out,
        json_path=tmp_path / "ci" / "nested" / "r.json",
        html_path=tmp_path / "ci" / "r.html",
    )
    assert set(written) == {"json", "html", "json_report", "html_report"}
    for path in written.values():
        assert path.is_file()
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["schema_version"] == 1
    assert list(data) == sorted(data)
    assert (out / "report.json").read_text(encoding="utf-8").startswith('{\n  "artifacts"')
    assert data["artifacts"]["html"] == (out / "report.html").as_posix()
    assert (tmp_path / "ci" / "nested" / "r.json").read_bytes() == (
        out / "report.json"
    ).read_bytes()
    assert "&lt;script&gt;" in (tmp_path / "ci" / "r.html").read_text(encoding="utf-8")
    assert load_report(out / "report.json") == load_report(written["json_report"])
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json"]


def test_a_failed_replace_leaves_the_previous_report_intact(tmp_path, monkeypatch):
    write_reports(sample_report(), tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    changed = sample_report().model_copy(update={"exit_code": 0, "exit_meaning": "pass"})

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match=r"cannot write the JSON report to .*report\.json"):
        write_reports(changed, tmp_path)
    monkeypatch.undo()

    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # and no temp files


def test_an_explicit_path_that_is_a_directory_is_refused_by_name(tmp_path):
    target = tmp_path / "already-a-dir"
    target.mkdir()
    with pytest.raises(IsADirectoryError, match="already-a-dir: it is a directory"):
        write_reports(sample_report(), tmp_path / "out", html_path=target)
    assert not (tmp_path / "out").exists()  # refused before anything was written


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into a read-only directory")
def test_an_unwritable_explicit_path_names_the_path(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(OSError, match=r"cannot write the JSON report to .*locked"):
            write_reports(sample_report(), tmp_path / "out", json_path=locked / "r.json")
    finally:
        locked.chmod(0o700)


def test_an_explicit_path_under_a_file_names_the_path(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(OSError, match=r"cannot write the JSON report to .*not-a-dir/r\.json"):
        write_reports(sample_report(), tmp_path / "out", json_path=blocker / "r.json")


def test_load_report_refuses_an_unknown_schema_version(tmp_path):
    path = tmp_path / "report.json"
    data = json.loads(report_json(sample_report()))
    data["schema_version"] = 99
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ReportSchemaError, match="schema_version 99; this vitrine reads"):
        load_report(path)
    del data["schema_version"]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ReportSchemaError, match="has no schema_version"):
        load_report(path)


def test_load_report_round_trips_and_names_a_malformed_field(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(report_json(sample_report()), encoding="utf-8")
    assert load_report(path) == sample_report()
    data = json.loads(path.read_text(encoding="utf-8"))
    data["gates"][0]["authority"] = "boss"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ReportSchemaError, match=r"gates\.0\.authority"):
        load_report(path)


def test_a_report_with_nothing_in_it_still_renders_and_says_so():
    empty = SuiteReport(
        suite="s",
        plan="p",
        mode="m",
        provenance="offline-deterministic",
        started_at="2025-01-01T00:00:00+00:00",
        duration_s=0.0,
        exit_code=4,
        exit_meaning="infrastructure failure",
        exit_reason="the store could not be opened",
        gates=[],
        benchmarks=[],
    )
    page = render_html(empty)
    assert "No gates were evaluated." in page and "Exit 4" in page
    assert "Exit 4 infrastructure failure" in render_plain(empty)
