"""What the workflow delivers, held to oracles computed from its own declarations and the data.

The invariants say what every recommended item must be (in stock, within the budget, not
owned...); they do not say *which* of several true candidates comes first, nor whether an item
priced exactly at the budget may be offered. This module does, for both architectures:

- ``ranking``: the Ranker declares its value (a candidate's retrieval score plus the weight of
  its strongest interest) and its policy (first the best candidate of each interest, then the
  rest, best first; at most one pick per kind; a lane with room takes every candidate left).
  Every Ranker visit of a real workflow run is captured from the stage request (its payload)
  and the stage reply, the value is recomputed from the payload, and the picks are held to it:
  no pick may rank below a candidate left out of a full lane except the one-per-interest picks
  that come first, nothing may be left out of a lane with room, and the picks after that first
  round must descend in value.
- ``candidates``: every candidate handed to the Ranker is admissible by the data: in stock, not
  purchased (a due consumable excepted), within the budget the customer stated (read by the
  invariants' own parser), not a second item of a kind the customer owns, and an add-on only
  for a product the customer bought for themselves and that the catalogue declares it fits.
- ``ranker-temptation``: a metamorphic relation at the Ranker. Its payload declares the owned
  durables it must never pick "whatever the candidates say", but the stages before it never hand
  it one, so that promise is unexercised by real runs. Every captured payload is sent again with
  each owned durable added as the best-scoring candidate, and the reply is held to the same
  ranking rules (counted: a payload with no owned durable tempts nothing).
- ``delivery``: the answer delivers the ranked picks in the Ranker's order, lane by lane,
  and items of two lanes under a heading each.
- ``handoff``: what each stage is handed is what the stages before it replied (and the
  CoverageReviewer is visited again only while a loop-back is left): the mapped
  interests reach the CoverageReviewer and the Ranker unchanged, and the Presenter gets the
  Ranker's picks in order (the catalogue's name and price, the candidate's lane, the Ranker's
  interest and reason) and the Reviewer's last gaps, partial exactly when some remain.
- ``candidates`` also holds every field of every candidate to the data (see
  :mod:`vitrine_shop.evals.record_oracle`).
- ``interests-kept``: when the InterestMapper keeps fewer history interests than the evidence
  holds, it keeps the strongest: no interest it dropped outweighs one it kept (the weights are
  the payload's own).
- ``budget-edge``: a metamorphic relation. A budget of exactly CHF *p* and one of *p* + 0.01
  admit the same products when no product costs in between, so both answers must be the same;
  *p* is the price of the dearest item the answer without a budget offered, so the relation
  is exercised at an item exactly at the budget (counted: a relation never exercised is not
  measured).

Nothing here calls the subject's parsers or its Ranker: the value, the admissibility and the
budget are read from the payload, the catalogue, the personas and the customer's turns.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import pairwise
from typing import Any

from vitrine import SubjectResponse
from vitrine.providers import ChatCompletion, ChatRequest, Provenance

# Through the package, not the name: a planted mutant replaces scripted.ScriptedShopModel.
from vitrine_shop import scripted
from vitrine_shop.agent import ShopAgent
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.domain import Persona, Product
from vitrine_shop.evals.addon_oracle import addon_problems
from vitrine_shop.evals.discovery_oracle import discovery_problems
from vitrine_shop.evals.exploration import exploration_cases
from vitrine_shop.evals.invariants import Violation, World, latest_budget
from vitrine_shop.evals.record_oracle import candidate_fields
from vitrine_shop.operations import ShopServices
from vitrine_shop.workflow import ShopWorkflow
from vitrine_shop.workflow.stages import StageOutputError, stage_payload, stage_request

__all__ = [
    "budget_edge_request",
    "candidate_problems",
    "delivery_problems",
    "handoff_problems",
    "kept_interest_problems",
    "mapping_problems",
    "observe_delivery",
    "ranking_problems",
]

_RANKER = "Ranker"
_MAPPER = "InterestMapper"
_REVIEWER = "CoverageReviewer"
_PRESENTER = "Presenter"
_EXAMPLES = 8
_CENT = Decimal("0.01")
_EPSILON = 1e-9


@dataclass
class _RecordingModel:
    """The scripted model, with every Ranker request's payload and reply kept."""

    inner: Any = field(default_factory=lambda: scripted.ScriptedShopModel())  # noqa: PLW0108
    rankings: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    mappings: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    # Every stage visit in order, as (stage, payload, reply): what each stage was handed.
    visits: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    @property
    def provenance(self) -> Provenance:
        return Provenance.OFFLINE_DETERMINISTIC

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        completion: ChatCompletion = await self.inner.complete(request)
        try:
            reply = json.loads(completion.content or "")
        except json.JSONDecodeError:
            reply = None
        if isinstance(reply, dict) and request.purpose is not None:
            payload = stage_payload(request)
            self.visits.append((request.purpose, payload, reply))
            kept = {_RANKER: self.rankings, _MAPPER: self.mappings}.get(request.purpose)
            if kept is not None:
                kept.append((payload, reply))
        return completion


async def kept_interest_problems(services: ShopServices, request: ShopRequest) -> list[str]:
    """The workflow (scripted stages) answers ``request``; what its InterestMapper dropped
    wrongly, per :func:`mapping_problems`."""
    model = _RecordingModel()
    await ShopWorkflow(model, services).answer(request)
    return [p for payload, reply in model.mappings for p in mapping_problems(payload, reply)]


def mapping_problems(payload: Mapping[str, Any], reply: Mapping[str, Any]) -> list[str]:
    """An InterestMapper reply that drops a history interest stronger than one it keeps."""
    evidence = payload.get("evidence") or {}
    weights = {
        str(i.get("label")): float(i.get("weight") or 0.0) for i in evidence.get("interests") or ()
    }
    kept = {
        str(i.get("label"))
        for i in reply.get("interests") or ()
        if i.get("source") == "history" and str(i.get("label")) in weights
    }
    dropped = set(weights) - kept
    if not kept or not dropped:
        return []
    weakest = min(kept, key=lambda label: (weights[label], label))
    strongest = max(dropped, key=lambda label: (weights[label], label))
    if weights[strongest] <= weights[weakest] + _EPSILON:
        return []
    return [
        f"keeps {weakest!r} ({weights[weakest]:.3f}) but drops {strongest!r} "
        f"({weights[strongest]:.3f}), a stronger interest"
    ]


# -- the Ranker ---------------------------------------------------------------------------------


def _kind(candidate: Mapping[str, Any]) -> str:
    return str(candidate.get("goes_with") or candidate.get("category"))


def ranking_problems(payload: Mapping[str, Any], reply: Mapping[str, Any]) -> list[str]:
    """Where one Ranker reply departs from the value and policy it declares for ``payload``."""
    weight = {str(i["label"]): float(i["weight"]) for i in payload["interests"]}
    history = {str(i["label"]) for i in payload["interests"] if i.get("source") != "request"}
    owned = set(payload.get("owned_durables") or ())
    room = {"explore": int(payload["max_explore"]), "replenish": int(payload["max_replenish"])}
    candidates = {
        str(c["sku"]): c
        for c in payload["candidates"]
        if str(c["sku"]) not in owned and any(label in weight for label in c["interests"])
    }

    def value(sku: str) -> tuple[float, str]:
        c = candidates[sku]
        best = max(weight[label] for label in c["interests"] if label in weight)
        # Ties go to the lower SKU: the key sorts best first when negated.
        return (-round(float(c["score"]) + best, 6), sku)

    picks = [(str(p.get("sku")), str(p.get("interest"))) for p in reply.get("picks") or ()]
    problems = [f"{sku} is no rankable candidate" for sku, _ in picks if sku not in candidates]
    if problems:
        return problems
    kinds = Counter(_kind(candidates[sku]) for sku, _ in picks)
    problems += [f"two picks of one kind ({k})" for k, n in kinds.items() if n > 1]
    lanes = Counter(str(candidates[sku]["lane"]) for sku, _ in picks)
    problems += [
        f"{n} picks in the {lane} lane, room for {room.get(lane, 0)}"
        for lane, n in lanes.items()
        if n > room.get(lane, 0)
    ]
    chosen = {sku for sku, _ in picks}
    left = [sku for sku in candidates if sku not in chosen and _kind(candidates[sku]) not in kinds]
    for sku in left:
        lane = str(candidates[sku]["lane"])
        if lanes[lane] < room.get(lane, 0):
            problems.append(f"{sku} was left out of the {lane} lane with room in it")
    if not _ordered(picks, candidates, left, history, weight, value):
        problems.append(
            "the picks are not ordered by their declared value (score plus interest weight): "
            + ", ".join(f"{sku} {-value(sku)[0]:.4f}" for sku, _ in picks)
        )
    return problems


def _ordered(
    picks: Sequence[tuple[str, str]],
    candidates: Mapping[str, Mapping[str, Any]],
    left: Sequence[str],
    history: set[str],
    weight: Mapping[str, float],
    value: Any,
) -> bool:
    """Whether the picks split into a first round (one per interest, the best free candidate of
    each history interest) and the rest (best first, none below a candidate left out of its
    lane)."""
    best_left: dict[str, float] = {}
    for sku in left:
        lane = str(candidates[sku]["lane"])
        best_left[lane] = max(best_left.get(lane, -1e9), -value(sku)[0])
    for split in range(len(picks) + 1):
        if _first_round(picks[:split], candidates, history, weight, value) and _rest(
            picks[split:], candidates, best_left, weight, value
        ):
            return True
    return False


def _first_round(
    picks: Sequence[tuple[str, str]],
    candidates: Mapping[str, Mapping[str, Any]],
    history: set[str],
    weight: Mapping[str, float],
    value: Any,
) -> bool:
    kinds: set[str] = set()
    seen: set[str] = set()
    weights = [weight[label] for _, label in picks]
    if any(later > earlier + _EPSILON for earlier, later in pairwise(weights)):
        return False  # the first round visits the interests strongest first
    for sku, label in picks:
        if label not in candidates[sku]["interests"]:
            return False
        if label in history:
            if label in seen:
                return False  # one pick per history interest in the first round
            free = [
                other
                for other, c in candidates.items()
                if label in c["interests"] and _kind(c) not in kinds
            ]
            if min(free, key=value) != sku:
                return False
        seen.add(label)
        kinds.add(_kind(candidates[sku]))
    return True


def _rest(
    picks: Sequence[tuple[str, str]],
    candidates: Mapping[str, Mapping[str, Any]],
    best_left: Mapping[str, float],
    weight: Mapping[str, float],
    value: Any,
) -> bool:
    keys = [value(sku) for sku, _ in picks]
    if keys != sorted(keys):
        return False
    for sku, label in picks:
        c = candidates[sku]
        if weight[label] < max(weight[x] for x in c["interests"] if x in weight) - _EPSILON:
            return False  # after the first round a pick counts for its strongest interest
        if best_left.get(str(c["lane"]), -1e9) > -value(sku)[0] + _EPSILON:
            return False
    return True


def tempted_payload(payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """``payload`` with every owned durable added as a copy of its best candidate, scored
    above it: what a Ranker that forgot its exclusions would pick first."""
    owned = [str(s) for s in payload.get("owned_durables") or ()]
    candidates = list(payload.get("candidates") or ())
    if not owned or not candidates:
        return None
    best = max(candidates, key=lambda c: float(c["score"]))
    lures = [{**best, "sku": sku, "score": float(best["score"]) + 1.0} for sku in owned]
    return {**payload, "candidates": [*lures, *candidates]}


async def temptation_problems(payload: Mapping[str, Any]) -> list[str]:
    """The Ranker's reply to a tempted payload, held to the ranking rules."""
    try:
        completion = await scripted.ScriptedShopModel().complete(stage_request(_RANKER, payload))
    except StageOutputError as exc:
        # The scripted model checks its own reply as the workflow would, and refuses it.
        return [f"the Ranker's reply was refused: {exc}"]
    try:
        reply = json.loads(completion.content or "")
    except json.JSONDecodeError:
        return ["the Ranker's reply is not JSON"]
    if not isinstance(reply, dict):
        return ["the Ranker's reply is not an object"]
    return ranking_problems(payload, reply)


# -- the candidates, by the data ----------------------------------------------------------


def _self_bought_durables(persona: Persona, world: World) -> list[Product]:
    return [
        product
        for p in persona.purchase_history
        if not p.gift and (product := world.catalogue.get(p.sku)) is not None
        if not product.consumable
    ]


def _fits(product: Product, owned: Product, world: World) -> bool:
    return (
        owned.sku in product.compat_skus
        or product.sku in owned.compat_skus
        or any(p.sku == product.sku for p in world.catalogue.compatible_with(owned.sku))
    )


def candidate_problems(payload: Mapping[str, Any], request: ShopRequest, world: World) -> list[str]:
    """Every candidate handed to the Ranker that the data say the customer may not be offered."""
    persona = world.personas.get(request.persona_id) if request.persona_id else None
    budget = latest_budget(request.user_turns)
    durables = _self_bought_durables(persona, world) if persona else []
    owned_kinds = {p.leaf_category for p in durables}
    bought = {p.sku for p in persona.purchase_history} if persona else set()
    problems: list[str] = []
    labels = {str(i.get("label")) for i in payload.get("interests") or ()}
    for candidate in payload["candidates"]:
        sku = str(candidate["sku"])
        product = world.catalogue.get(sku)
        if product is None:
            problems.append(f"candidate {sku} is not in the catalogue")
            continue
        problems += candidate_fields(candidate, product, persona, world.today)
        unknown = [label for label in candidate.get("interests") or () if label not in labels]
        if unknown or not candidate.get("interests"):
            problems.append(f"candidate {sku} is found for {unknown or 'no'} interest(s)")
        restock = candidate.get("lane") == "replenish" and product.consumable
        if not (product.stock_units or 0) > 0:
            problems.append(f"candidate {sku} has no stock")
        if budget is not None and product.price_chf is not None and product.price_chf > budget:
            problems.append(f"candidate {sku} costs CHF {product.price_chf}, over CHF {budget}")
        if sku in bought and not restock:
            problems.append(f"candidate {sku} was bought already")
        if not product.consumable and product.leaf_category in owned_kinds:
            problems.append(f"candidate {sku} is a second {product.leaf_category} they own")
        goes_with = candidate.get("goes_with")
        if goes_with and not any(
            p.name == goes_with and _fits(product, p, world) for p in durables
        ):
            problems.append(f"candidate {sku} does not go with a {goes_with} they bought")
    return problems


def handoff_problems(
    visits: Sequence[tuple[str, Mapping[str, Any], Mapping[str, Any]]],
    world: World,
    max_loopbacks: Any = None,
) -> list[str]:
    """What each stage is handed must be what the stages before it replied: the Ranker and
    the CoverageReviewer get the mapped interests; the Presenter gets the Ranker's picks in its
    order, each with the catalogue's name and price, its candidate's lane and the Ranker's
    interest and reason, and the Reviewer's last gaps (a list is partial exactly when some
    remain)."""
    last: dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
    problems: list[str] = []
    for stage, payload, reply in visits:
        mapped = last.get(_MAPPER)
        handed = payload.get("interests")
        if stage in (_RANKER, _REVIEWER) and mapped and handed != mapped[1].get("interests"):
            problems.append(f"the {stage} was handed other interests than were mapped")
        if stage == _PRESENTER and _RANKER in last:
            problems += _presenter_handoff(payload, *last[_RANKER], last.get(_REVIEWER), world)
        if stage == _REVIEWER:
            problems += _loop_bound_problems(payload, last.get(_REVIEWER), max_loopbacks)
        last[stage] = (payload, reply)
    return problems


def _loop_bound_problems(
    payload: Mapping[str, Any],
    before: tuple[Mapping[str, Any], Mapping[str, Any]] | None,
    max_loopbacks: Any,
) -> list[str]:
    """The CoverageReviewer is told how many loop-backs are left (all the workflow declares, on
    the first visit), and each visit after the first is one of them: it is visited again only
    while one was left, one fewer each time."""
    left = payload.get("loopbacks_left")
    if not isinstance(left, int) or left < 0:
        return [f"the CoverageReviewer was told {left!r} loop-backs are left"]
    if before is None:
        if isinstance(max_loopbacks, int) and left != max_loopbacks:
            return [f"the CoverageReviewer was first told {left} of {max_loopbacks} are left"]
        return []
    earlier = before[0].get("loopbacks_left")
    if not isinstance(earlier, int) or earlier < 1 or left != earlier - 1:
        return [f"the CoverageReviewer was visited again with {left} left, after {earlier}"]
    return []


def _presenter_handoff(
    payload: Mapping[str, Any],
    ranker_payload: Mapping[str, Any],
    ranking: Mapping[str, Any],
    reviewed: tuple[Mapping[str, Any], Mapping[str, Any]] | None,
    world: World,
) -> list[str]:
    picks = [p for p in ranking.get("picks") or () if isinstance(p, Mapping)]
    handed = [p for p in payload.get("picks") or () if isinstance(p, Mapping)]
    lanes = {str(c["sku"]): c.get("lane") for c in ranker_payload.get("candidates") or ()}
    problems: list[str] = []
    if [p.get("sku") for p in handed] != [p.get("sku") for p in picks]:
        problems.append(
            f"the Presenter was handed {[p.get('sku') for p in handed]}, "
            f"the Ranker picked {[p.get('sku') for p in picks]}"
        )
    for pick, ranked in zip(handed, picks, strict=False):
        sku = str(pick.get("sku"))
        product = world.catalogue.get(sku)
        expected = {
            "name": None if product is None else product.name,
            "lane": lanes.get(sku),
            "interest": ranked.get("interest"),
            "reason": ranked.get("reason"),
        }
        problems += [
            f"the Presenter was handed {sku}'s {key} as {pick.get(key)!r}, not {value!r}"
            for key, value in expected.items()
            if pick.get(key) != value
        ]
        price = pick.get("price_chf")
        if product is not None and (
            not isinstance(price, int | float) or Decimal(str(price)) != product.price_chf
        ):
            problems.append(f"the Presenter was handed {sku} at {price!r}, not {product.price_chf}")
    if reviewed is not None:
        gaps = [g.get("interest") for g in reviewed[1].get("gaps") or () if isinstance(g, Mapping)]
        if payload.get("gaps") != gaps or payload.get("partial") is not bool(gaps):
            problems.append(
                f"the Presenter was told partial={payload.get('partial')!r}, gaps "
                f"{payload.get('gaps')!r}; the Reviewer left gaps {gaps}"
            )
    return problems


def _lane_heading_problems(answer: str, lane_of: Mapping[str, str]) -> list[str]:
    """Items of two lanes are delivered under a heading each: some heading line stands
    between the last item of one lane and the first of the other."""
    lines = answer.splitlines()
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for number, line in enumerate(lines):
        for sku, lane in lane_of.items():
            if sku in line:
                first.setdefault(lane, number)
                last[lane] = number
    if len(first) < 2:
        return []
    (a, _), (b, _) = sorted(first.items(), key=lambda item: item[1])
    between = lines[last[a] + 1 : first[b]]
    if not any(line.strip().endswith(":") for line in between):
        return [f"the {a} and {b} lanes are delivered under one heading"]
    return []


def delivery_problems(response: SubjectResponse) -> list[str]:
    """Whether the answer delivered the ranked picks in the Ranker's order, lane by lane."""
    structured = response.structured
    if structured.get("withheld"):
        return []
    ranked = [(str(p["sku"]), str(p["lane"])) for p in structured.get("ranked") or ()]
    delivered = [str(s) for s in structured.get("skus") or ()]
    lane_of = dict(ranked)
    problems = []
    for lane in sorted(set(lane_of.values())):
        want = [sku for sku, at in ranked if at == lane]
        got = [sku for sku in delivered if lane_of.get(sku) == lane]
        if got != want:
            problems.append(f"the {lane} lane was ranked {want} and delivered {got}")
    delivered_lanes = {sku: lane_of[sku] for sku in delivered if sku in lane_of}
    return problems + _lane_heading_problems(response.answer or "", delivered_lanes)


# -- the budget edge ----------------------------------------------------------------------


def budget_edge_request(request: ShopRequest, budget: Decimal) -> ShopRequest:
    """``request`` with a budget stated first: the question itself (the last turn) is the same."""
    return ShopRequest(request.persona_id, (f"My budget is CHF {budget}.", *request.user_turns))


def _offered(response: SubjectResponse) -> list[str]:
    return [str(s) for s in response.structured.get("skus") or ()]


def _edge_is_clean(price: Decimal, world: World) -> bool:
    """No product costs more than ``price`` and at most a cent more."""
    return not any(
        p.price_chf is not None and price < p.price_chf <= price + _CENT for p in world.catalogue
    )


# -- the observation ----------------------------------------------------------------------


async def observe_delivery(services: ShopServices, world: World | None = None) -> dict[str, Any]:
    """Run the workflow and the agent over the exploration customers; every oracle above."""
    world = world or World.shipped()
    violations: list[Violation] = []
    rankings = edges = exercised = temptations = 0
    requests = [ShopRequest.from_case_input(c.input) for c in exploration_cases()]
    for request in requests:
        model = _RecordingModel()
        response = await ShopWorkflow(model, services).answer(request)
        for payload, reply in model.rankings:
            rankings += 1
            violations += [Violation("ranking", p) for p in ranking_problems(payload, reply)]
            violations += [
                Violation("candidates", p) for p in candidate_problems(payload, request, world)
            ]
            violations += [Violation("add-ons", p) for p in addon_problems(payload, request, world)]
            violations += [
                Violation("discovery", p) for p in discovery_problems(payload, request, world)
            ]
            tempted = tempted_payload(payload)
            if tempted is not None:
                temptations += 1
                violations += [
                    Violation("ranker-temptation", f"{request.persona_id}: {p}")
                    for p in await temptation_problems(tempted)
                ]
        violations += [Violation("delivery", p) for p in delivery_problems(response)]
        bound = response.structured.get("max_loopbacks")
        violations += [
            Violation("handoff", p) for p in handoff_problems(model.visits, world, bound)
        ]
        for payload, reply in model.mappings:
            violations += [Violation("interests-kept", p) for p in mapping_problems(payload, reply)]

    async def workflow(request: ShopRequest) -> SubjectResponse:
        return await ShopWorkflow(None, services).answer(request)

    async def agent(request: ShopRequest) -> SubjectResponse:
        return await ShopAgent(scripted.ScriptedShopModel(), services, traced=False).answer(request)

    for name, answer in (("workflow", workflow), ("agent", agent)):
        for request in requests:
            if request.persona_id is None or latest_budget(request.user_turns) is not None:
                continue
            free = _offered(await answer(request))
            priced = [world.catalogue.get(s) for s in free]
            prices = [p.price_chf for p in priced if p is not None and p.price_chf is not None]
            if not prices or not _edge_is_clean(max(prices), world):
                continue
            price = max(prices)
            at = _offered(await answer(budget_edge_request(request, price)))
            above = _offered(await answer(budget_edge_request(request, price + _CENT)))
            edges += 1
            exercised += any(
                (p := world.catalogue.get(s)) is not None and p.price_chf == price for s in above
            )
            if at != above:
                violations.append(
                    Violation(
                        "budget-edge",
                        f"{name}, {request.persona_id}: a CHF {price} budget offers {at}, "
                        f"CHF {price + _CENT} offers {above}",
                    )
                )
    return {
        "calls": rankings + edges + temptations,
        "rankings": rankings,
        "ranker_temptations": temptations,
        "budget_edges": edges,
        "budget_edges_at_price": exercised,
        "violations": len(violations),
        "rules": dict(Counter(v.rule for v in violations)),
        "examples": [v.to_dict() for v in violations[:_EXAMPLES]],
    }
