"""Message content for spans, only when capture is on: scrubbed and bounded like receipts.

The shapes follow the GenAI conventions' ``gen_ai.input.messages`` and
``gen_ai.output.messages``: a JSON list of messages, each a role and a list of parts.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from vitrine._redact import sanitize_text

if TYPE_CHECKING:
    from vitrine.providers._base import ChatCompletion, ChatMessage, ChatRequest, ToolCallRequest

__all__ = ["CONTENT_LIMIT", "input_messages", "output_messages", "scrubbed"]

# Per text part; a whole prompt is bounded at a few times this by the message count.
CONTENT_LIMIT = 4000
_MESSAGES_LIMIT = 32000


def scrubbed(text: str) -> str:
    """``text`` with credentials, endpoints and control characters removed, bounded."""
    return sanitize_text(text, CONTENT_LIMIT)


def input_messages(request: ChatRequest) -> str:
    """The request's messages as ``gen_ai.input.messages`` JSON."""
    return _bounded_json([_message(m) for m in request.messages])


def output_messages(completion: ChatCompletion) -> str:
    """The completion as ``gen_ai.output.messages`` JSON."""
    parts: list[dict[str, Any]] = []
    if completion.content:
        parts.append({"type": "text", "content": scrubbed(completion.content)})
    parts.extend(_tool_call(call) for call in completion.tool_calls)
    message = {"role": "assistant", "parts": parts, "finish_reason": completion.finish_reason}
    return _bounded_json([message])


def _message(message: ChatMessage) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if message.role == "tool":
        parts.append(
            {
                "type": "tool_call_response",
                "id": message.tool_call_id,
                "response": scrubbed(message.content or ""),
            }
        )
    elif message.content:
        parts.append({"type": "text", "content": scrubbed(message.content)})
    parts.extend(_tool_call(call) for call in message.tool_calls)
    return {"role": message.role, "parts": parts}


def _tool_call(call: ToolCallRequest) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "id": call.id,
        "name": call.name,
        "arguments": scrubbed(call.arguments),
    }


def _bounded_json(messages: list[dict[str, Any]]) -> str:
    text = json.dumps(messages, ensure_ascii=False)
    # Never cut JSON in the middle: a backend would show it as a broken string. Drop the
    # oldest messages instead and say how many.
    while len(text) > _MESSAGES_LIMIT and len(messages) > 1:
        messages = [
            {
                "role": "system",
                "parts": [{"type": "text", "content": "[earlier messages omitted]"}],
            },
            *messages[2:],
        ]
        text = json.dumps(messages, ensure_ascii=False)
    return text
