"""A plan's terminal rule: absence is never a pass, and partial absence is what the plan says."""

from __future__ import annotations

import io

import pytest

import vitrine
from vitrine import ExitCode
from vitrine.errors import InvalidArgumentError
from vitrine.live import TerminalRule

RULES = list(TerminalRule)


@pytest.mark.parametrize("rule", RULES)
def test_nothing_measured_is_not_measured_under_every_rule(rule):
    code, reason = rule.decide(planned=4, measured=0, failure="would be ignored")
    assert code is ExitCode.NOT_MEASURED
    assert "none of 4 trials was measured" in reason


def test_partial_absence_is_an_incomplete_session_where_the_plan_says_so():
    code, reason = TerminalRule.PARTIAL_ABSENCE_INCOMPLETE.decide(
        planned=4, measured=3, missing=["agent/nadia"], failure="a failure"
    )
    assert code is ExitCode.INFRASTRUCTURE
    assert reason == "incomplete session: 3 of 4 trials measured (missing: agent/nadia)"


def test_partial_absence_is_not_measured_by_default():
    code, reason = TerminalRule.ABSENCE_NOT_MEASURED.decide(planned=4, measured=3)
    assert code is ExitCode.NOT_MEASURED
    assert reason == "3 of 4 trials measured"


@pytest.mark.parametrize("rule", RULES)
def test_a_complete_session_fails_on_its_failure_and_passes_only_without_one(rule):
    assert rule.decide(planned=2, measured=2, failure="gate x failed") == (
        ExitCode.MEASURED_FAILURE,
        "gate x failed",
    )
    assert rule.decide(planned=2, measured=2) == (
        ExitCode.PASS,
        "all 2 trials measured and passed",
    )


@pytest.mark.parametrize(("planned", "measured"), [(0, 0), (2, 3), (2, -1), (True, 1)])
def test_impossible_counts_are_refused(planned, measured):
    with pytest.raises(InvalidArgumentError):
        TerminalRule.ABSENCE_NOT_MEASURED.decide(planned=planned, measured=measured)


def test_a_plan_declares_its_rule_and_the_listing_shows_it(capsys):
    from vitrine._cli import _list_plans
    from vitrine._suite import Suite

    @vitrine.plan("strict", terminal=TerminalRule.PARTIAL_ABSENCE_INCOMPLETE)
    async def strict(request):
        return vitrine.PlanOutcome(ExitCode.PASS)

    @vitrine.plan("plain")
    async def plain(request):
        return vitrine.PlanOutcome(ExitCode.PASS)

    assert strict.terminal is TerminalRule.PARTIAL_ABSENCE_INCOMPLETE
    assert plain.terminal is TerminalRule.ABSENCE_NOT_MEASURED
    suite = Suite(
        name="s", plans={"strict": strict, "plain": plain}, scenarios={}, default_plan="plain"
    )
    out = io.StringIO()
    _list_plans(suite, out)
    lines = out.getvalue().splitlines()
    assert any("strict" in line and "exit 4 (incomplete session)" in line for line in lines)
    assert not any("plain" in line and "exit 4" in line for line in lines)
