"""The shop assistant as ``vitrine serve`` runs it: the suite's ``"service"`` component.

:func:`create_assistant` builds a :class:`ShopAssistant` around the agent or the workflow, on
the scripted model or a configured provider. The shop's own serve flags (declared in
:data:`vitrine_shop.evals.suite.SERVICE_OPTIONS`) arrive in ``ServiceOptions.suite_options``
and are read once, as :class:`ShopServing`. Unless ``--no-front-desk`` turns it off, the
:mod:`~vitrine_shop.front_desk` answers first the turns a recommender must not improvise
(policy, ordering, unknown products, nonsense); everything else is answered by the
architecture from the whole conversation, exactly as the offline and live lanes run it. Every
reply names its ``layer``: ``front-desk``, ``agent`` or ``workflow``.

Two deliberately regressed assistants prove the behaviour tests can fail:

- ``--regress repeat-owned``: the agent's model adds one durable the customer already owns to
  its final recommendation list, chosen to satisfy every constraint the customer stated, so
  the defect is isolated to owned-item avoidance. It is planted *before* the answer screen,
  so what the customer receives is the screen's verdict on it.
- ``--regress broken-model``: the model behind the architecture answers every request with
  "Sorry, I am a broken model", through the real agent loop or workflow.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from vitrine.providers import (
    ChatCompletion,
    ChatRequest,
    Provenance,
    ProviderError,
    WrappedModel,
)
from vitrine.service import (
    AssistantReply,
    AssistantUnavailable,
    ServiceOptions,
    ToolEvent,
    UnknownPersonaError,
    provider_model,
)

# Through the package, not the name: a planted mutant replaces scripted.ScriptedShopModel.
from vitrine_shop import scripted
from vitrine_shop.agent import ShopAgent
from vitrine_shop.arms import shared_services
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.domain import SKU_IN_TEXT
from vitrine_shop.embeddings import MiniLMEmbedder, require_embedding_model
from vitrine_shop.evals.suite import (
    ARCHITECTURES,
    BROKEN_MODEL,
    REGRESSIONS,
    REPEAT_OWNED,
    SERVICE_OPTIONS,
)
from vitrine_shop.front_desk import FrontDesk, catalogue_vocabulary
from vitrine_shop.memory import extract_constraints
from vitrine_shop.tools import ToolBox
from vitrine_shop.workflow import ShopWorkflow

if TYPE_CHECKING:
    from vitrine import SubjectResponse
    from vitrine.providers import ChatModel
    from vitrine_shop.operations import ShopServices

__all__ = [
    "ARCHITECTURES",
    "BROKEN_ANSWER",
    "FRONT_DESK_LAYER",
    "PROVIDERS",
    "REGRESSIONS",
    "BrokenModel",
    "RepeatOwnedModel",
    "ShopAssistant",
    "ShopServing",
    "create_assistant",
    "in_process_assistant",
]

PROVIDERS = ("scripted", "openai", "azure", "local")

FRONT_DESK_LAYER = "front-desk"
BROKEN_ANSWER = "Sorry, I am a broken model"


def create_assistant(options: ServiceOptions) -> ShopAssistant:
    """The suite's service factory; refuses options it cannot serve with a ValueError.

    A served assistant embeds every visitor's words, so without the embedding model (the
    ``shop`` extra) it could never become ready: that is refused here, before the service
    listens, as the missing module the extra provides.
    """
    assistant = _assistant(options)
    require_embedding_model()
    return assistant


@dataclass(frozen=True, slots=True)
class ShopServing:
    """The shop's own serve options, read from ``ServiceOptions.suite_options`` (an option the
    caller left out takes its flag's default)."""

    architecture: str
    regress: str | None
    front_desk: bool
    list_personas: bool

    @classmethod
    def of(cls, options: ServiceOptions) -> ShopServing:
        unknown = sorted(set(options.suite_options) - {flag.key for flag in SERVICE_OPTIONS})
        if unknown:
            raise ValueError(f"the shop's assistant has no option {', '.join(unknown)}")
        value = {
            flag.key: options.suite_options.get(flag.key, flag.initial) for flag in SERVICE_OPTIONS
        }
        regress = value["regress"]
        return cls(
            architecture=str(value["architecture"]),
            regress=None if regress is None else str(regress),
            front_desk=bool(value["front_desk"]),
            list_personas=bool(value["list_personas"]),
        )


def _assistant(options: ServiceOptions) -> ShopAssistant:
    serving = ShopServing.of(options)
    if serving.architecture not in ARCHITECTURES:
        raise ValueError(
            f"unknown architecture {serving.architecture!r}: the shop serves "
            + " or ".join(ARCHITECTURES)
        )
    if options.provider not in PROVIDERS:
        raise ValueError(
            f"unknown provider {options.provider!r}: choose one of {', '.join(PROVIDERS)}"
        )
    if serving.regress is not None and serving.regress not in REGRESSIONS:
        raise ValueError(
            f"unknown regression {serving.regress!r}: the shop offers {', '.join(REGRESSIONS)}"
        )
    if serving.regress == REPEAT_OWNED and serving.architecture != "agent":
        raise ValueError(
            "the repeat-owned regression is planted in the agent's final answer: serve it with "
            "--architecture agent"
        )
    return ShopAssistant(options, serving)


class ShopAssistant:
    """Answers one conversation turn with the configured architecture behind the front desk."""

    def __init__(self, options: ServiceOptions, serving: ShopServing) -> None:
        self.options = options
        self.serving = serving
        self._services: ShopServices | None = None
        self._model: ChatModel | None = None
        self._desk: FrontDesk | None = None
        self._tool_names: frozenset[str] = frozenset()

    @property
    def description(self) -> dict[str, str]:
        described = {
            "subject": "vitrine-shop",
            "architecture": self.serving.architecture,
            "provider": self.options.provider,
            "model": self._model.model_id if self._model is not None else "scripted-shop-1",
        }
        if self.serving.regress:
            described["regress"] = self.serving.regress
        described["front_desk"] = "on" if self.serving.front_desk else "off"
        return described

    @property
    def tool_names(self) -> frozenset[str]:
        return self._tool_names

    def check_persona(self, persona_id: str | None) -> None:
        services = self._ready_services()
        if persona_id is not None and persona_id not in services.personas:
            # The ids are shown to the client only when the operator asked (--list-personas).
            known = sorted(services.personas) if self.serving.list_personas else []
            raise UnknownPersonaError(persona_id, known)

    async def warm_up(self) -> str | None:
        if self.options.provider != "scripted":
            model, reason = provider_model(self.options)
            if model is None:
                return reason
            self._model = model
        # Loading the catalogue, its vectors and the embedding model takes seconds of CPU;
        # a thread keeps /health answering "not ready" meanwhile instead of hanging.
        self._services, desk, self._tool_names = await asyncio.to_thread(_load)
        self._desk = desk if self.serving.front_desk else None
        return None

    async def reply(self, persona_id: str | None, user_turns: Sequence[str]) -> AssistantReply:
        services = self._ready_services()
        desk = self._desk.answer(user_turns[-1]) if self._desk is not None else None
        if desk is not None:
            return AssistantReply(
                desk.answer,
                desk.skus,
                desk.abstained,
                facts={"intent": desk.intent.value},
                layer=FRONT_DESK_LAYER,
            )
        response = await self._subject_answer(services, persona_id, user_turns)
        answer = response.answer or ""
        structured = response.structured or {}
        skus = tuple(dict.fromkeys(SKU_IN_TEXT.findall(answer)))
        screen = structured.get("screen")
        facts: dict[str, object] = {}
        if isinstance(screen, dict) and "status" in screen:
            facts["screen"] = str(screen["status"])
        return AssistantReply(
            answer,
            skus,
            abstained=not skus and bool(structured.get("abstained", not skus)),
            tool_calls=tuple(
                ToolEvent(call.name, call.status.value) for call in response.tool_calls or ()
            ),
            facts=facts,
            layer=self.serving.architecture,
        )

    # -- internals ------------------------------------------------------------------------

    def _ready_services(self) -> ShopServices:
        if self._services is None:
            raise AssistantUnavailable("The assistant is still starting. Please try again.")
        return self._services

    async def _subject_answer(
        self, services: ShopServices, persona_id: str | None, user_turns: Sequence[str]
    ) -> SubjectResponse:

        request = ShopRequest(persona_id, tuple(user_turns))
        model = self._turn_model(services, persona_id, user_turns)
        try:
            if self.serving.architecture == "workflow":
                return await ShopWorkflow(model, services).answer(request)
            return await ShopAgent(model, services).answer(request)
        except ProviderError as exc:
            # The provider's own words stay in the log; the customer gets its category only.
            raise AssistantUnavailable(
                "The assistant's model service is unavailable right now. Please try again."
            ) from exc

    def _turn_model(
        self, services: ShopServices, persona_id: str | None, user_turns: Sequence[str]
    ) -> ChatModel:
        if self.serving.regress == BROKEN_MODEL:
            return BrokenModel()
        model = self._model
        if model is None:
            model = (
                scripted.ScriptedShopModel()
            )  # per turn: a scripted model keeps per-trial counters
        if self.serving.regress == REPEAT_OWNED and persona_id is not None:
            return RepeatOwnedModel(model, services, persona_id, user_turns)
        return model


def in_process_assistant(options: ServiceOptions, services: ShopServices) -> ShopAssistant:
    """The assistant as ``vitrine serve`` runs it, ready at once over ``services``, for an
    evaluation that drives it in this process (scripted provider only: nothing to warm)."""
    if options.provider != "scripted":
        raise ValueError("an in-process assistant runs the scripted provider only")
    assistant = _assistant(options)
    assistant._services = services
    assistant._desk = _front_desk(services) if assistant.serving.front_desk else None
    return assistant


def _front_desk(services: ShopServices) -> FrontDesk:
    # The desk knows the catalogue's own words, so a terse product question is not "unclear".
    return FrontDesk(services.catalogue, catalogue_vocabulary(services.catalogue))


def _load() -> tuple[ShopServices, FrontDesk, frozenset[str]]:

    services = shared_services()
    _ = services.vectors  # the catalogue vectors, read once here rather than on a first turn
    if isinstance(services.embedder, MiniLMEmbedder):
        services.embedder.encode_uncached(["warm up the embedding model"])
    desk = _front_desk(services)
    tools = frozenset(spec.name for spec in ToolBox(services, customer_id=None).specs())
    return services, desk, tools


class BrokenModel:
    """The broken-model regression: whatever it is asked, it answers with one apology."""

    @property
    def model_id(self) -> str:
        return "broken-model"

    @property
    def provenance(self) -> Provenance:
        return Provenance.OFFLINE_DETERMINISTIC

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        return ChatCompletion(BROKEN_ANSWER, model=self.model_id)


class RepeatOwnedModel(WrappedModel):
    """The repeat-owned regression, planted where a careless model would make the mistake: its
    final answer gets one more recommendation line, an owned durable. The agent screens that
    answer as it screens any other."""

    def __init__(
        self,
        inner: ChatModel,
        services: ShopServices,
        persona_id: str,
        user_turns: Sequence[str],
    ) -> None:
        super().__init__(inner)
        self._services = services
        self._persona_id = persona_id
        self._user_turns = tuple(user_turns)

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        completion = await self._inner.complete(request)
        if completion.tool_calls or not completion.content:
            return completion
        answer = _repeat_owned(
            self._services, self._persona_id, self._user_turns, completion.content
        )
        return dataclasses.replace(completion, content=answer)


def _repeat_owned(
    services: ShopServices, persona_id: str, user_turns: Sequence[str], answer: str
) -> str:
    """The regression: append one owned durable to a recommendation list, formatted like the
    assistant's own lines and within every stated constraint, so only ownership is wrong."""

    lines = answer.split("\n")
    listed = [
        i for i, line in enumerate(lines) if line.startswith("- ") and SKU_IN_TEXT.search(line)
    ]
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
