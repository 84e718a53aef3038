"""Measurement states, observations, censuses, run verdicts and process exit codes.

The whole harness rests on one distinction: a check that *failed* is a different fact from a
check that *could not be measured*, and both differ from a check that did not apply. They are
kept apart from the first observation to the process exit code.

This module is the one outcome vocabulary. The enums and the label table live in
:mod:`vitrine._vocabulary`, which imports nothing but ``enum`` so that the command line stays
fast; they are re-exported here, and this is where to import them from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from vitrine._redact import sanitize_text
from vitrine._vocabulary import (
    ExitCode,
    MeasurementState,
    ObservationError,
    Status,
    Verdict,
    aggregate_exit_codes,
    status_of_label,
)
from vitrine.errors import WrongTypeError

__all__ = [
    "Census",
    "ExitCode",
    "MeasurementState",
    "Observation",
    "ObservationError",
    "Status",
    "Verdict",
    "aggregate_exit_codes",
    "as_observation",
    "exit_code_for_gate",
    "run_verdict",
    "status_of_label",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})

# A plain pass or fail (0 or 1, no evidence, no label) is one of four equal, immutable values:
# handing out one object for each keeps a run's rows from holding a copy per trial and check.
_SHARED_VERDICTS: dict[tuple[float, bool], Observation] = {}


def _verdict_key(value: float | bool, passed: bool) -> tuple[float, bool] | None:
    if type(value) is bool:
        return (float(value), passed)
    # -0.0 equals 0.0 but is a different value to keep; only the positive zero is shared.
    if type(value) is float and (value == 1.0 or (value == 0.0 and str(value) == "0.0")):
        return (value, passed)
    return None


@dataclass(frozen=True, slots=True)
class Observation:
    """What one check saw in one trial.

    ``value`` is the raw score (not the pass bit): scoring collapses values, gates read ``passed``.
    Only a measured observation carries a value and a pass flag; the other two states carry a
    sanitized reason instead, so that absence can never be mistaken for a zero.
    """

    state: MeasurementState
    value: float | None = None
    passed: bool | None = None
    evidence: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    label: str = ""
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.state is MeasurementState.MEASURED:
            if self.value is None or self.passed is None:
                raise ObservationError(
                    "a measured observation needs both a value and a pass flag; "
                    "use not_measured() when the instrument produced nothing"
                )
            if self.value != self.value:  # NaN is a broken instrument, not a score
                raise ObservationError("a measured value cannot be NaN: report not_measured")
        else:
            if self.value is not None or self.passed is not None:
                raise ObservationError(
                    f"a {self.state.value} observation has no value or pass flag: "
                    "absence must not be readable as a score"
                )
            if not self.reason:
                raise ObservationError(f"a {self.state.value} observation needs a reason")

    @classmethod
    def measured(
        cls,
        value: float | bool,
        passed: bool,
        *,
        evidence: Mapping[str, Any] | None = None,
        label: str = "",
    ) -> Observation:
        plain = evidence is None and not label and cls is Observation and type(passed) is bool
        key = _verdict_key(value, passed) if plain else None
        if key is not None:
            shared = _SHARED_VERDICTS.get(key)
            if shared is not None:
                return shared
        made = cls(
            MeasurementState.MEASURED,
            float(value),
            passed,
            _EMPTY if evidence is None else evidence,
            label,
        )
        if key is not None:
            _SHARED_VERDICTS[key] = made
        return made

    @classmethod
    def not_applicable(
        cls, reason: str, *, evidence: Mapping[str, Any] | None = None, label: str = ""
    ) -> Observation:
        return cls._absent(MeasurementState.NOT_APPLICABLE, reason, evidence, label)

    @classmethod
    def not_measured(
        cls, reason: str, *, evidence: Mapping[str, Any] | None = None, label: str = ""
    ) -> Observation:
        return cls._absent(MeasurementState.NOT_MEASURED, reason, evidence, label)

    @classmethod
    def _absent(
        cls,
        state: MeasurementState,
        reason: str,
        evidence: Mapping[str, Any] | None,
        label: str,
    ) -> Observation:
        return cls(
            state,
            evidence=_EMPTY if evidence is None else evidence,
            label=label,
            reason=sanitize_text(reason),
        )

    @property
    def status(self) -> Status:
        """What this observation concluded, in the one vocabulary."""
        return Status.of(self.state, self.passed)

    @property
    def is_measured(self) -> bool:
        return self.state is MeasurementState.MEASURED

    @property
    def failed(self) -> bool:
        """True only for a measured failure; absence is never a failure."""
        return self.state is MeasurementState.MEASURED and self.passed is False

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "value": self.value,
            "passed": self.passed,
            "evidence": dict(self.evidence),
            "label": self.label,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Observation:
        try:
            state = MeasurementState(data["state"])
        except (KeyError, ValueError) as exc:
            raise ObservationError(f"unknown measurement state in {dict(data)!r}") from exc
        value = None if data.get("value") is None else float(data["value"])
        passed = data.get("passed")
        if (
            state is MeasurementState.MEASURED
            and value is not None
            and type(passed) is bool
            and not (data.get("evidence") or data.get("label") or data.get("reason"))
        ):
            return cls.measured(value, passed)  # a plain verdict read back is the shared one
        return cls(
            state,
            value,
            passed,
            MappingProxyType(dict(data.get("evidence") or {})),
            str(data.get("label") or ""),
            data.get("reason"),
        )


def as_observation(value: object, source: str) -> Observation:
    """What a check or an evaluator returned, as an observation: an :class:`Observation` as it
    is, a bool as a measured pass or fail, ``None`` as not measured (it measured nothing, which
    is never a pass). Anything else is refused with a TypeError naming ``source``.
    """
    if isinstance(value, Observation):
        return value
    if isinstance(value, bool):
        return Observation.measured(float(value), value)
    if value is None:
        return Observation.not_measured(
            f"{source} returned None: it measured nothing, which is never a pass"
        )
    raise WrongTypeError(
        f"{source} returned {type(value).__name__}; return a vitrine.Observation or a bool "
        "(None when nothing was measured)"
    )


@dataclass(frozen=True, slots=True)
class Census:
    """How many observations were measured, not applicable, or not measured."""

    measured: int = 0
    not_applicable: int = 0
    not_measured: int = 0

    @classmethod
    def of(cls, states: Iterable[MeasurementState | Observation]) -> Census:
        counts = {s: 0 for s in MeasurementState}
        for item in states:
            counts[item.state if isinstance(item, Observation) else item] += 1
        return cls(
            counts[MeasurementState.MEASURED],
            counts[MeasurementState.NOT_APPLICABLE],
            counts[MeasurementState.NOT_MEASURED],
        )

    @property
    def total(self) -> int:
        return self.measured + self.not_applicable + self.not_measured

    @property
    def void(self) -> bool:
        """Something was attempted and nothing was measured: no estimate exists."""
        return self.total > 0 and self.measured == 0

    def __add__(self, other: Census) -> Census:
        return Census(
            self.measured + other.measured,
            self.not_applicable + other.not_applicable,
            self.not_measured + other.not_measured,
        )

    def describe(self) -> str:
        return (
            f"{self.measured} of {self.total} measured, {self.not_applicable} n/a, "
            f"{self.not_measured} not measured"
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "measured": self.measured,
            "not_applicable": self.not_applicable,
            "not_measured": self.not_measured,
            "total": self.total,
        }


def run_verdict(observations: Iterable[Observation]) -> Verdict:
    """FAIL on any measured failure; PENDING when nothing was measured; WARN on any gap."""
    census_measured = 0
    any_not_measured = False
    for obs in observations:
        if obs.failed:
            return Verdict.FAIL
        if obs.state is MeasurementState.MEASURED:
            census_measured += 1
        elif obs.state is MeasurementState.NOT_MEASURED:
            any_not_measured = True
    if census_measured == 0:
        return Verdict.PENDING
    return Verdict.WARN if any_not_measured else Verdict.PASS


def exit_code_for_gate(observation: Observation) -> ExitCode:
    """The process class one mandatory gate contributes (see :attr:`Status.gate_exit_code`)."""
    return observation.status.gate_exit_code
