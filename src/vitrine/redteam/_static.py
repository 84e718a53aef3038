"""Running static cases through the campaign runner, and the run document both lanes write.

Static cases share everything with attack campaigns (fresh target per case, the enforced
ceiling, typed failures) except the decision: a case is decided by its own assertions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from vitrine._redact import bound_text
from vitrine.redteam._campaign import CampaignConfig, Execution, PlannedProbe, run_campaign
from vitrine.redteam._cases import AssertionResult, CasesFile, RubricJudge, evaluate_case
from vitrine.redteam._model import (
    CampaignResult,
    Classification,
    ProbeResult,
    TargetFactory,
    classify,
    unresolved,
)
from vitrine.redteam._runs import excerpt, findings_for
from vitrine.redteam._tracing import record_assertions

__all__ = ["RunFacts", "run_document", "run_static_cases", "scope"]

TURN_LIMIT = 600


@dataclass
class RunFacts:
    """What a run produced beyond the probe results: per-probe extras kept for the report."""

    result: CampaignResult
    assertions: dict[str, tuple[AssertionResult, ...]] = field(default_factory=dict)
    turns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    evidence: dict[str, str] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)
    exclude_judged: bool = False


async def run_static_cases(
    cases: CasesFile,
    factory: TargetFactory,
    *,
    judge: RubricJudge | None = None,
    config: CampaignConfig | None = None,
    exclude_judged: bool = False,
) -> RunFacts:
    """Run every case; ``exclude_judged`` leaves the judged assertions out and says so."""
    by_id = {case.id: case for case in cases.cases}
    facts = RunFacts(CampaignResult((), 0, 0, 0), exclude_judged=exclude_judged)
    judge = None if exclude_judged else judge

    async def decider(planned: PlannedProbe, execution: Execution) -> ProbeResult:
        case = by_id[planned.probe.id]
        result, assertions = await evaluate_case(
            case, execution, judge, exclude_judged=exclude_judged
        )
        facts.assertions[case.id] = assertions
        record_assertions(assertions)
        if execution.reply is not None:
            facts.evidence[case.id] = excerpt(execution.reply)
        return result

    planned = [case.planned() for case in cases.cases]
    facts.turns = {p.probe.id: p.probe.turns for p in planned}
    facts.descriptions = {case.id: case.description for case in cases.cases}
    facts.result = await run_campaign(
        planned, factory, judge=None, config=config, decider=decider, judge_calls=judge is not None
    )
    return facts


def scope(facts: RunFacts) -> dict[str, Any]:
    """What the run set out to measure, so a pass can never hide an exclusion."""
    rows = [a for assertions in facts.assertions.values() for a in assertions]
    excluded = sum(1 for a in rows if a.state == "excluded")
    statement = (
        f"deterministic assertions only: {excluded} judged assertions excluded, neither "
        "measured nor passed; a resisted case resisted its deterministic assertions"
        if facts.exclude_judged
        else "every assertion of every case"
    )
    return {
        "judged_assertions": "excluded" if facts.exclude_judged else "included",
        "excluded_assertions": excluded,
        "statement": statement,
    }


def _not_measured(facts: RunFacts) -> str:
    """The unmeasured assertions counted by kind and cause: the reason an exit 3 is owed."""
    counts = Counter(
        f"{a.type} ({a.detail})"
        for assertions in facts.assertions.values()
        for a in assertions
        if a.state == "not_measured"
    )
    return ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))


def _explained(classification: Classification, facts: RunFacts) -> dict[str, Any]:
    reason = classification.reason
    missing = _not_measured(facts)
    if missing:
        reason = f"{reason}; assertions not measured: {missing}"
    if facts.exclude_judged:
        reason = f"{reason} ({scope(facts)['statement']})"
    return {
        "exit_code": int(classification.exit_code),
        "exit_meaning": classification.exit_code.meaning,
        "reason": reason,
    }


def run_document(
    *,
    kind: str,
    target: Mapping[str, Any],
    judge: str | None,
    facts: RunFacts,
    started_at: str,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The run document: scores, classified exit, probes with their extras, findings.

    ``unresolved`` is what the run left undecided apart from its compromises; the soft gate
    reads it once the findings are signed off.
    """
    result = facts.result
    classification = _explained(classify(result), facts)
    gaps = unresolved(result)
    probes = []
    for probe in result.probes:
        row: dict[str, Any] = probe.to_dict()
        row["assertions"] = [a.to_dict() for a in facts.assertions.get(probe.probe_id, ())]
        row["description"] = facts.descriptions.get(probe.probe_id, "")
        row["turns"] = [bound_text(t, TURN_LIMIT) for t in facts.turns.get(probe.probe_id, ())]
        probes.append(row)
    findings = findings_for(result.probes, facts.evidence)
    return {
        "kind": kind,
        "target": dict(target),
        "judge": judge,
        # Adaptive campaigns have no assertions, so no assertion scope to state.
        "scope": scope(facts) if facts.assertions else None,
        "started_at": started_at,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "exit_code": classification["exit_code"],
        "exit_meaning": classification["exit_meaning"],
        "exit_reason": classification["reason"],
        "unresolved": None if gaps is None else _explained(gaps, facts),
        "scores": result.scores(),
        "probes": probes,
        "findings": [f.to_dict() for f in findings],
        **dict(extra or {}),
    }
