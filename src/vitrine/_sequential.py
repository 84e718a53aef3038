"""Stopping when the answer is known: exact curtailment, and an anytime-valid paired test.

**Curtailment** stops a fixed design early only when no outcome of the trials still to run
could change its decision, so the decision is exactly the one the full design would have
reached; the trials not run are *curtailed*, neither passes nor failures, and the reason says
which count fixed the decision.

* :func:`wilson_curtailment`: eval04/eval05's rule (a scenario passes when its successes over
  the planned repetitions give a Wilson lower bound at or above the floor). With ``s_min``
  the fewest successes that clear the floor, a pass is fixed once ``s_min`` successes are in,
  and a failure once the failures exceed ``planned - s_min``.
* :func:`all_pass_curtailment`: a gate that needs every trial to pass is failed by its first
  measured failure.
* :func:`sign_test_curtailment`: a paired comparison's significance at its planned number of
  cases is fixed when every completion of the cases still to run (each a win, a loss or a
  tie) gives the same answer; checked by enumerating the completions, not by a bound.

**The sequential paired test** (:class:`SequentialSignTest`) is a different design, chosen
before the run: an e-process on the discordant pairs. For a design win rate ``q`` the
likelihood ratio of "the challenger wins discordant pairs at rate q" against "at rate 1/2" is
``(2q)**W * (2(1-q))**L``; the two-sided e-value averages it with its mirror (the reference
winning at rate q). Under the null (win rate 1/2, any discordance) it is a non-negative
martingale with mean 1, so by Ville's inequality the chance that it *ever* reaches ``1/alpha``
is at most ``alpha``: the error rate holds however often it is looked at, and the test may
stop at the first case that takes it there. An optional futility bound stops when the e-value
falls to ``futility`` (which can only lower the type I error), and an optional case limit
truncates it (likewise).

**A truncated design spends exactly alpha** (:meth:`SequentialSignTest.truncated`). Ville's
bound holds over an endless horizon, so a design that stops at ``max_cases`` anyway spends
less than ``alpha`` at ``1/alpha``. The truncated design lowers the rejection bound to the
smallest e-value whose exact probability of ever being reached, looking after every case up to
``max_cases`` and stopping at the (binding) futility bound, is at most ``alpha`` under the
null. That probability is computed by dynamic programming over the fair-coin paths of the
discordant pairs, not estimated; it is largest when every case is discordant, so it bounds the
error at every discordance. The guarantee is the design's: continuous monitoring up to
``max_cases``, stopping at futility, and no look beyond.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from vitrine import _stats as stats
from vitrine._power import wilson_min_successes
from vitrine.errors import InvalidArgumentError

__all__ = [
    "Curtailment",
    "PairOutcome",
    "SequentialResult",
    "SequentialSignTest",
    "all_pass_curtailment",
    "session_curtailment",
    "sign_test_curtailment",
    "wilson_curtailment",
]

PairOutcome = Literal["win", "loss", "tie"]
CurtailedDecision = Literal["pass", "fail", "significant", "not significant"]


@dataclass(frozen=True, slots=True)
class Curtailment:
    """Whether a fixed design's decision is already fixed, which decision, and why.

    ``decision`` is None while the remaining trials could still change it.
    """

    decision: CurtailedDecision | None
    remaining: int
    reason: str

    @property
    def decided(self) -> bool:
        return self.decision is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "decided": self.decided,
            "decision": self.decision,
            "curtailed": self.remaining if self.decided else 0,
            "reason": self.reason,
        }


def _counts(planned: int, **done: int) -> int:
    total = stats._count("planned", planned)
    seen = sum(stats._count(name, value) for name, value in done.items())
    if seen > total:
        shown = ", ".join(f"{k}={v}" for k, v in done.items())
        raise InvalidArgumentError(f"{shown} add up to more than planned={total}")
    return total - seen


def wilson_curtailment(
    successes: int,
    failures: int,
    planned: int,
    floor: float = 0.50,
    confidence: float = 0.95,
) -> Curtailment:
    """eval04/eval05's decision after ``successes`` and ``failures`` of ``planned`` trials."""
    remaining = _counts(planned, successes=successes, failures=failures)
    s_min = wilson_min_successes(planned, floor, confidence)
    if s_min is None:
        return Curtailment(
            "fail",
            remaining,
            f"{planned} trial(s) cannot clear the floor {floor:.2f} even if all succeed",
        )
    if successes >= s_min:
        return Curtailment(
            "pass",
            remaining,
            f"{successes} successes already reach the {s_min} of {planned} that clear the "
            f"Wilson floor {floor:.2f}; no remaining outcome can lower them",
        )
    if successes + remaining < s_min:
        return Curtailment(
            "fail",
            remaining,
            f"{failures} failure(s) leave at most {successes + remaining} successes of "
            f"{planned}, below the {s_min} that clear the Wilson floor {floor:.2f}",
        )
    return Curtailment(None, remaining, f"{s_min} of {planned} successes needed; undecided")


def session_curtailment(
    tallies: Mapping[str, tuple[int, int]],
    planned: int,
    floor: float = 0.50,
    confidence: float = 0.95,
) -> dict[str, Curtailment] | None:
    """The repetitions of a stochastic session stop when every scenario's decision is fixed.

    ``tallies`` maps each scenario to its (successes, failures) so far. Returns each
    scenario's fixed decision, or None while any scenario could still go either way (or
    before anything is tallied).
    """
    if not tallies:
        return None
    decisions = {
        scenario: wilson_curtailment(s, f, planned, floor, confidence)
        for scenario, (s, f) in tallies.items()
    }
    return decisions if all(d.decided for d in decisions.values()) else None


def all_pass_curtailment(passes: int, failures: int, planned: int) -> Curtailment:
    """A rule that needs every one of ``planned`` trials to pass."""
    remaining = _counts(planned, passes=passes, failures=failures)
    if failures:
        return Curtailment(
            "fail", remaining, f"{failures} measured failure(s): every trial had to pass"
        )
    if remaining == 0:
        return Curtailment("pass", 0, f"all {planned} trial(s) passed")
    return Curtailment(None, remaining, "every trial so far passed; undecided")


def sign_test_curtailment(
    wins: int, losses: int, ties: int, planned: int, alpha: float = 0.05
) -> Curtailment:
    """Whether the sign test over ``planned`` cases is already significant or not, for good.

    Every completion of the remaining cases (``a`` more wins and ``b`` more losses, the rest
    ties) is tried; the decision is fixed when they all agree.
    """
    remaining = _counts(planned, wins=wins, losses=losses, ties=ties)
    level = stats._open_unit("alpha", alpha)
    outcomes = {
        stats.sign_test_p(wins + a, losses + b) <= level
        for a in range(remaining + 1)
        for b in range(remaining - a + 1)
    }
    if len(outcomes) > 1:
        return Curtailment(None, remaining, "the remaining cases can still change significance")
    significant = outcomes.pop()
    if significant:
        return Curtailment(
            "significant",
            remaining,
            f"{wins} wins and {losses} losses stay significant at {level:g} whatever the "
            f"{remaining} remaining case(s) give",
        )
    return Curtailment(
        "not significant",
        remaining,
        f"no outcome of the {remaining} remaining case(s) can make {wins} wins and {losses} "
        f"losses significant at {level:g}",
    )


# --------------------------------------------------------------------------------------------
# The anytime-valid sequential sign test
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SequentialResult:
    """Where a sequential test stopped, and why."""

    design: dict[str, Any]
    cases: int
    wins: int
    losses: int
    ties: int
    e_value: float
    stopped: bool
    rejected: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "design": self.design,
            "stopping_time": self.cases,
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "e_value": self.e_value,
            "stopped": self.stopped,
            "rejected": self.rejected,
            "reason": self.reason,
        }


_LOG_SLACK = 1e-9


@functools.lru_cache(maxsize=4096)
def _null_rejection(
    design_win_rate: float, futility: float | None, max_cases: int, log_bound: float
) -> float:
    """The chance, for a fair coin over ``max_cases`` pairs, that the two-sided e-value reaches
    ``exp(log_bound)`` before falling to ``futility``."""
    a, b = math.log(2 * design_win_rate), math.log(2 * (1 - design_win_rate))
    log_futility = -math.inf if futility is None else math.log(futility)
    alive = [1.0]  # alive[w]: chance of w wins among the pairs so far, not yet stopped
    rejected = 0.0
    for pairs in range(1, max_cases + 1):
        step = [0.0] * (pairs + 1)
        for wins, mass in enumerate(alive):
            if mass:
                step[wins] += mass / 2
                step[wins + 1] += mass / 2
        for wins, mass in enumerate(step):
            if mass:
                losses = pairs - wins
                log_e = _two_sided(wins * a + losses * b, wins * b + losses * a)
                if log_e >= log_bound - _LOG_SLACK:
                    rejected += mass
                    step[wins] = 0.0
                elif log_e <= log_futility:
                    step[wins] = 0.0
        alive = step
    return rejected


def _two_sided(up: float, down: float) -> float:
    high, low = max(up, down), min(up, down)
    return high + math.log1p(math.exp(low - high)) - math.log(2.0)


@dataclass(frozen=True, slots=True)
class SequentialSignTest:
    """A two-sided e-process on discordant pairs; stop at ``1/alpha`` (reject) or futility."""

    design_win_rate: float = 0.9
    alpha: float = 0.05
    futility: float | None = None
    max_cases: int | None = None
    # None: Ville's 1/alpha, valid over any horizon; set by truncated() to the exact bound.
    reject_at: float | None = None

    def __post_init__(self) -> None:
        q = stats._open_unit("design_win_rate", self.design_win_rate)
        if q == 0.5:
            raise InvalidArgumentError(
                "design_win_rate 0.5 is the null itself: the e-value stays at 1"
            )
        stats._open_unit("alpha", self.alpha)
        if self.futility is not None and not 0.0 < self.futility < 1.0:
            raise InvalidArgumentError(
                f"futility must lie strictly between 0 and 1, got {self.futility}"
            )
        if self.max_cases is not None and stats._count("max_cases", self.max_cases) < 1:
            raise InvalidArgumentError("max_cases must be at least 1")
        if self.reject_at is not None:
            if self.max_cases is None:
                raise InvalidArgumentError(
                    "reject_at below 1/alpha is valid only for a truncated design: set max_cases"
                )
            if not self.reject_at > 1.0:
                raise InvalidArgumentError(f"reject_at must exceed 1, got {self.reject_at}")

    @classmethod
    def truncated(
        cls,
        design_win_rate: float,
        max_cases: int,
        *,
        alpha: float = 0.05,
        futility: float | None = None,
    ) -> SequentialSignTest:
        """The design stopping by ``max_cases`` whose rejection bound spends exactly ``alpha``."""
        base = cls(design_win_rate, alpha, futility, max_cases)
        return dataclasses.replace(base, reject_at=base._exact_bound())

    @property
    def threshold(self) -> float:
        return 1.0 / self.alpha if self.reject_at is None else self.reject_at

    def rejects(self, log_e: float) -> bool:
        """Whether a log e-value reaches the rejection bound (which is itself a reachable
        e-value for a truncated design, so equality must count despite rounding)."""
        return log_e >= math.log(self.threshold) - _LOG_SLACK

    def type_one_error(self) -> float:
        """The exact chance under the null of ever rejecting, every case discordant, looking
        after each one up to ``max_cases`` (Ville's bound, ``alpha``, when untruncated)."""
        if self.max_cases is None:
            return self.alpha
        return self._null_rejection(math.log(self.threshold))

    def _null_rejection(self, log_bound: float) -> float:
        assert self.max_cases is not None
        return _null_rejection(
            self.design_win_rate, self.futility, self.max_cases, round(log_bound, 12)
        )

    def _exact_bound(self) -> float:
        assert self.max_cases is not None
        # The chance of rejecting changes only at e-values a path can reach: search those.
        reachable = sorted(
            {
                round(self.log_e_value(wins, pairs - wins), 12)
                for pairs in range(1, self.max_cases + 1)
                for wins in range(pairs + 1)
            }
            | {math.log(1.0 / self.alpha)}
        )
        candidates = [v for v in reachable if 0.0 < v <= math.log(1.0 / self.alpha)]
        low, high = 0, len(candidates) - 1  # the last (1/alpha) is always admissible
        while low < high:
            middle = (low + high) // 2
            if self._null_rejection(candidates[middle]) <= self.alpha:
                high = middle
            else:
                low = middle + 1
        return math.exp(candidates[low])

    def log_e_value(self, wins: int, losses: int) -> float:
        q = self.design_win_rate
        up = wins * math.log(2 * q) + losses * math.log(2 * (1 - q))
        down = wins * math.log(2 * (1 - q)) + losses * math.log(2 * q)
        return _two_sided(up, down)

    def e_value(self, wins: int, losses: int) -> float:
        return math.exp(self.log_e_value(wins, losses))

    def describe(self) -> dict[str, Any]:
        return {
            "test": "two-sided sequential sign test (e-process on discordant pairs)",
            "design_win_rate": self.design_win_rate,
            "alpha": self.alpha,
            "reject_at_e_value": self.threshold,
            "futility_at_e_value": self.futility,
            "max_cases": self.max_cases,
            "validity": (
                "Ville's inequality: type I error <= alpha under continuous monitoring"
                if self.reject_at is None
                else f"exact: type I error {self.type_one_error():.4f} <= alpha under "
                f"monitoring after every case up to {self.max_cases}, futility binding"
            ),
        }

    def stops(self, wins: int, losses: int, ties: int) -> bool:
        """Whether the test ends at these counts (the cheap form of :meth:`verdict`)."""
        log_e = self.log_e_value(wins, losses)
        return (
            self.rejects(log_e)
            or (self.futility is not None and log_e <= math.log(self.futility))
            or (self.max_cases is not None and wins + losses + ties >= self.max_cases)
        )

    def verdict(self, wins: int, losses: int, ties: int) -> SequentialResult:
        """The state after these counts: stopped (and why) or still running."""
        log_e = self.log_e_value(wins, losses)
        cases = wins + losses + ties
        e = math.exp(log_e)
        design = self.describe()

        def result(stopped: bool, rejected: bool, reason: str) -> SequentialResult:
            return SequentialResult(design, cases, wins, losses, ties, e, stopped, rejected, reason)

        if self.rejects(log_e):
            side = "challenger" if wins > losses else "reference"
            return result(
                True,
                True,
                f"e-value {e:.3g} reached {self.threshold:g} after {cases} case(s): the "
                f"{side} is better (type I error <= {self.alpha:g})",
            )
        if self.futility is not None and log_e <= math.log(self.futility):
            return result(
                True, False, f"e-value {e:.3g} fell to the futility bound {self.futility:g}"
            )
        if self.max_cases is not None and cases >= self.max_cases:
            return result(
                True, False, f"{cases} case(s), the design's limit, without reaching the bound"
            )
        return result(False, False, f"e-value {e:.3g} after {cases} case(s): still running")

    def run(self, outcomes: Iterable[PairOutcome]) -> SequentialResult:
        """Feed cases in order; stop at the first case that ends the test."""
        counts = {"win": 0, "loss": 0, "tie": 0}
        for outcome in outcomes:
            if outcome not in counts:
                raise InvalidArgumentError(f"a pair outcome is win, loss or tie, got {outcome!r}")
            counts[outcome] += 1
            if self.stops(counts["win"], counts["loss"], counts["tie"]):
                return self.verdict(counts["win"], counts["loss"], counts["tie"])
        state = self.verdict(counts["win"], counts["loss"], counts["tie"])
        return dataclasses.replace(
            state,
            reason=f"the cases ran out after {state.cases} without reaching a bound: no decision",
        )
