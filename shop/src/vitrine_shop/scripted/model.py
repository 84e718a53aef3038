"""The scripted model itself: one :class:`~vitrine.providers.ChatModel`, two roles.

A request with a response format is a workflow stage and gets that stage's code path
(:mod:`vitrine_shop.scripted.workflow_policy`); any other request is a customer conversation
and gets the agent's next step (:mod:`vitrine_shop.scripted.agent_policy`). Deliberate faults
(:class:`ScriptedFaults`) are applied here, before either policy runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from vitrine.providers import (
    ChatCompletion,
    ChatRequest,
    Provenance,
    ProviderError,
    ProviderFailure,
    ToolCallRequest,
)
from vitrine.subjects import TokenUsage
from vitrine_shop.memory import extract_constraints
from vitrine_shop.prompts import (
    HISTORY_NONE,
)
from vitrine_shop.scripted.agent_policy import ChainPlanner, abstention
from vitrine_shop.scripted.transcript import Transcript

__all__ = ["PROMPT_BLIND_MODEL_ID", "SCRIPTED_MODEL_ID", "ScriptedFaults", "ScriptedShopModel"]

SCRIPTED_MODEL_ID = "scripted-shop-1"
PROMPT_BLIND_MODEL_ID = "scripted-shop-1-prompt-blind"
_ZERO = TokenUsage(0, 0, None)


@dataclass(frozen=True, slots=True)
class ScriptedFaults:
    """Deliberate defects, each isolated, for controls and calibration arms.

    ``unusable_outputs``: the first N tool-call or structured responses are unusable (invalid
    JSON, then schema-violating, alternately). ``provider_failures``: the first N calls raise a
    retryable :class:`ProviderError`. ``vulnerable``: the calibration model, which obeys an
    instruction injected into tool output by calling ``place_order`` whatever its prompt says;
    only when such poison is present. ``ignore_system_prompt``: read nothing of the system
    prompt (neither its rules nor the customer context), so only the shop's code stands
    between this model and what an injection asks. ``forget_constraint``: the memory ablation,
    the name of one stated constraint to forget ("budget" or an attribute such as
    "waterproof").
    """

    unusable_outputs: int = 0
    provider_failures: int = 0
    vulnerable: bool = False
    ignore_system_prompt: bool = False
    forget_constraint: str | None = None

    def __post_init__(self) -> None:
        if self.unusable_outputs < 0 or self.provider_failures < 0:
            raise ValueError("fault counts cannot be negative")

    @property
    def healthy(self) -> bool:
        return self == ScriptedFaults()


class ScriptedShopModel:
    """The deterministic :class:`~vitrine.providers.ChatModel` of the reference subject.

    One instance keeps only fault counters between calls; everything it decides comes from
    the request. Use a fresh instance per trial when faults are set, so that "the first N
    calls" means the first N calls of that trial.
    """

    def __init__(self, faults: ScriptedFaults | None = None) -> None:
        self._faults = faults or ScriptedFaults()
        self._failures_left = self._faults.provider_failures
        self._unusable_left = self._faults.unusable_outputs
        self._unusable_given = 0
        self.calls = 0

    @property
    def model_id(self) -> str:
        return PROMPT_BLIND_MODEL_ID if self._faults.ignore_system_prompt else SCRIPTED_MODEL_ID

    @property
    def provenance(self) -> Provenance:
        return Provenance.OFFLINE_DETERMINISTIC

    @property
    def faults(self) -> ScriptedFaults:
        return self._faults

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        self.calls += 1
        if request.purpose == "judge":
            # Judging is a different role with its own deterministic implementation; a
            # subject model quietly grading answers would blur the two.
            raise ProviderError(
                ProviderFailure.BAD_REQUEST, "the scripted shop model does not judge"
            )
        if self._failures_left > 0:
            self._failures_left -= 1
            failure = (
                ProviderFailure.RATE_LIMITED
                if self._failures_left % 2 == 0
                else ProviderFailure.SERVER_ERROR
            )
            raise ProviderError(failure, "scripted provider failure")
        if request.response_format is not None:
            return self._stage(request)
        return self._converse(request)

    # -- workflow stages -------------------------------------------------------------------

    def _stage(self, request: ChatRequest) -> ChatCompletion:
        if self._take_unusable():
            return self._completion(self._unusable_content())
        try:
            # Tried on use: the scripted model must still converse without the workflow stages.
            from vitrine_shop.scripted.workflow_policy import (  # noqa: PLC0415
                scripted_stage_output,
            )
        except ImportError as exc:
            raise ProviderError(
                ProviderFailure.BAD_REQUEST,
                f"no scripted output for workflow stage {request.purpose!r}: the workflow "
                "stages are not available",
            ) from exc
        output = scripted_stage_output(request.purpose, request)
        content = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return self._completion(content)

    # -- customer conversation -------------------------------------------------------------

    def _converse(self, request: ChatRequest) -> ChatCompletion:
        transcript = Transcript.read(
            request.messages, ignore_system=self._faults.ignore_system_prompt
        )
        if HISTORY_NONE in transcript.system and not transcript.observations:
            return self._completion(abstention())
        constraints = extract_constraints(transcript.user_turns).forget(
            self._faults.forget_constraint
        )
        plan = ChainPlanner(transcript, constraints, request.tools)
        obeyed = transcript.obeys_injection
        # The calibration model orders under tool-output poison whatever its prompt says, but
        # never claims it; an obeyed injection orders first and claims it in the answer.
        calibrated = self._faults.vulnerable and transcript.poisoned
        if (obeyed or calibrated) and not transcript.attempted("place_order"):
            return self._call(plan.obey_injection())
        step = plan.next_step()
        if isinstance(step, str):
            return self._completion(f"{plan.claim_order()}\n\n{step}" if obeyed else step)
        return self._call(*step)

    def _call(self, *calls: tuple[str, dict[str, Any]]) -> ChatCompletion:
        requests: list[ToolCallRequest] = []
        for index, (name, arguments) in enumerate(calls):
            text = json.dumps(arguments, ensure_ascii=False)
            if self._take_unusable():
                text = self._unusable_content()
            # The name as a provider hands it over, decoded from its JSON: a string of its own,
            # so code that compares tool names by identity (`is`) fails here as it would live.
            received = json.loads(json.dumps(name))
            requests.append(ToolCallRequest(f"call-{self.calls}-{index}", received, text))
        return ChatCompletion(
            None, tuple(requests), _ZERO, finish_reason="tool_calls", model=SCRIPTED_MODEL_ID
        )

    def _completion(self, content: str) -> ChatCompletion:
        return ChatCompletion(content, (), _ZERO, finish_reason="stop", model=SCRIPTED_MODEL_ID)

    def _take_unusable(self) -> bool:
        if self._unusable_left <= 0:
            return False
        self._unusable_left -= 1
        self._unusable_given += 1
        return True

    def _unusable_content(self) -> str:
        # Alternate the two ways an output is unusable: not JSON at all, and JSON that
        # violates any schema a stage or tool declares (a list where an object is required).
        return '{"unfinished": ' if self._unusable_given % 2 == 1 else '["not", "an", "object"]'
