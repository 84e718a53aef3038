"""The notebook API: arms x repetitions as separate runs, scored, compared to a reference."""

from __future__ import annotations

import importlib
import importlib.util

import pytest

import vitrine
from vitrine import (
    Arm,
    BenchmarkDefinition,
    Case,
    ChanceFloor,
    Observation,
    SubjectResponse,
    admit,
    check,
)

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("vitrine._bench.score") is None
    or importlib.util.find_spec("vitrine._bench.runner") is None,
    reason="the runner and the score are not part of this version yet",
)

FLOOR = ChanceFloor.not_derivable("a deterministic toy predicate has no random-draw population")


@check("non-empty")
def non_empty(case, response):
    if response.answer is None:
        return Observation.not_applicable("no answer at all")
    return Observation.measured(1.0 if response.answer else 0.0, bool(response.answer))


@check("mentions-case")
def mentions_case(case, response):
    if response.answer is None:
        return Observation.not_applicable("no answer at all")
    hit = str(case.input) in response.answer
    return Observation.measured(1.0 if hit else 0.0, hit)


DEFINITION = BenchmarkDefinition(
    "api-toy",
    "1.0.0",
    [Case("nadia", "hut to hut"), Case("sofia", "kitchen")],
    [admit(non_empty, FLOOR), admit(mentions_case, FLOOR)],
)


async def _good(case):
    return SubjectResponse(answer=f"because you asked about {case.input}")


async def _also_good(case):
    return SubjectResponse(answer=f"based on {case.input}")


async def _empty(case):
    return SubjectResponse(answer="")


GOOD = Arm("agent", _good)
TIE = Arm("workflow", _also_good)
DEGRADED = Arm("degraded-empty-answer", _empty)


def test_each_arm_and_repetition_is_one_run_directory(tmp_path):
    result = vitrine.evaluate(
        DEFINITION, [GOOD, TIE, DEGRADED], repetitions=2, store=tmp_path, reference="agent"
    )
    assert len(result.runs) == 6
    assert [(r.arm_id, r.repetition) for r in result.runs[:3]] == [
        ("agent", 1),
        ("workflow", 1),
        ("degraded-empty-answer", 1),
    ]
    assert len({r.run_id for r in result.runs}) == 6
    assert result.store_root == tmp_path
    assert len(result.run_dirs) == 6
    assert all(path.is_dir() and path.parent == tmp_path / "runs" for path in result.run_dirs)
    assert result.arms == ("agent", "workflow", "degraded-empty-answer")
    assert [r.repetition for r in result.runs_for("workflow")] == [1, 2]


def test_reference_comparisons_cover_every_challenger_and_check():
    result = vitrine.evaluate(DEFINITION, [GOOD, TIE, DEGRADED], repetitions=2, reference="agent")
    assert result.store_root is None
    assert result.run_dirs == ()
    by_pair = {(c.challenger_arm, c.check_key): c for c in result.comparisons}
    assert len(by_pair) == 4
    degraded = by_pair[("degraded-empty-answer", "non-empty")]
    assert (degraded.wins, degraded.losses, degraded.ties) == (0, 2, 0)
    assert degraded.p_value == pytest.approx(0.5)
    assert degraded.min_attainable_p == pytest.approx(0.5)
    assert degraded.mean_delta == pytest.approx(-1.0)
    assert degraded.underpowered_by_construction
    tie = by_pair[("workflow", "non-empty")]
    assert (tie.wins, tie.losses, tie.ties) == (0, 0, 2)
    assert tie.effective_n == 0
    assert tie.p_value == 1.0
    assert result.to_dict()["reference_arm"] == "agent"


def test_without_a_reference_there_are_no_comparisons():
    result = vitrine.evaluate(DEFINITION, GOOD)
    assert result.comparisons == ()
    assert result.reference is None
    assert len(result.runs) == 1
    score = result.score.check_score("agent", "non-empty")
    assert score is not None


async def test_evaluate_async_runs_inside_a_loop_and_evaluate_refuses_to():
    result = await vitrine.evaluate_async(DEFINITION, [GOOD, DEGRADED], reference="agent")
    assert len(result.runs) == 2
    with pytest.raises(RuntimeError, match=r"use `await vitrine\.evaluate_async"):
        vitrine.evaluate(DEFINITION, [GOOD])


@pytest.mark.parametrize(
    ("arms", "kwargs", "message"),
    [
        ([], {}, "no arms to evaluate"),
        ([GOOD, Arm("agent", _empty)], {}, "arm ids repeat (agent)"),
        ([GOOD], {"repetitions": 0}, "repetitions must be a whole number of at least 1"),
        ([GOOD], {"repetitions": True}, "repetitions must be a whole number"),
        ([GOOD], {"concurrency": 0}, "concurrency must be a whole number of at least 1"),
        ([GOOD, TIE], {"reference": "nobody"}, "reference arm 'nobody' is not among the arms"),
        ([GOOD], {"reference": "agent"}, "there is no challenger"),
    ],
)
def test_refused_evaluations_start_no_run(arms, kwargs, message, tmp_path):
    with pytest.raises(ValueError) as caught:
        vitrine.evaluate(DEFINITION, arms, store=tmp_path, **kwargs)
    assert message in str(caught.value)
    assert not (tmp_path / "runs").exists()


def test_arms_must_be_arms():
    with pytest.raises(TypeError, match="must be vitrine Arm objects"):
        vitrine.evaluate(DEFINITION, [_good])  # type: ignore[list-item]


def test_errors_vitrine_raises_share_one_root_and_keep_their_builtin_base():
    from vitrine.checks import AdmissionError, DefinitionError, FloorNotDerivableError
    from vitrine.controls import ManifestError
    from vitrine.providers import ProviderError
    from vitrine.store import TamperedRunError

    for error in (
        vitrine.UsageError,
        DefinitionError,
        AdmissionError,
        ProviderError,
        ManifestError,
        FloorNotDerivableError,
        TamperedRunError,
    ):
        assert issubclass(error, vitrine.VitrineError), error
    assert issubclass(DefinitionError, ValueError)
    with pytest.raises(vitrine.VitrineError, match="no cases"):
        BenchmarkDefinition("x", "1", [], [admit(non_empty, FLOOR)])


# Retries, tolerance, reports ----------------------------------------------------------------


def _flaky(failures: set[str]):
    """Fails the first call for each case in ``failures`` with a transient error."""
    seen: set[str] = set()

    async def subject(case):
        if case.id in failures and case.id not in seen:
            seen.add(case.id)
            raise TimeoutError("backend timed out")
        return await _good(case)

    return subject


def test_evaluate_retries_transient_errors_and_counts_the_retried_trials(tmp_path):
    result = vitrine.evaluate(
        DEFINITION,
        Arm("flaky", _flaky({"nadia"})),
        store=tmp_path,
        retries=2,
        retry_on=TimeoutError,
        retry_backoff_s=0.0,
    )
    assert result.exit_code is vitrine.ExitCode.PASS
    assert result.retried_trials == 1
    assert result.runs[0].retries["nadia"][0].category == "TimeoutError"
    assert any("1 of 2 trials were retried" in note for note in result.notes())


def _sometimes_down(down: set[str]):
    async def subject(case):
        if case.id in down:
            raise ConnectionError("backend unreachable")
        return await _good(case)

    return subject


def _many_cases(n: int) -> BenchmarkDefinition:
    return BenchmarkDefinition(
        "api-many",
        "1.0.0",
        [Case(f"c{i}", f"topic {i}") for i in range(n)],
        [admit(non_empty, FLOOR), admit(mentions_case, FLOOR)],
    )


def test_not_measured_trials_within_the_tolerance_are_stated_and_the_rest_decide():
    arm = Arm("patchy", _sometimes_down({"c3"}))
    strict = vitrine.evaluate(_many_cases(20), arm)
    assert strict.exit_code is vitrine.ExitCode.NOT_MEASURED

    tolerant = vitrine.evaluate(_many_cases(20), arm, tolerate_not_measured=0.05)
    assert tolerant.exit_code is vitrine.ExitCode.PASS
    notes = tolerant.notes()
    assert any(
        "1 of 20 trials not measured, within the declared tolerance 5%" in note for note in notes
    )
    assert "within the declared tolerance 5%" in tolerant.summary()


def test_a_gap_beyond_the_tolerance_is_still_not_measured():
    arm = Arm("patchy", _sometimes_down({"c1", "c2"}))
    result = vitrine.evaluate(_many_cases(20), arm, tolerate_not_measured=0.05)
    assert result.exit_code is vitrine.ExitCode.NOT_MEASURED
    assert "2 of 20 trials not measured, beyond the declared tolerance 5%" in (
        result.gates()[0].observation.reason or ""
    )


@pytest.mark.parametrize("tolerance", [-0.1, 1.0, float("nan"), True])
def test_a_tolerance_that_is_not_a_fraction_below_one_is_refused(tolerance):
    with pytest.raises(ValueError, match="tolerate_not_measured"):
        vitrine.evaluate(DEFINITION, GOOD, tolerate_not_measured=tolerance)


def test_write_reports_writes_json_and_html_that_load_back(tmp_path):
    result = vitrine.evaluate(
        DEFINITION, [GOOD, DEGRADED], store=tmp_path / "store", reference="agent"
    )
    paths = result.write_reports(tmp_path / "out")
    assert set(paths) == {"json", "html"}
    report = vitrine.reports.load_report(paths["json"])
    assert report.exit_code == int(vitrine.ExitCode.MEASURED_FAILURE)
    by_name = {row.name: row.status for row in report.gates}
    assert by_name["non-empty[agent]"] == "PASS"
    assert by_name["non-empty[degraded-empty-answer]"] == "FAIL"
    assert "<html" in paths["html"].read_text().lower()
    checked, mismatches = vitrine.reports.recompute_claims(report.benchmarks[0], tmp_path / "store")
    assert checked > 0 and mismatches == []


def test_gating_only_the_named_arms_leaves_the_others_as_evidence():
    result = vitrine.evaluate(DEFINITION, [GOOD, DEGRADED], reference="agent")
    assert result.exit_code is vitrine.ExitCode.MEASURED_FAILURE
    assert result.decision(arms=["agent"]).exit_code is vitrine.ExitCode.PASS
    assert {g.name for g in result.gates(arms=["agent"])} == {
        "non-empty[agent]",
        "mentions-case[agent]",
    }
    with pytest.raises(ValueError, match="cannot gate arms"):
        result.gates(arms=["nobody"])


def test_print_summary_shows_the_gates_and_the_exit():
    import io

    from rich.console import Console

    buffer = io.StringIO()
    result = vitrine.evaluate(DEFINITION, GOOD)
    result.print_summary(console=Console(file=buffer, width=160))
    text = buffer.getvalue()
    assert "non-empty[agent]" in text and "PASS" in text


def test_a_plain_function_is_a_subject_too():
    def blocking(case):
        return SubjectResponse(answer=f"because you asked about {case.input}")

    result = vitrine.evaluate(DEFINITION, Arm("sync", blocking))
    assert result.exit_code is vitrine.ExitCode.PASS


def test_check_score_collapses_as_the_comparisons_do():
    calls: list[str] = []

    def first_try_empty(case):
        calls.append(case.id)
        empty = case.id == "nadia" and calls.count("nadia") == 1
        return SubjectResponse(answer="" if empty else f"about {case.input}")

    arm = Arm("agent", first_try_empty)
    result = vitrine.evaluate(DEFINITION, arm, repetitions=2, collapse="any")
    best_of_two = result.check_score("agent", "non-empty")
    assert best_of_two.collapse.value == "any"
    assert (best_of_two.successes, best_of_two.n) == (2, 2)
    assert result.score.check_score("agent", "non-empty").successes == 1  # mean: 0.5 < 1


def test_progress_prints_one_line_per_finished_run_to_stderr(capsys):
    events = []
    vitrine.evaluate(DEFINITION, [GOOD, TIE], repetitions=2, progress=True, on_event=events.append)
    err = capsys.readouterr().err
    assert err.count(" PASS ") == 4
    assert events  # the caller's own sink still sees every event
