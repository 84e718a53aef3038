"""The explicit workflow: the shop assistant as a fixed graph of five executors.

::

    InterestMapper --interests mapped--> Discovery --candidates ready--> CoverageReviewer
    CoverageReviewer --gaps remain--> Discovery                  (conditional loop-back, bounded)
    CoverageReviewer --approved / bounded partial--> Ranker --ranked--> Presenter

The graph is data (:data:`WORKFLOW_EXECUTORS`, :data:`WORKFLOW_EDGES`, :data:`LOOP_BACK_EDGES`)
and every run records the executors it visited and the edges it took; a transition that is not
an edge of the graph is refused, so the trace cannot describe a route the graph does not have.

InterestMapper, CoverageReviewer, Ranker and Presenter are model stages: they ask the
:class:`~vitrine.providers.ChatModel` for structured output (schemas and code paths in
:mod:`vitrine_shop.workflow.stages`). Discovery is retrieval in code over
:class:`~vitrine_shop.operations.ShopServices`; the workflow calls no tools, so its tool journal
is the empty tuple.

Degradation policy, per stage visit (at most ``max_attempts`` logical attempts):

- a usable reply ends the visit: ``measured`` on the first attempt, ``recovered`` after a
  failed one;
- a reply that is not JSON, violates the schema or references what the payload does not hold
  is *unusable*; a retryable provider error is retried; after the last attempt the stage's
  code path answers instead (``final_fallback``) and the answer says so;
- a non-retryable provider error, or running out of attempts on a provider error, leaves the
  stage ``unrecovered``. The customer still gets the code path's output, disclosed like a
  fallback: a provider outage should cost the customer quality, not an answer. The census
  does not call it a fallback, because the protocol keeps infrastructure failure apart from
  content degradation, and either way the live quality observation is not measured;
- a cancellation is recorded (``cancelled``) in the caller's :class:`WorkflowRecord` and
  re-raised: a cancelled run returns nothing.

A stage that is visited twice (CoverageReviewer after a loop-back) gets one census per visit,
all kept in ``structured["stage_visits"]``. A census describes one run of attempts, so two
visits cannot be summed into one; ``stages`` carries, per stage, the census of its worst visit
(cancelled > unrecovered > final fallback > recovered > measured, the later visit on a tie), so
no degradation is hidden by a later, healthier visit.

``structured["ranked"]`` records what the Ranker handed the Presenter (SKU and lane), and
``structured["screen"]`` the screen's verdict on the Presenter's answer *before* delivery: an
answer the screen blocked stays visible as blocked, although the customer gets the withheld
notice instead (``withheld``), so delivery can be checked against both.

A request is first searched where the customer shops (their strongest interest's department);
the CoverageReviewer sends Discovery back when something the request asks for is not among
the candidates, and the loop-back searches every department for that need alone.

Customers with no usable evidence and a request that names nothing the shop sells get an
abstention with questions, decided in code before any model call: there is nothing for a model
to map, and a model asked anyway could only invent. Such a run visits every executor on its
code path and, having called no model, reports ``stages=None``. Products of the sensitive
department are never candidates, whatever the request.

Layout: :mod:`~vitrine_shop.workflow.graph` (the graph and a run's record),
:mod:`~vitrine_shop.workflow.context` (what is known before the first stage),
:mod:`~vitrine_shop.workflow.discovery` (retrieval), :mod:`~vitrine_shop.workflow.attempts`
(the attempts of one stage visit), :mod:`~vitrine_shop.workflow.stages` (the four model stages)
and :mod:`~vitrine_shop.workflow.shop_workflow` (the executors in order).
"""

from __future__ import annotations

from vitrine_shop.workflow.graph import (
    DISCOVERY,
    EDGE_APPROVED,
    EDGE_CANDIDATES_READY,
    EDGE_GAPS_REMAIN,
    EDGE_INTERESTS_MAPPED,
    EDGE_RANKED,
    LOOP_BACK_EDGES,
    WORKFLOW_EDGES,
    WORKFLOW_EXECUTORS,
    StageVisit,
    WorkflowEdge,
    WorkflowRecord,
)
from vitrine_shop.workflow.shop_workflow import FALLBACK_DISCLOSURE, ShopWorkflow
from vitrine_shop.workflow.stages import MODEL_STAGES

__all__ = [
    "DISCOVERY",
    "EDGE_APPROVED",
    "EDGE_CANDIDATES_READY",
    "EDGE_GAPS_REMAIN",
    "EDGE_INTERESTS_MAPPED",
    "EDGE_RANKED",
    "FALLBACK_DISCLOSURE",
    "LOOP_BACK_EDGES",
    "MODEL_STAGES",
    "WORKFLOW_EDGES",
    "WORKFLOW_EXECUTORS",
    "ShopWorkflow",
    "StageVisit",
    "WorkflowEdge",
    "WorkflowRecord",
]
