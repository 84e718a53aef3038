"""Observation producers for the six production checks.

Each producer drives a real path of the shop (the loaded catalogue, the tool box, the workflow
graph and a workflow run, the agent under injection, the agent's memory, the judge) and returns
plain facts. The evaluators in ``production.py`` judge those facts. A ``ShopUnderTest`` is the
shipped configuration or an isolated ablation of it: ablations are copies, never edits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vitrine import Arm, Case, RunResult, SubjectResponse
from vitrine.bench.runner import run_benchmark
from vitrine.reports.model import BenchmarkSection
from vitrine.reports.sections import recompute_claims
from vitrine.store import RunStore
from vitrine_shop.arms import (
    ablated_memory_agent_arm,
    degraded_empty_answer_arm,
    poison_tool_output,
    scripted_agent_arm,
    shared_services,
    vulnerable_agent_arm,
    zero_model_workflow_arm,
)
from vitrine_shop.catalogue import Catalogue, load_catalogue
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.benchmarks import (
    injection_definition,
    judged_quality_definition,
    recall_definition,
)
from vitrine_shop.personas import load_personas
from vitrine_shop.tools import ToolBox
from vitrine_shop.workflow import LOOP_BACK_EDGES, WORKFLOW_EDGES, WORKFLOW_EXECUTORS, ShopWorkflow

__all__ = ["EvidenceRuns", "ShopUnderTest", "probe_arm", "produce_evidence"]

SubjectFn = Callable[[Case], Awaitable[SubjectResponse]]
ArmFactory = Callable[..., Arm]


def probe_arm(factory: ArmFactory) -> Arm:
    """An agent arm whose tool output is poisoned only for the tool-output probe.

    The other probe carries its injection in the user message, so the same arm also shows
    that nothing is obeyed when the tool output is clean.
    """
    poisoned = factory(output_transform=poison_tool_output())
    clean = factory()

    async def subject(case: Case) -> SubjectResponse:
        chosen = poisoned if case.metadata.get("surface") == "tool-output" else clean
        return await chosen.subject(case)

    return Arm(clean.arm_id, subject, clean.metadata)


@dataclass(frozen=True)
class ShopUnderTest:
    """What the production checks observe: the shipped shop, or an isolated ablation."""

    catalogue: Catalogue
    workflow_edges: tuple[Any, ...]
    injection_target: Arm
    recall_target: Arm
    judged_arms: tuple[Arm, ...]
    falsify_claims: bool = False
    label: str = "shipped"

    @classmethod
    def shipped(cls) -> ShopUnderTest:
        return cls(
            catalogue=load_catalogue(),
            workflow_edges=tuple(WORKFLOW_EDGES),
            injection_target=probe_arm(scripted_agent_arm),
            recall_target=scripted_agent_arm(),
            judged_arms=(scripted_agent_arm(), zero_model_workflow_arm()),
        )

    def ablated(self) -> ShopUnderTest:
        """Every observed part broken at once, each in isolation from the shipped objects."""
        first = sorted(self.catalogue.skus)[0]
        return replace(
            self,
            catalogue=self.catalogue.without(first),
            workflow_edges=tuple(e for e in self.workflow_edges if e not in LOOP_BACK_EDGES),
            injection_target=probe_arm(vulnerable_agent_arm),
            recall_target=ablated_memory_agent_arm(),
            judged_arms=(scripted_agent_arm(), degraded_empty_answer_arm()),
            falsify_claims=True,
            label="ablated",
        )


@dataclass
class EvidenceRuns:
    """The evidence benchmarks' runs, kept so reports can show them as their own sections."""

    injection: list[RunResult] = field(default_factory=list)
    recall: list[RunResult] = field(default_factory=list)
    judged: list[RunResult] = field(default_factory=list)


def _counts(run: RunResult) -> dict[str, int]:
    total = len(run.rows)
    resisted = sum(1 for r in run.rows if r.observation.is_measured and r.observation.passed)
    compromised = sum(1 for r in run.rows if r.observation.failed)
    return {
        "total": total,
        "resisted": resisted,
        "compromised": compromised,
        "inconclusive": total - resisted - compromised,
    }


async def produce_evidence(
    shop: ShopUnderTest,
    *,
    store: RunStore,
    claims: list[BenchmarkSection],
    runs: EvidenceRuns,
) -> Mapping[str, Any]:
    """Run every observation producer and return the evidence bundle, keyed by check."""

    async def injection() -> dict[str, Any]:
        definition = injection_definition()
        calibration = probe_arm(vulnerable_agent_arm)
        target = await run_benchmark(definition, shop.injection_target, store=store)
        runs.injection.append(target)
        evidence: dict[str, Any] = {"safe": _counts(target), "target_arm": target.arm_id}
        if shop.injection_target.arm_id != calibration.arm_id:
            vulnerable = await run_benchmark(definition, calibration, store=store)
            runs.injection.append(vulnerable)
            evidence["vulnerable"] = _counts(vulnerable)
        return evidence

    async def recall() -> dict[str, Any]:
        definition = recall_definition()
        healthy = await run_benchmark(definition, shop.recall_target, store=store)
        runs.recall.append(healthy)
        evidence: dict[str, Any] = {"target_arm": healthy.arm_id}
        row = healthy.rows[0].observation
        if row.is_measured:
            evidence["healthy"] = {
                k: row.evidence[k] for k in ("expected", "found", "forbidden_found")
            }
        calibration = ablated_memory_agent_arm()
        if shop.recall_target.arm_id != calibration.arm_id:
            ablated = await run_benchmark(definition, calibration, store=store)
            runs.recall.append(ablated)
            obs = ablated.rows[0].observation
            if obs.is_measured:
                evidence["ablated"] = {k: obs.evidence[k] for k in ("expected", "found")}
        return evidence

    async def judged() -> dict[str, Any]:
        definition, _ = judged_quality_definition()
        arms: dict[str, Any] = {}
        for arm in shop.judged_arms:
            result = await run_benchmark(definition, arm, store=store)
            runs.judged.append(result)
            obs = result.rows[0].observation
            arms[arm.arm_id] = (
                {k: obs.evidence[k] for k in ("score", "judge_calls", "criteria", "k")}
                if obs.is_measured
                else {"score": None}
            )
        return {"arms": arms}

    async def workflow_shape() -> dict[str, Any]:
        response = await ShopWorkflow(None, shared_services()).answer(
            ShopRequest.single("nadia", "What should I add for my next hut trip?")
        )
        trace = list(response.trace.executors) if response.trace else []
        return {
            "executors": len(WORKFLOW_EXECUTORS),
            "edges": len(shop.workflow_edges),
            "loop_backs": sum(1 for e in shop.workflow_edges if e in LOOP_BACK_EDGES),
            "trace": trace,
            "visits_reviewer": "CoverageReviewer" in trace,
        }

    def catalogue_shape() -> dict[str, Any]:
        return {
            "products": len(shop.catalogue),
            "personas": len(load_personas()),
            "tools": len(ToolBox(shared_services(), customer_id=None).specs()),
        }

    def honesty() -> dict[str, Any]:
        checked = 0
        mismatches: list[str] = []
        for section in claims:
            claimed = section
            if shop.falsify_claims and section.comparisons:
                first = section.comparisons[0].model_copy(update={"p_value": 0.01})
                claimed = section.model_copy(
                    update={"comparisons": [first, *section.comparisons[1:]]}
                )
            n, bad = recompute_claims(claimed, Path(store.root))
            checked += n
            mismatches.extend(f"{section.identity}: {m}" for m in bad)
        return {"claims_checked": checked, "mismatches": mismatches}

    inj, rec, jud, wf = await asyncio.gather(injection(), recall(), judged(), workflow_shape())
    return {
        "catalogue-shape": catalogue_shape(),
        "workflow-shape": wf,
        "injection": inj,
        "recall": rec,
        "honesty": honesty(),
        "matched-quality": jud,
    }
