"""Exact curtailment against every completion, and the sequential test's validity."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from scipy.stats import binomtest, norm

from vitrine._sequential import (
    SequentialSignTest,
    all_pass_curtailment,
    session_curtailment,
    sign_test_curtailment,
    wilson_curtailment,
)


def passes_wilson(successes: int, n: int) -> bool:
    """The full design's decision, with the Wilson lower bound written out."""
    z = norm.ppf(0.975)
    phat = successes / n
    centre = phat + z * z / (2 * n)
    margin = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n))
    return (centre - margin) / (1 + z * z / n) >= 0.5 - 1e-12


@pytest.mark.parametrize("planned", [4, 5, 6, 9, 10, 15])
def test_wilson_curtailment_decides_exactly_when_every_completion_agrees(planned):
    for done in range(planned + 1):
        for s in range(done + 1):
            remaining = planned - done
            finals = {passes_wilson(s + extra, planned) for extra in range(remaining + 1)}
            got = wilson_curtailment(s, done - s, planned)
            if len(finals) == 1:
                assert got.decision == ("pass" if finals.pop() else "fail"), (planned, s, done)
                assert got.remaining == remaining
            else:
                assert got.decision is None, (planned, s, done)


def test_four_of_four_at_five_repetitions_is_not_yet_a_pass():
    # 4/5 has a Wilson lower bound of 0.376: the fifth trial still decides.
    assert wilson_curtailment(4, 0, 5).decision is None
    assert wilson_curtailment(4, 1, 5).decision == "fail"
    assert wilson_curtailment(0, 1, 5).decision == "fail"
    assert wilson_curtailment(9, 0, 10).decision == "pass"


def test_a_session_stops_only_when_every_scenario_is_decided():
    assert session_curtailment({}, 5) is None
    assert session_curtailment({"a": (0, 1), "b": (2, 0)}, 5) is None
    fixed = session_curtailment({"a": (0, 1), "b": (1, 1)}, 5)
    assert fixed is not None and {k: c.decision for k, c in fixed.items()} == {
        "a": "fail",
        "b": "fail",
    }


def test_all_pass_curtailment():
    assert all_pass_curtailment(2, 0, 4).decision is None
    assert all_pass_curtailment(1, 1, 4).decision == "fail"
    assert all_pass_curtailment(1, 1, 4).remaining == 2
    assert all_pass_curtailment(4, 0, 4).decision == "pass"


@pytest.mark.parametrize("planned", [6, 8, 11])
def test_sign_test_curtailment_matches_binomtest_over_every_completion(planned):
    def significant(w: int, lo: int) -> bool:
        return w + lo > 0 and binomtest(w, w + lo, 0.5).pvalue <= 0.05

    for wins, losses in itertools.product(range(planned + 1), repeat=2):
        for ties in range(planned - wins - losses + 1):
            remaining = planned - wins - losses - ties
            finals = {
                significant(wins + a, losses + b)
                for a in range(remaining + 1)
                for b in range(remaining - a + 1)
            }
            got = sign_test_curtailment(wins, losses, ties, planned)
            if len(finals) == 1:
                want = "significant" if finals.pop() else "not significant"
                assert got.decision == want
            else:
                assert got.decision is None


def test_counts_beyond_the_plan_are_refused():
    with pytest.raises(ValueError, match="more than planned"):
        wilson_curtailment(3, 3, 5)


def test_the_e_value_is_a_martingale_with_mean_one_under_the_null():
    test = SequentialSignTest(0.8)
    for k in (1, 5, 12):
        mean = sum(math.comb(k, w) * 0.5**k * test.e_value(w, k - w) for w in range(k + 1))
        assert mean == pytest.approx(1.0)


def _holds_alpha_under_the_null(
    test: SequentialSignTest, *, seed: int, runs: int, cases: int, discordance: float
) -> bool:
    """Simulated type I error within four standard errors of 0.05 (above it is a violation)."""
    rng = np.random.default_rng(seed)
    half = discordance / 2
    rejected = sum(
        test.run(
            rng.choice(["win", "loss", "tie"], size=cases, p=[half, half, 1 - discordance])
        ).rejected
        for _ in range(runs)
    )
    return rejected / runs <= 0.05 + 4 * math.sqrt(0.05 * 0.95 / runs)


def test_type_one_error_holds_under_continuous_monitoring():
    # 0.05 is Ville's bound.
    test = SequentialSignTest(0.75)
    assert _holds_alpha_under_the_null(test, seed=5, runs=2000, cases=300, discordance=0.5)


def test_the_test_stops_at_the_first_case_past_the_bound_and_says_why():
    test = SequentialSignTest(0.9)
    # Each win multiplies the leading ratio by 1.8: 1.8**6 / 2 = 17.0, 1.8**7 / 2 = 30.6.
    result = test.run(["win"] * 20)
    assert result.rejected and result.stopped and result.cases == 7
    assert "the challenger is better" in result.reason
    assert result.to_dict()["stopping_time"] == result.cases
    losing = test.run(["loss"] * 20)
    assert losing.rejected and "the reference is better" in losing.reason
    futile = SequentialSignTest(0.9, futility=0.5).run(["win", "loss", "loss", "win"] * 5)
    assert futile.stopped and not futile.rejected and "futility" in futile.reason
    capped = SequentialSignTest(0.9, max_cases=3).run(["tie"] * 10)
    assert capped.stopped and capped.cases == 3 and "limit" in capped.reason
    ran_out = test.run(["tie"] * 4)
    assert not ran_out.stopped and "ran out" in ran_out.reason


def _enumerated_rejection(test: SequentialSignTest) -> float:
    """Every fair-coin path of max_cases discordant pairs, followed until the test stops."""
    assert test.max_cases is not None
    total = 0.0
    for path in itertools.product(("win", "loss"), repeat=test.max_cases):
        total += test.run(path).rejected * 0.5**test.max_cases
    return total


@pytest.mark.parametrize(
    ("q", "futility", "cases"), [(0.75, None, 12), (0.8, 0.2, 14), (0.9, 0.1, 10), (0.7, None, 9)]
)
def test_a_truncated_design_spends_exactly_alpha_and_no_more(q, futility, cases):
    test = SequentialSignTest.truncated(q, cases, alpha=0.1, futility=futility)
    enumerated = _enumerated_rejection(test)
    assert test.type_one_error() == pytest.approx(enumerated)
    assert enumerated <= 0.1 + 1e-12
    # The bound is the lowest that keeps alpha: the next reachable e-value below it spends more.
    below = [
        e
        for n in range(1, cases + 1)
        for w in range(n + 1)
        if (e := test.e_value(w, n - w)) < test.threshold * (1 - 1e-9) and e > 1.0
    ]
    if below:
        looser = dataclasses.replace(test, reject_at=max(below))
        assert _enumerated_rejection(looser) > 0.1
    assert test.threshold <= 1 / 0.1
    assert "exact" in test.describe()["validity"]


def test_a_truncated_design_holds_alpha_at_any_discordance_by_simulation():
    test = SequentialSignTest.truncated(0.75, 80, futility=0.1)
    assert test.threshold < 20
    assert _holds_alpha_under_the_null(test, seed=11, runs=4000, cases=80, discordance=0.8)


def test_bad_designs_are_refused():
    with pytest.raises(ValueError, match="truncated design"):
        SequentialSignTest(reject_at=5.0)
    for kwargs in ({"design_win_rate": 0.5}, {"futility": 1.0}, {"max_cases": 0}):
        with pytest.raises(ValueError):
            SequentialSignTest(**kwargs)
    with pytest.raises(ValueError, match="win, loss or tie"):
        SequentialSignTest().run(["draw"])
