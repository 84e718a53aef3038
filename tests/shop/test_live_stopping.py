"""Live sessions: power stated before any call, exact curtailment, adjusted p-values."""

import json

from live_fakes import FakeJudge, PaidScripted, receipt, verdicts

from vitrine import ExitCode, PlanRequest
from vitrine._multiplicity import benjamini_hochberg, holm, paired_difference
from vitrine._power import paired_power, wilson_min_successes
from vitrine_shop.evals.live.plans import EVAL03, EVAL04, EVAL05
from vitrine_shop.evals.live.session import LiveModels, LiveOptions, run_live_plan

ALL = ("nadia-cross-category", "sofia-capability-gap", "marco-gift-trap", "luca-safe-abstention")
LUCA = ALL[3:]


def models(judge):
    return LiveModels(
        PaidScripted(),
        judge,
        {"provider": "openai", "model": "m", "judge_model": "judge-model"},
        {"ready": True, "reason": "ready", "paid": True},
        True,
    )


def request(tmp_path, plan, scenarios, repetitions, console=False):
    return PlanRequest(
        plan=plan,
        scenarios=tuple(scenarios),
        repetitions=repetitions,
        confirm_paid=True,
        provider="openai",
        output=tmp_path,
        console=console,
    )


def failing_on(*numbers):
    """A judge that marks one criterion unmet on its trial calls ``numbers`` (1-based)."""
    calls = {"n": 0}

    def policy(ids):
        calls["n"] += 1
        return json.dumps(verdicts(ids, {ids[0]: calls["n"] not in numbers}))

    return policy


async def test_the_comparison_preview_says_four_cases_cannot_reach_significance(tmp_path, capsys):
    judge = FakeJudge()
    options = LiveOptions(models=models(judge), environ={})
    await run_live_plan(EVAL03, request(tmp_path, EVAL03.name, ALL, 1, console=True), options)
    out = capsys.readouterr().out
    preview = out.partition("judge admission:")[0]
    # Stated in the preview, before the admission calls and the first trial.
    assert "CANNOT REACH SIGNIFICANCE: with 4 case(s)" in preview
    assert "minimum attainable p 0.125" in preview
    design = receipt(tmp_path)["workload"]["power"]
    assert design["cases"] == 4 and design["can_reach_alpha"] is False
    assert design["power"] == paired_power(4, 0.5, 0.9) == 0.0


async def test_the_stochastic_preview_states_the_wilson_rules_power(tmp_path, capsys):
    options = LiveOptions(models=models(FakeJudge()), environ={})
    await run_live_plan(EVAL04, request(tmp_path, EVAL04.name, LUCA, 4, console=True), options)
    out = capsys.readouterr().out
    assert "a scenario passes with at least 4 successes" in out.partition("judge admission:")[0]
    design = receipt(tmp_path)["workload"]["power"]
    assert design["min_successes"] == 4
    assert design["power"][1] == {"rate": 0.9, "per_scenario": 0.9**4, "all_scenarios": 0.9**4}


async def test_a_fixed_failure_curtails_the_remaining_repetitions(tmp_path):
    judge = FakeJudge(failing_on(2))
    options = LiveOptions(models=models(judge), environ={})
    outcome = await run_live_plan(EVAL05, request(tmp_path, EVAL05.name, LUCA, 5), options)
    assert outcome.exit_code is ExitCode.MEASURED_FAILURE
    doc = receipt(tmp_path)
    (row,) = doc["whole_trial"]
    # At five repetitions only 5 of 5 clear the floor: the second trial's failure decides it.
    assert wilson_min_successes(5) == 5
    assert (row["successes"], row["measured"], row["decision"]) == (1, 2, "fail")
    assert (row["planned"], row["curtailed"]) == (5, 3)
    assert "below the 5 that clear" in row["curtailment_reason"]
    assert len(doc["runs"]) == 2 and judge.calls == 2
    (stop,) = doc["curtailment"]
    assert (stop["stopped_after"], stop["curtailed_repetitions"]) == (2, 3)
    assert "3 planned trial(s) curtailed" in doc["exit_reason"]
    skipped = [e for e in doc["progress"] if e.get("node", "").startswith("run:")]
    assert any("curtailed" in (e.get("detail") or "") for e in skipped)


async def test_curtailment_leaves_the_decision_of_the_full_design(tmp_path):
    for curtail in (True, False):
        root = tmp_path / str(curtail)
        options = LiveOptions(models=models(FakeJudge(failing_on(2))), environ={}, curtail=curtail)
        outcome = await run_live_plan(EVAL05, request(root, EVAL05.name, LUCA, 5), options)
        assert outcome.exit_code is ExitCode.MEASURED_FAILURE
        assert receipt(root)["whole_trial"][0]["decision"] == "fail"
    assert len(receipt(tmp_path / "False")["runs"]) == 5


async def test_enough_successes_curtail_a_pass(tmp_path):
    judge = FakeJudge()
    options = LiveOptions(models=models(judge), environ={})
    outcome = await run_live_plan(EVAL04, request(tmp_path, EVAL04.name, LUCA, 10), options)
    assert outcome.exit_code is ExitCode.PASS
    doc = receipt(tmp_path)
    (row,) = doc["whole_trial"]
    assert wilson_min_successes(10) == 9
    assert (row["successes"], row["decision"], row["curtailed"]) == (9, "pass", 1)
    assert len(doc["runs"]) == 9


async def test_an_undecided_session_runs_every_repetition(tmp_path):
    # 4 of 4 at four repetitions: the last trial decides, so nothing is curtailed.
    options = LiveOptions(models=models(FakeJudge()), environ={})
    outcome = await run_live_plan(EVAL04, request(tmp_path, EVAL04.name, LUCA, 4), options)
    assert outcome.exit_code is ExitCode.PASS
    doc = receipt(tmp_path)
    assert len(doc["runs"]) == 4 and "curtailment" not in doc
    assert doc["whole_trial"][0]["curtailed"] == 0


async def test_the_comparisons_carry_holm_p_values_and_a_paired_effect_size(tmp_path):
    options = LiveOptions(models=models(FakeJudge()), environ={}, fdr=True)
    outcome = await run_live_plan(EVAL03, request(tmp_path, EVAL03.name, ALL, 1), options)
    doc = receipt(tmp_path)
    rows = doc["comparisons"]
    assert len(rows) >= 2
    assert [r["p_holm"] for r in rows] == holm([r["p_value"] for r in rows])
    assert [r["p_bh"] for r in rows] == benjamini_hochberg([r["p_value"] for r in rows])
    for row in rows:
        effect = row["effect"]
        if row["wins"] + row["losses"] + row["ties"] == 0:
            assert effect is None
            continue
        cells = effect["cells"]
        assert (cells["challenger_only"], cells["reference_only"]) == (row["wins"], row["losses"])
        assert cells["both_pass"] + cells["neither"] == row["ties"]
        expected = paired_difference(
            cells["both_pass"], cells["reference_only"], cells["challenger_only"], cells["neither"]
        )
        assert effect == expected.to_dict()
    assert any("(Holm " in line and "difference" in line for line in outcome.summary)


def test_the_command_lines_fdr_reaches_the_live_options():
    from vitrine import PlanRequest
    from vitrine_shop.evals.live.plans import _options

    assert _options(PlanRequest(plan=EVAL03.name, fdr=True)).fdr is True
    assert _options(PlanRequest(plan=EVAL03.name)).fdr is False
