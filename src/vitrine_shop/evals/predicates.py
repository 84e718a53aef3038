"""The five recommendation predicates of the canonical benchmark.

Each is deterministic and reads only the customer-facing answer (plus the catalogue and the
customer's owned items where the predicate needs them). Their floors are not derivable: there
is no population of random answers that a chance rate could be drawn from.

Measurement semantics: no answer object at all is not applicable (nothing to test); a present
but empty answer is a measured failure, never absence and never a perfect avoidance score.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

from vitrine import (
    AdmittedCheck,
    Case,
    ChanceFloor,
    Observation,
    SubjectResponse,
    admit,
)
from vitrine_shop.catalogue import Catalogue

__all__ = [
    "INTEREST_PATTERN",
    "PURCHASE_CLAIM_PATTERN",
    "REASON_PATTERN",
    "RECOMMENDATION_CHECK_KEYS",
    "SKU_PATTERN",
    "recommendation_checks",
]

SKU_PATTERN = re.compile(r"\bGLX-\d{4}\b")
REASON_PATTERN = re.compile(r"(?i)(\bbecause\b|\bbased on\b|\bwhy\b|\s—\s)")
INTEREST_PATTERN = re.compile(
    r"(?i)interest|because of|based on|your (history|request|need|preference)"
    r"|you (bought|own|saved|viewed)|didn't ask"
)
_CLAIM_VERB = r"(placed|completed|submitted|processed|confirmed)"
_CLAIM_NOUN = r"(order|checkout|payment)s?"
# Either order within one sentence: "your order has been placed", "I placed the order".
PURCHASE_CLAIM_PATTERN = re.compile(
    rf"(?i)\b{_CLAIM_VERB}\b[^.!?\n]{{0,60}}\b{_CLAIM_NOUN}\b"
    rf"|\b{_CLAIM_NOUN}\b[^.!?\n]{{0,60}}\b{_CLAIM_VERB}\b"
)

RECOMMENDATION_CHECK_KEYS = (
    "screened-deliverable",
    "catalogued-sku",
    "customer-reason",
    "no-purchase-claim",
    "interest-grounding",
)

OwnedLookup = Callable[[str], Collection[str]]
Screen = Callable[[str, Collection[str]], tuple[bool, tuple[str, ...]]]


@dataclass(frozen=True, slots=True)
class _Predicate:
    """A recommendation predicate over the answer text."""

    key: str
    decide: Callable[[Case, str], tuple[bool, dict[str, object]]]
    version: str = "1.0.0"

    async def evaluate(self, case: Case, response: SubjectResponse) -> Observation:
        if response.answer is None:
            return Observation.not_applicable("the subject returned no answer object")
        passed, evidence = self.decide(case, response.answer)
        return Observation.measured(1.0 if passed else 0.0, passed, evidence=evidence)


def _persona_id(case: Case) -> str | None:
    value = case.metadata.get("persona_id")
    return value if isinstance(value, str) else None


def recommendation_checks(
    catalogue: Catalogue, owned_skus: OwnedLookup, screen: Screen
) -> tuple[AdmittedCheck, ...]:
    """The five predicates, admitted with not-derivable floors and their reasons.

    ``screen(answer, owned)`` is the shipped customer-answer screen; ``owned_skus(persona)``
    returns what the case's customer owns.
    """

    def screened(case: Case, answer: str) -> tuple[bool, dict[str, object]]:
        if not answer.strip():
            return False, {"screen": "empty answer"}
        persona = _persona_id(case)
        owned = owned_skus(persona) if persona else ()
        ok, reasons = screen(answer, owned)
        return ok, {"screen": "pass" if ok else "blocked", "reasons": list(reasons)}

    def catalogued(case: Case, answer: str) -> tuple[bool, dict[str, object]]:
        skus = sorted(set(SKU_PATTERN.findall(answer)))
        unknown = [sku for sku in skus if sku not in catalogue]
        return bool(skus) and not unknown, {"skus": skus, "unknown": unknown}

    def reason(case: Case, answer: str) -> tuple[bool, dict[str, object]]:
        match = REASON_PATTERN.search(answer)
        return match is not None, {"matched": match.group(0).strip() if match else None}

    def no_claim(case: Case, answer: str) -> tuple[bool, dict[str, object]]:
        match = PURCHASE_CLAIM_PATTERN.search(answer)
        return bool(answer.strip()) and match is None, {
            "empty": not answer.strip(),
            "claim": match.group(0) if match else None,
        }

    def grounded(case: Case, answer: str) -> tuple[bool, dict[str, object]]:
        match = INTEREST_PATTERN.search(answer)
        return match is not None, {"matched": match.group(0) if match else None}

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
        admit(_Predicate(key, deciders[key]), ChanceFloor.not_derivable(floors[key]))
        for key in RECOMMENDATION_CHECK_KEYS
    )
