import pytest
from hypothesis import given, strategies as st

from vitrine._bench.response import (
    AttemptOutcome,
    ImpossibleCensusError,
    StageAttemptCensus,
    StageStatus,
    SubjectResponse,
    ToolCallRecord,
    ToolCallStatus,
    validate_stage_set,
)

U, X, F, C = (
    AttemptOutcome.USABLE,
    AttemptOutcome.UNUSABLE,
    AttemptOutcome.PROVIDER_FAILURE,
    AttemptOutcome.CANCELLED,
)


def test_tool_journal_none_empty_and_nonempty_are_three_facts():
    call = ToolCallRecord("search_products", {"query": "x"}, ToolCallStatus.OK)
    assert SubjectResponse("a").tool_names() is None
    assert SubjectResponse("a", tool_calls=()).tool_names() == ()
    assert SubjectResponse("a", tool_calls=(call,)).tool_names() == ("search_products",)
    assert SubjectResponse("a").to_dict()["tool_calls"] is None
    assert SubjectResponse("a", tool_calls=()).to_dict()["tool_calls"] == []


@pytest.mark.parametrize(
    ("outcomes", "fell_back", "status"),
    [
        ([U], False, StageStatus.MEASURED),
        ([F, U], False, StageStatus.RECOVERED),
        ([X, U], False, StageStatus.RECOVERED),
        ([X, X], True, StageStatus.FINAL_FALLBACK),
        ([F, F], False, StageStatus.UNRECOVERED),
        ([X, C], False, StageStatus.CANCELLED),
    ],
)
def test_census_from_attempts_names_the_right_status(outcomes, fell_back, status):
    census = StageAttemptCensus.from_attempts("Ranker", outcomes, fell_back=fell_back)
    assert census.status is status
    assert StageAttemptCensus.from_dict(census.to_dict()) == census


@given(
    st.lists(st.sampled_from([X, F]), max_size=5),
    st.sampled_from([U, C, X, F]),
    st.booleans(),
)
def test_census_built_from_attempts_is_never_impossible(failures, last, fell_back):
    outcomes = [*failures, last]
    census = StageAttemptCensus.from_attempts("Presenter", outcomes, fell_back=fell_back)
    assert census.attempts == len(outcomes)
    assert census.status.keeps_quality_measurable == (last is U)


def test_attempts_after_a_usable_response_are_impossible():
    with pytest.raises(ImpossibleCensusError, match="a stage stops at its first usable"):
        StageAttemptCensus.from_attempts("Ranker", [U, X])


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"responses": 3}, "!= attempts"),
        ({"unusable": 2, "responses": 1, "provider_failures": 1}, "exceeds responses"),
        ({"last_usable": None}, "disagrees with a count"),
        ({"last_usable": 5}, "outside attempts"),
        ({"attempts": 3, "responses": 2, "last_usable": 2}, "only the last can be usable"),
        ({"status": StageStatus.MEASURED}, "single, usable attempt"),
        ({"attempts": 0, "responses": 0, "provider_failures": 0}, "at least one attempt"),
    ],
)
def test_impossible_censuses_are_rejected(fields, message):
    base = {
        "stage": "Ranker",
        "attempts": 2,
        "responses": 1,
        "unusable": 0,
        "provider_failures": 1,
        "cancellations": 0,
        "status": StageStatus.RECOVERED,
        "last_usable": 2,
        "last_unusable": None,
    }
    base.update(fields)
    with pytest.raises(ImpossibleCensusError, match=message):
        StageAttemptCensus(**base)


def test_unknown_status_is_rejected_when_read():
    data = StageAttemptCensus.from_attempts("Ranker", [U]).to_dict()
    data["status"] = "fine"
    with pytest.raises(ImpossibleCensusError, match="unknown status"):
        StageAttemptCensus.from_dict(data)


def test_stage_sets_reject_duplicates_and_missing_stages():
    one = StageAttemptCensus.from_attempts("Ranker", [U])
    with pytest.raises(ImpossibleCensusError, match="reported twice"):
        validate_stage_set([one, one], ["Ranker"])
    with pytest.raises(ImpossibleCensusError, match="missing required model stages: Presenter"):
        validate_stage_set([one], ["Ranker", "Presenter"])
