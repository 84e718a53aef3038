"""The rows a run produces and the run as it is read back for scoring.

Score functions read only these types, which the runner returns and the run store loads, so
every number in a report can be recomputed from the run directories alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

from vitrine._bench.retry import FailedAttempt
from vitrine._floors import ChanceFloor
from vitrine._outcomes import Census, Observation, Verdict, run_verdict
from vitrine.errors import UnknownKeyError

__all__ = ["ROW_SEPARATOR", "CheckInfo", "RunResult", "ScenarioRow", "row_id"]

# The middle dot cannot appear in a sanitized check key, so a row id splits unambiguously.
ROW_SEPARATOR = "·"


def row_id(case_id: str, check_key: str) -> str:
    return f"{case_id}{ROW_SEPARATOR}{check_key}"


@dataclass(frozen=True, slots=True)
class ScenarioRow:
    case_id: str
    check_key: str
    observation: Observation
    duration_ms: float = 0.0

    @property
    def row_id(self) -> str:
        return row_id(self.case_id, self.check_key)


@dataclass(frozen=True, slots=True)
class CheckInfo:
    """What a run recorded about one admitted check: enough to score without the code."""

    key: str
    version: str
    floor: ChanceFloor
    authority: str


@dataclass(frozen=True)
class RunResult:
    """One arm x one repetition over all cases: a sealed run, or one read back from disk."""

    run_id: str
    definition_key: str
    definition_version: str
    definition_hash: str
    arm_id: str
    repetition: int
    checks: tuple[CheckInfo, ...]
    case_ids: tuple[str, ...]
    rows: tuple[ScenarioRow, ...]
    started_at: str
    duration_s: float
    complete: bool
    run_dir: str | None = None
    subject_errors: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    responses: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    # The failed tries of every trial that was retried, whether or not a later try succeeded.
    retries: Mapping[str, tuple[FailedAttempt, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )

    def __repr__(self) -> str:
        # Kept short on purpose: asyncio formats the repr of a finished main task (through
        # signal.getsignal in asyncio.run), and a full repr of 50,000 rows costs a second.
        return (
            f"RunResult(run_id={self.run_id!r}, definition={self.identity!r}, "
            f"arm_id={self.arm_id!r}, repetition={self.repetition}, rows={len(self.rows)}, "
            f"complete={self.complete})"
        )

    @property
    def identity(self) -> str:
        return f"{self.definition_key}@{self.definition_version}"

    # Computed once: a run's rows never change, and the seal, the summary and the report each
    # ask (over 50,000 rows, each pass cost tens of milliseconds).
    @cached_property
    def verdict(self) -> Verdict:
        return run_verdict(row.observation for row in self.rows)

    @cached_property
    def census(self) -> Census:
        return Census.of(row.observation for row in self.rows)

    @property
    def retried_trials(self) -> int:
        """How many trials needed more than one try (a retry, successful or not)."""
        return len(self.retries)

    @property
    def unmeasured_trials(self) -> int:
        """Trials whose subject never produced a response, after every retry."""
        return len(self.subject_errors)

    def check(self, key: str) -> CheckInfo:
        for info in self.checks:
            if info.key == key:
                return info
        raise UnknownKeyError(f"run {self.run_id} has no check {key!r}")

    def observation(self, case_id: str, check_key: str) -> Observation | None:
        for row in self.rows:
            if row.case_id == case_id and row.check_key == check_key:
                return row.observation
        return None

    def rows_for(self, check_key: str) -> tuple[ScenarioRow, ...]:
        return tuple(row for row in self.rows if row.check_key == check_key)
