"""``vitrine mutants`` against a toy calculator suite (tests/fixtures/mutants/toy_suite.py).

Each worker is a real subprocess, so the whole catalogue runs once per module and the other
tests pick one or two mutants with ``--only``.
"""

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from vitrine import _cli as cli
from vitrine.mutants import Mutant, MutantCatalogue, run_mutants
from vitrine.mutants._command import main
from vitrine.mutants._html import render_matrix_html
from vitrine.mutants._job import PLAN_REPORT_NAME, RESULT_NAME, WorkerJob
from vitrine.mutants._report import MatrixSchemaError, load_matrix
from vitrine.mutants._runner import HEALTHY_FOLDER, _run_worker

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mutants"
SUITE = "toy_suite:SUITE"
EVERY_BUT_THE_HANG = [
    "add-off-by-one",
    "greet-shouts",
    "greet-drops-name",
    "add-crashes",
    "plant-raises",
]


@pytest.fixture(autouse=True)
def toy_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.delenv("VITRINE_HOME", raising=False)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(FIXTURES))
        lines: list[str] = []
        matrix = asyncio.run(
            run_mutants(SUITE, only=EVERY_BUT_THE_HANG, jobs=2, output=store, progress=lines.append)
        )
    return matrix, store, lines


def _row(matrix, mutant_id):
    return next(row for row in matrix.mutants if row.id == mutant_id)


def _session(matrix) -> Path:
    return Path(matrix.artifacts["json"]).parent


def test_a_gate_that_turns_red_kills_its_mutant_and_is_named_as_killer(full_run):
    matrix, _, _ = full_run
    row = _row(matrix, "add-off-by-one")
    assert row.outcome == "killed"
    assert row.exit_code == 1
    assert [(k.killer, k.healthy, k.mutant) for k in row.killers] == [("gate:sums", "PASS", "FAIL")]
    assert row.expected_and_seen == ["gate:sums"]
    assert row.expected_not_seen == row.seen_unexpectedly == []
    assert matrix.kills("add-off-by-one", "gate:sums")


def test_a_defect_no_gate_observes_survives_with_its_reason(full_run):
    matrix, _, _ = full_run
    row = _row(matrix, "greet-shouts")
    assert row.outcome == "survived"
    assert row.exit_code == 0
    assert row.killers == []
    assert row.reason == "no gate, check, control or test changed status"
    assert row.expected_not_seen == ["sums"]  # a bare name matches any kind; it was not seen
    assert matrix.must_kill_survivors == ["greet-shouts"]


def test_a_failing_service_test_kills_a_mutant_the_plan_misses(full_run):
    matrix, _, _ = full_run
    row = _row(matrix, "greet-drops-name")
    assert row.exit_code == 0
    assert row.outcome == "killed"
    (change,) = row.killers
    assert change.killer.startswith("test:")
    assert change.killer.endswith("probe_service.py::test_the_greeting_names_the_customer")
    assert (change.healthy, change.mutant) == ("passed", "failed")
    assert change.aliases == ["TC-P1-001"]
    assert row.expected_and_seen == ["TC-P1-001"]  # a case id names the test that declares it
    assert matrix.baseline.statuses[change.killer] == "passed"


def test_a_test_that_fails_on_the_healthy_subject_is_noted_and_never_a_killer(full_run):
    matrix, _, lines = full_run
    french = (
        "test:"
        + str(Path("tests/fixtures/mutants/probe_service.py"))
        + ("::test_the_greeting_is_in_french")
    )
    assert matrix.baseline.statuses[french] == "failed"
    assert matrix.notes == [
        f"1 test(s) fail on the healthy subject and cannot kill any mutant: {french}"
    ]
    assert f"mutants: note: {matrix.notes[0]}" in lines
    assert all(french not in row.killer_names for row in matrix.mutants)


def test_exit_3_is_not_measured_and_a_plant_that_raises_is_errored(full_run):
    matrix, _, _ = full_run
    crashed = _row(matrix, "add-crashes")
    assert (crashed.outcome, crashed.exit_code) == ("not measured", 3)
    raised = _row(matrix, "plant-raises")
    assert raised.outcome == "errored"
    assert raised.exit_code is None
    assert "planting the mutant raised RuntimeError" in raised.reason


def test_the_score_counts_kills_over_all_mutants_and_errors_decide_the_exit(full_run):
    matrix, _, lines = full_run
    assert (matrix.killed, matrix.total) == (2, 5)
    assert matrix.score == pytest.approx(0.4)
    assert matrix.score_text == "2/5 killed (40.0%), minimum 50%"
    assert matrix.exit_code == 4
    assert "plant-raises" in matrix.exit_reason
    assert matrix.killers == sorted(
        {"gate:sums", _row(matrix, "greet-drops-name").killers[0].killer}
    )
    assert lines[0].startswith("mutants: healthy baseline exit 0")
    finished = [line for line in lines if line.startswith("mutants: [")]
    assert len(finished) == 5


def test_each_mutant_runs_in_its_own_process_and_store_folder(full_run):
    matrix, store, _ = full_run
    session = _session(matrix)
    assert session.parent == store / "mutants"
    planned = [HEALTHY_FOLDER, "add-off-by-one", "greet-shouts", "greet-drops-name", "add-crashes"]
    pids = set()
    for folder in planned:
        assert (session / folder / RESULT_NAME).is_file()
        notes = json.loads((session / folder / PLAN_REPORT_NAME).read_text())["notes"]
        pids.add(notes[0])
    assert len(pids) == len(planned)
    assert f"pid {os.getpid()}" not in pids
    assert not (session / "plant-raises" / PLAN_REPORT_NAME).exists()


def test_a_planted_mutant_does_not_leak_into_the_next_one(tmp_path, capsys):
    code = main(
        [
            "--suite",
            SUITE,
            "--only",
            "add-off-by-one,greet-shouts",
            "--jobs",
            "1",
            "--output",
            str(tmp_path),
        ]
    )
    assert code == 1
    (session,) = (tmp_path / "mutants").iterdir()
    matrix = load_matrix(session / "matrix.json")
    assert _row(matrix, "add-off-by-one").outcome == "killed"
    assert _row(matrix, "greet-shouts").outcome == "survived"  # its sums gate passed again
    out, err = capsys.readouterr()
    assert "must-kill mutants survived: greet-shouts" in out
    assert "[2/2]" in err


def test_the_matrix_round_trips_through_its_model(full_run):
    matrix, _, _ = full_run
    assert load_matrix(_session(matrix) / "matrix.json") == matrix


def test_an_unknown_schema_version_is_refused(tmp_path, full_run):
    matrix, _, _ = full_run
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps({**json.loads(matrix.model_dump_json()), "schema_version": 99}))
    with pytest.raises(MatrixSchemaError, match="schema version 99"):
        load_matrix(path)


def test_the_html_escapes_a_script_in_a_mutant_description(full_run):
    matrix, _, _ = full_run
    page = (_session(matrix) / "matrix.html").read_text()
    assert "<script>" not in page
    assert "&lt;script&gt;shouts&lt;/script&gt;" in page
    assert "default-src 'none'" in page
    assert page == render_matrix_html(matrix)


def test_the_command_passes_when_every_must_kill_mutant_dies(tmp_path, capsys):
    json_copy, html_copy = tmp_path / "out" / "m.json", tmp_path / "m.html"
    code = cli.main(
        [
            "mutants",
            "--suite",
            SUITE,
            "--only",
            "add-off-by-one",
            "--output",
            str(tmp_path / "store"),
            "--json-report",
            str(json_copy),
            "--html-report",
            str(html_copy),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "1/1 killed (100.0%), minimum 50%" in out
    assert "mutants: [1/1] add-off-by-one killed: gate:sums" in err
    assert load_matrix(json_copy).exit_code == 0
    assert "add-off-by-one" in html_copy.read_text()


def test_a_score_below_the_minimum_exits_1(tmp_path, capsys):
    assert main(["--suite", SUITE, "--only", "greet-shouts", "--output", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "0/1 killed (0.0%), minimum 50%" in out
    assert "no gate, check, control or test changed status" in out


def test_a_red_healthy_baseline_exits_4_and_writes_no_matrix(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TOY_FAIL_HEALTHY", "1")
    assert main(["--suite", SUITE, "--only", "add-off-by-one", "--output", str(tmp_path)]) == 4
    err = capsys.readouterr().err
    assert "the healthy subject does not pass" in err
    assert "a kill matrix would be meaningless" in err
    assert "gate:sums FAIL" in err
    assert not list(tmp_path.rglob("matrix.json"))


def test_a_worker_past_its_timeout_is_errored_never_killed(tmp_path):
    job = WorkerJob(suite=SUITE, plan="toy-offline", mutant="add-hangs", store=str(tmp_path))
    finished = asyncio.run(_run_worker(job, 1.0))
    assert finished.result.exit_code is None
    assert finished.result.error == "the worker timed out after 1 s"
    assert finished.duration_s < 10


def test_list_prints_the_catalogue_without_running(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["mutants", "--suite", SUITE, "--list"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("6 mutants, plan the suite's default plan, minimum score 50%")
    assert "  add-hangs         calculator.add (may survive): add never returns\n" in out
    assert "expected killers: gate:sums" in out
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--suite", "toy_suite:BARE"], "declares no mutant catalogue"),
        (["--suite", SUITE, "--only", "nope"], "--only names unknown mutants nope; known: add-"),
        (["--suite", SUITE, "--jobs", "0"], "must be at least 1, got 0"),
        (["--suite", SUITE, "--timeout", "-1"], "must be a positive number of seconds"),
        (["--suite", SUITE, "--list", "--jobs", "2"], "--list runs nothing"),
        (["--suite", "no_such_module:SUITE"], "no module named 'no_such_module'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_arguments_exit_2_with_one_sentence(argv, message, tmp_path, capsys):
    assert main([*argv, "--output", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "mutants").exists()


def test_a_report_path_that_is_a_directory_is_refused_before_running(tmp_path, capsys):
    code = main(["--suite", SUITE, "--output", str(tmp_path), "--json-report", str(tmp_path)])
    assert code == 2
    assert "is a directory" in capsys.readouterr().err
    assert not (tmp_path / "mutants").exists()


def test_the_public_api_exports_the_mutant_names():
    import vitrine.mutants

    assert vitrine.mutants.Mutant is Mutant
    assert vitrine.mutants.MutantCatalogue is MutantCatalogue
    assert vitrine.mutants.run_mutants is run_mutants
    assert "mutants" in cli.SUBCOMMANDS
    assert sys.modules["vitrine.mutants._runner"]


def _report(gate_status: str, successes: int, caught: bool):
    from vitrine.reports._model import (
        BenchmarkSection,
        CheckFacts,
        ControlRow,
        ControlsSection,
        FloorFacts,
        GateRow,
        SuiteReport,
    )

    facts = CheckFacts(
        arm_id="agent",
        check_key="grounded",
        authority="gate",
        census={},
        census_text="",
        successes=successes,
        measured=4,
        mean_value=None,
        wilson_lower=None,
        wilson_upper=None,
        floor=FloorFacts(kind="none", value=None, reason=None, display=""),
        floor_p=None,
        min_attainable_p=None,
        underpowered=False,
    )
    bench = BenchmarkSection(
        identity="shop-v1",
        content_hash="h",
        role="",
        reference_arm=None,
        arms=["agent"],
        repetitions=1,
        cases=[],
        runs=[],
        checks=[facts],
        comparisons=[],
    )
    control = ControlRow(
        id="NC-01",
        scope="s",
        target="t",
        name="n",
        category="c",
        tranche="1",
        healthy="PASS",
        broken="FAIL",
        restored="PASS",
        caught=caught,
    )
    return SuiteReport(
        suite="s",
        plan="p",
        mode="suite",
        provenance="offline",
        started_at="",
        duration_s=0,
        exit_code=0,
        exit_meaning="",
        exit_reason="",
        benchmarks=[bench],
        gates=[
            GateRow(
                name="G1",
                authority="gate",
                status=gate_status,
                state="measured",
                value=None,
                exit_code=0,
            )
        ],
        controls=ControlsSection(total=1, caught=int(caught), rows=[control]),
    )


def test_every_gate_check_and_control_of_a_report_becomes_a_killer_name():
    from vitrine.mutants._classify import killer_changes
    from vitrine.mutants._statuses import report_statuses

    healthy = report_statuses(_report("PASS", 4, caught=True))
    assert healthy == {
        "gate:G1": "PASS",
        "check:shop-v1/agent/grounded": "4/4 passed",
        "control:NC-01": "caught",
    }
    broken = report_statuses(_report("PASS", 3, caught=False))
    assert [(k.killer, k.healthy, k.mutant) for k in killer_changes(healthy, broken)] == [
        ("check:shop-v1/agent/grounded", "4/4 passed", "3/4 passed"),
        ("control:NC-01", "caught", "not caught"),
    ]


def test_a_test_kills_only_by_failing_where_it_passed():
    from vitrine.mutants._classify import killer_changes

    healthy = {"test:a": "passed", "test:b": "passed", "test:c": "failed", "test:d": "passed"}
    mutant = {"test:a": "failed", "test:b": "skipped", "test:c": "failed", "test:d": "error"}
    assert [k.killer for k in killer_changes(healthy, mutant)] == ["test:a", "test:d"]
