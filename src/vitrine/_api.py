"""The notebook API: evaluate arms of a benchmark in one call and get runs plus their score.

::

    result = vitrine.evaluate(definition, [agent, workflow], repetitions=2, reference="agent")
    result.score.check_score("workflow", "screened-deliverable")
    result.comparisons  # one per challenger arm x check
    result.print_summary()  # the gates, the scores and the exit, as the console shows them
    result.write_reports("out/")  # report.json and report.html
    sys.exit(result.exit_code)

Each arm x repetition is one separate runner call, i.e. one run (one run directory when a store
is given), exactly as the command line runs them; the score is computed from those runs alone.
Inside an event loop (a notebook cell, an async application) use :func:`evaluate_async`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vitrine._bench.gating import check_tolerance, evaluation_gates
from vitrine._bench.model import Arm, BenchmarkDefinition
from vitrine._bench.results import RunResult
from vitrine._bench.retry import DEFAULT_RETRIES, RetryPolicy
from vitrine._bench.trial_notes import outages, trial_notes
from vitrine._outcomes import ExitCode
from vitrine._sync_entry import refuse_inside_event_loop
from vitrine.errors import InvalidArgumentError, WrongTypeError

if TYPE_CHECKING:
    from rich.console import Console

    from vitrine._bench.events import Event, EventSink
    from vitrine._bench.executors import TrialExecutor
    from vitrine._bench.score import BenchmarkScore, CheckScore, ReferenceComparison, RepCollapse
    from vitrine._budget import SpendMeter
    from vitrine._gates import GateDecision, GateResult
    from vitrine.reports._model import SuiteReport
    from vitrine.store import RunStore

__all__ = ["EvalResult", "evaluate", "evaluate_async"]


@dataclass(frozen=True)
class EvalResult:
    """Every run of one evaluation, the score over them, and the reference comparisons.

    ``comparisons`` is empty when no reference arm was named; it is never a stand-in for
    "no differences".
    """

    definition: BenchmarkDefinition
    runs: tuple[RunResult, ...]
    score: BenchmarkScore
    reference: str | None
    comparisons: tuple[ReferenceComparison, ...]
    store_root: Path | None
    collapse: RepCollapse | None = None
    tolerate_not_measured: float = 0.0
    started_at: str = ""
    duration_s: float = 0.0

    @property
    def arms(self) -> tuple[str, ...]:
        """The arm ids, in the order they were given."""
        return self.score.arms

    def runs_for(self, arm_id: str) -> tuple[RunResult, ...]:
        """The runs (one per repetition) of one arm."""
        return self.score.runs(arm_id)

    def check_score(self, arm_id: str, check_key: str) -> CheckScore:
        """One arm's score on one check, repetitions collapsed as the comparisons collapse them.

        ``result.score.check_score`` stays available for another collapse (its default is
        ``mean``); this one agrees with ``comparisons``, so the two never tell different stories.
        """
        from vitrine._bench.score import RepCollapse

        return self.score.check_score(arm_id, check_key, self.collapse or RepCollapse.ALL)

    @property
    def retried_trials(self) -> int:
        """Trials, over every run, that needed more than one try."""
        return sum(run.retried_trials for run in self.runs)

    def gates(self, arms: Sequence[str] | None = None) -> tuple[GateResult, ...]:
        """One gate per arm x check (``check[arm]``); ``arms`` limits them to the arms named.

        A gate passes when every measured trial of its check passed on its arm; not-measured
        trials within ``tolerate_not_measured`` are left out of the decision and noted.
        """
        return evaluation_gates(self.runs, self._gated_arms(arms), self.tolerate_not_measured).gates

    def decision(self, arms: Sequence[str] | None = None) -> GateDecision:
        """The exit code and its reason, decided by :func:`vitrine.checks.decide` over the gates."""
        from vitrine._gates import decide

        return decide(self.gates(arms), outages(self.runs, self._gated_arms(arms)))

    @property
    def exit_code(self) -> ExitCode:
        """The process exit this evaluation earns with every arm gated (0 pass ... 4 infra)."""
        return self.decision().exit_code

    def notes(self, arms: Sequence[str] | None = None) -> list[str]:
        """What a reader must know beside the numbers: tolerated gaps, retried trials."""
        notes = list(
            evaluation_gates(self.runs, self._gated_arms(arms), self.tolerate_not_measured).notes
        )
        if self.retried_trials:
            total = sum(len(run.case_ids) for run in self.runs)
            notes.append(
                f"{self.retried_trials} of {total} trials were retried after a transient "
                "error; every failed try is kept in the run traces"
            )
        notes.extend(trial_notes(self.runs))
        return notes

    def report(self, arms: Sequence[str] | None = None) -> SuiteReport:
        """The evaluation as a :class:`~vitrine.reports.SuiteReport`, which every view renders."""
        from vitrine._bench.score import RepCollapse
        from vitrine.reports._model import GateRow, SuiteReport
        from vitrine.reports._sections import benchmark_section

        decision = self.decision(arms)
        root = self.store_root or Path()
        section = benchmark_section(
            list(self.runs),
            role="evaluation",
            store_root=root,
            reference_arm=self.reference,
            collapse=self.collapse or RepCollapse.ALL,
        )
        return SuiteReport(
            suite=self.definition.identity,
            plan="evaluate",
            mode="python",
            provenance="python-api",
            started_at=self.started_at,
            duration_s=round(self.duration_s, 3),
            exit_code=int(decision.exit_code),
            exit_meaning=decision.exit_code.meaning,
            exit_reason=decision.reason,
            gates=[GateRow.of(gate) for gate in decision.gates],
            benchmarks=[section],
            notes=self.notes(arms),
            store_root=".",
        )

    def write_reports(
        self,
        directory: str | os.PathLike[str],
        *,
        arms: Sequence[str] | None = None,
        json_path: str | os.PathLike[str] | None = None,
        html_path: str | os.PathLike[str] | None = None,
    ) -> dict[str, Path]:
        """Write ``report.json`` and ``report.html`` into ``directory`` (atomically).

        ``json_path`` and ``html_path`` write extra copies (a plan passes the
        ``request.json_report`` it was given). Returns the paths written, keyed ``json`` and
        ``html`` (and ``json_report``/``html_report`` for the copies).
        """
        from vitrine.reports._writer import write_reports

        return write_reports(
            self.report(arms),
            Path(directory),
            json_path=None if json_path is None else Path(json_path),
            html_path=None if html_path is None else Path(html_path),
        )

    def summary(self, arms: Sequence[str] | None = None) -> str:
        """The console report as plain text: gates, gaps, scores, comparisons and the exit."""
        from vitrine.reports._console import render_plain

        return render_plain(self.report(arms))

    def print_summary(
        self, arms: Sequence[str] | None = None, *, console: Console | None = None
    ) -> None:
        """Print the console report (rich tables) to ``console`` or the terminal."""
        from vitrine.reports._console import render_console, terminal_console

        render_console(self.report(arms), console or terminal_console())

    def _gated_arms(self, arms: Sequence[str] | None) -> tuple[str, ...]:
        if arms is None:
            return self.arms
        unknown = [arm for arm in arms if arm not in self.arms]
        if unknown or not arms:
            raise InvalidArgumentError(
                f"cannot gate arms {list(arms)}: the evaluation ran {', '.join(self.arms)}"
            )
        return tuple(arms)

    @property
    def run_dirs(self) -> tuple[Path, ...]:
        return tuple(Path(run.run_dir) for run in self.runs if run.run_dir is not None)

    def to_dict(self) -> dict[str, Any]:
        data = self.score.to_dict(reference_arm=self.reference)
        data["store_root"] = None if self.store_root is None else str(self.store_root)
        data["run_dirs"] = [str(p) for p in self.run_dirs]
        data["retried_trials"] = self.retried_trials
        data["tolerate_not_measured"] = self.tolerate_not_measured
        return data


def evaluate(
    definition: BenchmarkDefinition,
    arms: Arm | Sequence[Arm],
    *,
    repetitions: int = 1,
    store: RunStore | str | os.PathLike[str] | None = None,
    concurrency: int = 16,
    reference: str | None = None,
    collapse: RepCollapse | str = "all",
    on_event: EventSink | None = None,
    retries: int | None = None,
    retry_on: type[Exception] | tuple[type[Exception], ...] = (TimeoutError, ConnectionError),
    retry_backoff_s: float = 0.5,
    retry_seed: int | None = None,
    tolerate_not_measured: float = 0.0,
    trial_timeout_s: float = 120.0,
    progress: bool = False,
    executor: str | TrialExecutor | None = None,
    ray_address: str | None = None,
    spend: SpendMeter | None = None,
    retry: RetryPolicy | None = None,
) -> EvalResult:
    """Run every arm ``repetitions`` times over ``definition`` and score the runs.

    ``store`` is a :class:`~vitrine.store.RunStore` or a root folder for one; ``None`` keeps
    the runs in memory. ``reference`` names the arm every other arm is compared against, with
    repetitions collapsed per case by ``collapse`` (``all`` by default, as the protocol's
    comparison plan does).

    ``retries`` retries a trial whose subject raised one of ``retry_on`` or a model SDK's
    transient error (a timeout, a dropped connection, a 429 or 5xx from the OpenAI or Anthropic
    SDK, httpx or aiohttp), with exponential backoff from ``retry_backoff_s`` and jitter drawn
    from ``retry_seed``; ``None`` gives two retries, ``0`` none. Every failed try is kept in the
    trial's trace and counted in the summary, and a trial that runs out of tries stays not
    measured.
    ``tolerate_not_measured`` is the share of not-measured trials per gate that may be left out
    of the verdict; what was left out is stated in the report, never hidden. ``progress``
    prints one line per finished run to stderr (``print_summary`` shows the result).

    ``executor`` says where trials run: ``"local"`` (this process's event loop), ``"ray"``
    (a Ray cluster at ``ray_address``, or a local one started for this call and stopped after
    it), or a started :class:`~vitrine.runs.TrialExecutor`; ``None`` is the current
    executor, ``local`` unless a :func:`~vitrine.runs.use_executor` block chose
    another. Wherever trials run, this process alone writes and seals the runs.

    ``spend`` is a :class:`~vitrine.live.SpendMeter` whose ceiling bounds the evaluation:
    once it is reached no new trial starts, and the trials it stops are not measured with
    "budget" as their reason. The meter counts what the models wrapped in
    :class:`~vitrine.live.MeteredModel` with it spend; ``spend.to_dict()`` is the account.

    ``retry`` is a :class:`~vitrine.RetryPolicy` that replaces the ``retries``, ``retry_on``,
    ``retry_backoff_s`` and ``retry_seed`` arguments when given.
    """
    refuse_inside_event_loop("evaluate", "evaluate_async")
    return asyncio.run(
        evaluate_async(
            definition,
            arms,
            repetitions=repetitions,
            store=store,
            concurrency=concurrency,
            reference=reference,
            collapse=collapse,
            on_event=on_event,
            retries=retries,
            retry_on=retry_on,
            retry_backoff_s=retry_backoff_s,
            retry_seed=retry_seed,
            tolerate_not_measured=tolerate_not_measured,
            trial_timeout_s=trial_timeout_s,
            progress=progress,
            executor=executor,
            ray_address=ray_address,
            spend=spend,
            retry=retry,
        )
    )


async def evaluate_async(
    definition: BenchmarkDefinition,
    arms: Arm | Sequence[Arm],
    *,
    repetitions: int = 1,
    store: RunStore | str | os.PathLike[str] | None = None,
    concurrency: int = 16,
    reference: str | None = None,
    collapse: RepCollapse | str = "all",
    on_event: EventSink | None = None,
    retries: int | None = None,
    retry_on: type[Exception] | tuple[type[Exception], ...] = (TimeoutError, ConnectionError),
    retry_backoff_s: float = 0.5,
    retry_seed: int | None = None,
    tolerate_not_measured: float = 0.0,
    trial_timeout_s: float = 120.0,
    progress: bool = False,
    executor: str | TrialExecutor | None = None,
    ray_address: str | None = None,
    spend: SpendMeter | None = None,
    retry: RetryPolicy | None = None,
) -> EvalResult:
    """The awaitable form of :func:`evaluate`, for code that already runs an event loop."""
    from vitrine._bench.executors import executor_scope
    from vitrine._bench.runner import run_benchmark
    from vitrine._bench.score import BenchmarkScore, RepCollapse
    from vitrine.store._writer import utc_timestamp

    arm_list = _arm_list(arms)
    _check_arguments(arm_list, repetitions, concurrency, reference)
    if spend is not None:
        if executor == "ray" or not isinstance(executor, str | None):
            raise InvalidArgumentError(
                "a spend ceiling is counted in this process, so its trials must run here: "
                "use executor='local' (or none) with spend"
            )
        from vitrine._budget import budget_gated

        arm_list = [budget_gated(arm, spend) for arm in arm_list]
    mode = RepCollapse(collapse)
    tolerance = check_tolerance(tolerate_not_measured)
    if retry is not None and (retries is not None or retry_seed is not None):
        raise InvalidArgumentError(
            "give the retry policy once: retry=RetryPolicy(...) or retries=/retry_seed=, not both"
        )
    policy = retry or RetryPolicy(
        DEFAULT_RETRIES if retries is None else retries,
        retry_on if isinstance(retry_on, tuple) else (retry_on,),
        backoff_s=retry_backoff_s,
        max_backoff_s=max(8.0, retry_backoff_s),
        seed=retry_seed,
    )
    run_store = _open_store(store)
    sink = _with_progress(on_event) if progress else on_event
    started_at, started = utc_timestamp(), time.perf_counter()
    runs: list[RunResult] = []
    with traced_from_environment(), executor_scope(executor, ray_address) as chosen:
        # Every arm is offered to the executor before the first run, so an arm it refuses (a
        # subject Ray cannot pickle) does not leave the arms before it measured alone.
        for arm in arm_list:
            chosen.admit(arm, definition.checks)
        # Repetition-major order: each repetition visits every arm before the next starts, so
        # a drift in a shared dependency over the session lands on all arms instead of on the
        # last. Calls are sequential so that ``concurrency`` bounds the whole evaluation.
        for repetition in range(1, repetitions + 1):
            for arm in arm_list:
                runs.append(
                    await run_benchmark(
                        definition,
                        arm,
                        repetition=repetition,
                        store=run_store,
                        concurrency=concurrency,
                        on_event=sink,
                        retry=policy,
                        trial_timeout_s=trial_timeout_s,
                        executor=chosen,
                    )
                )
    score = BenchmarkScore.of(runs)
    comparisons = () if reference is None else tuple(score.against_reference(reference, mode))
    return EvalResult(
        definition=definition,
        runs=tuple(runs),
        score=score,
        reference=reference,
        comparisons=comparisons,
        store_root=None if run_store is None else run_store.root,
        collapse=mode,
        tolerate_not_measured=tolerance,
        started_at=started_at,
        duration_s=time.perf_counter() - started,
    )


@contextmanager
def traced_from_environment() -> Iterator[None]:
    """Trace this evaluation where the environment says (``OTEL_EXPORTER_OTLP_ENDPOINT``,
    Langfuse's variables), as the command line does, unless tracing is already on.

    Tracing started here is flushed and stopped when the evaluation ends, so a script that
    calls :func:`evaluate` and exits loses no span; tracing the caller started is left to it.
    """
    from vitrine import tracing

    if tracing.enabled() or not tracing.start():
        yield
        return
    try:
        with tracing.session_span("evaluate"):
            yield
    finally:
        tracing.shutdown()


def _with_progress(on_event: EventSink | None) -> EventSink:
    import sys

    from vitrine.reports._live import LiveProgress

    display = LiveProgress(sys.stderr)
    if on_event is None:
        return display.handle

    def both(event: Event) -> None:
        display.handle(event)
        on_event(event)

    return both


def _arm_list(arms: Arm | Sequence[Arm]) -> list[Arm]:
    arm_list = [arms] if isinstance(arms, Arm) else list(arms)
    for arm in arm_list:
        if not isinstance(arm, Arm):
            raise WrongTypeError(f"arms must be vitrine Arm objects, got {type(arm).__name__}")
    return arm_list


def _check_arguments(
    arms: list[Arm], repetitions: int, concurrency: int, reference: str | None
) -> None:
    # Everything here is checked before the first runner call: a refused evaluation must not
    # leave half a session of runs behind.
    if not arms:
        raise InvalidArgumentError("no arms to evaluate: an empty evaluation is not a zero score")
    ids = [arm.arm_id for arm in arms]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise InvalidArgumentError(
            f"arm ids repeat ({', '.join(duplicates)}): runs are grouped by arm id, so two "
            "variants with one id would be scored as repetitions of one arm"
        )
    if isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1:
        raise InvalidArgumentError(
            f"repetitions must be a whole number of at least 1, got {repetitions!r}"
        )
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise InvalidArgumentError(
            f"concurrency must be a whole number of at least 1, got {concurrency!r}"
        )
    if reference is not None:
        if reference not in ids:
            raise InvalidArgumentError(
                f"reference arm {reference!r} is not among the arms ({', '.join(ids)})"
            )
        if len(ids) == 1:
            raise InvalidArgumentError(
                f"reference arm {reference!r} is the only arm: there is no challenger to "
                "compare against it"
            )


def _open_store(store: RunStore | str | os.PathLike[str] | None) -> RunStore | None:
    if store is None:
        return None
    from vitrine.store import RunStore

    if isinstance(store, RunStore):
        return store
    return RunStore(store)
