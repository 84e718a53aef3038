"""The latest turn decides: a turn is decided as it is alone, except for what carries over.

Every desk case and every exploration request the suite asks is one turn long, so a decision
that reads the wrong turn of a conversation (the first instead of the last, all of them
instead of the last) is never asked for. This module puts a seeded earlier turn before them:

- ``desk``: before each desk case, a seeded unrelated shopping request. The served
  assistant's routing (its layer and the desk's intent) and, where the desk answered, its
  answer and items must be those of the desk case alone;
- ``agent``: before seeded exploration requests, another exploration request. The served
  assistant must route it as it routes the request alone, and the scripted agent's first
  search (its query, price cap and required tags: the constraints it acts on) must be the one
  it makes for the request alone;
- ``after the desk``: a turn the desk answers (an order, an unknown code, a policy question, a
  message of no words) followed by a seeded exploration request: routed and searched as that
  request alone;
- ``carried budget``: "My budget is CHF x." before seeded exploration requests. The design
  (``vitrine_shop.memory``, ``vitrine_shop.conversation``) is that a constraint stated earlier
  still binds the last turn, and a later statement replaces an earlier one; so the first
  search's price cap must be the budget the invariants' own parser reads from the whole
  conversation (the last turn's when it states one, else x).

The rule held: the earlier turns chosen state no budget, no required attribute, no exclusion
and ask nothing about health, by the invariants' own parsers; what they carry over by design
is therefore nothing, and every decision of the last turn must be the same as alone. A stated
budget is the one thing made to carry over, and it must carry exactly.
"""

from __future__ import annotations

import random
from collections import Counter
from decimal import Decimal
from typing import Any

from vitrine import SubjectResponse
from vitrine.service import ServiceOptions
from vitrine_shop import scripted
from vitrine_shop.agent import ShopAgent
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.data_variants import variant_services
from vitrine_shop.evals.desk_exploration import desk_cases
from vitrine_shop.evals.exploration import exploration_cases
from vitrine_shop.evals.invariants import (
    World,
    asked_about_health,
    excluded_terms,
    latest_budget,
    required_attributes,
)
from vitrine_shop.operations import ShopServices
from vitrine_shop.served_assistant import FRONT_DESK_LAYER, ShopAssistant, in_process_assistant

__all__ = ["LATEST_TURN_SEED", "observe_latest_turn"]

LATEST_TURN_SEED = 23
_AGENT_REQUESTS = 10
_AFTER_DESK = 6
_CARRIED = 6
_EXAMPLES = 8


def _states_nothing(turn: str, world: World) -> bool:
    turns = (turn,)
    return not (
        latest_budget(turns) is not None
        or required_attributes(turns, world)
        or excluded_terms(turns)
        or asked_about_health(turns)
    )


async def _routing(assistant: ShopAssistant, request: ShopRequest) -> dict[str, Any]:
    reply = await assistant.reply(request.persona_id, request.user_turns)
    routed: dict[str, Any] = {"layer": reply.layer, "intent": reply.facts.get("intent")}
    if reply.layer == FRONT_DESK_LAYER:
        routed |= {"answer": reply.answer, "items": list(reply.items)}
    return routed


def _first_search(response: SubjectResponse) -> dict[str, Any] | None:
    for output in response.structured.get("tool_outputs") or ():
        if output.get("name") == "search_products":
            return dict(output.get("arguments") or {})
    return None


async def _search(services: ShopServices, request: ShopRequest) -> dict[str, Any] | None:
    agent = ShopAgent(scripted.ScriptedShopModel(), services, traced=False)
    return _first_search(await agent.answer(request))


class _Observer:
    def __init__(self, services: ShopServices) -> None:
        self.services = services
        options = ServiceOptions(suite_options={"architecture": "agent", "front_desk": True})
        self.assistant = in_process_assistant(options, services)
        self.violations: list[dict[str, str]] = []
        self.compared = 0

    def differs(self, rule: str, request: ShopRequest, what: str, alone: Any, seen: Any) -> None:
        self.compared += 1
        if alone == seen:
            return
        who = request.persona_id or "anonymous"
        turns = " / ".join(repr(t[:40]) for t in request.user_turns)
        self.violations.append(
            {
                "rule": rule,
                "case": f"{who}: {turns}",
                "detail": f"{what} is {seen}, for the last turn alone {alone}",
            }
        )

    async def same_as_alone(self, rule: str, request: ShopRequest, *, search: bool) -> None:
        alone = ShopRequest.single(request.persona_id, request.query)
        self.differs(
            rule,
            request,
            "the routing",
            await _routing(self.assistant, alone),
            await _routing(self.assistant, request),
        )
        if search:
            self.differs(
                rule,
                request,
                "the first search",
                await _search(self.services, alone),
                await _search(self.services, request),
            )


async def observe_latest_turn(base: ShopServices, seed: int = LATEST_TURN_SEED) -> dict[str, Any]:
    """The conversations above on the served assistant and the scripted agent; every decision
    of the last turn that is not as alone (or, for a stated budget, not as carried) is a
    violation, named by rule, conversation and what differs."""
    rng = random.Random(seed)
    world = World(base.catalogue, base.personas, base.clock)
    observer = _Observer(variant_services(base))
    single = [
        r
        for r in (ShopRequest.from_case_input(c.input) for c in exploration_cases())
        if len(r.user_turns) == 1
    ]
    neutral = [r.query for r in single if _states_nothing(r.query, world)]
    desk = [ShopRequest.from_case_input(c.input) for c in desk_cases()]
    desk_owned = [
        r.query
        for r, c in zip(desk, desk_cases(), strict=True)
        if c.metadata.get("desk_intent") is not None and _states_nothing(r.query, world)
    ]
    for request in desk:
        earlier = rng.choice([t for t in neutral if t != request.query])
        talk = ShopRequest(request.persona_id, (earlier, request.query))
        await observer.same_as_alone("latest-turn desk", talk, search=False)
    for request in rng.sample(single, _AGENT_REQUESTS):
        earlier = rng.choice([t for t in neutral if t != request.query])
        talk = ShopRequest(request.persona_id, (earlier, request.query))
        await observer.same_as_alone("latest-turn agent", talk, search=True)
    for request in rng.sample(single, _AFTER_DESK):
        talk = ShopRequest(request.persona_id, (rng.choice(desk_owned), request.query))
        await observer.same_as_alone("latest-turn after the desk", talk, search=True)
    unsearched = 0
    for request in rng.sample(single, _CARRIED):
        budget = Decimal(rng.randrange(40, 400))
        talk = ShopRequest(request.persona_id, (f"My budget is CHF {budget}.", request.query))
        search = await _search(observer.services, talk)
        if search is None:
            # Abstained before any search (a customer the shop knows nothing about): no cap
            # was applied to anything, so there is nothing to hold it to.
            unsearched += 1
            continue
        expected = latest_budget(talk.user_turns)
        cap = search.get("max_price_chf")
        observer.differs(
            "carried budget",
            talk,
            "the first search's price cap",
            float(expected) if expected is not None else None,
            cap,
        )
    return {
        "calls": observer.compared,
        "desk_cases": len(desk),
        "budgets_unsearched": unsearched,
        "violations": len(observer.violations),
        "rules": dict(Counter(v["rule"] for v in observer.violations)),
        "examples": observer.violations[:_EXAMPLES],
    }
