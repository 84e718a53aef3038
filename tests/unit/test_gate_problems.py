"""Why a gate is not a pass is shown beside it: on the console, in the HTML report, on the board."""

from __future__ import annotations

import vitrine
from vitrine import Case, Evaluation, SubjectResponse
from vitrine.reports import GateRow, SuiteReport, render_html
from vitrine.reports._console import render_plain
from vitrine.reports._formatting import gate_problems


def _row(status: str, **fields: object) -> GateRow:
    declared: dict[str, object] = {"state": "measured", "value": 0.0, **fields}
    return GateRow(
        name="catalogue-shape",
        authority="gate",
        status=status,
        exit_code=1,
        **declared,  # type: ignore[arg-type]
    )


SHAPE = _row(
    "FAIL",
    label="7 schema problem(s)",
    evidence={"problems": [f"GLX-100{i}: compat tag names GLX-1001" for i in range(7)]},
)


def _report(*gates: GateRow) -> SuiteReport:
    return SuiteReport(
        suite="toy",
        plan="p",
        mode="suite",
        provenance="test",
        started_at="2026-01-01T00:00:00Z",
        duration_s=0.1,
        exit_code=1,
        exit_meaning="measured failure",
        exit_reason="a gate failed",
        gates=list(gates),
        benchmarks=[],
    )


def test_the_first_problems_and_how_many_more_are_the_reason():
    assert gate_problems(SHAPE) == [
        "GLX-1000: compat tag names GLX-1001",
        "GLX-1001: compat tag names GLX-1001",
        "GLX-1002: compat tag names GLX-1001",
        "and 4 more",
    ]
    absent = _row("NOT MEASURED", reason="the catalogue could not be read", value=None)
    assert gate_problems(absent) == ["the catalogue could not be read"]
    assert gate_problems(_row("PASS", evidence={"problems": ["stale"]})) == []


def test_the_console_and_the_html_report_show_the_first_problem():
    report = _report(SHAPE)
    assert "GLX-1000: compat tag names GLX-1001" in render_plain(report)
    page = render_html(report)
    assert "GLX-1000: compat tag names GLX-1001" in page and "and 4 more" in page


def echo(case: Case) -> SubjectResponse:
    return SubjectResponse(answer=f"n={case.input}" if case.input % 2 else "")


def says_its_number(case: Case, response: SubjectResponse) -> bool:
    return f"n={case.input}" in (response.answer or "")


def test_an_evaluation_gate_names_the_trials_that_failed(tmp_path):
    evaluation = Evaluation(
        "odd",
        cases=[Case(f"c{i}", i) for i in range(4)],
        checks=[says_its_number],
        arms={"echo": echo},
        repetitions=2,
    )
    result = evaluation.run()
    (gate,) = result.report().gates
    assert gate.evidence["problem_count"] == 4
    assert gate.evidence["problems"][0] == "case c0, repetition 1: failed"
    page = vitrine.reports.render_html(result.report())
    assert "case c0, repetition 1: failed" in page


def test_the_board_run_page_shows_the_first_problem(tmp_path):
    from vitrine._board.app import Board

    evaluation = Evaluation(
        "odd",
        cases=[Case(f"c{i}", i) for i in range(4)],
        checks=[says_its_number],
        arms={"echo": echo},
    )
    evaluation.run(store=tmp_path).write_reports(tmp_path / "reports" / "odd")
    board = Board(tmp_path, persist_cache=False)
    (offline,) = [h for h in board.catalog.headers() if h.kind == "offline"]
    reply = board.get(f"/run/{offline.ref}", {})
    assert reply.status == 200
    assert "case c0, repetition 1: failed" in reply.body.decode()


def _controls_report(caught: bool) -> SuiteReport:
    from vitrine.reports import ControlRow, ControlsSection

    row = ControlRow(
        id="TOY-01",
        scope="production-observation",
        target="answers",
        name="silenced",
        category="policy",
        tranche="v1",
        healthy="PASS",
        broken="FAIL" if caught else "PASS",
        restored="PASS",
        caught=caught,
    )
    controls = ControlsSection(total=1, caught=int(caught), rows=[row])
    return _report(SHAPE).model_copy(update={"controls": controls})


def test_a_caught_controls_red_run_is_drawn_as_expected_and_a_missed_one_as_an_alarm():
    caught = render_html(_controls_report(True))
    cells = caught[caught.index('id="controls"') :]
    assert "FAIL, as planted" in cells
    assert 's-fail"><span aria-hidden="true">✗</span> FAIL<' not in cells
    missed = render_html(_controls_report(False))
    assert "MISSED" in missed and "as planted" not in missed


def test_the_board_run_page_shows_the_suite_timeline(tmp_path):
    from vitrine._board.app import Board
    from vitrine.reports import write_reports
    from vitrine.reports._model import TimelineEntry

    nodes = ["gate:catalogue-shape", "predicate:catalogued-sku", "controls", "terminal"]
    timeline = [
        TimelineEntry(
            node=n, kind=n.partition(":")[0], status="COMPLETED", started_s=i, duration_s=1
        )
        for i, n in enumerate(nodes)
    ]
    report = _report(SHAPE).model_copy(update={"timeline": timeline})
    write_reports(report, tmp_path / "reports" / "suite")
    board = Board(tmp_path, persist_cache=False)
    (offline,) = [h for h in board.catalog.headers() if h.kind == "offline"]
    page = board.get(f"/run/{offline.ref}", {}).body.decode()
    assert "Timeline (4 nodes" in page
    assert all(f'<td class="mono">{node}</td>' in page for node in nodes)
