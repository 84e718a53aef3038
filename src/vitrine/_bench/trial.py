"""One trial, self-contained: ask the subject (with retries), let every check observe, report.

A :class:`TrialRunner` holds everything a trial needs (the arm, the admitted checks, the
timeouts, the retry policy) and nothing that belongs to the run (no writer, no event sink), so
the same object runs a trial in the driver's event loop or is shipped to a remote worker and
runs it there. Either way it returns the same :class:`TrialOutcome`, which only the driver
records.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vitrine._bench.model import AdmittedCheck, Arm, Case, FunctionCheck
from vitrine._bench.response import SubjectResponse
from vitrine._bench.results import ScenarioRow
from vitrine._bench.retry import NO_RETRY, FailedAttempt, RetryPolicy
from vitrine._journal import journal_scope, merged
from vitrine._outcomes import Observation
from vitrine._redact import bound_text, describe_exception
from vitrine.errors import WrongTypeError

__all__ = ["TrialOutcome", "TrialRunner", "Tries", "elapsed_ms", "not_measured_rows"]


@dataclass(frozen=True, slots=True)
class TrialOutcome:
    """What one trial produced: one row per check, its duration, the subject's error, its
    response, and the failed tries of a trial that took more than one."""

    case_id: str
    rows: tuple[ScenarioRow, ...]
    duration_ms: float
    error: str | None
    response: Mapping[str, Any] | None
    failed_attempts: tuple[FailedAttempt, ...] = ()


@dataclass(frozen=True, slots=True)
class Tries:
    """What asking the subject under a retry policy came to: its response, or the last try's
    sanitized error and exception, every failed try, and whether the last failure was one the
    policy retries (so the tries ran out) or a permanent one (never retried)."""

    response: SubjectResponse | None
    error: str | None
    failures: tuple[FailedAttempt, ...]
    tries: int
    exception: Exception | None = None
    retryable: bool = False


class TrialRunner:
    """Runs single trials of one arm against one definition's admitted checks.

    ``token`` identifies this runner (one per run), so an executor that ships it to remote
    workers can send it once and refer to it afterwards.
    """

    __slots__ = ("_rng", "arm", "check_timeout_s", "checks", "retry", "token", "trial_timeout_s")

    def __init__(
        self,
        arm: Arm,
        checks: Sequence[AdmittedCheck],
        *,
        trial_timeout_s: float,
        check_timeout_s: float,
        retry: RetryPolicy = NO_RETRY,
    ) -> None:
        self.arm = arm
        self.checks = tuple(checks)
        self.trial_timeout_s = trial_timeout_s
        self.check_timeout_s = check_timeout_s
        self.retry = retry
        self.token = uuid.uuid4().hex
        self._rng = retry.rng()

    async def observe(self, case: Case, *, lost: Sequence[FailedAttempt] = ()) -> TrialOutcome:
        """Run the trial of ``case``: the subject's tries, then every check on its response.

        ``lost`` are tries that an executor already spent elsewhere (a worker that died); they
        count against the retry policy and are kept with the trial's other failed tries.
        """
        started = time.perf_counter()
        tried = await self.respond(case, lost=lost)
        response, error = tried.response, tried.error
        # Only a trial that took more than one try carries its tries: a trial that failed once
        # is fully described by its error.
        retried = tried.failures if tried.tries > 1 else ()

        if response is None:
            reason = f"the subject failed, so nothing could be observed: {error}"
            rows = not_measured_rows(case, self.checks, reason)
        else:
            rows = tuple([await self._evaluate(c, case, response) for c in self.checks])
        if len(rows) != len(self.checks):  # a runner bug: each check above yields one row
            raise RuntimeError(
                f"case {case.id!r} produced {len(rows)} rows for {len(self.checks)} checks"
            )
        return TrialOutcome(
            case.id,
            rows,
            elapsed_ms(started),
            error,
            None if response is None else {**response.to_dict(), "case_input": _input_of(case)},
            retried,
        )

    async def respond(self, case: Case, *, lost: Sequence[FailedAttempt] = ()) -> Tries:
        """Ask the subject about ``case`` under the retry policy: a try, and another after a
        transient failure, until one answers or the tries run out. No check runs."""
        failures: list[FailedAttempt] = list(lost)
        policy = self.retry
        tries = len(failures)
        # Tries an executor already spent elsewhere may have used up the policy: the last of
        # them is then the trial's error.
        error: str | None = failures[-1].error if failures else None
        exc: Exception | None = None
        while tries < policy.attempts:
            if tries:
                await asyncio.sleep(policy.delay_s(tries, self._rng))
            tries += 1
            response, error, exc = await self._attempt(case)
            if exc is None:
                return Tries(response, None, tuple(failures), tries)
            failures.append(FailedAttempt.of(tries, exc, error))
            if not policy.retryable(exc):
                return Tries(None, error, tuple(failures), tries, exc, retryable=False)
        return Tries(None, error, tuple(failures), tries, exc, retryable=True)

    async def _attempt(
        self, case: Case
    ) -> tuple[SubjectResponse | None, str | None, Exception | None]:
        """One try of the subject: its response, or the sanitized error and the exception."""
        try:
            async with asyncio.timeout(self.trial_timeout_s) as scope:
                with journal_scope() as journal:
                    response = await self.arm.respond(case)
                return merged(response, journal), None, None
        except TimeoutError as exc:
            # Only our own deadline is a trial timeout; a TimeoutError raised by the subject's
            # own code is an ordinary subject failure and is described as such.
            error = (
                f"the subject did not answer within {self.trial_timeout_s:g} s"
                if scope.expired()
                else describe_exception(exc)
            )
            return None, error, exc
        except Exception as exc:
            return None, describe_exception(exc), exc

    async def _evaluate(
        self, admitted: AdmittedCheck, case: Case, response: SubjectResponse
    ) -> ScenarioRow:
        started = time.perf_counter()
        scope: asyncio.Timeout | None = None
        check = admitted.check
        try:
            pending = (
                check.begin(case, response)
                if isinstance(check, FunctionCheck)
                else check.evaluate(case, response)
            )
            if isinstance(pending, Observation):
                observation: object = pending
            else:
                async with asyncio.timeout(self.check_timeout_s) as scope:
                    observation = await pending
            if not isinstance(observation, Observation):
                raise WrongTypeError(
                    f"the check returned {type(observation).__name__}, not an Observation"
                )
        except TimeoutError as exc:
            why = (
                f"did not finish within {self.check_timeout_s:g} s"
                if scope is not None and scope.expired()
                else describe_exception(exc)
            )
            observation = Observation.not_measured(f"check {admitted.key!r} {why}")
        except Exception as exc:
            # A check that crashes has not observed anything: never a pass, never a fail.
            observation = Observation.not_measured(
                f"check {admitted.key!r} raised {describe_exception(exc)}"
            )
        return ScenarioRow(case.id, admitted.key, observation, elapsed_ms(started))


def not_measured_rows(
    case: Case, checks: Sequence[AdmittedCheck], reason: str
) -> tuple[ScenarioRow, ...]:
    """One not-measured row per check: nothing about ``case`` was observed, for ``reason``."""
    return tuple(ScenarioRow(case.id, c.key, Observation.not_measured(reason)) for c in checks)


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter`` reading)."""
    # Rounded to the microsecond so the value survives a JSON round trip unchanged.
    return round((time.perf_counter() - started) * 1000.0, 3)


_INPUT_PREVIEW = 2000  # characters of the case's input kept beside its response


def _input_of(case: Case) -> str:
    """What the subject was asked, bounded, so a trial can be read without its definition."""
    given = case.input
    if not isinstance(given, str):
        given = json.dumps(given, ensure_ascii=False, default=str, sort_keys=True)
    return bound_text(given, _INPUT_PREVIEW)
