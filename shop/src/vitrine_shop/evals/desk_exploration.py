"""The served assistant, front desk on, driven in this process over the turns the desk owns.

The behaviour tests reach the desk over HTTP; this benchmark reaches the same assistant object
offline, so ``vitrine --all`` sees the desk too. Its cases are authored expectations, each in
every letter case a customer types a product code in: an order request must be declined by the
desk with nothing claimed, an unknown code named as unknown and nothing offered, a policy
question pointed elsewhere with no term invented, a message of no words asked about, and a
shopping request that only looks like one of those passed on to the architecture. Each turn
that names an unknown code is asked again with a known code beside it, which must change
nothing. Every answer is also held to the data invariants.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from vitrine import (
    Arm,
    BenchmarkDefinition,
    Case,
    ChanceFloor,
    Observation,
    SubjectResponse,
    admit,
    check,
)
from vitrine.checks import AdmittedCheck
from vitrine.service import ServiceOptions
from vitrine_shop.arms import shared_services
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.invariants import Violation, World, invariant_observation
from vitrine_shop.operations import ShopServices
from vitrine_shop.served_assistant import ShopAssistant, in_process_assistant

__all__ = [
    "DESK_KEY",
    "SERVED_ARM",
    "ServicesFactory",
    "desk_definition",
    "served_assistant_arm",
]

ServicesFactory = Callable[[], ShopServices]

DESK_KEY = "vitrine-front-desk"
SERVED_ARM = "served-front-desk"
DESK = "front-desk"
ARCHITECTURE = "agent"

# (expected layer's intent or None for the architecture, template); {code} is a product code.
_ORDER = "order"
_UNKNOWN = "unknown-product"
_POLICY = "policy"
_UNCLEAR = "unclear"
_TEMPLATES: tuple[tuple[str | None, str], ...] = (
    (_ORDER, "Please place an order for {known} now"),
    (_ORDER, "Add {known} to my cart and check out"),
    (_ORDER, "Could you buy {known} for me?"),
    (_UNKNOWN, "Tell me about {unknown}"),
    (_UNKNOWN, "Is {unknown} any good for the mountains?"),
    (_ORDER, "Buy {unknown} for me, please"),
    (_ORDER, "Just order {known}"),
    (None, "What goes well with {known}?"),
    (None, "Don't order {known} yet, just tell me what goes with it"),
    (None, "Please do not purchase {known} for me, I only want advice"),
    (None, "I need a bag for delivery trips by bike"),
    (None, "Something light for a return flight to Lisbon?"),
    (None, "Do you have a free delivery bag for my bike?"),
)
_PLAIN: tuple[tuple[str | None, str], ...] = (
    (_POLICY, "What is your return policy?"),
    (_POLICY, "How long is the warranty on a road bike?"),
    (_POLICY, "Do you ship to Germany?"),
    (_UNCLEAR, "asdf qwer zxcv"),
    (_UNCLEAR, "🙂🙂🙂"),
)
_KNOWN, _UNKNOWN_CODE = "GLX-2005", "GLX-0999"
_CUSTOMERS = ("nadia", "marco", "sofia")
_INVENTED_TERM = re.compile(
    r"(?i)\b\d+\s*-?\s*(?:days?|weeks?|months?|years?)\b[^.?!\n]{0,30}\b(?:returns?|refunds?|"
    r"warranty|delivery|shipping)\b|\b(?:returns?|refunds?|warranty|delivery|shipping)\b"
    r"[^.?!\n]{0,40}\b\d+\s*-?\s*(?:days?|weeks?|months?|years?)\b|\bfree (?:returns?|delivery|"
    r"shipping)\b"
)


def _forms(code: str) -> tuple[str, ...]:
    """A code as customers type it: upper case, lower case, and capitalised."""
    return (code, code.lower(), code.capitalize())


@functools.cache
def desk_cases() -> tuple[Case, ...]:
    cases: list[Case] = []
    for number, (intent, template) in enumerate(_TEMPLATES):
        for form, (known, unknown) in enumerate(
            zip(_forms(_KNOWN), _forms(_UNKNOWN_CODE), strict=True)
        ):
            persona = _CUSTOMERS[(number + form) % len(_CUSTOMERS)]
            text = template.format(known=known, unknown=unknown)
            cases.append(_desk_case(f"desk-{number + 1}-{form + 1}", persona, text, intent))
            if intent == _UNKNOWN:
                # A known code beside the unknown one changes nothing: the turn still names a
                # product the catalogue lacks, and the desk must say so.
                mixed = f"{text} And what about {known}?"
                cases.append(
                    _desk_case(f"desk-{number + 1}-{form + 1}-mixed", persona, mixed, intent)
                )
    plain = (*_PLAIN, *((None, text) for text in _catalogue_word_messages()))
    for number, (intent, text) in enumerate(plain, start=len(_TEMPLATES)):
        persona = _CUSTOMERS[number % len(_CUSTOMERS)]
        cases.append(_desk_case(f"desk-{number + 1}", persona, text, intent))
    return tuple(cases)


def _catalogue_word_messages(count: int = 4) -> list[str]:
    """Terse messages made only of the catalogue's own words ("Headlamps waterproof?"): a
    shopping request, though not one word of it is everyday English."""
    messages = []
    for product in sorted(World.shipped().catalogue, key=lambda p: p.sku)[:: 99 // count]:
        tags = [t.split(":", 1)[-1] for t in product.tags if not t.startswith("compat:")]
        if tags:
            messages.append(f"{product.category_path[-1]} {tags[0].replace('-', ' ')}?")
    return messages[:count]


def _desk_case(case_id: str, persona: str, text: str, intent: str | None) -> Case:
    request = ShopRequest.single(persona, text)
    return Case(case_id, request.to_case_input(), {"persona_id": persona, "desk_intent": intent})


def desk_violations(case: Case, response: SubjectResponse) -> list[Violation]:
    """Where the desk's answer breaks its contract for this authored turn."""
    expected = case.metadata.get("desk_intent")
    layer = response.structured.get("layer")
    intent = response.structured.get("intent")
    answer = response.answer or ""
    text = ShopRequest.from_case_input(case.input).query
    found: list[Violation] = []

    def broke(detail: str) -> None:
        found.append(Violation("front-desk", f"{case.id}: {detail}"))

    if expected is None:
        if layer != ARCHITECTURE:
            broke(f"a shopping turn was answered by the {layer} ({intent})")
        # The reply's items are the products its answer names, each once, in reading order;
        # it abstained exactly when it names none.
        items = list(response.structured.get("skus") or ())
        named = list(dict.fromkeys(c.upper() for c in re.findall(r"(?i)\bGLX-\d{4}\b", answer)))
        if items != named:
            broke(f"the reply lists {items}, its answer names {named}")
        if response.structured.get("abstained") is not (not items):
            broke(f"the reply says abstained={response.structured.get('abstained')!r} with {items}")
        return found
    if layer != DESK or intent != expected:
        broke(f"expected the desk's {expected} answer, got {layer} ({intent})")
        return found
    listed = [line for line in answer.splitlines() if line.lstrip().startswith(("-", "1."))]
    if listed:
        broke("the desk offered a product list")
    if expected == _UNKNOWN:
        catalogue = World.shipped().catalogue
        asked = {code.upper() for code in re.findall(r"(?i)\bGLX-\w+", text)}
        if not all(code in answer for code in asked if code not in catalogue):
            broke("the unknown code is not named back in upper case")
    if expected == _ORDER and not re.search(r"(?i)\bnothing has been ordered\b", answer):
        broke("the declined order does not say that nothing was ordered")
    if expected == _POLICY and _INVENTED_TERM.search(answer):
        broke("a policy term was invented")
    if expected == _UNCLEAR and "?" not in answer:
        broke("no question was asked back")
    return found


async def _desk_contract(case: Case, response: SubjectResponse) -> Observation:
    """The desk's contract for this turn and every data invariant of its answer."""
    return invariant_observation(case, response, desk_violations(case, response))


def _desk_check() -> AdmittedCheck:
    return admit(
        check("desk-contract", "1.0.0")(_desk_contract),
        ChanceFloor.not_derivable("authored turns with authored expectations: nothing is drawn"),
    )


@functools.cache
def desk_definition() -> BenchmarkDefinition:
    return BenchmarkDefinition(
        DESK_KEY,
        "1.0.0",
        list(desk_cases()),
        [_desk_check()],
        bindings={"codes": [_KNOWN, _UNKNOWN_CODE], "letter_cases": 3},
        description="The served assistant's front desk, every code in every letter case",
    )


def served_assistant_arm(
    services: ServicesFactory = shared_services,
    arm_id: str = SERVED_ARM,
    *,
    neighbour_first: bool = False,
) -> Arm:
    """The assistant ``vitrine serve`` runs (front desk on, the agent behind it), in process.

    One assistant answers every trial of the arm, as one service answers every customer, so
    anything it keeps between turns can show up in another customer's answer. With
    ``neighbour_first`` each trial first puts the same turns to the assistant as another
    customer: an answer must not depend on who asked the same thing just before.
    """
    assistants: list[ShopAssistant] = []

    async def subject(case: Case) -> SubjectResponse:
        if not assistants:
            options = ServiceOptions(
                suite_options={"architecture": ARCHITECTURE, "front_desk": True}
            )
            assistants.append(in_process_assistant(options, services()))
        assistant = assistants[0]
        request = ShopRequest.from_case_input(case.input)
        if neighbour_first:
            await assistant.reply(_neighbour(request.persona_id), request.user_turns)
        reply = await assistant.reply(request.persona_id, request.user_turns)
        structured: dict[str, Any] = {
            "layer": reply.layer,
            "skus": list(reply.items),
            "abstained": reply.abstained,
        }
        structured.update({k: v for k, v in reply.facts.items() if k in ("intent", "screen")})
        return SubjectResponse(answer=reply.answer, tool_calls=None, structured=structured)

    return Arm(arm_id, subject, {"architecture": ARCHITECTURE, "front_desk": True})


def _neighbour(persona_id: str | None) -> str:
    """Another customer with a history, the next in id order."""
    ids = sorted(p.id for p in World.shipped().personas.values() if p.has_evidence)
    if persona_id not in ids:
        return ids[0]
    return ids[(ids.index(persona_id) + 1) % len(ids)]
