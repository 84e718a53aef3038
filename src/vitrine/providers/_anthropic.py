"""A :class:`~vitrine.providers.ChatModel` over Anthropic's Messages API (Claude).

:class:`AnthropicModel` speaks through the official ``anthropic`` SDK, imported on first use,
with the same guarantees as :class:`~vitrine.providers.OpenAICompatibleModel`:
the SDK's own retries are off and every attempt goes through
:func:`vitrine.providers._retry.call_with_retry` (so it is recorded); failures become typed
:class:`~vitrine.errors.ProviderError`\\ s holding only the HTTP status and the SDK's
exception class (never the provider's message); the key, the base URL and its host are
registered as secrets; the SDK's log lines are scrubbed.

The chat shapes are translated both ways: system messages become the ``system`` parameter,
tool calls ``tool_use`` blocks, tool results ``tool_result`` blocks in a user turn, tools
``input_schema`` specs offered with ``tool_choice: auto``. The Messages API has no
``response_format``, so a structured request carries its schema as an instruction and the
caller validates the reply, as on the ``prompt`` rung of the OpenAI-compatible ladder.
"""

from __future__ import annotations

import asyncio
import json
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vitrine._bench.response import TokenUsage
from vitrine._redact import register_secret
from vitrine.errors import InvalidArgumentError
from vitrine.providers._base import (
    ChatCompletion,
    ChatMessage,
    ChatRequest,
    Provenance,
    ProviderError,
    ProviderFailure,
    ToolCallRequest,
)
from vitrine.providers._openai_compat import (
    hosts,
    map_sdk_error,
    schema_instruction,
    scrub_sdk_logs,
)
from vitrine.providers._retry import AttemptSink, ProviderBackoff, call_with_retry

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["DEFAULT_ANTHROPIC_MODEL", "AnthropicModel"]

DEFAULT_ANTHROPIC_MODEL = "claude-3-5-haiku-latest"
_DEADLINE_GRACE_S = 1.0
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}


class AnthropicModel:
    """One Claude model behind the Messages API (``base_url`` None for api.anthropic.com)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float = 120.0,
        retry: ProviderBackoff | None = None,
        max_output_tokens: int | None = None,
        on_attempt: AttemptSink | None = None,
    ) -> None:
        if not model:
            raise InvalidArgumentError("an Anthropic model needs a model name")
        if timeout_s <= 0:
            raise InvalidArgumentError(f"timeout_s must be positive, got {timeout_s}")
        if max_output_tokens is not None and max_output_tokens < 1:
            raise InvalidArgumentError(
                f"max_output_tokens must be at least 1, got {max_output_tokens}"
            )
        register_secret(api_key)
        for endpoint in (base_url, *hosts(base_url)):
            register_secret(endpoint, endpoint=True)
        self._model = model
        self._api_key = api_key
        self._base_url = base_url
        self._timeout_s = timeout_s
        self._retry = retry or ProviderBackoff()
        self._ceiling = max_output_tokens
        self._on_attempt = on_attempt
        self._lock = threading.Lock()
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncAnthropic] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model_id!r})"

    @property
    def model_id(self) -> str:
        return f"anthropic:{self._model}"

    @property
    def provenance(self) -> Provenance:
        return Provenance.PAID

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        body = self._body(request)
        return await call_with_retry(
            lambda: self._attempt(body),
            self._retry,
            model_id=self.model_id,
            purpose=request.purpose,
            on_attempt=self._on_attempt,
        )

    async def aclose(self) -> None:
        """Close the HTTP connections opened on the running event loop."""
        with self._lock:
            client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    async def _attempt(self, body: Mapping[str, Any]) -> ChatCompletion:
        import anthropic

        client = self._client()
        mapped: ProviderError | None = None
        try:
            async with asyncio.timeout(self._timeout_s + _DEADLINE_GRACE_S):
                reply = await client.post(
                    "/v1/messages",
                    body=body,
                    cast_to=object,
                    options={"timeout": self._timeout_s},
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            mapped = map_sdk_error(exc, anthropic)
        if mapped is not None:
            raise mapped  # outside the except block: no SDK exception chained to it
        return _completion(reply)

    def _client(self) -> AsyncAnthropic:
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.get(loop)
            if client is None:
                import anthropic

                client = anthropic.AsyncAnthropic(
                    api_key=self._api_key,
                    base_url=self._base_url,
                    max_retries=0,
                    timeout=self._timeout_s,
                )
                scrub_sdk_logs()
                self._clients[loop] = client
            return client

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        limit = request.max_output_tokens
        if self._ceiling is not None:
            limit = min(limit, self._ceiling)
        system = [m.content or "" for m in request.messages if m.role == "system"]
        if request.response_format is not None:
            instruction = schema_instruction(dict(request.response_format.schema))
            system.append(str(instruction["content"]))
        body: dict[str, Any] = {
            "model": self._model,
            "max_tokens": limit,
            "messages": _messages(request.messages),
        }
        if system:
            body["system"] = "\n\n".join(system)
        if request.tools:
            body["tools"] = [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.to_openai()["function"]["parameters"],
                }
                for tool in request.tools
            ]
            body["tool_choice"] = {"type": "auto"}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        return body


def _messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """User and assistant turns as content blocks, consecutive same-role turns merged."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks: list[dict[str, Any]] = []
        if message.role == "tool":
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id or "",
                    "content": message.content or "",
                }
            )
        else:
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            blocks.extend(
                {"type": "tool_use", "id": c.id, "name": c.name, "input": _input(c)}
                for c in message.tool_calls
            )
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _input(call: ToolCallRequest) -> dict[str, Any]:
    try:
        return call.parsed_arguments()
    except ValueError:
        return {}  # the model's malformed arguments were already answered with an error


def _completion(body: Any) -> ChatCompletion:
    """Read a Messages API reply defensively: any field may be missing or of the wrong type."""
    blocks = body.get("content") if isinstance(body, Mapping) else None
    if not isinstance(blocks, list):
        raise ProviderError(ProviderFailure.BAD_RESPONSE, "the response is not a message")
    texts: list[str] = []
    calls: list[ToolCallRequest] = []
    for index, block in enumerate(blocks):
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use" and block.get("name"):
            arguments = block.get("input")
            calls.append(
                ToolCallRequest(
                    str(block.get("id") or f"toolu-{index}"),
                    str(block["name"]),
                    json.dumps(arguments if isinstance(arguments, Mapping) else {}),
                )
            )
    if not texts and not calls:
        raise ProviderError(ProviderFailure.BAD_RESPONSE, "no text and no tool use in the response")
    usage = body.get("usage")
    stop = str(body.get("stop_reason") or "end_turn")
    return ChatCompletion(
        content="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        usage=_usage(usage),
        finish_reason=_FINISH.get(stop, stop),
        model=str(body.get("model") or ""),
    )


def _usage(usage: Any) -> TokenUsage | None:
    if not isinstance(usage, Mapping):
        return None

    def count(value: Any) -> int:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return int(value) if ok else 0

    return TokenUsage(count(usage.get("input_tokens")), count(usage.get("output_tokens")), None)
