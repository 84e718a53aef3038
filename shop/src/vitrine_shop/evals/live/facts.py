"""Per-trial facts read back from sealed runs, through an explicit allow-list.

Everything a receipt says about a trial comes from :class:`~vitrine.runs.RunResult` (what the run
directory holds), so the receipt can be recomputed from the runs alone. Only named fields are
copied; names outside the shop's known vocabularies (tools, executors, edges, stages) become
``"other"``, so a model cannot write arbitrary text into the receipt through a tool name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vitrine import Case, Observation
from vitrine.checks import MeasurementState
from vitrine.redact import bound_text
from vitrine.runs import RunResult
from vitrine_shop.domain import SHOP_TOOL_NAMES
from vitrine_shop.evals.live.definition import QUALITY_KEY, REQUIRED_CHECKS
from vitrine_shop.workflow import WORKFLOW_EDGES, WORKFLOW_EXECUTORS
from vitrine_shop.workflow.stages import MODEL_STAGES

__all__ = ["OTHER", "TrialFacts", "personas_of", "trial_facts", "trial_receipt"]

OTHER = "other"
PREVIEW_LIMIT = 1000
_EDGE_LABELS = frozenset(e.label for e in WORKFLOW_EDGES)
_STAGE_FIELDS = (
    "attempts",
    "responses",
    "unusable",
    "provider_failures",
    "cancellations",
    "status",
    "last_usable",
    "last_unusable",
)
_STATUSES = frozenset({"measured", "recovered", "final_fallback", "unrecovered", "cancelled"})


def _allowed(name: Any, vocabulary: Iterable[str]) -> str:
    return name if isinstance(name, str) and name in vocabulary else OTHER


@dataclass(frozen=True, slots=True)
class TrialFacts:
    """One trial: an arm x repetition x scenario, with its required checks' outcome."""

    arm: str
    architecture: str
    scenario: str
    persona: str | None
    repetition: int
    observations: Mapping[str, Observation]

    @property
    def required(self) -> tuple[str, ...]:
        return REQUIRED_CHECKS[self.architecture]

    @property
    def missing(self) -> tuple[str, ...]:
        """Required checks that were not measured (not applicable counts as missing here)."""
        return tuple(k for k in self.required if not self.observations[k].is_measured)

    @property
    def measured(self) -> bool:
        return not self.missing

    @property
    def passed(self) -> bool | None:
        """All required checks measured and passed; None when the trial was not measured."""
        if not self.measured:
            return None
        return all(self.observations[k].passed for k in self.required)

    @property
    def whole_trial_success(self) -> bool | None:
        """The stochastic rule: every criterion met (not only the threshold) and the rest passed."""
        if not self.measured:
            return None
        quality = self.observations[QUALITY_KEY]
        met, total = quality.evidence.get("met"), quality.evidence.get("total")
        return bool(self.passed) and isinstance(met, int) and met == total


def trial_facts(run: RunResult, personas: Mapping[str, str | None]) -> list[TrialFacts]:
    architecture = _architecture(run)
    out = []
    for case_id in run.case_ids:
        observations = {
            info.key: run.observation(case_id, info.key)
            or Observation.not_measured("no observation was recorded")
            for info in run.checks
        }
        out.append(
            TrialFacts(
                run.arm_id,
                architecture,
                case_id,
                personas.get(case_id),
                run.repetition,
                observations,
            )
        )
    return out


def _architecture(run: RunResult) -> str:
    # The arm id names the architecture; an unknown arm would have no required checks.
    for architecture in REQUIRED_CHECKS:
        if architecture in run.arm_id:
            return architecture
    raise ValueError(f"arm {run.arm_id!r} is neither an agent nor a workflow arm")


def trial_receipt(run: RunResult, facts: TrialFacts, run_dir: str) -> dict[str, Any]:
    """The receipt entry of one trial, built field by field."""
    response: Mapping[str, Any] = run.responses.get(facts.scenario) or {}
    quality = facts.observations[QUALITY_KEY]
    evidence = quality.evidence
    return {
        "arm": facts.arm,
        "architecture": facts.architecture,
        "scenario": facts.scenario,
        "persona": facts.persona,
        "repetition": facts.repetition,
        "run_id": run.run_id,
        "run_dir": run_dir,
        "subject_error": run.subject_errors.get(facts.scenario),
        "answer_preview": _preview(response.get("answer_preview")),
        "answer_chars": _int(response.get("answer_chars")),
        "tools": _tools(response.get("tool_calls")),
        "workflow": _workflow(response),
        "attempt_census": _stages(response.get("stages")),
        "checks": {key: _check(obs) for key, obs in facts.observations.items()},
        "criteria": _verdicts(evidence.get("verdicts"), quality),
        "judge": {
            "calls": _int(evidence.get("judge_calls")) or 0,
            "input_tokens": _int(evidence.get("input_tokens")),
            "output_tokens": _int(evidence.get("output_tokens")),
            "summary": _str(evidence.get("summary")),
        },
        "usage": _usage(response.get("usage")),
        "trial": {
            "measured": facts.measured,
            "passed": facts.passed,
            "whole_trial_success": facts.whole_trial_success,
            "missing_checks": list(facts.missing),
        },
    }


def _preview(value: Any) -> str | None:
    return bound_text(value, PREVIEW_LIMIT) if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _tools(journal: Any) -> dict[str, Any] | None:
    if not isinstance(journal, list):
        return None
    names = [
        _allowed(call.get("name") if isinstance(call, Mapping) else None, SHOP_TOOL_NAMES)
        for call in journal
    ]
    statuses = Counter(
        _allowed(call.get("status"), ("ok", "error", "refused"))
        for call in journal
        if isinstance(call, Mapping)
    )
    return {"sequence": names, "counts": dict(Counter(names)), "statuses": dict(statuses)}


def _workflow(response: Mapping[str, Any]) -> dict[str, Any] | None:
    trace = response.get("trace")
    if not isinstance(trace, Mapping):
        return None
    structured = response.get("structured") or {}

    def stages(key: str) -> list[str]:
        raw = structured.get(key)
        return [_allowed(s, MODEL_STAGES) for s in raw] if isinstance(raw, list) else []

    return {
        "executors": [_allowed(e, WORKFLOW_EXECUTORS) for e in trace.get("executors") or ()],
        "route": [_allowed(r, _EDGE_LABELS) for r in trace.get("route") or ()],
        "fallback_stages": stages("fallback_stages"),
        "unrecovered_stages": stages("unrecovered_stages"),
        "partial": structured.get("partial") is True,
        "withheld": structured.get("withheld") is True,
        "abstained": structured.get("abstained") is True,
        "loopbacks": _int(structured.get("loopbacks")),
    }


def _stages(raw: Any) -> list[dict[str, Any]] | None:
    if not isinstance(raw, list):
        return None
    out = []
    for item in raw:
        if not isinstance(item, Mapping):
            continue
        entry: dict[str, Any] = {"stage": _allowed(item.get("stage"), MODEL_STAGES)}
        for key in _STAGE_FIELDS:
            value = item.get(key)
            entry[key] = _allowed(value, _STATUSES) if key == "status" else _int(value)
        out.append(entry)
    return out


def _check(obs: Observation) -> dict[str, Any]:
    return {
        "state": obs.state.value,
        "passed": obs.passed,
        "value": obs.value,
        "label": obs.label,
        "reason": obs.reason,
    }


def _verdicts(raw: Any, quality: Observation) -> list[dict[str, Any]]:
    if not isinstance(raw, list) or not raw:
        # Explicit, never an empty cell: say why there is no verdict to show.
        why = quality.reason or "the judge was not asked"
        return [{"criterion": None, "met": None, "explanation": f"not measured: {why}"}]
    out = []
    for item in raw:
        if isinstance(item, Mapping):
            met = item.get("met")
            out.append(
                {
                    "criterion": _str(item.get("criterion")),
                    "met": met if isinstance(met, bool) else None,
                    "explanation": _str(item.get("explanation"))
                    or (
                        "not measured: no explanation"
                        if quality.state is not MeasurementState.MEASURED
                        else "(the judge gave no explanation)"
                    ),
                }
            )
    return out


def _usage(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, Mapping):
        return None
    usage: dict[str, Any] = {
        "input_tokens": _int(raw.get("input_tokens")),
        "output_tokens": _int(raw.get("output_tokens")),
    }
    cost = raw.get("cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        usage["cost_usd"] = float(cost)  # only when the provider reported one
    return usage


def personas_of(cases: Sequence[Case]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for case in cases:
        persona = case.metadata.get("persona_id")
        out[case.id] = persona if isinstance(persona, str) else None
    return out
