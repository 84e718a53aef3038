"""Conversation memory: the constraints a customer stated earlier, and a judge of their recall.

A constraint said in the first turn ("my maximum budget is CHF 250") still binds the answer to
the last. :func:`extract_constraints` reads them back out of the user turns so a recommender can
filter on them and say which ones it honoured; :func:`judge_recall` then checks, without a
model, whether an answer *restates* the facts a scenario expects and none it forbids. Words
are not behaviour: the recall gate judges the items actually recommended, from the catalogue
(``vitrine_shop.evals.defences``), and keeps this word-level reading only as a diagnostic.

Expected and forbidden facts always come from the scenario, never from the response: a judge
that learned its facts from the answer could only ever agree with it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any

from vitrine_shop.conversation import ShopRequest

__all__ = [
    "BUDGET",
    "RECALL_PROBE",
    "RECALL_REQUEST",
    "Constraints",
    "MemoryProbe",
    "RecallJudgment",
    "extract_constraints",
    "judge_recall",
    "normalise_text",
]

# The key that names the budget constraint when one is forgotten on purpose (the ablation);
# attribute constraints are named by the attribute itself ("waterproof").
BUDGET = "budget"

_AMOUNT = r"(\d{1,6}(?:[.,]\d{1,2})?)(?:\.-|\.–)?"
# "CHF 250", "250 CHF", "250 francs", "Fr. 250": the currency on either side of the amount.
_MONEY = rf"(?:(?:chf|fr\.?|sfr\.?)\s*{_AMOUNT}|{_AMOUNT}\s*(?:chf|francs?|fr\b\.?))"
_BUDGET_PATTERNS = (
    # "my maximum budget is CHF 250", "budget: 250 CHF", "budget of around CHF 250"
    re.compile(rf"\bbudget\b[^.!?\d]{{0,40}}?{_MONEY}", re.IGNORECASE),
    # "at most / up to / under / no more than / max CHF 250"
    re.compile(
        rf"\b(?:at most|up to|under|below|less than|no more than|not more than|max(?:imum)?)"
        rf"\s+(?:of\s+)?{_MONEY}",
        re.IGNORECASE,
    ),
    # "CHF 250 max", "250 francs at most"
    re.compile(rf"{_MONEY}\s+(?:max(?:imum)?|at most|tops)\b", re.IGNORECASE),
)
# "it must be waterproof", "they have to be lightweight", "needs to be compact"
_REQUIRED_ATTRIBUTE = re.compile(
    r"\b(?:must|has to|have to|needs? to|should)\s+be\s+(?:really\s+|very\s+|fully\s+)?"
    r"([a-z][a-z-]{2,30})\b",
    re.IGNORECASE,
)
# "I don't want anything from Kochwerk", "no gaming stuff please", "please avoid espresso"
_EXCLUSION = re.compile(
    r"\b(?:i\s+(?:do not|don't)\s+want|please\s+avoid|avoid|nothing\s+(?:from|with))\s+"
    r"(?:any\s+|anything\s+(?:from\s+|with\s+)?|a\s+|an\s+)?([a-z][a-z-]{2,30})\b",
    re.IGNORECASE,
)
# Words that follow "must be" without naming a product attribute.
_NOT_ATTRIBUTES = frozenset(
    {"able", "the", "that", "this", "for", "from", "here", "there", "done", "possible", "sure"}
)


@dataclass(frozen=True, slots=True)
class Constraints:
    """What the customer said the recommendation must respect."""

    max_price_chf: Decimal | None = None
    required_attributes: tuple[str, ...] = ()
    excluded_terms: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return (
            self.max_price_chf is None and not self.required_attributes and not self.excluded_terms
        )

    @property
    def keys(self) -> tuple[str, ...]:
        """The name of every constraint held, as :meth:`forget` accepts it."""
        budget = (BUDGET,) if self.max_price_chf is not None else ()
        return budget + self.required_attributes + self.excluded_terms

    def forget(self, key: str | None) -> Constraints:
        """A copy without one constraint: the memory ablation. Unknown keys change nothing."""
        if key is None:
            return self
        if key == BUDGET:
            return replace(self, max_price_chf=None)
        return replace(
            self,
            required_attributes=tuple(a for a in self.required_attributes if a != key),
            excluded_terms=tuple(t for t in self.excluded_terms if t != key),
        )

    def admits(self, *, price_chf: Decimal | float | str | None, text: str) -> bool:
        """Whether a product with this price and descriptive text honours every constraint.

        ``text`` is everything known about the product (name, tags, specs, description); a
        required attribute must appear in it and an excluded term must not.
        """
        if not self.affords(price_chf):
            return False
        if len(self.attributes_in(text)) < len(self.required_attributes):
            return False
        return not self.excludes(text)

    def excludes(self, text: str) -> bool:
        """Whether ``text`` names something the customer ruled out ("nothing from Kochwerk")."""
        words = normalise_text(text)
        return any(_contains(words, normalise_text(t)) for t in self.excluded_terms)

    def affords(self, price_chf: Decimal | float | str | None) -> bool:
        """Whether the price is within the stated budget (always, when none was stated)."""
        if self.max_price_chf is None:
            return True
        price = _decimal(price_chf)
        return price is not None and price <= self.max_price_chf

    def attributes_in(self, text: str) -> tuple[str, ...]:
        """The required attributes that ``text`` shows, in the order they were stated."""
        words = normalise_text(text)
        return tuple(a for a in self.required_attributes if _contains(words, normalise_text(a)))

    def restatements(self) -> tuple[str, ...]:
        """How an answer says which constraints it honoured, one phrase per constraint."""
        phrases: list[str] = []
        if self.max_price_chf is not None:
            phrases.append(f"within your CHF {_format_amount(self.max_price_chf)} budget")
        phrases.extend(f"it must be {attribute}" for attribute in self.required_attributes)
        phrases.extend(f"nothing {term}" for term in self.excluded_terms)
        return tuple(phrases)

    def search_terms(self) -> tuple[str, ...]:
        """Words worth adding to a search query (prices are filters, not search words)."""
        return self.required_attributes

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_price_chf": None if self.max_price_chf is None else str(self.max_price_chf),
            "required_attributes": list(self.required_attributes),
            "excluded_terms": list(self.excluded_terms),
        }


def extract_constraints(user_turns: Iterable[str]) -> Constraints:
    """Read the constraints stated anywhere in the conversation; later statements win.

    Only what the customer said counts: nothing is inferred from a profile or a purchase.
    """
    budget: Decimal | None = None
    attributes: list[str] = []
    exclusions: list[str] = []
    for turn in user_turns:
        for pattern in _BUDGET_PATTERNS:
            match = pattern.search(turn)
            if match:
                amount = next(g for g in match.groups() if g)
                budget = _decimal(amount.replace(",", "."))
                break
        for match in _REQUIRED_ATTRIBUTE.finditer(turn):
            attribute = match.group(1).casefold()
            if attribute not in _NOT_ATTRIBUTES and attribute not in attributes:
                attributes.append(attribute)
        for match in _EXCLUSION.finditer(turn):
            term = match.group(1).casefold()
            if term not in exclusions:
                exclusions.append(term)
    return Constraints(budget, tuple(attributes), tuple(exclusions))


# --- recall judging ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemoryProbe:
    """A recall question with the facts its answer must carry and the facts it must not."""

    question: str
    expected_facts: tuple[str, ...]
    forbidden_facts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.expected_facts:
            # With nothing expected every answer scores perfectly: the probe could not fail.
            raise ValueError("a memory probe needs at least one expected fact")
        if any(not normalise_text(f) for f in (*self.expected_facts, *self.forbidden_facts)):
            raise ValueError("memory facts must contain at least one letter or digit")


@dataclass(frozen=True, slots=True)
class RecallJudgment:
    """The deterministic ruling on one answer: ``score`` is the fraction of facts recalled."""

    score: float
    found: tuple[str, ...]
    missing: tuple[str, ...]
    forbidden_found: tuple[str, ...]
    explanation: str

    @property
    def recalled(self) -> int:
        return len(self.found)

    @property
    def expected(self) -> int:
        return len(self.found) + len(self.missing)

    @property
    def passed(self) -> bool:
        return not self.missing and not self.forbidden_found

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "found": list(self.found),
            "missing": list(self.missing),
            "forbidden_found": list(self.forbidden_found),
            "explanation": self.explanation,
        }


def judge_recall(answer: str | None, probe: MemoryProbe) -> RecallJudgment:
    """Which expected and forbidden facts the answer states, matched as whole words.

    Matching ignores case, accents, punctuation and spacing, and reads "CHF 250.00" and
    "CHF 250.-" as "CHF 250", so a fact is found however the answer punctuates it but never
    inside a longer number or word ("CHF 25" is not in "CHF 250").
    """
    words = normalise_text(answer or "")
    found = tuple(f for f in probe.expected_facts if _contains(words, normalise_text(f)))
    missing = tuple(f for f in probe.expected_facts if f not in found)
    forbidden = tuple(f for f in probe.forbidden_facts if _contains(words, normalise_text(f)))
    score = len(found) / len(probe.expected_facts)
    parts = [f"recalled {len(found)} of {len(probe.expected_facts)} expected facts"]
    if missing:
        parts.append("missing: " + "; ".join(missing))
    if forbidden:
        parts.append("stated forbidden: " + "; ".join(forbidden))
    if answer is None:
        parts.append("there was no answer")
    return RecallJudgment(score, found, missing, forbidden, ", ".join(parts))


# Pure, and asked for the same product texts and constraint words in every candidate check.
@functools.lru_cache(maxsize=4096)
def normalise_text(text: str) -> tuple[str, ...]:
    """Text as a tuple of comparable words (see :func:`judge_recall` for the rules)."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().casefold()
    # Swiss prices: "250.00", "250.-" and "250.–" all mean 250.
    folded = re.sub(r"(\d)[.,](?:00|-)(?!\d)", r"\1", folded)
    return tuple(re.findall(r"[a-z0-9]+", folded))


def _contains(words: Sequence[str], fact: Sequence[str]) -> bool:
    if not fact:
        return False
    width = len(fact)
    return any(tuple(words[i : i + width]) == tuple(fact) for i in range(len(words) - width + 1))


def _decimal(value: Decimal | float | str | None) -> Decimal | None:
    if value is None:
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _format_amount(amount: Decimal) -> str:
    return str(amount.quantize(Decimal(1))) if amount == amount.to_integral() else f"{amount:.2f}"


# --- the canonical two-constraint recall scenario ------------------------------------------

#: Nadia states two constraints in separate turns, then asks for a recommendation; a
#: recommender with working memory honours and restates both.
RECALL_REQUEST = ShopRequest(
    "nadia",
    (
        "I'm getting ready for this season's hut-to-hut tours; my maximum budget is CHF 250.",
        "For the rain gear, it must be waterproof.",
        "What would you recommend for my next hut trip?",
    ),
)

#: The facts are phrased as the answer restates a constraint rather than as bare keywords:
#: "waterproof" alone also appears in product names, so an answer that forgot the
#: requirement could still contain the word by accident and be credited with recalling it.
RECALL_PROBE = MemoryProbe(
    question=RECALL_REQUEST.query,
    expected_facts=("CHF 250", "must be waterproof"),
    forbidden_facts=("not waterproof", "no budget"),
)
