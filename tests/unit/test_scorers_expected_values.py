"""The expected value every scorer reads the same way: given once and read at build time, or
named by ``metadata(...)`` and read case by case, a missing or unreadable field being *not
measured* for that case only, with a reason that says where."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from vitrine import Case, Observation, SubjectResponse, ToolCallRecord
from vitrine.checks import AdmittedCheck, MeasurementState
from vitrine.scorers import (
    ScorerError,
    includes,
    json_schema,
    metadata,
    numeric,
    regex,
    trajectory_match,
)
from vitrine.scorers._common import Expected
from vitrine.subjects import ToolCallStatus

RESPONSE = SubjectResponse(
    answer="0", tool_calls=(ToolCallRecord("search", {}, ToolCallStatus.OK),)
)

# Each scorer reading its expected value from the case's "want" field, and a value of that
# field it cannot read, with the words its reason gives.
PER_CASE: list[tuple[str, Any, Any, str]] = [
    ("includes", includes(metadata("want")), [], "non-empty"),
    ("regex", regex(metadata("want")), "(", "not a valid regular expression"),
    ("json_schema", json_schema(metadata("want")), {"type": 7}, "not a valid JSON schema"),
    ("numeric", numeric(metadata("want")), "pi", "must be a number"),
    ("trajectory_match", trajectory_match(metadata("want")), "search", "a list of calls"),
]


def observe(admitted: AdmittedCheck, case: Case) -> Observation:
    return asyncio.run(admitted.check.evaluate(case, RESPONSE))


@pytest.mark.parametrize(("name", "scorer", "bad", "words"), PER_CASE, ids=[p[0] for p in PER_CASE])
def test_a_missing_or_unreadable_field_is_not_measured_and_says_where(name, scorer, bad, words):
    missing = observe(scorer, Case("bare", "q"))
    assert missing.state is MeasurementState.NOT_MEASURED
    assert missing.reason is not None
    assert "case 'bare' has no metadata field 'want'" in missing.reason
    unreadable = observe(scorer, Case("odd", "q", {"want": bad}))
    assert unreadable.state is MeasurementState.NOT_MEASURED
    assert unreadable.reason is not None and words in unreadable.reason
    # Only the trajectory names the field in the reason it gives for an unreadable one.
    where = "case 'odd' metadata 'want':" if name == "trajectory_match" else "case 'odd' metadata:"
    assert unreadable.reason.startswith(where), unreadable.reason


@pytest.mark.parametrize(
    ("scorer", "argument"),
    [
        (lambda: includes([]), "phrases"),
        (lambda: regex("("), "pattern"),
        (lambda: json_schema({"type": 7}), "schema"),
        (lambda: numeric("pi"), "expected"),
        (lambda: trajectory_match("search"), "reference"),
    ],
)
def test_a_fixed_value_that_cannot_be_read_fails_when_the_scorer_is_built(scorer, argument):
    with pytest.raises(ScorerError, match=f"^{argument}: "):
        scorer()


def test_a_falsy_fixed_value_is_used_and_never_read_from_the_case():
    zero = numeric(0)
    obs = observe(zero, Case("bare", "q"))
    assert obs.state is MeasurementState.MEASURED and obs.passed
    assert obs.evidence["expected"] == 0.0
    assert observe(trajectory_match([]), Case("bare", "q")).state is MeasurementState.MEASURED


def test_expected_reads_a_fixed_value_once_and_a_field_per_case():
    reads: list[str] = []

    def read(given: Any, where: str) -> int:
        reads.append(where)
        if not isinstance(given, int):
            raise ScorerError(f"{where}: not an int")
        return given

    fixed = Expected(0, read, "n")
    assert fixed.fixed == 0 and reads == ["n"]
    assert fixed.for_case(Case("a", "q", {"n": 5})) == 0
    assert reads == ["n"]

    per_case = Expected(metadata("n"), read, "n")
    assert per_case.fixed is None and reads == ["n"]
    assert per_case.for_case(Case("a", "q", {"n": 5})) == 5
    refused = per_case.for_case(Case("b", "q", {"n": "five"}))
    assert isinstance(refused, Observation) and refused.reason == "case 'b' metadata: not an int"
    assert reads == ["n", "case 'a' metadata", "case 'b' metadata"]
