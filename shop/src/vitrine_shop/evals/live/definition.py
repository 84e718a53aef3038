"""The live use-case benchmark: selected scenarios x four admitted checks, with a bound identity.

Identity: ``vitrine-live-use-cases@1.1.0`` plus a content hash over the selected cases and the
bindings that change what a score means (rubric hash, quality threshold, judge model, judge
token ceiling). Two sessions can only be compared when all of those agree.

The four checks, each with a not-derivable chance floor (open-ended language and
deterministic invariants have no random-draw population):

- ``quality``: the LLM judge over the scenario's four criteria; a measured pass needs a met
  fraction at or above the threshold (at 1.00, three of four is a measured *fail* whose value
  is still 0.75). Not measured when the judge gives no usable result, and when a workflow
  model stage ended unrecovered, cancelled or in its fallback: the customer got a bounded
  partial answer, but not one the model produced, so its quality was not observed;
- ``screened-deliverable``: the offline suite's predicate, reused as it is;
- ``agent-tool-reconciliation``: the tool journal against the scenario's expectation (agent
  trials only; not applicable to the workflow);
- ``workflow-route-reconciliation``: executors and route against the graph (workflow trials
  only; not applicable to the agent).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vitrine import (
    Authority,
    BenchmarkDefinition,
    Case,
    ChanceFloor,
    Observation,
    SubjectResponse,
    UsageError,
    admit,
)
from vitrine.checks import AdmittedCheck, canonical_json
from vitrine.judge import Criterion, CriterionVerdict, Judge, JudgeResult, rubric_hash
from vitrine.subjects import ImpossibleCensusError, ToolCallStatus, validate_stage_set
from vitrine_shop.arms import case_for_scenario
from vitrine_shop.domain import Scenario, ToolExpectation
from vitrine_shop.evals.benchmarks import canonical_definition
from vitrine_shop.evals.judging import criteria_for
from vitrine_shop.scenarios import load_scenarios
from vitrine_shop.tools import GATED_ACTIONS
from vitrine_shop.workflow import WORKFLOW_EDGES, WORKFLOW_EXECUTORS
from vitrine_shop.workflow.stages import COVERAGE_REVIEWER, MODEL_STAGES

__all__ = [
    "AGENT_TRACE_KEY",
    "DEFAULT_QUALITY_THRESHOLD",
    "LIVE_KEY",
    "LIVE_VERSION",
    "QUALITY_KEY",
    "REQUIRED_CHECKS",
    "SCREEN_KEY",
    "THRESHOLD_ENV",
    "WORKFLOW_TRACE_KEY",
    "LiveBindings",
    "judge_input",
    "live_definition",
    "resolve_threshold",
]

LIVE_KEY = "vitrine-live-use-cases"
LIVE_VERSION = "1.1.0"
THRESHOLD_ENV = "VITRINE_QUALITY_THRESHOLD"
DEFAULT_QUALITY_THRESHOLD = 1.0

QUALITY_KEY = "quality"
SCREEN_KEY = "screened-deliverable"
AGENT_TRACE_KEY = "agent-tool-reconciliation"
WORKFLOW_TRACE_KEY = "workflow-route-reconciliation"

# The three checks a trial of each architecture must measure and pass; the fourth is the
# other architecture's trace check, which is not applicable to it.
REQUIRED_CHECKS: Mapping[str, tuple[str, ...]] = {
    "agent": (QUALITY_KEY, SCREEN_KEY, AGENT_TRACE_KEY),
    "workflow": (QUALITY_KEY, SCREEN_KEY, WORKFLOW_TRACE_KEY),
}

_NOT_MEASURED_VERDICT = "not measured: {why}"


def resolve_threshold(
    value: float | str | None = None, environ: Mapping[str, str] = os.environ
) -> float:
    """The quality pass bar: ``value``, else ``$VITRINE_QUALITY_THRESHOLD``, else 1.00.

    It must lie in (0, 1]: zero would pass an answer that met nothing, and the repetition
    collapse compares 0/1 indicators against it.
    """
    raw: float | str | None = value if value is not None else environ.get(THRESHOLD_ENV)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return DEFAULT_QUALITY_THRESHOLD
    try:
        level = float(raw)
    except ValueError:
        raise UsageError(
            f"quality threshold {raw!r} ({THRESHOLD_ENV}) is not a number; give a fraction "
            "such as 1.0 or 0.75"
        ) from None
    if not 0.0 < level <= 1.0:
        raise UsageError(
            f"quality threshold {level!r} ({THRESHOLD_ENV}) must lie in (0, 1]: it is the "
            "fraction of the four criteria an answer must meet"
        )
    return level


@dataclass(frozen=True, slots=True)
class LiveBindings:
    """What the definition binds besides its cases."""

    quality_threshold: float
    judge_model: str
    judge_max_output_tokens: int


def judge_input(scenario: Scenario) -> str:
    """What the judge reads besides the answer: the request, the expectation and the facts."""
    facts = "\n".join(f"- {fact}" for fact in scenario.ground_truth_facts)
    return (
        f"Customer request: {scenario.query}\n\n"
        f"Expected behaviour: {scenario.expected_behaviour}\n\n"
        f"Ground-truth facts:\n{facts}"
    )


def _verdicts_not_measured(criteria: Sequence[Criterion], why: str) -> list[dict[str, Any]]:
    """Explicit per-criterion rows for an unmeasured quality observation, never empty cells."""
    text = _NOT_MEASURED_VERDICT.format(why=why)
    return [CriterionVerdict(c.id, None, text).to_dict() for c in criteria]


@dataclass(frozen=True, slots=True)
class QualityCheck:
    """The LLM-judged quality check; at most one judge call per trial it observes."""

    judge: Judge
    threshold: float
    scenarios: Mapping[str, Scenario]
    key: str = QUALITY_KEY
    version: str = "1.1.0"

    async def evaluate(self, case: Case, response: SubjectResponse) -> Observation:
        scenario = self.scenarios[str(case.metadata["scenario_id"])]
        criteria = criteria_for(scenario)
        if response.answer is None:
            return Observation.not_applicable("the subject returned no answer object")
        impossible = _impossible_census(response)
        if impossible is not None:
            # The census is the subject's own account of its model stages. One that cannot be
            # true is a defect of the subject, seen in full: a measured failure, decided
            # without a judge call, not an absence a rerun could fill.
            return Observation.measured(
                0.0,
                False,
                evidence={
                    "judge_calls": 0,
                    "stages": [s.to_dict() for s in response.stages or ()],
                    "verdicts": _verdicts_not_measured(criteria, impossible),
                },
                label=impossible,
            )
        blocked = _degraded_stages(response)
        if blocked is not None:
            why, stages = blocked
            # No judge call: the answer is not the model's, so judging it would spend money
            # on an observation that cannot count.
            return Observation.not_measured(
                why,
                evidence={
                    "judge_calls": 0,
                    "stages": stages,
                    "verdicts": _verdicts_not_measured(criteria, why),
                },
            )
        if not response.answer.strip():
            return Observation.measured(
                0.0,
                False,
                evidence={
                    "judge_calls": 0,
                    "met": 0,
                    "total": len(criteria),
                    "threshold": self.threshold,
                    "verdicts": [
                        CriterionVerdict(c.id, False, "the answer is empty").to_dict()
                        for c in criteria
                    ],
                },
                label="empty answer",
            )
        result = await self.judge.evaluate(judge_input(scenario), response.answer, criteria)
        return self._observe(result, criteria)

    def _observe(self, result: JudgeResult, criteria: Sequence[Criterion]) -> Observation:
        base: dict[str, Any] = {
            "judge": self.judge.judge_id,
            "judge_calls": result.judge_calls,
            "input_tokens": result.input_tokens,
            "output_tokens": result.output_tokens,
            "threshold": self.threshold,
            "summary": result.summary,
        }
        if not result.usable or result.score is None:
            why = f"the judge gave no usable result ({result.summary})"
            return Observation.not_measured(
                why, evidence={**base, "verdicts": _verdicts_not_measured(criteria, why)}
            )
        total = len(result.verdicts)
        met = result.criteria_met
        fraction = met / total
        return Observation.measured(
            fraction,
            # A three-of-four answer scores 0.75 and, at the default bar of 1.00, fails.
            fraction >= self.threshold,
            evidence={
                **base,
                "score": result.score,
                "met": met,
                "total": total,
                "verdicts": [v.to_dict() for v in result.verdicts],
            },
            label=f"{met}/{total} criteria met",
        )


def _impossible_census(response: SubjectResponse) -> str | None:
    """Why the workflow's stage censuses cannot be true (a stage twice, one missing), or None."""
    if response.stages is None:
        return None
    try:
        validate_stage_set(response.stages, MODEL_STAGES)
    except ImpossibleCensusError as exc:
        return f"the workflow reported an impossible attempt census ({exc})"
    return None


def _degraded_stages(response: SubjectResponse) -> tuple[str, list[dict[str, Any]]] | None:
    """Why the quality observation must fail closed, with the census, or None when it may count."""
    if response.stages is None:
        return None
    census = [s.to_dict() for s in response.stages]
    degraded = [s for s in response.stages if not s.status.keeps_quality_measurable]
    if not degraded:
        return None
    listed = ", ".join(f"{s.stage} {s.status.value}" for s in degraded)
    return f"a model stage did not produce the answer: {listed}", census


@dataclass(frozen=True, slots=True)
class AgentToolReconciliation:
    """The agent's journal against the scenario's tool-use or abstention expectation."""

    key: str = AGENT_TRACE_KEY
    version: str = "1.0.0"

    async def evaluate(self, case: Case, response: SubjectResponse) -> Observation:
        if response.trace is not None or response.tool_calls is None:
            return Observation.not_applicable("not an agent trial: there is no tool journal")
        expectation = ToolExpectation.model_validate(case.metadata["tool_expectation"])
        journal = response.tool_calls
        names = [call.name for call in journal]
        problems: list[str] = []
        if expectation.max_tool_calls is not None and len(journal) > expectation.max_tool_calls:
            problems.append(
                f"{len(journal)} tool calls where at most {expectation.max_tool_calls} are allowed"
            )
        gated = sorted({n for n in names if n in GATED_ACTIONS})
        if gated:
            problems.append(f"attempted gated actions: {', '.join(gated)}")
        # Only calls that ran count toward the chain: a call refused or rejected for its
        # arguments did not fetch what the chain step exists to fetch.
        completed = [c.name for c in journal if c.status is ToolCallStatus.OK]
        missing = _missing_in_order(expectation.required_tool_chain, completed)
        if missing:
            problems.append(f"required chain incomplete from {missing}")
        presented = {
            str(s) for s in (response.structured.get("presented_skus") or ()) if isinstance(s, str)
        }
        answered = {str(s) for s in (response.structured.get("skus") or ()) if isinstance(s, str)}
        forbidden = sorted((presented | answered) & set(expectation.forbidden_presented_skus))
        if forbidden:
            problems.append(f"presented forbidden SKUs {', '.join(forbidden)}")
        passed = not problems
        return Observation.measured(
            1.0 if passed else 0.0,
            passed,
            evidence={
                "expectation": expectation.kind,
                "tool_calls": len(journal),
                "completed_chain": completed,
                "problems": problems,
            },
            label="reconciled" if passed else "; ".join(problems),
        )


def _missing_in_order(chain: Sequence[str], completed: Sequence[str]) -> str | None:
    """The first chain step not found, in order, in the completed calls (None when all are)."""
    position = 0
    for step in chain:
        try:
            position = completed.index(step, position) + 1
        except ValueError:
            return step
    return None


_EDGES = {(e.source, e.target, e.label) for e in WORKFLOW_EDGES}


@dataclass(frozen=True, slots=True)
class WorkflowRouteReconciliation:
    """The workflow's executors and route against the graph."""

    key: str = WORKFLOW_TRACE_KEY
    version: str = "1.0.0"

    async def evaluate(self, case: Case, response: SubjectResponse) -> Observation:
        del case  # the graph is the same for every case
        trace = response.trace
        if trace is None:
            return Observation.not_applicable("not a workflow trial: there is no workflow trace")
        executors, route = list(trace.executors), list(trace.route)
        problems: list[str] = []
        unknown = sorted({e for e in executors if e not in WORKFLOW_EXECUTORS})
        if unknown:
            problems.append(f"unknown executors {', '.join(unknown)}")
        missing = _missing_in_order(WORKFLOW_EXECUTORS, executors)
        if missing:
            problems.append(f"executors out of order or missing from {missing}")
        if COVERAGE_REVIEWER not in executors:
            problems.append("CoverageReviewer was skipped")
        if executors[-1:] != [WORKFLOW_EXECUTORS[-1]]:
            problems.append("the run did not end at the Presenter")
        if len(route) != max(0, len(executors) - 1):
            problems.append(f"{len(route)} route labels for {len(executors)} executors")
        else:
            for index, label in enumerate(route):
                step = (executors[index], executors[index + 1], label)
                if step not in _EDGES:
                    problems.append(f"no edge {label!r} from {step[0]} to {step[1]}")
        passed = not problems
        return Observation.measured(
            1.0 if passed else 0.0,
            passed,
            evidence={"executors": executors, "route": route, "problems": problems},
            label="reconciled" if passed else "; ".join(problems),
        )


@functools.cache
def _screen_check() -> AdmittedCheck:
    # The offline suite's admitted predicate: one definition of "deliverable". Offline it only
    # describes the arms; here a trial fails without it, so here it is a gate.
    for admitted in canonical_definition().checks:
        if admitted.key == SCREEN_KEY:
            return dataclasses.replace(admitted, authority=Authority.GATE)
    raise LookupError(f"the canonical benchmark has no {SCREEN_KEY!r} check")


def _scenario_rubric_hash(scenarios: Sequence[Scenario]) -> str:
    per_case = {s.id: rubric_hash(criteria_for(s)) for s in scenarios}
    return "sha256:" + hashlib.sha256(canonical_json(per_case).encode()).hexdigest()


def live_definition(
    scenario_ids: Sequence[str], judge: Judge, bindings: LiveBindings
) -> BenchmarkDefinition:
    """The definition for the selected scenarios, bound to the judge and the threshold."""
    registry = load_scenarios()
    unknown = [s for s in scenario_ids if s not in registry]
    if unknown:
        raise UsageError(f"unknown live scenarios: {', '.join(unknown)}")
    scenarios = [registry[s] for s in scenario_ids]
    no_population = "no random-draw population"
    checks = (
        admit(
            QualityCheck(judge, bindings.quality_threshold, {s.id: s for s in scenarios}),
            ChanceFloor.not_derivable(
                f"an LLM judge over authored criteria for open-ended answers: {no_population}"
            ),
        ),
        _screen_check(),
        admit(
            AgentToolReconciliation(),
            ChanceFloor.not_derivable(
                f"a deterministic reconciliation of the journal with the expectation: "
                f"{no_population}"
            ),
        ),
        admit(
            WorkflowRouteReconciliation(),
            ChanceFloor.not_derivable(
                f"a deterministic reconciliation of the route with the graph: {no_population}"
            ),
        ),
    )
    return BenchmarkDefinition(
        LIVE_KEY,
        LIVE_VERSION,
        [case_for_scenario(s) for s in scenarios],
        checks,
        bindings={
            "rubric_hash": _scenario_rubric_hash(scenarios),
            "quality_threshold": bindings.quality_threshold,
            "judge_model": bindings.judge_model,
            "judge_max_output_tokens": bindings.judge_max_output_tokens,
        },
        description="Live use-case contracts: four judged criteria, screen and trace checks",
    )
