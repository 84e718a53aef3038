"""Typed progress events. Every start event has exactly one matching terminal event.

Events are small frozen dataclasses handed to a synchronous callback; a display or a timeline
consumes them, and nothing in the runner waits on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "CheckCompleted",
    "Event",
    "EventSink",
    "RunCompleted",
    "RunStarted",
    "TrialCompleted",
    "TrialStarted",
]


@dataclass(frozen=True, slots=True)
class RunStarted:
    run_id: str
    definition: str
    arm_id: str
    repetition: int
    cases: int
    checks: int


@dataclass(frozen=True, slots=True)
class TrialStarted:
    run_id: str
    case_id: str


@dataclass(frozen=True, slots=True)
class CheckCompleted:
    run_id: str
    case_id: str
    check_key: str
    state: str
    passed: bool | None


@dataclass(frozen=True, slots=True)
class TrialCompleted:
    """Terminal for TrialStarted; ``error`` is a sanitized reason when the subject failed."""

    run_id: str
    case_id: str
    duration_ms: float
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RunCompleted:
    """Terminal for RunStarted, emitted even when the run ended in error or cancellation."""

    run_id: str
    verdict: str
    duration_s: float
    run_dir: str | None
    error: str | None = None


Event = RunStarted | TrialStarted | CheckCompleted | TrialCompleted | RunCompleted
EventSink = Callable[[Event], None]
