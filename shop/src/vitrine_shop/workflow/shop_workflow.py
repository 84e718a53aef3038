""":class:`ShopWorkflow`: the executors run in graph order, then the screened answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vitrine import SubjectResponse
from vitrine.providers import ChatModel, Provenance
from vitrine.subjects import StageStatus
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.operations import ShopServices
from vitrine_shop.screen import ScreenResult, screen_answer
from vitrine_shop.workflow.attempts import StageCheck, attempt_stage
from vitrine_shop.workflow.context import RequestContext, build_context
from vitrine_shop.workflow.discovery import Discovery
from vitrine_shop.workflow.graph import (
    EDGE_APPROVED,
    EDGE_CANDIDATES_READY,
    EDGE_GAPS_REMAIN,
    EDGE_INTERESTS_MAPPED,
    EDGE_RANKED,
    WorkflowRecord,
)
from vitrine_shop.workflow.stages import (
    COVERAGE_REVIEWER,
    INTEREST_MAPPER,
    MODEL_STAGES,
    PRESENTER,
    RANKER,
    STAGE_INSTRUCTIONS_TEXT,
    picks_payload,
    render_answer,
    stage_code_path,
)

__all__ = ["FALLBACK_DISCLOSURE", "ShopWorkflow"]

FALLBACK_DISCLOSURE = (
    "Part of this answer was assembled by a fallback path: a step of the assistant did not "
    "produce a usable result, so a simpler rule-based selection stood in for it."
)
_WITHHELD_ANSWER = (
    "I could not put together a recommendation I can stand behind right now. Tell me what you "
    "are shopping for and your budget, and I will try again."
)

_MAX_EXPLORE = 4
_MAX_REPLENISH = 3


class ShopWorkflow:
    """The shop assistant as an explicit workflow over :class:`ShopServices`.

    ``model=None`` is the zero-model variant: every stage runs its code path, no model is
    called, and the response has ``stages=None`` and ``usage=None``; the trace is recorded all
    the same.
    """

    def __init__(
        self,
        model: ChatModel | None,
        services: ShopServices,
        *,
        max_loopbacks: int = 1,
        max_attempts: int = 2,
        canary: str | None = None,
        retry_backoff_s: float = 0.0,
    ) -> None:
        if max_loopbacks < 0:
            raise ValueError(f"max_loopbacks must be 0 or more, got {max_loopbacks}")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        if retry_backoff_s < 0:
            raise ValueError(f"retry_backoff_s cannot be negative, got {retry_backoff_s}")
        self._model = model
        self._services = services
        self._discovery = Discovery(services)
        self._max_loopbacks = max_loopbacks
        self._max_attempts = max_attempts
        self._canary = canary
        # Transport-level backoff belongs to the provider adapter; this only spaces the
        # stage's own logical retries, and is zero by default so offline runs never sleep.
        self._retry_backoff_s = retry_backoff_s

    @property
    def variant(self) -> str:
        return "zero-model" if self._model is None else "model"

    # -- entry point -----------------------------------------------------------------------

    async def answer(
        self, request: ShopRequest, *, record: WorkflowRecord | None = None
    ) -> SubjectResponse:
        """Run the graph once for ``request`` and return the screened answer with its evidence."""
        record = record if record is not None else WorkflowRecord()
        context = build_context(self._services, request)
        # An abstention runs every executor on its code path: nothing is asked of a model.
        use_model = self._model is not None and not context.abstain
        record.enter(INTEREST_MAPPER)

        mapping = await self._stage(
            record, INTEREST_MAPPER, self._mapper_payload(context), use_model
        )
        interests: list[dict[str, Any]] = mapping["interests"]
        record.follow(EDGE_INTERESTS_MAPPED)

        pool: dict[str, dict[str, Any]] = {}
        self._discovery.discover(context, interests, pool, gaps=None)
        record.follow(EDGE_CANDIDATES_READY)
        loopbacks = 0
        while True:
            verdict = await self._stage(
                record,
                COVERAGE_REVIEWER,
                {
                    "stage": COVERAGE_REVIEWER,
                    "visit": loopbacks + 1,
                    "interests": interests,
                    "candidates": list(pool.values()),
                    "loopbacks_left": self._max_loopbacks - loopbacks,
                },
                use_model,
            )
            gaps: list[dict[str, Any]] = verdict["gaps"]
            if not gaps or loopbacks >= self._max_loopbacks:
                break
            loopbacks += 1
            record.follow(EDGE_GAPS_REMAIN)
            self._discovery.discover(context, interests, pool, gaps=gaps)
            record.follow(EDGE_CANDIDATES_READY)
        record.follow(EDGE_APPROVED)

        candidates = list(pool.values())
        ranking = await self._stage(
            record,
            RANKER,
            {
                "stage": RANKER,
                "visit": 1,
                "interests": interests,
                "candidates": candidates,
                "max_explore": _MAX_EXPLORE,
                "max_replenish": _MAX_REPLENISH,
                "owned_durables": sorted(context.never_present),
            },
            use_model,
        )
        record.follow(EDGE_RANKED)

        presenter_payload = {
            "stage": PRESENTER,
            "visit": 1,
            "customer_name": context.persona.display_name if context.persona else None,
            "query": request.query,
            "abstain": context.abstain,
            "constraints_kept": list(self._restatements(context)),
            "picks": picks_payload(ranking, candidates),
            "partial": bool(gaps),
            "gaps": [g["interest"] for g in gaps],
        }
        presentation = await self._stage(
            record,
            PRESENTER,
            presenter_payload,
            use_model,
            check=lambda output: self._screen_problem(
                render_answer(output, presenter_payload), context
            ),
        )
        return self._respond(context, record, presentation, presenter_payload, loopbacks, gaps)

    # -- context and payloads ----------------------------------------------------------------
    def _restatements(self, context: RequestContext) -> tuple[str, ...]:
        phrases = list(context.constraints.restatements())
        if context.constraints.max_price_chf is None and context.budget_chf is not None:
            phrases.insert(0, f"within your CHF {context.budget_chf:.0f} budget")
        return tuple(phrases)

    def _mapper_payload(self, context: RequestContext) -> dict[str, Any]:
        interest_map = context.interest_map
        interests = []
        due = []
        if interest_map is not None:
            interests = [
                {
                    "department": i.department.value,
                    "label": i.label,
                    "weight": i.weight,
                    "evidence_skus": list(i.evidence_skus),
                    "contexts": list(i.contexts),
                }
                for i in interest_map.interests
            ]
            due = [
                {
                    "sku": d.sku,
                    "name": d.name,
                    "last_purchased": d.last_purchased.isoformat(),
                    "replenish_days": d.replenish_days,
                    "days_left": d.days_left,
                }
                for d in interest_map.consumables_due
            ]
        return {
            "stage": INTEREST_MAPPER,
            "visit": 1,
            "request": {
                "query": context.request.query,
                "turns": list(context.request.user_turns),
                "concrete": context.concrete,
            },
            "customer": {
                "name": context.persona.display_name if context.persona else None,
                "stated_interests": list(context.persona.interests) if context.persona else [],
            },
            "evidence": {"interests": interests, "consumables_due": due},
        }

    # -- model stages ------------------------------------------------------------------------

    async def _stage(
        self,
        record: WorkflowRecord,
        stage: str,
        payload: dict[str, Any],
        use_model: bool,
        *,
        check: StageCheck | None = None,
    ) -> dict[str, Any]:
        """One visit of a model stage: the model's usable output, or the code path's."""
        if not use_model or self._model is None:
            return stage_code_path(stage, payload)
        return await attempt_stage(
            self._model,
            record,
            stage,
            payload,
            max_attempts=self._max_attempts,
            retry_backoff_s=self._retry_backoff_s,
            canary=self._canary,
            check=check,
        )

    # -- the answer ----------------------------------------------------------------------------

    def _screen(self, answer: str, context: RequestContext) -> ScreenResult:
        return screen_answer(
            answer,
            catalogue=self._services.catalogue,
            owned_skus=context.purchased,
            system_prompt=STAGE_INSTRUCTIONS_TEXT,
            canary=self._canary,
        )

    def _screen_problem(self, answer: str, context: RequestContext) -> str | None:
        result = self._screen(answer, context)
        return (
            None if result.passed else "the answer screen blocked it: " + "; ".join(result.reasons)
        )

    def _respond(
        self,
        context: RequestContext,
        record: WorkflowRecord,
        presentation: Mapping[str, Any],
        presenter_payload: Mapping[str, Any],
        loopbacks: int,
        gaps: Sequence[Mapping[str, Any]],
    ) -> SubjectResponse:
        # Disclosed whenever a code path answered for a model; labelled by why it had to: a
        # content fallback is not a provider failure, and neither list names the other's stages.
        code_path_answered = any(v.code_path_answered for v in record.visits)
        fallback_stages = [
            v.stage for v in record.visits if v.census.status is StageStatus.FINAL_FALLBACK
        ]
        unrecovered = [v.stage for v in record.visits if v.census.status is StageStatus.UNRECOVERED]
        answer = render_answer(presentation, presenter_payload)
        if code_path_answered:
            answer = f"{answer}\n\n{FALLBACK_DISCLOSURE}"
        # The verdict on the Presenter's answer, before delivery: this is what is recorded, so
        # a blocked answer stays visible even though the customer gets the withheld notice.
        screen = self._screen(answer, context)
        withheld = not screen.passed
        if withheld:
            # Even the code path's answer was blocked: say nothing rather than something unsafe.
            answer = _WITHHELD_ANSWER
        # Handed over as recorded, not validated here: an impossible set (a stage twice, one
        # missing) is this workflow's defect, for the checks to measure as a failure, and
        # raising would make it look like an outage that left nothing to observe.
        censuses = record.stage_censuses()
        stages = tuple(censuses) if censuses else None
        # In the order the customer reads them; the Presenter's check admits only picked SKUs.
        presented = [] if withheld else list(screen.skus)
        model = self._model
        return SubjectResponse(
            answer=answer,
            tool_calls=(),
            trace=record.trace,
            usage=record.usage if stages is not None else None,
            stages=stages,
            structured={
                "architecture": "workflow",
                "variant": self.variant,
                "skus": presented,
                # What the Ranker handed the Presenter, lane by lane, to hold delivery against.
                "ranked": [
                    {"sku": p["sku"], "lane": p["lane"]} for p in presenter_payload["picks"]
                ],
                "abstained": context.abstain,
                "fallback_stages": sorted(set(fallback_stages), key=MODEL_STAGES.index),
                "unrecovered_stages": sorted(set(unrecovered), key=MODEL_STAGES.index),
                "partial": bool(gaps),
                "gaps": [g["interest"] for g in gaps],
                "loopbacks": loopbacks,
                "max_loopbacks": self._max_loopbacks,
                "screen": _screen_dict(screen),
                "withheld": withheld,
                "stage_visits": {
                    stage: [v.to_dict() for v in record.visits if v.stage == stage]
                    for stage in MODEL_STAGES
                    if record.visits_of(stage)
                },
            },
            provenance=(
                model.provenance.value
                if model is not None
                else Provenance.OFFLINE_DETERMINISTIC.value
            ),
        )


def _screen_dict(result: ScreenResult) -> dict[str, Any]:
    return {
        "status": result.status.value,
        "reasons": list(result.reasons),
        "skus": list(result.skus),
    }
