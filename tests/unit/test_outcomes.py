import pytest

from vitrine._outcomes import (
    Census,
    ExitCode,
    MeasurementState,
    Observation,
    ObservationError,
    Verdict,
    aggregate_exit_codes,
    exit_code_for_gate,
    run_verdict,
)


def test_measured_observation_keeps_raw_value_and_pass_flag_apart():
    obs = Observation.measured(0.75, passed=False, evidence={"k": 1}, label="three of four")
    assert obs.value == 0.75
    assert obs.passed is False
    assert obs.failed
    assert obs.to_dict()["evidence"] == {"k": 1}


def test_absence_cannot_carry_a_score():
    with pytest.raises(ObservationError, match="absence must not be readable as a score"):
        Observation(MeasurementState.NOT_MEASURED, value=0.0, reason="x")


def test_absence_needs_a_reason():
    with pytest.raises(ObservationError, match="needs a reason"):
        Observation(MeasurementState.NOT_APPLICABLE)


def test_measured_needs_value_and_flag():
    with pytest.raises(ObservationError, match="needs both a value and a pass flag"):
        Observation(MeasurementState.MEASURED, value=1.0)


def test_nan_is_not_a_measurement():
    with pytest.raises(ObservationError, match="NaN"):
        Observation.measured(float("nan"), passed=False)


def test_not_measured_reason_is_sanitized():
    obs = Observation.not_measured("boom at https://secret.example.com/v1 with api_key=sk-abc123")
    assert obs.reason is not None
    assert "secret.example.com" not in obs.reason
    assert "sk-abc123" not in obs.reason


def test_observation_round_trips_through_dict():
    for obs in (
        Observation.measured(1, True),
        Observation.not_applicable("no answer"),
        Observation.not_measured("judge failed"),
    ):
        assert Observation.from_dict(obs.to_dict()) == obs


def test_census_describes_counts_and_void():
    census = Census.of(
        [MeasurementState.MEASURED] * 8
        + [MeasurementState.NOT_APPLICABLE] * 3
        + [MeasurementState.NOT_MEASURED]
    )
    assert census.describe() == "8 of 12 measured, 3 n/a, 1 not measured"
    assert not census.void
    assert Census(0, 1, 2).void
    assert not Census().void
    assert (Census(1, 0, 0) + Census(0, 1, 1)).total == 3


def test_verdict_precedence_fail_pending_warn_pass():
    passed = Observation.measured(1, True)
    failed = Observation.measured(0, False)
    missing = Observation.not_measured("x")
    na = Observation.not_applicable("y")
    assert run_verdict([passed, missing, failed]) is Verdict.FAIL
    assert run_verdict([missing, na]) is Verdict.PENDING
    assert run_verdict([]) is Verdict.PENDING
    assert run_verdict([passed, missing]) is Verdict.WARN
    assert run_verdict([passed, na]) is Verdict.PASS


def test_exit_aggregation_puts_absence_above_failure():
    assert aggregate_exit_codes([ExitCode.MEASURED_FAILURE, ExitCode.NOT_MEASURED]) == 3
    assert aggregate_exit_codes([ExitCode.NOT_MEASURED, ExitCode.INFRASTRUCTURE]) == 4
    assert aggregate_exit_codes([ExitCode.PASS, ExitCode.MEASURED_FAILURE]) == 1
    assert aggregate_exit_codes([]) == 0
    assert ExitCode.NOT_MEASURED.meaning == "not measured"


def test_a_mandatory_gate_cannot_pass_by_being_absent():
    assert exit_code_for_gate(Observation.not_applicable("no probes")) is ExitCode.NOT_MEASURED
    assert exit_code_for_gate(Observation.measured(0, False)) is ExitCode.MEASURED_FAILURE
    assert exit_code_for_gate(Observation.measured(1, True)) is ExitCode.PASS
