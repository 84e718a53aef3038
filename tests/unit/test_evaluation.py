"""vitrine.Evaluation: one declaration, run from Python or from the command line, one decision."""

from __future__ import annotations

import ast
import contextlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import vitrine
from vitrine import Case, Evaluation, ExitCode, Observation, RetryPolicy, SubjectResponse
from vitrine.checks import DefinitionError, FloorKind
from vitrine.controls import ControlRegistry, ControlSpec, ScopeClass
from vitrine.mutants import Mutant, MutantCatalogue

CASES = [Case(f"c{i}", {"n": i}) for i in range(4)]
BROKEN = {"on": False}


def echo(case: Case) -> SubjectResponse:
    n = case.input["n"]
    return SubjectResponse(answer=f"n={n + 1 if BROKEN['on'] else n}")


def silent(case: Case) -> SubjectResponse:
    return SubjectResponse(answer="")


def says_its_number(case: Case, response: SubjectResponse) -> bool:
    return f"n={case.input['n']}" in (response.answer or "")


def answers(case: Case, response: SubjectResponse) -> Observation:
    said = bool(response.answer)
    return Observation.measured(float(said), said)


@contextlib.contextmanager
def off_by_one() -> Iterator[None]:
    BROKEN["on"] = True
    try:
        yield
    finally:
        BROKEN["on"] = False


@contextlib.contextmanager
def harmless() -> Iterator[None]:
    yield


def _evaluation(**changes: object) -> Evaluation:
    declared: dict[str, object] = {
        "name": "toy",
        "cases": CASES,
        "checks": [says_its_number, answers],
        "arms": {"echo": echo, "silent": silent},
        "reference": "echo",
    }
    declared.update(changes)
    return Evaluation(**declared)  # type: ignore[arg-type]


def test_the_reference_arm_is_gated_and_the_challenger_compared():
    result = _evaluation().run()
    assert result.gated == ("echo",)
    assert result.exit_code is ExitCode.PASS
    assert result.controls_ran is False and result.mutants_ran is False
    (comparison,) = [c for c in result.runs.comparisons if c.check_key == "answers"]
    assert comparison.challenger_arm == "silent" and comparison.losses == 4


def test_a_plain_check_that_fails_fails_the_gated_arm():
    result = _evaluation(gated=["echo", "silent"]).run()
    assert result.exit_code is ExitCode.MEASURED_FAILURE


def test_a_check_returning_none_is_not_measured_never_a_pass():
    def looks_away(case: Case, response: SubjectResponse) -> None:
        return None

    result = _evaluation(checks=[looks_away]).run()
    assert result.exit_code is ExitCode.NOT_MEASURED
    (row,) = {row.observation.reason for run in result.runs.runs for row in run.rows}
    assert "measured nothing" in row


def test_a_check_returning_something_else_is_refused_in_its_trial():
    def counts(case: Case, response: SubjectResponse) -> int:
        return 3

    result = _evaluation(checks=[counts]).run()
    assert result.exit_code is not ExitCode.PASS


def test_a_plain_check_is_admitted_with_a_floor_stated_not_derivable():
    (check, _) = _evaluation().definition().checks
    assert check.floor.kind is FloorKind.NOT_DERIVABLE
    assert "no chance rate" in (check.floor.reason or "")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"name": " "}, "non-blank name"),
        ({"arms": {}}, "no arms"),
        ({"reference": "nobody"}, "reference 'nobody'"),
        ({"gated": ["nobody"]}, "gated must name"),
        ({"repetitions": 0}, "at least 1"),
        ({"checks": [lambda case, response: True]}, "needs a name"),
        ({"checks": ["says"]}, "a check is a vitrine.Check"),
        ({"cases": []}, "no cases"),
        ({"retry": 3}, "RetryPolicy"),
    ],
)
def test_a_malformed_evaluation_is_refused_when_declared(changes, message):
    with pytest.raises(DefinitionError, match=message):
        _evaluation(**changes)


def test_every_refusal_is_a_vitrine_error():
    with pytest.raises(vitrine.VitrineError):
        _evaluation(arms={})


def test_a_mutant_the_gates_see_is_killed_and_a_harmless_one_fails_the_decision():
    killed = MutantCatalogue([Mutant("off-by-one", "echo", "answers n+1", off_by_one)])
    result = _evaluation(mutants=killed).run()
    assert result.mutants_ran
    ((outcome),) = result.mutants
    assert outcome.killed and outcome.exit_code is ExitCode.MEASURED_FAILURE
    assert result.exit_code is ExitCode.PASS
    assert BROKEN["on"] is False  # the mutant was removed again

    blind = MutantCatalogue([Mutant("harmless", "echo", "changes nothing", harmless)])
    result = _evaluation(mutants=blind).run()
    assert result.mutants[0].survived_unexpectedly
    assert result.exit_code is ExitCode.MEASURED_FAILURE
    assert "survived although they must be killed: harmless" in result.reasons()[-1]


def _registry(perturb: object) -> ControlRegistry:
    registry = ControlRegistry()
    spec = ControlSpec(
        id="TOY-01",
        scope=ScopeClass.PRODUCTION_OBSERVATION,
        name="silenced",
        category="policy",
        target="answers",
        mutation="an empty answer",
        producer="the echo subject",
        evaluator="answers",
        tranche="v1",
    )
    registry.register(
        spec,
        observe=lambda: echo(CASES[0]),
        perturb=perturb,  # type: ignore[arg-type]
        evaluate=lambda response: answers(CASES[0], response),
    )
    return registry


def test_a_control_that_is_not_caught_fails_the_decision():
    caught = _evaluation(controls=_registry(lambda response: SubjectResponse(answer=""))).run()
    assert caught.exit_code is ExitCode.PASS and caught.reasons()[1].startswith("1/1")
    missed = _evaluation(controls=_registry(lambda response: response)).run()
    assert missed.exit_code is ExitCode.MEASURED_FAILURE


def test_an_empty_control_registry_proves_nothing():
    result = _evaluation(controls=ControlRegistry()).run()
    assert result.exit_code is ExitCode.NOT_MEASURED


def test_the_retry_policy_reaches_every_trial():
    tries: dict[str, int] = {}

    def flaky(case: Case) -> SubjectResponse:
        tries[case.id] = tries.get(case.id, 0) + 1
        if tries[case.id] == 1:
            raise TimeoutError("first try times out")
        return echo(case)

    policy = RetryPolicy(retries=1, backoff_s=0.0, seed=1)
    result = _evaluation(arms={"flaky": flaky}, reference=None, retry=policy).run()
    assert result.exit_code is ExitCode.PASS
    assert result.runs.retried_trials == 4


def test_evaluate_takes_the_policy_once():
    definition = _evaluation().definition()
    with pytest.raises(ValueError, match="give the retry policy once"):
        vitrine.evaluate(definition, vitrine.Arm("echo", echo), retry=RetryPolicy(), retries=2)


SUITE_FILE = """
from vitrine import Case, Evaluation, SubjectResponse


def echo(case):
    return SubjectResponse(answer=f"n={case.input}")


def silent(case):
    return SubjectResponse(answer="")


def says_its_number(case, response):
    return f"n={case.input}" in (response.answer or "")


EVALUATION = Evaluation(
    "first",
    cases=[Case(f"c{i}", i) for i in range(6)],
    checks=[says_its_number],
    arms={"echo": echo, "silent": silent},
    reference="echo",
)
"""


COMMAND = [sys.executable, "-m", "vitrine", "--suite", "first_suite:EVALUATION"]


def _vitrine_names(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vitrine"):
            names |= {alias.name for alias in node.names}
        if isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == "vitrine":
            names.add(node.attr)
    return names


def test_a_first_suite_with_a_comparison_and_a_report_runs_from_the_command_line(tmp_path):
    (tmp_path / "first_suite.py").write_text(textwrap.dedent(SUITE_FILE))
    assert len(_vitrine_names(SUITE_FILE)) <= 7, _vitrine_names(SUITE_FILE)
    done = subprocess.run(
        [*COMMAND, "--all", "--output", str(tmp_path / "out"), "--repetitions", "2"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = tmp_path / "out" / "reports" / "first" / "report.json"
    written = json.loads(report.read_text())
    # The report says how it was run: the plan the command line chose, not the Python API.
    assert (written["plan"], written["mode"], written["provenance"]) == (
        "first",
        "suite",
        "command-line",
    )
    assert "python-api" not in done.stdout
    assert "all 1 mandatory gates measured and passed" in " ".join(done.stdout.split())
    runs = list((tmp_path / "out" / "runs").iterdir())
    assert len(runs) == 4  # two arms, two repetitions


def test_controls_only_needs_controls(tmp_path):
    (tmp_path / "first_suite.py").write_text(textwrap.dedent(SUITE_FILE))
    done = subprocess.run(
        [*COMMAND, "--controls-only"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "controls-only" in done.stderr


def test_the_root_names_a_first_suite_needs_are_there():
    assert {"Evaluation", "Case", "SubjectResponse", "Observation"} <= set(vitrine.__all__)
    assert Path(vitrine.__file__).with_name("py.typed").is_file()


def test_the_report_holds_the_controls_and_the_one_decision(tmp_path):
    missed = _evaluation(controls=_registry(lambda response: response)).run()
    paths = missed.write_reports(tmp_path)
    report = vitrine.reports.load_report(paths["json"])
    assert report.exit_code == int(ExitCode.MEASURED_FAILURE)
    assert report.controls is not None and (report.controls.total, report.controls.caught) == (1, 0)
    assert "0/1 registered controls caught" in report.exit_reason
    assert all(gate.status == "PASS" for gate in report.gates)  # the gates alone would pass
