"""The one protocol every model call goes through.

A scripted model, a local GGUF model and a paid endpoint all implement :class:`ChatModel`, so the
same agent loop and the same workflow stages run offline and live. The message shapes follow
the OpenAI chat-completions format because every provider vitrine speaks to understands it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Literal, Protocol, runtime_checkable

from vitrine._bench.response import TokenUsage
from vitrine._redact import redact_credentials
from vitrine.errors import InvalidDataError, ProviderError

__all__ = [
    "ChatCompletion",
    "ChatMessage",
    "ChatModel",
    "ChatRequest",
    "Provenance",
    "ProviderError",
    "ProviderFailure",
    "ResponseFormat",
    "ToolCallRequest",
    "ToolSpec",
    "WrappedModel",
]

Role = Literal["system", "user", "assistant", "tool"]


class Provenance(StrEnum):
    """Where a model's output came from; it is stamped on every artifact."""

    OFFLINE_DETERMINISTIC = "offline-deterministic"
    LOCAL = "local"
    PAID = "paid"


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call as the model asked for it. ``arguments`` is the raw JSON text it produced."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> dict[str, Any]:
        """Parse the model's argument JSON; raises ValueError with a safe message if malformed."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError as exc:
            raise InvalidDataError(
                f"tool {self.name!r}: arguments are not valid JSON ({exc.msg})"
            ) from exc
        if not isinstance(value, dict):
            raise InvalidDataError(f"tool {self.name!r}: arguments must be a JSON object")
        return value

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCallRequest, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role != "tool":
            out["name"] = self.name
        return out


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model: name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": _plain(self.parameters),
            },
        }


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """Ask for structured output that validates against ``schema``."""

    name: str
    schema: Mapping[str, Any]

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": _plain(self.schema), "strict": True},
        }


@dataclass(frozen=True, slots=True)
class ChatRequest:
    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...] = ()
    response_format: ResponseFormat | None = None
    max_output_tokens: int = 4000
    temperature: float | None = None
    # Which role the call plays (subject, judge, a workflow stage); scripted models and
    # fault injectors key on it, real providers ignore it.
    purpose: str = "subject"
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class ChatCompletion:
    """One model reply. Every provider's reply becomes one, so this is where a model's text
    enters vitrine: its content and tool-call arguments are stripped of credentials here
    (:func:`vitrine.redact.redact_credentials`), before any answer, trace or page can hold them.
    """

    content: str | None
    tool_calls: tuple[ToolCallRequest, ...] = ()
    usage: TokenUsage | None = None
    finish_reason: str = "stop"
    model: str = ""

    def __post_init__(self) -> None:
        if self.content:
            object.__setattr__(self, "content", redact_credentials(self.content))
        if any(call.arguments for call in self.tool_calls):
            calls = tuple(
                replace(call, arguments=redact_credentials(call.arguments))
                for call in self.tool_calls
            )
            object.__setattr__(self, "tool_calls", calls)


class ProviderFailure(StrEnum):
    """The category of a failed provider call, as recorded in receipts and censuses."""

    RATE_LIMITED = "rate_limited"
    SERVER_ERROR = "server_error"
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"
    BAD_REQUEST = "bad_request"
    AUTHENTICATION = "authentication"
    BAD_RESPONSE = "bad_response"
    CANCELLED = "cancelled"

    @property
    def retryable(self) -> bool:
        return self in (
            ProviderFailure.RATE_LIMITED,
            ProviderFailure.SERVER_ERROR,
            ProviderFailure.TIMEOUT,
            ProviderFailure.UNAVAILABLE,
        )


@runtime_checkable
class ChatModel(Protocol):
    """Anything that can answer a chat request: scripted, local or remote."""

    @property
    def model_id(self) -> str: ...

    @property
    def provenance(self) -> Provenance: ...

    async def complete(self, request: ChatRequest) -> ChatCompletion: ...


class WrappedModel:
    """A :class:`ChatModel` that answers through another one and keeps its id and provenance.

    Subclasses change how a call goes (a fault, a ledger, a planted regression) by overriding
    :meth:`complete`; what the wrapped model is stays the inner model's.
    """

    def __init__(self, inner: ChatModel) -> None:
        self._inner = inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def provenance(self) -> Provenance:
        return self._inner.provenance

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        return await self._inner.complete(request)


def _plain(value: Any) -> Any:
    """Turn read-only mappings into plain dicts so JSON encoders and SDKs accept them."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_plain(v) for v in value]
    return value
