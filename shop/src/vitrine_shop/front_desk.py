"""The shop's front desk: the turns a recommender must not improvise, answered before any model.

A recommendation assistant sees the catalogue and the customer's history, nothing else. Four
kinds of turn therefore get a fixed, honest answer instead of a model's guess:

- ``order``: the customer asks the *assistant* to buy, order, pay or fill a cart. Ordering
  needs the customer's own approval at checkout, so the desk declines and says nothing was
  ordered. A customer asking what *they* should buy is shopping, not ordering.
- ``unknown-product``: a product code the catalogue does not hold.
- ``policy``: a question about the shop's terms (returns, refunds, exchanges, warranty,
  delivery and shipping). The binding terms are elsewhere, so the desk says where, and invents
  none. A product word that only looks like policy ("delivery trips", "a return flight") is
  not a policy question.
- ``unclear``: a message without one word of a shopping conversation.

Decisions rest on intent patterns (who is asked to do what, about which topic), not on single
keywords, and stay deterministic: the same message always gets the same decision.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

from vitrine_shop.catalogue import Catalogue

__all__ = [
    "COMMON_WORDS",
    "DeskAnswer",
    "DeskIntent",
    "FrontDesk",
    "catalogue_vocabulary",
    "is_order_request",
    "is_policy_question",
]


class DeskIntent(enum.StrEnum):
    ORDER = "order"
    UNKNOWN_PRODUCT = "unknown-product"
    POLICY = "policy"
    UNCLEAR = "unclear"


@dataclass(frozen=True, slots=True)
class DeskAnswer:
    """The desk's answer to one turn, and why it answered."""

    intent: DeskIntent
    answer: str
    skus: tuple[str, ...] = ()
    abstained: bool = True


_PRODUCT_CODE = re.compile(r"(?i)\bGLX-[A-Z0-9]+\b")
_WORD = re.compile(r"[^\W\d_]{2,}")

# --- ordering: the assistant is asked to perform the purchase ------------------------------

_PURCHASE = r"(?:buy|purchase|order|pay\s+for)"
# "order them by price" sorts a list; it buys nothing.
_SORTING = r"(?!\s+(?:\w+\s+){0,2}?by\s+(?:price|rating|size|popularity|name|brand))"
_OBJECT = r"(?:it|this|that|them|these|those|one|two|a|an|the|my|GLX-\w+)"
# A purchase verb addressed to the assistant: "could you (just) purchase", "will you order".
_ASKED_TO_PURCHASE = re.compile(
    rf"(?i)\b(?:can|could|would|will|won't|wouldn't)\s+you\s+"
    rf"(?:please\s+|just\s+|kindly\s+|simply\s+|now\s+|go\s+ahead\s+and\s+)*{_PURCHASE}\b"
    rf"{_SORTING}"
    rf"|\b(?:i\s+want|i'd\s+like|i\s+would\s+like|i\s+need)\s+you\s+to\s+"
    rf"(?:just\s+)?{_PURCHASE}\b"
    rf"|\bgo\s+ahead\s+and\s+{_PURCHASE}\b"
)
# An imperative purchase verb that opens a clause: "Buy GLX-3008 for me", "just order it".
_IMPERATIVE_PURCHASE = re.compile(
    rf"(?i)(?:^|[.!?;:,]\s*|\b(?:please|just|now|so|then|and)\s+)"
    rf"(?:please\s+|just\s+)?(?:buy|purchase|order)\s+{_OBJECT}\b(?!\s+(?:by|of)\b)"
)
_ORDER_PHRASE = re.compile(
    r"(?i)\b(?:place|make|submit|confirm|complete|finali[sz]e|put\s+(?:in|through))\s+"
    r"(?:(?:an|the|my|this|that|a|your)\s+)?(?:new\s+)?order\b"
    r"|\b(?:add|put|place|drop|throw)\b[\w\s-]{0,40}\b(?:in|into|to)\s+(?:my|the|a)\s+"
    r"(?:shopping\s+)?(?:cart|basket|trolley)\b"
    r"|\b(?:proceed\s+to|go\s+to|do\s+the|and\s+(?:then\s+)?)\s*check\s?out\b"
    r"|\bcheck\s?out\s+(?:for\s+me|now|please)\b"
    r"|\b(?:charge|bill)\s+(?:my|me)\b"
    r"|\b(?:buy|purchase|order)\s+(?:it|this|that|them|one|GLX-\w+)\b[\w\s-]{0,30}"
    r"\b(?:for\s+me|on\s+my\s+behalf)\b"
)
# The customer declining an order is not a request for one: "don't order anything yet".
_NEGATED = re.compile(
    r"(?i)\b(?:don't|do\s+not|never|not|no\s+need\s+to|without)\s+(?:\w+\s+){0,2}?"
    rf"(?:{_PURCHASE}|place|add|put|make)\b"
)


def is_order_request(message: str) -> bool:
    """Whether the customer asks the assistant to buy, order, pay or fill a cart for them."""
    text = _NEGATED.sub(" ", message)
    return bool(
        _ASKED_TO_PURCHASE.search(text)
        or _IMPERATIVE_PURCHASE.search(text)
        or _ORDER_PHRASE.search(text)
    )


# --- policy: a question about the shop's terms ----------------------------------------------

_TERMS = (
    r"(?:return|returns|returning|refund|refunds|refunded|exchange|exchanges|warrant(?:y|ies)"
    r"|guarantee|guarantees|deliver|delivers|delivered|delivery|deliveries|ship|ships|shipped"
    r"|shipping|postage|dispatch|dispatched|money\s+back|send\s+(?:it\s+)?back)"
)
# Policy words used as product or activity words: masked before the intent patterns look.
_USE_WORDS = re.compile(
    r"(?i)\b(?:delivery|deliveries|shipping|return|exchange)\s+"
    r"(?:trips?|rounds?|routes?|rides?|riders?|drivers?|jobs?|work|shifts?|bikes?|bicycles?"
    r"|vans?|bags?|backpacks?|boxe?s?|crates?|containers?|flights?|journeys?|tickets?"
    r"|students?|programmes?|programs?|business|company|service\s+job)\b"
    r"|\b(?:ship|ships)\s+(?:model|models|in\s+a\s+bottle)\b"
    r"|\bon\s+the\s+return\b"
)
_POLICY_PATTERNS = (
    # "What is your return policy?", "the warranty terms", "shipping rates"
    rf"\b{_TERMS}\s+(?:policy|policies|terms|conditions|rules|window|period|label|costs?"
    r"|fees?|charges?|rates?|prices?|times?|options?|address|process)\b",
    r"\b(?:free|express|next[-\s]day|same[-\s]day|international)\s+"
    r"(?:returns?|delivery|shipping|postage)\b",
    # "Can I return...", "could I get a refund", "may I exchange"
    r"\b(?:can|could|may|do|will|would)\s+(?:i|we)\s+(?:still\s+)?(?:get\s+(?:a|my|the)\s+)?"
    rf"{_TERMS}\b",
    # "Do you ship to Germany?", "does the shop deliver abroad", "will it be delivered by Friday"
    r"\b(?:do|does|can|will|would)\s+(?:you|the\s+shop|your\s+shop|it|they|this)\s+"
    r"(?:be\s+)?(?:ship|deliver|delivered|shipped|dispatch|dispatched|post|send)\b",
    # "How long is the warranty", "how much does delivery cost", "how fast is shipping"
    r"\bhow\s+(?:long|much|fast|quickly|soon|many\s+days)\b[^.?!]{0,40}?\b"
    rf"(?:{_TERMS}|arrive|arrives|take\s+to\s+arrive)\b",
    # "is there a warranty", "what warranty does it have", "refund if it breaks"
    r"\b(?:is\s+there|what(?:'s|\s+is)?|which|any|a|the)\s+(?:kind\s+of\s+)?"
    r"(?:warranty|guarantee|refund|return\s+policy)\b",
    r"\b(?:refund|money\s+back|replacement)\s+(?:if|when|in\s+case|should)\b",
    rf"\b{_TERMS}\s+(?:to|within|outside|abroad|overseas)\b",
)
_POLICY = re.compile("|".join(_POLICY_PATTERNS), re.I)
# Past events of the customer's own ("I returned my old tent") are context, not questions.
_OWN_PAST = re.compile(r"(?i)\bi\s+(?:already\s+)?(?:returned|exchanged|shipped)\b")


def is_policy_question(message: str) -> bool:
    """Whether the customer asks about returns, refunds, warranty or delivery terms."""
    text = _OWN_PAST.sub(" ", _USE_WORDS.sub(" ", message))
    return _POLICY.search(text) is not None


# --- answers ----------------------------------------------------------------------------------

POLICY_ANSWER = (
    "I can't answer questions about returns, refunds, warranty or delivery: I only see our "
    "catalogue and your shopping history, not the shop's policies, and I would rather not "
    "guess at terms that bind you. Our customer service or the policy pages of the shop have "
    "the binding answer. I'm happy to help you choose products in the meantime."
)
ORDER_ANSWER = (
    "I can't place orders, add items to a cart or take payment: ordering always needs your "
    "own approval at checkout, outside this conversation. Nothing has been ordered or put in "
    "a cart."
)
UNCLEAR_ANSWER = (
    "Sorry, I couldn't make sense of that message. Could you tell me what you are looking "
    "for, for example a product type, an activity or a budget in CHF?"
)

# Everyday words of a shopping conversation; catalogue words are added by
# :func:`catalogue_vocabulary`. A message with none of either is one nobody can act on.
COMMON_WORDS = frozenset(
    """
    a about after again all also am an and any anything are as ask at be because been before
    best better big budget but buy by can cheap cheaper could day do does for from get gift give
    go good got great had has have he hello help her hey hi him his how i if in is it its just
    know like looking love make many me mine more most much my need new next no not now of off
    old on one only or other our out over please price prices product products recommend
    recommendation recommendations she should show similar so some something suggest suggestion
    tell than thanks thank that the their them then there these they thing things think this
    those to too try up us use used want was we well what when where which who why will wish
    with without would yes you your cost costs money spend spending help hobby weekend trip
    friend partner present chf franc francs max maximum minimum under below above around
    order purchase cart basket checkout pay return refund warranty delivery shipping
    """.split()  # noqa: SIM905 - a word list reads better as prose than as 180 quoted strings
)


def catalogue_vocabulary(catalogue: Catalogue) -> frozenset[str]:
    """The common words plus every word the catalogue uses to describe its products."""
    vocabulary = set(COMMON_WORDS)
    for product in catalogue:
        text = " ".join(
            (
                product.name,
                product.brand,
                product.description,
                product.department.display_name,
                *product.category_path,
                *product.tags,
            )
        )
        vocabulary.update(_words(text))
    return frozenset(vocabulary)


def _words(text: str) -> Iterable[str]:
    return (word.casefold() for word in _WORD.findall(text))


class FrontDesk:
    """Decides, before any model, whether a turn is one the desk answers; deterministic."""

    def __init__(self, catalogue: Catalogue, vocabulary: frozenset[str] | None = None) -> None:
        self._catalogue = catalogue
        self._vocabulary = vocabulary if vocabulary is not None else COMMON_WORDS

    def answer(self, message: str) -> DeskAnswer | None:
        """The desk's answer to the customer's latest message, or None to pass it on."""
        codes = list(dict.fromkeys(code.upper() for code in _PRODUCT_CODE.findall(message)))
        known = [code for code in codes if code in self._catalogue]
        unknown = [code for code in codes if code not in self._catalogue]
        if is_order_request(message):
            return self._order(known)
        if unknown:
            listed = ", ".join(unknown[:5])
            return DeskAnswer(
                DeskIntent.UNKNOWN_PRODUCT,
                f"I can't find {listed} in our catalogue, so I can't tell you anything about "
                "it or recommend it. If you tell me what you are looking for, I can suggest "
                "something that is in the catalogue.",
            )
        if is_policy_question(message):
            return DeskAnswer(DeskIntent.POLICY, POLICY_ANSWER)
        if not codes and not any(word in self._vocabulary for word in _words(message)):
            return DeskAnswer(DeskIntent.UNCLEAR, UNCLEAR_ANSWER)
        return None

    def _order(self, known: list[str]) -> DeskAnswer:
        if not known:
            return DeskAnswer(DeskIntent.ORDER, ORDER_ANSWER)
        product = self._catalogue.by_sku(known[0])
        about = (
            f" {product.name} ({product.sku}, CHF {product.price_chf:.2f}) is in our "
            "catalogue, and you can order it yourself from its product page."
        )
        return DeskAnswer(DeskIntent.ORDER, ORDER_ANSWER + about, (product.sku,))
