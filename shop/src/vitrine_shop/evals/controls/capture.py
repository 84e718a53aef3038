"""Shipped state captured once for the production-observation controls.

Answers come from running the real scripted agent once per canonical case (the stored runs keep
only a bounded preview); the evidence bundle, canonical runs and their report section are the
ones the suite itself produced. Everything is read-only: a control perturbs copies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from vitrine import SubjectResponse
from vitrine.reports import BenchmarkSection
from vitrine.runs import RunResult
from vitrine_shop.arms import recall_case, scripted_agent_arm, shared_services
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.benchmarks import canonical_definition
from vitrine_shop.scripted import ScriptedShopModel
from vitrine_shop.workflow import ShopWorkflow

__all__ = ["RECALL_CASE_ID", "ShippedState", "capture_shipped_state"]

RECALL_CASE_ID = "recall"


def _frozen(value: Any) -> Any:
    # Controls run concurrently over one capture; a read-only view makes an in-place edit
    # fail loudly (an ERROR arm) instead of leaking into another control.
    if isinstance(value, Mapping):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


@dataclass(frozen=True)
class ShippedState:
    answers: Mapping[str, SubjectResponse]  # the scripted agent, per canonical case id + recall
    evidence: Mapping[str, Mapping[str, Any]]  # the production evidence bundle, by check key
    stages: tuple[Mapping[str, Any], ...]  # a scripted-model workflow run's stage censuses
    canonical_runs: tuple[RunResult, ...]
    claims: BenchmarkSection
    store_root: Path

    def evidence_for(self, key: str) -> Mapping[str, Any]:
        return self.evidence[key]


async def capture_shipped_state(
    *,
    evidence: Mapping[str, Any],
    canonical_runs: tuple[RunResult, ...],
    claims: BenchmarkSection,
    store_root: Path,
) -> ShippedState:
    agent = scripted_agent_arm()
    answers = {case.id: await agent.respond(case) for case in canonical_definition().cases}
    answers[RECALL_CASE_ID] = await agent.respond(recall_case())
    workflow = await ShopWorkflow(ScriptedShopModel(), shared_services()).answer(
        ShopRequest.single("nadia", "What should I add for my next hut trip?")
    )
    stages = tuple(_frozen(s.to_dict()) for s in workflow.stages or ())
    return ShippedState(
        MappingProxyType(answers),
        _frozen(evidence),
        stages,
        canonical_runs,
        claims,
        store_root,
    )
