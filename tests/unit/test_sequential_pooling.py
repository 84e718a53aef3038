"""The sequential comparison with the running left to the caller, and its runs scored pooled."""

from __future__ import annotations

import pytest
from test_sequential_eval import DEFINITION, arm

from vitrine import Arm, BenchmarkDefinition, Case
from vitrine._sequential import SequentialSignTest
from vitrine._sequential_eval import (
    compare_sequentially,
    compare_sequentially_with,
    one_case_definition,
    pooled_against_reference,
)
from vitrine.errors import ComparisonError
from vitrine.runs import BenchmarkScore, RepCollapse, RunResult, run_benchmark

SIX = BenchmarkDefinition("seq-toy", "1.0.0", DEFINITION.cases[:6], DEFINITION.checks)


def answer(case: Case) -> str:
    # Case 0 a tie (both yes), 1 a tie (both no), the rest split between the arms.
    return "yes" if case.input in (0, 2, 4) else "no"


def reverse(case: Case) -> str:
    return "yes" if case.input in (0, 3, 5) else "no"


async def test_the_callback_makes_every_run_and_sees_one_case_at_a_time():
    made: list[tuple[str, str, int]] = []

    async def run_arm(one: BenchmarkDefinition, chosen: Arm, repetition: int) -> RunResult:
        made.append((one.cases[0].id, chosen.arm_id, repetition))
        return await run_benchmark(one, chosen, repetition=repetition)

    asked: list[str] = []
    reference = arm("reference", lambda case: "no", asked)
    challenger = arm("challenger", lambda case: "yes", asked)
    test = SequentialSignTest(0.9)
    result = await compare_sequentially_with(
        DEFINITION, reference, challenger, "says-yes", test, run_arm=run_arm, repetitions=2
    )
    plain = await compare_sequentially(
        DEFINITION, reference, challenger, "says-yes", test, repetitions=2
    )
    assert result.to_dict() == plain.to_dict() and result.stopping_case == "c6"
    assert made[:4] == [
        ("c0", "reference", 1),
        ("c0", "reference", 2),
        ("c0", "challenger", 1),
        ("c0", "challenger", 2),
    ]
    assert len(made) == len(result.runs) == 7 * 4
    assert [r.definition_hash for r in result.runs[:4]] == [
        one_case_definition(DEFINITION, DEFINITION.cases[0]).content_hash
    ] * 4


async def test_pooled_one_case_runs_compare_as_runs_of_the_whole_definition():
    asked: list[str] = []
    reference, challenger = arm("reference", answer, asked), arm("challenger", reverse, asked)
    whole = [await run_benchmark(SIX, side, repetition=1) for side in (reference, challenger)]
    expected = BenchmarkScore.of(whole).against_reference("reference", RepCollapse.ALL)
    sliced = [
        await run_benchmark(one_case_definition(SIX, case), side, repetition=1)
        for case in SIX.cases
        for side in (reference, challenger)
    ]
    (pooled,) = pooled_against_reference(SIX, sliced, "reference")
    assert pooled.to_dict() == expected[0].to_dict()
    assert (pooled.wins, pooled.losses, pooled.ties) == (2, 2, 2)
    # Over the cases that ran only: the first three.
    (part,) = pooled_against_reference(SIX, sliced[:6], "reference")
    assert part.cases == 3 and [p.case_id for p in part.pairs] == ["c0", "c1", "c2"]
    assert part.definition_hash == SIX.content_hash


async def test_pooling_refuses_a_run_that_is_not_a_one_case_run_of_the_definition():
    asked: list[str] = []
    reference, challenger = arm("reference", answer, asked), arm("challenger", reverse, asked)
    whole = [await run_benchmark(SIX, side) for side in (reference, challenger)]
    with pytest.raises(ComparisonError, match="not a run of a one-case definition"):
        pooled_against_reference(SIX, whole, "reference")
    lone = [await run_benchmark(one_case_definition(SIX, SIX.cases[0]), reference)]
    with pytest.raises(ComparisonError):
        pooled_against_reference(SIX, lone, "reference")
