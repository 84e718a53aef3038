"""The offline suite end to end: exit codes, persisted runs, comparisons, reports, modes."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from vitrine import Arm, Case, ExitCode, SubjectResponse
from vitrine._board.app import Board
from vitrine._cli import main
from vitrine.store import RunStore, load_run
from vitrine_shop.evals.evidence import ShopUnderTest
from vitrine_shop.evals.offline import OFFLINE_NODES, replace_catalogue, run_offline_suite

DATA = Path(__file__).resolve().parents[2] / "shop" / "src" / "vitrine_shop" / "data"


def _report(root: Path) -> dict:
    reports = sorted((root / "reports").glob("offline-*/report.json"))
    assert reports, "no report was written"
    return json.loads(reports[-1].read_text())


def _comparisons(report: dict, challenger: str) -> list[dict]:
    canonical = report["benchmarks"][0]
    assert canonical["identity"] == "vitrine-recommendation@1.0.0"
    return [c for c in canonical["comparisons"] if c["challenger_arm"] == challenger]


def test_all_exits_zero_and_persists_six_canonical_runs_of_ten_observations(tmp_path, capsys):
    code = main(["--all", "--output", str(tmp_path)])
    assert code == 0, capsys.readouterr()
    report = _report(tmp_path)
    assert report["exit_code"] == 0
    canonical = report["benchmarks"][0]
    assert len(canonical["runs"]) == 6
    for ref in canonical["runs"]:
        run = load_run(tmp_path / ref["run_dir"])
        assert len(run.rows) == 10
        assert run.complete
    assert sorted({r["arm_id"] for r in canonical["runs"]}) == [
        "degraded-empty-answer",
        "scripted-agent",
        "zero-model-workflow",
    ]
    assert len(canonical["comparisons"]) == 10
    for check in canonical["checks"]:
        assert check["floor"]["display"] == "NOT DERIVABLE"


def test_reference_comparisons_have_the_documented_values(tmp_path):
    assert main(["--all", "--output", str(tmp_path)]) == 0
    report = _report(tmp_path)
    degraded = _comparisons(report, "degraded-empty-answer")
    workflow = _comparisons(report, "zero-model-workflow")
    assert len(degraded) == len(workflow) == 5
    for c in degraded:
        assert (c["wins"], c["losses"], c["ties"]) == (0, 2, 0)
        assert c["p_value"] == pytest.approx(0.5)
        assert c["min_attainable_p"] == pytest.approx(0.5)
        assert c["mean_delta"] == pytest.approx(-1.0)
        assert c["underpowered_by_construction"]
    for c in workflow:
        assert (c["ties"], c["effective_n"]) == (2, 0)
        assert c["p_value"] == 1.0
        assert c["undecidable"]


def test_gates_have_authority_and_the_diagnostic_has_none(tmp_path):
    assert main(["--all", "--output", str(tmp_path)]) == 0
    gates = {g["name"]: g for g in _report(tmp_path)["gates"]}
    assert list(gates) == [
        "catalogue-shape",
        "workflow-shape",
        "injection",
        "recall",
        "honesty",
        "invariants",
        "matched-quality",
    ]
    assert all(g["status"] == "PASS" for g in gates.values())
    assert gates["matched-quality"]["authority"] == "diagnostic"
    assert gates["matched-quality"]["exit_code"] is None
    assert gates["catalogue-shape"]["label"] == (
        "products 99/99, personas 14/14, tools 15/15, 0 schema problem(s)"
    )
    assert gates["workflow-shape"]["label"] == "6 recorded runs, 0 route/census/contract problem(s)"


def test_the_canonical_predicates_are_labelled_diagnostic_wherever_they_are_shown(tmp_path):
    # They are scored, never gated: the degraded arm fails all five and the suite exits 0.
    assert main(["--all", "--output", str(tmp_path)]) == 0
    canonical = _report(tmp_path)["benchmarks"][0]
    assert {c["authority"] for c in canonical["checks"]} == {"diagnostic"}
    for ref in canonical["runs"]:
        manifest = json.loads((tmp_path / ref["run_dir"] / "manifest.json").read_text())
        assert {c["authority"] for c in manifest["checks"]} == {"diagnostic"}
    board = Board(tmp_path, persist_cache=False)
    headers = board.catalog.headers()
    offline = next(h for h in headers if h.kind == "offline")
    page = board.get(f"/run/{offline.ref}", {}).body.decode()
    checks = page.split('<table class="checks">', 1)[1].split("</table>", 1)[0]
    rows = [r for r in checks.split("<tr>") if 'class="mono">catalogued-sku<' in r]
    assert len(rows) == 3  # one per arm
    assert all("<td>DIAGNOSTIC</td>" in r and "GATE" not in r for r in rows)
    run = next(r for r in canonical["runs"] if r["arm_id"] == "scripted-agent")
    page = board.get(f"/run/benchmark/{run['run_id']}", {}).body.decode()
    row = page.split('class="mono">catalogued-sku</td>', 1)[1].split("</tr>", 1)[0]
    assert "DIAGNOSTIC" in row and "no exit authority" in row and "GATE" not in row


async def test_timeline_leaves_no_node_active(tmp_path):
    run = await run_offline_suite(RunStore(tmp_path))
    entries = run.timeline.entries()
    # The protocol's 14 nodes plus the invariants gate (MIGRATION.md).
    assert len(entries) == len(OFFLINE_NODES) == 15
    assert not run.timeline.active()
    assert {e.status for e in entries} <= {"COMPLETED", "FAILED", "SKIPPED"}
    controls = next(e for e in entries if e.node == "controls")
    assert (controls.status, controls.detail) == ("COMPLETED", "43/43 caught")


async def test_a_failing_diagnostic_alone_never_changes_the_exit_code(tmp_path):
    shipped = ShopUnderTest.shipped()
    degraded_judged = replace(shipped, judged_arms=shipped.ablated().judged_arms)
    # The controls would rightly refuse this shop (NC-20's healthy arm is red); this test is
    # about the diagnostic's authority alone.
    run = await run_offline_suite(RunStore(tmp_path), degraded_judged, with_controls=False)
    statuses = {g.name: g.status for g in run.gates}
    assert statuses["matched-quality"] == "FAIL"
    assert run.exit_code is ExitCode.PASS


async def _raising_subject(case: Case) -> SubjectResponse:
    raise RuntimeError("recall instrument broke")


async def test_missing_measurement_outranks_a_measured_failure(tmp_path):
    shipped = ShopUnderTest.shipped()
    planted = replace(
        replace_catalogue(shipped), recall_target=Arm("healthy-memory", _raising_subject)
    )
    run = await run_offline_suite(RunStore(tmp_path), planted)
    statuses = {g.name: g.status for g in run.gates}
    assert statuses["catalogue-shape"] == "FAIL"
    assert statuses["recall"] == "NOT MEASURED"
    assert run.exit_code is ExitCode.NOT_MEASURED
    assert "recall" in run.exit_reason


def test_an_unwritable_store_is_an_infrastructure_failure(tmp_path, capsys):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the store's parent should be")
    code = main(["--all", "--output", str(blocker / "store")])
    out = capsys.readouterr().out
    assert code == ExitCode.INFRASTRUCTURE
    assert "infrastructure failure" in out


def test_a_store_path_that_is_a_file_is_refused_before_anything_runs(tmp_path, capsys):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the store should be")
    code = main(["--all", "--output", str(blocker)])
    assert code == ExitCode.INVALID_ARGUMENTS
    assert "exists and is not a directory" in capsys.readouterr().err


def test_self_test_passes(tmp_path, capsys):
    code = main(["--self-test", "--output", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "every registration, census, journal, healthy and ablated expectation held" in out


def test_catalogue_ablation_fails_the_gate_and_changes_nothing(tmp_path, capsys):
    before = hashlib.sha256((DATA / "catalogue.json").read_bytes()).hexdigest()
    code = main(["--ablate-catalogue", "--output", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "98 products against the independently authored 99" in out
    gates = {g["name"]: g for g in _report(tmp_path)["gates"]}
    assert gates["catalogue-shape"]["status"] == "FAIL"
    assert gates["catalogue-shape"]["label"].startswith("products 98/99")
    assert hashlib.sha256((DATA / "catalogue.json").read_bytes()).hexdigest() == before
    assert main(["--all", "--output", str(tmp_path)]) == 0


def test_report_switches_write_the_reports_where_asked(tmp_path):
    json_path = tmp_path / "out" / "r.json"
    html_path = tmp_path / "out" / "r.html"
    code = main(
        [
            "--all",
            "--output",
            str(tmp_path / "store"),
            "--json-report",
            str(json_path),
            "--html-report",
            str(html_path),
        ]
    )
    assert code == 0
    assert json.loads(json_path.read_text())["schema_version"] == 1
    html = html_path.read_text()
    assert '<h2 id="gates">Gates</h2>' in html
    assert "vitrine-recommendation@1.0.0" in html


async def test_a_model_answer_with_a_script_tag_is_shown_as_text(tmp_path):
    from vitrine.reports._html import render_html
    from vitrine_shop.evals.offline import build_report

    run = await run_offline_suite(RunStore(tmp_path))
    answer = {"answer_preview": "<script>alert(1)</script>", "tool_calls": []}
    run.canonical_runs[0] = replace(run.canonical_runs[0], responses={"nadia": answer})
    html = render_html(build_report(run, mode="suite"))
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
