"""Exact small-sample statistics for comparing agent runs.

Evaluations of LLM agents routinely live at tiny sample sizes: two
repetitions, a handful of cases, a sign test over three non-tied pairs.
At those sizes normal approximations are not merely imprecise, they are
wrong in ways that change verdicts, so everything here is exact (binomial
tails, beta quantiles, combinatorial ratios) and says plainly when a
sample is too small to ever reach significance.

Every function validates its arguments and refuses bad input with a
``ValueError`` that names the argument, its value and why it is refused:
a silently coerced count would turn into a confident but meaningless
p-value further down the report.

scipy is imported inside the functions that need it, never at module
import, so that importing this module (and the CLI that depends on it)
stays fast.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Integral, Real
from statistics import NormalDist
from typing import Literal

from vitrine.errors import InvalidArgumentError

__all__ = [
    "Interval",
    "binomial_tail_p",
    "clopper_pearson",
    "floor_comparison_p",
    "min_attainable_one_sided_p",
    "min_attainable_p",
    "pass_hat_k",
    "rule_of_three",
    "sign_test_p",
    "underpowered_by_construction",
    "wilson_interval",
]

IntervalMethod = Literal["wilson", "clopper-pearson"]


@dataclass(frozen=True, slots=True)
class Interval:
    """A two-sided confidence interval for a binomial proportion.

    ``confidence`` is the nominal coverage (0.95 for a 95% interval) and
    ``method`` records which construction produced the bounds, so a report
    can print both without the reader guessing.
    """

    lower: float
    upper: float
    confidence: float
    method: IntervalMethod

    def __post_init__(self) -> None:
        # An interval that escapes [0, 1] or is inverted would be reported
        # as a valid bound on a rate; fail at construction instead.
        if not (0.0 <= self.lower <= self.upper <= 1.0):
            raise InvalidArgumentError(
                f"an interval for a proportion needs 0 <= lower <= upper <= 1, "
                f"got lower={self.lower!r}, upper={self.upper!r}"
            )
        if not (0.0 < self.confidence < 1.0):
            raise InvalidArgumentError(
                f"confidence must lie strictly between 0 and 1, got {self.confidence!r}"
            )


# --------------------------------------------------------------------------
# Argument validation
# --------------------------------------------------------------------------


def _count(name: str, value: object) -> int:
    """Return ``value`` as a non-negative int, or refuse it."""
    # bool is an int subclass, but True as a count is almost always a
    # pass bit passed where a tally was meant.
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise InvalidArgumentError(
            f"{name} must be a non-negative integer count, got {value!r} "
            f"of type {type(value).__name__}"
        )
    as_int = int(value)
    if as_int < 0:
        raise InvalidArgumentError(f"{name} must be a non-negative integer count, got {as_int}")
    return as_int


def _successes_within(successes: int, n: int) -> None:
    if successes > n:
        raise InvalidArgumentError(
            f"successes must not exceed n: got successes={successes} > n={n}; "
            "a sample cannot hold more successes than trials"
        )


def _probability(name: str, value: object) -> float:
    """Return ``value`` as a float in [0, 1], or refuse it."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InvalidArgumentError(
            f"{name} must be a probability (a real number in [0, 1]), got {value!r} "
            f"of type {type(value).__name__}"
        )
    as_float = float(value)
    # NaN fails both comparisons, so it is refused here too.
    if not (0.0 <= as_float <= 1.0):
        raise InvalidArgumentError(f"{name} must be a probability in [0, 1], got {as_float!r}")
    return as_float


def _open_unit(name: str, value: object) -> float:
    """Return ``value`` as a float strictly inside (0, 1), or refuse it."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InvalidArgumentError(
            f"{name} must be a real number strictly between 0 and 1, got {value!r} "
            f"of type {type(value).__name__}"
        )
    as_float = float(value)
    if not (0.0 < as_float < 1.0):
        raise InvalidArgumentError(
            f"{name} must lie strictly between 0 and 1, got {as_float!r}; "
            "at 0 or 1 the interval degenerates to a point or to all of [0, 1]"
        )
    return as_float


# Sample sizes up to which binomial tails at p = 1/2 are counted exactly.
EXACT_LIMIT = 2000


def _fair_coin_tail(k: int, n: int) -> float:
    """P(X >= k) for X ~ Bin(n, 1/2), as an exact count of outcomes over 2**n."""
    favourable = sum(math.comb(n, i) for i in range(k, n + 1))
    return favourable / (1 << n)


# --------------------------------------------------------------------------
# Sign test and its floor
# --------------------------------------------------------------------------


def sign_test_p(wins: int, losses: int) -> float:
    """Exact two-sided sign test p-value for ``wins`` against ``losses``.

    Computes ``min(1, 2 * P(X >= max(w, n - w)))`` with ``X ~ Bin(n, 1/2)``
    and ``n = wins + losses``. Ties are excluded by the caller before this
    point: they carry no information about direction. With no non-tied
    pairs there is no evidence either way, so the p-value is 1.0.

    Up to ``EXACT_LIMIT`` pairs the tail is an exact integer count of
    outcomes over ``2**n`` (correctly rounded once, at the end); beyond it,
    scipy's binomial survival function, which evaluates the regularised
    incomplete beta function rather than any normal approximation. The
    exact path is also what keeps scipy's import (over a second on a small
    machine) off the offline suite's path.
    """
    w = _count("wins", wins)
    lo = _count("losses", losses)
    n = w + lo
    if n == 0:
        return 1.0
    extreme = max(w, lo)
    if n <= EXACT_LIMIT:
        return min(1.0, 2.0 * _fair_coin_tail(extreme, n))
    from scipy.stats import binom

    # sf(k) is P(X > k), so sf(extreme - 1) is P(X >= extreme).
    tail = float(binom.sf(extreme - 1, n, 0.5))
    return min(1.0, 2.0 * tail)


def min_attainable_p(n: int) -> float:
    """Smallest two-sided sign-test p-value reachable with ``n`` non-tied pairs.

    Equals ``min(1, 2 * 0.5**n)``: the p-value of a clean sweep. When it
    exceeds the significance level the comparison was underpowered by
    construction, whatever the outcome, and a report must say so instead
    of presenting "not significant" as evidence of no difference.
    """
    size = _count("n", n)
    return min(1.0, 2.0 * 0.5**size)


def min_attainable_one_sided_p(n: int) -> float:
    """Smallest one-sided p-value reachable at ``n`` trials against a 1/2 floor.

    Equals ``0.5**n`` (0.25 at n = 2). A floor comparison whose chance
    floor cannot be derived has no p-value of its own; this bound still
    says how small one could ever have been, so an underpowered design is
    visible even without a floor value.
    """
    size = _count("n", n)
    return 0.5**size


def underpowered_by_construction(n: int, alpha: float = 0.05) -> bool:
    """Whether ``n`` non-tied pairs can never reach two-sided significance ``alpha``.

    True when :func:`min_attainable_p` exceeds ``alpha``; with 0.05 that is
    every ``n <= 5``.
    """
    level = _open_unit("alpha", alpha)
    return min_attainable_p(n) > level


# --------------------------------------------------------------------------
# Binomial tails and floor comparisons
# --------------------------------------------------------------------------


def binomial_tail_p(successes: int, n: int, p: float) -> float:
    """Exact upper tail ``P(X >= successes)`` for ``X ~ Bin(n, p)``.

    This is the one-sided p-value for "more successes than chance would
    give": the question a floor comparison asks. ``successes = 0`` is
    always reached, so the tail is 1.0.
    """
    s = _count("successes", successes)
    size = _count("n", n)
    _successes_within(s, size)
    rate = _probability("p", p)
    if s == 0:
        return 1.0
    # The degenerate rates are answered directly: the distribution is a
    # point mass and the answer is exact without any numerics.
    if rate == 0.0:
        return 0.0
    if rate == 1.0:
        return 1.0
    if rate == 0.5 and size <= EXACT_LIMIT:
        return _fair_coin_tail(s, size)
    from scipy.stats import binom

    tail = float(binom.sf(s - 1, size, rate))
    return min(1.0, max(0.0, tail))


def floor_comparison_p(successes: int, n: int, bar: float) -> float:
    """One-sided p-value that ``successes`` of ``n`` beats a chance floor ``bar``.

    ``P(X >= successes)`` with ``X ~ Bin(n, bar)``; the same computation as
    :func:`binomial_tail_p`, named for the question it answers. A floor
    that cannot be derived has no value to pass here: callers report a
    null p-value and :func:`min_attainable_one_sided_p` instead of
    inventing a bar such as 0.5.
    """
    s = _count("successes", successes)
    size = _count("n", n)
    _successes_within(s, size)
    level = _probability("bar", bar)
    return binomial_tail_p(s, size, level)


# --------------------------------------------------------------------------
# Intervals
# --------------------------------------------------------------------------


def clopper_pearson(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact (Clopper-Pearson) two-sided ``1 - alpha`` interval for a rate.

    Returns ``(lower, upper)`` as a plain tuple rather than an
    :class:`Interval`; callers that want the labelled form can wrap it as
    ``Interval(lower, upper, 1 - alpha, "clopper-pearson")``.

    The bounds are beta quantiles, ``Beta(s, n - s + 1)`` at ``alpha / 2``
    and ``Beta(s + 1, n - s)`` at ``1 - alpha / 2``; the lower bound is
    exactly 0 when nothing succeeded and the upper bound exactly 1 when
    everything did, because the corresponding beta distribution does not
    exist there. The interval guarantees at least nominal coverage, which
    makes it conservative: the honest choice when a claim will be read as
    a guarantee.
    """
    s = _count("successes", successes)
    size = _count("n", n)
    if size == 0:
        raise InvalidArgumentError(
            "clopper_pearson needs n >= 1: an empty sample (n=0) carries no "
            "information about the rate, so it has no confidence interval"
        )
    _successes_within(s, size)
    level = _open_unit("alpha", alpha)
    from scipy.stats import beta

    lower = 0.0 if s == 0 else float(beta.ppf(level / 2.0, s, size - s + 1))
    upper = 1.0 if s == size else float(beta.ppf(1.0 - level / 2.0, s + 1, size - s))
    return (min(1.0, max(0.0, lower)), min(1.0, max(0.0, upper)))


def _normal_quantile_two_sided(confidence: float) -> float:
    # The standard library's inverse normal CDF (Wichura's AS241) is accurate
    # to double precision, as scipy's is, without importing scipy.
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval | None:
    """Wilson score interval for a rate, or ``None`` for an empty sample.

    Two-sided, with ``z`` the standard normal quantile for ``confidence``
    (1.959963984540054 at 0.95). Unlike the Wald interval it stays inside
    [0, 1] and does not collapse to a point at 0 or n successes, which is
    why it suits the tiny repetition counts of stochastic plans: an
    all-success run has lower bound ``n / (n + z**2)``, 0.4385 at n = 3 and
    0.5101 at n = 4, so four repetitions are the fewest that can clear a
    0.50 floor.

    ``None`` rather than an exception at n = 0 because "no repetitions"
    is an ordinary state in a report (nothing measured yet), not a
    programming error.
    """
    s = _count("successes", successes)
    size = _count("n", n)
    _successes_within(s, size)
    level = _open_unit("confidence", confidence)
    if size == 0:
        return None
    z = _normal_quantile_two_sided(level)
    z2 = z * z
    centre = s + z2 / 2.0
    spread = z * math.sqrt(s * (size - s) / size + z2 / 4.0)
    denominator = size + z2
    # At 0 or n successes the algebra gives exactly 0 or 1; pin them so
    # floating-point residue cannot print as 0.9999999999999999.
    lower = 0.0 if s == 0 else max(0.0, (centre - spread) / denominator)
    upper = 1.0 if s == size else min(1.0, (centre + spread) / denominator)
    return Interval(lower=lower, upper=upper, confidence=level, method="wilson")


def rule_of_three(n: int) -> float:
    """Approximate 95% upper bound on a rate after zero events in ``n`` trials.

    Returns ``3 / n``, capped at 1.0: below n = 3 the rule would claim a
    bound on a probability above 1, which bounds nothing. The rule comes
    from ``(1 - p)**n = 0.05``; the exact one-sided 95% bound it
    approximates, ``1 - 0.05**(1 / n)``, is the upper end of
    ``clopper_pearson(0, n, alpha=0.10)``.
    """
    size = _count("n", n)
    if size == 0:
        raise InvalidArgumentError(
            "rule_of_three needs n >= 1, got n=0: with no trials there is no "
            "evidence to bound the event rate"
        )
    return min(1.0, 3.0 / size)


# --------------------------------------------------------------------------
# pass^k
# --------------------------------------------------------------------------


def pass_hat_k(
    successes_per_task: Sequence[int],
    trials_per_task: Sequence[int] | int,
    k: int,
) -> float:
    """Unbiased estimate of pass^k: the chance that k fresh trials all succeed.

    For each task with ``c`` successes in ``n`` trials the estimate is
    ``C(c, k) / C(n, k)``: the fraction of k-subsets of the observed trials
    that are all successes. The result is the mean over tasks. It measures
    reliability rather than capability (pass@k asks whether any of k
    succeeds), and it cannot increase with k.

    ``trials_per_task`` is either one count per task or a single count
    shared by every task. The arithmetic is done in exact fractions so the
    returned float is the correctly rounded value of the true mean.
    """
    kk = _count("k", k)
    if kk < 1:
        raise InvalidArgumentError(
            f"pass^k needs k >= 1, got k={kk}: pass^0 is trivially 1 and says "
            "nothing about reliability"
        )
    if isinstance(successes_per_task, (str, bytes)) or not isinstance(successes_per_task, Sequence):
        raise InvalidArgumentError(
            "successes_per_task must be a sequence of per-task success counts, "
            f"got {type(successes_per_task).__name__}"
        )
    tasks = len(successes_per_task)
    if tasks == 0:
        raise InvalidArgumentError(
            "pass^k needs at least one task: the mean over an empty task list is undefined"
        )

    trials: list[int]
    if isinstance(trials_per_task, Sequence) and not isinstance(trials_per_task, (str, bytes)):
        if len(trials_per_task) != tasks:
            raise InvalidArgumentError(
                "successes_per_task and trials_per_task must have one entry per task: "
                f"got {tasks} success counts and {len(trials_per_task)} trial counts"
            )
        trials = [_count(f"trials_per_task[{i}]", t) for i, t in enumerate(trials_per_task)]
    else:
        shared = _count("trials_per_task", trials_per_task)
        trials = [shared] * tasks

    total = Fraction(0)
    for index, (raw_c, n) in enumerate(zip(successes_per_task, trials, strict=True)):
        c = _count(f"successes_per_task[{index}]", raw_c)
        if c > n:
            raise InvalidArgumentError(
                f"task {index} has more successes than trials: c={c} > n={n}"
            )
        if n < kk:
            raise InvalidArgumentError(
                f"pass^k needs at least k trials per task: task {index} has "
                f"n={n} < k={kk}, so no set of k trials can be drawn from it"
            )
        total += Fraction(math.comb(c, kk), math.comb(n, kk))
    return float(total / tasks)
