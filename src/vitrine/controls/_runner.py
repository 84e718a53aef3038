"""The control runner: healthy green, one isolated perturbation red, restored green again.

A control is caught only when the *same* evaluator reports a measured pass on the healthy
observation, a measured failure on the perturbed one, and a measured pass again on a fresh
healthy observation. Absence (not applicable, not measured) is never a catch, nor is an
exception, except the one type a control declares as its contained fault, matched exactly.

Perturbations must be isolated: ``perturb`` receives an observation and returns a perturbed
copy (``dataclasses.replace``, a new mapping, a swapped callable). The restored arm observes
afresh, so a perturbation that edited shared state in place shows up as a restored failure.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from vitrine._outcomes import Observation, Status, as_observation, status_of_label
from vitrine._progress_bar import StepProgress
from vitrine._redact import describe_exception, sanitize_text
from vitrine.controls._model import ControlSpec, ManifestError
from vitrine.errors import InvalidArgumentError

__all__ = [
    "Control",
    "ControlOutcome",
    "ControlRegistry",
    "ControlResult",
    "OutcomeState",
    "control_progress",
    "run_control",
    "run_controls",
]

T = TypeVar("T")
# What an evaluator returns: an observation, or a bool (measured) or None (not measured).
Evaluated = Observation | bool | None | Awaitable[Observation | bool | None]

_DETAIL_LIMIT = 160

# Where finished controls are counted. A suite's controls step is its own code (it captures
# state, then calls its registry), so the command that runs the suite sets this around it
# rather than threading a parameter through every suite's signature.
_PROGRESS: ContextVar[StepProgress | None] = ContextVar("vitrine_control_progress", default=None)


@contextmanager
def control_progress(steps: StepProgress | None) -> Iterator[None]:
    """Within the block, :func:`run_controls` counts each finished control on ``steps``."""
    token = _PROGRESS.set(steps)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


class OutcomeState(StrEnum):
    """One arm's outcome: a :class:`~vitrine.checks.Status`, or one of two exception states.

    The first four are the one vocabulary's statuses under the same values; the two exception
    states map onto it in :func:`vitrine.checks.status_of_label` (contained: red, error: not
    measured).
    """

    PASS = Status.PASS.value
    FAIL = Status.FAIL.value
    NOT_APPLICABLE = Status.NOT_APPLICABLE.value
    NOT_MEASURED = Status.NOT_MEASURED.value
    CONTAINED = "CONTAINED"  # the declared exception, raised in the broken arm only
    ERROR = "ERROR"  # any other exception: never evidence of a catch

    @property
    def status(self) -> Status:
        """This arm's outcome in the one vocabulary."""
        return status_of_label(self.value)


@dataclass(frozen=True, slots=True)
class ControlOutcome:
    """One arm of a control: the evaluator's state, its pass bit, and a short detail."""

    state: OutcomeState
    passed: bool | None
    detail: str = ""

    @property
    def green(self) -> bool:
        return self.state is OutcomeState.PASS

    @property
    def red(self) -> bool:
        return self.state in (OutcomeState.FAIL, OutcomeState.CONTAINED)

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state.value, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class ControlResult:
    spec: ControlSpec
    healthy: ControlOutcome
    broken: ControlOutcome
    restored: ControlOutcome

    @property
    def caught(self) -> bool:
        return self.healthy.green and self.broken.red and self.restored.green

    @property
    def detail(self) -> str:
        """Why a control was not caught, or what the broken arm saw when it was."""
        if self.caught:
            return self.broken.detail
        for arm, outcome, want in (
            ("healthy", self.healthy, "a measured pass"),
            ("broken", self.broken, "a measured failure"),
            ("restored", self.restored, "a measured pass"),
        ):
            if not (outcome.red if arm == "broken" else outcome.green):
                return sanitize_text(
                    f"{arm} arm was {outcome.state.value}, not {want}: {outcome.detail}",
                    _DETAIL_LIMIT,
                )
        return ""  # pragma: no cover - caught covers the remaining case

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.spec.to_dict(),
            "healthy": self.healthy.to_dict(),
            "broken": self.broken.to_dict(),
            "restored": self.restored.to_dict(),
            "caught": self.caught,
        }


@dataclass(frozen=True, slots=True)
class Control(Generic[T]):
    """A registered control: a manifest row bound to its observe, perturb and evaluate seams."""

    spec: ControlSpec
    observe: Callable[[], T | Awaitable[T]]
    perturb: Callable[[T], T | Awaitable[T]]
    evaluate: Callable[[T], Evaluated]
    expected_exception: type[BaseException] | None = None

    def __post_init__(self) -> None:
        declared = self.spec.expected_exception
        given = None if self.expected_exception is None else self.expected_exception.__name__
        if declared != given:
            raise ManifestError(
                f"{self.spec.id}: the manifest declares expected exception {declared!r} but "
                f"the registration gives {given!r}; they must name the same type"
            )


async def _resolve(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _outcome(observation: Observation) -> ControlOutcome:
    # An unlabelled predicate still says why in its evidence (e.g. the screen's reason codes).
    detail = observation.label or observation.reason or _compact(observation.evidence)
    return ControlOutcome(
        OutcomeState(observation.status.value),
        observation.passed,
        sanitize_text(detail, _DETAIL_LIMIT),
    )


def _compact(evidence: Mapping[str, Any]) -> str:
    return "; ".join(f"{k}={v}" for k, v in evidence.items() if v not in (None, "", [], ()))


async def _arm(
    control: Control[Any], *, perturbed: bool, contained: type[BaseException] | None
) -> ControlOutcome:
    try:
        observation = await _resolve(control.observe())
        if perturbed:
            observation = await _resolve(control.perturb(observation))
        result = await _resolve(control.evaluate(observation))
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        # Exact type only: a subclass or a parent of the declared type is a different fault.
        if contained is not None and type(exc) is contained:
            return ControlOutcome(
                OutcomeState.CONTAINED, False, describe_exception(exc, _DETAIL_LIMIT)
            )
        return ControlOutcome(OutcomeState.ERROR, None, describe_exception(exc, _DETAIL_LIMIT))
    try:
        observed = as_observation(result, "the evaluator")
    except TypeError as exc:
        return ControlOutcome(OutcomeState.ERROR, None, str(exc))
    return _outcome(observed)


async def run_control(control: Control[Any]) -> ControlResult:
    """Healthy, broken, restored, in that order; only the broken arm may contain a fault."""
    healthy = await _arm(control, perturbed=False, contained=None)
    broken = await _arm(control, perturbed=True, contained=control.expected_exception)
    restored = await _arm(control, perturbed=False, contained=None)
    return ControlResult(control.spec, healthy, broken, restored)


async def run_controls(
    controls: Iterable[Control[Any]], *, concurrency: int = 8
) -> tuple[ControlResult, ...]:
    """Run controls concurrently (bounded); results come back in registration order.

    Inside :func:`control_progress` each finished control is one step: its id, caught or not.
    """
    if concurrency < 1:
        raise InvalidArgumentError(f"concurrency must be at least 1, got {concurrency}")
    gate = asyncio.Semaphore(concurrency)
    listed = tuple(controls)
    steps = _PROGRESS.get() or StepProgress.lines("controls", None)
    steps.begin(len(listed))

    async def one(control: Control[Any]) -> ControlResult:
        async with gate:
            started = time.monotonic()
            result = await run_control(control)
        outcome = "caught" if result.caught else "not caught"
        steps.step(control.spec.id, outcome, duration_s=time.monotonic() - started)
        return result

    with steps:
        return tuple(await asyncio.gather(*(one(c) for c in listed)))


class ControlRegistry:
    """Controls registered against a manifest, in manifest order.

    ``register(spec, observe=..., perturb=..., evaluate=...)`` binds one row; ``control(spec,
    observe=..., perturb=...)`` does the same as a decorator on the evaluator. ``controls()``
    refuses a manifest row without an implementation (or an implementation without a row),
    so the set that runs is exactly the set the manifest registers.
    """

    def __init__(self, manifest: Sequence[ControlSpec] | None = None) -> None:
        self._manifest = None if manifest is None else tuple(manifest)
        self._controls: dict[str, Control[Any]] = {}

    def spec(self, control_id: str) -> ControlSpec:
        if self._manifest is None:
            raise ManifestError("this registry has no manifest to look ids up in")
        for spec in self._manifest:
            if spec.id == control_id:
                return spec
        raise ManifestError(f"{control_id}: not in the manifest")

    def register(
        self,
        spec: ControlSpec | str,
        *,
        observe: Callable[[], T | Awaitable[T]],
        perturb: Callable[[T], T | Awaitable[T]],
        evaluate: Callable[[T], Evaluated],
        expected_exception: type[BaseException] | None = None,
    ) -> Control[T]:
        resolved = self.spec(spec) if isinstance(spec, str) else spec
        if resolved.id in self._controls:
            raise ManifestError(f"{resolved.id}: registered twice")
        if self._manifest is not None and resolved not in self._manifest:
            raise ManifestError(f"{resolved.id}: the registered row differs from the manifest")
        control = Control(resolved, observe, perturb, evaluate, expected_exception)
        self._controls[resolved.id] = control
        return control

    def control(
        self,
        spec: ControlSpec | str,
        *,
        observe: Callable[[], T | Awaitable[T]],
        perturb: Callable[[T], T | Awaitable[T]],
        expected_exception: type[BaseException] | None = None,
    ) -> Callable[
        [Callable[[T], Evaluated]],
        Callable[[T], Evaluated],
    ]:
        def decorate(
            evaluate: Callable[[T], Evaluated],
        ) -> Callable[[T], Evaluated]:
            self.register(
                spec,
                observe=observe,
                perturb=perturb,
                evaluate=evaluate,
                expected_exception=expected_exception,
            )
            return evaluate

        return decorate

    def controls(self) -> tuple[Control[Any], ...]:
        if self._manifest is None:
            return tuple(self._controls.values())
        missing = [s.id for s in self._manifest if s.id not in self._controls]
        if missing:
            raise ManifestError(f"manifest rows without a registered control: {', '.join(missing)}")
        return tuple(self._controls[s.id] for s in self._manifest)

    def __len__(self) -> int:
        return len(self._controls)

    async def run(self, *, concurrency: int = 8) -> tuple[ControlResult, ...]:
        return await run_controls(self.controls(), concurrency=concurrency)
