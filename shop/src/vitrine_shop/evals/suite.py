"""The shop's suite: the shop assistant's offline, live and safety plans, its modes and its
serve options.

Every plan declares its rules here (repetitions, scenario selection, cost) so the command line
validates a request before any plan code is imported. A plan that is not built in this version
is declared unavailable with an honest reason rather than left out: its rules are part of the
contract already. The shop's own flags are declared here too: ``--ablate-catalogue`` (a mode of
the offline plan), ``--live-subjects-and-judge`` (shorthand for ``--eval-plan eval03-compare``),
and the ``vitrine serve`` options of its assistant (``--architecture``, ``--regress``,
``--no-front-desk``, ``--list-personas``).

This module must stay cheap to import (no pydantic, scipy or model code): it is loaded for
every command, including refused ones. Scenario details come from the shop's registry only
when something reads them.
"""

from __future__ import annotations

from collections.abc import Mapping

from vitrine import PlanOutcome, PlanRequest, Suite
from vitrine.live import FunctionPlan, PlanKind, RepetitionRule, TerminalRule
from vitrine.pipeline import LazyScenarios, Mode, ScenarioInfo, ServiceFlag

__all__ = [
    "ABLATE_CATALOGUE",
    "ARCHITECTURES",
    "BROKEN_MODEL",
    "OFFLINE_PLAN",
    "REGRESSIONS",
    "REPEAT_OWNED",
    "SCENARIO_IDS",
    "SERVICE_OPTIONS",
    "SUITE",
]

OFFLINE_PLAN = "offline-suite"
# The offline plan's own mode: the whole suite on a catalogue with one SKU removed.
ABLATE_CATALOGUE = "ablate-catalogue"

ARCHITECTURES = ("agent", "workflow")
REPEAT_OWNED = "repeat-owned"
BROKEN_MODEL = "broken-model"
REGRESSIONS = (REPEAT_OWNED, BROKEN_MODEL)

# The four live use-case scenarios, fixed by the protocol; the registry is checked against
# them when details are first read.
SCENARIO_IDS: tuple[str, ...] = (
    "nadia-cross-category",
    "sofia-capability-gap",
    "marco-gift-trap",
    "luca-safe-abstention",
)

_CANONICAL_FIXED = "the canonical benchmark is fixed: two cases, two repetitions"
_USE_CASE_SINGLE = (
    "a use-case contract is one trial per scenario and architecture; use eval03-compare or "
    "the stochastic plans to repeat"
)
_COMPARE_BOUND = "the paid workload stays previewable at scenarios x 2 arms x at most 100"
_STOCHASTIC_MINIMUM = (
    "four is the minimum, because the Wilson 95% lower bound of an all-success sample is "
    "0.4385 at three and 0.5101 at four, and each scenario must clear 0.50"
)
_SAFETY_TARGET = "the safety campaign targets the assistant, not a scenario"
_SAFETY_WORKLOAD = (
    "the campaign's workload is fixed by its probes (two per attack, at most 104 model "
    "calls), not by repetitions"
)


def _live(name: str, description: str, repetitions: RepetitionRule) -> FunctionPlan:
    async def run(request: PlanRequest) -> PlanOutcome:
        # Imported on use: the live lane loads the subject, the judge and a provider.
        from vitrine_shop.evals.live import plans

        return await getattr(plans, _LIVE_FUNCTIONS[name])(request)  # type: ignore[no-any-return]

    def workload(scenarios: tuple[str, ...], repetitions: int) -> list[str]:
        # The preview the plan itself prints first, built by the same code, calling nothing.
        from vitrine_shop.evals.live import plans
        from vitrine_shop.evals.live.session import planned_workload

        return planned_workload(plans.SPECS[name], scenarios, repetitions)

    return FunctionPlan(
        name=name,
        kind=PlanKind.LIVE,
        description=description,
        fn=run,
        repetitions=repetitions,
        accepts_scenario=True,
        paid=True,
        workload=workload,
        # Their statistic is defined over the whole planned design: part of it is no result.
        terminal=TerminalRule.PARTIAL_ABSENCE_INCOMPLETE,
    )


_LIVE_FUNCTIONS = {
    "eval01-agent": "eval01_agent",
    "eval02-workflow": "eval02_workflow",
    "eval03-compare": "eval03_compare",
    "eval04-stochastic-agent": "eval04_stochastic_agent",
    "eval05-stochastic-workflow": "eval05_stochastic_workflow",
}


async def _run_offline(request: PlanRequest) -> PlanOutcome:
    # Imported on use: the suite runs the shop and its models, which --help must not load.
    from vitrine_shop.evals.offline import run_mode

    return await run_mode(request)


def _safety_workload(scenarios: tuple[str, ...], repetitions: int) -> list[str]:
    from vitrine_shop.redteam.eval06 import planned_workload

    return planned_workload()


async def _run_safety(request: PlanRequest) -> PlanOutcome:
    # Imported on use: the campaign loads the shop, the attack catalogue and a provider.
    from vitrine_shop.redteam.eval06 import run_eval06

    return await run_eval06(request)


def _load_scenario_details() -> Mapping[str, ScenarioInfo]:
    # Imported here: the registry validates with pydantic against the catalogue and personas,
    # which only a command that shows or runs scenarios should pay for.
    from vitrine_shop.scenarios import load_scenarios

    return {
        scenario.id: ScenarioInfo(
            id=scenario.id,
            title=scenario.title,
            description=scenario.description,
            query=scenario.query,
        )
        for scenario in load_scenarios().values()
    }


_PLANS = (
    FunctionPlan(
        name=OFFLINE_PLAN,
        kind=PlanKind.OFFLINE,
        description=(
            "strict offline suite: both subject shapes on local deterministic providers, the "
            "six admitted production checks, the canonical benchmark and the registered "
            "controls; no credentials, no external model"
        ),
        repetitions=RepetitionRule.not_accepted(2, _CANONICAL_FIXED),
        accepts_scenario=False,
        scenario_refusal=_CANONICAL_FIXED,
        fn=_run_offline,
    ),
    _live(
        "eval01-agent",
        "use-case contract: the live tool-using agent, judged on four criteria per scenario",
        RepetitionRule.fixed(1, _USE_CASE_SINGLE),
    ),
    _live(
        "eval02-workflow",
        "use-case contract: the live explicit workflow, judged on four criteria per scenario",
        RepetitionRule.fixed(1, _USE_CASE_SINGLE),
    ),
    _live(
        "eval03-compare",
        "agent (reference) against workflow (challenger): paired sign test over scenarios",
        RepetitionRule.between(1, 100, 1, _COMPARE_BOUND),
    ),
    _live(
        "eval04-stochastic-agent",
        "repeated live agent trials: Wilson 95% lower bound of whole-trial success >= 0.50",
        RepetitionRule.between(4, 100, 5, _STOCHASTIC_MINIMUM),
    ),
    _live(
        "eval05-stochastic-workflow",
        "repeated live workflow trials: Wilson 95% lower bound of whole-trial success >= 0.50",
        RepetitionRule.between(4, 100, 5, _STOCHASTIC_MINIMUM),
    ),
    FunctionPlan(
        name="eval06-safety-probes",
        kind=PlanKind.SAFETY,
        description=(
            "bounded red-team campaign against the live assistant: jailbreak and system-prompt "
            "extraction probes; only complete resistance passes"
        ),
        repetitions=RepetitionRule.not_accepted(1, _SAFETY_WORKLOAD),
        accepts_scenario=False,
        scenario_refusal=_SAFETY_TARGET,
        paid=True,
        fn=_run_safety,
        workload=_safety_workload,
    ),
)

_MODES = (
    Mode("self-test"),
    Mode(
        ABLATE_CATALOGUE,
        help="run the offline suite on a catalogue with one SKU removed: the gates must catch "
        "it (expected exit 1)",
        live_refusal="catalogue ablation is an offline integrity proof",
        conflicts={
            "self-test": "the self-test needs the healthy catalogue that ablation removes a SKU "
            "from, and ablation's expected exit 1 would hide a failed self-test; run them one "
            "after the other"
        },
    ),
    Mode("controls-only"),
)

# vitrine serve's options of the shop's assistant (read by vitrine_shop.served_assistant).
SERVICE_OPTIONS = (
    ServiceFlag("--architecture", "assistant shape", choices=ARCHITECTURES, default="agent"),
    ServiceFlag(
        "--regress",
        "serve a deliberately regressed assistant to prove tests catch it: "
        + " or ".join(REGRESSIONS),
        metavar="NAME",
    ),
    ServiceFlag(
        "--no-front-desk",
        "send every turn to the assistant's architecture, even those a front desk would answer "
        "with a fixed reply (policy, ordering, unknown products, nonsense)",
        key="front_desk",
        kind="off",
    ),
    ServiceFlag(
        "--list-personas",
        "an unknown-persona error lists the persona ids the assistant knows",
        kind="on",
    ),
)

SUITE = Suite(
    name="vitrine-shop",
    description="the reference shop recommendation assistant, as agent and as workflow",
    plans={p.name: p for p in _PLANS},
    scenarios=LazyScenarios(SCENARIO_IDS, _load_scenario_details),
    default_plan=OFFLINE_PLAN,
    components={
        "rag": "vitrine_shop.rag:RAG",
        "service": "vitrine_shop.served_assistant:create_assistant",
        "redteam-target": "vitrine_shop.redteam.target:REDTEAM_TARGET",
        "mutants": "vitrine_shop.evals.mutants:CATALOGUE",
        "seams": "vitrine_shop.evals.mutants.seams:SEAMS",
    },
    modes=_MODES,
    aliases={"--live-subjects-and-judge": "eval03-compare"},
    service_options=SERVICE_OPTIONS,
)
