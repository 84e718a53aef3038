"""The explicit workflow: graph shape, zero-model answers, loop-back bound, degradation census."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable

import pytest

from vitrine.bench.response import (
    StageStatus,
    SubjectResponse,
    TokenUsage,
)
from vitrine.providers.base import (
    ChatCompletion,
    ChatRequest,
    Provenance,
)
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.scenarios import load_scenarios
from vitrine_shop.screen import screen_answer
from vitrine_shop.services import ShopServices
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
from vitrine_shop.workflow_stages import (
    STAGE_SCHEMAS,
    scripted_stage_output,
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


@pytest.mark.parametrize("scenario_id", ["nadia-cross-category", "sofia-capability-gap"])
def test_zero_model_answer_is_grounded_screened_and_traced(
    services: ShopServices, scenario_id: str
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
    assert response.trace.executors == WORKFLOW_EXECUTORS
    assert response.trace.route == STRAIGHT_ROUTE
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
