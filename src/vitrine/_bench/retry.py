"""Per-trial retries: which failures are transient, how long to wait, and what each try left.

A retry is evidence too. Every failed attempt is kept (its error category and a sanitized
sentence) so that a run whose trials only passed on the third try says so in its traces and its
summary, instead of looking exactly like a run that never stumbled.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from vitrine._redact import describe_exception
from vitrine.errors import InvalidArgumentError

__all__ = ["DEFAULT_RETRIES", "FailedAttempt", "RetryPolicy", "is_transient_sdk_error"]


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """One try of a trial that raised: its number, the exception's type name, and why."""

    attempt: int
    category: str
    error: str

    @classmethod
    def of(cls, attempt: int, exc: BaseException, error: str | None = None) -> FailedAttempt:
        return cls(attempt, type(exc).__name__, error or describe_exception(exc))

    def to_dict(self) -> dict[str, Any]:
        return {"attempt": self.attempt, "category": self.category, "error": self.error}

    @classmethod
    def from_dict(cls, data: Any) -> FailedAttempt:
        return cls(int(data["attempt"]), str(data["category"]), str(data["error"]))


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retry a trial whose subject raised one of ``retry_on``, up to ``retries`` more times.

    The wait before retry ``k`` (counting from 1) is ``backoff_s * 2 ** (k - 1)``, capped at
    ``max_backoff_s``, then spread by up to ``jitter`` of itself in either direction so that
    trials that failed together do not all come back together. ``seed`` makes the jitter
    reproducible. Only the subject's call is retried, never a check: a check that fails is a
    finding about the check, not a transient fault of the subject.

    ``sdk_transient`` also retries what the model SDKs and HTTP clients raise for a fault that
    trying again can cure (see :func:`is_transient_sdk_error`), although those classes do not
    subclass ``TimeoutError`` or ``ConnectionError``: an agent built on the OpenAI SDK is then
    retried on a 500 without naming ``openai.InternalServerError``.
    """

    retries: int = 0
    retry_on: tuple[type[BaseException], ...] = (TimeoutError, ConnectionError)
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    jitter: float = 0.25
    seed: int | None = None
    sdk_transient: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int):
            raise InvalidArgumentError(f"retries must be a whole number, got {self.retries!r}")
        if self.retries < 0:
            raise InvalidArgumentError(f"retries must be 0 or more, got {self.retries}")
        given: Any = self.retry_on  # a single class is accepted for convenience
        retry_on = (given,) if isinstance(given, type) else tuple(given)
        for kind in retry_on:
            if not (isinstance(kind, type) and issubclass(kind, Exception)):
                raise InvalidArgumentError(
                    f"retry_on must name exception classes, got {kind!r}: only an exception "
                    "type says which failures are transient"
                )
        object.__setattr__(self, "retry_on", retry_on)
        if self.retries and not retry_on:
            raise InvalidArgumentError(
                f"retries={self.retries} with an empty retry_on retries nothing: name the "
                "transient exception types"
            )
        if not (0 <= self.backoff_s <= self.max_backoff_s):
            raise InvalidArgumentError(
                f"backoff must satisfy 0 <= backoff_s <= max_backoff_s, got "
                f"{self.backoff_s} and {self.max_backoff_s}"
            )
        if not 0 <= self.jitter <= 1:
            raise InvalidArgumentError(f"jitter is a fraction between 0 and 1, got {self.jitter}")

    @property
    def attempts(self) -> int:
        """The most tries one trial gets: the first plus the retries."""
        return 1 + self.retries

    def retryable(self, exc: BaseException) -> bool:
        """Whether trying again can cure ``exc``: one of ``retry_on``, or an SDK's transient."""
        if isinstance(exc, self.retry_on):
            return True
        return self.sdk_transient and is_transient_sdk_error(exc)

    def rng(self) -> random.Random:
        """A generator for one run's jitter; seeded runs wait the same way every time."""
        return random.Random(self.seed)

    def delay_s(self, retry: int, rng: random.Random) -> float:
        """Seconds to wait before retry ``retry`` (1 for the first retry)."""
        base = min(self.max_backoff_s, self.backoff_s * 2.0 ** (retry - 1))
        spread = base * self.jitter
        return max(0.0, base + rng.uniform(-spread, spread))


NO_RETRY = RetryPolicy()

DEFAULT_RETRIES = 2
"""Retries a trial gets when the caller says nothing: enough to ride out a 1-2% fault rate,
and each one kept in the trial's trace and counted in the summary."""

# (top-level package, class name) of every exception the SDKs raise for a fault that trying
# again can cure; looked up along the exception's MRO by name, so no SDK is imported to ask.
_TRANSIENT_CLASSES = frozenset(
    {
        ("openai", "APIConnectionError"),  # APITimeoutError subclasses it
        ("openai", "RateLimitError"),
        ("openai", "InternalServerError"),
        ("anthropic", "APIConnectionError"),
        ("anthropic", "RateLimitError"),
        ("anthropic", "InternalServerError"),
        ("anthropic", "OverloadedError"),
        ("httpx", "TimeoutException"),
        ("httpx", "NetworkError"),
        ("httpx", "RemoteProtocolError"),
        ("httpcore", "TimeoutException"),
        ("httpcore", "NetworkError"),
        ("httpcore", "RemoteProtocolError"),
        ("aiohttp", "ClientConnectionError"),
        ("aiohttp", "ServerTimeoutError"),
    }
)
# A status error is transient when its status is one the SDKs themselves retry.
_STATUS_CLASSES = frozenset(
    {
        ("openai", "APIStatusError"),
        ("anthropic", "APIStatusError"),
        ("aiohttp", "ClientResponseError"),
    }
)
_TRANSIENT_STATUS = frozenset({408, 409, 429})


def is_transient_sdk_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an OpenAI, Anthropic, httpx or aiohttp error for a transient fault:
    a timeout, a refused or dropped connection, a 408, 409 or 429, or any 5xx."""
    for kind in type(exc).__mro__:
        key = (kind.__module__.partition(".")[0], kind.__name__)
        if key in _TRANSIENT_CLASSES:
            return True
        if key in _STATUS_CLASSES:
            status = getattr(exc, "status_code", getattr(exc, "status", None))
            return isinstance(status, int) and (status in _TRANSIENT_STATUS or status >= 500)
    return False
