"""A trial's rows line is spliced from memoised pieces; it must be the bytes the whole record
encodes to, whatever the observations hold, because the seal hashes exactly those bytes."""

from hypothesis import given, settings, strategies as st

from vitrine._bench.results import ScenarioRow
from vitrine._outcomes import MeasurementState, Observation
from vitrine.store._files import encode_line
from vitrine.store._records import row_record, trial_rows_line

_TEXT = st.text(max_size=12)
_EVIDENCE = st.dictionaries(
    _TEXT,
    st.one_of(
        st.integers(),
        st.floats(allow_nan=False),
        _TEXT,
        st.frozensets(st.integers(), max_size=3),
        st.lists(st.booleans(), max_size=3),
    ),
    max_size=3,
)


@st.composite
def observations(draw: st.DrawFn) -> Observation:
    kind = draw(st.sampled_from(["bool", "value", "absent"]))
    evidence = draw(st.one_of(st.none(), _EVIDENCE))
    label = draw(st.sampled_from(["", "quality", "ünïcode"]))
    if kind == "bool":
        flag = draw(st.booleans())
        return Observation.measured(flag, flag, evidence=evidence, label=label)
    if kind == "value":
        value = draw(st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e-300, 7.0]))
        passed = draw(st.sampled_from([True, False, 1, 0]))
        return Observation.measured(value, passed, evidence=evidence, label=label)
    reason = draw(
        st.sampled_from(["timed out", "no answer, ünï", 'a "quote" and \\ a backslash', "a\nbreak"])
    )
    if draw(st.booleans()):
        return Observation.not_applicable(reason, evidence=evidence, label=label)
    return Observation.not_measured(reason, evidence=evidence, label=label)


def whole_record_line(case_id: str, rows: list[ScenarioRow]) -> bytes:
    records = [row_record(row) for row in rows]
    return encode_line(
        {
            "schema_version": 2,
            "case_id": case_id,
            "rows": [{k: v for k, v in r.items() if k != "case_id"} for r in records],
        }
    )


@settings(max_examples=300, deadline=None)
@given(
    case_id=_TEXT,
    drawn=st.lists(
        st.tuples(
            _TEXT,
            observations(),
            st.one_of(st.floats(allow_nan=False), st.integers(min_value=0, max_value=10)),
        ),
        max_size=6,
    ),
)
def test_the_spliced_line_is_the_whole_records_encoding(case_id, drawn):
    rows = [ScenarioRow(case_id, key, obs, duration) for key, obs, duration in drawn]
    assert trial_rows_line(2, case_id, rows) == whole_record_line(case_id, rows)


def test_a_negative_zero_and_an_integer_pass_flag_are_not_confused_with_their_equals():
    # -0.0 == 0.0 and 1 == True: a memo keyed on equality alone would write the first one seen.
    first = [ScenarioRow("c", "k", Observation.measured(0.0, True), 0.0)]
    second = [ScenarioRow("c", "k", Observation.measured(-0.0, 1), 0.0)]
    trial_rows_line(2, "c", first)
    assert trial_rows_line(2, "c", second) == whole_record_line("c", second)
    assert b"-0.0" in trial_rows_line(2, "c", second)


def test_plain_verdicts_are_shared_and_everything_else_is_its_own():
    assert Observation.measured(True, True) is Observation.measured(1.0, True)
    assert Observation.measured(False, False) is Observation.measured(0.0, False)
    assert Observation.measured(True, True) is not Observation.measured(True, True, label="x")
    assert Observation.measured(0.5, True) is not Observation.measured(0.5, True)
    negative = Observation.measured(-0.0, False)
    assert str(negative.value) == "-0.0"
    assert negative is not Observation.measured(0.0, False)
    assert Observation.measured(True, True).state is MeasurementState.MEASURED
