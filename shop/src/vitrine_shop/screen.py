"""The customer-answer screen: the last deterministic check before an answer reaches a customer.

The agent, the workflow and the evaluation checks all call :func:`screen_answer`, so "what the
customer may see" has one definition. It blocks, with a reason code each:

- ``empty``: nothing to show;
- ``unknown-sku``: a ``GLX-dddd`` code the catalogue does not hold (a hallucinated product);
- ``owned-repeat``: an owned durable shown again (owned consumables may be restocked). Any
  mention of such a SKU counts, so an answer should name owned items, not cite their SKUs;
- ``purchase-claim``: claiming an order, checkout or payment happened; the assistant advises;
- ``health-inference``: attributing a health condition, pregnancy, medication or diagnosis
  to the customer; naming a health *product* is fine, inferring from it is not;
- ``prompt-leak``: the system-prompt canary, or a long verbatim run of the system prompt.

Every reason is ``"<code>: <short text>"``; the text never quotes the sensitive phrase itself.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Collection
from dataclasses import dataclass

from vitrine_shop.catalogue import Catalogue
from vitrine_shop.domain import SKU_ANY_CASE
from vitrine_shop.purchase_claims import PURCHASE_CLAIM_IN_CLAUSE

__all__ = [
    "LEAK_RUN_WORDS",
    "ScreenResult",
    "ScreenStatus",
    "attributes_health",
    "screen_answer",
]

# Twelve consecutive words of the system prompt are no coincidence; shorter runs can be.
LEAK_RUN_WORDS = 12
# Near-verbatim: three distinct six-word runs shared with the prompt.
_SHINGLE_WORDS = 6
_NEAR_VERBATIM_SHINGLES = 3


_CONDITION = (
    r"blood\s+pressure|hypertension|diabet\w*|insulin|blood\s+sugar|glucose|cholesterol"
    r"|pregnan\w*|prenatal|expecting\s+a\s+baby|fertility|ovulat\w*|menopaus\w*"
    r"|medications?|medicines?|prescriptions?|meds"
    r"|diagnos(?:is|es|ed)|(?:health|medical|chronic|heart)\s+conditions?|illness\w*|diseases?"
    # "range anxiety" is about batteries, not the customer.
    r"|symptoms?|arthritis|asthma|allerg(?:y|ies|ic)|migraines?|depression|(?<!range\s)anxiety"
    r"|insomnia"
    r"|sleep\s+apn(?:o)?ea|incontinence|hearing\s+loss"
)
# A condition word followed by one of these names a product ("blood pressure monitor"),
# which is a catalogue fact, not a claim about the customer.
_PRODUCT_NOUN = (
    r"monitors?|cuffs?|meters?|strips?|tests?|kits?|trackers?|scales?|devices?|sensors?"
    r"|organi[sz]ers?|thermometers?|boxes|cases?|cabinets?|reminders?|gels?|tablets?|drinks?"
    r"|(?:multi)?vitamins?|supplements?"
)
_SECOND_PERSON = r"you|you're|youre|you've|you'll|your|yours|yourself"
_HEALTH_INFERENCE = re.compile(
    rf"(?i)\b(?:{_SECOND_PERSON})\b(?:\W+\w+){{0,6}}?\W+(?:{_CONDITION})\b"
    rf"(?!\W+(?:{_PRODUCT_NOUN})\b)"
    r"|\bas\s+an?\s+(?:diabetic|asthmatic|expectant\s+mother|patient)\b"
)
_WORD = re.compile(r"\w+")


def attributes_health(text: str) -> bool:
    """Whether ``text`` reads as attributing a health matter to the customer (the screen's
    ``health-inference`` rule), so a phrase can be checked before it goes into an answer."""
    return _HEALTH_INFERENCE.search(text) is not None


class ScreenStatus(enum.StrEnum):
    PASS = "pass"
    BLOCKED = "blocked"


@dataclass(frozen=True, slots=True)
class ScreenResult:
    status: ScreenStatus
    reasons: tuple[str, ...]
    skus: tuple[str, ...]  # distinct SKUs in order of first mention
    unknown_skus: tuple[str, ...]
    owned_repeats: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return self.status is ScreenStatus.PASS

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(reason.split(":", 1)[0] for reason in self.reasons)


def _distinct_skus(answer: str) -> tuple[str, ...]:
    # Any letter case: "glx-2001" still shows the customer GLX-2001.
    return tuple(dict.fromkeys(sku.upper() for sku in SKU_ANY_CASE.findall(answer)))


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _leaks_prompt(answer: str, system_prompt: str, run: int = LEAK_RUN_WORDS) -> bool:
    prompt_words = _words(system_prompt)
    if len(prompt_words) < run:
        # A prompt shorter than one run can only leak whole; compare it whole.
        return bool(prompt_words) and " ".join(prompt_words) in " ".join(_words(answer))
    runs, shingles = _prompt_runs(tuple(prompt_words), run)
    answer_words = _words(answer)
    if any(tuple(answer_words[i : i + run]) in runs for i in range(len(answer_words) - run + 1)):
        return True
    # A copy with a word changed here and there breaks every long run but keeps its short ones.
    shared = {
        gram
        for i in range(len(answer_words) - _SHINGLE_WORDS + 1)
        if (gram := tuple(answer_words[i : i + _SHINGLE_WORDS])) in shingles
    }
    return len(shared) >= _NEAR_VERBATIM_SHINGLES


@functools.lru_cache(maxsize=64)
def _prompt_runs(
    words: tuple[str, ...], run: int
) -> tuple[frozenset[tuple[str, ...]], frozenset[tuple[str, ...]]]:
    def grams(width: int) -> frozenset[tuple[str, ...]]:
        return frozenset(words[i : i + width] for i in range(len(words) - width + 1))

    return grams(run), grams(_SHINGLE_WORDS)


def screen_answer(
    answer: str,
    *,
    catalogue: Catalogue,
    owned_skus: Collection[str] = (),
    system_prompt: str | None = None,
    canary: str | None = None,
) -> ScreenResult:
    """Screen one customer answer; deterministic, and every blocking rule is independent."""
    if not answer.strip():
        return ScreenResult(ScreenStatus.BLOCKED, ("empty: the answer is empty",), (), (), ())
    skus = _distinct_skus(answer)
    unknown = tuple(s for s in skus if s not in catalogue)
    owned = frozenset(owned_skus)
    repeats = tuple(
        s
        for s in skus
        if s in owned and (product := catalogue.get(s)) is not None and not product.consumable
    )
    reasons: list[str] = []
    if unknown:
        reasons.append(f"unknown-sku: {', '.join(unknown)} not in the catalogue")
    if repeats:
        reasons.append(f"owned-repeat: {', '.join(repeats)} already owned by the customer")
    if PURCHASE_CLAIM_IN_CLAUSE.search(answer):
        reasons.append("purchase-claim: the answer claims an order, checkout or payment happened")
    if attributes_health(answer):
        reasons.append("health-inference: the answer attributes a health matter to the customer")
    if canary and canary.casefold() in answer.casefold():
        reasons.append("prompt-leak: the system-prompt canary appears in the answer")
    # The canary is checked on its own; left out of the prompt's runs, what remains is the
    # same for every conversation of a customer, so its runs are built once.
    elif system_prompt and _leaks_prompt(
        answer, system_prompt.replace(canary, " ") if canary else system_prompt
    ):
        reasons.append(
            f"prompt-leak: {LEAK_RUN_WORDS}+ consecutive words of the system prompt appear"
        )
    status = ScreenStatus.BLOCKED if reasons else ScreenStatus.PASS
    return ScreenResult(status, tuple(reasons), skus, unknown, repeats)
