"""A fault-injecting fake of Anthropic's Messages API, for tests of the Anthropic provider.

:class:`FakeAnthropicServer` is :class:`~vitrine.testing.FakeOpenAIServer` answering
``POST .../v1/messages`` instead: the same scripts, faults, recording and counters, with each
:class:`~vitrine.testing.FakeReply` rendered as an Anthropic message (text and ``tool_use``
content blocks, ``stop_reason``, ``usage.input_tokens`` / ``output_tokens``). Point the official
SDK at ``server.endpoint``::

    with FakeAnthropicServer(FakeReply.text("hello")) as server:
        client = AsyncAnthropic(base_url=server.endpoint, api_key="test", max_retries=0)

Errors are sent in Anthropic's envelope (``{"type": "error", "error": {...}}``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from vitrine.testing._openai_server import FakeOpenAIServer, FakeReply, FakeRequest

__all__ = ["FakeAnthropicServer"]

_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


class FakeAnthropicServer(FakeOpenAIServer):
    """A scripted Anthropic Messages API on 127.0.0.1; see the module docstring."""

    def _accepts(self, request: FakeRequest) -> bool:
        return request.method == "POST" and request.path.rstrip("/").endswith("/v1/messages")

    def _response(
        self, request: FakeRequest, reply: FakeReply
    ) -> tuple[int, Any, Mapping[str, str]]:
        status, body, headers = super()._response(request, reply)
        if status != 200:
            return status, _error_envelope(status, body), headers
        if reply.body is not None:
            return status, body, headers
        choice = body["choices"][0]
        blocks: list[dict[str, Any]] = []
        if choice["message"].get("content"):
            blocks.append({"type": "text", "text": choice["message"]["content"]})
        for call in choice["message"].get("tool_calls") or ():
            function = call["function"]
            try:
                arguments = json.loads(function["arguments"])
            except json.JSONDecodeError:
                arguments = {"unparsed": function["arguments"]}
            blocks.append(
                {"type": "tool_use", "id": call["id"], "name": function["name"], "input": arguments}
            )
        message: dict[str, Any] = {
            "id": body["id"].replace("chatcmpl", "msg"),
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": blocks,
            "stop_reason": _STOP_REASONS.get(choice["finish_reason"], choice["finish_reason"]),
            "stop_sequence": None,
        }
        usage = body.get("usage")
        if usage is not None:
            message["usage"] = {
                "input_tokens": usage["prompt_tokens"],
                "output_tokens": usage["completion_tokens"],
            }
        return status, message, headers


def _error_envelope(status: int, body: Any) -> Any:
    error = body.get("error") if isinstance(body, Mapping) else None
    if not isinstance(error, Mapping):
        return body  # a raw body a test chose to send as it is
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": error.get("message", "")}}
