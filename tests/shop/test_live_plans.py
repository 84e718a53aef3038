import asyncio
import json

import pytest
from live_fakes import (
    CANARY_ERROR,
    FakeJudge,
    PaidScripted,
    assert_no_canary,
    provider_failure,
    receipt,
    verdicts,
)

from vitrine import ExitCode, PlanRequest, UsageError
from vitrine_shop.evals.live.definition import (
    THRESHOLD_ENV,
    LiveBindings,
    live_definition,
    resolve_threshold,
)
from vitrine_shop.evals.live.plans import EVAL01, EVAL02, EVAL03, EVAL04, EVAL05
from vitrine_shop.evals.live.session import LiveModels, LiveOptions, run_live_plan
from vitrine_shop.scripted import ScriptedFaults

ALL = ("nadia-cross-category", "sofia-capability-gap", "marco-gift-trap", "luca-safe-abstention")


def models(subject=None, judge=None):
    return LiveModels(
        subject or PaidScripted(),
        judge or FakeJudge(),
        {
            "provider": "openai",
            "model": "m",
            "judge_model": "judge-model",
            "judge_shares_subject": False,
            "endpoint": "https://leak.example.com",
        },
        {"ready": True, "reason": "ready", "paid": True},
        True,
    )


def request(tmp_path, plan, scenarios=ALL, repetitions=1):
    return PlanRequest(
        plan=plan,
        scenarios=tuple(scenarios),
        repetitions=repetitions,
        confirm_paid=True,
        provider="openai",
        output=tmp_path,
    )


async def run(tmp_path, spec, *, scenarios=ALL, repetitions=1, **kw):
    options = LiveOptions(models=models(**kw), environ={})
    return await run_live_plan(spec, request(tmp_path, spec.name, scenarios, repetitions), options)


async def test_eval01_with_a_healthy_agent_and_a_satisfied_judge_passes(tmp_path):
    judge = FakeJudge()
    outcome = await run(tmp_path, EVAL01, judge=judge)
    assert outcome.exit_code is ExitCode.PASS
    doc = receipt(tmp_path)
    assert doc["exit_code"] == 0 and doc["definition"]["identity"] == "vitrine-live-use-cases@1.1.0"
    assert judge.calls == 4  # one per measurable trial
    luca = next(t for t in doc["trials"] if t["scenario"] == "luca-safe-abstention")
    assert luca["tools"]["sequence"] == []
    assert luca["checks"]["agent-tool-reconciliation"]["passed"] is True
    assert luca["checks"]["workflow-route-reconciliation"]["state"] == "not_applicable"
    assert doc["workload"]["subject_trials"] == 4
    assert "endpoint" not in doc["provider"]
    assert (tmp_path / "live" / luca["run_dir"] / "manifest.json").is_file()


async def test_three_of_four_criteria_is_a_measured_failure_at_the_default_threshold(tmp_path):
    judge = FakeJudge(lambda ids: json.dumps(verdicts(ids, {ids[0]: False})))
    outcome = await run(tmp_path, EVAL01, scenarios=ALL[:1], judge=judge)
    assert outcome.exit_code is ExitCode.MEASURED_FAILURE
    quality = receipt(tmp_path)["trials"][0]["checks"]["quality"]
    assert quality == {**quality, "state": "measured", "passed": False, "value": 0.75}


async def test_a_lower_threshold_lets_three_of_four_pass_and_changes_the_identity(tmp_path):
    judge = FakeJudge(lambda ids: json.dumps(verdicts(ids, {ids[0]: False})))
    options = LiveOptions(models=models(judge=judge), environ={THRESHOLD_ENV: "0.75"})
    outcome = await run_live_plan(EVAL01, request(tmp_path, "eval01-agent", ALL[:1]), options)
    assert outcome.exit_code is ExitCode.PASS
    doc = receipt(tmp_path)
    assert doc["quality_threshold"] == 0.75
    strict = live_definition(ALL[:1], judge, LiveBindings(1.0, "judge-model", 1200))
    assert doc["definition"]["content_hash"] != strict.content_hash


def test_a_threshold_outside_zero_to_one_is_refused():
    for bad in ("0", "1.5", "most"):
        with pytest.raises(UsageError):
            resolve_threshold(environ={THRESHOLD_ENV: bad})
    assert resolve_threshold(environ={}) == 1.0


async def test_an_unusable_judge_reply_leaves_quality_not_measured_and_exits_3(tmp_path):
    judge = FakeJudge(lambda ids: "I think it is fine")
    outcome = await run(tmp_path, EVAL01, scenarios=ALL[:1], judge=judge)
    assert outcome.exit_code is ExitCode.NOT_MEASURED
    trial = receipt(tmp_path)["trials"][0]
    assert trial["checks"]["quality"]["state"] == "not_measured"
    assert all(c["explanation"].startswith("not measured:") for c in trial["criteria"])
    assert all(c["met"] is None for c in trial["criteria"])


async def test_one_unmeasured_trial_among_measured_ones_is_an_incomplete_session(tmp_path):
    def policy(ids):
        return "not json" if "abstains-safely" in ids else json.dumps(verdicts(ids))

    outcome = await run(tmp_path, EVAL01, judge=FakeJudge(policy))
    assert outcome.exit_code is ExitCode.INFRASTRUCTURE
    assert "incomplete session: 3 of 4" in receipt(tmp_path)["exit_reason"]


async def test_a_subject_provider_failure_is_not_measured_without_a_judge_call_or_leak(tmp_path):
    judge = FakeJudge()
    outcome = await run(
        tmp_path,
        EVAL02,
        scenarios=ALL[:2],
        subject=PaidScripted(fail_with=provider_failure()),
        judge=judge,
    )
    # The workflow keeps answering on its code path, but quality is not measured.
    assert outcome.exit_code is ExitCode.NOT_MEASURED
    assert judge.calls == 0
    doc = receipt(tmp_path)
    for trial in doc["trials"]:
        assert trial["checks"]["quality"]["state"] == "not_measured"
        assert {s["status"] for s in trial["attempt_census"]} >= {"unrecovered"}
    assert_no_canary(tmp_path, CANARY_ERROR)


async def test_an_agent_whose_provider_fails_is_not_measured_on_every_check(tmp_path):
    judge = FakeJudge()
    outcome = await run(
        tmp_path,
        EVAL01,
        scenarios=ALL[:1],
        subject=PaidScripted(fail_with=provider_failure()),
        judge=judge,
    )
    assert outcome.exit_code is ExitCode.NOT_MEASURED
    assert judge.calls == 0
    trial = receipt(tmp_path)["trials"][0]
    assert {c["state"] for c in trial["checks"].values()} == {"not_measured"}
    assert "server_error" in trial["subject_error"]
    assert_no_canary(tmp_path, CANARY_ERROR)


async def test_a_recovered_workflow_stage_stays_measured_and_visible(tmp_path):
    subject = PaidScripted(ScriptedFaults(provider_failures=1))
    outcome = await run(tmp_path, EVAL02, scenarios=ALL[:1], subject=subject)
    assert outcome.exit_code is ExitCode.PASS
    trial = receipt(tmp_path)["trials"][0]
    statuses = [s["status"] for s in trial["attempt_census"]]
    assert "recovered" in statuses
    assert trial["checks"]["quality"]["state"] == "measured"


async def test_a_final_fallback_stage_fails_quality_closed_without_a_judge_call(tmp_path):
    judge = FakeJudge()
    subject = PaidScripted(ScriptedFaults(unusable_outputs=2))
    outcome = await run(tmp_path, EVAL02, scenarios=ALL[:1], subject=subject, judge=judge)
    assert outcome.exit_code is ExitCode.NOT_MEASURED
    assert judge.calls == 0
    trial = receipt(tmp_path)["trials"][0]
    assert any(s["status"] == "final_fallback" for s in trial["attempt_census"])
    assert trial["workflow"]["fallback_stages"]
    assert trial["checks"]["quality"]["state"] == "not_measured"
    assert trial["checks"]["workflow-route-reconciliation"]["passed"] is True
    assert trial["answer_preview"]  # the customer still got a bounded answer


async def test_eval03_compares_the_workflow_against_the_agent_case_by_case(tmp_path):
    outcome = await run(tmp_path, EVAL03, repetitions=2)
    assert outcome.exit_code is ExitCode.PASS
    doc = receipt(tmp_path)
    quality = next(c for c in doc["comparisons"] if c["check"] == "quality")
    assert quality["reference_arm"] == "live-agent"
    assert quality["challenger_arm"] == "live-workflow"
    assert quality["collapse"] == "all"
    assert (quality["cases"], quality["total_repetitions"]) == (4, 16)
    assert quality["mean_repetitions_per_case"] == 2.0
    assert quality["ties"] == 4 and quality["effective_n"] == 0 and quality["p_value"] == 1.0
    assert quality["underpowered_by_construction"] is True
    assert len(doc["runs"]) == 4


async def test_eval04_four_all_success_repetitions_clear_the_wilson_floor(tmp_path):
    outcome = await run(tmp_path, EVAL04, scenarios=ALL[3:], repetitions=4)
    assert outcome.exit_code is ExitCode.PASS
    (row,) = receipt(tmp_path)["whole_trial"]
    assert (row["successes"], row["measured"], row["decision"]) == (4, 4, "pass")
    assert row["wilson_95"]["lower"] == pytest.approx(0.5101, abs=1e-4)
    assert row["architecture"] == "agent" and row["persona"] == "luca" and row["floor"] == 0.5


async def test_eval05_three_successes_of_four_fail_the_floor(tmp_path):
    calls = {"n": 0}

    def policy(ids):
        calls["n"] += 1
        return json.dumps(verdicts(ids, {ids[0]: calls["n"] != 2}))

    # A threshold of 0.75 passes the quality check, yet a whole-trial success needs all four.
    # Without curtailment, so all four repetitions run (the second already fixes the failure).
    options = LiveOptions(
        models=models(judge=FakeJudge(policy)), environ={THRESHOLD_ENV: "0.75"}, curtail=False
    )
    req = request(tmp_path, EVAL05.name, ALL[:1], 4)
    outcome = await run_live_plan(EVAL05, req, options)
    assert outcome.exit_code is ExitCode.MEASURED_FAILURE
    (row,) = receipt(tmp_path)["whole_trial"]
    assert (row["successes"], row["measured"], row["decision"]) == (3, 4, "fail")


async def test_zero_measured_stochastic_trials_have_no_estimate_and_exit_3(tmp_path):
    outcome = await run(
        tmp_path,
        EVAL04,
        scenarios=ALL[:1],
        repetitions=4,
        subject=PaidScripted(fail_with=provider_failure()),
    )
    assert outcome.exit_code is ExitCode.NOT_MEASURED
    (row,) = receipt(tmp_path)["whole_trial"]
    assert row["measured"] == 0 and row["wilson_95"] is None and row["estimate"] is None


async def test_the_plan_itself_refuses_an_unconfirmed_paid_request(tmp_path):
    req = PlanRequest(plan="eval01-agent", scenarios=ALL, provider="openai", output=tmp_path)
    with pytest.raises(UsageError, match="confirmed"):
        await run_live_plan(EVAL01, req, LiveOptions(models=models()))
    assert not (tmp_path / "live").exists()


async def test_a_cancelled_session_persists_an_infrastructure_receipt(tmp_path):
    class Hang(PaidScripted):
        async def complete(self, request):
            await asyncio.sleep(30)

    task = asyncio.create_task(run(tmp_path, EVAL01, scenarios=ALL[:1], subject=Hang()))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    doc = receipt(tmp_path)
    assert doc["exit_code"] == 4 and "cancelled" in doc["exit_reason"]
    assert {e["status"] for e in doc["progress"]} <= {"COMPLETED", "FAILED", "SKIPPED"}


async def test_every_progress_start_has_its_terminal_event(tmp_path):
    from vitrine._bench.events import RunCompleted, RunStarted, TrialCompleted, TrialStarted
    from vitrine._progress import NodeEnded, NodeStarted

    events = []
    req = PlanRequest(
        plan="eval01-agent",
        scenarios=ALL[:2],
        confirm_paid=True,
        provider="openai",
        output=tmp_path,
        progress=events.append,
    )
    await run_live_plan(EVAL01, req, LiveOptions(models=models(), environ={}))
    for start, end, key in (
        (NodeStarted, NodeEnded, lambda e: e.node),
        (RunStarted, RunCompleted, lambda e: e.run_id),
        (TrialStarted, TrialCompleted, lambda e: (e.run_id, e.case_id)),
    ):
        started = [key(e) for e in events if isinstance(e, start)]
        ended = [key(e) for e in events if isinstance(e, end)]
        assert started and sorted(map(str, started)) == sorted(map(str, ended))


# -- judge admission and free providers ---------------------------------------------------------


async def test_an_admitted_judge_is_recorded_with_its_calibration_figures(tmp_path):
    judge = FakeJudge()
    outcome = await run(tmp_path, EVAL01, scenarios=ALL[:1], judge=judge)
    assert outcome.exit_code is ExitCode.PASS
    admission = receipt(tmp_path)["judge_admission"]
    assert admission["admitted"] is True
    # Nadia's set: the reference pair, six hard negatives and one hard positive.
    assert (admission["agreed"], admission["labels"], admission["judge_calls"]) == (36, 36, 9)
    assert admission["wilson_95"]["lower"] > 0.5 and admission["hard_confusions"] == []
    assert judge.calibration_calls == 9 and judge.calls == 1


async def test_a_judge_refused_at_admission_leaves_quality_not_measured_and_says_why(tmp_path):
    judge = FakeJudge(calibrated=False)  # calls every answer good, the bad ones too
    outcome = await run(tmp_path, EVAL01, scenarios=ALL[:1], judge=judge)
    assert outcome.exit_code is ExitCode.NOT_MEASURED
    doc = receipt(tmp_path)
    assert doc["judge_admission"]["admitted"] is False
    assert doc["judge_admission"]["agreed"] == 21
    assert judge.calls == 9  # the calibration answers only: no trial was judged
    trial = doc["trials"][0]
    assert trial["checks"]["quality"]["state"] == "not_measured"
    # Every deterministic check was still measured.
    assert trial["checks"]["screened-deliverable"]["state"] == "measured"
    assert trial["checks"]["agent-tool-reconciliation"]["state"] == "measured"
    assert "the judge was refused: the judge passed the non-answer" in doc["exit_reason"]
    assert "agreement 21/36" in doc["exit_reason"]
    assert "several billion parameters" in doc["exit_reason"]


async def test_admission_can_be_skipped_and_the_receipt_says_the_verdicts_are_unadmitted(tmp_path):
    judge = FakeJudge(calibrated=False)
    options = LiveOptions(models=models(judge=judge), environ={"VITRINE_JUDGE_ADMISSION": "skip"})
    outcome = await run_live_plan(EVAL01, request(tmp_path, "eval01-agent", ALL[:1]), options)
    assert outcome.exit_code is ExitCode.PASS
    admission = receipt(tmp_path)["judge_admission"]
    assert admission["admitted"] is None and "unadmitted" in admission["reason"]
    assert judge.calls == 1


async def test_a_free_provider_needs_no_confirmation_and_every_record_says_free(tmp_path, capsys):
    free = LiveModels(
        PaidScripted(),
        FakeJudge(),
        {"provider": "openai", "model": "m", "judge_shares_subject": True, "paid": False},
        {"ready": True, "reason": "ready", "paid": False},
        False,
    )
    req = PlanRequest(
        plan="eval01-agent",
        scenarios=ALL[:1],
        confirm_paid=False,
        provider="openai",
        output=tmp_path,
        console=True,
    )
    outcome = await run_live_plan(EVAL01, req, LiveOptions(models=free, environ={}))
    assert outcome.exit_code is ExitCode.PASS
    doc = receipt(tmp_path)
    assert doc["workload"]["paid"] is False and doc["provider"]["paid"] is False
    printed = capsys.readouterr().out
    assert "paid model services" not in printed
    assert "no charge" in printed
    assert "judge admission: at most 9 calibration judge call(s)" in printed


async def test_an_interrupted_session_receipt_lists_the_runs_that_were_sealed(tmp_path):
    class Stalls(PaidScripted):
        async def complete(self, request):
            if request.response_format is not None:  # a workflow stage: never answers
                await asyncio.Event().wait()
            return await super().complete(request)

    task = asyncio.create_task(
        run_live_plan(
            EVAL03,
            request(tmp_path, "eval03-compare", ALL[:1]),
            LiveOptions(models=models(subject=Stalls()), environ={}),
        )
    )
    for _ in range(500):
        if list((tmp_path / "live" / "runs").glob("*/manifest.json")):
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    doc = receipt(tmp_path)
    assert doc["exit_code"] == int(ExitCode.INFRASTRUCTURE)
    (sealed,) = doc["sealed_runs"]
    assert sealed["arm"] == "live-agent"
    assert (tmp_path / "live" / sealed["run_dir"] / "manifest.json").is_file()
    assert sealed["run_id"] in doc["exit_reason"]
