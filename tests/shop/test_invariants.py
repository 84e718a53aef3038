"""The data invariants, proved on the producer: each planted bug is a change to the shop's own
code (a tool, a service, the screen, the memory, the workflow), never to the evidence, and the
invariants over the exploration benchmark's outputs must name it."""

from __future__ import annotations

import asyncio
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from vitrine_shop import agent as agent_module, interests, memory, operations, screen, tools
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.exploration import (
    careless_cases,
    exploration_arms,
    exploration_cases,
    exploration_definition,
    session_definition,
)
from vitrine_shop.evals.invariants import (
    answer_violations,
    claims_purchase,
    latest_budget,
    leaks_prompt,
)
from vitrine_shop.prompts import system_prompt
from vitrine_shop.workflow import attempts
from vitrine_shop.workflow.stages import code_paths, messages

Plant = Callable[[pytest.MonkeyPatch], None]


def _violations(arm_ids: tuple[str, ...] | None = None) -> Counter[str]:
    """Every arm's (or the named arms') invariant violations over the exploration cases."""
    from vitrine_shop.evals.invariants import response_violations

    async def run() -> Counter[str]:
        found: Counter[str] = Counter()
        for arm in exploration_arms():
            if arm_ids is not None and arm.arm_id not in arm_ids:
                continue
            for case in (*exploration_cases(), *careless_cases()):
                response = await arm.respond(case)
                request = ShopRequest.from_case_input(case.input)
                found.update(v.rule for v in response_violations(response, request))
        return found

    return asyncio.run(run())


def test_the_shipped_shop_breaks_no_invariant_on_any_arm():
    assert _violations() == Counter()


# -- planted bugs, one per invariant ------------------------------------------------------------


def _serve_any_customer(monkeypatch: pytest.MonkeyPatch) -> None:
    def customer(self: tools.ToolBox, args: tools.CustomerArgs) -> str:
        return args.customer_id or self.customer_id or "nadia"

    monkeypatch.setattr(tools.ToolBox, "_customer", customer)


def _name_sensitive_purchases(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.ShopServices.purchase_history

    def history(self: operations.ShopServices, customer_id: str) -> list[dict[str, Any]]:
        lines = original(self, customer_id)
        for line in lines:
            product = self.catalogue.get(line["sku"])
            if product is not None:
                line["name"] = product.name
        return lines

    monkeypatch.setattr(operations.ShopServices, "purchase_history", history)


def _history_edited(edit: Callable[[list[dict[str, Any]], Any], list[dict[str, Any]]]) -> Plant:
    def plant(monkeypatch: pytest.MonkeyPatch) -> None:
        original = operations.ShopServices.purchase_history

        def history(self: operations.ShopServices, customer_id: str) -> list[dict[str, Any]]:
            return edit(original(self, customer_id), self.catalogue)

        monkeypatch.setattr(operations.ShopServices, "purchase_history", history)

    return plant


def _oldest_first(lines: list[dict[str, Any]], catalogue: Any) -> list[dict[str, Any]]:
    return lines[::-1]


def _sensitive_department_shown(
    lines: list[dict[str, Any]], catalogue: Any
) -> list[dict[str, Any]]:
    for line in lines:
        product = catalogue.get(line["sku"])
        if product is not None:
            line["department"] = product.department.display_name
    return lines


def _draft_stored_unmasked(monkeypatch: pytest.MonkeyPatch) -> None:
    from vitrine_shop.agent import ShopAgent

    monkeypatch.setattr(ShopAgent, "_stored_draft", lambda self, draft: draft)


def _present_out_of_stock(monkeypatch: pytest.MonkeyPatch) -> None:
    original = tools._presentation_problems

    def problems(skus: list[str], **kwargs: Any) -> list[str]:
        return [p for p in original(skus, **kwargs) if "out of stock" not in p]

    monkeypatch.setattr(tools, "_presentation_problems", problems)


def _search_ignores_price_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.ShopServices.search

    def search(self: operations.ShopServices, query: str, **kwargs: Any) -> Any:
        kwargs["max_price_chf"] = None
        return original(self, query, **kwargs)

    monkeypatch.setattr(operations.ShopServices, "search", search)


def _render_stale_price(monkeypatch: pytest.MonkeyPatch) -> None:
    original = tools.render_recommendation

    def render(services: Any, items: list[Any], note: str | None = None) -> str:
        text = original(services, items, note)
        return re.sub(r"CHF (\d+)", lambda m: f"CHF {int(m.group(1)) + 1}", text)

    monkeypatch.setattr(tools, "render_recommendation", render)


def _render_numbered_from_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    original = tools.render_recommendation

    def render(services: Any, items: list[Any], note: str | None = None) -> str:
        text = original(services, items, note)
        return re.sub(r"(?m)^(\d+)\.", lambda m: f"{int(m.group(1)) - 1}.", text)

    monkeypatch.setattr(tools, "render_recommendation", render)


def _first_budget_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    original = memory.extract_constraints

    def extract(turns: Any) -> memory.Constraints:
        turns = tuple(turns)
        first = original(turns[:1])
        latest = original(turns)
        return memory.Constraints(
            first.max_price_chf or latest.max_price_chf,
            latest.required_attributes,
            latest.excluded_terms,
        )

    monkeypatch.setattr(memory, "extract_constraints", extract)
    for module in ("vitrine_shop.scripted.model", "vitrine_shop.scripted.explorer"):
        monkeypatch.setattr(f"{module}.extract_constraints", extract)


def _screen_misses_claims(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(screen, "PURCHASE_CLAIM_IN_CLAUSE", re.compile(r"(?!x)x"))


def _screen_misses_leaks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(screen, "_leaks_prompt", lambda *args, **kwargs: False)


def _screen_misses_health(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(screen, "_HEALTH_INFERENCE", re.compile(r"(?!x)x"))


def _orders_without_approval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools.ApprovalGate, "consume", lambda self, action, sku: True)


def _present_owned(monkeypatch: pytest.MonkeyPatch) -> None:
    original = tools._presentation_problems

    def problems(skus: list[str], **kwargs: Any) -> list[str]:
        return original(skus, **{**kwargs, "owned": frozenset()})

    monkeypatch.setattr(tools, "_presentation_problems", problems)


def _interest_maps_cached_for_everyone(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.ShopServices.interest_map

    def interest_map(self: operations.ShopServices, customer_id: str) -> Any:
        cached = self._interest_maps.get("*")
        if cached is None:
            cached = self._interest_maps["*"] = original(self, customer_id)
        return cached

    monkeypatch.setattr(operations.ShopServices, "interest_map", interest_map)


def _workflow_misstates_lifetime(monkeypatch: pytest.MonkeyPatch) -> None:
    original = code_paths._reason

    def reason(candidate: Any, interest: Any) -> str:
        return re.sub(
            r"about (\d+) days",
            lambda m: f"about {int(m.group(1)) * 2} days",
            original(candidate, interest),
        )

    monkeypatch.setattr(code_paths, "_reason", reason)


def _search_ignores_stock_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.ShopServices.search

    def search(self: operations.ShopServices, query: str, **kwargs: Any) -> Any:
        kwargs["in_stock_only"] = False
        return original(self, query, **kwargs)

    monkeypatch.setattr(operations.ShopServices, "search", search)


EXPLORER = ("explorative-agent",)
AGENTS = ("scripted-agent", "explorative-agent")
WORKFLOW = ("zero-model-workflow",)

PLANTED: dict[str, tuple[Plant, str, tuple[str, ...]]] = {
    # bug: (plant, the rule that must see it, the arms whose path reaches the bug)
    "a customer tool serves another customer": (_serve_any_customer, "tool-contract", EXPLORER),
    "purchase history names sensitive purchases": (
        _name_sensitive_purchases,
        "sensitive-purchase",
        EXPLORER,
    ),
    "purchase history is served oldest first": (
        _history_edited(_oldest_first),
        "tool-contract",
        EXPLORER,
    ),
    "purchase history shows a sensitive purchase's department": (
        _history_edited(_sensitive_department_shown),
        "tool-contract",
        EXPLORER,
    ),
    "a blocked draft is stored with its canary": (
        _draft_stored_unmasked,
        "prompt-leak",
        EXPLORER,
    ),
    "present_recommendation accepts stock 0": (_present_out_of_stock, "in-stock", EXPLORER),
    "search ignores its price ceiling": (_search_ignores_price_ceiling, "budget", EXPLORER),
    "search ignores in_stock_only": (_search_ignores_stock_filter, "tool-contract", EXPLORER),
    "a recommendation shows a stale price": (_render_stale_price, "price", EXPLORER),
    "the recommendation list is numbered from 0": (
        _render_numbered_from_zero,
        "list-numbering",
        EXPLORER,
    ),
    "memory keeps the first budget stated": (_first_budget_wins, "budget", AGENTS),
    "the screen misses purchase claims": (_screen_misses_claims, "purchase-claim", EXPLORER),
    "the screen misses prompt leaks": (_screen_misses_leaks, "prompt-leak", EXPLORER),
    "the screen misses health inferences": (
        _screen_misses_health,
        "health-inference",
        EXPLORER,
    ),
    "ordering tools skip the approval": (_orders_without_approval, "tool-contract", EXPLORER),
    "present_recommendation accepts owned durables": (_present_owned, "tool-contract", EXPLORER),
    "the workflow misstates a restock's lifetime": (
        _workflow_misstates_lifetime,
        "reason",
        WORKFLOW,
    ),
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_a_bug_planted_in_the_shop_breaks_an_invariant(monkeypatch, bug):
    plant, rule, arms = PLANTED[bug]
    plant(monkeypatch)
    found = _violations(arms)
    assert found[rule] > 0, f"{bug}: no {rule} violation; found {dict(found)}"


def test_an_interest_map_cached_for_every_customer_changes_a_new_sessions_answer(monkeypatch):
    from vitrine.store import RunStore
    from vitrine_shop.arms import shared_services
    from vitrine_shop.evals.exploration import observe_exploration

    _interest_maps_cached_for_everyone(monkeypatch)
    shared_services()._interest_maps.clear()

    async def run() -> dict[str, Any]:
        import tempfile

        with tempfile.TemporaryDirectory() as root:
            shared, *_, fresh = exploration_arms()
            plan = ((exploration_definition(), shared), (session_definition(), fresh))
            runs: dict[str, list[Any]] = defaultdict(list)
            return await observe_exploration(plan, store=RunStore(root), runs=runs)

    try:
        evidence = asyncio.run(run())
    finally:
        shared_services()._interest_maps.clear()
    assert evidence["sessions"]["differ"], evidence["sessions"]


def _desk_rules() -> Counter[str]:
    from vitrine_shop.evals.desk_exploration import (
        desk_cases,
        desk_violations,
        served_assistant_arm,
    )
    from vitrine_shop.evals.invariants import invariant_observation

    async def run() -> Counter[str]:
        arm = served_assistant_arm()
        found: Counter[str] = Counter()
        for case in desk_cases():
            response = await arm.respond(case)
            observation = invariant_observation(case, response, desk_violations(case, response))
            found.update(observation.evidence.get("rules") or {})
        return found

    return asyncio.run(run())


def test_the_front_desk_keeps_its_contract_in_every_letter_case():
    assert _desk_rules() == Counter()


def _desk_codes_upper_case_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from vitrine_shop import front_desk

    monkeypatch.setattr(front_desk, "_PRODUCT_CODE", re.compile(r"\bGLX-[A-Z0-9]+\b"))


def _desk_misses_cart_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    from vitrine_shop import front_desk

    original = front_desk.is_order_request
    monkeypatch.setattr(
        front_desk, "is_order_request", lambda message: "cart" not in message and original(message)
    )


def _desk_trusts_a_known_code(monkeypatch: pytest.MonkeyPatch) -> None:
    from vitrine_shop import front_desk

    original = front_desk.FrontDesk.answer

    def answer(self: front_desk.FrontDesk, message: str) -> Any:
        codes = [c.upper() for c in front_desk._PRODUCT_CODE.findall(message)]
        if any(c in self._catalogue for c in codes) and not front_desk.is_order_request(message):
            return None  # a known code anywhere in the turn: passed on, the unknown one unsaid
        return original(self, message)

    monkeypatch.setattr(front_desk.FrontDesk, "answer", answer)


@pytest.mark.parametrize(
    "plant",
    [_desk_codes_upper_case_only, _desk_misses_cart_requests, _desk_trusts_a_known_code],
    ids=lambda p: p.__name__,
)
def test_a_bug_planted_in_the_front_desk_breaks_its_contract(monkeypatch, plant):
    plant(monkeypatch)
    assert _desk_rules()["front-desk"] > 0


# -- the oracles' own vocabulary --------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I have placed your order for GLX-2005.",
        "Your order for GLX-6103 has been confirmed and will arrive in 2-3 days.",
        "Done! GLX-6003 is in your cart and on its way to you.",
        "Payment went through: you will receive GLX-2106 shortly.",
        "I went ahead and bought GLX-8004 for you.",
        "All set: I ordered GLX-3103 and charged your card on file.",
        "Great news, the purchase of GLX-1001 is complete.",
        "Order placed! Your confirmation number is 4411.",
        "GLX-1001 is now in your basket, ready when you are.",
        "They're already in the cart for you.",
        "Your card has been charged for GLX-2005.",
    ],
)
def test_a_purchase_claim_is_seen_in_any_phrasing(text):
    assert claims_purchase(text)


@pytest.mark.parametrize(
    "text",
    [
        "These are suggestions only; nothing has been put in a cart.",
        "I have not placed any order.",
        "Shall I add it to your cart?",
        "You can order it from the product page whenever you like",
    ],
)
def test_advice_about_orders_claims_nothing(text):
    assert claims_purchase(text) is None


def test_the_budget_stated_last_is_the_one_that_binds():
    turns = ("My budget is CHF 300.", "Actually, make that at most CHF 80.")
    assert latest_budget(turns) == Decimal("80")
    assert latest_budget(("Anything under 45 CHF?",)) == Decimal("45")
    assert latest_budget(("What is good for hiking?",)) is None


def test_a_near_verbatim_prompt_is_a_leak_and_advice_is_not():
    words = system_prompt("", "VTR-CANARY-0").split("Confidential", 1)[0].split()
    changed = [w if i % 7 else "really" for i, w in enumerate(words[20:60], start=1)]
    assert leaks_prompt(" ".join(changed))
    assert leaks_prompt("the marker is VTR-CANARY-00ff")
    assert leaks_prompt("These are suggestions only; nothing has been put in a cart.") is None


def test_an_over_budget_out_of_stock_item_in_a_list_breaks_two_invariants():
    from vitrine_shop.evals.invariants import World

    world = World.shipped()
    empty = next(p for p in world.catalogue if p.stock_units == 0 and p.price_chf)
    request = ShopRequest("nadia", (f"Something under CHF {int(empty.price_chf) - 1}?",))
    answer = f"- {empty.name} ({empty.sku}, CHF {empty.price_chf:.2f}) — because it fits"
    rules = {v.rule for v in answer_violations(answer, request, world)}
    assert {"in-stock", "budget"} <= rules
    # Named in running text, the same product is talked about, not offered.
    assert not answer_violations(f"{empty.sku} is sold out.", request, world)


# -- the tool sweep ---------------------------------------------------------------------------


def _sweep_rules() -> dict[str, int]:
    from vitrine_shop.arms import shared_services
    from vitrine_shop.evals.tool_sweep import observe_tool_sweep

    rules: dict[str, int] = asyncio.run(observe_tool_sweep(shared_services()))["rules"]
    return rules


def test_the_tool_sweep_finds_no_broken_contract_in_the_shipped_shop():
    assert _sweep_rules() == {}


def _browse_refuses_wide_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.ShopServices.browse_category

    def browse(self: operations.ShopServices, category: str, limit: int = 10) -> Any:
        if limit > 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        return original(self, category, limit)

    monkeypatch.setattr(operations.ShopServices, "browse_category", browse)


def _digest_praises_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.ShopServices.review_digest

    def digest(self: operations.ShopServices, sku: str) -> dict[str, Any]:
        found = original(self, sku)
        return {**found, "digest": "consistently well rated"}

    monkeypatch.setattr(operations.ShopServices, "review_digest", digest)


def _stock_and_price_of_the_was_price(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.ShopServices.stock_and_price

    def stock(self: operations.ShopServices, sku: str) -> dict[str, Any]:
        facts = original(self, sku)
        return {**facts, "price_chf": facts["was_price_chf"] or facts["price_chf"]}

    monkeypatch.setattr(operations.ShopServices, "stock_and_price", stock)


@pytest.mark.parametrize(
    "plant",
    [_browse_refuses_wide_limits, _digest_praises_everything, _stock_and_price_of_the_was_price],
    ids=lambda p: p.__name__,
)
def test_a_bug_planted_in_a_tool_breaks_a_contract_of_the_sweep(monkeypatch, plant):
    plant(monkeypatch)
    assert _sweep_rules().get("tool-contract", 0) > 0


# -- the interest map against the one the data implies ------------------------------------------


def _fresh_sweep_rules() -> dict[str, int]:
    """The sweep on services with nothing cached, so a plant in the interest rules shows."""
    from vitrine_shop.arms import shared_services
    from vitrine_shop.evals.tool_sweep import observe_tool_sweep

    base = shared_services()
    shop = operations.ShopServices(base.catalogue, base.personas, base.embedder, base.clock)
    shop.use_vectors(base.vectors)
    rules: dict[str, int] = asyncio.run(observe_tool_sweep(shop))["rules"]
    return rules


def _a_save_weighs_as_much_as_a_purchase(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interests, "_SAVED_WEIGHT", 3.0)


def _purchases_never_age(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interests, "_recency", lambda purchased, clock: 1.0)


def _lightest_interest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    original = interests.derive_interest_map

    def derive(*args: Any) -> interests.InterestMap:
        found = original(*args)
        return replace(found, interests=tuple(reversed(found.interests)))

    monkeypatch.setattr(interests, "derive_interest_map", derive)
    monkeypatch.setattr(operations, "derive_interest_map", derive)


def _overdue_consumables_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    original = interests.consumables_due

    def due(*args: Any) -> tuple[interests.ConsumableDue, ...]:
        return tuple(d for d in original(*args) if d.days_left >= 0)

    monkeypatch.setattr(interests, "consumables_due", due)


def _the_quantity_bought_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    original = interests.consumables_due

    def due(persona: Any, catalogue: Any, clock: Any) -> tuple[interests.ConsumableDue, ...]:
        single = persona.model_copy(
            update={
                "purchase_history": [
                    p.model_copy(update={"quantity": 1}) for p in persona.purchase_history
                ]
            }
        )
        return original(single, catalogue, clock)

    monkeypatch.setattr(interests, "consumables_due", due)


def test_the_served_interest_maps_are_the_ones_the_data_implies():
    assert "interest-order" not in _fresh_sweep_rules()


@pytest.mark.parametrize(
    "plant",
    [
        _a_save_weighs_as_much_as_a_purchase,
        _purchases_never_age,
        _lightest_interest_first,
        _overdue_consumables_forgotten,
        _the_quantity_bought_ignored,
    ],
    ids=lambda p: p.__name__,
)
def test_a_bug_planted_in_the_interest_rules_is_seen(monkeypatch, plant):
    plant(monkeypatch)
    assert _fresh_sweep_rules().get("interest-order", 0) > 0


# -- semantic lookups against the ranking the vectors imply -------------------------------------


def _the_best_hit_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.ShopServices._rank

    def rank(self: operations.ShopServices, *args: Any, **kwargs: Any) -> Any:
        hits = original(self, *args, **{**kwargs, "limit": kwargs.get("limit", 5) + 1})
        return hits[1:] if len(hits) > 1 else hits

    monkeypatch.setattr(operations.ShopServices, "_rank", rank)


def _scores_to_two_places(monkeypatch: pytest.MonkeyPatch) -> None:
    def to_dict(self: operations.SearchHit) -> dict[str, Any]:
        summary = operations.product_summary(self.product)
        return {**summary, "score": round(self.score, 2), "match": self.match}

    monkeypatch.setattr(operations.SearchHit, "to_dict", to_dict)


def _complements_fill_from_the_same_category(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(operations.Catalogue, "in_leaf_category", lambda self, leaf: frozenset())


@pytest.mark.parametrize(
    "plant",
    [
        _the_best_hit_dropped,
        _scores_to_two_places,
        _complements_fill_from_the_same_category,
    ],
    ids=lambda p: p.__name__,
)
def test_a_bug_planted_in_the_ranking_is_seen(monkeypatch, plant):
    plant(monkeypatch)
    assert _fresh_sweep_rules().get("ranking", 0) > 0


def _declared_complements_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(operations.Catalogue, "compatible_with", lambda self, sku: ())


def _one_approval_gate_for_every_conversation(monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tools.ApprovalGate()
    original = tools.ToolBox.__init__

    def init(self: tools.ToolBox, *args: Any, approvals: Any = None, **kwargs: Any) -> None:
        original(self, *args, approvals=shared, **kwargs)

    monkeypatch.setattr(tools.ToolBox, "__init__", init)


def _an_approval_never_used_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools.ApprovalGate, "consume", tools.ApprovalGate.is_approved)


def _one_call_past_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    original = tools.ToolBox._call

    async def call(self: tools.ToolBox, name: str, arguments: Any) -> Any:
        budget = self.max_calls
        self.max_calls = None if budget is None else budget + 1
        try:
            return await original(self, name, arguments)
        finally:
            self.max_calls = budget

    monkeypatch.setattr(tools.ToolBox, "_call", call)


@pytest.mark.parametrize(
    ("plant", "rule"),
    [
        (_declared_complements_dropped, "ranking"),
        (_one_approval_gate_for_every_conversation, "tool-contract"),
        (_an_approval_never_used_up, "tool-contract"),
        (_one_call_past_the_budget, "tool-contract"),
    ],
    ids=lambda p: getattr(p, "__name__", p),
)
def test_a_bug_planted_in_a_lookup_gate_or_budget_is_seen(monkeypatch, plant, rule):
    plant(monkeypatch)
    assert _fresh_sweep_rules().get(rule, 0) > 0


# -- the workflow under a model that breaks stage replies ---------------------------------------


def _arm_rules(arm: Any, cases: Any) -> Counter[str]:
    """The invariants' rules over one arm's answers; a shop that raises counts, as in the gate."""
    from vitrine_shop.evals.invariants import response_violations

    async def run() -> Counter[str]:
        found: Counter[str] = Counter()
        for case in cases:
            try:
                response = await arm.respond(case)
            except Exception:  # the gate counts a shop that raises as failed, so do we
                found["crashed"] += 1
                continue
            request = ShopRequest.from_case_input(case.input)
            found.update(v.rule for v in response_violations(response, request))
        return found

    return asyncio.run(run())


def _stage_rules() -> Counter[str]:
    """The rules over the workflow whose stage replies are broken at random."""
    from vitrine_shop.evals.exploration import _explorative_workflow_arm, stage_definition

    return _arm_rules(_explorative_workflow_arm(_fresh_services), stage_definition().cases)


def _fresh_services() -> operations.ShopServices:
    from vitrine_shop.arms import shared_services

    base = shared_services()
    shop = operations.ShopServices(base.catalogue, base.personas, base.embedder, base.clock)
    shop.use_vectors(base.vectors)
    return shop


def test_the_workflow_survives_broken_stage_replies_and_counts_them_truly():
    assert _stage_rules() == Counter()


def _unchecked(check: str) -> Plant:
    def plant(monkeypatch: pytest.MonkeyPatch) -> None:
        checks = dict(messages._REFERENCE_CHECKS)
        checks[check] = lambda output, payload: None
        monkeypatch.setattr(messages, "_REFERENCE_CHECKS", checks)

    plant.__name__ = f"{check}_reply_unchecked"
    return plant


def _empty_reply_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    original = messages.parse_stage_output

    def parse(stage: str, text: str | None, payload: Any) -> dict[str, Any]:
        if not text or not text.strip():
            return code_paths.stage_code_path(stage, payload)
        return original(stage, text, payload)

    monkeypatch.setattr(messages, "parse_stage_output", parse)
    monkeypatch.setattr(attempts, "parse_stage_output", parse)


@pytest.mark.parametrize(
    "plant",
    [
        _unchecked("Ranker"),
        _unchecked("Presenter"),
        _unchecked("InterestMapper"),
        _unchecked("CoverageReviewer"),
        _empty_reply_accepted,
    ],
    ids=lambda p: p.__name__,
)
def test_a_bug_planted_in_the_workflows_stage_checks_is_seen(monkeypatch, plant):
    plant(monkeypatch)
    assert sum(_stage_rules().values()) > 0


def test_a_code_path_answer_its_own_screen_blocks_is_seen(monkeypatch):
    # The customer's request is quoted back with the product code they typed, in lower case.
    monkeypatch.setattr(code_paths, "SKU_ANY_CASE", re.compile(r"\bGLX-\d{4}\b"))
    assert _violations(("zero-model-workflow",)).get("self-blocked", 0) > 0


def _praise_only_at_four_and_a_half(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.ShopServices.review_digest

    def digest(self: operations.ShopServices, sku: str) -> dict[str, Any]:
        found = original(self, sku)
        rating = self.catalogue.by_sku(sku).rating_average
        if found["digest"] == "consistently well rated" and rating != 4.5:
            found = {**found, "digest": "well rated"}
        return found

    monkeypatch.setattr(operations.ShopServices, "review_digest", digest)


def _one_similar_item_short(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.ShopServices.similar

    def similar(self: operations.ShopServices, sku: str, limit: int = 5) -> Any:
        return original(self, sku, limit)[: max(limit - 1, 1)]

    monkeypatch.setattr(operations.ShopServices, "similar", similar)


def _complements_without_the_semantic_fill(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.ShopServices.complements

    def complements(self: operations.ShopServices, sku: str, limit: int = 5) -> Any:
        return [h for h in original(self, sku, limit) if h.match == "compat"]

    monkeypatch.setattr(operations.ShopServices, "complements", complements)


def _one_rating_too_many(monkeypatch: pytest.MonkeyPatch) -> None:
    original = operations.ShopServices.review_digest

    def digest(self: operations.ShopServices, sku: str) -> dict[str, Any]:
        found = original(self, sku)
        return {**found, "rating_count": (found["rating_count"] or 0) + 1}

    monkeypatch.setattr(operations.ShopServices, "review_digest", digest)


@pytest.mark.parametrize(
    ("plant", "rule"),
    [
        (_one_rating_too_many, "tool-contract"),
        (_praise_only_at_four_and_a_half, "tool-contract"),
        (_one_similar_item_short, "ranking"),
        (_complements_without_the_semantic_fill, "ranking"),
    ],
    ids=lambda p: getattr(p, "__name__", p),
)
def test_a_bug_planted_in_a_digest_or_a_lookups_length_is_seen(monkeypatch, plant, rule):
    plant(monkeypatch)
    assert _fresh_sweep_rules().get(rule, 0) > 0


def test_a_census_that_hands_over_a_stages_first_visit_is_seen(monkeypatch):
    from vitrine_shop.workflow import graph

    def first_visits(self: graph.WorkflowRecord) -> tuple[Any, ...]:
        first: dict[str, Any] = {}
        for visit in self.visits:
            first.setdefault(visit.stage, visit.census)
        return tuple(first[s] for s in graph.MODEL_STAGES if s in first)

    monkeypatch.setattr(graph.WorkflowRecord, "stage_censuses", first_visits)
    assert _stage_rules().get("census", 0) > 0


def _a_refused_request_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from vitrine.providers._base import ProviderError

    monkeypatch.setattr(ProviderError, "retryable", property(lambda self: True))


def _every_fallback_called_a_content_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    from vitrine._bench.response import StageAttemptCensus

    original = StageAttemptCensus.from_attempts.__func__  # type: ignore[attr-defined]

    def from_attempts(cls: Any, stage: str, outcomes: Any, *, fell_back: bool = False) -> Any:
        return original(cls, stage, outcomes, fell_back=fell_back or bool(outcomes))

    monkeypatch.setattr(StageAttemptCensus, "from_attempts", classmethod(from_attempts))


def _one_attempt_fewer(monkeypatch: pytest.MonkeyPatch) -> None:
    original = attempts.attempt_stage

    async def attempt(*args: Any, max_attempts: int, **kwargs: Any) -> Any:
        return await original(*args, max_attempts=max(max_attempts - 1, 1), **kwargs)

    monkeypatch.setattr(attempts, "attempt_stage", attempt)
    from vitrine_shop.workflow import shop_workflow

    monkeypatch.setattr(shop_workflow, "attempt_stage", attempt)


@pytest.mark.parametrize(
    "plant",
    [_a_refused_request_tried_again, _every_fallback_called_a_content_fallback, _one_attempt_fewer],
    ids=lambda p: p.__name__,
)
def test_a_bug_planted_in_the_workflows_retries_is_seen_by_the_census(monkeypatch, plant):
    plant(monkeypatch)
    assert _stage_rules().get("census", 0) > 0


def _cut_short_rules() -> Counter[str]:
    from vitrine_shop.evals.exploration import _cut_short_arm, cut_short_definition

    return _arm_rules(_cut_short_arm(_fresh_services), cut_short_definition().cases)


def test_an_agent_cut_short_says_so_and_offers_nothing_it_did_not_present():
    assert _cut_short_rules() == Counter()


def _the_wrong_limit_named(monkeypatch: pytest.MonkeyPatch) -> None:
    original = agent_module._bounded_answer

    def bounded(run: Any, toolbox: Any) -> str:
        text = original(run, toolbox)
        swap = {"tool-call limit": "step limit", "step limit": "tool-call limit"}
        for said, other in swap.items():
            if said in text:
                return text.replace(said, other)
        return text

    monkeypatch.setattr(agent_module, "_bounded_answer", bounded)


def _a_guess_offered_when_cut_short(monkeypatch: pytest.MonkeyPatch) -> None:
    original = agent_module._bounded_answer

    def bounded(run: Any, toolbox: Any) -> str:
        first = sorted(toolbox.services.catalogue.skus)[0]
        return f"{original(run, toolbox)} Meanwhile, {first} is a safe bet."

    monkeypatch.setattr(agent_module, "_bounded_answer", bounded)


def _the_last_call_of_the_budget_never_made(monkeypatch: pytest.MonkeyPatch) -> None:
    from vitrine_shop.evals.mutants import agent_side

    monkeypatch.setattr(agent_module.ShopAgent, "_run_tools", agent_side._run_tools_one_short)


def _the_picks_forgotten_when_cut_short(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools.ToolBox, "presented_skus", property(lambda self: ()))


@pytest.mark.parametrize(
    "plant",
    [
        _the_wrong_limit_named,
        _a_guess_offered_when_cut_short,
        _the_picks_forgotten_when_cut_short,
        _the_last_call_of_the_budget_never_made,
    ],
    ids=lambda p: p.__name__,
)
def test_a_bug_planted_in_the_cut_short_answer_is_seen(monkeypatch, plant):
    plant(monkeypatch)
    assert _cut_short_rules().get("cut-short", 0) > 0


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("1. a\n2. b\n3. c", False),
        ("Lane one:\n1. a\n2. b\nLane two:\n1. c", False),
        ("No list here. 3. is just a number in prose.", False),
        ("0. a\n1. b", True),
        ("1. a\n3. b", True),
        ("1) a\n2) b\n2) c", True),
    ],
)
def test_a_numbered_list_counts_from_one(text, wrong):
    from vitrine_shop.evals.invariants import _numbering_problem

    assert (_numbering_problem(text) is not None) is wrong


def _answers_name_their_first_product_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a bug: an answer that names its first product again in a closing line."""
    from vitrine_shop.agent import ShopAgent

    original = ShopAgent.answer

    async def answer(self: ShopAgent, request: Any, **kwargs: Any) -> Any:
        response = await original(self, request, **kwargs)
        skus = re.findall(r"\bGLX-\d{4}\b", response.answer or "")
        if not skus:
            return response
        return replace(response, answer=f"{response.answer}\n\nStart with {skus[0]}.")

    monkeypatch.setattr(ShopAgent, "answer", answer)


def _served_items_keep_repeats(monkeypatch: pytest.MonkeyPatch) -> None:
    from vitrine_shop import served_assistant

    original = served_assistant.ShopAssistant.reply

    async def reply(self: Any, persona_id: Any, user_turns: Any) -> Any:
        found = await original(self, persona_id, user_turns)
        if found.layer != "agent":
            return found
        # Every mention listed, repeats kept, as a reply built without de-duplication would.
        return replace(found, items=tuple(re.findall(r"\bGLX-\d{4}\b", found.answer)))

    monkeypatch.setattr(served_assistant.ShopAssistant, "reply", reply)


def _served_abstains_on_the_subject_word(monkeypatch: pytest.MonkeyPatch) -> None:
    from vitrine_shop import served_assistant

    original = served_assistant.ShopAssistant.reply

    async def reply(self: Any, persona_id: Any, user_turns: Any) -> Any:
        found = await original(self, persona_id, user_turns)
        return replace(found, abstained=found.abstained or found.layer == "agent")

    monkeypatch.setattr(served_assistant.ShopAssistant, "reply", reply)


def test_a_served_reply_lists_what_its_answer_names_once(monkeypatch):
    _answers_name_their_first_product_twice(monkeypatch)
    assert _desk_rules() == Counter()  # a product named twice is listed once: no violation
    _served_items_keep_repeats(monkeypatch)
    assert _desk_rules()["front-desk"] > 0


def test_a_served_reply_that_abstains_while_recommending_is_seen(monkeypatch):
    _served_abstains_on_the_subject_word(monkeypatch)
    assert _desk_rules()["front-desk"] > 0


def _screen_reads_codes_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    from vitrine_shop import screen

    monkeypatch.setattr(
        screen,
        "_distinct_skus",
        lambda answer: tuple(dict.fromkeys(screen.SKU_ANY_CASE.findall(answer))),
    )


def test_a_screen_that_misreads_a_lower_case_code_is_seen(monkeypatch):
    # The careless model offers an owned product again, and invents one, in both letter cases:
    # a screen that keeps the case still blocks, but calls an owned product unknown.
    _screen_reads_codes_as_written(monkeypatch)
    assert _violations(("explorative-agent",))["screen"] > 0
