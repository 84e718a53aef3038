"""One live session: guard, preview, readiness, runs, scoring, verdict and receipt.

Order matters and is the contract: the paid guard and the workload preview come before
anything is called; readiness is checked before the first subject call, and an unready
provider ends the session with an infrastructure receipt (exit 4) and no substitute result;
after readiness (and so after any confirmation) a free OpenAI-compatible server is probed
once for the structured output it accepts, and the judge must pass admission on the
calibration set before its verdicts count (a refused judge leaves quality not measured, with
the figures in the receipt); each arm x repetition is one standard runner call into one run
directory; the receipt is built from the sealed runs and written last, whatever happened
before it, and an interrupted session's receipt lists the runs that were sealed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vitrine import ExitCode, PlanOutcome, PlanRequest, UsageError
from vitrine.judge import (
    DEFAULT_JUDGE_MAX_OUTPUT_TOKENS,
    Judge,
    JudgeAdmission,
    LLMJudge,
    RefusedJudge,
    admit_judge,
)
from vitrine.live import (
    NodeStatus,
    PowerStatement,
    ReceiptStore,
    SpendCeiling,
    SpendMeter,
    SuiteNode,
    TerminalRule,
    Timeline,
    WorkloadPreview,
    new_session_id,
    require_paid_confirmation,
)
from vitrine.providers import (
    ChatModel,
    OpenAICompatibleModel,
    ProviderConfig,
    ProviderError,
    create_chat_model,
    probe_structured_output,
    readiness,
)
from vitrine.redact import sanitize_text
from vitrine.reports import benchmark_section
from vitrine.runs import (
    Arm,
    BenchmarkDefinition,
    BenchmarkScore,
    RepCollapse,
    RunResult,
    run_benchmark,
)
from vitrine.stats import (
    AllPassDesign,
    Curtailment,
    PairedDesign,
    SequentialComparison,
    SequentialSignTest,
    WilsonDesign,
    benjamini_hochberg,
    compare_sequentially_with,
    holm,
    paired_difference,
    pooled_against_reference,
    session_curtailment,
    wilson_curtailment,
    wilson_interval,
)
from vitrine.store import RunStore
from vitrine_shop.evals.live.calibration import admission_calls, examples_for
from vitrine_shop.evals.live.definition import (
    QUALITY_KEY,
    LiveBindings,
    judge_input,
    live_definition,
    resolve_threshold,
)
from vitrine_shop.evals.live.display import TrialDisplay
from vitrine_shop.evals.live.facts import TrialFacts, personas_of, trial_facts, trial_receipt
from vitrine_shop.evals.live.subjects import (
    AGENT_ARM,
    WORKFLOW_ARM,
    AgentBudget,
    live_agent_arm,
    live_workflow_arm,
)
from vitrine_shop.evals.suite import SUITE
from vitrine_shop.scenarios import load_scenarios

__all__ = [
    "SEQUENTIAL_CHECK",
    "SEQUENTIAL_WIN_RATE",
    "SUBJECT_MAX_OUTPUT_TOKENS",
    "WHOLE_TRIAL_FLOOR",
    "LiveModels",
    "LiveOptions",
    "LivePlanSpec",
    "planned_workload",
    "run_live_plan",
]

SUBJECT_MAX_OUTPUT_TOKENS = 4000
WHOLE_TRIAL_FLOOR = 0.50
ADMISSION_ENV = "VITRINE_JUDGE_ADMISSION"
LIVE_DIR = "live"
_ARCH_ARMS = {"agent": AGENT_ARM, "workflow": WORKFLOW_ARM}
# The subject's provider configuration and the judge's, None when the judge shares it.
_Configs = tuple["ProviderConfig", "ProviderConfig | None"]

# The check --sequential follows. The live definition has no whole-trial check: a trial's
# success is the conjunction of its architecture's required checks, and those differ by arm.
# Of the four checks, the two trace reconciliations each apply to one architecture only, so
# they never form a pair; of the two that both arms measure, the screened deliverable is a
# gate both architectures must pass, while quality (the judge's criteria for the scenario)
# is the outcome the use case is about. So the comparison's primary check is quality.
SEQUENTIAL_CHECK = QUALITY_KEY
# The design win rate of the sequential test. A live comparison has a handful of scenarios
# (the shop's suite has four), and on so few cases only a (near) unanimous run of discordant
# pairs can reach any bound at alpha 0.05: nothing can be rejected before the sixth
# discordant case (two-sided, 2 / 2**5 > 0.05). A high design win rate puts the test's power
# on that alternative: at 0.9 a unanimous challenger is rejected at its sixth case for every
# case limit from 6 to 12, where 0.75 or 0.8 postpone it to the seventh from nine cases on.
# 0.9 is also the win rate the preview's power statement assumes (PairedDesign).
SEQUENTIAL_WIN_RATE = 0.9
_SEQUENTIAL_CHOICE = (
    "quality: the live definition has no whole-trial check (a trial's success is the "
    "conjunction of its architecture's required checks); the trace checks apply to one "
    "architecture each and never pair, and of the two checks both arms measure, quality is "
    "the use case's outcome and the screened deliverable a gate both must pass"
)


@dataclass(frozen=True, slots=True)
class LivePlanSpec:
    """Which architectures a plan runs, and which statistics decide it."""

    name: str
    architectures: tuple[str, ...]
    stochastic: bool = False
    compare: bool = False

    @property
    def arm_ids(self) -> tuple[str, ...]:
        return tuple(_ARCH_ARMS[a] for a in self.architectures)


@dataclass(frozen=True, slots=True)
class LiveModels:
    """The subject and judge models of a ready provider, and what may be said about them."""

    subject: ChatModel
    judge: ChatModel
    description: Mapping[str, Any]
    readiness: Mapping[str, Any]
    paid: bool


@dataclass(frozen=True, slots=True)
class LiveOptions:
    quality_threshold: float | None = None  # None: $VITRINE_QUALITY_THRESHOLD, else 1.00
    judge_max_output_tokens: int = DEFAULT_JUDGE_MAX_OUTPUT_TOKENS
    subject_max_output_tokens: int = SUBJECT_MAX_OUTPUT_TOKENS
    concurrency: int | None = None  # None: 1 on a local model, 4 on a remote one
    trial_timeout_s: float | None = None
    check_timeout_s: float | None = None
    agent_budget: AgentBudget | None = None
    environ: Mapping[str, str] | None = None
    models: LiveModels | None = None  # injected models skip provider configuration
    # None: on, unless $VITRINE_JUDGE_ADMISSION is "skip" (verdicts are then unadmitted).
    judge_admission: bool | None = None
    # Stochastic plans stop repeating once no remaining outcome can change any decision.
    curtail: bool = True
    # Benjamini-Hochberg adjusted p-values beside the Holm ones, for the comparisons.
    fdr: bool = False
    # A comparing plan runs scenario by scenario and stops when its sequential test stops.
    sequential: bool = False


@dataclass
class _Session:
    spec: LivePlanSpec
    request: PlanRequest
    session_id: str
    root: Path
    started_at: str
    started: float
    threshold: float
    preview: WorkloadPreview
    timeline: Timeline
    document: dict[str, Any] = field(default_factory=dict)
    runs: list[RunResult] = field(default_factory=list)
    meter: SpendMeter | None = None


async def run_live_plan(
    spec: LivePlanSpec, request: PlanRequest, options: LiveOptions | None = None
) -> PlanOutcome:
    options = options or LiveOptions()
    if options.sequential and not spec.compare:
        raise UsageError(
            f"{spec.name} does not accept --sequential: the sequential test stops a paired "
            "comparison of the agent and the workflow, and only a plan that compares them "
            f"runs one ({spec.name} runs the {' and '.join(spec.architectures)} alone)"
        )
    environ = options.environ if options.environ is not None else os.environ
    # Reading the configuration calls nothing; it says whether the provider is free.
    configs = None if options.models is not None else _read_configs(request, environ)
    paid = options.models.paid if options.models is not None else _paid(configs)
    # Defence in depth: the command line refuses an unconfirmed paid run, and so does the
    # plan itself, before anything is called.
    require_paid_confirmation(request, paid=paid)
    threshold = resolve_threshold(options.quality_threshold, environ)
    scenarios = request.scenarios
    if not scenarios:
        raise UsageError(f"{spec.name} needs at least one scenario")
    preview = _workload(spec, scenarios, request.repetitions, _ceilings(configs, options), paid)
    sink = _sink(request)
    repetitions = range(1, request.repetitions + 1)
    nodes = [
        SuiteNode("session", "terminal", "live session"),
        SuiteNode("readiness", "gate", "provider readiness"),
        SuiteNode("capabilities", "gate", "structured-output probe"),
        SuiteNode("admission", "gate", "judge admission"),
        *(
            (
                SuiteNode(
                    _run_node(arm, rep, scenario),
                    "predicate",
                    f"{arm} repetition {rep}, {scenario}",
                )
                for scenario in scenarios
                for arm in spec.arm_ids
                for rep in repetitions
            )
            if options.sequential
            else (
                SuiteNode(_run_node(arm, rep), "predicate", f"{arm} repetition {rep}")
                for arm in spec.arm_ids
                for rep in repetitions
            )
        ),
        SuiteNode("scoring", "persistence", "scoring"),
        SuiteNode("persisting", "persistence", "session receipt"),
    ]
    session = _Session(
        spec,
        request,
        new_session_id(),
        request.output_root() / LIVE_DIR,
        _now(),
        time.perf_counter(),
        threshold,
        preview,
        Timeline(nodes, sink),
    )
    session.document = {
        "plan": spec.name,
        "quality_threshold": threshold,
        "workload": preview.to_dict(),
        "scenarios": list(scenarios),
        "repetitions": request.repetitions,
    }
    if request.spend is not None:
        session.meter = SpendMeter(request.spend, request.prices)
    if request.console:
        for line in preview.lines():
            sys.stdout.write(line + "\n")
        if request.spend is not None:
            sys.stdout.write(f"  spend ceiling: {_ceiling_text(request.spend)}\n")
        sys.stdout.write(
            f"  judge admission: at most {admission_calls(scenarios)} "
            "calibration judge call(s) before the first trial\n"
        )
        if options.sequential:
            sys.stdout.write(f"  {_sequential_preview(len(scenarios))}\n")
        sys.stdout.flush()
    session.timeline.start("session")
    try:
        return await _execute(session, options, configs, sink)
    except asyncio.CancelledError:
        sealed = ", ".join(r.run_id for r in session.runs) or "none"
        session.document["sealed_runs"] = [_sealed(session, run) for run in session.runs]
        _persist(
            session,
            ExitCode.INFRASTRUCTURE,
            f"cancelled: the session is incomplete (sealed runs: {sealed})",
            runs=session.runs,
        )
        raise
    except UsageError:
        raise
    except Exception as exc:
        # The category only: the message of an unexpected error may carry provider text.
        return _persist(
            session,
            ExitCode.INFRASTRUCTURE,
            f"the session failed unexpectedly ({type(exc).__name__}); it is incomplete",
        )
    finally:
        session.timeline.close("the session ended before this step")


async def _execute(
    session: _Session,
    options: LiveOptions,
    configs: _Configs | None,
    sink: Callable[[object], None] | None,
) -> PlanOutcome:
    timeline = session.timeline
    timeline.start("readiness")
    models = options.models
    config = None if configs is None else configs[0]
    if models is None:
        if configs is None:
            raise RuntimeError("neither models nor a provider configuration were given")
        models, problem = _models(*configs)
        if models is None:
            timeline.end("readiness", NodeStatus.FAILED, problem["reason"])
            session.document["readiness"] = problem
            return _persist(
                session,
                ExitCode.INFRASTRUCTURE,
                f"provider not ready: {problem['reason']}; no subject or judge call was made",
            )
    if models.paid and not session.request.confirm_paid:
        raise UsageError(f"{session.spec.name} resolved to a paid provider without confirmation")
    timeline.end("readiness", detail="ready")
    session.document["readiness"] = dict(models.readiness)
    session.document["provider"] = _provider_facts(models.description)
    session.document["judge_relation"] = _judge_relation(models.description)
    if session.meter is not None:
        models = _metered(models, session.meter)

    unprobed = await _settle_structured_output(session, models, config)
    if unprobed is not None:
        return _persist(session, ExitCode.INFRASTRUCTURE, unprobed)
    judge_ceiling = session.preview.judge_max_output_tokens
    judge = await _admitted_judge(
        session, LLMJudge(models.judge, max_output_tokens=judge_ceiling), options
    )
    definition = live_definition(
        session.request.scenarios,
        judge,
        LiveBindings(session.threshold, models.judge.model_id, judge_ceiling),
    )
    session.document["definition"] = {
        "identity": definition.identity,
        "content_hash": definition.content_hash,
        "cases": [c.id for c in definition.cases],
        "checks": [c.identity() for c in definition.checks],
        "bindings": dict(definition.bindings),
    }
    local = models.subject.provenance.value == "local"
    store = RunStore(session.root)
    arms = {
        AGENT_ARM: live_agent_arm(models.subject, budget=options.agent_budget),
        WORKFLOW_ARM: live_workflow_arm(models.subject),
    }
    runs = session.runs
    personas = personas_of(definition.cases)
    planned = session.request.repetitions

    async def run_arm(
        target: BenchmarkDefinition, arm: Arm, repetition: int, node: str
    ) -> RunResult:
        timeline.start(node)
        run = await run_benchmark(
            target,
            arm,
            repetition=repetition,
            store=store,
            on_event=sink,
            concurrency=options.concurrency or (1 if local else 4),
            trial_timeout_s=options.trial_timeout_s or (1800.0 if local else 600.0),
            check_timeout_s=options.check_timeout_s or (900.0 if local else 300.0),
        )
        runs.append(run)
        timeline.end(node, detail=f"{run.verdict.value}: {run.census.describe()}")
        return run

    sequential: SequentialComparison | None = None
    if options.sequential:
        sequential = await _run_sequentially(session, definition, arms, run_arm)
    else:
        for arm_id in session.spec.arm_ids:
            for repetition in range(1, planned + 1):
                fixed = (
                    _curtailment([r for r in runs if r.arm_id == arm_id], personas, planned)
                    if session.spec.stochastic and options.curtail
                    else None
                )
                if fixed is not None:
                    _record_curtailment(session, arm_id, repetition - 1, fixed)
                    for skipped in range(repetition, planned + 1):
                        _pass_over(
                            timeline, _run_node(arm_id, skipped), "curtailed: decision fixed"
                        )
                    break
                await run_arm(definition, arms[arm_id], repetition, _run_node(arm_id, repetition))

    timeline.start("scoring")
    # A sequential session's runs are of one-case definitions: each case is scored alone.
    groups = _by_case(runs) if sequential is not None else [list(runs)]
    sections = [
        benchmark_section(
            group, role="live use cases", store_root=session.root, pass_at=session.threshold
        )
        for group in groups
    ]
    run_dirs = {ref.run_id: ref.run_dir for section in sections for ref in section.runs}
    trials = [(run, facts) for run in runs for facts in trial_facts(run, personas)]
    session.document["trials"] = [
        trial_receipt(run, facts, run_dirs[run.run_id]) for run, facts in trials
    ]
    session.document["runs"] = [r.model_dump() for section in sections for r in section.runs]
    session.document["check_facts"] = [
        {"case_id": section.cases[0], **c.model_dump()}
        if sequential is not None
        else c.model_dump()
        for section in sections
        for c in section.checks
    ]
    if session.spec.compare:
        session.document["comparisons"] = _comparisons(
            runs,
            session.threshold,
            fdr=options.fdr,
            pooled_over=definition if sequential is not None else None,
        )
    facts_only = [facts for _, facts in trials]
    whole = _whole_trial(facts_only, planned) if session.spec.stochastic else None
    if whole is not None:
        session.document["whole_trial"] = whole
    session.document["usage"] = _usage_totals(session.document["trials"])
    not_run = (
        [
            f"{arm}/{scenario}"
            for scenario in sequential.not_run
            for arm in session.spec.arm_ids
            for _ in range(planned)
        ]
        if sequential is not None
        else []
    )
    code, reason = _verdict(session.spec.name, facts_only, whole, not_run=not_run)
    if sequential is not None and sequential.not_run:
        cases = len(definition.cases)
        reason = f"{reason}; {_sequential_stop_reason(sequential, cases, code)}"
    curtailed = sum(row.get("curtailed", 0) for row in whole or ())
    if curtailed:
        reason = (
            f"{reason}; {curtailed} planned trial(s) curtailed, not run: no outcome of them "
            "could change the decision"
        )
    admission = session.document.get("judge_admission") or {}
    if admission.get("admitted") is False:
        reason = f"{reason}; quality not measured because the judge was {admission['reason']}"
    timeline.end("scoring", detail=f"exit {int(code)}")
    return _persist(session, code, reason, runs=runs)


def _ceiling_text(ceiling: SpendCeiling) -> str:
    parts = [
        f"{ceiling.max_calls:,} call(s)" if ceiling.max_calls is not None else "",
        f"{ceiling.max_tokens:,} reported token(s)" if ceiling.max_tokens is not None else "",
        f"${ceiling.max_cost:g}" if ceiling.max_cost is not None else "",
    ]
    return (
        ", ".join(p for p in parts if p)
        + " for the whole session; once reached no new call or trial starts"
    )


def _metered(models: LiveModels, meter: SpendMeter) -> LiveModels:
    """The same models with every request counted against the session's ceiling."""
    metered = meter.metered(subject=models.subject, judge=models.judge)
    return dataclasses.replace(models, subject=metered["subject"], judge=metered["judge"])


def planned_workload(
    spec: LivePlanSpec,
    scenarios: Sequence[str],
    repetitions: int,
    environ: Mapping[str, str] | None = None,
) -> list[str]:
    """The workload preview the plan prints before its first call, for the default provider,
    computed the same way and calling nothing: what the selector shows before it asks."""
    configs = _read_configs(PlanRequest(plan=spec.name), os.environ if environ is None else environ)
    ceilings = _ceilings(configs, LiveOptions())
    preview = _workload(spec, scenarios, repetitions, ceilings, _paid(configs))
    return preview.lines()


def _workload(
    spec: LivePlanSpec,
    scenarios: Sequence[str],
    repetitions: int,
    ceilings: tuple[int, int],
    paid: bool,
) -> WorkloadPreview:
    return WorkloadPreview(
        spec.name,
        scenarios,
        spec.arm_ids,
        repetitions,
        subject_max_output_tokens=ceilings[0],
        judge_max_output_tokens=ceilings[1],
        paid=paid,
        power=_design(spec, len(scenarios), repetitions),
    )


def _ceilings(configs: _Configs | None, options: LiveOptions) -> tuple[int, int]:
    """The subject's and the judge's output-token ceilings per request."""
    if configs is None:
        return options.subject_max_output_tokens, options.judge_max_output_tokens
    subject, judge = configs
    return subject.subject_max_output_tokens, (judge or subject).judge_max_output_tokens


def _design(spec: LivePlanSpec, scenarios: int, repetitions: int) -> PowerStatement:
    """What the plan's decision rule can detect, stated in the preview before any call."""
    if spec.compare:
        # The comparison's observation unit is the case (scenario), repetitions collapsed.
        return PairedDesign(scenarios)
    if spec.stochastic:
        return WilsonDesign(repetitions, scenarios, floor=WHOLE_TRIAL_FLOOR)
    return AllPassDesign(scenarios * len(spec.architectures) * repetitions)


def _sealed(session: _Session, run: RunResult) -> dict[str, Any]:
    """A run sealed before the session was interrupted: its id and relative directory."""
    where = None
    if run.run_dir:
        try:
            where = Path(run.run_dir).resolve().relative_to(session.root.resolve()).as_posix()
        except ValueError:
            where = None  # outside the session root: not a path a receipt may hold
    return {"run_id": run.run_id, "arm": run.arm_id, "run_dir": where}


def _paid(configs: _Configs | None) -> bool:
    return configs is None or any(c.paid for c in configs if c is not None)


def _pass_over(timeline: Timeline, node: str, why: str) -> None:
    # Started and ended, not merely skipped: every step a session reaches has both events.
    timeline.start(node)
    timeline.end(node, NodeStatus.SKIPPED, why)


async def _settle_structured_output(
    session: _Session, models: LiveModels, config: ProviderConfig | None
) -> str | None:
    """Probe a free OpenAI-compatible server once for the structured output it accepts.

    Only when the configuration asks for it (the default for a free endpoint); the mode found
    is set on the subject and, when it shares the endpoint, on the judge model too. Returns
    why the session cannot go on when the server could not be asked at all, else None.
    """

    subject = models.subject
    if (
        config is None
        or config.structured_output != "probe"
        or not isinstance(subject, OpenAICompatibleModel)
    ):
        _pass_over(session.timeline, "capabilities", "no probe: the mode is configured")
        return None
    session.timeline.start("capabilities")
    try:
        probe = await probe_structured_output(subject)
    except ProviderError as exc:
        # The category only; the probe's own error says nothing about a request shape.
        why = f"the structured-output probe could not reach the model ({exc.failure.value})"
        session.timeline.end("capabilities", NodeStatus.FAILED, why)
        session.document["structured_output"] = {"mode": None, "failure": exc.failure.value}
        return f"{why}; no subject or judge call was made"
    if isinstance(models.judge, OpenAICompatibleModel):
        models.judge.structured_output = probe.mode
    session.document["structured_output"] = probe.to_dict()
    session.timeline.end("capabilities", detail=f"structured output: {probe.mode}")
    return None


async def _admitted_judge(session: _Session, judge: LLMJudge, options: LiveOptions) -> Judge:
    """The judge whose verdicts may count: ``judge`` if it passes admission, else a refusal."""
    environ = options.environ if options.environ is not None else os.environ
    enabled = options.judge_admission
    if enabled is None:
        enabled = (environ.get(ADMISSION_ENV) or "").strip().lower() != "skip"
    if not enabled:
        session.document["judge_admission"] = {
            "admitted": None,
            "reason": f"admission skipped ({ADMISSION_ENV}=skip): the verdicts are unadmitted",
        }
        _pass_over(session.timeline, "admission", session.document["judge_admission"]["reason"])
        return judge

    registry = load_scenarios()
    examples = [
        example
        for scenario_id in session.request.scenarios
        for example in examples_for(registry[scenario_id], judge_input(registry[scenario_id]))
    ]
    session.timeline.start("admission")
    admission: JudgeAdmission = await admit_judge(judge, examples)
    session.document["judge_admission"] = admission.to_dict()
    session.timeline.end(
        "admission",
        NodeStatus.COMPLETED if admission.admitted else NodeStatus.FAILED,
        admission.reason,
    )
    if session.request.console:
        sys.stdout.write(f"judge admission: {admission.reason}\n")
        sys.stdout.flush()
    return judge if admission.admitted else RefusedJudge(admission)


def _read_configs(request: PlanRequest, environ: Mapping[str, str]) -> _Configs:
    """The subject's configuration and, when the judge is configured apart, the judge's."""

    subject = _read_config(request, environ)
    if request.judge_provider is None and request.judge_model is None:
        return subject, None
    provider = request.judge_provider or subject.provider
    name = request.judge_model
    if provider != "openai":
        # The free declaration is about OPENAI_BASE_URL; it says nothing about another service.
        environ = {k: v for k, v in environ.items() if k != "VITRINE_PROVIDER_COST"}
    judge = ProviderConfig.from_env(
        provider,
        model=name if provider != "local" else None,
        local_model=name if provider == "local" else None,
        environ=environ,
    )
    if name is not None and provider != "local":
        judge = dataclasses.replace(judge, judge_model=name)
    return subject, judge


def _read_config(request: PlanRequest, environ: Mapping[str, str]) -> ProviderConfig:
    """The provider configuration; reading it calls nothing and never needs the network.

    Without ``--provider`` it is vitrine's one default (``vitrine.providers.default_provider``),
    the same for every command: a choice between two paid services, never paid or offline.
    """
    return ProviderConfig.from_env(
        request.provider, model=request.model, local_model=request.local_model, environ=environ
    )


def _models(
    config: ProviderConfig, judge_config: ProviderConfig | None = None
) -> tuple[LiveModels | None, dict[str, Any]]:
    """Readiness (no network call), then the subject and judge models; None with why if unready."""

    ready = readiness(config)
    judge_ready = readiness(judge_config) if judge_config is not None else ready
    paid = ready.paid or judge_ready.paid
    facts: dict[str, Any] = {
        "ready": ready.ready and judge_ready.ready,
        "reason": ready.reason
        if judge_config is None
        else f"subject: {ready.reason}; judge: {judge_ready.reason}",
        "paid": paid,
        "provenance": ready.provenance.value,
        "missing": [*ready.missing, *(() if judge_config is None else judge_ready.missing)],
    }
    if not facts["ready"]:
        return None, facts
    try:
        subject = create_chat_model(config, role="subject")
        judge = create_chat_model(judge_config or config, role="judge")
    except Exception as exc:
        # The category only: a setup error's text may echo a configured value.
        return None, {
            **facts,
            "ready": False,
            "reason": f"model setup failed ({type(exc).__name__})",
        }
    description = dict(config.describe())
    if judge_config is not None:
        judged = judge_config.describe()
        description.update(
            judge_provider=judge_config.provider,
            judge_model=judged["judge_model"],
            judge_shares_subject=False,
            judge_paid=judge_config.paid,
        )
    return LiveModels(subject, judge, description, facts, paid), facts


_PROVIDER_KEYS = ("provider", "model", "subject_model", "judge_model", "provenance")


def _provider_facts(description: Mapping[str, Any]) -> dict[str, Any]:
    # Allow-listed: a description may grow fields (an endpoint, say) that a receipt must not hold.
    out: dict[str, Any] = {}
    for key in (
        *_PROVIDER_KEYS,
        "judge_provider",
        "judge_shares_subject",
        "paid",
        "judge_paid",
        "model_sha256",
        "structured_output",
        "stream",
        "context_tokens",
        "max_retries",
        "timeout_s",
    ):
        value = description.get(key)
        if isinstance(value, str | bool | int | float):
            out[key] = value
    return out


def _judge_relation(description: Mapping[str, Any]) -> str:
    shares = description.get("judge_shares_subject")
    if shares is True:
        return "the judge shares the subject model (no separate judge model is configured)"
    if shares is False:
        return "the judge uses a separately configured model"
    return "unknown"


def _comparisons(
    runs: Sequence[RunResult],
    threshold: float,
    *,
    fdr: bool = False,
    pooled_over: BenchmarkDefinition | None = None,
) -> list[dict[str, Any]]:
    """One row per check; ``pooled_over``: the runs are one-case runs of that definition
    (a sequential session), each case compared alone and the cases pooled."""
    keep = (
        "check",
        "reference_arm",
        "challenger_arm",
        "collapse",
        "pass_at",
        "cases",
        "total_repetitions",
        "mean_repetitions_per_case",
        "wins",
        "losses",
        "ties",
        "excluded_pairs",
        "exclusion_reasons",
        "effective_n",
        "p_value",
        "min_attainable_p",
        "mean_delta",
        "census",
        "underpowered_by_construction",
        "undecidable",
    )
    out = []
    comparisons = (
        BenchmarkScore.of(runs).against_reference(AGENT_ARM, RepCollapse.ALL, threshold)
        if pooled_over is None
        else pooled_against_reference(pooled_over, runs, AGENT_ARM, RepCollapse.ALL, threshold)
    )
    for comparison in comparisons:
        data = comparison.to_dict()
        row = {key: data[key] for key in keep}
        # RepCollapse.ALL makes every cell 0 or 1: the pairs form a 2x2 table.
        cells = Counter((p.reference_value > 0, p.challenger_value > 0) for p in comparison.pairs)
        effect = paired_difference(
            cells[True, True], cells[True, False], cells[False, True], cells[False, False]
        )
        row["effect"] = None if effect is None else effect.to_dict()
        out.append(row)
    # Reported together, so adjusted together: Holm always, Benjamini-Hochberg on request.
    raw = [row["p_value"] for row in out]
    for row, p_holm in zip(out, holm(raw), strict=True):
        row["p_holm"] = p_holm
    if fdr:
        for row, p_bh in zip(out, benjamini_hochberg(raw), strict=True):
            row["p_bh"] = p_bh
    return out


def _curtailment(
    runs: Sequence[RunResult], personas: Mapping[str, str | None], planned: int
) -> dict[str, Curtailment] | None:
    """Per scenario, the decision the remaining repetitions can no longer change; None unless
    every scenario's is fixed (or while any trial so far was not measured)."""
    facts = [f for run in runs for f in trial_facts(run, personas)]
    if not facts or not all(f.measured for f in facts):
        return None
    tallies: dict[str, tuple[int, int]] = {}
    for trial in facts:
        s, f = tallies.get(trial.scenario, (0, 0))
        tallies[trial.scenario] = (s + 1, f) if trial.whole_trial_success else (s, f + 1)
    return session_curtailment(tallies, planned, WHOLE_TRIAL_FLOOR)


def _record_curtailment(
    session: _Session, arm: str, after: int, fixed: Mapping[str, Curtailment]
) -> None:
    planned = session.request.repetitions
    session.document.setdefault("curtailment", []).append(
        {
            "arm": arm,
            "rule": "exact curtailment of the Wilson rule: stop when no remaining outcome "
            "can change any scenario's decision",
            "planned_repetitions": planned,
            "stopped_after": after,
            "curtailed_repetitions": planned - after,
            "scenarios": {scenario: c.to_dict() for scenario, c in fixed.items()},
        }
    )
    if session.request.console:
        sys.stdout.write(
            f"{arm}: stopped after {after} of {planned} repetition(s); every scenario's "
            "decision is fixed, the rest are curtailed\n"
        )
        sys.stdout.flush()


def _run_node(arm: str, repetition: int, scenario: str | None = None) -> str:
    """A run's timeline node; a sequential session runs each scenario apart."""
    return f"run:{arm}:{repetition}" if scenario is None else f"run:{arm}:{repetition}:{scenario}"


def _sequential_design(cases: int) -> SequentialSignTest:
    # Truncated at the scenario count, the most cases there are, so it spends exactly alpha
    # over them. No futility bound: a futility stop would leave scenarios' use-case contracts
    # unmeasured without the comparison having shown anything.
    return SequentialSignTest.truncated(SEQUENTIAL_WIN_RATE, max_cases=cases)


def _earliest_rejection(design: SequentialSignTest) -> int | None:
    """The first case at which a unanimous run of discordant pairs reaches the bound."""
    limit = design.max_cases or 0
    return next((k for k in range(1, limit + 1) if design.rejects(design.log_e_value(k, 0))), None)


def _sequential_preview(cases: int) -> str:
    design = _sequential_design(cases)
    earliest = _earliest_rejection(design)
    reach = (
        f"it cannot reject in {cases} case(s), so every case runs"
        if earliest is None
        else f"it can stop no earlier than case {earliest}"
    )
    return (
        f"sequential: {SEQUENTIAL_CHECK} compared scenario by scenario (design win rate "
        f"{SEQUENTIAL_WIN_RATE:g}, at most {cases} case(s), reject at e-value "
        f"{design.threshold:.3g}); {reach}"
    )


async def _run_sequentially(
    session: _Session,
    definition: BenchmarkDefinition,
    arms: Mapping[str, Arm],
    run_arm: Callable[[BenchmarkDefinition, Arm, int, str], Awaitable[RunResult]],
) -> SequentialComparison:
    """Scenario by scenario, every repetition of the agent then of the workflow on that
    scenario alone, until the sequential test stops; the scenarios after it are not run."""
    cases = len(definition.cases)
    design = _sequential_design(cases)

    async def one_case(one: BenchmarkDefinition, arm: Arm, repetition: int) -> RunResult:
        node = _run_node(arm.arm_id, repetition, one.cases[0].id)
        return await run_arm(one, arm, repetition, node)

    comparison = await compare_sequentially_with(
        definition,
        arms[AGENT_ARM],
        arms[WORKFLOW_ARM],
        SEQUENTIAL_CHECK,
        design,
        run_arm=one_case,
        repetitions=session.request.repetitions,
        collapse=RepCollapse.ALL,
        pass_at=session.threshold,
    )
    ran = cases - len(comparison.not_run)
    for scenario in comparison.not_run:
        for arm_id in session.spec.arm_ids:
            for repetition in range(1, session.request.repetitions + 1):
                _pass_over(
                    session.timeline,
                    _run_node(arm_id, repetition, scenario),
                    f"not run: the sequential comparison stopped after case {ran}",
                )
    result = comparison.result
    if comparison.not_run:
        where = (
            f"stopped after {ran} of {cases} case(s), at {comparison.stopping_case}: "
            f"{result.reason}; {len(comparison.not_run)} scenario(s) not run"
        )
    else:
        where = f"ran all {cases} case(s): {result.reason}"
    session.document["sequential"] = {
        "design": design.describe(),
        "design_win_rate_choice": (
            f"{SEQUENTIAL_WIN_RATE:g}: on a handful of scenarios only a (near) unanimous run of "
            "discordant pairs can reach a bound; it is also the win rate the preview's power "
            "statement assumes"
        ),
        "check": comparison.check_key,
        "check_choice": _SEQUENTIAL_CHOICE,
        "reference_arm": AGENT_ARM,
        "challenger_arm": WORKFLOW_ARM,
        "planned_cases": cases,
        "cases_run": ran,
        "earliest_rejection_case": _earliest_rejection(design),
        "stopping_case": comparison.stopping_case,
        "result": result.to_dict(),
        "pairs": [{"case_id": case, "outcome": outcome} for case, outcome in comparison.pairs],
        "excluded_cases": list(comparison.excluded),
        "cases_not_run": list(comparison.not_run),
        # Each scenario's runs are of its own one-case definition (same key and version).
        "case_definitions": {run.case_ids[0]: run.definition_hash for run in comparison.runs},
        "comparisons_note": (
            "the comparisons section is computed over the cases run; after a sequential stop "
            "the data chose how many cases that is, so its p-values describe those cases and "
            "the sequential result is the test"
        ),
        "summary": f"sequential: {where}",
    }
    return comparison


def _sequential_stop_reason(comparison: SequentialComparison, cases: int, code: ExitCode) -> str:
    ran = cases - len(comparison.not_run)
    text = (
        f"the comparison was decided at case {ran} of {cases}: {comparison.result.reason}; "
        f"the remaining {len(comparison.not_run)} scenario(s)' use-case contracts were not "
        "measured, and what was not measured is never a pass"
    )
    if code is ExitCode.INFRASTRUCTURE:
        text += " (exit 4: an incomplete design, not a failed provider)"
    return text


def _by_case(runs: Sequence[RunResult]) -> list[list[RunResult]]:
    """One-case runs grouped by their case, in the order they ran."""
    groups: dict[str, list[RunResult]] = {}
    for run in runs:
        groups.setdefault(run.case_ids[0], []).append(run)
    return list(groups.values())


def _whole_trial(trials: Sequence[TrialFacts], planned: int) -> list[dict[str, Any]]:
    """Per (arm, scenario): successes, measured denominator, Wilson 95%, floor and decision.

    A scenario with fewer trials than ``planned`` was curtailed: its decision is the one that
    no remaining outcome could change, and the trials not run count neither way.
    """
    groups: dict[tuple[str, str], list[TrialFacts]] = {}
    for trial in trials:
        groups.setdefault((trial.arm, trial.scenario), []).append(trial)
    out = []
    for (arm, scenario), group in groups.items():
        measured = [t for t in group if t.measured]
        successes = sum(1 for t in measured if t.whole_trial_success)
        interval = wilson_interval(successes, len(measured))
        curtailment = None
        if len(measured) < len(group):
            decision = "not_measured" if not measured else "incomplete"
        elif len(group) < planned:
            curtailment = wilson_curtailment(
                successes, len(group) - successes, planned, WHOLE_TRIAL_FLOOR
            )
            decision = curtailment.decision or "incomplete"
        elif interval is not None and interval.lower >= WHOLE_TRIAL_FLOOR:
            decision = "pass"
        else:
            decision = "fail"
        out.append(
            {
                "arm": arm,
                "architecture": group[0].architecture,
                "scenario": scenario,
                "persona": group[0].persona,
                "trials": len(group),
                "successes": successes,
                "measured": len(measured),
                # A zero denominator has no estimate and no bounds.
                "estimate": successes / len(measured) if measured else None,
                "wilson_95": None
                if interval is None
                else {"lower": interval.lower, "upper": interval.upper},
                "floor": WHOLE_TRIAL_FLOOR,
                "decision": decision,
                "planned": planned,
                "curtailed": planned - len(group) if curtailment is not None else 0,
                "curtailment_reason": None if curtailment is None else curtailment.reason,
            }
        )
    return out


def _verdict(
    plan: str,
    trials: Sequence[TrialFacts],
    whole: Sequence[Mapping[str, Any]] | None,
    *,
    not_run: Sequence[str] = (),
) -> tuple[ExitCode, str]:
    """The plan's terminal rule over its planned trials: those run, and ``not_run`` (one
    "arm/scenario" per planned trial a sequential stop left out), which are missing."""
    measured = [t for t in trials if t.measured]
    failure: str | None = None
    if whole is not None:
        failed = [f"{w['arm']}/{w['scenario']}" for w in whole if w["decision"] != "pass"]
        if failed:
            failure = (
                f"Wilson 95% lower bound below {WHOLE_TRIAL_FLOOR:.2f} for {', '.join(failed)}"
            )
    else:
        failed = sorted(
            {
                f"{t.arm}/{t.scenario}: {', '.join(_failed_checks(t))}"
                for t in measured
                if not t.passed
            }
        )
        if failed:
            failure = "measured failure in " + "; ".join(failed)
    return _terminal_rule(plan).decide(
        planned=len(trials) + len(not_run),
        measured=len(measured),
        missing=sorted({f"{t.arm}/{t.scenario}" for t in trials if not t.measured} | set(not_run)),
        failure=failure,
    )


def _terminal_rule(plan: str) -> TerminalRule:
    """The terminal rule the suite declares on ``plan`` (suite.py states every plan's rules)."""
    declared = SUITE.plans.get(plan)
    rule = getattr(declared, "terminal", None)
    if not isinstance(rule, TerminalRule):
        raise UsageError(f"the shop's suite declares no terminal rule for plan {plan!r}")
    return rule


def _failed_checks(trial: TrialFacts) -> list[str]:
    return [k for k in trial.required if not trial.observations[k].passed]


def _usage_totals(trials: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Token totals only from what providers reported; a cost only when one was reported."""
    subject_in = subject_out = judge_in = judge_out = 0
    reported = judge_reported = False
    cost: float | None = None
    for trial in trials:
        usage = trial.get("usage")
        if isinstance(usage, Mapping):
            reported = True
            subject_in += usage.get("input_tokens") or 0
            subject_out += usage.get("output_tokens") or 0
            if isinstance(usage.get("cost_usd"), float):
                cost = (cost or 0.0) + usage["cost_usd"]
        judge = trial.get("judge") or {}
        if judge.get("calls"):
            judge_reported = True
            judge_in += judge.get("input_tokens") or 0
            judge_out += judge.get("output_tokens") or 0
    out: dict[str, Any] = {
        "subject": {"input_tokens": subject_in, "output_tokens": subject_out} if reported else None,
        "judge": {"input_tokens": judge_in, "output_tokens": judge_out} if judge_reported else None,
        "judge_calls": sum((t.get("judge") or {}).get("calls") or 0 for t in trials),
    }
    if cost is not None:
        out["subject"]["cost_usd"] = cost
    return out


def _persist(
    session: _Session, code: ExitCode, reason: str, *, runs: Sequence[RunResult] = ()
) -> PlanOutcome:
    timeline = session.timeline
    timeline.start("persisting")
    # The receipt records the session as completed, so both starts are closed first; a
    # failed write below turns the outcome into an infrastructure error instead.
    timeline.end("persisting", detail="receipt written")
    timeline.end("session", detail=f"exit {int(code)}")
    timeline.close("the session ended before this step")
    if session.meter is not None:
        session.document["spend"] = session.meter.to_dict()
        if session.meter.reached is not None:
            reason = (
                f"{reason}; spend ceiling reached ({session.meter.reached}): the trials it "
                "stopped are not measured, reason budget"
            )
    document = {
        **session.document,
        "started_at": session.started_at,
        "finished_at": _now(),
        "duration_s": round(time.perf_counter() - session.started, 3),
        "progress": [e.model_dump() for e in timeline.entries()],
        "exit_code": int(code),
        "exit_meaning": code.meaning,
        "exit_reason": reason,
    }
    try:
        path = ReceiptStore(session.root).write(session.session_id, document)
    except OSError as exc:
        why = f"the session receipt could not be written ({type(exc).__name__})"
        return PlanOutcome(ExitCode.INFRASTRUCTURE, [f"{session.spec.name}: {why}"])
    summary = [
        f"{session.spec.name}: session {session.session_id}",
        f"exit {int(code)} ({code.meaning}): {sanitize_text(reason, 600)}",
    ]
    whole = session.document.get("whole_trial") or []
    for row in whole:
        bounds = row["wilson_95"]
        interval = (
            "no estimate" if bounds is None else f"[{bounds['lower']:.3f}, {bounds['upper']:.3f}]"
        )
        summary.append(
            f"  {row['arm']} {row['scenario']}: {row['successes']}/{row['measured']} "
            f"whole-trial successes, Wilson 95% {interval}, floor {row['floor']:.2f}: "
            f"{row['decision']}"
            + (f" ({row['curtailed']} curtailed)" if row.get("curtailed") else "")
        )
    sequential = session.document.get("sequential")
    if sequential is not None:
        summary.append(sequential["summary"])
    for row in session.document.get("comparisons") or []:
        summary.append(_comparison_line(row))
    artifacts = [path, *(Path(r.run_dir) for r in runs if r.run_dir)]
    return PlanOutcome(code, summary, artifacts)


def _comparison_line(row: Mapping[str, Any]) -> str:
    effect = row.get("effect")
    bh = f", Benjamini-Hochberg {row['p_bh']:.3g}" if "p_bh" in row else ""
    size = (
        "no pairs"
        if effect is None
        else f"difference {effect['estimate']:+.2f}, 95% [{effect['lower']:+.2f}, "
        f"{effect['upper']:+.2f}]"
    )
    return (
        f"  {row['challenger_arm']} vs {row['reference_arm']} on {row['check']}: "
        f"{row['wins']} win(s), {row['losses']} loss(es), {row['ties']} tie(s); "
        f"p {row['p_value']:.3g} (Holm {row['p_holm']:.3g}{bh}); {size}"
    )


def _sink(request: PlanRequest) -> Callable[[object], None] | None:
    sinks: list[Callable[[object], None]] = []
    if request.progress is not None:
        sinks.append(request.progress)
    if request.console:  # a bar on a terminal, one line per trial in a log
        sinks.append(TrialDisplay(sys.stderr).handle)
    if not sinks:
        return None

    def fan_out(event: object) -> None:
        for target in sinks:
            target(event)

    return fan_out


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
