"""Where trials run: in this process's event loop (``local``) or on a Ray cluster (``ray``).

An executor only runs trials and hands back their :class:`~vitrine._bench.trial.TrialOutcome`;
the runner in the driver records every outcome through the run's one writer and seals the run,
so the store's guarantees (atomic, sealed, resumable, one row per case and check) do not depend
on where the trials ran.

The executor a runner uses is the one given to it, else the current one: ``local`` unless a
:func:`use_executor` block chose another. That is how ``vitrine --executor ray`` moves every
run of any plan onto Ray without the plan knowing.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from vitrine.errors import ExecutorError, ExecutorUnavailableError

if TYPE_CHECKING:
    from vitrine._bench.model import AdmittedCheck, Arm, Case
    from vitrine._bench.trial import TrialOutcome, TrialRunner

__all__ = [
    "EXECUTOR_NAMES",
    "LOCAL",
    "ExecutorError",
    "ExecutorUnavailableError",
    "LocalExecutor",
    "TrialExecutor",
    "current_executor",
    "executor_refusal",
    "executor_scope",
    "open_executor",
    "ray_missing_reason",
    "use_executor",
]

EXECUTOR_NAMES = ("local", "ray")
RAY_INSTALL = "pip install 'vitrine[ray]' (in a checkout: pip install -e '.[ray]')"


@runtime_checkable
class TrialExecutor(Protocol):
    """Runs trials somewhere and returns their outcomes to the caller, who records them."""

    @property
    def name(self) -> str: ...

    def admit(self, arm: Arm, checks: Sequence[AdmittedCheck]) -> None:
        """Refuse, with a sentence naming it, an arm or check this executor cannot run."""
        ...

    def prepare(self, trials: TrialRunner) -> None:
        """Admit ``trials`` before its run starts and get ready to run it."""
        ...

    async def run(self, trials: TrialRunner, case: Case) -> TrialOutcome:
        """Run the trial of ``case`` and return its outcome; never record it."""
        ...


class LocalExecutor:
    """Trials run as coroutines in the caller's event loop (the default)."""

    @property
    def name(self) -> str:
        return "local"

    def admit(self, arm: Arm, checks: Sequence[AdmittedCheck]) -> None:
        """Everything runs in this process, so nothing is refused."""

    def prepare(self, trials: TrialRunner) -> None:
        """Nothing needs to be shipped anywhere."""

    async def run(self, trials: TrialRunner, case: Case) -> TrialOutcome:
        return await trials.observe(case)


LOCAL = LocalExecutor()

_current: ContextVar[TrialExecutor] = ContextVar("vitrine_trial_executor", default=LOCAL)


def current_executor() -> TrialExecutor:
    """The executor a runner uses when it is given none: ``local`` outside a
    :func:`use_executor` block."""
    return _current.get()


@contextlib.contextmanager
def use_executor(executor: TrialExecutor) -> Iterator[TrialExecutor]:
    """Make ``executor`` the current one inside the block (it does not start or close it)."""
    token = _current.set(executor)
    try:
        yield executor
    finally:
        _current.reset(token)


def ray_missing_reason() -> str | None:
    """Why the Ray executor cannot be used here (Ray is not installed), or None when it can."""
    if importlib.util.find_spec("ray") is not None:
        return None
    return f"the ray executor needs Ray, which is not installed: {RAY_INSTALL}"


def executor_refusal(executor: str | None, ray_address: str | None) -> str | None:
    """Why the command line's ``--executor``/``--ray-address`` cannot be honoured, or None."""
    if ray_address is not None and executor != "ray":
        return (
            "--ray-address names the cluster for --executor ray; without --executor ray it "
            "would be ignored"
        )
    if executor == "ray":
        return ray_missing_reason()
    return None


@contextlib.contextmanager
def open_executor(
    name: str, *, ray_address: str | None = None, num_cpus: int | None = None
) -> Iterator[TrialExecutor]:
    """Start the executor called ``name`` for the block, make it current, and close it after.

    ``ray_address`` names a running Ray cluster (``None`` starts a local one with ``num_cpus``
    CPUs); it is refused for the local executor, where it would be silently ignored.
    """
    if name not in EXECUTOR_NAMES:
        raise ExecutorError(f"unknown executor {name!r}: choose one of {', '.join(EXECUTOR_NAMES)}")
    if name == "local":
        if ray_address is not None:
            raise ExecutorError(
                "a Ray address was given without the ray executor: it would be ignored; "
                "choose the ray executor or drop the address"
            )
        with use_executor(LOCAL) as executor:
            yield executor
        return
    missing = ray_missing_reason()
    if missing is not None:
        raise ExecutorError(missing)
    from vitrine._bench.ray_executor import RayExecutor

    with RayExecutor(ray_address, num_cpus=num_cpus) as ray_executor, use_executor(ray_executor):
        yield ray_executor


@contextlib.contextmanager
def executor_scope(
    executor: str | TrialExecutor | None, ray_address: str | None = None
) -> Iterator[TrialExecutor]:
    """The executor an API call asked for, current inside the block.

    A name (``"local"``, ``"ray"``) is opened for the block and closed after it; an executor
    object is used as it is (whoever made it closes it); ``None`` is the current executor.
    """
    if isinstance(executor, str):
        with open_executor(executor, ray_address=ray_address) as opened:
            yield opened
        return
    if ray_address is not None:
        raise ExecutorError(
            "ray_address names the cluster for executor='ray'; with any other executor it "
            "would be ignored"
        )
    if executor is None:
        yield current_executor()
        return
    if not isinstance(executor, TrialExecutor):
        raise ExecutorError(
            f"executor must be 'local', 'ray' or a TrialExecutor, got {type(executor).__name__}"
        )
    with use_executor(executor):
        yield executor
