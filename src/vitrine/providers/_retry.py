"""Retries for provider calls, and the record of every attempt they make.

vitrine retries model calls itself rather than leaving it to an SDK, for two reasons: every
attempt must be visible as reliability evidence (a 429 followed by a success is a *recovered*
call, not a clean one), and the backoff must be the same for every provider.

:func:`call_with_retry` runs one logical call: it retries retryable :class:`ProviderError`\\ s
(rate limits, server errors, timeouts, unreachable endpoints) with exponential backoff and
jitter, gives up after ``max_retries`` retries by re-raising the last error, and reports each
attempt as a :class:`ProviderAttempt`. A caller collects them with :func:`record_attempts`::

    with record_attempts() as attempts:
        completion = await model.complete(request)
    census = attempt_census("ranker", attempts)

The recorder is a context variable, so concurrent trials on one shared model each see only
their own attempts. Cancellation is recorded as a ``cancelled`` attempt and always propagates.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

from vitrine import tracing
from vitrine._bench.response import AttemptOutcome, StageAttemptCensus
from vitrine.errors import InvalidArgumentError, RetryAfterError
from vitrine.providers._base import ChatCompletion, ProviderError, ProviderFailure

__all__ = [
    "AttemptSink",
    "ProviderAttempt",
    "ProviderBackoff",
    "RetryAfterError",
    "attempt_census",
    "call_with_retry",
    "record_attempts",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ProviderBackoff:
    """How one model call retries a retryable :class:`ProviderError`: exponential backoff.

    Retry ``n`` waits about ``base * 2**(n-1)`` seconds. This is not :class:`vitrine.RetryPolicy`,
    which retries a whole trial whose subject raised; a provider's backoff works inside a trial,
    call by call, and every attempt it makes is recorded.

    The wait is drawn uniformly from ``[(1 - jitter) * d, d]`` so that many trials that were
    throttled together do not all come back at the same instant; ``d`` is capped at
    ``max_delay_s``. ``max_retries`` counts retries, so a call makes at most
    ``max_retries + 1`` attempts.
    """

    max_retries: int = 3
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise InvalidArgumentError(f"max_retries cannot be negative, got {self.max_retries}")
        if self.base_delay_s < 0 or self.max_delay_s < self.base_delay_s:
            raise InvalidArgumentError("need 0 <= base_delay_s <= max_delay_s")
        if not 0.0 <= self.jitter <= 1.0:
            raise InvalidArgumentError(f"jitter is a fraction in [0, 1], got {self.jitter}")

    def delay_s(
        self, retry: int, rng: random.Random | None = None, *, retry_after_s: float | None = None
    ) -> float:
        """The wait before retry number ``retry`` (counted from 1)."""
        if retry < 1:
            raise InvalidArgumentError(f"retries are counted from 1, got {retry}")
        ceiling = min(self.max_delay_s, self.base_delay_s * 2.0 ** (retry - 1))
        draw = (rng or random).random()
        delay = ceiling * (1.0 - self.jitter * draw)
        if retry_after_s is not None:
            # The provider's advice wins over a shorter backoff, but never beyond our cap: a
            # hostile or confused Retry-After must not stall a run for minutes.
            delay = max(delay, min(retry_after_s, self.max_delay_s))
        return delay


@dataclass(frozen=True, slots=True)
class ProviderAttempt:
    """One attempt of one logical model call, as reliability evidence.

    ``outcome`` is ``usable`` for a response the provider accepted as well-formed,
    ``provider_failure`` for a typed failure, ``cancelled`` when the caller cancelled it.
    Whether a usable response is *content*-usable (valid JSON for a stage, say) is for the
    caller to judge. ``retry_delay_s`` is the wait before the next attempt, or None when there
    was none.
    """

    ordinal: int
    outcome: AttemptOutcome
    failure: ProviderFailure | None
    elapsed_s: float
    retry_delay_s: float | None
    model_id: str
    purpose: str

    def to_dict(self) -> dict[str, object]:
        return {
            "ordinal": self.ordinal,
            "outcome": self.outcome.value,
            "failure": None if self.failure is None else self.failure.value,
            "elapsed_s": round(self.elapsed_s, 6),
            "retry_delay_s": None if self.retry_delay_s is None else round(self.retry_delay_s, 6),
            "model_id": self.model_id,
            "purpose": self.purpose,
        }


AttemptSink = Callable[[ProviderAttempt], None]

# A tuple of lists so that nested recorders (a trial's, and a stage's inside it) all see every
# attempt. Lists are shared by reference, so appends made in a child task reach the parent.
_RECORDERS: ContextVar[tuple[list[ProviderAttempt], ...]] = ContextVar(
    "vitrine_provider_attempt_recorders", default=()
)


@contextmanager
def record_attempts() -> Iterator[list[ProviderAttempt]]:
    """Collect the attempts of every provider call made inside the block (this task only)."""
    attempts: list[ProviderAttempt] = []
    token = _RECORDERS.set((*_RECORDERS.get(), attempts))
    try:
        yield attempts
    finally:
        _RECORDERS.reset(token)


def attempt_census(
    stage: str, attempts: Sequence[ProviderAttempt], *, fell_back: bool = False
) -> StageAttemptCensus:
    """The census of one stage's provider attempts (content usability not judged here)."""
    return StageAttemptCensus.from_attempts(
        stage, [a.outcome for a in attempts], fell_back=fell_back
    )


async def call_with_retry(
    operation: Callable[[], Awaitable[T]],
    backoff: ProviderBackoff,
    *,
    model_id: str = "",
    purpose: str = "",
    on_attempt: AttemptSink | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    rng: random.Random | None = None,
) -> T:
    """Run ``operation`` until it succeeds, fails for good, or the retries are spent.

    ``operation`` must raise :class:`ProviderError` for provider failures; any other exception
    is a bug and propagates at once, unrecorded. The error re-raised after the last attempt is
    the last attempt's own, raised outside any ``except`` block so it carries no chained SDK
    exception (whose message could hold an endpoint or a raw provider body). With tracing on,
    the call is one ``chat`` span (the caller's, when it opened one) and each attempt an event.
    """
    with tracing.model_call(
        model_id, provider=tracing.provider_of(model_id), purpose=purpose
    ) as span:
        result = await _attempts(operation, backoff, model_id, purpose, on_attempt, sleep, rng)
        if isinstance(result, ChatCompletion):
            tracing.record_completion(span, result)
        return result


async def _attempts(
    operation: Callable[[], Awaitable[T]],
    backoff: ProviderBackoff,
    model_id: str,
    purpose: str,
    on_attempt: AttemptSink | None,
    sleep: Callable[[float], Awaitable[None]],
    rng: random.Random | None,
) -> T:
    ordinal = 0
    while True:
        ordinal += 1
        started = time.perf_counter()
        failure: ProviderError | None = None
        try:
            result = await operation()
        except asyncio.CancelledError:
            _emit(
                ProviderAttempt(
                    ordinal,
                    AttemptOutcome.CANCELLED,
                    ProviderFailure.CANCELLED,
                    time.perf_counter() - started,
                    None,
                    model_id,
                    purpose,
                ),
                on_attempt,
            )
            raise
        except ProviderError as exc:
            failure = exc
        elapsed = time.perf_counter() - started
        if failure is None:
            _emit(
                ProviderAttempt(
                    ordinal, AttemptOutcome.USABLE, None, elapsed, None, model_id, purpose
                ),
                on_attempt,
            )
            return result
        retry = failure.retryable and ordinal <= backoff.max_retries
        advice = failure.retry_after_s if isinstance(failure, RetryAfterError) else None
        delay = backoff.delay_s(ordinal, rng, retry_after_s=advice) if retry else None
        _emit(
            ProviderAttempt(
                ordinal,
                AttemptOutcome.PROVIDER_FAILURE,
                failure.failure,
                elapsed,
                delay,
                model_id,
                purpose,
            ),
            on_attempt,
        )
        if delay is None:
            raise failure
        if delay > 0:
            await sleep(delay)


def _emit(attempt: ProviderAttempt, on_attempt: AttemptSink | None) -> None:
    tracing.provider_attempt(
        attempt.ordinal,
        attempt.outcome.value,
        None if attempt.failure is None else attempt.failure.value,
    )
    for attempts in _RECORDERS.get():
        attempts.append(attempt)
    if on_attempt is not None:
        on_attempt(attempt)
