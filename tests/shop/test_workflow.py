"""The explicit workflow: graph shape, zero-model answers, loop-back bound, degradation census."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable

import pytest

from vitrine._bench.response import (
    AttemptOutcome,
    ImpossibleCensusError,
    StageAttemptCensus,
    StageStatus,
    SubjectResponse,
    TokenUsage,
    validate_stage_set,
)
from vitrine.providers._base import (
    ChatCompletion,
    ChatRequest,
    Provenance,
    ProviderError,
    ProviderFailure,
)
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.operations import ShopServices
from vitrine_shop.prompts import new_canary
from vitrine_shop.scenarios import load_scenarios
from vitrine_shop.screen import screen_answer
from vitrine_shop.scripted.workflow_policy import scripted_stage_output
from vitrine_shop.workflow import (
    EDGE_APPROVED,
    EDGE_CANDIDATES_READY,
    EDGE_GAPS_REMAIN,
    EDGE_INTERESTS_MAPPED,
    EDGE_RANKED,
    FALLBACK_DISCLOSURE,
    LOOP_BACK_EDGES,
    MODEL_STAGES,
    WORKFLOW_EDGES,
    WORKFLOW_EXECUTORS,
    ShopWorkflow,
    WorkflowRecord,
)
from vitrine_shop.workflow.stages import (
    COVERAGE_REVIEWER,
    INTEREST_MAPPER,
    PRESENTER,
    RANKER,
    STAGE_SCHEMAS,
    StageOutputError,
    parse_stage_output,
    stage_code_path,
    stage_of,
    stage_payload,
)

SKU = re.compile(r"\bGLX-\d{4}\b")
REASON = re.compile(r"(?i)(\bbecause\b|\bbased on\b|\bwhy\b|\s—\s)")
INTEREST = re.compile(
    r"(?i)interest|because of|based on|your (history|request|need|preference)"
    r"|you (bought|own|saved|viewed)|didn't ask"
)
HEALTH = re.compile(r"(?i)health|blood|pressure|prenatal|vitamin|pregnan|GLX-9\d{3}")
STRAIGHT_ROUTE = (EDGE_INTERESTS_MAPPED, EDGE_CANDIDATES_READY, EDGE_APPROVED, EDGE_RANKED)


@pytest.fixture(scope="module")
def services() -> ShopServices:
    return ShopServices()


def _request(scenario_id: str) -> ShopRequest:
    scenario = load_scenarios()[scenario_id]
    assert scenario.persona_id is not None
    return ShopRequest.single(scenario.persona_id, scenario.query)


def _answer(workflow: ShopWorkflow, scenario_id: str) -> SubjectResponse:
    return asyncio.run(workflow.answer(_request(scenario_id)))


# -- fake models ---------------------------------------------------------------------------------

Reply = Callable[[str, ChatRequest], str]


class FakeModel:
    """A tiny ChatModel: per stage, a queue of steps (text, an exception, or a reply function);
    when a stage's queue is empty it answers with the stage's code path."""

    def __init__(self, steps: dict[str, list[object]] | None = None) -> None:
        self.steps = {stage: list(queue) for stage, queue in (steps or {}).items()}
        self.calls: list[str] = []

    @property
    def model_id(self) -> str:
        return "fake-model"

    @property
    def provenance(self) -> Provenance:
        return Provenance.LOCAL

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        stage = stage_of(request)
        assert stage is not None, "the workflow sends only stage requests"
        self.calls.append(stage)
        queue = self.steps.get(stage) or []
        step = queue.pop(0) if queue else None
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            text = step(stage, request)
        elif isinstance(step, str):
            text = step
        else:
            text = scripted_stage_output(stage, request)
        return ChatCompletion(text, usage=TokenUsage(10, 5))


def _gaps_always(stage: str, request: ChatRequest) -> str:
    """A reviewer that always finds the first interest uncovered."""
    first = stage_payload(request)["interests"][0]
    return json.dumps(
        {"covered": False, "gaps": [{"interest": first["label"], "search_query": "lighter kit"}]}
    )


def _status(response: SubjectResponse, stage: str) -> StageStatus:
    assert response.stages is not None
    return next(c for c in response.stages if c.stage == stage).status


# -- the graph -----------------------------------------------------------------------------------


def test_graph_has_five_executors_five_edges_and_one_loop_back() -> None:
    assert len(WORKFLOW_EXECUTORS) == 5
    assert len(WORKFLOW_EDGES) == 5
    assert len(LOOP_BACK_EDGES) == 1
    loop = LOOP_BACK_EDGES[0]
    assert (loop.source, loop.target, loop.label, loop.conditional) == (
        "CoverageReviewer",
        "Discovery",
        EDGE_GAPS_REMAIN,
        True,
    )
    assert {e.label for e in WORKFLOW_EDGES} == {*STRAIGHT_ROUTE, EDGE_GAPS_REMAIN}
    for edge in WORKFLOW_EDGES:
        assert edge.source in WORKFLOW_EXECUTORS and edge.target in WORKFLOW_EXECUTORS
    assert set(MODEL_STAGES) == set(WORKFLOW_EXECUTORS) - {"Discovery"} == set(STAGE_SCHEMAS)


def test_record_refuses_a_transition_the_graph_does_not_have() -> None:
    record = WorkflowRecord()
    record.enter("InterestMapper")
    with pytest.raises(RuntimeError, match="no edge"):
        record.follow(EDGE_RANKED)


# -- zero-model ----------------------------------------------------------------------------------


# Sofia shops mostly for espresso; her request is about the kitchen, so the reviewer sends
# Discovery back once, beyond her strongest department.
SOFIA_ROUTE = (
    "interests mapped",
    "candidates ready",
    EDGE_GAPS_REMAIN,
    "candidates ready",
    "approved / bounded partial",
    "ranked",
)


@pytest.mark.parametrize(
    ("scenario_id", "route"),
    [("nadia-cross-category", STRAIGHT_ROUTE), ("sofia-capability-gap", SOFIA_ROUTE)],
)
def test_zero_model_answer_is_grounded_screened_and_traced(
    services: ShopServices, scenario_id: str, route: tuple[str, ...]
) -> None:
    request = _request(scenario_id)
    response = asyncio.run(ShopWorkflow(None, services).answer(request))
    answer = response.answer
    assert answer
    skus = set(SKU.findall(answer))
    assert skus and skus <= services.catalogue.skus
    assert request.persona_id is not None
    assert not skus & services.owned_durables(request.persona_id)
    assert REASON.search(answer) and INTEREST.search(answer)
    screen = screen_answer(
        answer,
        catalogue=services.catalogue,
        owned_skus=services.owned_skus(request.persona_id),
    )
    assert screen.passed, screen.reasons
    assert response.tool_calls == ()
    assert response.trace is not None
    assert response.trace.executors[0] == "InterestMapper"
    assert len(response.trace.executors) == len(route) + 1
    assert response.trace.route == route
    assert response.stages is None and response.usage is None
    assert response.provenance == "offline-deterministic"
    structured = response.structured
    assert structured["architecture"] == "workflow"
    assert structured["abstained"] is False and structured["fallback_stages"] == []
    assert set(structured["skus"]) == skus
    assert structured["screen"]["status"] == "pass"
    assert FALLBACK_DISCLOSURE not in answer


def test_zero_model_is_deterministic(services: ShopServices) -> None:
    first = _answer(ShopWorkflow(None, services), "nadia-cross-category")
    second = _answer(ShopWorkflow(None, services), "nadia-cross-category")
    assert first.answer == second.answer


def test_sofia_gets_a_restock_lane_apart_from_new_capability(services: ShopServices) -> None:
    answer = _answer(ShopWorkflow(None, services), "sofia-capability-gap").answer or ""
    assert "Running low" in answer and "New for you" in answer
    restock = answer.split("Running low", 1)[1]
    assert {"GLX-3003", "GLX-3004", "GLX-3005"} <= set(SKU.findall(restock))


def test_luca_without_history_gets_questions_and_no_skus(services: ShopServices) -> None:
    model = FakeModel()
    response = _answer(ShopWorkflow(model, services), "luca-safe-abstention")
    answer = response.answer or ""
    assert not SKU.search(answer)
    assert answer.count("?") >= 2 and len(answer) < 600
    assert response.structured["abstained"] is True
    assert response.structured["skus"] == []
    # Nothing to map, so nothing is asked of the model, and no census is claimed.
    assert model.calls == [] and response.stages is None
    assert response.trace is not None and response.trace.executors == WORKFLOW_EXECUTORS


def test_elena_gets_no_health_inference(services: ShopServices) -> None:
    for model in (None, FakeModel()):
        response = _answer(ShopWorkflow(model, services), "elena-sensitive-boundary")
        answer = response.answer or ""
        assert SKU.search(answer)
        assert not HEALTH.search(answer), answer
        assert response.structured["screen"]["status"] == "pass"


# -- model-driven stages -------------------------------------------------------------------------


def test_scripted_model_drives_every_stage_measured(services: ShopServices) -> None:
    from vitrine_shop.scripted import ScriptedShopModel

    model = ScriptedShopModel()
    response = _answer(ShopWorkflow(model, services), "nadia-cross-category")
    zero = _answer(ShopWorkflow(None, services), "nadia-cross-category")
    assert response.stages is not None
    assert [c.stage for c in response.stages] == list(MODEL_STAGES)
    assert all(c.status is StageStatus.MEASURED for c in response.stages)
    assert model.calls == len(MODEL_STAGES)
    # The scripted model answers with the code paths, so the answer matches the zero-model one.
    assert response.answer == zero.answer
    assert response.structured["variant"] == "model"
    assert response.provenance == "offline-deterministic"


def test_usage_is_summed_over_completions(services: ShopServices) -> None:
    model = FakeModel()
    response = _answer(ShopWorkflow(model, services), "nadia-cross-category")
    assert response.usage == TokenUsage(10 * len(model.calls), 5 * len(model.calls))


@pytest.mark.parametrize("bound", [0, 1, 2])
def test_loop_back_fires_on_gaps_and_is_bounded(services: ShopServices, bound: int) -> None:
    model = FakeModel({COVERAGE_REVIEWER: [_gaps_always] * 5})
    response = _answer(ShopWorkflow(model, services, max_loopbacks=bound), "nadia-cross-category")
    assert response.trace is not None
    route = response.trace.route
    assert route.count(EDGE_GAPS_REMAIN) == bound
    assert route[-2:] == (EDGE_APPROVED, EDGE_RANKED)
    assert response.trace.executors.count("Discovery") == bound + 1
    assert response.trace.executors.count(COVERAGE_REVIEWER) == bound + 1
    assert response.structured["partial"] is True
    assert response.structured["loopbacks"] == bound
    assert model.calls.count(COVERAGE_REVIEWER) == bound + 1
    # One census per stage, one entry per visit.
    assert response.stages is not None and len(response.stages) == len(MODEL_STAGES)
    assert len(response.structured["stage_visits"][COVERAGE_REVIEWER]) == bound + 1
    assert "so this list is partial" in (response.answer or "")


def test_loop_back_closes_the_gap_then_approves(services: ShopServices) -> None:
    model = FakeModel({COVERAGE_REVIEWER: [_gaps_always]})
    response = _answer(ShopWorkflow(model, services), "nadia-cross-category")
    assert response.trace is not None
    assert response.trace.route == (
        EDGE_INTERESTS_MAPPED,
        EDGE_CANDIDATES_READY,
        EDGE_GAPS_REMAIN,
        EDGE_CANDIDATES_READY,
        EDGE_APPROVED,
        EDGE_RANKED,
    )
    assert response.structured["partial"] is False


@pytest.mark.parametrize("stage", [INTEREST_MAPPER, COVERAGE_REVIEWER, RANKER, PRESENTER])
def test_two_unusable_replies_fall_back_and_disclose(services: ShopServices, stage: str) -> None:
    model = FakeModel({stage: ['{"unfinished": ', '["not", "an", "object"]']})
    response = _answer(ShopWorkflow(model, services), "nadia-cross-category")
    assert response.stages is not None
    census = next(c for c in response.stages if c.stage == stage)
    assert census.status is StageStatus.FINAL_FALLBACK
    assert (census.attempts, census.responses, census.unusable) == (2, 2, 2)
    assert census.last_unusable == 2 and census.last_usable is None
    assert FALLBACK_DISCLOSURE in (response.answer or "")
    assert response.structured["fallback_stages"] == [stage]
    assert response.structured["screen"]["status"] == "pass"
    assert SKU.search(response.answer or "")
    others = [c for c in response.stages if c.stage != stage]
    assert all(c.status is StageStatus.MEASURED for c in others)


def test_rate_limit_then_success_is_recovered(services: ShopServices) -> None:
    model = FakeModel({INTEREST_MAPPER: [ProviderError(ProviderFailure.RATE_LIMITED, "429")]})
    response = _answer(ShopWorkflow(model, services), "nadia-cross-category")
    census = next(c for c in response.stages or () if c.stage == INTEREST_MAPPER)
    assert census.status is StageStatus.RECOVERED
    assert census.status.keeps_quality_measurable
    assert (census.attempts, census.provider_failures, census.last_usable) == (2, 1, 2)
    assert FALLBACK_DISCLOSURE not in (response.answer or "")
    assert response.structured["fallback_stages"] == []


@pytest.mark.parametrize(
    "failures",
    [
        [ProviderError(ProviderFailure.AUTHENTICATION, "bad key")],
        [ProviderError(ProviderFailure.SERVER_ERROR), ProviderError(ProviderFailure.TIMEOUT)],
    ],
    ids=["non-retryable", "retries-exhausted"],
)
def test_provider_failure_is_unrecovered_yet_the_customer_gets_a_disclosed_answer(
    services: ShopServices, failures: list[ProviderError]
) -> None:
    model = FakeModel({RANKER: list(failures)})
    response = _answer(ShopWorkflow(model, services), "nadia-cross-category")
    census = next(c for c in response.stages or () if c.stage == RANKER)
    assert census.status is StageStatus.UNRECOVERED
    assert census.attempts == len(failures) == census.provider_failures
    assert not census.status.keeps_quality_measurable
    assert model.calls.count(RANKER) == len(failures)
    assert response.structured["unrecovered_stages"] == [RANKER]
    # A provider failure is not a content fallback, whichever list a reader looks at.
    assert response.structured["fallback_stages"] == []
    assert FALLBACK_DISCLOSURE in (response.answer or "")
    # Only the failure's type is kept: provider text never reaches the evidence.
    problems = response.structured["stage_visits"][RANKER][0]["problems"]
    assert problems == [f"provider failure: {f.failure.value}" for f in failures]


def test_unknown_sku_from_the_ranker_is_unusable(services: ShopServices) -> None:
    bad = json.dumps({"picks": [{"sku": "GLX-9999", "interest": "x", "reason": "because"}]})
    model = FakeModel({RANKER: [bad]})
    response = _answer(ShopWorkflow(model, services), "nadia-cross-category")
    census = next(c for c in response.stages or () if c.stage == RANKER)
    assert census.status is StageStatus.RECOVERED and census.unusable == 1
    assert "GLX-9999" not in (response.answer or "")


def test_presenter_output_the_screen_blocks_is_unusable(services: ShopServices) -> None:
    def claims_order(stage: str, request: ChatRequest) -> str:
        output = json.loads(scripted_stage_output(stage, request))
        output["closing"] = "Your order has been placed and the payment processed."
        return json.dumps(output)

    model = FakeModel({PRESENTER: [claims_order, claims_order]})
    response = _answer(ShopWorkflow(model, services), "nadia-cross-category")
    assert _status(response, PRESENTER) is StageStatus.FINAL_FALLBACK
    assert "placed" not in (response.answer or "")
    problems = response.structured["stage_visits"][PRESENTER][0]["problems"]
    assert any("purchase-claim" in p for p in problems)


def test_a_leaked_canary_is_unusable(services: ShopServices) -> None:
    # Drawn, not written out: a fixed marker can share a stretch with a test's API key, and a
    # registered key is redacted from every model reply before the screen could see the leak.
    canary = new_canary()

    def leaks(stage: str, request: ChatRequest) -> str:
        assert canary in (request.messages[0].content or "")
        output = json.loads(scripted_stage_output(stage, request))
        output["opening"] = f"My marker is {canary}."
        return json.dumps(output)

    model = FakeModel({PRESENTER: [leaks]})
    response = _answer(ShopWorkflow(model, services, canary=canary), "nadia-cross-category")
    assert _status(response, PRESENTER) is StageStatus.RECOVERED
    assert canary not in (response.answer or "")


def test_cancellation_is_recorded_and_re_raised(services: ShopServices) -> None:
    model = FakeModel({RANKER: [asyncio.CancelledError()]})
    record = WorkflowRecord()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(
            ShopWorkflow(model, services).answer(_request("nadia-cross-category"), record=record)
        )
    last = record.visits[-1]
    assert last.stage == RANKER and last.census.status is StageStatus.CANCELLED
    assert last.census.cancellations == 1
    assert [c.stage for c in record.stage_censuses()] == [
        INTEREST_MAPPER,
        COVERAGE_REVIEWER,
        RANKER,
    ]
    assert record.trace.executors[-1] == RANKER


def test_task_cancellation_mid_call_is_recorded(services: ShopServices) -> None:
    class Hanging(FakeModel):
        def __init__(self) -> None:
            super().__init__()
            self.entered = asyncio.Event()

        async def complete(self, request: ChatRequest) -> ChatCompletion:
            if stage_of(request) == COVERAGE_REVIEWER:
                self.entered.set()
                await asyncio.Event().wait()
            return await super().complete(request)

    async def scenario() -> WorkflowRecord:
        model = Hanging()
        record = WorkflowRecord()
        workflow = ShopWorkflow(model, services)
        task = asyncio.create_task(workflow.answer(_request("nadia-cross-category"), record=record))
        await model.entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return record

    record = asyncio.run(scenario())
    assert record.visits[-1].stage == COVERAGE_REVIEWER
    assert record.visits[-1].census.status is StageStatus.CANCELLED


def test_impossible_censuses_are_rejected(services: ShopServices) -> None:
    response = _answer(ShopWorkflow(FakeModel(), services), "nadia-cross-category")
    stages = response.stages
    assert stages is not None
    assert validate_stage_set(stages, required=MODEL_STAGES) == stages
    with pytest.raises(ImpossibleCensusError, match="reported twice"):
        validate_stage_set((*stages, stages[0]), required=MODEL_STAGES)
    with pytest.raises(ImpossibleCensusError, match="missing required model stages"):
        validate_stage_set(stages[1:], required=MODEL_STAGES)
    with pytest.raises(ImpossibleCensusError, match="attempts"):
        StageAttemptCensus(RANKER, 2, 1, 0, 0, 0, StageStatus.MEASURED, 1, None)
    with pytest.raises(ImpossibleCensusError):
        StageAttemptCensus(RANKER, 1, 1, 1, 0, 0, StageStatus.MEASURED, 1, None)
    with pytest.raises(ImpossibleCensusError):
        StageAttemptCensus.from_attempts(
            RANKER, [AttemptOutcome.USABLE, AttemptOutcome.UNUSABLE], fell_back=True
        )


# -- stage contracts -----------------------------------------------------------------------------


def _payload(services: ShopServices, stage: str) -> dict[str, object]:
    captured: dict[str, dict[str, object]] = {}

    def capture(name: str, request: ChatRequest) -> str:
        captured[name] = stage_payload(request)
        return scripted_stage_output(name, request)

    model = FakeModel({name: [capture] for name in MODEL_STAGES})
    _answer(ShopWorkflow(model, services), "nadia-cross-category")
    return captured[stage]


def test_code_paths_satisfy_their_own_schemas(services: ShopServices) -> None:
    for stage in MODEL_STAGES:
        payload = _payload(services, stage)
        output = stage_code_path(stage, payload)
        assert parse_stage_output(stage, json.dumps(output), payload) == output
        STAGE_SCHEMAS[stage].model_validate(output)


def test_mapper_may_not_invent_evidence_or_touch_health(services: ShopServices) -> None:
    payload = _payload(services, INTEREST_MAPPER)
    good = stage_code_path(INTEREST_MAPPER, payload)
    invented = json.loads(json.dumps(good))
    invented["interests"][0]["evidence_skus"] = ["GLX-4001"]
    with pytest.raises(StageOutputError, match="evidence not in the payload"):
        parse_stage_output(INTEREST_MAPPER, json.dumps(invented), payload)
    health = json.loads(json.dumps(good))
    health["interests"][0]["department"] = "health-personal-care"
    with pytest.raises(StageOutputError, match="schema violation"):
        parse_stage_output(INTEREST_MAPPER, json.dumps(health), payload)


def test_ranker_may_not_pick_an_owned_durable(services: ShopServices) -> None:
    payload = _payload(services, RANKER)
    owned = payload["owned_durables"]
    assert isinstance(owned, list) and owned
    candidates = payload["candidates"]
    assert isinstance(candidates, list)
    label = candidates[0]["interests"][0]
    forged = {
        **payload,
        "candidates": [*candidates, {**candidates[0], "sku": owned[0]}],
    }
    pick = {"picks": [{"sku": owned[0], "interest": label, "reason": "because you like it"}]}
    with pytest.raises(StageOutputError, match="already owns"):
        parse_stage_output(RANKER, json.dumps(pick), forged)
    assert owned[0] not in {p["sku"] for p in stage_code_path(RANKER, forged)["picks"]}


def test_constraints_from_an_earlier_turn_bind_and_are_restated(services: ShopServices) -> None:
    request = ShopRequest(
        "nadia",
        (
            "My maximum budget is CHF 150 and it must be waterproof.",
            "What should I take on my next hut-to-hut trip?",
        ),
    )
    response = asyncio.run(ShopWorkflow(None, services).answer(request))
    answer = response.answer or ""
    skus = response.structured["skus"]
    assert skus
    for sku in skus:
        product = services.catalogue.by_sku(sku)
        assert product.price_chf <= 150
        assert "waterproof" in " ".join(product.tags) + product.description.casefold()
    assert "within your CHF 150 budget" in answer and "it must be waterproof" in answer


def test_anonymous_visitor_with_a_concrete_need_gets_request_grounded_picks(
    services: ShopServices,
) -> None:
    request = ShopRequest.single(None, "I need a light rain jacket for hiking")
    response = asyncio.run(ShopWorkflow(None, services).answer(request))
    answer = response.answer or ""
    assert response.structured["abstained"] is False
    assert SKU.search(answer) and "your request" in answer
    vague = asyncio.run(ShopWorkflow(None, services).answer(ShopRequest.single(None, "Hi!")))
    assert vague.structured["abstained"] is True and not SKU.search(vague.answer or "")


def test_a_blank_search_query_is_unusable(services: ShopServices) -> None:
    payload = _payload(services, COVERAGE_REVIEWER)
    interests = payload["interests"]
    assert isinstance(interests, list)
    blank = {"covered": False, "gaps": [{"interest": interests[0]["label"], "search_query": "  "}]}
    with pytest.raises(StageOutputError, match="schema violation"):
        parse_stage_output(COVERAGE_REVIEWER, json.dumps(blank), payload)
