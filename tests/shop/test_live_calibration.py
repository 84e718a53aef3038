"""The judge's calibration set: hard negatives and a hard positive a judge must tell apart.

The limit messages are checked against the real agent driven to its limits, the offline judge
that ``vitrine --all`` uses is admitted on the set, and a judge that passes anything fluent is
refused by name. One short test runs the packaged SmolLM2-135M as the judge, in a subprocess
so a crash in the native library fails the test rather than the session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from vitrine._bench.response import TokenUsage
from vitrine.judge._admission import admit_judge
from vitrine.judge._base import Criterion, CriterionVerdict, JudgeResult
from vitrine.providers._base import ChatCompletion, ChatRequest, Provenance, ToolCallRequest
from vitrine_shop.agent import ShopAgent
from vitrine_shop.arms import shared_services
from vitrine_shop.catalogue import load_catalogue
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.benchmarks import JUDGED_CASE, owned_durables
from vitrine_shop.evals.judging import offline_judge
from vitrine_shop.evals.live.calibration import (
    CALIBRATED_SCENARIOS,
    HARD_CASES,
    LIMIT_ANSWERS,
    examples_for,
)
from vitrine_shop.scenarios import load_scenarios


class _AlwaysCallsATool:
    """A model that never answers: every turn asks for one more tool call."""

    @property
    def model_id(self) -> str:
        return "runaway"

    @property
    def provenance(self) -> Provenance:
        return Provenance.OFFLINE_DETERMINISTIC

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        del request
        return ChatCompletion(None, (ToolCallRequest("c", "list_departments", "{}"),), TokenUsage())


@pytest.mark.parametrize(("budget", "turns"), [(100, 2), (1, 50)])
async def test_the_limit_messages_are_what_the_agent_delivers_when_it_hits_a_limit(
    budget: int, turns: int
) -> None:
    agent = ShopAgent(
        _AlwaysCallsATool(), shared_services(), tool_call_budget=budget, max_turns=turns
    )
    response = await agent.answer(ShopRequest.single("nadia", "anything?"))
    assert response.answer in LIMIT_ANSWERS


def test_every_calibrated_scenario_carries_the_hard_cases() -> None:
    registry = load_scenarios()
    for scenario_id in CALIBRATED_SCENARIOS:
        examples = examples_for(registry[scenario_id], "task")
        hard = {e.label: e for e in examples if e.hard is not None}
        expected = set(HARD_CASES) - (
            {"step-limit", "tool-limit"} if scenario_id == "luca-safe-abstention" else set()
        )
        assert set(hard) == expected, scenario_id
        assert hard["other-words"].passes
        assert not any(e.passes for label, e in hard.items() if label != "other-words")


class _CallsEverythingMet:
    """A judge that grades every answer as meeting every criterion, like a tiny model does."""

    judge_id = "always-met"

    async def evaluate(self, input: str, output: str, criteria: list[Criterion]) -> JudgeResult:
        del input, output
        verdicts = tuple(CriterionVerdict(c.id, True, "met") for c in criteria)
        return JudgeResult(100.0, "all met", verdicts)


async def test_a_judge_that_passes_anything_fluent_is_refused_naming_the_hard_negatives() -> None:
    scenario = load_scenarios()[JUDGED_CASE]
    admission = await admit_judge(_CallsEverythingMet(), examples_for(scenario, "task"))
    assert not admission.admitted
    assert admission.reason.startswith(
        "refused: the judge passed the non-answer (nadia-cross-category), the step-limit "
        "message (nadia-cross-category), the tool-call-limit message (nadia-cross-category), "
        "the off-topic answer (nadia-cross-category), the refusal (nadia-cross-category) and "
        "the answer with one wrong fact (nadia-cross-category); agreement 21/36"
    )
    assert len(admission.to_dict()["hard_confusions"]) == 6


async def test_the_offline_judge_that_vitrine_all_uses_is_admitted_on_its_scenario() -> None:
    scenario = load_scenarios()[JUDGED_CASE]
    assert scenario.persona_id is not None
    judge = offline_judge(load_catalogue(), owned_durables(scenario.persona_id))
    admission = await admit_judge(judge, examples_for(scenario, scenario.query))
    assert admission.admitted, admission.reason
    assert admission.confused == () and admission.labels == 36


_LOCAL_ADMISSION = """
import asyncio, json, sys
from vitrine.judge._admission import admit_judge
from vitrine.judge._llm import LLMJudge
from vitrine.providers._config import ProviderConfig, create_chat_model
from vitrine_shop.evals.live.calibration import examples_for
from vitrine_shop.evals.live.definition import judge_input
from vitrine_shop.scenarios import load_scenarios

config = ProviderConfig.from_env("local", environ={})
model = create_chat_model(config, "judge")
judge = LLMJudge(model, max_output_tokens=config.judge_max_output_tokens)
scenario = load_scenarios()[sys.argv[1]]
admission = asyncio.run(admit_judge(judge, examples_for(scenario, judge_input(scenario))))
print(json.dumps(admission.to_dict()))
"""


@pytest.mark.local_model
def test_the_packaged_135m_judge_is_refused_for_the_hard_negatives_it_passes(tmp_path) -> None:
    pytest.importorskip("llama_cpp")
    from vitrine.providers._local import default_model_available

    available, why = default_model_available()
    if not available:
        pytest.skip(why)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    env.setdefault("VITRINE_CACHE_DIR", str(tmp_path / "cache"))
    done = subprocess.run(
        [sys.executable, "-c", _LOCAL_ADMISSION, JUDGED_CASE],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    # A native crash shows as a negative return code: a defect, not a refusal.
    assert done.returncode == 0, done.stderr[-2000:]
    admission = json.loads(done.stdout.strip().splitlines()[-1])
    assert admission["admitted"] is False
    assert admission["hard_confusions"], admission["reason"]
    assert admission["reason"].startswith("refused: the judge passed ")
