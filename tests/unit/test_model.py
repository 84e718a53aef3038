import pytest

from vitrine._bench.model import (
    AdmissionError,
    AdmittedCheck,
    Arm,
    BenchmarkDefinition,
    Case,
    DefinitionError,
    admit,
    check,
)
from vitrine._bench.response import SubjectResponse
from vitrine._floors import ChanceFloor
from vitrine._outcomes import Observation

FLOOR = ChanceFloor.not_derivable("deterministic predicate")


@check("non-empty")
def non_empty(case: Case, response: SubjectResponse) -> Observation:
    if response.answer is None:
        return Observation.not_applicable("no answer")
    return Observation.measured(bool(response.answer), bool(response.answer))


def definition(**overrides):
    args = {
        "key": "demo",
        "version": "1.0.0",
        "cases": [Case("a", "hi"), Case("b", "hello")],
        "checks": [admit(non_empty, FLOOR)],
    }
    args.update(overrides)
    return BenchmarkDefinition(**args)


def test_admission_without_a_floor_is_refused_before_anything_runs():
    with pytest.raises(AdmissionError, match="has no chance floor"):
        admit(non_empty, None)
    with pytest.raises(AdmissionError, match="has no chance floor"):
        AdmittedCheck(non_empty, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"cases": []}, "An empty case set is not a zero score"),
        ({"checks": []}, "no checks"),
        ({"cases": [Case("a", 1), Case("a", 2)]}, "duplicate case id 'a'"),
        ({"cases": [Case(" ", 1)]}, "blank id"),
        ({"checks": [admit(non_empty, FLOOR), admit(non_empty, FLOOR)]}, "duplicate check key"),
        ({"checks": [non_empty]}, "was not admitted"),
        ({"key": ""}, "must not be blank"),
        ({"cases": [Case("a", object())]}, "JSON-representable"),
    ],
)
def test_definition_refusals_explain_themselves(overrides, message):
    with pytest.raises(DefinitionError, match=message):
        definition(**overrides)


def test_identity_and_content_hash_bind_what_the_definition_measures():
    base = definition()
    assert base.identity == "demo@1.0.0"
    assert base.content_hash == definition().content_hash
    assert base.content_hash != definition(bindings={"threshold": 1.0}).content_hash
    assert base.content_hash != definition(cases=[Case("a", "hi")]).content_hash
    assert base.content_hash.startswith("sha256:")


async def test_function_checks_run_sync_and_async_functions():
    @check("async-one")
    async def async_check(case: Case, response: SubjectResponse) -> Observation:
        return Observation.measured(1, True)

    response = SubjectResponse(answer="")
    assert (await non_empty.evaluate(Case("a", 1), response)).failed
    assert (await async_check.evaluate(Case("a", 1), response)).passed


async def test_a_check_returning_something_else_is_an_error():
    @check("wrong")
    def wrong(case: Case, response: SubjectResponse) -> Observation:
        return 1  # type: ignore[return-value]

    with pytest.raises(TypeError, match="not an Observation"):
        await wrong.evaluate(Case("a", 1), SubjectResponse(answer="x"))


def test_arm_needs_an_id_and_a_callable():
    async def subject(case: Case) -> SubjectResponse:
        return SubjectResponse(answer="x")

    with pytest.raises(DefinitionError, match="non-blank arm_id"):
        Arm("", subject)
    with pytest.raises(DefinitionError, match="not callable"):
        Arm("a", "nope")  # type: ignore[arg-type]
