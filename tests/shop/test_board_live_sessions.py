"""A live session on the board reads as its receipt states it: trials by arm, scenario and
repetition with verdicts, comparisons and whole-trial decisions as tables and charts, and how
the repetitions were collapsed, said beside the comparison."""

import re

from live_fakes import FakeJudge
from test_live_stopping import ALL, LUCA, failing_on, models, request

from vitrine._board.app import Board
from vitrine_shop.evals.live.plans import EVAL03, EVAL04
from vitrine_shop.evals.live.session import LiveOptions, run_live_plan


def _session_page(root) -> str:
    board = Board(root, persist_cache=False)
    (live,) = [h for h in board.catalog.headers() if h.kind == "live"]
    reply = board.get(f"/run/live/{live.key}", {})
    assert reply.status == 200
    return reply.body.decode()


async def test_a_comparison_session_lists_every_trial_by_arm_scenario_and_repetition(tmp_path):
    options = LiveOptions(models=models(FakeJudge()), environ={})
    await run_live_plan(EVAL03, request(tmp_path, EVAL03.name, ALL, 3), options)
    html = _session_page(tmp_path)
    trials = html[html.index('id="live-trials"') :]
    rows = re.findall(r"<tr><td>(live-\w+)</td><td class=\"mono\">(?:<a [^>]*>)?([\w-]+)", trials)
    assert len(rows) == 24  # 4 scenarios x 2 arms x 3 repetitions, none hidden
    assert {arm for arm, _ in rows} == {"live-agent", "live-workflow"}
    assert {scenario for _, scenario in rows} == set(ALL)
    assert trials[trials.index("<tbody>") :].count("</tr>") == 24
    assert "trial 1<" not in html and "<pre>{" not in html  # no numbered JSON dumps
    assert re.search(
        r"over 4 scenario\(s\), \d+ repetition\(s\) in all, collapsed per scenario "
        r"with <span class=\"mono\">all</span>",
        html,
    )
    assert "every one of its repetitions passed" in html
    assert 'id="comparisons-table"' in html and "<svg" in html


async def test_a_stochastic_session_shows_each_decision_with_its_interval(tmp_path):
    judge = FakeJudge(policy=failing_on(2))
    options = LiveOptions(models=models(judge), environ={}, curtail=False)
    await run_live_plan(EVAL04, request(tmp_path, EVAL04.name, LUCA, 4), options)
    html = _session_page(tmp_path)
    assert "Whole-trial decisions" in html
    assert re.search(r"3/4</td>.*?>fail<", html, re.S)  # 3 of 4: the lower bound is below 0.50
    assert html.count('class="badge fail">failed<') == 1  # the one trial the judge failed
    assert html.count('class="badge pass">passed<') == 3
