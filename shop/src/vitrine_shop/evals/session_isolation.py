"""Session isolation: conversations served side by side must each answer as it does alone.

Every exploration case opens one fresh conversation, so state one conversation leaves behind
for another (an approval, a stated budget, a remembered customer, a purchase) is never asked
for. This module serves a seeded set of conversations twice. Alone, each runs on fresh
services and a fresh architecture. Interleaved, all run on one set of services and one
instance of each architecture, turn by turn in rotation, as one process serves every customer:
the first conversation holds an approval of every gated action for every stocked product
(given at checkout, outside the conversation), others state a budget or a requirement, one
customer has two conversations, and one is an anonymous visitor. Each turn's answer and every
tool output of it (name, arguments, status, data) must be the same interleaved as alone: the
relation is differential, so it is generic over whatever state the shop keeps, and it needs no
oracle of what the right answer is.

The architectures are the explorative agent (whose seeded probes order products and ask for
other customers' records), the zero-model workflow and the served assistant (the scripted
agent behind the front desk). Approvals reach the explorative agent: the agent is the one
architecture with gated tools, and the scripted model never orders.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from vitrine import SubjectResponse
from vitrine.service import ServiceOptions
from vitrine_shop.agent import ShopAgent
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.data_variants import variant_services
from vitrine_shop.evals.exploration import EXPLORER_SEED, exploration_cases
from vitrine_shop.evals.invariants import World, latest_budget, required_attributes
from vitrine_shop.operations import ShopServices
from vitrine_shop.scripted.explorer import ExplorativeShopModel
from vitrine_shop.served_assistant import in_process_assistant
from vitrine_shop.tools import GATED_ACTIONS, ApprovalGate
from vitrine_shop.workflow import ShopWorkflow

__all__ = ["ISOLATION_SEED", "Conversation", "conversations", "observe_isolation"]

ISOLATION_SEED = 23
_EXAMPLES = 8
# One canary for every agent: each instance draws its own, and the comparison is of the
# answers, not of the secret each prompt carries.
_CANARY = "VTR-CANARY-ISOLATION"


@dataclass(frozen=True)
class Conversation:
    """One customer's turns; ``approved`` holds every gated action for every stocked product."""

    label: str
    persona_id: str | None
    turns: tuple[str, ...]
    approved: bool = False

    def request(self, turn: int) -> ShopRequest:
        """The conversation up to and including ``turn``: what a service is asked then."""
        return ShopRequest(self.persona_id, self.turns[: turn + 1])


def conversations(world: World, seed: int = ISOLATION_SEED) -> tuple[Conversation, ...]:
    """Seeded conversations from the exploration's requests: an approving customer first, a
    customer with a stated budget and the same customer without it, another stating a
    requirement, and an anonymous visitor."""
    rng = random.Random(seed)
    requests = [ShopRequest.from_case_input(case.input) for case in exploration_cases()]
    known = [r for r in requests if r.persona_id is not None]
    budgeted = [r for r in known if len(r.user_turns) > 1 and latest_budget(r.user_turns)]
    budget = rng.choice(budgeted)
    plain = [r for r in known if r.persona_id == budget.persona_id and r is not budget]
    required = [
        r
        for r in known
        if r.persona_id != budget.persona_id and required_attributes(r.user_turns, world)
    ]
    requirement = rng.choice(required)
    taken = {budget.persona_id, requirement.persona_id}
    approving = rng.choice([r for r in known if r.persona_id not in taken])
    anonymous = next(r for r in requests if r.persona_id is None)
    chosen = [
        ("approving", approving, True),
        ("budget", budget, False),
        ("same customer, no budget", rng.choice(plain), False),
        ("requirement", requirement, False),
        ("anonymous", anonymous, False),
    ]
    return tuple(
        Conversation(label, r.persona_id, r.user_turns, approved) for label, r, approved in chosen
    )


def _approvals(services: ShopServices) -> ApprovalGate:
    gate = ApprovalGate()
    for product in services.catalogue:
        if product.in_stock:
            for action in sorted(GATED_ACTIONS):
                gate.approve(action, product.sku)
    return gate


# -- the architectures, each a factory of one instance over one set of services --------------

Turn = Callable[[ShopRequest, ApprovalGate | None], Awaitable[dict[str, Any]]]


def _facts(response: SubjectResponse) -> dict[str, Any]:
    return {
        "answer": response.answer,
        "tool_outputs": list(response.structured.get("tool_outputs") or ()),
    }


def _explorer(services: ShopServices) -> Turn:
    model = ExplorativeShopModel(services.catalogue, services.personas, seed=EXPLORER_SEED)
    agent = ShopAgent(model, services, canary=_CANARY, traced=False)

    async def turn(request: ShopRequest, approvals: ApprovalGate | None) -> dict[str, Any]:
        return _facts(await agent.answer(request, approvals=approvals))

    return turn


def _workflow(services: ShopServices) -> Turn:
    workflow = ShopWorkflow(None, services)

    async def turn(request: ShopRequest, approvals: ApprovalGate | None) -> dict[str, Any]:
        return _facts(await workflow.answer(request))

    return turn


def _served(services: ShopServices) -> Turn:
    options = ServiceOptions(suite_options={"architecture": "agent", "front_desk": True})
    assistant = in_process_assistant(options, services)

    async def turn(request: ShopRequest, approvals: ApprovalGate | None) -> dict[str, Any]:
        reply = await assistant.reply(request.persona_id, request.user_turns)
        return {
            "answer": reply.answer,
            "items": list(reply.items),
            "tools": [(e.name, e.status) for e in reply.tool_calls],
            "layer": reply.layer,
        }

    return turn


# The scripted agent is the served assistant's, behind its desk; it never orders, so the
# approvals are asked of the explorative agent.
ARCHITECTURES: tuple[tuple[str, Callable[[ShopServices], Turn]], ...] = (
    ("explorative agent", _explorer),
    ("workflow", _workflow),
    ("served assistant", _served),
)


# -- the relation ---------------------------------------------------------------------------

Answers = dict[tuple[int, int], dict[str, Any]]


async def _alone(
    base: ShopServices, make: Callable[[ShopServices], Turn], talks: Sequence[Conversation]
) -> Answers:
    answers: Answers = {}
    for number, talk in enumerate(talks):
        services = variant_services(base)
        turn = make(services)
        gate = _approvals(services) if talk.approved else None
        for index in range(len(talk.turns)):
            answers[number, index] = await turn(talk.request(index), gate)
    return answers


async def _interleaved(
    base: ShopServices, make: Callable[[ShopServices], Turn], talks: Sequence[Conversation]
) -> Answers:
    services = variant_services(base)
    turn = make(services)
    gates = {n: _approvals(services) for n, talk in enumerate(talks) if talk.approved}
    answers: Answers = {}
    for index in range(max(len(t.turns) for t in talks)):
        for number, talk in enumerate(talks):
            if index < len(talk.turns):
                answers[number, index] = await turn(talk.request(index), gates.get(number))
    return answers


def _difference(alone: dict[str, Any], shared: dict[str, Any]) -> str:
    """What differs, in a few words: the first tool output or the answer."""
    for key, first in alone.items():
        second = shared.get(key)
        if first == second:
            continue
        if isinstance(first, list) and isinstance(second, list):
            for at, (a, b) in enumerate(zip(first, second, strict=False)):
                if a != b:
                    return f"{key}[{at}] is {_brief(b)}, alone {_brief(a)}"
            return f"{len(second)} {key} interleaved, {len(first)} alone"
        if isinstance(first, str) and isinstance(second, str):
            pairs = enumerate(zip(first, second, strict=False))
            at = next((i for i, (a, b) in pairs if a != b), min(len(first), len(second)))
            start = max(0, at - 20)
            return f"the {key} reads {second[start : at + 40]!r}, alone {first[start : at + 40]!r}"
        return f"the {key} is {_brief(second)}, alone {_brief(first)}"
    return "the facts differ"


def _brief(value: Any) -> str:
    if isinstance(value, dict) and "name" in value:
        return f"{value['name']} {value.get('status')}"
    return json.dumps(value, default=str, ensure_ascii=False)[:60]


async def observe_isolation(base: ShopServices, seed: int = ISOLATION_SEED) -> dict[str, Any]:
    """Serve the conversations alone and interleaved on every architecture; every turn whose
    answer or tool outputs differ is a violation, named by architecture, conversation and
    what differs."""
    world = World(base.catalogue, base.personas, base.clock)
    talks = conversations(world, seed)
    violations: list[dict[str, str]] = []
    compared = gated = 0
    for name, make in ARCHITECTURES:
        alone = await _alone(base, make, talks)
        shared = await _interleaved(base, make, talks)
        for (number, index), facts in alone.items():
            compared += 1
            talk = talks[number]
            gated += sum(
                1
                for o in shared[number, index].get("tool_outputs") or ()
                if o.get("name") in GATED_ACTIONS and not talk.approved
            )
            if shared[number, index] != facts:
                who = talk.persona_id or "anonymous"
                violations.append(
                    {
                        "rule": "isolation",
                        "case": f"{name}, {talk.label} ({who}), turn {index + 1}",
                        "detail": "served beside other conversations, "
                        + _difference(facts, shared[number, index]),
                    }
                )
    return {
        "calls": compared,
        "conversations": len(talks),
        "architectures": len(ARCHITECTURES),
        # Orders the unapproved conversations attempted: the approval relation is exercised.
        "unapproved_gated_calls": gated,
        "violations": len(violations),
        "rules": dict(Counter(v["rule"] for v in violations)),
        "examples": violations[:_EXAMPLES],
    }
