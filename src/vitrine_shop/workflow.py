"""The explicit workflow: the shop assistant as a fixed graph of five executors.

::

    InterestMapper --interests mapped--> Discovery --candidates ready--> CoverageReviewer
    CoverageReviewer --gaps remain--> Discovery                  (conditional loop-back, bounded)
    CoverageReviewer --approved / bounded partial--> Ranker --ranked--> Presenter

The graph is data (:data:`WORKFLOW_EXECUTORS`, :data:`WORKFLOW_EDGES`, :data:`LOOP_BACK_EDGES`)
and every run records the executors it visited and the edges it took; a transition that is not
an edge of the graph is refused, so the trace cannot describe a route the graph does not have.

InterestMapper, CoverageReviewer, Ranker and Presenter are model stages: they ask the
:class:`~vitrine.providers.base.ChatModel` for structured output (schemas and code paths in
:mod:`vitrine_shop.workflow_stages`). Discovery is retrieval in code over
:class:`~vitrine_shop.services.ShopServices`; the workflow calls no tools, so its tool journal
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
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from vitrine.bench.response import (
    AttemptOutcome,
    StageAttemptCensus,
    StageStatus,
    SubjectResponse,
    TokenUsage,
    WorkflowTrace,
    validate_stage_set,
)
from vitrine.providers.base import ChatModel, Provenance, ProviderError, ProviderFailure
from vitrine.redact import sanitize_text
from vitrine_shop.catalogue import Catalogue
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.domain import Persona, Product
from vitrine_shop.interests import InterestMap
from vitrine_shop.memory import Constraints, extract_constraints
from vitrine_shop.screen import ScreenResult, screen_answer
from vitrine_shop.services import SearchHit, ShopServices
from vitrine_shop.workflow_stages import (
    COVERAGE_REVIEWER,
    INTEREST_MAPPER,
    MODEL_STAGES,
    PRESENTER,
    RANKER,
    STAGE_INSTRUCTIONS_TEXT,
    StageOutputError,
    parse_stage_output,
    picks_payload,
    render_answer,
    stage_code_path,
    stage_request,
)

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

DISCOVERY = "Discovery"
WORKFLOW_EXECUTORS: tuple[str, ...] = (
    INTEREST_MAPPER,
    DISCOVERY,
    COVERAGE_REVIEWER,
    RANKER,
    PRESENTER,
)

EDGE_INTERESTS_MAPPED = "interests mapped"
EDGE_CANDIDATES_READY = "candidates ready"
EDGE_GAPS_REMAIN = "gaps remain"
EDGE_APPROVED = "approved / bounded partial"
EDGE_RANKED = "ranked"


@dataclass(frozen=True, slots=True)
class WorkflowEdge:
    """A directed edge; a conditional edge is taken only when its guard holds."""

    source: str
    target: str
    label: str
    conditional: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "label": self.label,
            "conditional": self.conditional,
        }


WORKFLOW_EDGES: tuple[WorkflowEdge, ...] = (
    WorkflowEdge(INTEREST_MAPPER, DISCOVERY, EDGE_INTERESTS_MAPPED),
    WorkflowEdge(DISCOVERY, COVERAGE_REVIEWER, EDGE_CANDIDATES_READY),
    # Guarded by the reviewer's verdict and by the loop bound.
    WorkflowEdge(COVERAGE_REVIEWER, DISCOVERY, EDGE_GAPS_REMAIN, conditional=True),
    # The default exit: "approved" when coverage is complete, "bounded partial" when the loop
    # bound was reached with gaps left.
    WorkflowEdge(COVERAGE_REVIEWER, RANKER, EDGE_APPROVED),
    WorkflowEdge(RANKER, PRESENTER, EDGE_RANKED),
)

# An edge loops back when it leads to an executor that comes earlier in the pipeline.
LOOP_BACK_EDGES: tuple[WorkflowEdge, ...] = tuple(
    edge
    for edge in WORKFLOW_EDGES
    if WORKFLOW_EXECUTORS.index(edge.target) <= WORKFLOW_EXECUTORS.index(edge.source)
)

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
_SEARCH_LIMIT = 4
_LOOPBACK_SEARCH_LIMIT = 6
_COMPLEMENTS_PER_INTEREST = 3

_SEVERITY: Mapping[StageStatus, int] = {
    StageStatus.MEASURED: 0,
    StageStatus.RECOVERED: 1,
    StageStatus.FINAL_FALLBACK: 2,
    StageStatus.UNRECOVERED: 3,
    StageStatus.CANCELLED: 4,
}

# Words that say nothing about what to buy. A request made only of these (and words the
# catalogue never uses) names no need the shop could search for.
_GENERIC_WORDS = frozenset(
    {
        "the",
        "and",
        "for",
        "you",
        "your",
        "what",
        "which",
        "with",
        "this",
        "that",
        "from",
        "have",
        "would",
        "could",
        "should",
        "like",
        "anything",
        "something",
        "recommend",
        "suggest",
        "new",
        "pick",
        "week",
        "things",
        "thing",
        "stuff",
        "some",
        "any",
        "good",
        "best",
        "nice",
        "buy",
        "buying",
        "get",
        "want",
        "need",
        "lately",
        "been",
        "surprise",
        "hello",
        "please",
    }
)
_WORD = re.compile(r"[a-zà-ÿ]{3,}")


# ----------------------------------------------------------------------------------------------
# The run record.
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StageVisit:
    """One visit of a model stage: its attempt census and whether the code path answered."""

    stage: str
    visit: int
    census: StageAttemptCensus
    code_path_answered: bool
    problems: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "visit": self.visit,
            **self.census.to_dict(),
            "code_path_answered": self.code_path_answered,
            "problems": list(self.problems),
        }


@dataclass(slots=True)
class WorkflowRecord:
    """Evidence accumulated while a run is in flight.

    Pass one to :meth:`ShopWorkflow.answer` to keep the evidence of a run that does not return
    (a cancellation, a failure): what happened up to that point is here.
    """

    executors: list[str] = field(default_factory=list)
    route: list[str] = field(default_factory=list)
    visits: list[StageVisit] = field(default_factory=list)
    usage: TokenUsage | None = None

    def enter(self, executor: str) -> None:
        if self.executors:
            raise RuntimeError("a run enters the graph once; later executors follow edges")
        if executor != WORKFLOW_EXECUTORS[0]:
            raise RuntimeError(f"a run starts at {WORKFLOW_EXECUTORS[0]}, not {executor}")
        self.executors.append(executor)

    def follow(self, label: str) -> None:
        """Take the edge ``label`` out of the current executor; refused if there is none."""
        current = self.executors[-1] if self.executors else None
        for edge in WORKFLOW_EDGES:
            if edge.source == current and edge.label == label:
                self.route.append(label)
                self.executors.append(edge.target)
                return
        raise RuntimeError(f"the workflow graph has no edge {label!r} out of {current}")

    def add_usage(self, usage: TokenUsage | None) -> None:
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage

    def visits_of(self, stage: str) -> int:
        return sum(v.stage == stage for v in self.visits)

    @property
    def trace(self) -> WorkflowTrace:
        return WorkflowTrace(tuple(self.executors), tuple(self.route))

    def stage_censuses(self) -> tuple[StageAttemptCensus, ...]:
        """One census per stage that ran: its worst visit (see the module docstring)."""
        worst: dict[str, StageVisit] = {}
        for visit in self.visits:
            held = worst.get(visit.stage)
            if held is None or _SEVERITY[visit.census.status] >= _SEVERITY[held.census.status]:
                worst[visit.stage] = visit
        return tuple(worst[stage].census for stage in MODEL_STAGES if stage in worst)


# ----------------------------------------------------------------------------------------------
# What is known before the first stage runs.
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Context:
    request: ShopRequest
    persona: Persona | None
    interest_map: InterestMap | None
    purchased: frozenset[str]  # gifts included: a gift is not to be recommended back either
    never_present: frozenset[str]  # purchased, except the customer's own consumables
    own_durables: frozenset[str]  # bought for themselves: their add-ons are fair suggestions
    owned_kinds: frozenset[str]  # leaf categories of own durables: a second one is a substitute
    excluded: frozenset[str]  # never an exploration candidate: purchased or sensitive
    constraints: Constraints
    budget_chf: Decimal | None
    concrete: bool

    @property
    def has_evidence(self) -> bool:
        return self.interest_map is not None and not self.interest_map.is_empty

    @property
    def abstain(self) -> bool:
        return not self.has_evidence and not self.concrete


@functools.cache
def _vocabulary(catalogue: Catalogue) -> frozenset[str]:
    """Words the catalogue uses for what it sells: names, categories, tags, departments."""
    words: set[str] = set()
    for product in catalogue:
        for text in (product.name, *product.category_path, *product.tags):
            words.update(_WORD.findall(text.casefold()))
    return frozenset(words - _GENERIC_WORDS)


def _names_a_need(turns: Iterable[str], catalogue: Catalogue) -> bool:
    vocabulary = _vocabulary(catalogue)
    return any(word in vocabulary for turn in turns for word in _WORD.findall(turn.casefold()))


def _profile_budget(persona: Persona | None) -> Decimal | None:
    raw = (persona.constraints.get("budget_chf") if persona else None) or ""
    try:
        return Decimal(raw.strip()) if raw.strip() else None
    except ArithmeticError:
        return None


def _product_text(product: Product) -> str:
    specs = " ".join(f"{k} {v}" for k, v in product.specs.items())
    return f"{product.name} {' '.join(product.tags)} {specs} {product.description}"


# ----------------------------------------------------------------------------------------------
# The workflow.
# ----------------------------------------------------------------------------------------------


StageCheck = Callable[[dict[str, Any]], str | None]


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
        context = self._context(request)
        # An abstention runs every executor on its code path: nothing is asked of a model.
        use_model = self._model is not None and not context.abstain
        record.enter(INTEREST_MAPPER)

        mapping = await self._stage(
            record, INTEREST_MAPPER, self._mapper_payload(context), use_model
        )
        interests: list[dict[str, Any]] = mapping["interests"]
        record.follow(EDGE_INTERESTS_MAPPED)

        pool: dict[str, dict[str, Any]] = {}
        self._discover(context, interests, pool, gaps=None)
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
            self._discover(context, interests, pool, gaps=gaps)
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

    def _context(self, request: ShopRequest) -> _Context:
        services = self._services
        persona = services.persona(request.persona_id) if request.persona_id else None
        interest_map = services.interest_map(persona.id) if persona else None
        purchased = persona.purchased_skus if persona else frozenset()
        # Restocking a consumable the customer uses is welcome; anything else bought (for
        # themselves or as a gift) is not to be presented again.
        own_durables = services.owned_durables(persona.id) if persona else frozenset()
        own_consumables = persona.owned_skus - own_durables if persona else frozenset()
        sensitive = {p.sku for p in services.catalogue if p.department.sensitive}
        constraints = extract_constraints(request.user_turns)
        # What the customer says in the conversation overrides the budget on their profile.
        budget = constraints.max_price_chf or _profile_budget(persona)
        return _Context(
            request=request,
            persona=persona,
            interest_map=interest_map,
            purchased=purchased,
            never_present=purchased - own_consumables,
            own_durables=own_durables,
            owned_kinds=frozenset(
                p.leaf_category for sku in own_durables if (p := services.product(sku)) is not None
            ),
            excluded=purchased | sensitive,
            constraints=constraints,
            budget_chf=budget,
            concrete=_names_a_need(request.user_turns, services.catalogue),
        )

    def _restatements(self, context: _Context) -> tuple[str, ...]:
        phrases = list(context.constraints.restatements())
        if context.constraints.max_price_chf is None and context.budget_chf is not None:
            phrases.insert(0, f"within your CHF {context.budget_chf:.0f} budget")
        return tuple(phrases)

    def _mapper_payload(self, context: _Context) -> dict[str, Any]:
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

    # -- Discovery: retrieval in code --------------------------------------------------------

    def _admissible(self, context: _Context, product: Product) -> bool:
        if product.sku in context.excluded or not product.in_stock:
            return False
        if not product.consumable and product.leaf_category in context.owned_kinds:
            return False
        if context.budget_chf is not None and product.price_chf > context.budget_chf:
            return False
        return context.constraints.admits(price_chf=product.price_chf, text=_product_text(product))

    def _search(
        self, context: _Context, query: str, department: str | None, limit: int
    ) -> list[SearchHit]:
        hits = self._services.search(
            query,
            limit=limit,
            department=department,
            max_price_chf=float(context.budget_chf) if context.budget_chf is not None else None,
            in_stock_only=True,
            exclude_skus=context.excluded,
        )
        return [hit for hit in hits if self._admissible(context, hit.product)]

    def _discover(
        self,
        context: _Context,
        interests: Sequence[Mapping[str, Any]],
        pool: dict[str, dict[str, Any]],
        *,
        gaps: Sequence[Mapping[str, Any]] | None,
    ) -> None:
        """Add candidates to ``pool``: every interest on the first visit, only gaps after.

        A loop-back widens the search: the reviewer's query, every department, more results.
        """
        by_label = {i["label"]: i for i in interests}
        if gaps is None:
            for interest in interests:
                self._discover_interest(context, interest, pool)
            return
        for gap in gaps:
            interest = by_label[gap["interest"]]
            for hit in self._search(context, gap["search_query"], None, _LOOPBACK_SEARCH_LIMIT):
                self._add(pool, hit.product, interest, hit.score, lane="explore")

    def _discover_interest(
        self, context: _Context, interest: Mapping[str, Any], pool: dict[str, dict[str, Any]]
    ) -> None:
        if interest["source"] == "replenishment":
            due = {
                d.sku: d
                for d in (context.interest_map.consumables_due if context.interest_map else ())
            }
            for sku in interest["evidence_skus"]:
                product = self._services.product(sku)
                item = due.get(sku)
                # A due consumable may be bought again, so it bypasses the purchased exclusion,
                # but never the sensitive department, the stock or the customer's constraints.
                if product is None or item is None or product.department.sensitive:
                    continue
                if not product.in_stock or not self._within(context, product):
                    continue
                self._add(
                    pool,
                    product,
                    interest,
                    1.0,
                    lane="replenish",
                    due={
                        "last_purchased": item.last_purchased.isoformat(),
                        "replenish_days": item.replenish_days,
                        "days_left": item.days_left,
                    },
                )
            return
        for hit in self._search(
            context, interest["search_query"], interest["department"], _SEARCH_LIMIT
        ):
            self._add(pool, hit.product, interest, hit.score, lane="explore")
        # Declared add-ons for what the customer owns connect their history to new products.
        added = 0
        for sku in interest["evidence_skus"]:
            owned = self._services.product(sku) if sku in context.own_durables else None
            if owned is None:
                continue
            for hit in self._services.complements(sku, limit=8):
                if added >= _COMPLEMENTS_PER_INTEREST:
                    return
                if hit.match == "compat" and self._admissible(context, hit.product):
                    self._add(
                        pool, hit.product, interest, hit.score, lane="explore", goes_with=owned.name
                    )
                    added += 1

    def _within(self, context: _Context, product: Product) -> bool:
        return context.budget_chf is None or product.price_chf <= context.budget_chf

    @staticmethod
    def _add(
        pool: dict[str, dict[str, Any]],
        product: Product,
        interest: Mapping[str, Any],
        score: float,
        *,
        lane: str,
        goes_with: str | None = None,
        due: Mapping[str, Any] | None = None,
    ) -> None:
        held = pool.get(product.sku)
        if held is None:
            pool[product.sku] = {
                "sku": product.sku,
                "name": product.name,
                "department": product.department.display_name,
                "category": product.leaf_category,
                "contexts": list(product.contexts),
                "price_chf": float(product.price_chf),
                "lane": lane,
                "interests": [interest["label"]],
                "score": round(float(score), 4),
                "goes_with": goes_with,
                "due": dict(due) if due else None,
            }
            return
        if interest["label"] not in held["interests"]:
            held["interests"].append(interest["label"])
        held["score"] = max(held["score"], round(float(score), 4))
        held["goes_with"] = held["goes_with"] or goes_with

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
        model = self._model
        visit = int(payload["visit"])
        request = stage_request(stage, payload, canary=self._canary)
        outcomes: list[AttemptOutcome] = []
        problems: list[str] = []

        def close(*, code_path: bool, fell_back: bool) -> None:
            census = StageAttemptCensus.from_attempts(stage, outcomes, fell_back=fell_back)
            record.visits.append(StageVisit(stage, visit, census, code_path, tuple(problems)))

        for _ in range(self._max_attempts):
            try:
                completion = await model.complete(request)
            except asyncio.CancelledError:
                outcomes.append(AttemptOutcome.CANCELLED)
                close(code_path=False, fell_back=False)
                raise
            except ProviderError as exc:
                if exc.failure is ProviderFailure.CANCELLED:
                    outcomes.append(AttemptOutcome.CANCELLED)
                    problems.append(f"provider failure: {exc.failure.value}")
                    close(code_path=False, fell_back=False)
                    raise
                outcomes.append(AttemptOutcome.PROVIDER_FAILURE)
                problems.append(f"provider failure: {exc.failure.value}")
                if not exc.retryable:
                    break
                if self._retry_backoff_s:
                    await asyncio.sleep(self._retry_backoff_s)
                continue
            record.add_usage(completion.usage)
            try:
                output = self._usable(
                    stage, completion.content, completion.tool_calls, payload, check
                )
            except StageOutputError as exc:
                outcomes.append(AttemptOutcome.UNUSABLE)
                problems.append(sanitize_text(str(exc)))
                continue
            outcomes.append(AttemptOutcome.USABLE)
            close(code_path=False, fell_back=False)
            return output
        # No usable reply. A run of attempts that ended on the provider is unrecovered; one
        # that ended on an unusable reply is a content fallback. The customer gets the code
        # path's output in both cases (see the module docstring).
        close(code_path=True, fell_back=outcomes[-1] is AttemptOutcome.UNUSABLE)
        return stage_code_path(stage, payload)

    @staticmethod
    def _usable(
        stage: str,
        content: str | None,
        tool_calls: Sequence[object],
        payload: Mapping[str, Any],
        check: StageCheck | None,
    ) -> dict[str, Any]:
        if tool_calls:
            raise StageOutputError(f"{stage}: asked for a tool call; workflow stages offer none")
        output = parse_stage_output(stage, content, payload)
        problem = check(output) if check else None
        if problem:
            raise StageOutputError(f"{stage}: {problem}")
        return output

    # -- the answer ----------------------------------------------------------------------------

    def _screen(self, answer: str, context: _Context) -> ScreenResult:
        return screen_answer(
            answer,
            catalogue=self._services.catalogue,
            owned_skus=context.purchased,
            system_prompt=STAGE_INSTRUCTIONS_TEXT,
            canary=self._canary,
        )

    def _screen_problem(self, answer: str, context: _Context) -> str | None:
        result = self._screen(answer, context)
        return (
            None if result.passed else "the answer screen blocked it: " + "; ".join(result.reasons)
        )

    def _respond(
        self,
        context: _Context,
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
        censuses = record.stage_censuses()
        stages = validate_stage_set(censuses, required=MODEL_STAGES) if censuses else None
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
