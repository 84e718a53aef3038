"""Mutants of the shop's workflow side: its stages, its router, its data loading, its report.

Each mutant swaps one function of a real producer for a faulty twin while it is planted: a
stage's code path (the scripted model answers with the same code path, so both workflow
variants carry the bug), a method of the workflow, the catalogue loader, or the harness's
report arithmetic. Nothing on disk changes. Loaded data is cached per process, so a plant
clears those caches on the way in and on the way out: the defect must reach every consumer,
and must leave none behind.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from decimal import Decimal
from typing import Any
from unittest import mock

from vitrine import stats
from vitrine.mutants import Mutant
from vitrine.runs import PairOutcome
from vitrine_shop import arms, catalogue, memory, personas, scenarios
from vitrine_shop.domain import Department, Product
from vitrine_shop.evals import benchmarks
from vitrine_shop.workflow import context as request_context, discovery, shop_workflow, stages
from vitrine_shop.workflow.stages import code_paths

__all__ = ["WORKFLOW_MUTANTS"]

StageCode = Callable[[Mapping[str, Any]], dict[str, Any]]


def _clear_loaded_data() -> None:
    """Forget every per-process cache that holds loaded shop data or what was built from it."""

    for cached in (
        catalogue._load_default,
        personas._load_default,
        scenarios._load_default,
        arms.shared_services,
        benchmarks.canonical_definition,
        request_context._vocabulary,
    ):
        cached.cache_clear()


@contextmanager
def _planted(*patches: Any) -> Iterator[None]:
    with ExitStack() as stack:
        _clear_loaded_data()
        stack.callback(_clear_loaded_data)
        for patch in patches:
            stack.enter_context(patch)
        yield


def _mutant(
    mutant_id: str,
    component: str,
    description: str,
    patches: Callable[[], tuple[Any, ...]],
    killers: tuple[str, ...],
    *,
    must_kill: bool = True,
) -> Mutant:
    return Mutant(
        mutant_id,
        component,
        description,
        lambda: _planted(*patches()),
        expected_killers=killers,
        must_kill=must_kill,
    )


# --- stage code paths ---------------------------------------------------------------------------


def _stage(stage: str, twin: Callable[[StageCode], StageCode]) -> Callable[[], tuple[Any, ...]]:
    def patches() -> tuple[Any, ...]:
        healthy = code_paths._CODE_PATHS[stage]
        return (mock.patch.dict(code_paths._CODE_PATHS, {stage: twin(healthy)}),)

    return patches


def _history_only(healthy: StageCode) -> StageCode:
    def mapped(payload: Mapping[str, Any]) -> dict[str, Any]:
        out = healthy(payload)
        return {"interests": [i for i in out["interests"] if i["source"] == "history"]}

    return mapped


def _always_covered(healthy: StageCode) -> StageCode:
    del healthy
    return lambda payload: {"covered": True, "gaps": []}


def _reversed_ranking(healthy: StageCode) -> StageCode:
    def ranked(payload: Mapping[str, Any]) -> dict[str, Any]:
        return {"picks": list(reversed(healthy(payload)["picks"]))}

    return ranked


def _no_restock(healthy: StageCode) -> StageCode:
    def ranked(payload: Mapping[str, Any]) -> dict[str, Any]:
        lanes = {c["sku"]: c["lane"] for c in payload["candidates"]}
        return {"picks": [p for p in healthy(payload)["picks"] if lanes[p["sku"]] != "replenish"]}

    return ranked


def _picks_owned(healthy: StageCode) -> StageCode:
    def ranked(payload: Mapping[str, Any]) -> dict[str, Any]:
        return healthy({**payload, "owned_durables": []})

    return ranked


# --- the workflow's own methods -----------------------------------------------------------------


def _without_loopback() -> tuple[Any, ...]:
    healthy = shop_workflow.ShopWorkflow.__init__

    @functools.wraps(healthy)
    def init(self: shop_workflow.ShopWorkflow, *args: Any, **kwargs: Any) -> None:
        healthy(self, *args, **{**kwargs, "max_loopbacks": 0})

    return (mock.patch.object(shop_workflow.ShopWorkflow, "__init__", init),)


def _discovery_ignores_request() -> tuple[Any, ...]:
    healthy = discovery.Discovery.discover

    def discover(
        self: discovery.Discovery,
        context: Any,
        interests: Any,
        pool: dict[str, dict[str, Any]],
        *,
        gaps: Any,
    ) -> None:
        kept = [i for i in interests if i["source"] != "request"]
        labels = {i["label"] for i in kept}
        chosen = None if gaps is None else [g for g in gaps if g["interest"] in labels]
        healthy(self, context, kept, pool, gaps=chosen)

    return (mock.patch.object(discovery.Discovery, "discover", discover),)


def _loopback_does_not_widen() -> tuple[Any, ...]:
    healthy = discovery.Discovery.discover

    def discover(
        self: discovery.Discovery,
        context: Any,
        interests: Any,
        pool: dict[str, dict[str, Any]],
        *,
        gaps: Any,
    ) -> None:
        if gaps is None:
            healthy(self, context, interests, pool, gaps=None)
            return
        # The loop-back repeats the first, narrow search for the gaps' interests.
        labels = {g["interest"] for g in gaps}
        for interest in interests:
            if interest["label"] in labels:
                self.discover_interest(context, interest, pool)

    return (mock.patch.object(discovery.Discovery, "discover", discover),)


def _ignores_budget() -> tuple[Any, ...]:
    # Neither the budget the customer states nor the one on their profile is ever read.
    return (
        mock.patch.object(request_context, "_profile_budget", lambda persona: None),
        mock.patch.object(
            request_context, "extract_constraints", _forget_budget(memory.extract_constraints)
        ),
    )


def _forget_budget(healthy: Callable[..., Any]) -> Callable[..., Any]:
    def extract(turns: Any) -> Any:
        return healthy(turns).forget(memory.BUDGET)

    return extract


# --- the Presenter's rendering ------------------------------------------------------------------

Render = Callable[[Mapping[str, Any], Mapping[str, Any]], str]


def _render(twin: Callable[[Render], Render]) -> Callable[[], tuple[Any, ...]]:
    def patches() -> tuple[Any, ...]:
        return (mock.patch.object(shop_workflow, "render_answer", twin(stages.render_answer)),)

    return patches


def _empty_with_restock(healthy: Render) -> Render:
    def render(presentation: Mapping[str, Any], payload: Mapping[str, Any]) -> str:
        if any(p["lane"] == "replenish" for p in payload["picks"]):
            return ""
        return healthy(presentation, payload)

    return render


def _restock_lane_dropped(healthy: Render) -> Render:
    def render(presentation: Mapping[str, Any], payload: Mapping[str, Any]) -> str:
        restock = {p["sku"] for p in payload["picks"] if p["lane"] == "replenish"}
        items = [i for i in presentation["items"] if i["sku"] not in restock]
        return healthy({**presentation, "items": items}, payload)

    return render


def _reasons_dropped(healthy: Render) -> Render:
    def render(presentation: Mapping[str, Any], payload: Mapping[str, Any]) -> str:
        text = healthy(presentation, payload)
        return "\n".join(line.split(" — ", 1)[0] for line in text.splitlines())

    return render


# --- catalogue loading --------------------------------------------------------------------------


def _department_hidden() -> tuple[Any, ...]:
    hidden = Department.HOME_AUDIO

    def visible(self: catalogue.Catalogue) -> tuple[Product, ...]:
        return tuple(p for p in self._products if p.department is not hidden)

    return (mock.patch.object(catalogue.Catalogue, "products", property(visible)),)


def _raw_items(edit: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[], tuple[Any, ...]]:
    def patches() -> tuple[Any, ...]:
        healthy = catalogue._parse_products

        def parse(raw: Any, label: str) -> list[Product]:
            items = [edit(dict(item)) for item in raw["products"]]
            return healthy({**raw, "products": items}, label)

        return (mock.patch.object(catalogue, "_parse_products", parse),)

    return patches


def _in_cents(item: dict[str, Any]) -> dict[str, Any]:
    for key in ("price_chf", "was_price_chf"):
        if item.get(key) is not None:
            item[key] = float(Decimal(str(item[key])) * 100)
    return item


def _untagged(item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "tags": []}


# --- the harness's report producer --------------------------------------------------------------


def _one_sided_sign_test() -> tuple[Any, ...]:

    def one_sided(wins: int, losses: int) -> float:
        n = wins + losses
        return 1.0 if n == 0 else stats.binomial_tail_p(max(wins, losses), n, 0.5)

    # The harness computes with its implementation module, so the mutant is planted there; the
    # public vitrine.stats only re-exports it.
    return (mock.patch("vitrine._stats.sign_test_p", one_sided),)


def _wins_and_losses_swapped() -> tuple[Any, ...]:
    def outcome(self: PairOutcome) -> str:
        delta = self.delta
        return "tie" if delta == 0 else "loss" if delta > 0 else "win"

    return (mock.patch.object(PairOutcome, "outcome", property(outcome)),)


_WORKFLOW_GATE = ("workflow-shape",)

WORKFLOW_MUTANTS: tuple[Mutant, ...] = (
    _mutant(
        "wf-mapper-drops-interests",
        "workflow.stages.InterestMapper",
        "the InterestMapper keeps only history interests, dropping the request and restocks",
        _stage(stages.INTEREST_MAPPER, _history_only),
        _WORKFLOW_GATE,
    ),
    _mutant(
        "wf-discovery-ignores-request",
        "workflow.Discovery",
        "Discovery never searches for what the customer asked, on any visit",
        _discovery_ignores_request,
        _WORKFLOW_GATE,
    ),
    _mutant(
        "wf-loopback-does-not-widen",
        "workflow.Discovery",
        "after a loop-back, Discovery repeats its first narrow search instead of widening it",
        _loopback_does_not_widen,
        _WORKFLOW_GATE,
    ),
    _mutant(
        "wf-reviewer-always-approves",
        "workflow.stages.CoverageReviewer",
        "the CoverageReviewer approves every candidate pool and never finds a gap",
        _stage(stages.COVERAGE_REVIEWER, _always_covered),
        _WORKFLOW_GATE,
    ),
    _mutant(
        "wf-router-without-loopback",
        "workflow.ShopWorkflow",
        "the router never takes the 'gaps remain' edge: the loop-back bound is zero",
        _without_loopback,
        _WORKFLOW_GATE,
    ),
    _mutant(
        "wf-ranker-reverses-order",
        "workflow.stages.Ranker",
        "the Ranker hands its picks over weakest first; expected to survive: the offline "
        "gates hold the route and the stage contract, and no gate judges ranking order",
        _stage(stages.RANKER, _reversed_ranking),
        (),
        must_kill=False,
    ),
    _mutant(
        "wf-ranker-drops-restock",
        "workflow.stages.Ranker",
        "the Ranker never picks a due consumable, so the restock lane disappears",
        _stage(stages.RANKER, _no_restock),
        _WORKFLOW_GATE,
    ),
    _mutant(
        "wf-ranker-picks-owned",
        "workflow.stages.Ranker",
        "the Ranker forgets the owned durables its payload says never to pick (the stages "
        "before it never hand it one, so only a tempted payload shows it)",
        _stage(stages.RANKER, _picks_owned),
        ("invariants",),
    ),
    _mutant(
        "wf-discovery-ignores-budget",
        "workflow.Discovery",
        "Discovery forgets the budget the customer stated and admits dearer products",
        _ignores_budget,
        _WORKFLOW_GATE,
    ),
    _mutant(
        "wf-presenter-empty-with-restock",
        "workflow.render_answer",
        "the Presenter renders an empty answer whenever a restock lane exists",
        _render(_empty_with_restock),
        _WORKFLOW_GATE,
    ),
    _mutant(
        "wf-presenter-drops-restock-lane",
        "workflow.render_answer",
        "the Presenter leaves the restock lane out of the answer",
        _render(_restock_lane_dropped),
        _WORKFLOW_GATE,
    ),
    _mutant(
        "wf-presenter-drops-reasons",
        "workflow.render_answer",
        "the Presenter renders each pick without the reason the Ranker gave for it",
        _render(_reasons_dropped),
        _WORKFLOW_GATE,
    ),
    _mutant(
        "cat-department-hidden",
        "catalogue.Catalogue",
        "the catalogue's product listing skips Home Audio (lookups and the loader still see it)",
        _department_hidden,
        ("catalogue-shape",),
    ),
    _mutant(
        "cat-prices-in-cents",
        "catalogue._parse_products",
        "the loader reads prices as cents, so every price is a hundred times too high",
        _raw_items(_in_cents),
        ("catalogue-shape",),
    ),
    _mutant(
        "cat-tags-lost",
        "catalogue._parse_products",
        "the loader drops every product's tags (contexts, compatibility, consumables)",
        _raw_items(_untagged),
        ("catalogue-shape",),
    ),
    _mutant(
        "report-one-sided-sign-test",
        "vitrine._stats.sign_test_p",
        "the report's paired comparison uses a one-sided sign test, halving every p-value",
        _one_sided_sign_test,
        ("honesty",),
    ),
    _mutant(
        "report-wins-losses-swapped",
        "vitrine._bench.score.PairOutcome",
        "the report's paired comparison counts a challenger's wins as losses and back",
        _wins_and_losses_swapped,
        ("honesty",),
    ),
)
