"""What is known before the first stage runs: the customer, their evidence, their limits.

Customers with no usable evidence and a request that names nothing the shop sells abstain
(:attr:`RequestContext.abstain`): there is nothing for a model to map.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from vitrine_shop.catalogue import Catalogue
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.domain import Persona, Product
from vitrine_shop.interests import InterestMap
from vitrine_shop.memory import Constraints, extract_constraints
from vitrine_shop.operations import ShopServices

__all__ = ["RequestContext", "build_context", "product_text"]

# Words that say nothing about what to buy. A request made only of these (and words the
# catalogue never uses) names no need the shop could search for.
_GENERIC_WORDS = frozenset(
    {
        "the",
        "and",
        "for",
        "you",
        "your",
        "what",
        "which",
        "with",
        "this",
        "that",
        "from",
        "have",
        "would",
        "could",
        "should",
        "like",
        "anything",
        "something",
        "recommend",
        "suggest",
        "new",
        "pick",
        "week",
        "things",
        "thing",
        "stuff",
        "some",
        "any",
        "good",
        "best",
        "nice",
        "buy",
        "buying",
        "get",
        "want",
        "need",
        "lately",
        "been",
        "surprise",
        "hello",
        "please",
    }
)
_WORD = re.compile(r"[a-zà-ÿ]{3,}")


@dataclass(frozen=True, slots=True)
class RequestContext:
    request: ShopRequest
    persona: Persona | None
    interest_map: InterestMap | None
    purchased: frozenset[str]  # gifts included: a gift is not to be recommended back either
    never_present: frozenset[str]  # purchased, except the customer's own consumables
    own_durables: frozenset[str]  # bought for themselves: their add-ons are fair suggestions
    owned_kinds: frozenset[str]  # leaf categories of own durables: a second one is a substitute
    excluded: frozenset[str]  # never an exploration candidate: purchased or sensitive
    constraints: Constraints
    budget_chf: Decimal | None
    concrete: bool

    @property
    def has_evidence(self) -> bool:
        return self.interest_map is not None and not self.interest_map.is_empty

    @property
    def abstain(self) -> bool:
        return not self.has_evidence and not self.concrete


@functools.cache
def _vocabulary(catalogue: Catalogue) -> frozenset[str]:
    """Words the catalogue uses for what it sells: names, categories, tags, departments."""
    words: set[str] = set()
    for product in catalogue:
        for text in (product.name, *product.category_path, *product.tags):
            words.update(_WORD.findall(text.casefold()))
    return frozenset(words - _GENERIC_WORDS)


def _names_a_need(turns: Iterable[str], catalogue: Catalogue) -> bool:
    vocabulary = _vocabulary(catalogue)
    return any(word in vocabulary for turn in turns for word in _WORD.findall(turn.casefold()))


def _profile_budget(persona: Persona | None) -> Decimal | None:
    raw = (persona.constraints.get("budget_chf") if persona else None) or ""
    try:
        return Decimal(raw.strip()) if raw.strip() else None
    except ArithmeticError:
        return None


def product_text(product: Product) -> str:
    specs = " ".join(f"{k} {v}" for k, v in product.specs.items())
    return f"{product.name} {product.brand} {' '.join(product.tags)} {specs} {product.description}"


def build_context(services: ShopServices, request: ShopRequest) -> RequestContext:
    """What is known of the customer and the request before the first stage runs."""
    persona = services.persona(request.persona_id) if request.persona_id else None
    interest_map = services.interest_map(persona.id) if persona else None
    purchased = persona.purchased_skus if persona else frozenset()
    # Restocking a consumable the customer uses is welcome; anything else bought (for
    # themselves or as a gift) is not to be presented again.
    own_durables = services.owned_durables(persona.id) if persona else frozenset()
    own_consumables = persona.owned_skus - own_durables if persona else frozenset()
    sensitive = {p.sku for p in services.catalogue if p.department.sensitive}
    constraints = extract_constraints(request.user_turns)
    # What the customer says in the conversation overrides the budget on their profile.
    budget = constraints.max_price_chf or _profile_budget(persona)
    return RequestContext(
        request=request,
        persona=persona,
        interest_map=interest_map,
        purchased=purchased,
        never_present=purchased - own_consumables,
        own_durables=own_durables,
        owned_kinds=frozenset(
            p.leaf_category for sku in own_durables if (p := services.product(sku)) is not None
        ),
        excluded=purchased | sensitive,
        constraints=constraints,
        budget_chf=budget,
        concrete=_names_a_need(request.user_turns, services.catalogue),
    )
