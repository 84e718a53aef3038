"""vitrine.scorers: each scorer's three states, the agentevals trajectory modes, and each scorer
turned red by a planted bug in a subject run through vitrine."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Sequence
from typing import Any

import pytest

import vitrine
from vitrine import (
    Arm,
    BenchmarkDefinition,
    Case,
    ChanceFloor,
    Evaluation,
    ExitCode,
    Observation,
    SubjectResponse,
    ToolCallRecord,
)
from vitrine.checks import AdmittedCheck, Authority, FloorKind, MeasurementState
from vitrine.errors import InvalidArgumentError, RunningLoopError, VitrineError
from vitrine.judge import CalibrationExample, Criterion, DeterministicJudge, JudgeResult
from vitrine.scorers import (
    AdmissionPolicy,
    JudgeNotAdmittedError,
    ScorerError,
    ScorerUnavailableError,
    graded,
    includes,
    json_schema,
    metadata,
    numeric,
    regex,
    trajectory_match,
)
from vitrine.subjects import ToolCallStatus

MEASURED = MeasurementState.MEASURED
NOT_MEASURED = MeasurementState.NOT_MEASURED
CASE = Case("c1", "question")


def call(name: str, **arguments: Any) -> ToolCallRecord:
    return ToolCallRecord(name, arguments, ToolCallStatus.OK)


def journal(*calls: ToolCallRecord | str) -> SubjectResponse:
    records = tuple(call(c) if isinstance(c, str) else c for c in calls)
    return SubjectResponse(answer="done", tool_calls=records)


def observe(admitted: AdmittedCheck, response: SubjectResponse, case: Case = CASE) -> Observation:
    return asyncio.run(admitted.check.evaluate(case, response))


def passes(admitted: AdmittedCheck, response: SubjectResponse, case: Case = CASE) -> bool:
    obs = observe(admitted, response, case)
    assert obs.state is MEASURED, obs.reason
    assert (obs.value == 1.0) is obs.passed, "a value of 1.0 is exactly a pass"
    return bool(obs.passed)


def not_measured(admitted: AdmittedCheck, response: SubjectResponse, case: Case = CASE) -> str:
    obs = observe(admitted, response, case)
    assert obs.state is NOT_MEASURED, obs
    assert obs.value is None and obs.passed is None
    return obs.reason or ""


# --- what every scorer is ---------------------------------------------------------------------

JUDGE_RULES = {"refund": lambda i, o: ("refund" in o.lower(), "mentions a refund")}
CRITERIA = [Criterion("refund", "The answer offers a refund.")]


def _calibration(criteria: Sequence[Criterion] = CRITERIA) -> list[CalibrationExample]:
    examples = []
    for n in range(5):
        for label, answer, met in (
            ("good", f"Sorry, we will refund order {n}.", True),
            ("bad", f"Order {n} cannot be changed.", False),
        ):
            labels = {c.id: met for c in criteria}
            examples.append(
                CalibrationExample(f"k{n}", label, "Late order", answer, tuple(criteria), labels)
            )
    return examples


def every_scorer() -> list[AdmittedCheck]:
    return [
        trajectory_match(["search"]),
        includes("refund"),
        regex(r"\d+"),
        json_schema({"type": "object"}),
        numeric(42),
        graded(CRITERIA, judge=DeterministicJudge(JUDGE_RULES), calibration=_calibration()),
    ]


@pytest.mark.parametrize("admitted", every_scorer(), ids=lambda a: a.key)
def test_every_scorer_is_an_admitted_gate_with_a_stated_floor(admitted):
    assert isinstance(admitted, AdmittedCheck)
    assert admitted.authority is Authority.GATE
    assert admitted.floor.kind is FloorKind.NOT_DERIVABLE
    assert "no random-draw population" in (admitted.floor.reason or "")
    assert re.fullmatch(r"1\.0\.0\+[0-9a-f]{12}", admitted.check.version)
    assert (admitted.check.description or "").strip()


def test_a_scorer_takes_a_floor_and_an_authority_given_to_it():
    admitted = trajectory_match(
        ["search"],
        arguments="ignore",
        floor=ChanceFloor.uniform_choice(4),
        authority="diagnostic",
    )
    assert admitted.floor.rate == 0.25 and admitted.authority is Authority.DIAGNOSTIC
    with pytest.raises(ScorerError, match="ChanceFloor"):
        includes("x", floor=0.5)  # type: ignore[arg-type]
    with pytest.raises(ScorerError, match="authority"):
        includes("x", authority="advisory")


def test_a_changed_configuration_is_a_changed_benchmark():
    def definition(pattern: str) -> BenchmarkDefinition:
        return BenchmarkDefinition("b", "1", [CASE], [regex(pattern)])

    assert definition(r"\d+").content_hash == definition(r"\d+").content_hash
    assert definition(r"\d+").content_hash != definition(r"\d*").content_hash
    assert includes("a").check.version != includes("a", case_sensitive=False).check.version


def test_scorer_errors_are_vitrine_argument_errors():
    assert issubclass(ScorerError, InvalidArgumentError)
    assert issubclass(ScorerUnavailableError, ScorerError)
    assert issubclass(JudgeNotAdmittedError, vitrine.errors.AdmissionError)
    assert issubclass(ScorerError, VitrineError) and issubclass(ScorerError, ValueError)


def test_a_metadata_field_needs_a_name():
    with pytest.raises(ScorerError, match="non-blank"):
        metadata(" ")


# --- trajectory match: the three states ---------------------------------------------------------


def test_no_journal_is_not_measured_and_an_empty_journal_is_measured():
    strict = trajectory_match(["search"])
    reason = not_measured(strict, SubjectResponse(answer="hi", tool_calls=None))
    assert "no tool journal" in reason
    assert passes(strict, journal()) is False
    assert passes(trajectory_match(["search"], mode="subset"), journal()) is True
    for mode in ("strict", "unordered", "subset", "superset"):
        assert passes(trajectory_match([], mode=mode), journal()) is True
        assert not_measured(trajectory_match([], mode=mode), SubjectResponse(answer="x"))


def test_an_empty_reference_against_calls_follows_each_mode():
    made = journal("search")
    outcome = {m: passes(trajectory_match([], mode=m), made) for m in ("strict", "unordered")}
    assert outcome == {"strict": False, "unordered": False}
    assert passes(trajectory_match([], mode="superset"), made) is True
    assert passes(trajectory_match([], mode="subset"), made) is False


# --- trajectory match: the agentevals modes, with duplicates, order and extra calls -------------

A, B, C = call("a", x=1), call("b", y=2), call("c")
TABLE = [
    # (made, reference, {mode: passes})
    ((A, B), (A, B), {"strict": True, "unordered": True, "subset": True, "superset": True}),
    ((B, A), (A, B), {"strict": False, "unordered": True, "subset": True, "superset": True}),
    ((A, B, C), (A, B), {"strict": False, "unordered": False, "subset": False, "superset": True}),
    ((A,), (A, B), {"strict": False, "unordered": False, "subset": True, "superset": False}),
    ((A, A), (A,), {"strict": False, "unordered": False, "subset": False, "superset": True}),
    ((A,), (A, A), {"strict": False, "unordered": False, "subset": True, "superset": False}),
    ((A, B, A), (A, A, B), {"strict": False, "unordered": True, "subset": True, "superset": True}),
    ((C,), (A, B), {"strict": False, "unordered": False, "subset": False, "superset": False}),
]


@pytest.mark.parametrize(("made", "reference", "expected"), TABLE)
def test_the_four_trajectory_modes(made, reference, expected):
    for mode, outcome in expected.items():
        got = passes(trajectory_match(list(reference), mode=mode), journal(*made))
        assert got is outcome, (mode, [c.name for c in made], [c.name for c in reference])


def test_a_duplicate_call_is_counted_not_collapsed():
    twice = trajectory_match(["search", "search"], mode="unordered", arguments="ignore")
    assert passes(twice, journal("search", "search")) is True
    assert passes(twice, journal("search")) is False
    assert passes(twice, journal("search", "search", "search")) is False


def test_the_evidence_names_the_first_difference():
    strict = trajectory_match([A, B])
    obs = observe(strict, journal(A, C))
    assert obs.evidence["detail"] == "call 2: expected b(y=2), got c()"
    assert obs.value == 0.5
    obs = observe(trajectory_match([A], mode="unordered"), journal(A, C))
    assert obs.evidence["detail"] == "unexpected call c()"
    obs = observe(trajectory_match([A, B], mode="superset"), journal(A))
    assert obs.evidence["detail"] == "missing call b(y=2)" and obs.value == 0.5
    assert obs.evidence["called"] == ["a"] and obs.evidence["expected"] == ["a", "b"]


# --- trajectory match: arguments ------------------------------------------------------------------


def test_argument_modes_read_the_subject_call_against_the_reference_call():
    reference = [call("search", q="shoes", limit=3)]
    exact = journal(call("search", q="shoes", limit=3))
    fewer = journal(call("search", q="shoes"))
    more = journal(call("search", q="shoes", limit=3, sort="price"))
    wrong = journal(call("search", q="boots", limit=3))
    table = {
        "exact": (True, False, False, False),
        "ignore": (True, True, True, True),
        "subset": (True, True, False, False),
        "superset": (True, False, True, False),
    }
    for mode, expected in table.items():
        scorer = trajectory_match(reference, arguments=mode)
        got = tuple(passes(scorer, r) for r in (exact, fewer, more, wrong))
        assert got == expected, mode


def test_the_argument_mode_keeps_its_meaning_in_every_trajectory_mode():
    # agentevals swaps the two sides of an argument match in its subset mode; here `superset`
    # always means the subject passed every reference argument.
    reference = [call("search", q="shoes")]
    made = journal(call("search", q="shoes", limit=3))
    for mode in ("strict", "unordered", "subset", "superset"):
        assert passes(trajectory_match(reference, mode=mode, arguments="superset"), made), mode
        assert not passes(trajectory_match(reference, mode=mode, arguments="subset"), made), mode


def test_pairing_is_a_maximum_matching_not_first_fit():
    # First fit pairs the open reference call with the subject's q=a call, then finds nothing
    # for the reference's q=a. A pairing exists (open <-> q=b), so the trajectory matches.
    reference = [call("search"), call("search", q="a")]
    made = journal(call("search", q="a"), call("search", q="b"))
    for mode in ("unordered", "superset", "subset"):
        assert passes(trajectory_match(reference, mode=mode, arguments="superset"), made), mode


def test_per_tool_overrides_a_mode_a_key_list_or_a_function():
    reference = [call("search", q="shoes", page=1), call("book", flight="BA1", seat="2A")]
    made = journal(call("search", q="shoes", page=2), call("book", flight="BA1", seat="9F"))
    assert passes(trajectory_match(reference), made) is False
    by_mode = trajectory_match(reference, argument_overrides={"search": "ignore", "book": "ignore"})
    assert passes(by_mode, made) is True
    by_keys = trajectory_match(reference, argument_overrides={"search": ["q"], "book": ["flight"]})
    assert passes(by_keys, made) is True
    same_flight = trajectory_match(
        reference,
        argument_overrides={
            "search": "ignore",
            "book": lambda made, ref: made["flight"].lower() == ref["flight"].lower(),
        },
    )
    assert passes(same_flight, made) is True
    assert passes(same_flight, journal(call("search"), call("book", flight="BA2"))) is False


def test_a_key_override_reads_nested_arguments_and_refuses_an_absent_key():
    reference = [call("search", filters={"colour": "red", "size": 9})]
    override = trajectory_match(reference, argument_overrides={"search": ["filters.colour"]})
    assert passes(override, journal(call("search", filters={"colour": "red"}))) is True
    assert passes(override, journal(call("search", filters={"colour": "blue"}))) is False
    assert passes(override, journal(call("search"))) is False
    neither = trajectory_match([call("search")], argument_overrides={"search": ["filters.colour"]})
    assert passes(neither, journal(call("search"))) is False  # nothing was compared


def test_arguments_compare_as_json_values_and_a_name_alone_takes_any():
    assert passes(trajectory_match([call("pick", ids=[1, 2])]), journal(call("pick", ids=(1, 2))))
    assert not passes(
        trajectory_match([call("pick", ids=[1, 2])]), journal(call("pick", ids=[2, 1]))
    )
    assert passes(trajectory_match(["pick"]), journal(call("pick", ids=[9])))
    assert passes(trajectory_match([{"name": "pick"}]), journal(call("pick", ids=[9])))
    assert passes(
        trajectory_match([{"name": "pick", "args": {"ids": [9]}}]), journal(call("pick", ids=[9]))
    )
    assert not passes(
        trajectory_match([{"name": "pick", "arguments": {}}]), journal(call("pick", ids=[9]))
    )


def test_the_reference_from_case_metadata():
    scorer = trajectory_match(metadata("expected_tools"), mode="superset")
    case = Case("c", "q", {"expected_tools": [{"name": "search", "arguments": {"q": "x"}}]})
    assert passes(scorer, journal(call("search", q="x"), "log"), case) is True
    assert passes(scorer, journal("log"), case) is False
    reason = not_measured(scorer, journal("search"), Case("bare", "q"))
    assert "'bare'" in reason and "'expected_tools'" in reason
    broken = Case("broken", "q", {"expected_tools": "search"})
    assert "a reference trajectory is a list" in not_measured(scorer, journal("search"), broken)
    assert not_measured(scorer, SubjectResponse(answer="x"), case)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"mode": "fuzzy"}, "mode='fuzzy' is not one of 'strict'"),
        ({"arguments": "loose"}, "arguments='loose' is not one of 'exact'"),
        ({"argument_overrides": {"search": "near"}}, r"argument_overrides\['search'\]='near'"),
        ({"argument_overrides": {"search": 3}}, "a non-empty list of argument names"),
        ({"argument_overrides": {"search": []}}, "a non-empty list of argument names"),
        ({"key": ""}, "non-blank key"),
    ],
)
def test_bad_trajectory_arguments_fail_at_construction(arguments, message):
    with pytest.raises(ScorerError, match=message):
        trajectory_match(["search"], **arguments)


@pytest.mark.parametrize(
    "reference", ["search", [3], [{"arguments": {}}], [{"name": "s", "arguments": 1}]]
)
def test_a_malformed_reference_fails_at_construction(reference):
    with pytest.raises(ScorerError, match="reference"):
        trajectory_match(reference)


# --- includes -----------------------------------------------------------------------------------


def answer(text: str | None) -> SubjectResponse:
    return SubjectResponse(answer=text)


def test_includes_all_any_none_and_case():
    text = answer("Your Refund arrives in 7 days.")
    assert passes(includes(["Refund", "7 days"]), text) is True
    assert passes(includes(["refund", "7 days"]), text) is False
    assert passes(includes(["refund", "7 days"], case_sensitive=False), text) is True
    assert passes(includes(["refund", "voucher"], mode="any", case_sensitive=False), text)
    assert not passes(includes(["voucher", "credit"], mode="any"), text)
    assert passes(includes(["voucher", "credit"], mode="none"), text)
    assert not passes(includes(["voucher", "refund"], mode="none", case_sensitive=False), text)
    obs = observe(includes(["Refund", "voucher"]), text)
    assert obs.value == 0.5 and obs.evidence["missing"] == ["voucher"]


def test_includes_three_states():
    assert "no answer" in not_measured(includes("refund"), answer(None))
    assert passes(includes("refund"), answer("")) is False
    assert passes(includes("refund", mode="any"), answer("")) is False
    assert passes(includes("refund", mode="none"), answer("")) is True
    scorer = includes(metadata("must_mention"))
    assert passes(scorer, answer("a b"), Case("c", "q", {"must_mention": ["a", "b"]}))
    assert not passes(scorer, answer("a"), Case("c", "q", {"must_mention": "b"}))
    assert "must_mention" in not_measured(scorer, answer("a"), Case("c", "q"))
    assert "non-empty" in not_measured(scorer, answer("a"), Case("c", "q", {"must_mention": []}))


@pytest.mark.parametrize("phrases", [[], "", ["a", ""], [1], None])
def test_includes_refuses_phrases_every_answer_contains(phrases):
    with pytest.raises(ScorerError, match="phrases"):
        includes(phrases)


def test_includes_refuses_an_unknown_mode():
    with pytest.raises(ScorerError, match="mode='most'"):
        includes("a", mode="most")


# --- regex --------------------------------------------------------------------------------------


def test_regex_modes_and_flags():
    text = answer("Order 1234 ships today")
    assert passes(regex(r"\d{4}"), text)
    assert not passes(regex(r"\d{4}", mode="match"), text)
    assert passes(regex(r"order", mode="match", flags=re.IGNORECASE), text)
    assert not passes(regex(r"Order \d+", mode="fullmatch"), text)
    assert passes(regex(r"Order \d+ ships today", mode="fullmatch"), text)
    assert passes(regex(re.compile(r"SHIPS", re.I)), text)
    assert observe(regex(r"\d+"), text).evidence["matched"] == "1234"


def test_regex_three_states():
    assert not_measured(regex("x"), answer(None))
    assert passes(regex("x"), answer("")) is False
    assert passes(regex("^$", mode="fullmatch"), answer("")) is True
    scorer = regex(metadata("pattern"))
    assert passes(scorer, answer("AB-12"), Case("c", "q", {"pattern": r"[A-Z]+-\d+"}))
    assert "pattern" in not_measured(scorer, answer("x"), Case("c", "q"))
    bad = Case("c", "q", {"pattern": "("})
    assert "not a valid regular expression" in not_measured(scorer, answer("x"), bad)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"pattern": "("}, "not a valid regular expression"),
        ({"pattern": re.compile("a"), "flags": re.I}, "cannot be added to a compiled pattern"),
        ({"pattern": "a", "mode": "find"}, "mode='find'"),
        ({"pattern": "a", "flags": True}, "flags must be re flags"),
        ({"pattern": 3}, "a pattern is a string"),
        ({"pattern": re.compile(b"a")}, "text, not bytes"),
    ],
)
def test_bad_regex_arguments_fail_at_construction(arguments, message):
    with pytest.raises(ScorerError, match=message):
        regex(**arguments)


# --- JSON schema --------------------------------------------------------------------------------

ORDER = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "status": {"enum": ["open", "shipped"]}},
    "required": ["id", "status"],
}


def test_json_schema_valid_invalid_and_not_json():
    scorer = json_schema(ORDER)
    assert passes(scorer, answer('{"id": 3, "status": "open"}'))
    obs = observe(scorer, answer('{"id": "3", "status": "lost"}'))
    assert obs.failed and obs.evidence["error_count"] == 2
    assert any("$.id" in e for e in obs.evidence["errors"])
    not_json = observe(scorer, answer("id 3, open"))
    assert not_json.failed and not_json.evidence["errors"][0].startswith("not JSON")
    assert passes(scorer, answer('```json\n{"id": 3, "status": "open"}\n```'))
    assert not passes(
        json_schema(ORDER, allow_fence=False), answer('```\n{"id": 3, "status": "open"}\n```')
    )


def test_json_schema_three_states_on_answer_and_structured():
    assert not_measured(json_schema(ORDER), answer(None))
    assert passes(json_schema(ORDER), answer("")) is False
    structured = json_schema(ORDER, source="structured")
    assert passes(
        structured, SubjectResponse(answer=None, structured={"id": 1, "status": "shipped"})
    )
    assert not passes(structured, SubjectResponse(answer="x", structured={"id": 1}))
    assert "no structured output" in not_measured(structured, SubjectResponse(answer="{}"))
    per_case = json_schema(metadata("schema"))
    assert passes(per_case, answer("[1]"), Case("c", "q", {"schema": {"type": "array"}}))
    assert "schema" in not_measured(per_case, answer("[1]"), Case("c", "q"))
    bad = Case("c", "q", {"schema": {"type": "lizard"}})
    assert "not a valid JSON schema" in not_measured(per_case, answer("[1]"), bad)


def test_json_schema_refuses_a_bad_schema_or_source_at_construction():
    with pytest.raises(ScorerError, match="not a valid JSON schema"):
        json_schema({"type": "lizard"})
    with pytest.raises(ScorerError, match="a JSON schema is a mapping"):
        json_schema("object")  # type: ignore[arg-type]
    with pytest.raises(ScorerError, match="source='body'"):
        json_schema(ORDER, source="body")


def test_json_schema_without_the_package_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    with pytest.raises(ScorerUnavailableError, match="pip install jsonschema"):
        json_schema(ORDER)


# --- numeric ------------------------------------------------------------------------------------


def test_numeric_reads_the_number_and_applies_tolerances():
    assert passes(numeric(42), answer("The answer is 42."))
    assert not passes(numeric(42), answer("The answer is 43."))
    assert passes(numeric(42, abs_tol=1), answer("about 43"))
    assert passes(numeric(1000, rel_tol=0.01), answer("roughly 1,009.5 units"))
    assert not passes(numeric(1000, rel_tol=0.01), answer("roughly 1,011 units"))
    assert passes(numeric(-3.5), answer("it fell to -3.5"))
    assert passes(numeric(2000), answer("2e3"))
    assert passes(numeric(0.5), answer(".5"))
    obs = observe(numeric(10, abs_tol=1), answer("got 12"))
    assert obs.evidence["got"] == 12.0 and obs.evidence["error"] == 2.0


def test_numeric_picks_the_last_first_or_only_number():
    text = answer("Step 1: 3 boxes of 4, so 12.")
    assert passes(numeric(12), text)
    assert passes(numeric(1, pick="first"), text)
    obs = observe(numeric(12, pick="only"), text)
    assert obs.failed and "did not commit" in obs.evidence["why"]
    assert passes(numeric(12, pick="only"), answer("12"))


def test_numeric_three_states():
    assert not_measured(numeric(1), answer(None))
    obs = observe(numeric(1), answer(""))
    assert obs.failed and obs.evidence["why"] == "no number"
    assert not passes(numeric(1), answer("one"))
    scorer = numeric(metadata("expected"), abs_tol=0.01)
    assert passes(scorer, answer("3.14"), Case("c", "q", {"expected": 3.141}))
    assert passes(scorer, answer("3.14"), Case("c", "q", {"expected": "3.14"}))
    assert "expected" in not_measured(scorer, answer("3"), Case("c", "q"))
    for bad in ("pi", True, None, float("nan")):
        reason = not_measured(scorer, answer("3"), Case("c", "q", {"expected": bad}))
        assert "must be" in reason, bad


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"expected": "x"}, "must be a number"),
        ({"expected": True}, "must be a number"),
        ({"expected": float("inf")}, "finite"),
        ({"expected": 1, "abs_tol": -1}, "abs_tol must be finite and at least 0"),
        ({"expected": 1, "rel_tol": float("nan")}, "rel_tol"),
        ({"expected": 1, "pick": "middle"}, "pick='middle'"),
    ],
)
def test_bad_numeric_arguments_fail_at_construction(arguments, message):
    with pytest.raises(ScorerError, match=message):
        numeric(**arguments)


# --- graded -------------------------------------------------------------------------------------


def always(met: bool) -> DeterministicJudge:
    return DeterministicJudge({"refund": lambda i, o: (met, "always")}, judge_id=f"always-{met}")


def test_an_admitted_judge_grades_pass_and_fail():
    judge = DeterministicJudge(JUDGE_RULES)
    scorer = graded(CRITERIA, judge=judge, calibration=_calibration())
    assert judge.calls == 10  # admission: one call per calibration example
    assert passes(scorer, answer("We refund you in full."))
    obs = observe(scorer, answer("No."))
    assert obs.failed and obs.evidence["verdicts"]["refund"]["met"] is False
    assert obs.evidence["admitted"] is True and obs.evidence["rubric_hash"].startswith("sha256:")
    assert judge.calls == 12  # admitted once, then one call per trial


def test_a_refused_judge_refuses_to_build():
    with pytest.raises(JudgeNotAdmittedError, match="not admitted: refused") as raised:
        graded(CRITERIA, judge=always(True), calibration=_calibration())
    assert raised.value.admission.admitted is False


def test_a_judge_admitted_at_first_use_that_is_refused_leaves_trials_not_measured():
    judge = always(True)
    scorer = graded(CRITERIA, judge=judge, calibration=_calibration(), admit_now=False)
    assert judge.calls == 0
    reason = not_measured(scorer, answer("We refund you."))
    assert "the judge was not admitted" in reason and "agreement 5/10" in reason
    assert not_measured(scorer, answer("anything"))
    assert judge.calls == 10  # admission only: a refused judge is never asked to grade


def test_a_stricter_policy_can_refuse_a_judge_the_default_admits():
    rules = {"refund": lambda i, o: ("refund" in o and "order 4" not in o, "")}
    judge = DeterministicJudge(rules)
    graded(CRITERIA, judge=judge, calibration=_calibration())  # 9/10 clears 0.80
    with pytest.raises(JudgeNotAdmittedError):
        graded(
            CRITERIA,
            judge=judge,
            calibration=_calibration(),
            policy=AdmissionPolicy(min_agreement=0.95),
        )


class RaisingJudge:
    judge_id = "raising"

    def __init__(self) -> None:
        self.armed = False
        self.inner = DeterministicJudge(JUDGE_RULES)

    async def evaluate(self, input: str, output: str, criteria: Sequence[Criterion]) -> JudgeResult:
        if self.armed:
            raise ConnectionError("judge endpoint down")
        return await self.inner.evaluate(input, output, criteria)


def test_a_judge_error_or_an_unusable_verdict_is_not_measured():
    judge = RaisingJudge()
    scorer = graded(CRITERIA, judge=judge, calibration=_calibration())
    judge.armed = True
    assert "judge endpoint down" in not_measured(scorer, answer("refund"))

    unusable = DeterministicJudge(JUDGE_RULES)
    scorer = graded(CRITERIA, judge=unusable, calibration=_calibration())
    unusable._rules.clear()  # the judge now answers every evaluation as failed
    assert "no usable verdict" in not_measured(scorer, answer("refund"))


def test_no_answer_is_not_measured_and_costs_no_judge_call():
    judge = DeterministicJudge(JUDGE_RULES)
    scorer = graded(CRITERIA, judge=judge, calibration=_calibration())
    calls = judge.calls
    assert "nothing to grade" in not_measured(scorer, answer(None))
    assert judge.calls == calls
    assert passes(scorer, answer("")) is False  # an empty answer is graded, and fails


def test_graded_takes_wording_and_gives_ids_in_order():
    rules = {"c1": JUDGE_RULES["refund"], "c2": lambda i, o: ("sorry" in o.lower(), "")}
    criteria = [Criterion("c1", "offers a refund"), Criterion("c2", "apologises")]
    scorer = graded(
        ["offers a refund", "apologises"],
        judge=DeterministicJudge(rules),
        calibration=_calibration(criteria),
        admit_now=False,
    )
    obs = observe(scorer, answer("Sorry, we will refund you."))
    assert obs.passed and obs.value == 1.0
    obs = observe(scorer, answer("We will refund you."))
    assert obs.failed and obs.value == 0.5


def test_bad_graded_arguments_fail_at_construction():
    judge = DeterministicJudge(JUDGE_RULES)
    with pytest.raises(ScorerError, match="needs calibration examples"):
        graded(CRITERIA, judge=judge, calibration=[])
    other = _calibration([Criterion("tone", "polite")])
    with pytest.raises(ScorerError, match="not this rubric's"):
        graded(CRITERIA, judge=judge, calibration=other)
    with pytest.raises(ScorerError, match="at least one criterion"):
        graded([], judge=judge, calibration=_calibration())
    with pytest.raises(ScorerError, match="distinct"):
        graded([CRITERIA[0], CRITERIA[0]], judge=judge, calibration=_calibration())
    with pytest.raises(ScorerError, match=r"must be a vitrine\.judge\.Judge"):
        graded(CRITERIA, judge=object(), calibration=_calibration())  # type: ignore[arg-type]


def test_admitting_now_inside_a_running_loop_is_refused():
    async def build() -> None:
        graded(CRITERIA, judge=DeterministicJudge(JUDGE_RULES), calibration=_calibration())

    with pytest.raises(RunningLoopError, match="admit_now=False"):
        asyncio.run(build())


# --- each scorer proven on a producer: a planted bug turns it red -------------------------------

BUG: dict[str, str | None] = {"now": None}
ORDERS = [
    Case(
        "o1",
        {"order": 1, "qty": 2, "price": 5},
        {"expected_tools": ["lookup", "refund"], "total": 10},
    ),
    Case(
        "o2",
        {"order": 2, "qty": 3, "price": 4},
        {"expected_tools": ["lookup", "refund"], "total": 12},
    ),
]


def support_agent(case: Case) -> SubjectResponse:
    """A tiny subject: looks the order up, refunds it, answers with the total as JSON."""
    order, qty, price = case.input["order"], case.input["qty"], case.input["price"]
    bug = BUG["now"]
    calls = [call("lookup", order=order)]
    if bug == "wrong tool":
        calls.append(call("cancel", order=order))
    elif bug == "missing argument":
        calls.append(call("refund"))
    else:
        calls.append(call("refund", order=order))
    total = qty * price + (1 if bug == "wrong number" else 0)
    if bug == "no journal":
        return SubjectResponse(answer=f'{{"total": {total}}}', tool_calls=None)
    text = f'{{"total": {total}, "note": "refund issued"}}'
    if bug == "not json":
        text = f"total {total}, refund issued"
    if bug == "no refund wording":
        text = f'{{"total": {total}, "note": "done"}}'
    return SubjectResponse(answer=text, tool_calls=tuple(calls))


def _graded_refund() -> AdmittedCheck:
    return graded(
        CRITERIA,
        judge=DeterministicJudge(JUDGE_RULES),
        calibration=_calibration(),
        key="refund-graded",
    )


PRODUCERS = [
    ("wrong tool", trajectory_match(metadata("expected_tools"), arguments="ignore")),
    (
        "missing argument",
        trajectory_match(
            [call("lookup", order=1), call("refund", order=1)],
            mode="superset",
            argument_overrides={"lookup": "ignore", "refund": "superset"},
        ),
    ),
    ("wrong number", numeric(metadata("total"))),
    ("not json", json_schema({"type": "object", "required": ["total"]})),
    ("no refund wording", includes("refund")),
    ("no refund wording", regex(r"refund (issued|made)")),
    ("no refund wording", _graded_refund()),
]


def _evaluation(scorer: AdmittedCheck) -> Evaluation:
    cases = ORDERS[:1] if scorer.key == "trajectory-superset" else ORDERS
    return Evaluation("support", cases=cases, checks=[scorer], arms={"agent": support_agent})


@pytest.mark.parametrize(("bug", "scorer"), PRODUCERS, ids=lambda p: getattr(p, "key", p))
def test_a_planted_bug_turns_the_scorer_red_through_an_evaluation(bug, scorer):
    evaluation = _evaluation(scorer)
    BUG["now"] = None
    try:
        assert evaluation.run().exit_code is ExitCode.PASS
        BUG["now"] = bug
        result = evaluation.run()
    finally:
        BUG["now"] = None
    assert result.exit_code is ExitCode.MEASURED_FAILURE, result.summary()


def test_a_subject_without_a_journal_leaves_the_trajectory_gate_not_measured():
    definition = BenchmarkDefinition(
        "support", "1", ORDERS, [trajectory_match(metadata("expected_tools"), arguments="ignore")]
    )
    BUG["now"] = "no journal"
    try:
        result = vitrine.evaluate(definition, [Arm("agent", support_agent)])
    finally:
        BUG["now"] = None
    assert result.decision().exit_code is ExitCode.NOT_MEASURED
    healthy = vitrine.evaluate(definition, [Arm("agent", support_agent)])
    assert healthy.decision().exit_code is ExitCode.PASS


def test_several_scorers_sit_in_one_benchmark_definition():
    definition = BenchmarkDefinition(
        "support",
        "1",
        ORDERS,
        [
            trajectory_match(metadata("expected_tools"), arguments="ignore"),
            numeric(metadata("total")),
            includes("refund"),
            _graded_refund(),
        ],
    )
    assert vitrine.evaluate(definition, [Arm("agent", support_agent)]).decision().exit_code is (
        ExitCode.PASS
    )
