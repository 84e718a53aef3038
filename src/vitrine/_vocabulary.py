"""The outcome vocabulary: measurement states, statuses, run verdicts and process exit codes.

:class:`MeasurementState` says whether evidence exists; :class:`Status` says what one
observation, gate, control arm, red-team assertion or probe, or test metric concluded;
:class:`Verdict` summarises a run; :class:`ExitCode` is the process class. Other parts of
vitrine keep their historical spellings in the files they write (``"passed"``, ``"resisted"``,
``"N/A"`` ...); :func:`status_of_label` maps every one of them onto :class:`Status`, here and
nowhere else.

Only ``enum`` is imported (which ``re`` and ``argparse`` load anyway), so that the command line
can name an exit code without paying for anything else. :mod:`vitrine._outcomes` re-exports
every name, and is where code outside the command line imports them from.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum, StrEnum

from vitrine.errors import ObservationError

__all__ = [
    "ExitCode",
    "MeasurementState",
    "ObservationError",
    "Status",
    "Verdict",
    "aggregate_exit_codes",
    "status_of_label",
]


class MeasurementState(StrEnum):
    """The three states of an observation; they are never merged into one another."""

    MEASURED = "measured"
    NOT_APPLICABLE = "not_applicable"
    NOT_MEASURED = "not_measured"


class ExitCode(IntEnum):
    """Process exit codes: 0 pass, 1 measured failure, 2 bad arguments, 3 not measured, 4 infra."""

    PASS = 0
    MEASURED_FAILURE = 1
    INVALID_ARGUMENTS = 2
    NOT_MEASURED = 3
    INFRASTRUCTURE = 4

    @property
    def meaning(self) -> str:
        return _EXIT_MEANINGS[self]


_EXIT_MEANINGS = {
    ExitCode.PASS: "pass",
    ExitCode.MEASURED_FAILURE: "measured failure",
    ExitCode.INVALID_ARGUMENTS: "invalid arguments",
    ExitCode.NOT_MEASURED: "not measured",
    ExitCode.INFRASTRUCTURE: "infrastructure failure",
}


class Status(StrEnum):
    """What one observation concluded: the one vocabulary of gates, checks, controls and probes.

    The values are the words reports have always printed for a gate, so stored reports read
    the same. A measured observation passes or fails; an unmeasured one is never either.
    """

    PASS = "PASS"
    FAIL = "FAIL"
    NOT_APPLICABLE = "N/A"
    NOT_MEASURED = "NOT MEASURED"

    @classmethod
    def of(cls, state: MeasurementState, passed: bool | None) -> Status:
        """The status of an observation in ``state``; ``passed`` counts only when measured."""
        if state is MeasurementState.MEASURED:
            return cls.PASS if passed else cls.FAIL
        if state is MeasurementState.NOT_APPLICABLE:
            return cls.NOT_APPLICABLE
        return cls.NOT_MEASURED

    @property
    def state(self) -> MeasurementState:
        """Whether this status rests on a measurement."""
        return _STATE_OF_STATUS[self]

    @property
    def gate_exit_code(self) -> ExitCode:
        """The process class a *mandatory* gate with this status contributes.

        A gate that could not apply has produced no evidence, so it counts as not measured: a
        mandatory gate may not pass by being absent. This is the only place the rule is written.
        """
        if self is Status.PASS:
            return ExitCode.PASS
        if self is Status.FAIL:
            return ExitCode.MEASURED_FAILURE
        return ExitCode.NOT_MEASURED


_STATE_OF_STATUS = {
    Status.PASS: MeasurementState.MEASURED,
    Status.FAIL: MeasurementState.MEASURED,
    Status.NOT_APPLICABLE: MeasurementState.NOT_APPLICABLE,
    Status.NOT_MEASURED: MeasurementState.NOT_MEASURED,
}

# Every spelling of an outcome that vitrine writes or reads, mapped onto the one vocabulary.
# The spellings stay as they are in files already written (report.json, redteam.json, store
# indexes, test reports); what they mean is decided here.
_LABELS: dict[str, Status] = {
    # gates, reports and registered controls
    **{status.value: status for status in Status},
    "CONTAINED": Status.FAIL,  # a control's declared fault, raised in its broken arm: red
    "ERROR": Status.NOT_MEASURED,  # any other exception: the evaluator observed nothing
    # measurement states and red-team assertions (passed, failed, not_measured)
    "passed": Status.PASS,
    "failed": Status.FAIL,
    MeasurementState.NOT_APPLICABLE.value: Status.NOT_APPLICABLE,
    MeasurementState.NOT_MEASURED.value: Status.NOT_MEASURED,
    # a red-team assertion a run left out on request: not measured, and never passed
    "excluded": Status.NOT_MEASURED,
    # the pytest plugin's metrics: a judged metric without a judge is skipped, not passed
    "skipped": Status.NOT_MEASURED,
    # red-team probes, from the target's side: resisting the attack is the check passing
    "resisted": Status.PASS,
    "compromised": Status.FAIL,
    "inconclusive": Status.NOT_MEASURED,
}


def status_of_label(label: str) -> Status:
    """The :class:`Status` that a stored outcome label means; a label nobody writes is refused."""
    try:
        return _LABELS[label]
    except KeyError:
        raise ObservationError(
            f"{label[:40]!r} is not an outcome vitrine writes: expected one of "
            + ", ".join(sorted(_LABELS))
        ) from None


class Verdict(StrEnum):
    """Run verdict, in precedence order FAIL > PENDING > WARN > PASS."""

    PASS = "PASS"
    WARN = "WARN"
    PENDING = "PENDING"
    FAIL = "FAIL"


# An absence must never hide behind a failure: a run that both failed a gate and could not
# measure another exits 3, so the operator learns the evidence is incomplete.
_PRIORITY = (
    ExitCode.INVALID_ARGUMENTS,
    ExitCode.INFRASTRUCTURE,
    ExitCode.NOT_MEASURED,
    ExitCode.MEASURED_FAILURE,
    ExitCode.PASS,
)


def aggregate_exit_codes(codes: Iterable[ExitCode]) -> ExitCode:
    """Infrastructure > not measured > measured failure > pass (argument errors above all)."""
    seen = set(codes)
    for code in _PRIORITY:
        if code in seen:
            return code
    return ExitCode.PASS
