"""One outcome vocabulary: every spelling vitrine writes maps onto Status in one place."""

from __future__ import annotations

import typing

import pytest

from vitrine._bench.model import Authority
from vitrine._gates import decide, gate_result
from vitrine._outcomes import (
    ExitCode,
    MeasurementState,
    Observation,
    ObservationError,
    Status,
    exit_code_for_gate,
    status_of_label,
)
from vitrine.controls._runner import OutcomeState, _outcome
from vitrine.redteam._cases import AssertionResult
from vitrine.redteam._model import Outcome

OBSERVATIONS = {
    "pass": Observation.measured(1.0, True),
    "fail": Observation.measured(0.0, False),
    "n/a": Observation.not_applicable("the case has no tool step"),
    "not measured": Observation.not_measured("the judge returned nothing"),
}


def test_the_status_values_are_the_words_reports_already_store():
    assert [status.value for status in Status] == ["PASS", "FAIL", "N/A", "NOT MEASURED"]


@pytest.mark.parametrize(
    ("key", "status", "gate_code"),
    [
        ("pass", Status.PASS, ExitCode.PASS),
        ("fail", Status.FAIL, ExitCode.MEASURED_FAILURE),
        ("n/a", Status.NOT_APPLICABLE, ExitCode.NOT_MEASURED),
        ("not measured", Status.NOT_MEASURED, ExitCode.NOT_MEASURED),
    ],
)
def test_an_observation_a_gate_and_the_gate_rule_agree(key, status, gate_code):
    observation = OBSERVATIONS[key]
    gate = gate_result("g", Authority.GATE, observation)
    assert observation.status is status is gate.status
    assert status.state is observation.state
    assert gate.exit_code is gate_code is exit_code_for_gate(observation)
    assert gate_result("d", Authority.DIAGNOSTIC, observation).exit_code is None


def test_a_mandatory_gate_cannot_pass_by_being_absent():
    decision = decide([gate_result("g", Authority.GATE, OBSERVATIONS["n/a"])])
    assert decision.exit_code is ExitCode.NOT_MEASURED
    assert decision.reason == "gate g: n/a"


def test_a_status_built_from_state_ignores_the_pass_bit_of_an_absence():
    assert Status.of(MeasurementState.NOT_MEASURED, True) is Status.NOT_MEASURED
    assert Status.of(MeasurementState.NOT_APPLICABLE, False) is Status.NOT_APPLICABLE


@pytest.mark.parametrize("key", list(OBSERVATIONS))
def test_a_control_arm_keeps_the_observation_s_status_under_the_same_value(key):
    observation = OBSERVATIONS[key]
    arm = _outcome(observation)
    assert arm.state.value == observation.status.value
    assert arm.state.status is observation.status


@pytest.mark.parametrize(
    ("state", "status"),
    [(OutcomeState.CONTAINED, Status.FAIL), (OutcomeState.ERROR, Status.NOT_MEASURED)],
)
def test_a_control_s_exception_states_map_onto_the_vocabulary(state, status):
    assert state.status is status


@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        (Outcome.RESISTED, Status.PASS),
        (Outcome.COMPROMISED, Status.FAIL),
        (Outcome.INCONCLUSIVE, Status.NOT_MEASURED),
    ],
)
def test_a_red_team_probe_outcome_is_a_status_from_the_target_s_side(outcome, status):
    assert outcome.status is status


def _labels_written_by_every_vocabulary() -> list[str]:
    assertion_states = typing.get_args(typing.get_type_hints(AssertionResult)["state"])
    plugin_metric_states = ("passed", "failed", "skipped")
    return [
        *(status.value for status in Status),
        *(state.value for state in MeasurementState if state is not MeasurementState.MEASURED),
        *(state.value for state in OutcomeState),
        *(outcome.value for outcome in Outcome),
        *assertion_states,
        *plugin_metric_states,
    ]


@pytest.mark.parametrize("label", _labels_written_by_every_vocabulary())
def test_every_label_vitrine_writes_has_one_meaning(label):
    assert isinstance(status_of_label(label), Status)


@pytest.mark.parametrize(
    ("label", "status"),
    [
        ("passed", Status.PASS),
        ("failed", Status.FAIL),
        ("not_measured", Status.NOT_MEASURED),
        ("not_applicable", Status.NOT_APPLICABLE),
        ("skipped", Status.NOT_MEASURED),
        ("N/A", Status.NOT_APPLICABLE),
    ],
)
def test_lower_case_spellings_mean_what_their_upper_case_twins_mean(label, status):
    assert status_of_label(label) is status


def test_a_label_nobody_writes_is_refused_with_the_known_ones():
    with pytest.raises(ObservationError, match="'green' is not an outcome vitrine writes"):
        status_of_label("green")
    with pytest.raises(ObservationError, match="'measured'"):
        status_of_label("measured")  # a state, not an outcome: it does not say pass or fail
