"""The sequential comparison run case by case: it stops, and the cases after it never run."""

from __future__ import annotations

from vitrine import (
    Arm,
    BenchmarkDefinition,
    Case,
    ChanceFloor,
    Observation,
    SubjectResponse,
    admit,
    check,
)
from vitrine._sequential import SequentialSignTest
from vitrine._sequential_eval import compare_sequentially

FLOOR = ChanceFloor.not_derivable("a toy predicate")


@check("says-yes")
def says_yes(case, response):
    return Observation.measured(1.0 if response.answer == "yes" else 0.0, response.answer == "yes")


CASES = [Case(f"c{i}", i) for i in range(30)]
DEFINITION = BenchmarkDefinition("seq-toy", "1.0.0", CASES, [admit(says_yes, FLOOR)])


def arm(name, answer, asked):
    async def subject(case):
        asked.append(case.id)
        return SubjectResponse(answer=answer(case))

    return Arm(name, subject)


async def test_a_clear_winner_stops_the_run_and_the_remaining_cases_never_run():
    asked: list[str] = []
    result = await compare_sequentially(
        DEFINITION,
        arm("reference", lambda case: "no", asked),
        arm("challenger", lambda case: "yes", asked),
        "says-yes",
        SequentialSignTest(0.9),
    )
    # 1.8**7 / 2 = 30.6 >= 20 at the seventh win.
    assert result.result.rejected and result.result.cases == 7
    assert len(result.not_run) == 23 and len(result.runs) == 14
    assert set(asked) == {f"c{i}" for i in range(7)}
    assert "the challenger is better" in result.to_dict()["reason"]


async def test_no_difference_runs_every_case_and_decides_nothing():
    asked: list[str] = []
    result = await compare_sequentially(
        DEFINITION,
        arm("reference", lambda case: "yes" if case.input % 2 else "no", asked),
        arm("challenger", lambda case: "yes" if case.input % 2 else "no", asked),
        "says-yes",
    )
    assert not result.result.stopped and not result.result.rejected
    assert result.result.ties == 30 and result.not_run == ()
    assert "ran out" in result.result.reason


async def test_repetitions_are_collapsed_per_case_before_the_pair_is_formed():
    flips = {"n": 0}

    def flaky(case):
        flips["n"] += 1
        return "yes" if flips["n"] % 2 else "no"  # one repetition of two fails

    asked: list[str] = []
    result = await compare_sequentially(
        BenchmarkDefinition("seq-toy", "1.0.0", CASES[:5], [admit(says_yes, FLOOR)]),
        arm("reference", flaky, asked),
        arm("challenger", lambda case: "yes", asked),
        "says-yes",
        repetitions=2,
    )
    # RepCollapse.ALL: the reference fails every case, so every pair is a challenger win.
    assert [o for _, o in result.pairs] == ["win"] * 5
    assert len(result.runs) == 5 * 2 * 2
