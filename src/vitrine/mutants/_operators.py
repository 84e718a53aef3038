"""Operators at seams: the generated mutants of a suite's declared :class:`Seams`.

Each operator is an ordinary failure of that kind of part, not a random edit: a model that
refuses, echoes, calls a tool nobody asked for or stops mid-answer; a tool that errors, comes
back empty, answers with another record or ignores an argument; a prompt without one of its
rules; a conversation that lost its newest or oldest turn; a threshold one step off. The same
seams always generate the same mutants, in the same order, with the same ids, so a worker
process can rebuild the one it is asked to plant from the id alone.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from vitrine.errors import InvalidArgumentError
from vitrine.mutants._model import Mutant, MutantPlanter
from vitrine.mutants._seams import (
    Plant,
    SeamKind,
    Seams,
    SeamTarget,
    Threshold,
    ToolCall,
    ToolFault,
    ToolNext,
    ToolOutput,
)
from vitrine.providers._base import (
    ChatCompletion,
    ChatModel,
    ChatRequest,
    ToolCallRequest,
    WrappedModel,
)

__all__ = ["GENERATED_PREFIX", "REFUSAL", "generate_mutants"]

GENERATED_PREFIX = "seam."
REFUSAL = "I'm sorry, but I can't help with that."
_RULE_PREVIEW = 70
_ID_CHARS = re.compile(r"[^A-Za-z0-9._-]+")

ModelFault = Callable[[ChatRequest, ChatModel], Awaitable[ChatCompletion]]


def generate_mutants(seams: Seams) -> tuple[Mutant, ...]:
    """Every generated mutant of ``seams``: model, tools, rules, conversation, thresholds."""
    mutants = [
        *_model_mutants(seams),
        *_tool_mutants(seams),
        *_rule_mutants(seams),
        *_conversation_mutants(seams),
        *_threshold_mutants(seams),
    ]
    seen: set[str] = set()
    for mutant in mutants:
        if mutant.id in seen:
            # Two names that differ only in characters an id cannot hold (a store folder).
            raise InvalidArgumentError(
                f"two seams generate the mutant id {mutant.id!r}: rename one"
            )
        seen.add(mutant.id)
    return tuple(mutants)


def _mutant(
    seams: Seams,
    kind: SeamKind,
    target: str,
    operator: str,
    description: str,
    plant: MutantPlanter,
    *id_parts: str,
) -> Mutant:
    slug = ".".join(_ID_CHARS.sub("-", part).strip("-") or "x" for part in id_parts)
    return Mutant(
        id=(GENERATED_PREFIX + slug)[:64],
        component=f"{kind} {target}" if kind != target else kind,
        description=description,
        plant=plant,
        must_kill=seams.must_kill,
        seam=SeamTarget(kind, target, operator),
        generated=True,
    )


# --- the model --------------------------------------------------------------------------------


class _FaultyModel(WrappedModel):
    """The subject's model, answering through a fault; it keeps the model's id and provenance."""

    def __init__(self, inner: ChatModel, fault: ModelFault) -> None:
        super().__init__(inner)
        self._fault = fault

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        return await self._fault(request, self._inner)


async def _refuses(request: ChatRequest, inner: ChatModel) -> ChatCompletion:
    del request
    return ChatCompletion(REFUSAL, model=inner.model_id)


async def _echoes(request: ChatRequest, inner: ChatModel) -> ChatCompletion:
    users = [m.content or "" for m in request.messages if m.role == "user"]
    return ChatCompletion(users[-1] if users else "", model=inner.model_id)


async def _calls_random_tool(request: ChatRequest, inner: ChatModel) -> ChatCompletion:
    # Once per conversation, before any tool has answered: a model that called a stray tool
    # on every turn would only ever spend its budget, which says less about the checks.
    if not request.tools or any(m.role == "tool" for m in request.messages):
        return await inner.complete(request)
    # Seeded by the conversation, so the same case picks the same tool in every run.
    seed = hashlib.sha256("\x00".join(m.content or "" for m in request.messages).encode()).digest()
    spec = random.Random(seed).choice(request.tools)
    call = ToolCallRequest(
        "seam-mutant-call", spec.name, json.dumps(_arguments_for(spec.parameters))
    )
    return ChatCompletion(None, (call,), finish_reason="tool_calls", model=inner.model_id)


async def _truncates(request: ChatRequest, inner: ChatModel) -> ChatCompletion:
    completion = await inner.complete(request)
    if completion.tool_calls or not completion.content:
        return completion
    content = completion.content
    return ChatCompletion(
        content[: len(content) // 2],
        (),
        completion.usage,
        "length",  # what a provider says when the output hit its token ceiling
        completion.model,
    )


def _arguments_for(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The plainest value of each required argument: what a careless model would send."""
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, Mapping) or not isinstance(required, Sequence):
        return {}
    return {
        str(name): _plain_value(properties.get(name))
        for name in required
        if isinstance(properties.get(name), Mapping)
    }


def _plain_value(schema: Any) -> Any:
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = max(1, low + (1 if "exclusiveMinimum" in schema else 0))
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return "x" * max(1, int(schema.get("minLength", 1)))


_MODEL_OPERATORS: tuple[tuple[str, str, ModelFault], ...] = (
    ("refuses", "The model refuses every request and never calls a tool.", _refuses),
    (
        "echoes-last-turn",
        "The model answers every request with the customer's last turn, word for word.",
        _echoes,
    ),
    (
        "calls-random-tool",
        "Before anything else in a conversation, the model calls one offered tool picked at "
        "random, with the plainest arguments its schema allows.",
        _calls_random_tool,
    ),
    (
        "truncates",
        "The model's text answers stop halfway, as if they hit a token ceiling.",
        _truncates,
    ),
)


def _model_mutants(seams: Seams) -> list[Mutant]:
    planter = seams.model
    if planter is None:
        return []

    def plant(fault: ModelFault) -> MutantPlanter:
        return lambda: planter(lambda inner: _FaultyModel(inner, fault))

    return [
        _mutant(seams, "model", "model", name, text, plant(fault), "model", name)
        for name, text, fault in _MODEL_OPERATORS
    ]


# --- the tools --------------------------------------------------------------------------------


def _errors() -> ToolFault:
    async def fault(call: ToolCall, healthy: ToolNext) -> ToolOutput:
        del healthy
        return ToolOutput(False, None, f"{call.name} failed: internal error")

    return fault


def _returns_nothing() -> ToolFault:
    async def fault(call: ToolCall, healthy: ToolNext) -> ToolOutput:
        output = await healthy(call)
        return ToolOutput(output.ok, _empty_like(output.data), output.message)

    return fault


def _returns_another_record() -> ToolFault:
    # A cache keyed on the wrong thing: once the tool has answered one call, a call with other
    # arguments gets that first answer back. Per plant, so a fresh process starts empty.
    first: list[tuple[str, ToolOutput]] = []

    async def fault(call: ToolCall, healthy: ToolNext) -> ToolOutput:
        key = json.dumps(call.arguments, sort_keys=True, default=str)
        output = await healthy(call)
        if not first:
            if output.ok:
                first.append((key, output))
            return output
        stored_key, stored = first[0]
        return output if stored_key == key else stored

    return fault


def _ignores(argument: str) -> ToolFault:
    async def fault(call: ToolCall, healthy: ToolNext) -> ToolOutput:
        kept = {k: v for k, v in call.arguments.items() if k != argument}
        return await healthy(ToolCall(call.name, kept))

    return fault


def _empty_like(data: Any) -> Any:
    if isinstance(data, list | tuple):
        return []
    if isinstance(data, Mapping):
        return {}
    if isinstance(data, str):
        return ""
    return None


_TOOL_OPERATORS: tuple[tuple[str, str, Callable[[], ToolFault]], ...] = (
    ("errors", "{tool} fails on every call.", _errors),
    ("returns-nothing", "{tool} answers every call with empty data.", _returns_nothing),
    (
        "returns-another-record",
        "{tool} answers a call with other arguments with its first answer, as a cache keyed "
        "on the wrong thing would.",
        _returns_another_record,
    ),
)


def _tool_mutants(seams: Seams) -> list[Mutant]:
    planter = seams.tool
    if planter is None:
        return []

    def plant(name: str, make: Callable[[], ToolFault]) -> MutantPlanter:
        return lambda: planter(name, make())  # a fresh fault, so its state starts empty

    found: list[Mutant] = []
    for tool in seams.tools:
        for operator, text, make in _TOOL_OPERATORS:
            found.append(
                _mutant(
                    seams,
                    "tool",
                    tool.name,
                    operator,
                    text.format(tool=tool.name),
                    plant(tool.name, make),
                    "tool",
                    tool.name,
                    operator,
                )
            )
        for argument in tool.optional:
            found.append(
                _mutant(
                    seams,
                    "tool",
                    tool.name,
                    f"ignores {argument}",
                    f"{tool.name} ignores its {argument} argument.",
                    plant(tool.name, functools.partial(_ignores, argument)),
                    "tool",
                    tool.name,
                    f"ignores-{argument}",
                )
            )
    return found


# --- the prompt, the conversation, the thresholds -------------------------------------------


def _rule_mutants(seams: Seams) -> list[Mutant]:
    planter = seams.without_rule
    if planter is None:
        return []

    def plant(number: int) -> MutantPlanter:
        return lambda: planter(number)

    found = []
    for number, rule in enumerate(seams.rules, start=1):
        preview = " ".join(rule.split())
        if len(preview) > _RULE_PREVIEW:
            preview = preview[: _RULE_PREVIEW - 3].rstrip() + "..."
        found.append(
            _mutant(
                seams,
                "prompt-rule",
                f"rule {number}",
                "deleted",
                f"The prompt loses rule {number} ({preview!r}).",
                plant(number),
                f"rule-{number}",
                "deleted",
            )
        )
    return found


def _drop_newest(turns: Sequence[str]) -> tuple[str, ...]:
    # A one-turn conversation keeps its turn: no subject can answer an empty conversation,
    # and a mutant that only breaks the harness's input says nothing about the checks.
    return tuple(turns[:-1]) if len(turns) > 1 else tuple(turns)


def _drop_oldest(turns: Sequence[str]) -> tuple[str, ...]:
    return tuple(turns[1:]) if len(turns) > 1 else tuple(turns)


def _conversation_mutants(seams: Seams) -> list[Mutant]:
    planter = seams.conversation
    if planter is None:
        return []

    def plant(transform: Callable[[Sequence[str]], tuple[str, ...]]) -> MutantPlanter:
        return lambda: planter(transform)

    return [
        _mutant(
            seams,
            "conversation",
            "user turns",
            f"{which} turn dropped",
            f"The subject never receives the customer's {which} turn (when there are two or more).",
            plant(transform),
            "turns",
            f"{which}-dropped",
        )
        for which, transform in (("newest", _drop_newest), ("oldest", _drop_oldest))
    ]


def _threshold_mutants(seams: Seams) -> list[Mutant]:
    def plant(threshold: Threshold, value: int | float) -> Callable[[], Plant]:
        return lambda: threshold.plant(value)

    found = []
    for threshold in seams.thresholds:
        for operator, sign in (("raised", 1), ("lowered", -1)):
            value = threshold.value + sign * threshold.delta
            found.append(
                _mutant(
                    seams,
                    "threshold",
                    threshold.name,
                    operator,
                    f"{threshold.name} is {value:g} instead of {threshold.value:g}.",
                    plant(threshold, value),
                    "threshold",
                    threshold.name,
                    operator,
                )
            )
    return found
