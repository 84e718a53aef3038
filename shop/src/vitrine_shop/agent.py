"""Architecture one: a single tool-using agent over the shop's fifteen tools.

The loop is the ordinary one a live model would run: the system prompt and the customer's
turns go to the model with the tool specs; every tool call it asks for runs through a fresh
:class:`~vitrine_shop.tools.ToolBox` (validated, journalled, budgeted, gated); the results go
back as tool messages; and the loop ends when the model answers in text. A scripted model and
a paid one drive exactly this code.

Two bounds keep a runaway model finite: the tool-call budget and the number of model turns.
Reaching either ends the conversation with a disclosed, bounded answer rather than an
exception, because a customer should learn that the assistant stopped, and an evaluation
should see that it did. A provider failure, by contrast, is not the subject's answer: it
propagates as :class:`~vitrine.errors.ProviderError` so the harness can record the
trial as not measured instead of scoring a made-up reply.

Every final answer passes the customer-answer screen before it is returned; a blocked answer
is replaced by a safe, disclosed fallback, and the screen's reasons go into ``structured``
together with the blocked draft (bounded), so an evaluation can tell whether the screen caught
everything the draft got wrong, not only that it blocked something.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vitrine import SubjectResponse, tracing
from vitrine.providers import ChatMessage, ChatModel, ChatRequest, ToolCallRequest
from vitrine.redact import bound_text
from vitrine.subjects import TokenUsage, ToolCallStatus
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.domain import SKU_IN_TEXT
from vitrine_shop.operations import ShopServices
from vitrine_shop.prompts import customer_context, new_canary, system_prompt
from vitrine_shop.screen import ScreenResult, screen_answer
from vitrine_shop.tools import ApprovalGate, ToolBox

__all__ = ["AGENT_PURPOSE", "BLOCKED_FALLBACK", "DRAFT_LIMIT", "ShopAgent", "StopReason"]

AGENT_PURPOSE = "agent"

# A blocked draft is model output: kept for the evaluation, but bounded like any stored text.
DRAFT_LIMIT = 2000

BLOCKED_FALLBACK = (
    "I'm sorry, I could not put together an answer I can stand behind this time, so I am not "
    "showing it. Nothing has been put in a cart. Could you tell me a little more about what "
    "you are looking for, and I will try again?"
)


class StopReason:
    """Why the loop ended; recorded in ``structured`` so a reader can tell the cases apart."""

    ANSWERED = "answered"
    TOOL_BUDGET = "tool_budget"
    TURN_LIMIT = "turn_limit"


@dataclass(slots=True)
class _Run:
    """What one conversation accumulated: messages, usage and how it ended."""

    messages: list[ChatMessage]
    usage: TokenUsage
    model_calls: int = 0
    stop: str = StopReason.TURN_LIMIT
    answer: str | None = None


class ShopAgent:
    """The tool-using recommendation agent. Cheap to build; the services are shared."""

    def __init__(
        self,
        model: ChatModel,
        services: ShopServices,
        *,
        tool_call_budget: int = 12,
        max_turns: int = 16,
        canary: str | None = None,
        output_transform: Callable[[str, str], str] | None = None,
        traced: bool = True,
    ) -> None:
        if tool_call_budget < 0:
            raise ValueError(f"tool_call_budget must be 0 or more, got {tool_call_budget}")
        if max_turns < 1:
            # Zero turns would never ask the model anything: there would be no answer to judge.
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        self.model = model
        self.services = services
        self.tool_call_budget = tool_call_budget
        self.max_turns = max_turns
        self.canary = canary if canary is not None else new_canary()
        self._output_transform = output_transform
        # Off for the hundreds of exploratory conversations of an offline gate, whose spans
        # would bury the conversations a trace is read for.
        self.traced = traced

    async def answer(
        self, request: ShopRequest, *, approvals: ApprovalGate | None = None
    ) -> SubjectResponse:
        """Run one conversation to its end and report the answer with its evidence.

        ``approvals`` are what this customer approved outside the conversation (at checkout),
        for this conversation's tool box alone; without them every gated action is refused.
        They are an argument rather than agent state so that one agent can serve many
        conversations, and an evaluation can grant one conversation approvals and hold the
        others to having none.

        Raises :class:`~vitrine.errors.ProviderError` when the model provider fails.
        """
        customer_id = request.persona_id
        owned: frozenset[str] = frozenset()
        has_history = False
        if customer_id is not None:
            has_history = self.services.persona(customer_id).has_evidence
            owned = self.services.owned_durables(customer_id)
        prompt = system_prompt(customer_context(customer_id, has_history=has_history), self.canary)
        toolbox = ToolBox(
            self.services,
            customer_id=customer_id,
            approvals=approvals,
            max_calls=self.tool_call_budget,
            output_transform=self._output_transform,
            traced=self.traced,
        )
        run = _Run(
            [ChatMessage("system", prompt), *(ChatMessage("user", t) for t in request.user_turns)],
            TokenUsage(),
        )
        if self.traced:
            with tracing.agent_span("shop-agent"):
                await self._converse(run, toolbox)
        else:
            await self._converse(run, toolbox)
        answer = run.answer if run.stop == StopReason.ANSWERED else _bounded_answer(run, toolbox)
        screen = screen_answer(
            answer or "",
            catalogue=self.services.catalogue,
            owned_skus=owned,
            system_prompt=prompt,
            canary=self.canary,
        )
        delivered = (answer or "") if screen.passed else BLOCKED_FALLBACK
        skus = _skus_in(delivered)
        return SubjectResponse(
            answer=delivered,
            tool_calls=toolbox.journal,
            trace=None,
            usage=run.usage,
            stages=None,
            structured={
                "architecture": "agent",
                "skus": skus,
                "presented_skus": list(toolbox.presented_skus),
                "tool_outputs": list(toolbox.outputs),
                "abstained": screen.passed and not skus and run.stop == StopReason.ANSWERED,
                "screen": _screen_facts(screen),
                "blocked_draft": None if screen.passed else self._stored_draft(answer or ""),
                "stop_reason": run.stop,
                "model_calls": run.model_calls,
                "model_id": self.model.model_id,
            },
            provenance=self.model.provenance.value,
        )

    def _stored_draft(self, draft: str) -> str:
        # The canary is the instance's secret: a leaked one is masked before it is stored.
        masked = re.sub(re.escape(self.canary), "[canary]", draft, flags=re.IGNORECASE)
        return bound_text(masked, DRAFT_LIMIT)

    async def _converse(self, run: _Run, toolbox: ToolBox) -> None:
        specs = toolbox.specs()
        for _ in range(self.max_turns):
            request = ChatRequest(tuple(run.messages), tools=specs, purpose=AGENT_PURPOSE)
            completion = await (
                tracing.complete(self.model, request)
                if self.traced
                else self.model.complete(request)
            )
            run.model_calls += 1
            if completion.usage is not None:
                run.usage += completion.usage
            if not completion.tool_calls:
                run.answer = completion.content or ""
                run.stop = StopReason.ANSWERED
                return
            run.messages.append(ChatMessage("assistant", completion.content, completion.tool_calls))
            if not await self._run_tools(run, toolbox, completion.tool_calls):
                run.stop = StopReason.TOOL_BUDGET
                return
        run.stop = StopReason.TURN_LIMIT

    async def _run_tools(
        self, run: _Run, toolbox: ToolBox, calls: tuple[ToolCallRequest, ...]
    ) -> bool:
        """Execute the requested calls in order; False once the tool-call budget is spent.

        The raw argument text goes to the tool box, which answers malformed JSON with an
        ERROR result the model can read and correct, instead of ending the loop.
        """
        for call in calls:
            if len(toolbox.journal) >= self.tool_call_budget:
                return False
            result = await toolbox.call(call.name, call.arguments, call_id=call.id)
            run.messages.append(
                ChatMessage("tool", result.to_model_text(), tool_call_id=call.id, name=call.name)
            )
        # A budget spent by the last call of a batch is not yet exceeded: the model may still
        # answer in text, and only a further call request ends the loop.
        return True


def _bounded_answer(run: _Run, toolbox: ToolBox) -> str:
    """The disclosed answer when the loop was cut off by a budget rather than finished."""
    limit = "tool-call limit" if run.stop == StopReason.TOOL_BUDGET else "step limit"
    presented = [
        record
        for record in toolbox.journal
        if record.name == "present_recommendation" and record.status is ToolCallStatus.OK
    ]
    lead = (
        f"I reached my {limit} before I could finish checking this for you, so this answer "
        "is incomplete."
    )
    if presented:
        skus = ", ".join(toolbox.presented_skus)
        return (
            f"{lead} The products I had already picked out were {skus}; please treat them as "
            "a starting point rather than a checked recommendation. Nothing has been put in a "
            "cart."
        )
    return (
        f"{lead} I would rather not guess. Could you tell me what you are shopping for and "
        "your budget, so I can look again more directly?"
    )


def _skus_in(text: str) -> list[str]:
    return list(dict.fromkeys(SKU_IN_TEXT.findall(text)))


def _screen_facts(screen: ScreenResult) -> dict[str, Any]:
    return {
        "status": screen.status.value,
        "reasons": list(screen.reasons),
        "skus": list(screen.skus),
        "unknown_skus": list(screen.unknown_skus),
        "owned_repeats": list(screen.owned_repeats),
    }
