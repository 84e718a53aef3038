"""A store whose one run has everything a trial page must show: tool calls with arguments and
results, stage attempts, model calls, a long answer, a judge's repr-in-a-string evidence."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import vitrine
from vitrine import (
    Arm,
    BenchmarkDefinition,
    Case,
    ChanceFloor,
    Observation,
    SubjectResponse,
    ToolCallRecord,
    admit,
    check,
)
from vitrine.subjects import (
    AttemptOutcome,
    ModelCallRecord,
    StageAttemptCensus,
    ToolCallStatus,
)

# About 900 characters: stored whole, shown folded after its first lines.
LONG_ANSWER = "\n".join(f"line {i}: a suggestion with its reason" for i in range(24))
LAST_LINE = "line 23: a suggestion with its reason"


@check("criteria-met")
def criteria_met(case, response):
    # A judge that stored its verdict as a Python repr inside a string, as some do.
    return Observation.measured(
        1.0, passed=True, evidence={"verdict": "{'met': True, 'criteria': ['grounded']}"}
    )


@check("short-answer")
def short_answer(case, response):
    passed = len(response.answer or "") < 500
    return Observation.measured(
        float(passed), passed=passed, evidence={"chars": len(response.answer or "")}
    )


def definition() -> BenchmarkDefinition:
    return BenchmarkDefinition(
        "board-trial",
        "1.0.0",
        cases=[Case("hut", "hut-to-hut hiking kit")],
        checks=[
            admit(criteria_met, ChanceFloor.not_derivable("a fixed judge")),
            admit(short_answer, ChanceFloor.not_derivable("a length rule")),
        ],
    )


async def assistant(case):
    return SubjectResponse(
        answer=LONG_ANSWER,
        tool_calls=(
            ToolCallRecord(
                "search_products",
                MappingProxyType({"query": "dry bag", "limit": 8}),
                ToolCallStatus.OK,
                "2 products match the query",
                1.5,
            ),
        ),
        structured={
            "tool_outputs": [
                {
                    "name": "search_products",
                    "arguments": {"query": "dry bag", "limit": 8},
                    "status": "ok",
                    "data": [{"sku": "GLX-2103", "price": 34.9}, {"sku": "GLX-2104", "price": 279}],
                }
            ],
        },
        stages=(
            StageAttemptCensus.from_attempts(
                "rank", [AttemptOutcome.UNUSABLE, AttemptOutcome.USABLE]
            ),
        ),
        model_calls=(
            ModelCallRecord(
                model="gpt-test",
                provider="openai",
                input_tokens=120,
                output_tokens=48,
                latency_ms=812.0,
                finish_reason="stop",
            ),
        ),
    )


def build_trial_store(root: Path) -> str:
    """The run id of the one sealed run written under ``root``."""
    result = vitrine.evaluate(definition(), [Arm("assistant", assistant)], store=root)
    return result.runs[0].run_id
