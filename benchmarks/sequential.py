"""Stopping early, measured by simulation: the sequential paired test and exact curtailment.

Run: python benchmarks/sequential.py [--comparisons N] [--seed S]

1. Type I error of the sequential sign test (vitrine._sequential.SequentialSignTest) under the
   null (win rate 1/2), monitored after every case up to a long horizon: continuous
   monitoring, the setting in which a fixed test's error rate would inflate.
2. Cases used at a large effect (Cohen's g = 0.25 for the sign test: a win rate of 0.75
   among discordant pairs, discordance 0.5) against the fixed design of the same power
   (vitrine._power.cases_needed). The sequential design is a truncated one
   (SequentialSignTest.truncated: its rejection bound spends exactly alpha over its case
   limit, computed, not simulated); its design win rate, futility bound and case limit are
   chosen on separate simulations, then measured on fresh ones, with its type I error
   simulated under the null beside the exact figure.
3. Exact curtailment of eval04/eval05's Wilson rule (vitrine._sequential.session_curtailment,
   the function the live session calls): trials saved, and the decision compared with the
   full design's in every simulated session.

Each figure comes from ``--comparisons`` simulated comparisons or sessions (default 10,000).
The vectorised simulation is checked against SequentialSignTest.run on its first comparisons.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

from vitrine import _power as power, _stats as stats
from vitrine._sequential import SequentialSignTest, session_curtailment

HORIZON = 1000  # cases monitored under the null
LARGE_WIN_RATE = 0.75  # Cohen's g = 0.25
DISCORDANCE = 0.5
CHECKED = 300  # comparisons replayed through SequentialSignTest.run


def _upper(k: int, n: int) -> float:
    """One-sided 95% Clopper-Pearson upper bound on a rate."""
    return 1.0 if k == n else float(beta.ppf(0.95, k + 1, n - k))


def _outcomes(rng: np.random.Generator, count: int, horizon: int, win_rate: float) -> np.ndarray:
    """+1 a challenger win, -1 a loss, 0 a tie; one row per comparison."""
    u = rng.random((count, horizon))
    return np.where(u < DISCORDANCE * win_rate, 1, np.where(u < DISCORDANCE, -1, 0)).astype(np.int8)


@dataclass(frozen=True)
class Stops:
    cases: np.ndarray  # stopping time (cases used) per comparison
    rejected: np.ndarray


def _simulate(test: SequentialSignTest, outcomes: np.ndarray) -> Stops:
    horizon = outcomes.shape[1]
    limit = min(horizon, test.max_cases or horizon)
    wins = np.cumsum(outcomes[:, :limit] == 1, axis=1)
    losses = np.cumsum(outcomes[:, :limit] == -1, axis=1)
    q = test.design_win_rate
    up = wins * math.log(2 * q) + losses * math.log(2 * (1 - q))
    down = wins * math.log(2 * (1 - q)) + losses * math.log(2 * q)
    log_e = np.logaddexp(up, down) - math.log(2.0)
    reject = log_e >= math.log(test.threshold) - 1e-9  # as SequentialSignTest.rejects
    stop = reject.copy()
    if test.futility is not None:
        stop |= log_e <= math.log(test.futility)
    any_stop = stop.any(axis=1)
    first = np.where(any_stop, stop.argmax(axis=1), limit - 1)
    rows = np.arange(len(outcomes))
    return Stops(first + 1, reject[rows, first] & any_stop)


def _check(test: SequentialSignTest, outcomes: np.ndarray, stops: Stops) -> None:
    names = {1: "win", -1: "loss", 0: "tie"}
    for row in range(min(CHECKED, len(outcomes))):
        result = test.run(names[int(x)] for x in outcomes[row])
        if (result.cases, result.rejected) != (int(stops.cases[row]), bool(stops.rejected[row])):
            raise SystemExit(f"simulation disagrees with SequentialSignTest.run on row {row}")


def type_one_error(rng: np.random.Generator, count: int, tests: list[SequentialSignTest]) -> None:
    print(f"1. type I error under the null, monitored after each of {HORIZON} cases")
    for test in tests:
        outcomes = _outcomes(rng, count, HORIZON, 0.5)
        stops = _simulate(test, outcomes)
        _check(test, outcomes, stops)
        k = int(stops.rejected.sum())
        print(
            f"   design win rate {test.design_win_rate}, futility {test.futility}: "
            f"{k}/{count} rejected = {k / count:.4f} (95% upper bound {_upper(k, count):.4f}); "
            f"{'<= 0.05' if k / count <= 0.05 else 'ABOVE 0.05'}"
        )


def _calibrate(rng: np.random.Generator, fixed: int, fixed_power: float) -> SequentialSignTest:
    """The design with the fewest mean cases whose simulated power reaches the fixed one's.

    Searched over the design win rate, the futility bound and the case limit, on simulations
    of their own (the figures printed come from fresh ones).
    """
    best: tuple[float, SequentialSignTest] | None = None
    count = 8000
    outcomes = _outcomes(rng, count, 4 * fixed, LARGE_WIN_RATE)
    # A margin of two standard errors, so the fresh measurement is not a coin flip.
    margin = 2 * math.sqrt(fixed_power * (1 - fixed_power) / count)
    for q in (0.72, 0.75, 0.78, 0.8, 0.83, 0.86):
        for futility in (None, 0.03, 0.05, 0.07, 0.1, 0.12, 0.15, 0.2):
            for scale in (1.0, 1.25, 1.5, 2.0, 4.0):
                test = SequentialSignTest.truncated(q, int(scale * fixed), futility=futility)
                stops = _simulate(test, outcomes)
                if stops.rejected.mean() >= fixed_power + margin:
                    mean = float(stops.cases.mean())
                    if best is None or mean < best[0]:
                        best = (mean, test)
    if best is None:
        raise SystemExit("no calibrated design reached the fixed design's power")
    return best[1]


def efficiency(rng: np.random.Generator, count: int) -> None:
    print(
        f"2. cases used at a large effect (win rate {LARGE_WIN_RATE} among discordant pairs, "
        f"discordance {DISCORDANCE}), against the fixed design of the same power"
    )
    for target in (0.80, 0.90):
        fixed = power.cases_needed(DISCORDANCE, LARGE_WIN_RATE, target=target)
        assert fixed is not None
        fixed_power = power.paired_power(fixed, DISCORDANCE, LARGE_WIN_RATE)
        test = _calibrate(rng, fixed, fixed_power)
        horizon = test.max_cases or 4 * fixed
        outcomes = _outcomes(rng, count, horizon, LARGE_WIN_RATE)
        stops = _simulate(test, outcomes)
        _check(test, outcomes, stops)
        seq_power = float(stops.rejected.mean())
        mean = float(stops.cases.mean())
        # Ten times the sessions: its exact error is alpha itself, so 10,000 cannot tell a
        # rate of 0.050 from one of 0.052.
        null_count = 10 * count
        null = _simulate(test, _outcomes(rng, null_count, horizon, 0.5))
        null_k = int(null.rejected.sum())
        ratio = mean / fixed
        print(
            f"   target {target:.0%}: fixed design {fixed} cases (exact power {fixed_power:.4f}); "
            f"sequential (design win rate {test.design_win_rate}, futility {test.futility}, "
            f"at most {horizon} cases) power {seq_power:.4f}, mean {mean:.1f} cases = "
            f"{ratio:.3f} of the fixed design ({'<= 0.6' if ratio <= 0.6 else 'ABOVE 0.6'}"
            f"{'' if seq_power >= fixed_power else '; POWER BELOW THE FIXED DESIGN'})"
        )
        print(
            f"      its rejection bound e >= {test.threshold:.3g} (exact type I error "
            f"{test.type_one_error():.4f} with every case discordant); under the null at "
            f"discordance {DISCORDANCE}, simulated: {null_k}/{null_count} rejected = "
            f"{null_k / null_count:.4f} "
            f"(95% upper bound {_upper(null_k, null_count):.4f}); "
            f"{'<= 0.05' if null_k / null_count <= 0.05 else 'ABOVE 0.05'}"
        )


def _wilson_passes(successes: int, n: int) -> bool:
    interval = stats.wilson_interval(successes, n)
    return interval is not None and interval.lower >= 0.50


def curtailment(rng: np.random.Generator, count: int) -> None:
    scenarios = 4
    print(
        f"3. exact curtailment of the Wilson rule, {scenarios} scenarios per session, "
        "true rates drawn uniformly from [0, 1] per scenario"
    )
    for planned in (5, 10, 20):
        run = changed = 0
        for _ in range(count):
            rates = rng.random(scenarios)
            trials = rng.random((planned, scenarios)) < rates
            # The full design's decision, from the Wilson bound itself.
            full_decision = {
                str(i): "pass" if _wilson_passes(int(trials[:, i].sum()), planned) else "fail"
                for i in range(scenarios)
            }
            used = planned
            decided = None
            for j in range(1, planned + 1):
                tallies = {
                    str(i): (int(trials[:j, i].sum()), j - int(trials[:j, i].sum()))
                    for i in range(scenarios)
                }
                decided = session_curtailment(tallies, planned)
                if decided is not None:
                    used = j
                    break
            assert decided is not None  # at the planned count every decision is fixed
            run += used
            if {k: c.decision for k, c in decided.items()} != full_decision:
                changed += 1
        print(
            f"   {planned} repetitions: {run / count:.2f} run of {planned} on average, "
            f"{1 - run / (count * planned):.1%} of trials saved; decision changed in "
            f"{changed} of {count} sessions"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--comparisons", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    type_one_error(
        rng,
        args.comparisons,
        [SequentialSignTest(0.75), SequentialSignTest(0.9), SequentialSignTest(0.75, futility=0.1)],
    )
    efficiency(rng, args.comparisons)
    curtailment(rng, args.comparisons)


if __name__ == "__main__":
    main()
