"""The benchmark runner: one call runs one arm x one repetition over every case into one run.

Each trial asks the subject for a response under a timeout, then lets every admitted check
observe it. Whatever goes wrong inside a trial becomes a ``not_measured`` row with a sanitized
reason, never a pass and never a crash; whatever goes wrong around the trials (cancellation, a
failing disk) still ends with a completed, sealed run before the error propagates.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from vitrine import tracing
from vitrine._bench.events import (
    CheckCompleted,
    Event,
    EventSink,
    RunCompleted,
    RunStarted,
    TrialCompleted,
    TrialStarted,
)
from vitrine._bench.executors import TrialExecutor, current_executor
from vitrine._bench.model import AdmittedCheck, Arm, BenchmarkDefinition, Case
from vitrine._bench.results import CheckInfo, RunResult
from vitrine._bench.retry import NO_RETRY, RetryPolicy
from vitrine._bench.trial import TrialOutcome, TrialRunner, elapsed_ms, not_measured_rows
from vitrine._outcomes import run_verdict
from vitrine._redact import describe_exception
from vitrine.errors import InvalidArgumentError
from vitrine.store._errors import ResumeMismatchError, RunStoreError
from vitrine.store._layout import RunPaths
from vitrine.store._naming import new_run_id
from vitrine.store._reader import is_sealed, load_run, read_manifest
from vitrine.store._run_store import RunStore
from vitrine.store._writer import RunWriter, utc_timestamp
from vitrine.tracing._observations import describe_trial

__all__ = ["CANCELLED_REASON", "resume_run", "run_benchmark"]

CANCELLED_REASON = "cancelled before the trial finished"

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Options:
    concurrency: int
    trial_timeout_s: float
    check_timeout_s: float
    retry: RetryPolicy = NO_RETRY

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise InvalidArgumentError(f"concurrency must be at least 1, got {self.concurrency}")
        for name in ("trial_timeout_s", "check_timeout_s"):
            value = getattr(self, name)
            if not value > 0:
                raise InvalidArgumentError(
                    f"{name} must be a positive number of seconds, got {value}"
                )


async def run_benchmark(
    definition: BenchmarkDefinition,
    arm: Arm,
    *,
    repetition: int = 1,
    store: RunStore | None = None,
    concurrency: int = 16,
    trial_timeout_s: float = 120.0,
    check_timeout_s: float = 30.0,
    on_event: EventSink | None = None,
    seed: int | None = None,
    retry: RetryPolicy | None = None,
    executor: TrialExecutor | None = None,
) -> RunResult:
    """Run every case of ``definition`` once against ``arm`` and seal the run.

    With ``store=None`` nothing is written and the result lives only in memory. Repetitions are
    separate calls with the same arm and a different ``repetition``. ``seed`` is recorded in the
    manifest for subjects that draw randomness; the runner itself draws none. Concurrency is
    bounded by a pool of ``concurrency`` workers, so at most that many subjects run at once.
    ``retry`` retries a trial whose subject raised a declared transient error; every failed
    try is kept in the trial's trace and counted in the run's summary. ``executor`` runs the
    trials (``None``: :func:`~vitrine._bench.executors.current_executor`, the in-process one
    unless a :func:`~vitrine.runs.use_executor` block chose another); wherever they
    run, their results are recorded here, by the one writer of the run.
    """
    if repetition < 1:
        raise InvalidArgumentError(f"repetition counts from 1, got {repetition}")
    options = _Options(concurrency, trial_timeout_s, check_timeout_s, retry or NO_RETRY)
    trials, chosen = _prepared_trials(definition, arm, options, executor)
    if store is None:
        writer = None
        run_id, started_at = new_run_id(), utc_timestamp()
    else:
        writer = store.create_run(definition, arm.arm_id, repetition=repetition, seed=seed)
        run_id, started_at = writer.run_id, writer.started_at
    session = _Session(
        definition,
        arm,
        repetition,
        run_id,
        started_at,
        writer,
        options,
        on_event,
        finished={},
        trials=trials,
        executor=chosen,
    )
    return await session.execute(definition.cases)


async def resume_run(
    run_dir: str | os.PathLike[str],
    definition: BenchmarkDefinition,
    arm: Arm,
    *,
    concurrency: int = 16,
    trial_timeout_s: float = 120.0,
    check_timeout_s: float = 30.0,
    on_event: EventSink | None = None,
    retry: RetryPolicy | None = None,
    executor: TrialExecutor | None = None,
) -> RunResult:
    """Finish a run whose process was killed: keep its finished trials, run the rest, seal.

    The run must have been started with this very definition (same content hash) and arm. A run
    that is already sealed is loaded and returned as it is.
    """
    options = _Options(concurrency, trial_timeout_s, check_timeout_s, retry or NO_RETRY)
    paths = RunPaths(Path(run_dir))
    manifest = read_manifest(paths)
    _check_resumable(paths, manifest, definition, arm)
    if is_sealed(manifest):
        return load_run(paths.run_dir)
    trials, chosen = _prepared_trials(definition, arm, options, executor)
    writer, contents = RunWriter.reopen(paths, manifest)
    finished = {
        case_id: TrialOutcome(
            case_id,
            rows,
            float((contents.traces.get(case_id) or {}).get("duration_ms") or 0.0),
            contents.subject_errors.get(case_id),
            contents.responses.get(case_id),
            contents.retries.get(case_id, ()),
        )
        for case_id, rows in contents.rows.items()
    }
    run = manifest["run"]
    session = _Session(
        definition,
        arm,
        int(run["repetition"]),
        paths.run_id,
        str(run["timestamp"]),
        writer,
        options,
        on_event,
        finished=finished,
        trials=trials,
        executor=chosen,
    )
    pending = [case for case in definition.cases if case.id not in finished]
    return await session.execute(pending)


def _prepared_trials(
    definition: BenchmarkDefinition,
    arm: Arm,
    options: _Options,
    executor: TrialExecutor | None,
) -> tuple[TrialRunner, TrialExecutor]:
    # Prepared before the run directory exists: an executor that refuses the arm (a subject it
    # cannot ship to its workers) must not leave an empty run behind.
    runner = TrialRunner(
        arm,
        definition.checks,
        trial_timeout_s=options.trial_timeout_s,
        check_timeout_s=options.check_timeout_s,
        retry=options.retry,
    )
    chosen = executor if executor is not None else current_executor()
    chosen.prepare(runner)
    return runner, chosen


def _check_resumable(
    paths: RunPaths, manifest: Mapping[str, Any], definition: BenchmarkDefinition, arm: Arm
) -> None:
    run = manifest["run"]
    if run.get("definition_hash") != definition.content_hash:
        raise ResumeMismatchError(
            f"run {paths.run_id} was started with {run.get('definition_key')}@"
            f"{run.get('definition_version')} ({run.get('definition_hash')}), not with "
            f"{definition.identity} ({definition.content_hash}); resuming it with a different "
            "definition would mix two benchmarks in one run"
        )
    measured = manifest.get("arm", manifest.get("subject"))
    if measured != arm.arm_id:
        raise ResumeMismatchError(
            f"run {paths.run_id} measured arm {measured!r}, not {arm.arm_id!r}; "
            "resuming it with another arm would mix two systems in one run"
        )


class _Session:
    """The state of one run while its trials execute."""

    def __init__(
        self,
        definition: BenchmarkDefinition,
        arm: Arm,
        repetition: int,
        run_id: str,
        started_at: str,
        writer: RunWriter | None,
        options: _Options,
        on_event: EventSink | None,
        *,
        finished: dict[str, TrialOutcome],
        trials: TrialRunner,
        executor: TrialExecutor,
    ) -> None:
        self.definition = definition
        self.arm = arm
        self.repetition = repetition
        self.run_id = run_id
        self.started_at = started_at
        self.writer = writer
        self.options = options
        self.finished = finished
        self._sink = on_event
        self._sink_failures = 0
        self._checks: tuple[AdmittedCheck, ...] = definition.checks
        # The trials run wherever the executor puts them; their outcomes are recorded here.
        self._trials = trials
        self._executor = executor

    # Events -----------------------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        if self._sink is None:
            return
        try:
            self._sink(event)
        except Exception as exc:  # a broken progress display must not lose a measurement
            self._sink_failures += 1
            if self._sink_failures == 1:
                _log.warning(
                    "event sink failed; later failures are not logged: %s", describe_exception(exc)
                )

    # Running ----------------------------------------------------------------------------------

    async def execute(self, cases: Iterable[Case]) -> RunResult:
        with tracing.run_span(
            self.definition.identity, self.arm.arm_id, self.repetition, self.run_id
        ) as span:
            if span.trace_id is not None and self.writer is not None:
                self.writer.note_trace_id(span.trace_id)
            return await self._execute(cases)

    async def _execute(self, cases: Iterable[Case]) -> RunResult:
        pending = list(cases)
        self._emit(
            RunStarted(
                self.run_id,
                self.definition.identity,
                self.arm.arm_id,
                self.repetition,
                len(self.definition.cases),
                len(self._checks),
            )
        )
        try:
            await self._run_all(pending)
        except BaseException as exc:
            cancelled = isinstance(exc, asyncio.CancelledError)
            reason = (
                CANCELLED_REASON
                if cancelled
                else f"the run stopped before the trial finished ({describe_exception(exc)})"
            )
            try:
                self.finish(unfinished_reason=reason, error=reason)
            except Exception as seal_exc:
                exc.add_note(f"the run could not be sealed: {describe_exception(seal_exc)}")
            raise
        return self.finish(unfinished_reason=None, error=None)

    async def _run_all(self, cases: list[Case]) -> None:
        # A fixed pool of workers pulling from one iterator bounds concurrency like a semaphore
        # would, without creating a task per case up front (10,000 cases, 10,000 idle tasks).
        queue: Iterator[Case] = iter(cases)
        workers = [
            asyncio.create_task(self._worker(queue))
            for _ in range(min(self.options.concurrency, len(cases)))
        ]
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for worker in workers:
                worker.cancel()
            # Let every worker run its cleanup (terminal events) before the run is sealed.
            await asyncio.gather(*workers, return_exceptions=True)
            raise

    async def _worker(self, cases: Iterator[Case]) -> None:
        for case in cases:
            await self._trial(case)

    async def _trial(self, case: Case) -> None:
        started = time.perf_counter()
        self._emit(TrialStarted(self.run_id, case.id))
        terminal_error: str | None = CANCELLED_REASON
        try:
            with tracing.trial_span(
                self.run_id, self.definition.identity, self.arm.arm_id, case.id, self.repetition
            ) as span:
                outcome = await self._executor.run(self._trials, case)
                describe_trial(span, outcome.rows, outcome.error)
            self._record(outcome)
            terminal_error = outcome.error
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            terminal_error = describe_exception(exc)
            raise
        finally:
            self._emit(TrialCompleted(self.run_id, case.id, elapsed_ms(started), terminal_error))

    def _record(self, outcome: TrialOutcome) -> None:
        if self.writer is not None:
            self.writer.record_trial(
                outcome.case_id,
                outcome.rows,
                duration_ms=outcome.duration_ms,
                error=outcome.error,
                response=outcome.response,
                failed_attempts=outcome.failed_attempts,
            )
        self.finished[outcome.case_id] = outcome
        if self._sink is not None:
            for row in outcome.rows:
                obs = row.observation
                self._emit(
                    CheckCompleted(
                        self.run_id, row.case_id, row.check_key, obs.state.value, obs.passed
                    )
                )

    # Completion -------------------------------------------------------------------------------

    def finish(self, *, unfinished_reason: str | None, error: str | None) -> RunResult:
        """Fill in unfinished trials, seal, and emit the one terminal run event."""
        result: RunResult | None = None
        try:
            for case in self.definition.cases:
                if case.id not in self.finished:
                    if unfinished_reason is None:
                        # A bug in the runner, never a user's input: every path that stops
                        # early passes the reason its unfinished trials are recorded with.
                        raise RuntimeError(f"case {case.id!r} never ran")
                    self._record(self._unfinished(case, unfinished_reason))
            result = self._result()
            if self.writer is not None:
                self.writer.seal(result)
            return result
        finally:
            if self.writer is not None:
                self.writer.close()
            verdict = (
                result.verdict
                if result is not None
                else run_verdict(r.observation for o in self.finished.values() for r in o.rows)
            )
            self._emit(
                RunCompleted(
                    self.run_id,
                    verdict.value,
                    _duration_s(self.started_at),
                    None if self.writer is None else str(self.writer.run_dir),
                    error,
                )
            )

    def _unfinished(self, case: Case, reason: str) -> TrialOutcome:
        rows = not_measured_rows(case, self._checks, reason)
        return TrialOutcome(case.id, rows, 0.0, reason, None)

    def _result(self) -> RunResult:
        outcomes = [self.finished[case.id] for case in self.definition.cases]
        for outcome in outcomes:
            if len(outcome.rows) != len(self._checks):
                raise RunStoreError(
                    f"case {outcome.case_id!r} has {len(outcome.rows)} rows for "
                    f"{len(self._checks)} checks"
                )
        return RunResult(
            run_id=self.run_id,
            definition_key=self.definition.key,
            definition_version=self.definition.version,
            definition_hash=self.definition.content_hash,
            arm_id=self.arm.arm_id,
            repetition=self.repetition,
            checks=tuple(
                CheckInfo(c.key, c.check.version, c.floor, c.authority.value) for c in self._checks
            ),
            case_ids=tuple(case.id for case in self.definition.cases),
            rows=tuple(row for outcome in outcomes for row in outcome.rows),
            started_at=self.started_at,
            duration_s=_duration_s(self.started_at),
            complete=True,
            run_dir=None if self.writer is None else str(self.writer.run_dir),
            subject_errors=MappingProxyType(
                {o.case_id: o.error for o in outcomes if o.error is not None}
            ),
            responses=MappingProxyType(
                {o.case_id: o.response for o in outcomes if o.response is not None}
            ),
            retries=MappingProxyType(
                {o.case_id: o.failed_attempts for o in outcomes if o.failed_attempts}
            ),
        )


def _duration_s(started_at: str) -> float:
    # Measured from the recorded start, so a resumed run's duration spans its interruption.
    began = datetime.fromisoformat(started_at)
    return round((datetime.now(UTC) - began).total_seconds(), 6)
