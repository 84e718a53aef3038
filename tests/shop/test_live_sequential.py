"""eval03 with --sequential: scenario by scenario, stopped by the sequential sign test.

On the shop's four scenarios the design cannot reject (nothing is rejected at alpha 0.05
before the sixth discordant case), so the early stop is shown on eight cases: the four
scenarios and a copy of each under another id, which the registry is given for that test.
"""

import pytest
from live_fakes import FakeJudge, receipt
from test_live_stopping import ALL, failing_on, models, request

from vitrine import ExitCode, PlanRequest
from vitrine._cli import main
from vitrine_shop.evals.live import calibration, definition, session
from vitrine_shop.evals.live.plans import EVAL01, EVAL03, SPECS, _options
from vitrine_shop.evals.live.session import LiveOptions, run_live_plan
from vitrine_shop.evals.live.subjects import AGENT_ARM, WORKFLOW_ARM
from vitrine_shop.scenarios import load_scenarios

COPIES = tuple(f"{scenario}-again" for scenario in ALL)
EIGHT = ALL + COPIES


@pytest.fixture
def eight_scenarios(monkeypatch):
    """The registry with a copy of each live scenario under another id."""
    registry = load_scenarios()
    copies = {
        copy: registry[original].model_copy(update={"id": copy})
        for original, copy in zip(ALL, COPIES, strict=True)
    }

    def extended():
        return {**registry, **copies}

    for module in (definition, session, calibration):
        monkeypatch.setattr(module, "load_scenarios", extended)
    return EIGHT


def sequential(judge):
    return LiveOptions(models=models(judge), environ={}, sequential=True)


async def test_a_clear_winner_stops_the_comparison_and_the_rest_is_not_run(
    tmp_path, eight_scenarios, capsys
):
    # Each case runs the agent, then the workflow: the judge fails every agent trial.
    judge = FakeJudge(failing_on(*range(1, 2 * len(eight_scenarios), 2)))
    req = request(tmp_path, EVAL03.name, eight_scenarios, 1, console=True)
    outcome = await run_live_plan(EVAL03, req, sequential(judge))

    preview = capsys.readouterr().out.partition("\njudge admission:")[0]
    assert "sequential: quality compared scenario by scenario" in preview
    assert "it can stop no earlier than case 6" in preview
    doc = receipt(tmp_path)
    seq = doc["sequential"]
    # 1.8**6 / 2 = 17.0 reaches the exact bound of the truncated design at the sixth win.
    assert seq["result"]["rejected"] and seq["result"]["stopping_time"] == 6
    assert "the challenger is better" in seq["result"]["reason"]
    assert seq["design"] == seq["result"]["design"]
    assert seq["design"]["design_win_rate"] == 0.9 and seq["design"]["max_cases"] == 8
    assert seq["design"]["futility_at_e_value"] is None
    assert seq["check"] == "quality" and "whole-trial check" in seq["check_choice"]
    assert (seq["planned_cases"], seq["cases_run"], seq["earliest_rejection_case"]) == (8, 6, 6)
    assert seq["stopping_case"] == EIGHT[5]
    assert seq["pairs"] == [{"case_id": c, "outcome": "win"} for c in EIGHT[:6]]
    assert seq["cases_not_run"] == list(EIGHT[6:]) and seq["excluded_cases"] == []
    assert sorted(seq["case_definitions"]) == sorted(EIGHT[:6])

    # Fewer cases ran than planned: one run per case and arm, nothing of the last two.
    assert judge.calls == 12 and len(doc["runs"]) == 12
    ran = {trial["scenario"] for trial in doc["trials"]}
    assert ran == set(EIGHT[:6])
    skipped = [e for e in doc["progress"] if e["node"].startswith("run:")][12:]
    assert [e["node"] for e in skipped] == [
        f"run:{arm}:1:{scenario}" for scenario in EIGHT[6:] for arm in (AGENT_ARM, WORKFLOW_ARM)
    ]
    assert all(e["status"] == "SKIPPED" and "not run" in e["detail"] for e in skipped)

    # The fixed comparisons are still there, over the six cases that ran.
    quality = next(row for row in doc["comparisons"] if row["check"] == "quality")
    assert (quality["cases"], quality["wins"], quality["losses"], quality["ties"]) == (6, 6, 0, 0)

    # Absence is never a pass: the two scenarios not run are missing trials.
    assert outcome.exit_code is ExitCode.INFRASTRUCTURE and doc["exit_code"] == 4
    reason = doc["exit_reason"]
    assert reason.startswith("incomplete session: 12 of 16 trials measured")
    assert "the comparison was decided at case 6 of 8" in reason
    assert "use-case contracts were not measured" in reason
    assert "never a pass (exit 4: an incomplete design, not a failed provider)" in reason
    line = next(line for line in outcome.summary if line.startswith("sequential:"))
    assert line.startswith("sequential: stopped after 6 of 8 case(s), at " + EIGHT[5])
    assert line.endswith("2 scenario(s) not run")


async def test_ties_never_stop_the_test_and_every_case_runs(tmp_path, capsys):
    judge = FakeJudge()
    req = request(tmp_path, EVAL03.name, ALL, 2, console=True)
    outcome = await run_live_plan(EVAL03, req, sequential(judge))

    assert "it cannot reject in 4 case(s), so every case runs" in capsys.readouterr().out
    doc = receipt(tmp_path)
    seq = doc["sequential"]
    result = seq["result"]
    assert not result["rejected"] and (result["ties"], result["stopping_time"]) == (4, 4)
    assert "the design's limit, without reaching the bound" in result["reason"]
    assert seq["cases_not_run"] == [] and seq["cases_run"] == 4
    assert seq["earliest_rejection_case"] is None
    assert [p["outcome"] for p in seq["pairs"]] == ["tie"] * 4
    # Every repetition of both arms on every scenario: 4 x 2 x 2 one-case runs.
    assert len(doc["runs"]) == 16 and judge.calls == 16
    nodes = [e for e in doc["progress"] if e["node"].startswith("run:")]
    assert len(nodes) == 16 and {e["status"] for e in nodes} == {"COMPLETED"}
    assert outcome.exit_code is ExitCode.PASS
    assert doc["exit_reason"] == "all 16 trials measured and passed"
    assert "sequential: ran all 4 case(s)" in outcome.summary[2]


async def test_the_pooled_comparisons_are_the_fixed_designs_on_the_same_outcomes(tmp_path):
    rows = {}
    for switch in (False, True):
        options = LiveOptions(models=models(FakeJudge()), environ={}, sequential=switch)
        await run_live_plan(EVAL03, request(tmp_path / str(switch), EVAL03.name, ALL, 1), options)
        rows[switch] = receipt(tmp_path / str(switch))["comparisons"]
    assert rows[True] == rows[False]


async def test_without_the_switch_the_fixed_design_is_unchanged(tmp_path):
    judge = FakeJudge()
    options = LiveOptions(models=models(judge), environ={})
    outcome = await run_live_plan(EVAL03, request(tmp_path, EVAL03.name, ALL, 2), options)
    doc = receipt(tmp_path)
    assert "sequential" not in doc
    # Every repetition of the agent over all scenarios, then of the workflow.
    assert [e["node"] for e in doc["progress"] if e["node"].startswith("run:")] == [
        f"run:{arm}:{rep}" for arm in (AGENT_ARM, WORKFLOW_ARM) for rep in (1, 2)
    ]
    assert [run["arm_id"] for run in doc["runs"]] == [AGENT_ARM] * 2 + [WORKFLOW_ARM] * 2
    assert len({run["run_id"] for run in doc["runs"]}) == 4 and judge.calls == 16
    assert all("case_id" not in row for row in doc["check_facts"])
    assert {row["cases"] for row in doc["comparisons"]} == {4}
    assert outcome.exit_code is ExitCode.PASS
    assert not any(line.startswith("sequential:") for line in outcome.summary)


@pytest.mark.parametrize("plan", [name for name, spec in SPECS.items() if not spec.compare])
def test_the_command_line_refuses_sequential_for_a_plan_that_compares_nothing(
    plan, tmp_path, capsys
):
    code = main(["--eval-plan", plan, "--confirm-paid", "--sequential", "--output", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{plan} does not accept --sequential" in err
    assert "only a plan that compares them runs one" in err
    assert not (tmp_path / "live").exists()  # refused before the preview and any call


def test_the_command_line_refuses_sequential_for_an_offline_plan(capsys):
    assert main(["--all", "--sequential"]) == 2
    err = capsys.readouterr().err
    assert "offline-suite does not accept --sequential" in err
    assert "this is an offline plan" in err


def test_the_command_lines_sequential_reaches_the_live_options(tmp_path, monkeypatch):
    from vitrine_shop.evals.live import plans

    seen = []

    async def recorded(spec, req, options):
        seen.append((spec, req, options))
        return await run_live_plan(spec, req, LiveOptions(models=models(FakeJudge()), environ={}))

    monkeypatch.setattr(plans, "run_live_plan", recorded)
    main(["--eval-plan", EVAL03.name, "--confirm-paid", "--sequential", "--output", str(tmp_path)])
    ((spec, req, options),) = seen
    assert spec is EVAL03 and req.sequential is True and options.sequential is True
    assert _options(PlanRequest(plan=EVAL01.name)).sequential is False


async def test_the_board_shows_where_a_sequential_session_stopped_and_what_it_did_not_run(
    tmp_path, eight_scenarios
):
    from vitrine._board.app import Board

    judge = FakeJudge(failing_on(*range(1, 2 * len(eight_scenarios), 2)))
    await run_live_plan(
        EVAL03, request(tmp_path, EVAL03.name, eight_scenarios, 1), sequential(judge)
    )
    board = Board(tmp_path, persist_cache=False)
    (live,) = [h for h in board.catalog.headers() if h.kind == "live"]
    reply = board.get(f"/run/live/{live.key}", {})
    assert reply.status == 200
    html = reply.body.decode()
    section = html[html.index('id="sequential"') :]
    assert "6 of 8 case(s) run" in section and "the challenger is better" in section
    assert section.count(">win<") == 6
    assert section.count("not run</span>") == 2
    assert all(case in section for case in EIGHT[6:])
