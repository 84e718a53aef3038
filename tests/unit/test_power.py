"""Power of the paired sign test and of the Wilson rule, against independent computations.

The independent side never calls :mod:`vitrine._power`: the sign test's power is a sum over
every (wins, losses, ties) outcome of the multinomial with scipy's ``binomtest`` deciding each,
the Wilson rule's is a sum over successes with the Wilson bound written out from its formula,
and a seeded simulation checks both.
"""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest
from scipy.stats import binomtest, norm

from vitrine import _power as power
from vitrine._cli import main as cli_main


@functools.cache
def rejects(wins: int, discordant: int, alpha: float = 0.05) -> bool:
    return discordant > 0 and binomtest(wins, discordant, 0.5).pvalue <= alpha


def enumerated_paired_power(n: int, d: float, w: float, alpha: float = 0.05) -> float:
    total = 0.0
    for wins in range(n + 1):
        for losses in range(n - wins + 1):
            ties = n - wins - losses
            if not rejects(wins, wins + losses, alpha):
                continue
            ways = math.factorial(n) / (
                math.factorial(wins) * math.factorial(losses) * math.factorial(ties)
            )
            total += ways * (d * w) ** wins * (d * (1 - w)) ** losses * (1 - d) ** ties
    return total


@functools.cache
def wilson_lower(s: int, n: int, confidence: float = 0.95) -> float:
    z = norm.ppf(1 - (1 - confidence) / 2)
    phat = s / n
    centre = phat + z * z / (2 * n)
    margin = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n))
    return (centre - margin) / (1 + z * z / n)


def enumerated_wilson_power(n: int, p: float, floor: float = 0.5) -> float:
    return sum(
        math.comb(n, s) * p**s * (1 - p) ** (n - s)
        for s in range(n + 1)
        if wilson_lower(s, n) >= floor - 1e-12
    )


RNG = np.random.default_rng(20261202)
PAIRED_CASES = [
    (int(RNG.integers(1, 26)), float(RNG.uniform(0.05, 1.0)), float(RNG.uniform(0.0, 1.0)))
    for _ in range(12)
]


@pytest.mark.parametrize(("n", "d", "w"), PAIRED_CASES)
def test_paired_power_equals_a_multinomial_enumeration_decided_by_binomtest(n, d, w):
    assert power.paired_power(n, d, w) == pytest.approx(enumerated_paired_power(n, d, w), abs=1e-10)


def test_paired_power_agrees_with_a_simulation():
    rng = np.random.default_rng(7)
    n, d, w = 18, 0.6, 0.85
    discordant = rng.binomial(n, d, 20_000)
    wins = rng.binomial(discordant, w)
    rejected = [rejects(int(k), int(m)) for k, m in zip(wins, discordant, strict=True)]
    estimate = float(np.mean(rejected))
    se = math.sqrt(estimate * (1 - estimate) / len(rejected))
    assert abs(power.paired_power(n, d, w) - estimate) < 4 * se


def test_the_critical_count_is_the_first_that_binomtest_rejects():
    for m in range(1, 60):
        k = power.sign_test_critical(m)
        rejecting = [x for x in range(m + 1) if binomtest(x, m, 0.5).pvalue <= 0.05]
        if not rejecting:
            assert k is None, m
        else:
            assert k == min(x for x in rejecting if x >= m / 2), m


def test_five_or_fewer_cases_have_no_power_at_all_and_six_do():
    for n in range(1, 6):
        assert power.paired_power(n, 1.0, 1.0) == 0.0
        assert power.min_detectable_win_rate(n, 1.0) is None
    assert power.paired_power(6, 1.0, 1.0) == pytest.approx(1.0)


@pytest.mark.parametrize(("d", "w"), [(0.5, 0.9), (0.8, 0.8), (0.3, 0.95), (1.0, 0.75)])
def test_cases_needed_is_the_first_size_that_reaches_the_target(d, w):
    needed = power.cases_needed(d, w)
    assert needed is not None
    assert enumerated_paired_power(needed, d, w) >= 0.8
    for smaller in range(1, needed):
        assert enumerated_paired_power(smaller, d, w) < 0.8, smaller


@pytest.mark.parametrize(("n", "d"), [(12, 1.0), (20, 0.5), (30, 0.7)])
def test_the_minimum_detectable_win_rate_sits_on_the_target(n, d):
    mde = power.min_detectable_win_rate(n, d)
    assert mde is not None and 0.5 < mde <= 1.0
    assert enumerated_paired_power(n, d, mde) >= 0.8 - 1e-9
    assert enumerated_paired_power(n, d, mde - 1e-4) < 0.8


def test_no_effect_and_no_discordance_need_no_number_of_cases():
    assert power.cases_needed(0.5, 0.5) is None
    assert power.cases_needed(0.0, 0.9) is None


WILSON_CASES = [(int(RNG.integers(1, 40)), float(RNG.uniform(0.0, 1.0))) for _ in range(12)]


@pytest.mark.parametrize(("n", "p"), WILSON_CASES)
def test_wilson_power_equals_a_sum_over_successes_with_the_bound_written_out(n, p):
    assert power.wilson_power(n, p) == pytest.approx(enumerated_wilson_power(n, p), abs=1e-10)


def test_wilson_power_agrees_with_a_simulation():
    rng = np.random.default_rng(11)
    n, p = 10, 0.85
    draws = rng.binomial(n, p, 40_000)
    estimate = float(np.mean([wilson_lower(int(s), n) >= 0.5 for s in draws]))
    se = math.sqrt(estimate * (1 - estimate) / len(draws))
    assert abs(power.wilson_power(n, p) - estimate) < 4 * se


def test_wilson_minimum_successes_and_the_four_repetition_minimum():
    assert [power.wilson_min_successes(n) for n in range(1, 6)] == [None, None, None, 4, 5]
    for n in range(4, 60):
        s = power.wilson_min_successes(n)
        assert s is not None
        assert wilson_lower(s, n) >= 0.5 > wilson_lower(s - 1, n), n


@pytest.mark.parametrize("p", [0.7, 0.8, 0.9, 0.95])
def test_repetitions_needed_is_the_first_count_that_reaches_the_target(p):
    needed = power.repetitions_needed(p)
    assert needed is not None
    assert enumerated_wilson_power(needed, p) >= 0.8
    assert all(enumerated_wilson_power(n, p) < 0.8 for n in range(1, needed))


def test_the_minimum_detectable_rate_sits_on_the_target():
    for n in (5, 10, 25):
        rate = power.min_detectable_rate(n)
        assert rate is not None
        assert enumerated_wilson_power(n, rate) >= 0.8 - 1e-9
        assert enumerated_wilson_power(n, rate - 1e-4) < 0.8
    assert power.min_detectable_rate(3) is None


def test_collapse_turns_per_trial_rates_into_the_pairs_effect():
    d, w = power.collapsed_pair_effect(0.9, 0.6, 3)
    a, b = 0.9**3, 0.6**3
    assert d == pytest.approx(a * (1 - b) + b * (1 - a))
    assert w == pytest.approx(b * (1 - a) / d)


def test_a_design_that_cannot_reach_alpha_says_so():
    lines = "\n".join(power.PairedDesign(4).lines())
    assert "CANNOT REACH SIGNIFICANCE" in lines and "0.125" in lines
    assert "CANNOT REACH" not in "\n".join(power.PairedDesign(8).lines())
    assert (
        power.WilsonDesign(3)
        .lines()[0]
        .endswith("CANNOT PASS: even all successes keep the lower bound below the floor")
    )


def test_the_designs_document_carries_the_same_numbers_as_the_functions():
    doc = power.PairedDesign(10, discordance=0.6, win_rate=0.85).to_dict()
    assert doc["power"] == pytest.approx(enumerated_paired_power(10, 0.6, 0.85), abs=1e-10)
    assert doc["can_reach_alpha"] is True
    wilson = power.WilsonDesign(5, scenarios=4).to_dict()
    row = wilson["power"][0]
    assert row["per_scenario"] == pytest.approx(enumerated_wilson_power(5, row["rate"]))
    assert row["all_scenarios"] == pytest.approx(row["per_scenario"] ** 4)


# --------------------------------------------------------------------------------------------
# vitrine power
# --------------------------------------------------------------------------------------------


def test_vitrine_power_paired_agrees_with_the_enumeration(capsys):
    code = cli_main(
        ["power", "paired", "--cases", "14", "--discordance", "0.6", "--win-rate", "0.9", "--json"]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["power"] == pytest.approx(enumerated_paired_power(14, 0.6, 0.9), abs=1e-10)
    needed = doc["cases_needed"]
    assert enumerated_paired_power(needed, 0.6, 0.9) >= 0.8
    assert enumerated_paired_power(needed - 1, 0.6, 0.9) < 0.8


def test_vitrine_power_says_a_small_design_cannot_reach_significance(capsys):
    code = cli_main(["power", "paired", "--cases", "4", "--discordance", "0.5"])
    out = capsys.readouterr().out
    assert code == 0
    assert "CANNOT REACH SIGNIFICANCE" in out and "none, at any win rate" in out


def test_vitrine_power_wilson_agrees_with_the_enumeration(capsys):
    code = cli_main(["power", "wilson", "--repetitions", "8", "--rate", "0.85", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["power"] == pytest.approx(enumerated_wilson_power(8, 0.85), abs=1e-10)
    assert doc["min_successes"] == 7


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["power", "paired", "--discordance", "1.5", "--cases", "3"], "--discordance"),
        (["power", "paired", "--discordance", "0.5"], "nothing to plan"),
        (["power", "wilson", "--repetitions", "zero"], "--repetitions"),
        (["power", "wilson"], "nothing to plan"),
        (["power"], "paired|wilson"),
    ],
)
def test_vitrine_power_refuses_bad_input_with_one_line_and_exit_2(capsys, argv, says):
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
