"""The shop assistant as ``vitrine serve`` runs it: the suite's ``"service"`` component.

:func:`create_assistant` builds a :class:`ShopAssistant` around the agent or the workflow, on
the scripted model or a configured provider. Before a turn reaches the architecture, a small
front desk answers what a recommender must not improvise, in the same words whatever model
is behind it:

- a question about returns, refunds, warranty or delivery: the assistant sees only the
  catalogue and the customer's history, so it says it cannot answer policy and where the
  binding terms are, instead of inventing a policy;
- a request to order, buy, pay or fill a cart: ordering needs the customer's approval at
  checkout, so it declines and says nothing was ordered;
- a product code that is not in the catalogue: it says so instead of describing a product
  that does not exist;
- a message with no recognisable word: it asks what the customer is looking for.

Everything else (recommendations, follow-ups, constraints from earlier turns) is answered by
the architecture from the whole conversation, exactly as the offline and live lanes run it.

``--regress repeat-owned`` serves a deliberately broken assistant: after a recommendation it
adds one durable the customer already owns, chosen to satisfy every constraint the customer
stated, so that the defect is isolated to owned-item avoidance.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from vitrine.service.protocol import (
    AssistantReply,
    AssistantUnavailable,
    ServiceOptions,
    ToolEvent,
    UnknownPersonaError,
)

if TYPE_CHECKING:
    from vitrine.bench.response import SubjectResponse
    from vitrine.providers.base import ChatModel
    from vitrine_shop.catalogue import Catalogue
    from vitrine_shop.services import ShopServices

__all__ = ["ARCHITECTURES", "PROVIDERS", "REGRESSIONS", "ShopAssistant", "create_assistant"]

ARCHITECTURES = ("agent", "workflow")
PROVIDERS = ("scripted", "openai", "azure", "local")
REPEAT_OWNED = "repeat-owned"
REGRESSIONS = (REPEAT_OWNED,)

_PRODUCT_CODE = re.compile(r"(?i)\bGLX-[A-Z0-9]+\b")
_SKU = re.compile(r"\bGLX-\d{4}\b")
_POLICY = re.compile(
    r"(?i)\b(return|returns|returning|refund|refunds|exchange|warranty|warranties|guarantee|"
    r"deliver|delivery|deliveries|shipping|ship|shipped|postage|dispatch)\b"
)
_ORDER = re.compile(
    r"(?i)\b(?:place|make|submit|confirm|complete|put through)\b[\w\s]{0,20}\border\b"
    r"|\border\s+(?:it|this|that|them|one|two|glx-\w+)\b"
    r"|\b(?:add|put)\b[\w\s-]{0,30}\b(?:cart|basket)\b"
    r"|\bcheck\s?out\b|\bpay\s+for\b"
    r"|\bbuy\s+(?:it|this|that|them|one|glx-\w+)\b[\w\s-]{0,20}\b(?:now|for me|today)\b"
)
_WORD = re.compile(r"[^\W\d_]{2,}")
# Everyday words of a shopping conversation; catalogue words are added at start-up. A message
# with none of either is one the assistant cannot act on.
_COMMON_WORDS = frozenset(
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
    """.split()  # noqa: SIM905 - a word list reads better as prose than as 170 quoted strings
)

_POLICY_ANSWER = (
    "I can't answer questions about returns, refunds, warranty or delivery: I only see our "
    "catalogue and your shopping history, not the shop's policies, and I would rather not "
    "guess at terms that bind you. Our customer service or the policy pages of the shop have "
    "the binding answer. I'm happy to help you choose products in the meantime."
)
_ORDER_ANSWER = (
    "I can't place orders, add items to a cart or take payment: ordering always needs your "
    "own approval at checkout, outside this conversation. Nothing has been ordered or put in "
    "a cart."
)
_NONSENSE_ANSWER = (
    "Sorry, I couldn't make sense of that message. Could you tell me what you are looking "
    "for, for example a product type, an activity or a budget in CHF?"
)


def create_assistant(options: ServiceOptions) -> ShopAssistant:
    """The suite's service factory; refuses options it cannot serve with a ValueError."""
    if options.architecture not in ARCHITECTURES:
        raise ValueError(
            f"unknown architecture {options.architecture!r}: the shop serves "
            + " or ".join(ARCHITECTURES)
        )
    if options.provider not in PROVIDERS:
        raise ValueError(
            f"unknown provider {options.provider!r}: choose one of {', '.join(PROVIDERS)}"
        )
    if options.regress is not None and options.regress not in REGRESSIONS:
        raise ValueError(
            f"unknown regression {options.regress!r}: the shop offers {', '.join(REGRESSIONS)}"
        )
    return ShopAssistant(options)


@dataclass(frozen=True, slots=True)
class _Desk:
    answer: str
    skus: tuple[str, ...] = ()
    abstained: bool = True
    intent: str = ""


class ShopAssistant:
    """Answers one conversation turn with the configured architecture behind the front desk."""

    def __init__(self, options: ServiceOptions) -> None:
        self.options = options
        self._services: ShopServices | None = None
        self._model: ChatModel | None = None
        self._vocabulary: frozenset[str] = _COMMON_WORDS
        self._tool_names: frozenset[str] = frozenset()

    @property
    def description(self) -> dict[str, str]:
        described = {
            "subject": "vitrine-shop",
            "architecture": self.options.architecture,
            "provider": self.options.provider,
            "model": self._model.model_id if self._model is not None else "scripted-shop-1",
        }
        if self.options.regress:
            described["regress"] = self.options.regress
        return described

    @property
    def tool_names(self) -> frozenset[str]:
        return self._tool_names

    def check_persona(self, persona_id: str | None) -> None:
        services = self._ready_services()
        if persona_id is not None and persona_id not in services.personas:
            raise UnknownPersonaError(persona_id, sorted(services.personas))

    async def warm_up(self) -> str | None:
        if self.options.provider != "scripted":
            from vitrine.service.providers import provider_model

            model, reason = provider_model(self.options)
            if model is None:
                return reason
            self._model = model
        # Loading the catalogue, its vectors and the embedding model takes seconds of CPU;
        # a thread keeps /health answering "not ready" meanwhile instead of hanging.
        self._services, self._vocabulary, self._tool_names = await asyncio.to_thread(_load)
        return None

    async def reply(self, persona_id: str | None, user_turns: Sequence[str]) -> AssistantReply:
        services = self._ready_services()
        desk = self._front_desk(services.catalogue, user_turns[-1])
        if desk is not None:
            return AssistantReply(
                desk.answer, desk.skus, desk.abstained, facts={"route": f"desk:{desk.intent}"}
            )
        response = await self._subject_answer(services, persona_id, user_turns)
        answer = response.answer or ""
        structured = response.structured or {}
        if self.options.regress == REPEAT_OWNED and persona_id is not None:
            answer = _repeat_owned(services, persona_id, user_turns, answer)
        skus = tuple(dict.fromkeys(_SKU.findall(answer)))
        return AssistantReply(
            answer,
            skus,
            abstained=not skus and bool(structured.get("abstained", not skus)),
            tool_calls=tuple(
                ToolEvent(call.name, call.status.value) for call in response.tool_calls or ()
            ),
            facts={"route": self.options.architecture},
        )

    # -- internals ------------------------------------------------------------------------

    def _ready_services(self) -> ShopServices:
        if self._services is None:
            raise AssistantUnavailable("The assistant is still starting. Please try again.")
        return self._services

    async def _subject_answer(
        self, services: ShopServices, persona_id: str | None, user_turns: Sequence[str]
    ) -> SubjectResponse:
        from vitrine.providers.base import ProviderError
        from vitrine_shop.conversation import ShopRequest

        request = ShopRequest(persona_id, tuple(user_turns))
        model = self._model
        if model is None:
            from vitrine_shop.scripted import ScriptedShopModel

            model = ScriptedShopModel()  # per turn: a scripted model keeps per-trial counters
        try:
            if self.options.architecture == "workflow":
                from vitrine_shop.workflow import ShopWorkflow

                return await ShopWorkflow(model, services).answer(request)
            from vitrine_shop.agent import ShopAgent

            return await ShopAgent(model, services).answer(request)
        except ProviderError as exc:
            # The provider's own words stay in the log; the customer gets its category only.
            raise AssistantUnavailable(
                "The assistant's model service is unavailable right now. Please try again."
            ) from exc

    def _front_desk(self, catalogue: Catalogue, message: str) -> _Desk | None:
        codes = list(dict.fromkeys(code.upper() for code in _PRODUCT_CODE.findall(message)))
        unknown = [code for code in codes if code not in catalogue]
        known = [code for code in codes if code in catalogue]
        if _ORDER.search(message):
            about = ""
            if known:
                product = catalogue.by_sku(known[0])
                about = (
                    f" {product.name} ({product.sku}, CHF {product.price_chf:.2f}) is in our "
                    "catalogue, and you can order it yourself from its product page."
                )
            return _Desk(_ORDER_ANSWER + about, tuple(known[:1]), intent="order")
        if unknown:
            listed = ", ".join(unknown[:5])
            return _Desk(
                f"I can't find {listed} in our catalogue, so I can't tell you anything about "
                "it or recommend it. If you tell me what you are looking for, I can suggest "
                "something that is in the catalogue.",
                intent="unknown-product",
            )
        if _POLICY.search(message):
            return _Desk(_POLICY_ANSWER, intent="policy")
        words = [w.casefold() for w in _WORD.findall(message)]
        if not codes and not any(w in self._vocabulary for w in words):
            return _Desk(_NONSENSE_ANSWER, intent="unclear")
        return None


def _load() -> tuple[ShopServices, frozenset[str], frozenset[str]]:
    from vitrine_shop.arms import shared_services
    from vitrine_shop.embeddings import MiniLMEmbedder
    from vitrine_shop.tools import ToolBox

    services = shared_services()
    _ = services.vectors  # the catalogue vectors, read once here rather than on a first turn
    if isinstance(services.embedder, MiniLMEmbedder):
        services.embedder.encode_uncached(["warm up the embedding model"])
    vocabulary = set(_COMMON_WORDS)
    for product in services.catalogue:
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
        vocabulary.update(w.casefold() for w in _WORD.findall(text))
    tools = frozenset(spec.name for spec in ToolBox(services, customer_id=None).specs())
    return services, frozenset(vocabulary), tools


def _repeat_owned(
    services: ShopServices, persona_id: str, user_turns: Sequence[str], answer: str
) -> str:
    """The regression: append one owned durable to a recommendation list, formatted like the
    assistant's own lines and within every stated constraint, so only ownership is wrong."""
    from vitrine_shop.memory import extract_constraints

    lines = answer.split("\n")
    listed = [i for i, line in enumerate(lines) if line.startswith("- ") and _SKU.search(line)]
    if not listed:
        return answer  # an abstention or a refusal has no list to corrupt
    constraints = extract_constraints(user_turns)
    candidates = []
    for sku in services.owned_durables(persona_id):
        product = services.catalogue.get(sku)
        if product is None or product.department.sensitive or sku in answer:
            continue
        text = " ".join((product.name, product.description, *product.tags))
        if constraints.admits(price_chf=product.price_chf, text=text):
            candidates.append(product)
    if not candidates:
        return answer
    product = min(candidates, key=lambda p: (p.price_chf or Decimal(0), p.sku))
    line = (
        f"- {product.name} ({product.sku}, CHF {product.price_chf:.2f}) — because it fits your "
        f"interest in {product.department.display_name}."
    )
    lines.insert(listed[-1] + 1, line)
    return "\n".join(lines)
