"""Observation producers for the seven production checks.

Each producer drives a real path of the shop (the loaded catalogue, personas and tool box,
recorded workflow runs, the agent under injection, the agent's memory, the judge, the sealed
runs behind the report's claims) and returns plain facts. The evaluators in ``production.py``
judge those facts. A ``ShopUnderTest`` is the shipped configuration or an isolated ablation of
it: ablations are copies, never edits.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vitrine import Arm, Case, SubjectResponse
from vitrine.reports import BenchmarkSection
from vitrine.runs import RunResult, run_benchmark
from vitrine.store import RunStore
from vitrine_shop.arms import (
    ablated_memory_agent_arm,
    degraded_empty_answer_arm,
    scripted_agent_arm,
    shared_services,
    vulnerable_agent_arm,
    zero_model_workflow_arm,
)
from vitrine_shop.catalogue import Catalogue, load_catalogue
from vitrine_shop.evals.agent_evidence import observe_injection, observe_recall, probe_arm
from vitrine_shop.evals.benchmarks import judged_quality_definition
from vitrine_shop.evals.data_variants import observe_variants
from vitrine_shop.evals.delivery_oracle import observe_delivery
from vitrine_shop.evals.desk_exploration import DESK_KEY
from vitrine_shop.evals.exploration import (
    CARELESS_KEY,
    CUT_SHORT_KEY,
    EXPLORATION_KEY,
    SESSION_KEY,
    STAGES_KEY,
    Plan,
    exploration_plan,
    observe_exploration,
    repriced,
)
from vitrine_shop.evals.latest_turn import observe_latest_turn
from vitrine_shop.evals.population import POPULATION_KEY
from vitrine_shop.evals.probe_process import start_probes
from vitrine_shop.evals.provider_faults import observe_provider_faults
from vitrine_shop.evals.session_isolation import observe_isolation
from vitrine_shop.evals.structural_evidence import (
    WorkflowFactory,
    observe_claims,
    observe_loaded_data,
    observe_workflow_runs,
)
from vitrine_shop.evals.tool_contract import observe_contract
from vitrine_shop.evals.tool_sweep import observe_tool_sweep
from vitrine_shop.operations import ShopServices
from vitrine_shop.workflow import ShopWorkflow

__all__ = ["EvidenceRuns", "ShopUnderTest", "probe_arm", "produce_evidence"]

SubjectFn = Callable[[Case], Awaitable[SubjectResponse]]
ArmFactory = Callable[..., Arm]


@dataclass(frozen=True)
class ShopUnderTest:
    """What the production checks observe: the shipped shop, or an isolated ablation."""

    catalogue: Catalogue
    workflow: WorkflowFactory
    injection_target: Arm
    recall_target: Arm
    judged_arms: tuple[Arm, ...]
    explored: Plan
    swept: Callable[[], ShopServices]
    falsify_claims: bool = False
    label: str = "shipped"

    @classmethod
    def shipped(cls) -> ShopUnderTest:
        return cls(
            catalogue=load_catalogue(),
            workflow=ShopWorkflow,
            injection_target=probe_arm(scripted_agent_arm),
            recall_target=scripted_agent_arm(),
            judged_arms=(scripted_agent_arm(), zero_model_workflow_arm()),
            explored=exploration_plan(),
            swept=shared_services,
        )

    def ablated(self) -> ShopUnderTest:
        """Every observed part broken at once, each in isolation from the shipped objects."""
        first = sorted(self.catalogue.skus)[0]
        return replace(
            self,
            catalogue=self.catalogue.without(first),
            # The producer itself is broken: a workflow whose reviewer can never loop back.
            workflow=functools.partial(ShopWorkflow, max_loopbacks=0),
            injection_target=probe_arm(vulnerable_agent_arm),
            recall_target=ablated_memory_agent_arm(),
            judged_arms=(scripted_agent_arm(), degraded_empty_answer_arm()),
            # A shop serving a stale price list: every price it states contradicts the data.
            explored=exploration_plan(_stale_prices),
            swept=_stale_prices,
            falsify_claims=True,
            label="ablated",
        )


@functools.cache
def _stale_prices() -> ShopServices:
    return repriced(shared_services())


@dataclass
class EvidenceRuns:
    """The evidence benchmarks' runs, kept so reports can show them as their own sections."""

    injection: list[RunResult] = field(default_factory=list)
    recall: list[RunResult] = field(default_factory=list)
    judged: list[RunResult] = field(default_factory=list)
    exploration: list[RunResult] = field(default_factory=list)
    sessions: list[RunResult] = field(default_factory=list)
    desk: list[RunResult] = field(default_factory=list)
    population: list[RunResult] = field(default_factory=list)
    careless: list[RunResult] = field(default_factory=list)
    stages: list[RunResult] = field(default_factory=list)
    cut_short: list[RunResult] = field(default_factory=list)


_PROBES: Mapping[str, Callable[[Any], Awaitable[dict[str, Any]]]] = {
    "sweep": observe_tool_sweep,
    "contract": observe_contract,
    "delivery": observe_delivery,
    "variants": observe_variants,
    "isolation": observe_isolation,
    "faults": observe_provider_faults,
    "latest_turn": observe_latest_turn,
}


def _falsified(section: BenchmarkSection) -> BenchmarkSection:
    """The ablation's dishonest report: the first comparison claims p = 0.01."""
    if not section.comparisons:
        return section
    first = section.comparisons[0].model_copy(update={"p_value": 0.01})
    return section.model_copy(update={"comparisons": [first, *section.comparisons[1:]]})


async def produce_evidence(
    shop: ShopUnderTest,
    *,
    store: RunStore,
    claims: list[BenchmarkSection],
    runs: EvidenceRuns,
) -> Mapping[str, Any]:
    """Run every observation producer and return the evidence bundle, keyed by check."""
    # Before anything else starts: the invariants probes run in a process of their own while
    # the benchmarks below run here (see probe_process for why first).
    probed = start_probes(_PROBES, shop.swept())

    async def injection() -> dict[str, Any]:
        return await observe_injection(shop.injection_target, store=store, runs=runs.injection)

    async def recall() -> dict[str, Any]:
        return await observe_recall(shop.recall_target, store=store, runs=runs.recall)

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
        return {"runs": await observe_workflow_runs(shop.workflow, shared_services())}

    def catalogue_shape() -> dict[str, Any]:
        return observe_loaded_data(shop.catalogue, shared_services())

    def honesty() -> dict[str, Any]:
        claimed = [_falsified(s) if shop.falsify_claims else s for s in claims]
        return observe_claims(claimed, Path(store.root))

    async def invariants() -> dict[str, Any]:
        kept = {
            EXPLORATION_KEY: runs.exploration,
            CARELESS_KEY: runs.careless,
            STAGES_KEY: runs.stages,
            CUT_SHORT_KEY: runs.cut_short,
            SESSION_KEY: runs.sessions,
            DESK_KEY: runs.desk,
            POPULATION_KEY: runs.population,
        }
        try:
            explored = await observe_exploration(shop.explored, store=store, runs=kept)
        except BaseException:
            with contextlib.suppress(Exception):
                await probed.facts()  # reap the child before the error goes on
            raise
        return {**explored, **await probed.facts()}

    inj, rec, jud, wf, inv = await asyncio.gather(
        injection(), recall(), judged(), workflow_shape(), invariants()
    )
    return {
        "catalogue-shape": catalogue_shape(),
        "workflow-shape": wf,
        "injection": inj,
        "recall": rec,
        "honesty": honesty(),
        "invariants": inv,
        "matched-quality": jud,
    }
