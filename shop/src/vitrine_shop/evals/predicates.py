"""The five recommendation predicates of the canonical benchmark.

Each is deterministic and observes what the subject produced: the screen verdict the subject
recorded *before* delivery (``structured["screen"]``), and the customer-facing answer read
line by line. Their floors are not derivable: there is no population of random answers that a
chance rate could be drawn from.

- screened-deliverable: a non-empty answer whose own pre-delivery screen passed; an answer the
  screen blocked and a fallback replaced is a measured failure, however harmless the fallback.
- catalogued-sku: at least one SKU, every one of them in the catalogue.
- customer-reason: every recommended line gives its own reason (a *why*, in words), not a dash.
- no-purchase-claim: non-empty, and nothing claims an order, checkout or payment.
- interest-grounding: every recommended line's reason names something of *this* customer:
  their request's terms, their stated interests, the names or categories of what they bought,
  saved or viewed, or (for a restock) the date they bought that very item.

Measurement semantics: no answer object at all is not applicable (nothing to test); a present
but empty answer is a measured failure, never absence and never a perfect avoidance score. A
non-empty answer from a subject that recorded no screen verdict cannot be judged on its screen
(not measured), because re-running the screen here would only repeat the subject's own call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from vitrine import Authority, Case, ChanceFloor, Observation, SubjectResponse, admit
from vitrine.checks import AdmittedCheck
from vitrine_shop.catalogue import Catalogue
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.domain import SKU_IN_TEXT, Persona
from vitrine_shop.purchase_claims import PURCHASE_CLAIM_IN_SENTENCE

__all__ = [
    "INTEREST_PATTERN",
    "RECOMMENDATION_CHECK_KEYS",
    "RecommendedLine",
    "customer_terms",
    "recommendation_checks",
    "recommended_lines",
]

# The offline judge's coarse "does the answer connect to the customer" rule; the predicates
# judge each recommended line instead.
INTEREST_PATTERN = re.compile(
    r"(?i)interest|because of|based on|your (history|request|need|preference)"
    r"|you (bought|own|saved|viewed)|didn't ask"
)
# A reason says why: a causal or fitting connective, not a bare product description.
_WHY = re.compile(
    r"(?i)\b(because|based on|since|fits?|goes with|works with|so that|so|for your|as you)\b"
)
_PRICE_REF = re.compile(r"^\W*(?:CHF\s*(\d+(?:\.\d+)?))?\W*")
_WORD = re.compile(r"[a-zà-ÿ]{3,}")
_MIN_REASON_WORDS = 3
# Words too common to tie a reason to anyone in particular.
_COMMON_WORDS = """the and for with your you this that from have are was what any anything
something everything about more also good like want need into over under some just very idea
ideas new set use item items thing things feel missing might would could should there here which
when usually year few lot get add recommend suggest pick picks best great nice"""
_COMMON = frozenset(_COMMON_WORDS.split())

RECOMMENDATION_CHECK_KEYS = (
    "screened-deliverable",
    "catalogued-sku",
    "customer-reason",
    "no-purchase-claim",
    "interest-grounding",
)

PersonaLookup = Callable[[str], Persona | None]
Decision = tuple[bool | None, dict[str, object]]


@dataclass(frozen=True, slots=True)
class RecommendedLine:
    """One line of an answer that recommends a product: its SKU, the price the line states
    right after it (None when it states none) and the reason given for it."""

    sku: str
    reason: str
    price_chf: Decimal | None = None


def recommended_lines(answer: str) -> list[RecommendedLine]:
    """Each answer line naming a SKU, with the words that follow its name, SKU and price."""
    lines = []
    for text in answer.splitlines():
        match = SKU_IN_TEXT.search(text)
        if match is None:
            continue
        tail = text[match.end() :]
        price = _PRICE_REF.match(tail)
        stated = price.group(1) if price else None
        reason = tail[price.end() :] if price else tail
        lines.append(
            RecommendedLine(
                match.group(0),
                reason.strip(" )]—–-:,.").strip(),
                Decimal(stated) if stated else None,
            )
        )
    return lines


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold())) - _COMMON


def customer_terms(
    persona: Persona | None, catalogue: Catalogue, turns: tuple[str, ...]
) -> set[str]:
    """The words that are this customer's own: request, stated interests, their products."""
    terms = set().union(*(_words(turn) for turn in turns))
    if persona is None:
        return terms
    terms |= set().union(*(_words(i) for i in persona.interests))
    skus = persona.owned_skus | set(persona.saved_items) | set(persona.viewed_items)
    for sku in skus:
        product = catalogue.get(sku)
        if product is not None:
            terms |= _words(" ".join((product.name, *product.category_path, *product.contexts)))
    return terms


@dataclass(frozen=True, slots=True)
class _Predicate:
    """A recommendation predicate over the subject's response."""

    key: str
    decide: Callable[[Case, str, Mapping[str, Any]], Decision]
    version: str = "2.0.0"

    async def evaluate(self, case: Case, response: SubjectResponse) -> Observation:
        if response.answer is None:
            return Observation.not_applicable("the subject returned no answer object")
        passed, evidence = self.decide(case, response.answer, response.structured)
        if passed is None:
            return Observation.not_measured(str(evidence.get("why")), evidence=evidence)
        return Observation.measured(1.0 if passed else 0.0, passed, evidence=evidence)


def _persona_id(case: Case) -> str | None:
    value = case.metadata.get("persona_id")
    return value if isinstance(value, str) else None


def _turns(case: Case) -> tuple[str, ...]:
    try:
        return ShopRequest.from_case_input(case.input).user_turns
    except (TypeError, ValueError):
        return ()


def recommendation_checks(
    catalogue: Catalogue, personas: Mapping[str, Persona]
) -> tuple[AdmittedCheck, ...]:
    """The five predicates, admitted with not-derivable floors and their reasons.

    They are admitted as diagnostics: the canonical benchmark describes how the arms compare
    (the degraded arm fails every predicate by design) and never sets the exit code, which is
    the production gates' alone. A gate label on them would claim an authority they do not have.

    ``personas`` holds the customers the cases name: what they asked, are interested in and
    bought is what a reason must be tied to.
    """

    def screened(case: Case, answer: str, structured: Mapping[str, Any]) -> Decision:
        if not answer.strip():
            return False, {"screen": "empty answer"}
        verdict = structured.get("screen")
        if not isinstance(verdict, Mapping) or "status" not in verdict:
            return None, {"why": "the subject recorded no screen verdict before delivery"}
        blocked = verdict.get("status") != "pass" or structured.get("withheld") is True
        return not blocked, {
            "screen": "blocked before delivery" if blocked else "pass",
            "reasons": list(verdict.get("reasons") or ()),
        }

    def catalogued(case: Case, answer: str, structured: Mapping[str, Any]) -> Decision:
        skus = sorted(set(SKU_IN_TEXT.findall(answer)))
        unknown = [sku for sku in skus if sku not in catalogue]
        return bool(skus) and not unknown, {"skus": skus, "unknown": unknown}

    def reason(case: Case, answer: str, structured: Mapping[str, Any]) -> Decision:
        lines = recommended_lines(answer)
        bare = [
            line.sku
            for line in lines
            if len(_WORD.findall(line.reason.casefold())) < _MIN_REASON_WORDS
            or not _WHY.search(line.reason)
        ]
        return bool(lines) and not bare, {"lines": len(lines), "without_reason": bare}

    def no_claim(case: Case, answer: str, structured: Mapping[str, Any]) -> Decision:
        match = PURCHASE_CLAIM_IN_SENTENCE.search(answer)
        return bool(answer.strip()) and match is None, {
            "empty": not answer.strip(),
            "claim": match.group(0) if match else None,
        }

    def grounded(case: Case, answer: str, structured: Mapping[str, Any]) -> Decision:
        persona_id = _persona_id(case)
        persona = personas.get(persona_id) if persona_id else None
        terms = customer_terms(persona, catalogue, _turns(case))
        bought: dict[str, set[str]] = {}
        for purchase in persona.purchase_history if persona else ():
            bought.setdefault(purchase.sku, set()).add(purchase.date.isoformat())
        lines = recommended_lines(answer)
        ungrounded = []
        for line in lines:
            tied = _words(line.reason) & terms
            dated = any(d in line.reason for d in bought.get(line.sku, ()))
            if not tied and not dated:
                ungrounded.append(line.sku)
        return bool(lines) and not ungrounded, {"lines": len(lines), "ungrounded": ungrounded}

    no_population = "a deterministic predicate over open-ended language: no random-draw population"
    floors = {
        "screened-deliverable": f"{no_population}; the screen is a rule set, not a sampler",
        "catalogued-sku": f"{no_population}; SKU mentions are not drawn from the catalogue",
        "customer-reason": f"{no_population}; reason phrasing has no authored base rate",
        "no-purchase-claim": f"{no_population}; claims are an invariant, not a draw",
        "interest-grounding": f"{no_population}; grounding phrasing has no authored base rate",
    }
    deciders = {
        "screened-deliverable": screened,
        "catalogued-sku": catalogued,
        "customer-reason": reason,
        "no-purchase-claim": no_claim,
        "interest-grounding": grounded,
    }
    return tuple(
        admit(
            _Predicate(key, deciders[key]),
            ChanceFloor.not_derivable(floors[key]),
            Authority.DIAGNOSTIC,
        )
        for key in RECOMMENDATION_CHECK_KEYS
    )
