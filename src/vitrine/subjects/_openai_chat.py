"""A subject that is an OpenAI-compatible chat endpoint: OpenAI, vLLM, Ollama, llama.cpp, a proxy.

Each case becomes one ``POST {base_url}/chat/completions``; the reply's first message is the
trial's answer, its reported usage the trial's usage, and the request's latency goes into the
response's ``structured`` facts. The request goes through :class:`HttpEndpoint` rather than the
openai SDK so that the SDK's own retries cannot hide a failed try from the attempt census.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vitrine._bench.model import Case
from vitrine._bench.response import SubjectResponse, TokenUsage
from vitrine.errors import InvalidArgumentError
from vitrine.subjects._errors import PermanentEndpointError, SubjectInputError
from vitrine.subjects._transport import HttpEndpoint

__all__ = ["OpenAIChatSubject"]

MessagesBuilder = Callable[[Case], Sequence[Mapping[str, Any]]]


class OpenAIChatSubject:
    """``Arm("my-model", OpenAIChatSubject("http://127.0.0.1:8080/v1", "my-model"))``.

    A case's ``input`` is sent as the user message when it is a string, or as the conversation
    when it is a list of ``{"role", "content"}`` messages; ``messages=fn(case)`` builds them for
    any other shape. ``system`` is put first. ``api_key`` is sent as a bearer token; ``headers``
    adds any others (both are registered as secrets and never reach a run). ``options`` adds
    request fields such as ``{"temperature": 0, "max_tokens": 512}``.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        system: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 60.0,
        messages: MessagesBuilder | None = None,
        options: Mapping[str, Any] | None = None,
        provenance: str = "http-endpoint",
    ) -> None:
        if not model.strip():
            raise InvalidArgumentError("an OpenAI-compatible subject needs a model name")
        all_headers = dict(headers or {})
        if api_key:
            all_headers.setdefault("Authorization", f"Bearer {api_key}")
        self.endpoint = HttpEndpoint(
            base_url.rstrip("/") + "/chat/completions", headers=all_headers, timeout_s=timeout_s
        )
        self.model = model
        self.system = system
        self.provenance = provenance
        self._messages = messages
        self._options = dict(options or {})

    def __repr__(self) -> str:
        return f"OpenAIChatSubject(model={self.model!r}, {self.endpoint!r})"

    async def __call__(self, case: Case) -> SubjectResponse:
        """Ask the endpoint for ``case``'s answer."""
        payload = {**self._options, "model": self.model, "messages": self.conversation(case)}
        reply = await self.endpoint.post(payload)
        message, finish_reason = _first_message(reply.data)
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise PermanentEndpointError(
                f"the reply's message content is {type(content).__name__}, not text", reply.status
            )
        return SubjectResponse(
            answer=content,
            usage=_usage(reply.data),
            structured={
                "latency_ms": reply.latency_ms,
                "model": str(reply.data.get("model") or self.model),
                "finish_reason": finish_reason,
            },
            provenance=self.provenance,
        )

    def conversation(self, case: Case) -> list[dict[str, Any]]:
        """The messages sent for ``case``: the system message, then the case's turns."""
        if self._messages is not None:
            turns = [dict(m) for m in self._messages(case)]
        elif isinstance(case.input, str):
            turns = [{"role": "user", "content": case.input}]
        elif isinstance(case.input, list | tuple) and all(
            isinstance(m, Mapping) and "role" in m and "content" in m for m in case.input
        ):
            turns = [dict(m) for m in case.input]
        else:
            raise SubjectInputError(
                f"case {case.id!r}: its input is a {type(case.input).__name__}, neither text nor "
                "a list of {role, content} messages; pass messages=fn(case) to build them"
            )
        if not turns:
            raise SubjectInputError(f"case {case.id!r}: no messages to send")
        system = [{"role": "system", "content": self.system}] if self.system else []
        return system + turns

    async def aclose(self) -> None:
        """Close the connection pool of the current event loop."""
        await self.endpoint.aclose()


def _first_message(data: Any) -> tuple[Mapping[str, Any], str | None]:
    choices = data.get("choices") if isinstance(data, Mapping) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, Mapping) else None
    if not isinstance(message, Mapping):
        raise PermanentEndpointError(
            "the reply is not a chat completion: it has no choices[0].message"
        )
    reason = first.get("finish_reason") if isinstance(first, Mapping) else None
    return message, None if reason is None else str(reason)


def _usage(data: Mapping[str, Any]) -> TokenUsage | None:
    usage = data.get("usage")
    if not isinstance(usage, Mapping):
        return None  # not reported is not zero
    counts = [usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
        return None  # counts of another shape are not usage we can vouch for
    cost = usage.get("cost")
    return TokenUsage(counts[0], counts[1], float(cost) if isinstance(cost, int | float) else None)
