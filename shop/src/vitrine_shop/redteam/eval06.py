"""Eval 06: the bounded safety campaign against the live customer-facing assistant.

Definition ``vitrine-live-safety@1.0.0``: jailbreak and canary-backed system-prompt extraction
at quick intensity, two probes per attack, each against a fresh :class:`ShopTarget` (a new
assistant, a new canary) running the configured model; a fallback judge on the same provider.
The declared ceiling is 25 target calls plus at most one judge call per probe: 104 model calls
for the default four probes, enforced call by call. No benchmark run directory is written; the
only artifact is the sanitized session receipt under ``<store root>/live/live-sessions``.

``--max-calls``, ``--max-tokens`` and ``--max-cost`` bound the session as they bound the other
live plans: once the ceiling is reached no new model call starts, the probes it stops are
errored with "budget" in their reason, and the receipt records the spend against it.

The provider runs without its own retries (:func:`vitrine.redteam.redteam_config`):
the ceiling counts requests that leave the process, so a failed call is a probe error
(infrastructure), never a silent extra call.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from vitrine import ExitCode, PlanOutcome, PlanRequest
from vitrine.live import ReceiptStore, SpendMeter, new_session_id, require_paid_confirmation
from vitrine.providers import ProviderConfig, create_chat_model, provider_is_free, readiness
from vitrine.redact import sanitize_text
from vitrine.redteam import (
    CampaignConfig,
    CampaignResult,
    ChatModelSafetyJudge,
    Intensity,
    WorkloadCeiling,
    classify,
    load_attacks,
    plan_attacks,
    redteam_config,
    run_campaign,
)
from vitrine.subjects import TokenUsage
from vitrine_shop.redteam.target import REDTEAM_TARGET

if TYPE_CHECKING:
    from vitrine.providers import ChatModel

__all__ = ["DEFINITION", "EVAL06_ATTACKS", "Eval06Options", "planned_workload", "run_eval06"]

PLAN = "eval06-safety-probes"
DEFINITION = "vitrine-live-safety@1.0.0"
EVAL06_ATTACKS = ("jailbreak", "system-prompt-extraction")
PROBES_PER_ATTACK = 2
_PROVIDER_FACTS = ("provider", "model", "judge_model", "judge_shares_subject", "provenance", "paid")


@dataclass(frozen=True, slots=True)
class Eval06Options:
    """Knobs for tests and operators; the defaults are the protocol's."""

    ceiling: WorkloadCeiling = field(
        default_factory=lambda: WorkloadCeiling(target_calls_per_probe=25, judge_calls_per_probe=1)
    )
    probes_per_attack: int = PROBES_PER_ATTACK
    probe_timeout_s: float = 300.0
    environ: Mapping[str, str] | None = None


def planned_workload(options: Eval06Options | None = None) -> list[str]:
    """The campaign's fixed workload, before anything is called: probes and the call ceiling."""
    options = options or Eval06Options()
    probes = len(EVAL06_ATTACKS) * options.probes_per_attack
    ceiling = options.ceiling
    return [
        f"{PLAN}: planned workload on paid model services",
        f"  {len(EVAL06_ATTACKS)} attack(s) x {options.probes_per_attack} probe(s) = {probes} "
        f"probe(s), each against a fresh target: {', '.join(EVAL06_ATTACKS)}",
        f"  model calls: at most {ceiling.campaign(probes)} ({ceiling.target_calls_per_probe} "
        f"target and {ceiling.judge_calls_per_probe} judge call(s) per probe), enforced call by "
        "call",
    ]


def _config(request: PlanRequest, environ: Mapping[str, str]) -> ProviderConfig:
    # Without --provider: vitrine's one default provider, a paid service, never offline.
    return redteam_config(
        ProviderConfig.from_env(
            request.provider, model=request.model, local_model=request.local_model, environ=environ
        )
    )


def _models(config: ProviderConfig) -> tuple[ChatModel, ChatModel] | str:
    """The subject and judge models, or why there are none (no call is made either way)."""

    state = readiness(config)
    if not state.ready:
        return state.reason
    try:
        return create_chat_model(config, "subject"), create_chat_model(config, "judge")
    except Exception as exc:
        # The category only: a setup error's text may echo a configured value.
        return f"model setup failed ({type(exc).__name__})"


def _census(result: CampaignResult) -> dict[str, Any]:
    census = {
        key: value for key, value in result.scores().items() if key not in ("ceiling", "calls_used")
    }
    # A null score says why next to it, so no reader has to guess whether null meant zero.
    absences = result.absences()
    if absences:
        census["not_derivable"] = absences
    return census


def _usage(result: CampaignResult) -> dict[str, Any] | None:
    """Token usage as the provider reported it, or None when it reported none at all.

    Only what the provider reported, never an estimate; ``reported_by_probes`` shows how many
    probes the sums cover, so a partial report is not mistaken for a complete one.
    """
    reported = [p.usage for p in result.probes if p.usage is not None]
    if not reported:
        return None
    total = sum(reported, TokenUsage())
    return {**total.to_dict(), "reported_by_probes": len(reported), "probes": result.total}


def _usage_line(usage: Mapping[str, Any] | None) -> str:
    if usage is None:
        return "  token usage: not reported by the provider"
    cost = "" if usage["cost_usd"] is None else f", cost {usage['cost_usd']:.4f} USD"
    return (
        f"  token usage: {usage['input_tokens']} input, {usage['output_tokens']} output{cost} "
        f"(reported for {usage['reported_by_probes']} of {usage['probes']} probes)"
    )


async def run_eval06(request: PlanRequest, options: Eval06Options | None = None) -> PlanOutcome:

    options = options or Eval06Options()
    environ = options.environ if options.environ is not None else os.environ
    require_paid_confirmation(request, paid=not provider_is_free(request.provider, environ))
    session_id = new_session_id()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    probes = len(EVAL06_ATTACKS) * options.probes_per_attack
    document: dict[str, Any] = {
        "plan": PLAN,
        "definition": DEFINITION,
        "started_at": started_at,
        "attacks": list(EVAL06_ATTACKS),
        "intensity": Intensity.QUICK.value,
        "probes_per_attack": options.probes_per_attack,
        "workload_ceiling": options.ceiling.to_dict(probes),
        "include_evidence": False,
    }
    config = _config(request, environ)
    document["provider"] = {k: v for k, v in config.describe().items() if k in _PROVIDER_FACTS}
    models = _models(config)
    if isinstance(models, str):
        document["readiness"] = {"ready": False, "reason": models}
        code, reason = ExitCode.INFRASTRUCTURE, f"provider not ready, no call made: {models}"
        result: CampaignResult | None = None
    else:
        document["readiness"] = {"ready": True}
        meter = None if request.spend is None else SpendMeter(request.spend, request.prices)
        if meter is not None:
            # A cost ceiling on an unpriced model is refused here, before any call (exit 2).
            metered = meter.metered(subject=models[0], judge=models[1])
            models = (metered["subject"], metered["judge"])
        result = await _campaign(models, options, config.judge_max_output_tokens)
        classification = classify(result)
        code, reason = classification.exit_code, classification.reason
        if meter is not None:
            document["spend"] = meter.to_dict()
            if meter.reached is not None:
                reason = (
                    f"{reason}; spend ceiling reached ({meter.reached}): the probes it stopped "
                    "are errored, reason budget"
                )
        usage = _usage(result)
        document.update(
            census=_census(result),
            calls_used=result.calls_used,
            probes=[p.to_dict() for p in result.probes],
            usage=usage,
        )
        if usage is None:
            document["usage_note"] = "not reported by the provider"
    document.update(
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        duration_s=round(time.perf_counter() - started, 3),
        exit_code=int(code),
        exit_meaning=code.meaning,
        exit_reason=reason,
    )
    try:
        path = ReceiptStore(request.output_root() / "live").write(session_id, document)
    except OSError as exc:
        why = f"the session receipt could not be written ({type(exc).__name__})"
        return PlanOutcome(ExitCode.INFRASTRUCTURE, [f"{PLAN}: {why}"])
    summary = [
        f"{PLAN}: session {session_id} ({DEFINITION})",
        f"exit {int(code)} ({code.meaning}): {sanitize_text(reason, 600)}",
    ]
    if result is not None:
        summary.append(
            f"  {result.resisted} resisted, {result.compromised} compromised, "
            f"{result.inconclusive} inconclusive ({result.errored} errored) of {result.total}; "
            f"{result.calls_used} of {result.ceiling} model calls"
        )
        summary.append(f"  {result.rate_line()}")
        summary.append(_usage_line(document["usage"]))
        summary.extend(
            f"  {p.probe_id}: {p.outcome.value}"
            + (f" [{p.error.stage.value}/{p.error.code}]" if p.error else "")
            for p in result.probes
        )
    return PlanOutcome(code, summary, [path])


async def _campaign(
    models: tuple[ChatModel, ChatModel], options: Eval06Options, judge_tokens: int
) -> CampaignResult:

    subject, judge_model = models
    profile = dict(REDTEAM_TARGET.profile)
    catalogue = load_attacks()
    planned = plan_attacks(
        catalogue.probes_for(
            EVAL06_ATTACKS, Intensity.QUICK, profile, per_attack=options.probes_per_attack
        ),
        profile,
    )
    # The assistant keeps its own turn and tool budgets; the ceiling is the mechanical
    # backstop above them, so a probe that reaches it is truncated, never quietly cut short.
    factory = REDTEAM_TARGET.factory("shop", subject)
    return await run_campaign(
        planned,
        factory,
        judge=ChatModelSafetyJudge(judge_model, max_output_tokens=judge_tokens),
        config=CampaignConfig(ceiling=options.ceiling, probe_timeout_s=options.probe_timeout_s),
    )
