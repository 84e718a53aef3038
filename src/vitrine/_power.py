"""Power before a paid run: what a design can detect, and what it would take to detect more.

Two decision rules carry vitrine's paid verdicts, and both are exact tests on tiny samples, so
their power is computed exactly here (binomial sums, no normal approximation):

* **The paired comparison** (eval03): after repetition collapse each case is one pair
  (reference cell, challenger cell). A pair is *discordant* when the two cells differ; the
  two-sided sign test over the discordant pairs decides. A stated effect is a discordance rate
  ``d`` (the chance a case is discordant) and a win rate ``w`` (the chance a discordant pair
  favours the challenger). With ``n`` cases the number of discordant pairs is ``Bin(n, d)`` and,
  given ``m`` of them, the challenger's wins are ``Bin(m, w)``; the power is the probability that
  :func:`vitrine.stats.sign_test_p` comes out at or below ``alpha``.
* **The Wilson rule** (eval04/eval05): a scenario passes when its whole-trial successes over
  ``n`` repetitions give a Wilson lower bound at or above a floor (0.50). With a true success
  rate ``p`` the power is ``P(Bin(n, p) >= s_min)``, ``s_min`` the fewest successes that clear
  the floor (computed with :func:`vitrine.stats.wilson_interval` itself, so the planning rule
  and the verdict rule cannot drift apart).
* **The all-pass rule** (eval01/eval02 and every gate that needs each trial to pass): ``k``
  trials at a true per-trial pass rate ``p`` all pass with probability ``p**k``.

Exact tests have sawtooth power: more cases can *lower* the power slightly. "Cases needed" is
therefore the smallest size whose power reaches the target, searched one by one, not solved
from a formula that assumes monotonicity.

scipy is imported inside the functions that need it, as in :mod:`vitrine._stats`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vitrine import _stats as stats
from vitrine.errors import InvalidArgumentError

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_TARGET",
    "MAX_SEARCH",
    "AllPassDesign",
    "PairedDesign",
    "WilsonDesign",
    "all_pass_power",
    "cases_needed",
    "collapsed_pair_effect",
    "min_detectable_rate",
    "min_detectable_win_rate",
    "paired_power",
    "repetitions_needed",
    "sign_test_critical",
    "wilson_min_successes",
    "wilson_power",
]

DEFAULT_ALPHA = 0.05
DEFAULT_TARGET = 0.80
# The largest design a search looks at; a planning question whose answer lies beyond it is
# answered "more than MAX_SEARCH", never with a guessed number.
MAX_SEARCH = 5000
# Relative slack when comparing a computed tail with alpha, so that a p-value equal to alpha in
# exact arithmetic is not lost to the last bit of a float.
_SLACK = 1e-12


def _size(name: str, value: object, *, minimum: int = 0) -> int:
    count = stats._count(name, value)
    if count < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum}, got {count}")
    return count


def _target(value: object) -> float:
    return stats._open_unit("target power", value)


# --------------------------------------------------------------------------------------------
# The paired comparison: the sign test over discordant pairs
# --------------------------------------------------------------------------------------------


def sign_test_critical(m: int, alpha: float = DEFAULT_ALPHA) -> int | None:
    """The fewest wins (of ``m`` discordant pairs) at which the two-sided sign test rejects.

    The test rejects when ``max(wins, losses) >= k``; None when no split of ``m`` pairs
    reaches ``alpha`` (every ``m <= 5`` at 0.05).
    """
    size = _size("m", m)
    level = stats._open_unit("alpha", alpha)
    if size == 0 or stats.min_attainable_p(size) > level * (1 + _SLACK):
        return None
    from scipy.stats import binom  # noqa: PLC0415 - scipy loads on use

    # 2 * P(X >= k) <= alpha, with sf(k - 1) = P(X >= k); the smallest such k >= m/2.
    low, high = (size + 1) // 2, size
    while low < high:
        mid = (low + high) // 2
        if 2.0 * float(binom.sf(mid - 1, size, 0.5)) <= level * (1 + _SLACK):
            high = mid
        else:
            low = mid + 1
    return low


class _Rejections:
    """P(reject | m discordant pairs) at one win rate, for m = 0, 1, 2, ..., grown on demand.

    The critical count never falls as m grows (a tail of ``Bin(m + 1, 1/2)`` is at least the
    same tail of ``Bin(m, 1/2)``), so each new m costs a step or two from the last one.
    """

    def __init__(self, win_rate: float, alpha: float) -> None:
        self.win_rate = win_rate
        self.alpha = stats._open_unit("alpha", alpha)
        self.values: list[float] = [0.0]
        self._k = 1

    def upto(self, max_m: int) -> list[float]:
        from scipy.stats import binom  # noqa: PLC0415 - scipy loads on use

        bar = self.alpha * (1 + _SLACK)
        while len(self.values) <= max_m:
            m = len(self.values)
            k = max(self._k, (m + 1) // 2)
            while k <= m and 2.0 * float(binom.sf(k - 1, m, 0.5)) > bar:
                k += 1
            self._k = k
            if k > m:
                self.values.append(0.0)  # no split of m pairs reaches alpha
                continue
            # Wins >= k, or losses >= k (wins <= m - k): disjoint sets, because k > m/2.
            upper = float(binom.sf(k - 1, m, self.win_rate))
            lower = float(binom.cdf(m - k, m, self.win_rate))
            self.values.append(min(1.0, upper + lower))
        return self.values


def _power_from(rejections: list[float], n: int, discordance: float) -> float:
    """Sum over the number m of discordant pairs: P(m of n) x P(reject | m)."""
    import numpy as np  # noqa: PLC0415
    from scipy.stats import binom  # noqa: PLC0415 - scipy loads on use

    weights = binom.pmf(np.arange(n + 1), n, discordance)
    total = float(np.dot(weights, np.asarray(rejections[: n + 1])))
    return min(1.0, max(0.0, total))


def paired_power(
    cases: int, discordance: float, win_rate: float, alpha: float = DEFAULT_ALPHA
) -> float:
    """Exact power of the two-sided sign test over ``cases`` paired cases.

    ``discordance`` is the chance that a case's two collapsed cells differ; ``win_rate`` the
    chance that a discordant case favours the challenger (0.5 is no difference, and the
    "power" is then the test's size).
    """
    n = _size("cases", cases)
    d = stats._probability("discordance", discordance)
    w = stats._probability("win_rate", win_rate)
    stats._open_unit("alpha", alpha)
    if n == 0:
        return 0.0
    return _power_from(_Rejections(w, alpha).upto(n), n, d)


def min_detectable_win_rate(
    cases: int,
    discordance: float,
    alpha: float = DEFAULT_ALPHA,
    target: float = DEFAULT_TARGET,
) -> float | None:
    """The smallest win rate above 1/2 detected with probability ``target``, or None.

    None when even a challenger that wins every discordant pair (win rate 1) is detected less
    often than ``target``: the design cannot detect any effect at that power.
    """
    goal = _target(target)
    if paired_power(cases, discordance, 1.0, alpha) < goal:
        return None
    return _bisect(lambda w: paired_power(cases, discordance, w, alpha), 0.5, 1.0, goal)


def cases_needed(
    discordance: float,
    win_rate: float,
    alpha: float = DEFAULT_ALPHA,
    target: float = DEFAULT_TARGET,
    limit: int = MAX_SEARCH,
) -> int | None:
    """The fewest cases whose sign-test power reaches ``target``; None beyond ``limit``."""
    d = stats._probability("discordance", discordance)
    w = stats._probability("win_rate", win_rate)
    goal = _target(target)
    cap = _size("limit", limit, minimum=1)
    if d == 0.0 or w == 0.5:
        return None  # no discordant pair, or no direction: no size detects it
    table = _Rejections(w, alpha)
    for n in range(1, cap + 1):
        if _power_from(table.upto(n), n, d) >= goal:
            return n
    return None


def collapsed_pair_effect(
    reference_rate: float, challenger_rate: float, repetitions: int
) -> tuple[float, float]:
    """``(discordance, win_rate)`` of the collapsed pairs, from per-trial pass rates.

    Under RepCollapse.ALL a case's cell is 1 when every one of its ``repetitions`` passes, so
    a per-trial rate ``p`` becomes a cell rate ``p**r``; the two arms are taken as independent
    within a case. The win rate is undefined (returned as 0.5) when no pair can be discordant.
    """
    a = stats._probability("reference_rate", reference_rate) ** _size(
        "repetitions", repetitions, minimum=1
    )
    b = stats._probability("challenger_rate", challenger_rate) ** repetitions
    win = b * (1 - a)
    loss = a * (1 - b)
    discordance = win + loss
    return discordance, (win / discordance if discordance > 0 else 0.5)


# --------------------------------------------------------------------------------------------
# The Wilson rule and the all-pass rule
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def wilson_min_successes(
    repetitions: int, floor: float = 0.50, confidence: float = 0.95
) -> int | None:
    """The fewest successes of ``repetitions`` whose Wilson lower bound reaches ``floor``.

    None when even an all-success sample stays below the floor (fewer than four repetitions at
    0.50 and 95%): the rule cannot pass by construction.
    """
    n = _size("repetitions", repetitions)
    bar = stats._probability("floor", floor)
    if n == 0 or not _clears(n, n, bar, confidence):
        return None
    # The lower bound rises with the successes: the first count that clears is found by halving.
    low, high = 0, n
    while low < high:
        mid = (low + high) // 2
        if _clears(mid, n, bar, confidence):
            high = mid
        else:
            low = mid + 1
    return low


def _clears(successes: int, n: int, floor: float, confidence: float) -> bool:
    interval = stats.wilson_interval(successes, n, confidence)
    return interval is not None and interval.lower >= floor


def wilson_power(
    repetitions: int, rate: float, floor: float = 0.50, confidence: float = 0.95
) -> float:
    """The chance a scenario with true whole-trial success rate ``rate`` passes the rule."""
    p = stats._probability("rate", rate)
    s_min = wilson_min_successes(repetitions, floor, confidence)
    if s_min is None:
        return 0.0
    return stats.binomial_tail_p(s_min, repetitions, p)


def min_detectable_rate(
    repetitions: int,
    floor: float = 0.50,
    confidence: float = 0.95,
    target: float = DEFAULT_TARGET,
) -> float | None:
    """The smallest true success rate that passes the Wilson rule with probability ``target``."""
    goal = _target(target)
    if wilson_min_successes(repetitions, floor, confidence) is None:
        return None
    return _bisect(lambda p: wilson_power(repetitions, p, floor, confidence), 0.0, 1.0, goal)


def repetitions_needed(
    rate: float,
    floor: float = 0.50,
    confidence: float = 0.95,
    target: float = DEFAULT_TARGET,
    limit: int = MAX_SEARCH,
) -> int | None:
    """The fewest repetitions at which ``rate`` passes with probability ``target``, or None."""
    p = stats._probability("rate", rate)
    goal = _target(target)
    cap = _size("limit", limit, minimum=1)
    if p <= floor:
        # Power at or below the floor is at most about 1 - confidence/2 for every n.
        return None
    for n in range(1, cap + 1):
        if wilson_power(n, p, floor, confidence) >= goal:
            return n
    return None


def all_pass_power(trials: int, rate: float) -> float:
    """The chance that ``trials`` independent trials at pass rate ``rate`` all pass."""
    return stats._probability("rate", rate) ** _size("trials", trials)


def _bisect(power: Callable[[float], float], low: float, high: float, goal: float) -> float:
    """The smallest x in [low, high] with power(x) >= goal, for power increasing in x."""
    for _ in range(60):
        mid = (low + high) / 2
        if power(mid) >= goal:
            high = mid
        else:
            low = mid
    return high


# --------------------------------------------------------------------------------------------
# Designs, as a preview states them
# --------------------------------------------------------------------------------------------

# The effects a preview states when the operator stated none: a large effect, said as such.
PREVIEW_DISCORDANCE = 0.5
PREVIEW_WIN_RATE = 0.9
PREVIEW_RATES = (0.7, 0.9)


@dataclass(frozen=True, slots=True)
class PairedDesign:
    """eval03's paired comparison: ``cases`` paired cases, two-sided sign test at ``alpha``."""

    cases: int
    alpha: float = DEFAULT_ALPHA
    discordance: float = PREVIEW_DISCORDANCE
    win_rate: float = PREVIEW_WIN_RATE
    target: float = DEFAULT_TARGET

    @property
    def reachable(self) -> bool:
        return not stats.underpowered_by_construction(self.cases, self.alpha)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": "two-sided sign test over the discordant collapsed pairs",
            "cases": self.cases,
            "alpha": self.alpha,
            "min_attainable_p": stats.min_attainable_p(self.cases),
            "can_reach_alpha": self.reachable,
            "stated_effect": {"discordance": self.discordance, "win_rate": self.win_rate},
            "power": paired_power(self.cases, self.discordance, self.win_rate, self.alpha),
            "target_power": self.target,
            "min_detectable_win_rate": min_detectable_win_rate(
                self.cases, self.discordance, self.alpha, self.target
            ),
            "cases_needed": cases_needed(self.discordance, self.win_rate, self.alpha, self.target),
        }

    def lines(self) -> list[str]:
        data = self.to_dict()
        out = [
            f"  power (paired sign test, {self.cases} case(s), alpha {self.alpha:g}): "
            f"minimum attainable p {data['min_attainable_p']:.4g}"
        ]
        if not self.reachable:
            out.append(
                f"  CANNOT REACH SIGNIFICANCE: with {self.cases} case(s) no outcome gives "
                f"p <= {self.alpha:g}; a non-significant result will be no evidence of no "
                f"difference (at least 6 discordant cases are needed at 0.05)"
            )
        out.append(
            f"  at a large stated effect (discordance {self.discordance:g}, challenger wins "
            f"{self.win_rate:g} of discordant cases): power {data['power']:.3f}; "
            f"{_needed(data['cases_needed'], 'case')} for {self.target:.0%} power"
        )
        mde = data["min_detectable_win_rate"]
        out.append(
            f"  smallest win rate detectable with {self.target:.0%} power at discordance "
            f"{self.discordance:g}: " + ("none, at any win rate" if mde is None else f"{mde:.3f}")
        )
        return out


@dataclass(frozen=True, slots=True)
class WilsonDesign:
    """eval04/eval05's rule: per scenario, Wilson lower bound over ``repetitions`` >= floor."""

    repetitions: int
    scenarios: int = 1
    floor: float = 0.50
    confidence: float = 0.95
    rates: tuple[float, ...] = PREVIEW_RATES
    target: float = DEFAULT_TARGET

    def to_dict(self) -> dict[str, Any]:
        s_min = wilson_min_successes(self.repetitions, self.floor, self.confidence)
        return {
            "rule": "Wilson lower bound of whole-trial successes >= floor, every scenario",
            "repetitions": self.repetitions,
            "scenarios": self.scenarios,
            "floor": self.floor,
            "confidence": self.confidence,
            "min_successes": s_min,
            "can_pass": s_min is not None,
            "power": [
                {
                    "rate": rate,
                    "per_scenario": wilson_power(
                        self.repetitions, rate, self.floor, self.confidence
                    ),
                    # Independent scenarios at the same rate must all pass.
                    "all_scenarios": wilson_power(
                        self.repetitions, rate, self.floor, self.confidence
                    )
                    ** self.scenarios,
                }
                for rate in self.rates
            ],
            "target_power": self.target,
            "min_detectable_rate": min_detectable_rate(
                self.repetitions, self.floor, self.confidence, self.target
            ),
            "repetitions_needed": {
                str(rate): repetitions_needed(rate, self.floor, self.confidence, self.target)
                for rate in self.rates
            },
        }

    def lines(self) -> list[str]:
        data = self.to_dict()
        head = (
            f"  power (Wilson {self.confidence:.0%} lower bound >= {self.floor:.2f}, "
            f"{self.repetitions} repetition(s) per scenario): "
        )
        if data["min_successes"] is None:
            return [head + "CANNOT PASS: even all successes keep the lower bound below the floor"]
        out = [head + f"a scenario passes with at least {data['min_successes']} successes"]
        for row in data["power"]:
            needed = data["repetitions_needed"][str(row["rate"])]
            out.append(
                f"  at a true success rate {row['rate']:g}: pass chance {row['per_scenario']:.3f} "
                f"per scenario, {row['all_scenarios']:.3f} for all {self.scenarios}; "
                f"{_needed(needed, 'repetition')} for {self.target:.0%} per scenario"
            )
        mdr = data["min_detectable_rate"]
        out.append(
            f"  smallest true rate that passes with {self.target:.0%} chance: "
            + ("none" if mdr is None else f"{mdr:.3f}")
        )
        return out


@dataclass(frozen=True, slots=True)
class AllPassDesign:
    """eval01/eval02's rule: every one of ``trials`` trials must pass."""

    trials: int
    rates: tuple[float, ...] = PREVIEW_RATES

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": "every trial must pass",
            "trials": self.trials,
            "power": [
                {"rate": rate, "all_pass": all_pass_power(self.trials, rate)} for rate in self.rates
            ],
        }

    def lines(self) -> list[str]:
        chances = ", ".join(
            f"{all_pass_power(self.trials, rate):.3f} at a per-trial pass rate {rate:g}"
            for rate in self.rates
        )
        return [
            f"  power (all {self.trials} trial(s) must pass; one run each, no interval): "
            f"chance of a pass {chances}"
        ]


def _needed(count: int | None, noun: str) -> str:
    if count is None:
        return f"no number of {noun}s up to {MAX_SEARCH:,} suffices"
    return f"{count} {noun}(s) needed"
