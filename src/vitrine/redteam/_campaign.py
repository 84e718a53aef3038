"""The campaign runner: fresh target per probe, enforced call ceiling, typed failures.

Each probe gets its own target (built by the factory), its own :class:`CallLedger` and its own
time limit. Probes run one after another by default, because a red-team campaign against a paid
endpoint should be easy to reason about and stop; ``concurrency`` raises that deliberately.

The outcome of a probe is decided by the deterministic detectors first. Only when none of them
can decide, and only when a judge is configured, one judge call (charged to the same ledger)
may decide it. Without a judge an undecided probe is inconclusive, never resisted.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from vitrine.errors import InvalidArgumentError
from vitrine.providers._base import ChatModel, ProviderError
from vitrine.redteam._attacks import Attack
from vitrine.redteam._detectors import DetectorSpec, detect
from vitrine.redteam._judge import SafetyJudge
from vitrine.redteam._ledger import CallLedger, CeilingReached, CountingChatModel, WorkloadCeiling
from vitrine.redteam._model import (
    CampaignResult,
    FailureStage,
    ModelWrapper,
    Outcome,
    Probe,
    ProbeError,
    ProbeResult,
    Severity,
    Target,
    TargetFactory,
    TargetReply,
)
from vitrine.redteam._tracing import probe_span, record_probe

__all__ = [
    "CampaignConfig",
    "Execution",
    "PlannedProbe",
    "callable_target",
    "execute_probe",
    "plan_attacks",
    "probe_result",
    "run_campaign",
]

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class PlannedProbe:
    """A probe with everything needed to decide it: classification, detectors, judge goal."""

    probe: Probe
    owasp: str
    severity: Severity
    technique: str
    detectors: tuple[DetectorSpec, ...]
    judge_goal: str | None = None


@dataclass(frozen=True, slots=True)
class CampaignConfig:
    ceiling: WorkloadCeiling = field(default_factory=WorkloadCeiling)
    probe_timeout_s: float = 180.0
    concurrency: int = 1

    def __post_init__(self) -> None:
        if self.probe_timeout_s <= 0:
            raise InvalidArgumentError("a probe needs a positive time limit")
        if self.concurrency < 1:
            raise InvalidArgumentError("concurrency must be at least 1")


@dataclass(frozen=True, slots=True)
class Execution:
    """What running one probe against its target produced (the reply stays in memory)."""

    reply: TargetReply | None
    error: ProbeError | None
    truncated: bool
    ledger: CallLedger


class _CallableTarget:
    def __init__(self, fn: Callable[[Probe], Awaitable[str | TargetReply]]) -> None:
        self._fn = fn

    async def respond(self, probe: Probe) -> TargetReply:
        answer = await self._fn(probe)
        return answer if isinstance(answer, TargetReply) else TargetReply(text=answer)


def callable_target(fn: Callable[[Probe], Awaitable[str | TargetReply]]) -> TargetFactory:
    """A target factory for a plain async callable: ``await fn(probe)`` gives text or a reply.

    Such a target uses no :class:`ChatModel` the campaign can see, so its calls are not on the
    ledger; only its reply is judged. A callable that returns bare text keeps no journal and
    knows no canary, so tool and canary detectors stay silent for it.
    """

    def build(wrap: ModelWrapper) -> Target:
        del wrap  # nothing to wrap: the callable talks to whatever it talks to
        return _CallableTarget(fn)

    return build


def plan_attacks(
    pairs: Sequence[tuple[Attack, Probe]], profile: dict[str, object]
) -> list[PlannedProbe]:
    """Each (attack, probe) pair as a planned probe, with the attack's OWASP class and severity."""
    return [
        PlannedProbe(
            probe,
            attack.owasp,
            attack.severity,
            attack.technique,
            attack.detector_specs(profile),
            attack.judge_goal,
        )
        for attack, probe in pairs
    ]


async def _build(factory: TargetFactory, ledger: CallLedger) -> Target:
    def wrap(model: ChatModel) -> ChatModel:
        return CountingChatModel(model, ledger, "target")

    built = factory(wrap)
    if inspect.isawaitable(built):
        built = await built
    return built


async def execute_probe(
    probe: Probe, factory: TargetFactory, ledger: CallLedger, timeout_s: float
) -> Execution:
    """Build a fresh target, send the probe, and type whatever went wrong."""
    try:
        target = await _build(factory, ledger)
        reply = await asyncio.wait_for(target.respond(probe), timeout_s)
    except CeilingReached as exc:
        error = ProbeError(FailureStage.CEILING, "ceiling-reached", str(exc))
        return Execution(None, error, True, ledger)
    except TimeoutError:
        error = ProbeError(FailureStage.TIMEOUT, "probe-timeout", f"no reply within {timeout_s}s")
        return Execution(None, error, False, ledger)
    except ProviderError as exc:
        # Only the typed failure class crosses the boundary; the provider's words do not.
        error = ProbeError(FailureStage.TARGET, f"provider-{exc.failure.value}", "")
        return Execution(None, error, False, ledger)
    except Exception as exc:
        error = ProbeError(FailureStage.TARGET, "target-exception", type(exc).__name__)
        return Execution(None, error, False, ledger)
    return Execution(reply, None, False, ledger)


def probe_result(
    planned: PlannedProbe,
    execution: Execution,
    outcome: Outcome,
    *,
    detector: str | None = None,
    diagnostic: str = "",
    error: ProbeError | None = None,
    fidelity: str = "deterministic",
) -> ProbeResult:
    """The allow-listed result of one executed probe; an error always makes it inconclusive."""
    error = error or execution.error
    ledger = execution.ledger
    return ProbeResult(
        probe_id=planned.probe.id,
        attack_id=planned.probe.attack_id,
        outcome=Outcome.INCONCLUSIVE if error else outcome,
        owasp=planned.owasp,
        severity=planned.severity,
        technique=planned.technique,
        surface=planned.probe.surface,
        detector=detector,
        diagnostic=diagnostic,
        error=error,
        truncated=execution.truncated
        or (error is not None and error.stage is FailureStage.CEILING),
        target_calls=ledger.used.get("target", 0),
        judge_calls=ledger.used.get("judge", 0),
        usage=ledger.usage,
        fidelity=fidelity if not error else "none",
    )


async def decide(
    planned: PlannedProbe, execution: Execution, judge: SafetyJudge | None
) -> ProbeResult:
    """Detectors first; then at most one judge call; otherwise inconclusive."""
    reply = execution.reply
    if reply is None:
        return probe_result(
            planned, execution, Outcome.INCONCLUSIVE, diagnostic="no reply to judge"
        )
    found = detect(planned.detectors, reply)
    if found.outcome is not None:
        return probe_result(
            planned, execution, found.outcome, detector=found.detector, diagnostic=found.diagnostic
        )
    if judge is None or planned.judge_goal is None:
        return probe_result(
            planned,
            execution,
            Outcome.INCONCLUSIVE,
            diagnostic="detectors silent and no judge configured",
            fidelity="none",
        )
    ledger = execution.ledger
    try:
        ledger.charge("judge")
        verdict = await judge.verdict(planned.judge_goal, planned.probe.turns[-1], reply.text)
    except CeilingReached as exc:
        error = ProbeError(FailureStage.CEILING, "ceiling-reached", str(exc))
        return probe_result(planned, execution, Outcome.INCONCLUSIVE, error=error)
    except ProviderError as exc:
        error = ProbeError(FailureStage.JUDGE, f"provider-{exc.failure.value}", "")
        return probe_result(planned, execution, Outcome.INCONCLUSIVE, error=error)
    except Exception as exc:
        error = ProbeError(FailureStage.JUDGE, "judge-exception", type(exc).__name__)
        return probe_result(planned, execution, Outcome.INCONCLUSIVE, error=error)
    ledger.record_usage(verdict.usage)
    if verdict.outcome is None:
        return probe_result(
            planned,
            execution,
            Outcome.INCONCLUSIVE,
            detector="judge",
            diagnostic="the judge's verdict was unusable",
            fidelity="judge",
        )
    return probe_result(
        planned,
        execution,
        verdict.outcome,
        detector="judge",
        diagnostic=f"decided by the fallback judge ({verdict.outcome.value})",
        fidelity="judge",
    )


def _skipped(planned: PlannedProbe, ceiling: int) -> ProbeResult:
    return ProbeResult(
        probe_id=planned.probe.id,
        attack_id=planned.probe.attack_id,
        outcome=Outcome.INCONCLUSIVE,
        owasp=planned.owasp,
        severity=planned.severity,
        technique=planned.technique,
        surface=planned.probe.surface,
        error=ProbeError(
            FailureStage.SKIPPED,
            "campaign-ceiling-spent",
            f"the campaign ceiling of {ceiling} model calls was spent before this probe",
        ),
        fidelity="none",
    )


Decider = Callable[[PlannedProbe, Execution], Awaitable[ProbeResult]]


async def run_campaign(
    planned: Sequence[PlannedProbe],
    factory: TargetFactory,
    *,
    judge: SafetyJudge | None = None,
    config: CampaignConfig | None = None,
    progress: Progress | None = None,
    decider: Decider | None = None,
    judge_calls: bool | None = None,
) -> CampaignResult:
    """Run every planned probe against a fresh target and return the campaign's facts.

    ``decider`` replaces the detector-then-judge decision (static cases decide by their own
    assertions); execution, ceiling and failure typing stay the same. ``judge_calls`` says
    whether the ledger allows judge calls when the decider, not ``judge``, makes them.
    """
    config = config or CampaignConfig()
    ids = [p.probe.id for p in planned]
    if len(set(ids)) != len(ids):
        raise InvalidArgumentError(
            "probe ids repeat: every probe must be identifiable in the results"
        )
    limits = {
        "target": config.ceiling.target_calls_per_probe,
        "judge": config.ceiling.judge_calls_per_probe
        if (judge is not None if judge_calls is None else judge_calls)
        else 0,
    }
    campaign_limit = config.ceiling.campaign(len(planned))
    spent = 0
    lock = asyncio.Lock()
    semaphore = asyncio.Semaphore(config.concurrency)

    async def decide_default(item: PlannedProbe, execution: Execution) -> ProbeResult:
        return await decide(item, execution, judge)

    chosen = decider or decide_default

    async def attempt(index: int, item: PlannedProbe) -> ProbeResult:
        nonlocal spent
        async with lock:
            if spent >= campaign_limit:
                return _skipped(item, campaign_limit)
            ledger = CallLedger(limits, campaign_limit=campaign_limit, spent_elsewhere=spent)
        if progress is not None:
            progress(f"probe {index + 1}/{len(planned)}: {item.probe.id}")
        execution = await execute_probe(item.probe, factory, ledger, config.probe_timeout_s)
        result = await chosen(item, execution)
        async with lock:
            spent += ledger.total
        return result

    async def one(index: int, item: PlannedProbe) -> ProbeResult:
        async with semaphore:
            with probe_span(item) as span:
                result = await attempt(index, item)
                record_probe(span, result)
                return result

    results = await asyncio.gather(*(one(i, p) for i, p in enumerate(planned)))
    return CampaignResult(tuple(results), len(planned), campaign_limit, spent)
