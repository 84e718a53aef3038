"""Run a suite's mutant catalogue: the healthy baseline, then each mutant in its own process.

Layout of one session under the store root::

    mutants/<session-id>/
        _healthy/            the healthy subject's plan store, report, result and log
        <mutant-id>/         the same for each mutant (ids cannot start with "_")
        matrix.json          the kill matrix (vitrine.mutants._report.MutantMatrix)
        matrix.html

The baseline runs first and must pass: killers are departures from it, so a red baseline would
make every row of the matrix meaningless. Mutants then run ``jobs`` at a time, each in a fresh
``python -m vitrine.mutants._worker`` process with a timeout; a timed-out or crashed worker is
an errored mutant, never a killed one.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from vitrine._discovery import find_suite
from vitrine._outcomes import ExitCode
from vitrine._plans.base import UsageError
from vitrine._progress_bar import StepProgress
from vitrine._redact import sanitize_text
from vitrine._suite import load_suite
from vitrine.errors import MutantRunError
from vitrine.mutants._catalogue import (
    CatalogueImportError,
    SuiteMutants,
    catalogue_plan,
    suite_mutants,
)
from vitrine.mutants._classify import Classification, classify, compare_expected
from vitrine.mutants._coverage import seam_coverage
from vitrine.mutants._job import LOG_NAME, RESULT_NAME, WorkerJob, WorkerResult
from vitrine.mutants._model import Mutant
from vitrine.mutants._report import Baseline, MutantMatrix, MutantRow
from vitrine.mutants._service_tests import unreachable_tests
from vitrine.mutants._writer import write_matrix
from vitrine.store._naming import new_run_id, resolve_root
from vitrine.store._private import private_dirs

__all__ = [
    "DEFAULT_JOBS",
    "DEFAULT_TIMEOUT_S",
    "HEALTHY_FOLDER",
    "MutantRunError",
    "run_mutants",
    "select_mutants",
]

DEFAULT_JOBS = 2
DEFAULT_TIMEOUT_S = 300.0
HEALTHY_FOLDER = "_healthy"
_LOG_TAIL_CHARS = 300
_PROGRESS_KILLERS = 3  # a progress line stays one line; the matrix has them all

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class _Finished:
    result: WorkerResult
    duration_s: float


def select_mutants(mutants: Sequence[Mutant], only: Sequence[str] | None) -> list[Mutant]:
    """All ``mutants``, or those ``only`` names (ids or ``fnmatch`` patterns), in their order.

    A pattern (``seam.tool.*``) picks a family of generated mutants without spelling out ids;
    a name or pattern that matches nothing is refused rather than silently running less.
    """
    if not only:
        return list(mutants)
    ids = [m.id for m in mutants]
    unknown = [name for name in only if not fnmatch.filter(ids, name)]
    if unknown:
        known = ", ".join(ids)
        raise UsageError(f"--only names unknown mutants {', '.join(unknown)}; known: {known}")
    return [m for m in mutants if any(fnmatch.fnmatchcase(m.id, name) for name in only)]


async def run_mutants(
    suite: str | None = None,
    *,
    only: Sequence[str] | None = None,
    jobs: int = DEFAULT_JOBS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    output: Path | str | None = None,
    json_report: Path | None = None,
    html_report: Path | None = None,
    progress: Progress | StepProgress | None = None,
    generate: bool = False,
) -> MutantMatrix:
    """Run the healthy baseline and every selected mutant; write and return the kill matrix.

    ``suite`` None is the suite every command finds (the project's, else the installed one).
    With ``generate`` the mutants generated from the suite's seams run after the catalogue's.
    Raises :class:`~vitrine.UsageError` for a request that cannot run as stated
    (no catalogue, unknown ids, bad limits) and :class:`MutantRunError` when the result would
    mean nothing (the healthy subject does not pass, the catalogue cannot be imported).
    ``progress`` takes the notes and one line per finished mutant (a line writer), or shows
    them as a :class:`StepProgress` does (a bar on a terminal).
    """

    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    if not timeout_s > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout_s}")
    # Found once, here: every worker then loads the very suite the baseline ran.
    spec = find_suite(suite).spec
    loaded = load_suite(spec)
    try:
        declared = suite_mutants(loaded, generate=generate)
    except CatalogueImportError as exc:
        raise MutantRunError(str(exc)) from exc
    plan = catalogue_plan(loaded, declared)
    mutants = select_mutants(declared.mutants, only)
    steps = (
        progress if isinstance(progress, StepProgress) else StepProgress.lines("mutants", progress)
    )
    say = steps.note
    # Checked before anything runs: a relative test path that does not resolve from here would
    # otherwise fail only after the baseline, and only in a worker's log.
    unreachable = {
        m.id: why for m in mutants if (why := unreachable_tests(m.tests, Path.cwd())) is not None
    }
    for mutant_id, why in unreachable.items():
        say(f"mutants: {mutant_id} not measured: {why}")

    started_at = datetime.now(UTC)
    clock = time.monotonic()
    session_id = new_run_id(started_at)
    session = resolve_root(output) / "mutants" / session_id
    selections = _distinct_selections([m for m in mutants if m.id not in unreachable])

    healthy = await _run_worker(
        WorkerJob(
            suite=spec,
            plan=plan,
            mutant=None,
            store=str(session / HEALTHY_FOLDER),
            test_selections=selections,
            generate=generate,
        ),
        timeout_s,
    )
    say(
        f"mutants: healthy baseline exit {_code_text(healthy.result.exit_code)} "
        f"({healthy.duration_s:.1f} s)"
    )
    _require_green(healthy.result, session / HEALTHY_FOLDER)
    notes = _healthy_notes(healthy.result)
    for note in notes:
        say(f"mutants: note: {note}")

    limit = asyncio.Semaphore(jobs)
    steps.begin(len(mutants))

    async def one(mutant: Mutant) -> MutantRow:
        if mutant.id in unreachable:
            steps.skip(mutant.id, "not measured")
            return _row(mutant, Classification("not measured", unreachable[mutant.id], []), 0.0)
        async with limit:
            finished = await _run_worker(
                WorkerJob(
                    suite=spec,
                    plan=plan,
                    mutant=mutant.id,
                    store=str(session / mutant.id),
                    test_selections=[list(mutant.tests)] if mutant.tests else [],
                    generate=mutant.generated,
                ),
                timeout_s,
            )
        row = _row(mutant, classify(finished.result, healthy.result.statuses), finished.duration_s)
        killers = _first(row.killer_names, _PROGRESS_KILLERS) if row.outcome == "killed" else ""
        steps.step(
            mutant.id, f"{row.outcome}: {killers or row.reason}", duration_s=finished.duration_s
        )
        return row

    with steps:
        rows = list(await asyncio.gather(*(one(mutant) for mutant in mutants)))
    matrix = _matrix(
        loaded.name,
        plan,
        session_id,
        started_at,
        time.monotonic() - clock,
        declared,
        Baseline(
            exit_code=healthy.result.exit_code,
            duration_s=round(healthy.duration_s, 3),
            statuses=healthy.result.statuses,
            store_dir=HEALTHY_FOLDER,
        ),
        rows,
        notes,
    )
    return write_matrix(matrix, session, json_path=json_report, html_path=html_report)


def _first(names: list[str], count: int) -> str:
    shown = ", ".join(names[:count])
    return shown if len(names) <= count else f"{shown} and {len(names) - count} more"


def _code_text(code: int | None) -> str:
    return "none" if code is None else str(code)


def _distinct_selections(mutants: Sequence[Mutant]) -> list[list[str]]:
    # Each selection runs once for the baseline; concatenating them would let one selection's
    # options ("-m slow") filter another's tests.
    seen: list[list[str]] = []
    for mutant in mutants:
        if mutant.tests and list(mutant.tests) not in seen:
            seen.append(list(mutant.tests))
    return seen


def _require_green(result: WorkerResult, folder: Path) -> None:
    if result.error is None and result.exit_code == ExitCode.PASS:
        return
    why = result.error or f"its plan exited {_code_text(result.exit_code)}"
    failing = [f"{key} {status}" for key, status in result.statuses.items() if _red(status)]
    detail = f"; red: {', '.join(failing[:5])}" if failing else ""
    raise MutantRunError(
        f"the healthy subject does not pass ({why}{detail}): a kill matrix would be "
        f"meaningless; see {folder / LOG_NAME}"
    )


def _healthy_notes(result: WorkerResult) -> list[str]:
    # A test that already fails on the healthy subject can never be a killer; say so rather
    # than let it look like a test that no mutant happens to break.
    failing = sorted(
        key for key, status in result.statuses.items() if key.startswith("test:") and _red(status)
    )
    if not failing:
        return []
    return [
        f"{len(failing)} test(s) fail on the healthy subject and cannot kill any mutant: "
        + _first(failing, _PROGRESS_KILLERS)
    ]


def _red(status: str) -> bool:
    return status in {"FAIL", "NOT MEASURED", "failed", "error", "not caught"}


def _row(mutant: Mutant, judged: Classification, duration_s: float) -> MutantRow:
    hit, missed, unexpected = compare_expected(mutant, judged.killers)
    seam = mutant.seam
    return MutantRow(
        id=mutant.id,
        component=mutant.component,
        description=mutant.description,
        must_kill=mutant.must_kill,
        outcome=judged.outcome,
        exit_code=judged.exit_code,
        duration_s=round(duration_s, 3),
        reason=judged.reason,
        killers=judged.killers,
        expected_killers=list(mutant.expected_killers),
        expected_and_seen=hit,
        expected_not_seen=missed,
        seen_unexpectedly=unexpected,
        store_dir=mutant.id,
        generated=mutant.generated,
        seam_kind=None if seam is None else seam.kind,
        seam_target=None if seam is None else seam.target,
        operator=None if seam is None else seam.operator,
    )


def _matrix(
    suite_name: str,
    plan: str,
    session_id: str,
    started_at: datetime,
    duration_s: float,
    declared: SuiteMutants,
    baseline: Baseline,
    rows: list[MutantRow],
    notes: list[str],
) -> MutantMatrix:
    written = [row for row in rows if not row.generated]
    generated = [row for row in rows if row.generated]
    killed = sum(1 for row in written if row.outcome == "killed")
    total = len(written)
    score = killed / total if total else 0.0
    survivors = [row.id for row in rows if row.must_kill and row.outcome == "survived"]
    columns = sorted({name for row in rows for name in row.killer_names})
    # With only generated mutants there is no promised score to fall short of.
    minimum = declared.minimum_score if total else 0.0
    code, reason = _verdict(rows, survivors, score, minimum)
    matrix = MutantMatrix(
        suite=suite_name,
        plan=plan,
        session_id=session_id,
        started_at=started_at.isoformat(timespec="seconds"),
        duration_s=round(duration_s, 3),
        description=declared.description,
        baseline=baseline,
        killers=columns,
        mutants=rows,
        killed=killed,
        total=total,
        score=score,
        minimum_score=declared.minimum_score,
        must_kill_survivors=survivors,
        exit_code=int(code),
        exit_reason="",
        notes=notes,
        generated_killed=sum(1 for row in generated if row.outcome == "killed"),
        generated_total=len(generated),
        coverage=seam_coverage(rows),
    )
    return matrix.model_copy(update={"exit_reason": f"{reason}; {matrix.score_text}"})


def _verdict(
    rows: list[MutantRow], survivors: list[str], score: float, minimum: float
) -> tuple[ExitCode, str]:
    # The same precedence as every vitrine exit: an absence never hides behind a failure.
    errored = [row.id for row in rows if row.outcome == "errored"]
    if errored:
        return (
            ExitCode.INFRASTRUCTURE,
            f"{len(errored)} mutant(s) errored ({', '.join(errored)}): the matrix is incomplete",
        )
    unmeasured = [row.id for row in rows if row.outcome == "not measured"]
    if unmeasured:
        return (
            ExitCode.NOT_MEASURED,
            f"{len(unmeasured)} mutant(s) could not be measured ({', '.join(unmeasured)})",
        )
    if survivors:
        return ExitCode.MEASURED_FAILURE, f"must-kill mutants survived: {', '.join(survivors)}"
    if score < minimum:
        return ExitCode.MEASURED_FAILURE, "the mutation score is below the catalogue's minimum"
    return ExitCode.PASS, "every must-kill mutant was killed"


def _worker_env() -> dict[str, str]:
    # The worker must import the suite the way this process did, including paths added at run
    # time (a suite next to the caller's scripts), not only what is installed.
    env = dict(os.environ)
    paths = [entry or str(Path.cwd()) for entry in sys.path]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    for leaked in ("EVAL_API_URL", "VITRINE_REQUIRE_SERVICE"):
        env.pop(leaked, None)
    return env


async def _run_worker(job: WorkerJob, timeout_s: float) -> _Finished:
    folder = job.folder
    private_dirs(folder)  # under the store's mutants/: the root too, when it is the first
    job_path = job.write()
    started = time.monotonic()
    with (folder / LOG_NAME).open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "vitrine.mutants._worker",
            str(job_path),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
            env=_worker_env(),
            start_new_session=True,  # its own process group, so a timeout ends its children too
        )
        try:
            code = await asyncio.wait_for(process.wait(), timeout_s)
        except TimeoutError:
            return _Finished(
                WorkerResult(error=f"the worker timed out after {timeout_s:g} s"),
                time.monotonic() - started,
            )
        finally:
            if process.returncode is None:
                _kill_group(process)
                await process.wait()
    return _Finished(_read_result(folder, code), time.monotonic() - started)


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)  # the worker and anything it started
        else:  # pragma: no cover - platforms without process groups
            process.kill()


def _read_result(folder: Path, code: int) -> WorkerResult:
    path = folder / RESULT_NAME
    if code == 0 and path.is_file():
        try:
            return WorkerResult.model_validate_json(path.read_bytes())
        except (ValidationError, OSError) as exc:
            return WorkerResult(error=f"the worker's result is unreadable: {exc}")
    return WorkerResult(
        error=f"the worker exited {code} without a result: {_log_tail(folder / LOG_NAME)}"
    )


def _log_tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return "no log"
    last = text.splitlines()[-1] if text else "empty log"

    return sanitize_text(last, _LOG_TAIL_CHARS)
