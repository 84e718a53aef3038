"""Crash recovery: find the runs a killed process left unsealed, and finish them.

A process killed mid-run leaves a run directory with a manifest and some finished trials but no
seal (see :mod:`vitrine.store._maintenance`). :func:`resume_unsealed` finds such a run and hands
it to :func:`vitrine.store.resume_run`, which keeps the finished trials, runs the rest
and seals the run, so the result is one sealed run with no duplicate rows. A run is resumed
only with the definition and arm that started it; the command line does the same through
``vitrine runs resume --benchmark MODULE:ATTR``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vitrine._bench.model import Arm, BenchmarkDefinition
from vitrine._bench.results import RunResult
from vitrine._bench.retry import RetryPolicy
from vitrine._bench.runner import resume_run
from vitrine._sync_entry import refuse_inside_event_loop
from vitrine.errors import AmbiguousResumeError, UnknownRunError
from vitrine.store._errors import ResumeMismatchError, RunStoreError
from vitrine.store._layout import RunPaths
from vitrine.store._maintenance import inspect_store
from vitrine.store._naming import RUN_ID_PATTERN
from vitrine.store._reader import read_manifest
from vitrine.store._run_store import RunStore

__all__ = [
    "AmbiguousResumeError",
    "UnknownRunError",
    "UnsealedRun",
    "find_unsealed",
    "resume_unsealed",
    "resume_unsealed_async",
    "select_unsealed",
]


@dataclass(frozen=True, slots=True)
class UnsealedRun:
    """A run that was started and never sealed, as its manifest describes it.

    ``problem`` is set (and the other facts may be blank) when the manifest itself cannot be
    read; such a run cannot be resumed, only reported.
    """

    run_id: str
    run_dir: Path
    definition: str
    definition_hash: str
    arm_id: str
    repetition: int
    problem: str | None = None

    def describe(self) -> str:
        """One line: the run id, what it measured, and where it lies."""
        if self.problem is not None:
            return f"{self.run_id}  (unreadable: {self.problem})"
        return f"{self.run_id}  {self.definition}  arm {self.arm_id}  rep {self.repetition}"


def find_unsealed(
    store: RunStore | str | os.PathLike[str] | None = None,
) -> tuple[UnsealedRun, ...]:
    """Every unsealed run of ``store`` (a :class:`RunStore` or its root), oldest first."""

    root = _root(store)
    found = []
    for item in inspect_store(root).unsealed:
        paths = RunPaths(root / item.path)
        try:
            manifest = read_manifest(paths)
            run = manifest["run"]
            found.append(
                UnsealedRun(
                    paths.run_id,
                    paths.run_dir,
                    f"{run['definition_key']}@{run['definition_version']}",
                    str(run["definition_hash"]),
                    str(manifest.get("arm", manifest.get("subject"))),
                    int(run["repetition"]),
                )
            )
        except (RunStoreError, KeyError, TypeError, ValueError) as exc:
            problem = str(exc) if isinstance(exc, RunStoreError) else "its manifest lacks a field"
            found.append(UnsealedRun(paths.run_id, paths.run_dir, "", "", "", 0, problem))
    # Run ids begin with their UTC start second, so name order is start order.
    return tuple(sorted(found, key=lambda run: run.run_id))


def resume_unsealed(
    store: RunStore | str | os.PathLike[str] | None,
    definition: BenchmarkDefinition,
    arms: Arm | Sequence[Arm],
    *,
    run_id: str | None = None,
    concurrency: int = 16,
    trial_timeout_s: float = 120.0,
    retry: RetryPolicy | None = None,
) -> tuple[RunResult, ...]:
    """Resume the unsealed run of ``store`` (or the one named ``run_id``) and seal it.

    Returns the resumed run, or nothing when no run is unsealed (or the named one is already
    sealed). Several unsealed runs and no ``run_id`` raise :class:`AmbiguousResumeError`
    listing them; a run started by another definition or arm raises
    :class:`~vitrine.errors.ResumeMismatchError`. Inside an event loop use
    :func:`resume_unsealed_async`.
    """
    refuse_inside_event_loop("resume_unsealed", "resume_unsealed_async")
    return asyncio.run(
        resume_unsealed_async(
            store,
            definition,
            arms,
            run_id=run_id,
            concurrency=concurrency,
            trial_timeout_s=trial_timeout_s,
            retry=retry,
        )
    )


async def resume_unsealed_async(
    store: RunStore | str | os.PathLike[str] | None,
    definition: BenchmarkDefinition,
    arms: Arm | Sequence[Arm],
    *,
    run_id: str | None = None,
    concurrency: int = 16,
    trial_timeout_s: float = 120.0,
    retry: RetryPolicy | None = None,
) -> tuple[RunResult, ...]:
    """The awaitable form of :func:`resume_unsealed`."""

    target = select_unsealed(store, run_id)
    if target is None:
        return ()
    by_id = {arm.arm_id: arm for arm in ([arms] if isinstance(arms, Arm) else arms)}
    arm = by_id.get(target.arm_id)
    if arm is None:
        raise ResumeMismatchError(
            f"run {target.run_id} measured arm {target.arm_id!r}, which is not among the arms "
            f"given ({', '.join(by_id) or 'none'}); resuming it with another arm would mix two "
            "systems in one run"
        )
    result = await resume_run(
        target.run_dir,
        definition,
        arm,
        concurrency=concurrency,
        trial_timeout_s=trial_timeout_s,
        retry=retry,
    )
    return (result,)


def select_unsealed(
    store: RunStore | str | os.PathLike[str] | None, run_id: str | None
) -> UnsealedRun | None:
    """The one unsealed run a resume would take, or None when there is nothing to resume."""
    unsealed = find_unsealed(store)
    if run_id is None:
        if len(unsealed) > 1:
            listing = "; ".join(run.describe() for run in unsealed)
            raise AmbiguousResumeError(
                f"{len(unsealed)} runs are unsealed ({listing}): name the one to resume"
            )
        target = unsealed[0] if unsealed else None
    else:
        target = next((run for run in unsealed if run.run_id == run_id), None)
        if target is None:
            if _is_run(_root(store), run_id):
                return None  # sealed already: nothing left to do
            raise UnknownRunError(f"run {run_id!r} is not in the store at {_root(store)}")
    if target is not None and target.problem is not None:
        raise RunStoreError(f"run {target.run_id} cannot be resumed: {target.problem}")
    return target


def _root(store: RunStore | str | os.PathLike[str] | None) -> Path:
    return store.root if isinstance(store, RunStore) else RunStore(store).root


def _is_run(root: Path, run_id: str) -> bool:

    return (
        bool(RUN_ID_PATTERN.match(run_id)) and (root / "runs" / run_id / "manifest.json").is_file()
    )
