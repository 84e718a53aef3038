"""The four model stages of the shop workflow: payloads, output schemas and code paths.

Every model stage of :mod:`vitrine_shop.workflow` (InterestMapper, CoverageReviewer, Ranker,
Presenter) is defined here as data plus pure functions, so that three callers share one truth:

- the workflow asks a model for the stage's output (:func:`stage_request`) and judges whether
  the reply is usable (:func:`parse_stage_output`);
- when the model is absent (the zero-model variant) or its replies stay unusable, the workflow
  runs the stage's deterministic code path (:func:`stage_code_path`);
- the offline scripted model answers a stage request with that same code path
  (:mod:`vitrine_shop.scripted.workflow_policy`), so offline runs cross the real
  request/parse/validate plumbing instead of a shortcut around it.

Discovery, the fifth executor, is retrieval in code and has no schema.

Request format
--------------
A stage request has two messages: a system message (the stage's instructions, plus the
caller's canary line when one is set) and a user message whose content is the stage payload
as JSON text. ``purpose`` is the stage name itself; ``metadata`` holds ``stage`` and
``visit`` (1 for the first visit, 2 after a loop-back, ...). ``response_format`` carries the
stage's JSON schema (:data:`STAGE_SCHEMAS`).

Payload format (the JSON object in the last user message)
---------------------------------------------------------
Every payload has ``"stage"`` (the stage name) and ``"visit"`` (int). Then, per stage:

InterestMapper
    ``request``: ``{"query": str, "turns": [str], "concrete": bool}`` where ``concrete`` says
    whether the request names something the catalogue sells; ``customer``:
    ``{"name": str | null, "stated_interests": [str]}``; ``evidence``: ``{"interests":
    [{"department": slug, "label": str, "weight": float, "evidence_skus": [sku],
    "contexts": [str]}], "consumables_due": [{"sku", "name", "last_purchased", "replenish_days",
    "days_left"}]}``. Gifts and the sensitive department never reach the payload.
CoverageReviewer
    ``interests``: the mapped interests (as the InterestMapper schema); ``candidates``:
    ``[candidate]`` (below); ``loopbacks_left``: int.
Ranker
    ``interests`` and ``candidates`` as above; ``max_explore`` and ``max_replenish``: ints;
    ``owned_durables``: [sku] (never to be picked, whatever the candidates say).
Presenter
    ``customer_name``: str | null; ``query``: str; ``abstain``: bool (no evidence and no
    concrete request: ask, do not recommend); ``constraints_kept``: [str] (how the answer
    restates each constraint it honoured); ``picks``: ``[{"sku", "name", "price_chf", "lane",
    "interest", "reason"}]``; ``partial``: bool; ``gaps``: [interest label].

A candidate is ``{"sku", "name", "department", "category", "contexts": [str], "price_chf",
"lane": "explore" | "replenish",
"interests": [label], "score": float, "goes_with": str | null, "due": {"last_purchased",
"replenish_days", "days_left"} | null}``. Candidates never include a durable the customer
already owns; a consumable they own appears only in the replenish lane.
"""

from vitrine_shop.workflow.stages.code_paths import stage_code_path
from vitrine_shop.workflow.stages.messages import (
    STAGE_INSTRUCTIONS_TEXT,
    StageOutputError,
    parse_stage_output,
    stage_of,
    stage_payload,
    stage_request,
)
from vitrine_shop.workflow.stages.presentation import picks_payload, render_answer
from vitrine_shop.workflow.stages.schemas import (
    COVERAGE_REVIEWER,
    INTEREST_MAPPER,
    MODEL_STAGES,
    PRESENTER,
    RANKER,
    STAGE_SCHEMAS,
    CoverageGap,
    CoverageVerdict,
    InterestMapping,
    MappedInterest,
    Presentation,
    PresentedItem,
    RankedPick,
    Ranking,
)

__all__ = [
    "COVERAGE_REVIEWER",
    "INTEREST_MAPPER",
    "MODEL_STAGES",
    "PRESENTER",
    "RANKER",
    "STAGE_INSTRUCTIONS_TEXT",
    "STAGE_SCHEMAS",
    "CoverageGap",
    "CoverageVerdict",
    "InterestMapping",
    "MappedInterest",
    "Presentation",
    "PresentedItem",
    "RankedPick",
    "Ranking",
    "StageOutputError",
    "parse_stage_output",
    "picks_payload",
    "render_answer",
    "stage_code_path",
    "stage_of",
    "stage_payload",
    "stage_request",
]
