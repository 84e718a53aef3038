"""Tests for vitrine._stats: pinned reference values, refusals, and properties.

The property tests compare every scipy-backed result with an independent
computation (exact fractions over math.comb, the textbook Wilson formula
with statistics.NormalDist, brute-force subset enumeration for pass^k), so
a regression in either the code or the library it leans on shows up here.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from statistics import NormalDist

import pytest
from hypothesis import given, settings, strategies as st

import vitrine._stats
from vitrine._stats import (
    Interval,
    binomial_tail_p,
    clopper_pearson,
    floor_comparison_p,
    min_attainable_one_sided_p,
    min_attainable_p,
    pass_hat_k,
    rule_of_three,
    sign_test_p,
    underpowered_by_construction,
    wilson_interval,
)

STATS_SOURCE = Path(vitrine._stats.__file__)

# Hypothesis' default per-example deadline trips on the first call that pays
# for importing scipy; the example counts keep the whole file to seconds.
FAST = settings(max_examples=500, deadline=None)
MEDIUM = settings(max_examples=200, deadline=None)


# --------------------------------------------------------------------------
# Independent reference computations
# --------------------------------------------------------------------------


def exact_sign_test(wins: int, losses: int) -> Fraction:
    n = wins + losses
    if n == 0:
        return Fraction(1)
    extreme = max(wins, losses)
    tail = Fraction(sum(math.comb(n, i) for i in range(extreme, n + 1)), 2**n)
    return min(Fraction(1), 2 * tail)


def exact_upper_tail(successes: int, n: int, p: Fraction) -> Fraction:
    return sum(
        (math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(successes, n + 1)),
        start=Fraction(0),
    )


def textbook_wilson(successes: int, n: int, confidence: float) -> tuple[float, float]:
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p_hat = successes / n
    denominator = 1 + z * z / n
    centre = (p_hat + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p_hat * (1 - p_hat) / n + z * z / (4 * n * n)) / denominator
    return centre - half, centre + half


def float_upper_tail(successes: int, n: int, p: float) -> float:
    return math.fsum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(successes, n + 1))


def float_lower_tail(successes: int, n: int, p: float) -> float:
    return math.fsum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(successes + 1))


def brute_force_pass_hat_k(successes: int, trials: int, k: int) -> Fraction:
    outcomes = [True] * successes + [False] * (trials - successes)
    subsets = list(itertools.combinations(outcomes, k))
    return Fraction(sum(all(s) for s in subsets), len(subsets))


def close(a: float, b: float, rel: float = 1e-9, floor: float = 1e-200) -> bool:
    # Relative agreement, except deep in the tail where scipy's incomplete
    # beta loses digits close to float underflow.
    return math.isclose(a, b, rel_tol=rel, abs_tol=floor)


counts = st.integers(min_value=0, max_value=300)


@st.composite
def successes_and_n(draw: st.DrawFn, max_n: int = 300, min_n: int = 0) -> tuple[int, int]:
    n = draw(st.integers(min_value=min_n, max_value=max_n))
    return draw(st.integers(min_value=0, max_value=n)), n


rational_probabilities = st.builds(
    Fraction,
    st.integers(min_value=0, max_value=20),
    st.integers(min_value=1, max_value=20),
).filter(lambda f: f <= 1)


# --------------------------------------------------------------------------
# Import cost
# --------------------------------------------------------------------------


def test_importing_the_module_does_not_import_scipy() -> None:
    # Loaded from its file so the package __init__ cannot mask or cause the
    # import; the CLI's start-up time depends on this module staying light.
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('stats_probe', {str(STATS_SOURCE)!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "sys.modules['stats_probe'] = module\n"
        "spec.loader.exec_module(module)\n"
        "assert 'scipy' not in sys.modules, 'scipy imported at module import'\n"
        "assert 'numpy' not in sys.modules, 'numpy imported at module import'\n"
    )
    assert importlib.util.find_spec("scipy") is not None
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------
# Sign test
# --------------------------------------------------------------------------


class TestSignTestPinnedValues:
    def test_zero_wins_two_losses_gives_one_half(self) -> None:
        assert sign_test_p(0, 2) == 0.5

    def test_no_untied_pairs_gives_one(self) -> None:
        assert sign_test_p(0, 0) == 1.0

    def test_ten_nil_sweep_gives_twice_half_to_the_tenth(self) -> None:
        assert sign_test_p(10, 0) == pytest.approx(2 * 0.5**10, rel=1e-14)

    def test_single_pair_gives_one(self) -> None:
        assert sign_test_p(1, 0) == 1.0

    def test_even_split_is_capped_at_one(self) -> None:
        assert sign_test_p(3, 3) == 1.0

    def test_six_nil_is_the_first_sweep_below_five_percent(self) -> None:
        assert sign_test_p(5, 0) == pytest.approx(0.0625)
        assert sign_test_p(6, 0) == pytest.approx(0.03125)

    def test_known_value_eight_two(self) -> None:
        # 2 * (C(10,8) + C(10,9) + C(10,10)) / 1024 = 112 / 1024
        assert sign_test_p(8, 2) == pytest.approx(112 / 1024, rel=1e-14)

    def test_large_sample_stays_exact_in_the_far_tail(self) -> None:
        assert sign_test_p(1000, 0) == pytest.approx(2 * 0.5**1000, rel=1e-12)


class TestSignTestProperties:
    @FAST
    @given(counts, counts)
    def test_matches_exact_binomial_sum(self, wins: int, losses: int) -> None:
        assert close(sign_test_p(wins, losses), float(exact_sign_test(wins, losses)))

    @FAST
    @given(counts, counts)
    def test_is_symmetric_in_wins_and_losses(self, wins: int, losses: int) -> None:
        assert sign_test_p(wins, losses) == sign_test_p(losses, wins)

    @FAST
    @given(counts, counts)
    def test_is_a_probability(self, wins: int, losses: int) -> None:
        assert 0.0 <= sign_test_p(wins, losses) <= 1.0

    @FAST
    @given(successes_and_n())
    def test_never_below_the_minimum_attainable_p(self, split: tuple[int, int]) -> None:
        wins, n = split
        assert sign_test_p(wins, n - wins) >= min_attainable_p(n) * (1 - 1e-12)

    @MEDIUM
    @given(st.integers(min_value=0, max_value=300))
    def test_a_sweep_attains_the_minimum(self, n: int) -> None:
        assert sign_test_p(n, 0) == pytest.approx(min_attainable_p(n), rel=1e-12)


class TestSignTestRefusals:
    def test_refuses_negative_wins(self) -> None:
        with pytest.raises(ValueError, match=r"wins must be a non-negative integer count, got -1"):
            sign_test_p(-1, 3)

    def test_refuses_negative_losses(self) -> None:
        with pytest.raises(
            ValueError, match=r"losses must be a non-negative integer count, got -2"
        ):
            sign_test_p(3, -2)

    def test_refuses_a_fractional_count(self) -> None:
        with pytest.raises(ValueError, match=r"wins must be a non-negative integer.*1\.5.*float"):
            sign_test_p(1.5, 0)  # type: ignore[arg-type]

    def test_refuses_a_pass_bit_passed_as_a_count(self) -> None:
        with pytest.raises(ValueError, match=r"losses must be a non-negative integer.*True.*bool"):
            sign_test_p(0, True)


# --------------------------------------------------------------------------
# Minimum attainable p and power
# --------------------------------------------------------------------------


class TestMinimumAttainableP:
    def test_two_sided_pinned_values(self) -> None:
        assert min_attainable_p(0) == 1.0
        assert min_attainable_p(1) == 1.0
        assert min_attainable_p(2) == 0.5
        assert min_attainable_p(5) == 0.0625
        assert min_attainable_p(6) == 0.03125

    def test_one_sided_is_a_quarter_at_two(self) -> None:
        assert min_attainable_one_sided_p(2) == 0.25
        assert min_attainable_one_sided_p(0) == 1.0

    @MEDIUM
    @given(st.integers(min_value=0, max_value=1000))
    def test_two_sided_is_twice_one_sided_capped_at_one(self, n: int) -> None:
        assert min_attainable_p(n) == min(1.0, 2 * min_attainable_one_sided_p(n))

    def test_five_pairs_are_underpowered_and_six_are_not(self) -> None:
        assert all(underpowered_by_construction(n) for n in range(6))
        assert not underpowered_by_construction(6)

    def test_underpowered_respects_a_stricter_alpha(self) -> None:
        assert underpowered_by_construction(6, alpha=0.01)
        assert not underpowered_by_construction(8, alpha=0.01)

    def test_refuses_negative_n(self) -> None:
        with pytest.raises(ValueError, match=r"n must be a non-negative integer count, got -1"):
            min_attainable_p(-1)
        with pytest.raises(ValueError, match=r"n must be a non-negative integer count, got -4"):
            min_attainable_one_sided_p(-4)

    def test_underpowered_refuses_alpha_outside_the_open_unit_interval(self) -> None:
        with pytest.raises(ValueError, match=r"alpha must lie strictly between 0 and 1, got 0\.0"):
            underpowered_by_construction(3, alpha=0.0)


# --------------------------------------------------------------------------
# Binomial tail and floor comparison
# --------------------------------------------------------------------------


class TestBinomialTail:
    def test_zero_successes_is_certain(self) -> None:
        assert binomial_tail_p(0, 10, 0.3) == 1.0
        assert binomial_tail_p(0, 0, 0.5) == 1.0

    def test_all_successes_at_one_half(self) -> None:
        assert binomial_tail_p(2, 2, 0.5) == pytest.approx(0.25)
        assert binomial_tail_p(4, 4, 0.5) == pytest.approx(0.0625)

    def test_known_value(self) -> None:
        # P(X >= 3), X ~ Bin(5, 0.2) = (10*0.008*0.64 + 5*0.0016*0.8 + 0.00032)
        assert binomial_tail_p(3, 5, 0.2) == pytest.approx(0.05792, rel=1e-12)

    def test_degenerate_rates_are_point_masses(self) -> None:
        assert binomial_tail_p(1, 5, 0.0) == 0.0
        assert binomial_tail_p(5, 5, 1.0) == 1.0

    @MEDIUM
    @given(successes_and_n(max_n=120), rational_probabilities)
    def test_matches_exact_fraction_sum(self, split: tuple[int, int], p: Fraction) -> None:
        successes, n = split
        expected = float(exact_upper_tail(successes, n, p))
        assert close(binomial_tail_p(successes, n, float(p)), expected)

    @FAST
    @given(successes_and_n(), st.floats(min_value=0.0, max_value=1.0))
    def test_is_a_probability(self, split: tuple[int, int], p: float) -> None:
        successes, n = split
        assert 0.0 <= binomial_tail_p(successes, n, p) <= 1.0

    @MEDIUM
    @given(successes_and_n(min_n=1), st.floats(min_value=0.0, max_value=1.0))
    def test_decreases_as_the_threshold_rises(self, split: tuple[int, int], p: float) -> None:
        successes, n = split
        if successes < n:
            higher = binomial_tail_p(successes + 1, n, p)
            assert higher <= binomial_tail_p(successes, n, p) * (1 + 1e-12)

    def test_refuses_more_successes_than_trials(self) -> None:
        with pytest.raises(ValueError, match=r"successes must not exceed n: got successes=4 > n=3"):
            binomial_tail_p(4, 3, 0.5)

    def test_refuses_rate_above_one(self) -> None:
        with pytest.raises(ValueError, match=r"p must be a probability in \[0, 1\], got 1\.5"):
            binomial_tail_p(1, 3, 1.5)

    def test_refuses_negative_rate(self) -> None:
        with pytest.raises(ValueError, match=r"p must be a probability in \[0, 1\], got -0\.1"):
            binomial_tail_p(1, 3, -0.1)

    def test_refuses_nan_rate(self) -> None:
        with pytest.raises(ValueError, match=r"p must be a probability in \[0, 1\], got nan"):
            binomial_tail_p(1, 3, math.nan)

    def test_refuses_non_numeric_rate(self) -> None:
        with pytest.raises(ValueError, match=r"p must be a probability .*'half'.*str"):
            binomial_tail_p(1, 3, "half")  # type: ignore[arg-type]

    def test_refuses_negative_successes(self) -> None:
        with pytest.raises(ValueError, match=r"successes must be a non-negative integer count"):
            binomial_tail_p(-1, 3, 0.5)


class TestFloorComparison:
    @MEDIUM
    @given(successes_and_n(max_n=100), st.floats(min_value=0.0, max_value=1.0))
    def test_is_the_binomial_upper_tail(self, split: tuple[int, int], bar: float) -> None:
        successes, n = split
        assert floor_comparison_p(successes, n, bar) == binomial_tail_p(successes, n, bar)

    def test_two_of_two_against_a_half_floor(self) -> None:
        assert floor_comparison_p(2, 2, 0.5) == pytest.approx(0.25)

    def test_refuses_a_bar_outside_the_unit_interval(self) -> None:
        with pytest.raises(ValueError, match=r"bar must be a probability in \[0, 1\], got 2\.0"):
            floor_comparison_p(1, 2, 2.0)

    def test_refuses_more_successes_than_trials(self) -> None:
        with pytest.raises(ValueError, match=r"successes=3 > n=2"):
            floor_comparison_p(3, 2, 0.5)


# --------------------------------------------------------------------------
# Clopper-Pearson
# --------------------------------------------------------------------------


class TestClopperPearson:
    def test_zero_of_ten_upper_bound(self) -> None:
        lower, upper = clopper_pearson(0, 10)
        assert lower == 0.0
        assert upper == pytest.approx(1 - 0.025 ** (1 / 10), rel=1e-12)
        assert upper == pytest.approx(0.3085, abs=5e-5)

    def test_ten_of_ten_lower_bound(self) -> None:
        lower, upper = clopper_pearson(10, 10)
        assert lower == pytest.approx(0.025 ** (1 / 10), rel=1e-12)
        assert upper == 1.0

    def test_known_interior_value(self) -> None:
        # Standard table value for 5 of 10 at 95%.
        lower, upper = clopper_pearson(5, 10)
        assert lower == pytest.approx(0.18709, abs=1e-5)
        assert upper == pytest.approx(0.81291, abs=1e-5)

    def test_alpha_ten_percent_upper_is_the_exact_one_sided_95_bound(self) -> None:
        _, upper = clopper_pearson(0, 30, alpha=0.10)
        assert upper == pytest.approx(1 - 0.05 ** (1 / 30), rel=1e-12)

    @MEDIUM
    @given(successes_and_n(max_n=200, min_n=1), st.floats(min_value=0.001, max_value=0.5))
    def test_bounds_are_where_the_tails_equal_half_alpha(
        self, split: tuple[int, int], alpha: float
    ) -> None:
        successes, n = split
        lower, upper = clopper_pearson(successes, n, alpha)
        if successes > 0:
            assert float_upper_tail(successes, n, lower) == pytest.approx(alpha / 2, rel=1e-6)
        if successes < n:
            assert float_lower_tail(successes, n, upper) == pytest.approx(alpha / 2, rel=1e-6)

    @FAST
    @given(successes_and_n(max_n=1000, min_n=1), st.floats(min_value=1e-6, max_value=0.999))
    def test_contains_the_observed_rate_within_the_unit_interval(
        self, split: tuple[int, int], alpha: float
    ) -> None:
        successes, n = split
        lower, upper = clopper_pearson(successes, n, alpha)
        assert 0.0 <= lower <= successes / n <= upper <= 1.0

    def test_refuses_an_empty_sample(self) -> None:
        with pytest.raises(ValueError, match=r"n >= 1: an empty sample \(n=0\).*no confidence"):
            clopper_pearson(0, 0)

    def test_refuses_more_successes_than_trials(self) -> None:
        with pytest.raises(ValueError, match=r"successes=6 > n=5"):
            clopper_pearson(6, 5)

    @pytest.mark.parametrize("alpha", [0.0, 1.0, -0.05])
    def test_refuses_alpha_outside_the_open_unit_interval(self, alpha: float) -> None:
        with pytest.raises(ValueError, match=r"alpha must lie strictly between 0 and 1"):
            clopper_pearson(1, 5, alpha)


# --------------------------------------------------------------------------
# Wilson
# --------------------------------------------------------------------------


class TestWilsonInterval:
    def test_all_success_lower_bound_at_three(self) -> None:
        interval = wilson_interval(3, 3)
        assert interval is not None
        assert round(interval.lower, 4) == 0.4385
        assert interval.upper == 1.0

    def test_all_success_lower_bound_at_four_clears_a_half_floor(self) -> None:
        interval = wilson_interval(4, 4)
        assert interval is not None
        assert round(interval.lower, 4) == 0.5101
        assert interval.upper == 1.0
        assert interval.lower > 0.5

    def test_all_success_lower_bound_is_n_over_n_plus_z_squared(self) -> None:
        z = 1.959963984540054
        for n in range(1, 50):
            interval = wilson_interval(n, n)
            assert interval is not None
            assert interval.lower == pytest.approx(n / (n + z * z), rel=1e-12)

    def test_no_success_is_the_mirror_image(self) -> None:
        interval = wilson_interval(0, 4)
        assert interval is not None
        assert interval.lower == 0.0
        assert interval.upper == pytest.approx(1 - 0.5101091635454027, rel=1e-12)

    def test_labels_its_method_and_confidence(self) -> None:
        interval = wilson_interval(1, 2, confidence=0.9)
        assert interval is not None
        assert interval.method == "wilson"
        assert interval.confidence == 0.9

    def test_empty_sample_has_no_interval(self) -> None:
        assert wilson_interval(0, 0) is None

    @FAST
    @given(successes_and_n(max_n=10_000, min_n=1), st.floats(min_value=0.5, max_value=0.999))
    def test_matches_the_textbook_formula(self, split: tuple[int, int], confidence: float) -> None:
        successes, n = split
        interval = wilson_interval(successes, n, confidence)
        assert interval is not None
        lower, upper = textbook_wilson(successes, n, confidence)
        assert interval.lower == pytest.approx(max(0.0, lower), rel=1e-9, abs=1e-12)
        assert interval.upper == pytest.approx(min(1.0, upper), rel=1e-9, abs=1e-12)

    @FAST
    @given(successes_and_n(max_n=10_000, min_n=1), st.floats(min_value=0.01, max_value=0.999))
    def test_contains_the_observed_rate_within_the_unit_interval(
        self, split: tuple[int, int], confidence: float
    ) -> None:
        successes, n = split
        interval = wilson_interval(successes, n, confidence)
        assert interval is not None
        assert 0.0 <= interval.lower <= successes / n <= interval.upper <= 1.0

    @MEDIUM
    @given(successes_and_n(max_n=500, min_n=1))
    def test_is_symmetric_under_swapping_successes_and_failures(
        self, split: tuple[int, int]
    ) -> None:
        successes, n = split
        a = wilson_interval(successes, n)
        b = wilson_interval(n - successes, n)
        assert a is not None and b is not None
        assert a.lower == pytest.approx(1 - b.upper, abs=1e-12)

    def test_refuses_more_successes_than_trials(self) -> None:
        with pytest.raises(ValueError, match=r"successes=3 > n=2"):
            wilson_interval(3, 2)

    def test_refuses_a_positive_count_against_an_empty_sample(self) -> None:
        with pytest.raises(ValueError, match=r"successes=1 > n=0"):
            wilson_interval(1, 0)

    @pytest.mark.parametrize("confidence", [0.0, 1.0, 95.0])
    def test_refuses_confidence_outside_the_open_unit_interval(self, confidence: float) -> None:
        with pytest.raises(ValueError, match=r"confidence must lie strictly between 0 and 1"):
            wilson_interval(1, 2, confidence)


class TestIntervalValue:
    def test_is_frozen(self) -> None:
        interval = Interval(0.1, 0.2, 0.95, "clopper-pearson")
        with pytest.raises(AttributeError):
            interval.lower = 0.0  # type: ignore[misc]

    def test_refuses_bounds_outside_the_unit_interval(self) -> None:
        with pytest.raises(ValueError, match=r"0 <= lower <= upper <= 1, got lower=-0\.1"):
            Interval(-0.1, 0.5, 0.95, "wilson")

    def test_refuses_inverted_bounds(self) -> None:
        with pytest.raises(ValueError, match=r"got lower=0\.6, upper=0\.4"):
            Interval(0.6, 0.4, 0.95, "wilson")

    def test_refuses_confidence_outside_the_open_unit_interval(self) -> None:
        with pytest.raises(ValueError, match=r"confidence must lie strictly between 0 and 1"):
            Interval(0.1, 0.2, 1.0, "wilson")


# --------------------------------------------------------------------------
# Rule of three
# --------------------------------------------------------------------------


class TestRuleOfThree:
    def test_three_over_n(self) -> None:
        assert rule_of_three(3) == 1.0
        assert rule_of_three(30) == pytest.approx(0.1)
        assert rule_of_three(300) == pytest.approx(0.01)

    def test_is_capped_at_one_for_tiny_samples(self) -> None:
        assert rule_of_three(1) == 1.0
        assert rule_of_three(2) == 1.0

    @MEDIUM
    @given(st.integers(min_value=20, max_value=10_000))
    def test_approximates_the_exact_one_sided_bound_for_large_n(self, n: int) -> None:
        exact = 1 - 0.05 ** (1 / n)
        assert exact <= rule_of_three(n) <= exact * 1.08

    def test_refuses_an_empty_sample(self) -> None:
        with pytest.raises(ValueError, match=r"rule_of_three needs n >= 1, got n=0"):
            rule_of_three(0)

    def test_refuses_negative_n(self) -> None:
        with pytest.raises(ValueError, match=r"n must be a non-negative integer count, got -3"):
            rule_of_three(-3)


# --------------------------------------------------------------------------
# pass^k
# --------------------------------------------------------------------------


class TestPassHatKValues:
    def test_all_successes_give_one(self) -> None:
        assert pass_hat_k([4, 4], 4, 3) == 1.0

    def test_fewer_successes_than_k_give_zero(self) -> None:
        assert pass_hat_k([1, 2], 4, 3) == 0.0

    def test_k_one_is_the_mean_success_rate(self) -> None:
        assert pass_hat_k([1, 3], [4, 4], 1) == pytest.approx(0.5)

    def test_hand_worked_two_tasks(self) -> None:
        # C(3,2)/C(4,2) = 3/6 and C(2,2)/C(4,2) = 1/6; mean = 1/3.
        assert pass_hat_k([3, 2], 4, 2) == pytest.approx(1 / 3)

    def test_hand_worked_unequal_trial_counts(self) -> None:
        # C(4,3)/C(5,3) = 4/10 and C(3,3)/C(3,3) = 1; mean = 0.7.
        assert pass_hat_k([4, 3], [5, 3], 3) == pytest.approx(0.7)

    def test_k_equal_to_n_requires_every_trial_to_pass(self) -> None:
        assert pass_hat_k([5, 4], 5, 5) == 0.5

    def test_accepts_tuples(self) -> None:
        assert pass_hat_k((2,), (2,), 2) == 1.0


task_lists = st.lists(successes_and_n(max_n=12, min_n=1), min_size=1, max_size=8)


class TestPassHatKProperties:
    @MEDIUM
    @given(task_lists, st.integers(min_value=1, max_value=12))
    def test_matches_brute_force_subset_enumeration(
        self, tasks: list[tuple[int, int]], k: int
    ) -> None:
        usable = [(c, n) for c, n in tasks if n >= k]
        if not usable:
            return
        expected = sum((brute_force_pass_hat_k(c, n, k) for c, n in usable), start=Fraction(0))
        got = pass_hat_k([c for c, _ in usable], [n for _, n in usable], k)
        assert got == float(expected / len(usable))

    @FAST
    @given(task_lists)
    def test_is_a_probability_and_never_increases_with_k(
        self, tasks: list[tuple[int, int]]
    ) -> None:
        successes = [c for c, _ in tasks]
        trials = [n for _, n in tasks]
        values = [pass_hat_k(successes, trials, k) for k in range(1, min(trials) + 1)]
        assert all(0.0 <= v <= 1.0 for v in values)
        assert all(a >= b for a, b in itertools.pairwise(values))

    @MEDIUM
    @given(task_lists, st.integers(min_value=1, max_value=12))
    def test_a_shared_trial_count_equals_the_repeated_list(
        self, tasks: list[tuple[int, int]], k: int
    ) -> None:
        n = 12
        successes = [c for c, _ in tasks]
        assert pass_hat_k(successes, n, k) == pass_hat_k(successes, [n] * len(successes), k)


class TestPassHatKRefusals:
    def test_refuses_fewer_trials_than_k(self) -> None:
        with pytest.raises(
            ValueError,
            match=r"pass\^k needs at least k trials per task: task 2 has n=3 < k=4",
        ):
            pass_hat_k([4, 4, 3], [5, 5, 3], 4)

    def test_refuses_negative_success_count(self) -> None:
        with pytest.raises(
            ValueError,
            match=r"successes_per_task\[1\] must be a non-negative integer count, got -1",
        ):
            pass_hat_k([1, -1], 3, 1)

    def test_refuses_negative_trial_count(self) -> None:
        with pytest.raises(
            ValueError, match=r"trials_per_task\[0\] must be a non-negative integer count, got -3"
        ):
            pass_hat_k([1], [-3], 1)

    def test_refuses_negative_shared_trial_count(self) -> None:
        with pytest.raises(
            ValueError, match=r"trials_per_task must be a non-negative integer count, got -2"
        ):
            pass_hat_k([1], -2, 1)

    def test_refuses_more_successes_than_trials(self) -> None:
        with pytest.raises(ValueError, match=r"task 1 has more successes than trials: c=5 > n=4"):
            pass_hat_k([2, 5], 4, 1)

    def test_refuses_mismatched_lengths(self) -> None:
        with pytest.raises(
            ValueError, match=r"one entry per task: got 3 success counts and 2 trial counts"
        ):
            pass_hat_k([1, 2, 3], [4, 4], 1)

    def test_refuses_an_empty_task_list(self) -> None:
        with pytest.raises(ValueError, match=r"at least one task: the mean over an empty"):
            pass_hat_k([], 4, 1)

    def test_refuses_k_below_one(self) -> None:
        with pytest.raises(ValueError, match=r"pass\^k needs k >= 1, got k=0"):
            pass_hat_k([1], 4, 0)

    def test_refuses_negative_k(self) -> None:
        with pytest.raises(ValueError, match=r"k must be a non-negative integer count, got -1"):
            pass_hat_k([1], 4, -1)

    def test_refuses_successes_that_are_not_a_sequence(self) -> None:
        with pytest.raises(ValueError, match=r"successes_per_task must be a sequence.*got int"):
            pass_hat_k(3, 4, 1)  # type: ignore[arg-type]


# --- agreement with scipy, and scipy kept off the fast path ------------------------------


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 300), st.integers(0, 300))
def test_sign_test_agrees_with_scipy(wins, losses):
    from scipy.stats import binom

    n = wins + losses
    expected = 1.0 if n == 0 else min(1.0, 2.0 * float(binom.sf(max(wins, losses) - 1, n, 0.5)))
    assert vitrine._stats.sign_test_p(wins, losses) == pytest.approx(expected, rel=1e-9, abs=1e-300)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_fair_coin_tail_agrees_with_scipy(args):
    from scipy.stats import binom

    successes, n = args
    expected = 1.0 if successes == 0 else float(binom.sf(successes - 1, n, 0.5))
    assert vitrine._stats.binomial_tail_p(successes, n, 0.5) == pytest.approx(
        expected, rel=1e-9, abs=1e-300
    )


@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
def test_wilson_z_agrees_with_scipy(confidence):
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + confidence / 2.0))
    interval = vitrine._stats.wilson_interval(7, 10, confidence)
    assert interval is not None
    centre = 7 + z * z / 2
    spread = z * math.sqrt(7 * 3 / 10 + z * z / 4)
    assert interval.lower == pytest.approx((centre - spread) / (10 + z * z), rel=1e-12)


def test_large_samples_use_scipy_and_agree_with_the_exact_count():
    n = vitrine._stats.EXACT_LIMIT + 1
    wins = n // 2 + 40
    exact = Fraction(sum(math.comb(n, i) for i in range(wins, n + 1)), 2**n)
    assert vitrine._stats.sign_test_p(wins, n - wins) == pytest.approx(float(2 * exact), rel=1e-9)


def test_the_offline_statistics_never_import_scipy():
    code = (
        "import sys, vitrine._stats as s;"
        "s.sign_test_p(3, 1); s.wilson_interval(2, 4); s.binomial_tail_p(2, 4, 0.5);"
        "s.min_attainable_p(4); print('scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
