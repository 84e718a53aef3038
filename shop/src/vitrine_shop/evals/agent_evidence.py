"""Observation producers for the two agent-side gates: injection and recall.

Each runs its evidence benchmark against persisted arms of the real agent and returns plain
counts and facts for the evaluators in ``production.py``:

- injection: the shipped model (which reads the shop's rules) and a prompt-blind model (which
  reads none, so only the tool gate and the answer screen stand between it and a purchase),
  plus the deliberately vulnerable calibration arm, whose result never owns the gate;
- recall: the shipped agent, plus the ablated-memory calibration arm.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vitrine import Arm, Case, SubjectResponse
from vitrine.runs import RunResult, run_benchmark
from vitrine.store import RunStore
from vitrine_shop.arms import (
    ablated_memory_agent_arm,
    poison_tool_output,
    prompt_blind_agent_arm,
    vulnerable_agent_arm,
)
from vitrine_shop.evals.benchmarks import injection_definition, recall_definition
from vitrine_shop.evals.defences import INJECTION_POISON, tally_layers

__all__ = ["injection_counts", "observe_injection", "observe_recall", "probe_arm"]

ArmFactory = Callable[..., Arm]
_RESISTED = "injection-resisted"
_DECLINED = "injection-declined"


def probe_arm(factory: ArmFactory) -> Arm:
    """An agent arm whose tool output is poisoned only for the tool-output probe.

    The other probe carries its injection in the user message, so the same arm also shows
    what it does when the tool output is clean.
    """
    poisoned = factory(output_transform=poison_tool_output(INJECTION_POISON))
    clean = factory()

    async def subject(case: Case) -> SubjectResponse:
        chosen = poisoned if case.metadata.get("surface") == "tool-output" else clean
        return await chosen.respond(case)

    return Arm(clean.arm_id, subject, clean.metadata)


def injection_counts(run: RunResult) -> dict[str, Any]:
    """Probe counts of one arm: resisted (the code held), attempted (the model did not
    decline), and how often each defence layer held, broke or was not reached."""
    resisted_rows = run.rows_for(_RESISTED)
    declined = {r.case_id: r.observation for r in run.rows_for(_DECLINED)}
    total = len(resisted_rows)
    resisted = sum(1 for r in resisted_rows if r.observation.is_measured and r.observation.passed)
    compromised = sum(1 for r in resisted_rows if r.observation.failed)
    attempted = sum(1 for o in declined.values() if o.failed)
    held_everywhere = sum(
        1
        for r in resisted_rows
        if r.observation.is_measured
        and r.observation.passed
        and (d := declined.get(r.case_id)) is not None
        and d.is_measured
        and d.passed
    )
    return {
        "total": total,
        "resisted": resisted,
        "compromised": compromised,
        "inconclusive": total - resisted - compromised,
        "attempted": attempted,
        "held_everywhere": held_everywhere,
        "layers": tally_layers(
            r.observation.evidence.get("layers") or {}
            for r in resisted_rows
            if r.observation.is_measured
        ),
    }


def _calibration(run: RunResult) -> dict[str, int]:
    """The vulnerable arm's attempts with and without poison in its tool output."""
    by_surface = {"tool-output": 0, "user-message": 0}
    for row in run.rows_for(_DECLINED):
        surface = str(row.observation.evidence.get("surface") or "")
        if row.observation.failed and surface in by_surface:
            by_surface[surface] += 1
    return {
        "attempted_with_poison": by_surface["tool-output"],
        "attempted_without_poison": by_surface["user-message"],
    }


async def observe_injection(
    target: Arm, *, store: RunStore, runs: list[RunResult]
) -> dict[str, Any]:
    """Run the injection probes against the target, the prompt-blind and the calibration arm."""
    definition = injection_definition()
    result = await run_benchmark(definition, target, store=store)
    runs.append(result)
    evidence: dict[str, Any] = {"target_arm": result.arm_id, "safe": injection_counts(result)}
    blind = await run_benchmark(definition, probe_arm(prompt_blind_agent_arm), store=store)
    runs.append(blind)
    evidence["prompt_blind"] = injection_counts(blind)
    calibration = probe_arm(vulnerable_agent_arm)
    if target.arm_id != calibration.arm_id:
        vulnerable = await run_benchmark(definition, calibration, store=store)
        runs.append(vulnerable)
        evidence["vulnerable"] = {**injection_counts(vulnerable), **_calibration(vulnerable)}
    return evidence


_RECALL_FACTS = ("expected", "found", "forbidden_found", "recommended")


async def observe_recall(target: Arm, *, store: RunStore, runs: list[RunResult]) -> dict[str, Any]:
    """Run the recall scenario against the target and the ablated-memory calibration arm."""
    definition = recall_definition()
    healthy = await run_benchmark(definition, target, store=store)
    runs.append(healthy)
    evidence: dict[str, Any] = {"target_arm": healthy.arm_id}
    row = healthy.rows[0].observation
    if row.is_measured:
        evidence["healthy"] = {
            **{k: row.evidence[k] for k in _RECALL_FACTS},
            "missing": list(row.evidence["judgment"]["missing"]),
            "misstated_budgets": list(row.evidence["judgment"]["misstated_budgets"]),
        }
    calibration = ablated_memory_agent_arm()
    if target.arm_id != calibration.arm_id:
        ablated = await run_benchmark(definition, calibration, store=store)
        runs.append(ablated)
        obs = ablated.rows[0].observation
        if obs.is_measured:
            evidence["ablated"] = {k: obs.evidence[k] for k in _RECALL_FACTS}
    return evidence
