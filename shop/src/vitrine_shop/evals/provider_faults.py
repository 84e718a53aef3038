"""Provider faults: a failed model call surfaces as a failure on every path of the shop.

Each architecture's model is wrapped so that it raises the provider's typed failure
(:class:`~vitrine.providers.ProviderError`: a timeout, a refused connection, a rate limit, a
server error) on a chosen call: the first one, a later one (seeded, among the calls the same
conversation makes without faults), or every call from that later one on (an outage). What
must come out is what each path's design says a provider failure is:

- the agent (``vitrine_shop.agent``): not the subject's answer. ``answer`` raises the
  provider's error, so the harness records the trial as not measured instead of scoring a
  reply;
- the workflow (``vitrine_shop.workflow``): a cost in quality, not an answer. Every failed
  call is counted in its stage's census as a provider failure (with its kind among the visit's
  problems); a visit whose attempts ended on the provider is ``unrecovered`` and listed in
  ``unrecovered_stages``; whenever a code path answered for a stage, the answer discloses the
  fallback (unless the screen withheld it). The workflow must not raise: its design answers;
- the served assistant (``vitrine_shop.served_assistant``): its documented unavailable reply,
  :class:`~vitrine.service.AssistantUnavailable` raised from the provider's error. A reply is a
  made-up answer served to the customer.

A fault that the conversation never reached (a path that stopped calling the model earlier) is
counted apart, not as a pass: the evidence says how many faults were raised.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from vitrine.providers import (
    ChatCompletion,
    ChatModel,
    ChatRequest,
    ProviderError,
    ProviderFailure as Failure,
    WrappedModel,
)
from vitrine.service import AssistantUnavailable, ServiceOptions
from vitrine_shop import scripted
from vitrine_shop.agent import ShopAgent
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.data_variants import variant_services
from vitrine_shop.evals.exploration import exploration_cases
from vitrine_shop.operations import ShopServices
from vitrine_shop.served_assistant import in_process_assistant
from vitrine_shop.workflow import FALLBACK_DISCLOSURE, ShopWorkflow

__all__ = ["FAULT_KINDS", "FAULT_SEED", "FaultingModel", "observe_provider_faults"]

FAULT_SEED = 23
_REQUESTS = 2  # per architecture: each asked with a fault at the first call, a later one, and
# an outage from that later one on
_EXAMPLES = 8

FAULT_KINDS: dict[str, Failure] = {
    "timeout": Failure.TIMEOUT,
    "connection": Failure.UNAVAILABLE,
    "rate limit": Failure.RATE_LIMITED,
    "server error": Failure.SERVER_ERROR,
}


class FaultingModel(WrappedModel):
    """A model that fails the provider's way on call ``at`` (1-based), and on every call after
    it when ``outage``; every other call is the inner model's."""

    def __init__(
        self, inner: ChatModel, failure: Failure | None, at: int = 0, *, outage: bool = False
    ) -> None:
        super().__init__(inner)
        self.failure = failure
        self._at = at
        self._outage = outage
        self.calls = 0
        self.raised = 0

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        self.calls += 1
        hit = self.calls == self._at or (self._outage and self.calls > self._at)
        if self.failure is not None and self._at and hit:
            self.raised += 1
            raise ProviderError(self.failure, f"planted {self.failure.value}")
        return await self._inner.complete(request)


@dataclass(frozen=True)
class _Fault:
    failure: Failure
    at: int
    outage: bool

    @property
    def name(self) -> str:
        where = f"from call {self.at} on" if self.outage else f"on call {self.at}"
        return f"{self.failure.value} {where}"


# Each architecture runs one conversation on a model and returns the problem it finds with
# what came out (None when the design's contract held).
Path = Callable[[ShopServices, ShopRequest, FaultingModel], Awaitable[str | None]]


def _answered(answer: str | None) -> str:
    return f"answered {(answer or '')[:60]!r} instead of failing"


async def _agent(services: ShopServices, request: ShopRequest, model: FaultingModel) -> str | None:
    agent = ShopAgent(model, services, traced=False)
    try:
        response = await agent.answer(request)
    except ProviderError as exc:
        return None if exc.failure is model.failure else f"raised {exc.failure.value}"
    return None if not model.raised else _answered(response.answer)


async def _workflow(
    services: ShopServices, request: ShopRequest, model: FaultingModel
) -> str | None:
    try:
        response = await ShopWorkflow(model, services).answer(request)
    except ProviderError as exc:
        return f"raised {exc.failure.value}: the workflow's design answers from its code paths"
    structured = response.structured or {}
    visits = [v for vs in (structured.get("stage_visits") or {}).values() for v in vs]
    counted = sum(int(v.get("provider_failures", 0)) for v in visits)
    if counted != model.raised:
        return f"{model.raised} provider failure(s) raised, {counted} in the stage census"
    kind = f"provider failure: {model.failure.value}" if model.failure else ""
    failed = [v for v in visits if int(v.get("provider_failures", 0))]
    if any(kind not in v.get("problems", ()) for v in failed):
        return f"a stage census does not name the failure as {kind!r}"
    unrecovered = set(structured.get("unrecovered_stages") or ())
    for stage, stage_visits in (structured.get("stage_visits") or {}).items():
        for visit in stage_visits:
            ended_on_provider = visit.get("last_usable") is None and int(
                visit.get("provider_failures", 0)
            ) > int(visit.get("unusable", 0))
            if ended_on_provider and (
                visit.get("status") != "unrecovered" or stage not in unrecovered
            ):
                return f"{stage}'s attempts ended on the provider, yet it is {visit.get('status')}"
    code_path = any(v.get("code_path_answered") for v in visits)
    if (
        code_path
        and not structured.get("withheld")
        and FALLBACK_DISCLOSURE not in (response.answer or "")
    ):
        return "a code path answered for a failed stage, and the answer does not disclose it"
    return None


async def _served(services: ShopServices, request: ShopRequest, model: FaultingModel) -> str | None:
    options = ServiceOptions(suite_options={"architecture": "agent", "front_desk": True})
    assistant = in_process_assistant(options, services)
    # The model a configured provider would be: the seam the assistant reads every turn's from.
    assistant._model = model
    try:
        reply = await assistant.reply(request.persona_id, request.user_turns)
    except AssistantUnavailable as exc:
        if isinstance(exc.__cause__, ProviderError) or not model.raised:
            return None
        return "unavailable, but not from the provider's failure"
    except ProviderError as exc:
        return f"raised {exc.failure.value} instead of answering unavailable"
    return None if not model.raised else _answered(reply.answer)


ARCHITECTURES: tuple[tuple[str, Path], ...] = (
    ("agent", _agent),
    ("workflow", _workflow),
    ("served assistant", _served),
)


async def observe_provider_faults(base: ShopServices, seed: int = FAULT_SEED) -> dict[str, Any]:
    """Every architecture over seeded exploration requests, each with a fault of every kind at
    the first call, at a later one and from it on; each outcome held to the design's contract."""
    rng = random.Random(seed)
    requests = [ShopRequest.from_case_input(case.input) for case in exploration_cases()]
    kinds = list(FAULT_KINDS.values())
    violations: list[dict[str, str]] = []
    calls = raised = unreached = 0
    for name, path in ARCHITECTURES:
        asked = turn = 0
        start = rng.randrange(len(kinds))
        for request in rng.sample(requests, len(requests)):
            if asked == _REQUESTS:
                break
            clean = FaultingModel(scripted.ScriptedShopModel(), None)
            await path(variant_services(base), request, clean)
            if clean.calls == 0:
                continue  # answered without a model (the desk, an abstention): nothing to fail
            asked += 1
            later = rng.randint(min(2, clean.calls), clean.calls)
            # Every kind in turn, from a seeded start: each architecture meets all four.
            for at, outage in ((1, False), (later, False), (later, True)):
                fault = _Fault(kinds[(start + turn) % len(kinds)], at, outage)
                turn += 1
                model = FaultingModel(
                    scripted.ScriptedShopModel(), fault.failure, fault.at, outage=fault.outage
                )
                problem = await path(variant_services(base), request, model)
                calls += 1
                raised += model.raised
                unreached += not model.raised
                if problem is not None:
                    who = request.persona_id or "anonymous"
                    violations.append(
                        {
                            "rule": "provider-fault",
                            "case": f"{name}, {who}: {request.user_turns[-1][:50]!r}",
                            "detail": f"{fault.name}: {problem}",
                        }
                    )
    return {
        "calls": calls,
        "architectures": len(ARCHITECTURES),
        "faults_raised": raised,
        "faults_unreached": unreached,
        "violations": len(violations),
        "rules": dict(Counter(v["rule"] for v in violations)),
        "examples": violations[:_EXAMPLES],
    }
