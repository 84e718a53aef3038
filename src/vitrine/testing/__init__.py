"""Public helpers for testing model providers and subjects without a real model service.

:class:`FakeOpenAIServer` is a real HTTP server on 127.0.0.1 that speaks the OpenAI
chat-completions protocol (and the Azure OpenAI path shape) and replies exactly as a test
scripts it: text, tool calls, structured JSON, errors, latency, dropped connections. Point any
OpenAI-compatible client at ``server.base_url`` and assert on ``server.requests``.
:class:`FakeAnthropicServer` is the same server answering Anthropic's Messages API.
"""

from __future__ import annotations

from vitrine.testing._anthropic_server import FakeAnthropicServer
from vitrine.testing._openai_server import (
    FakeOpenAIServer,
    FakeReply,
    FakeRequest,
    FakeToolCall,
    Script,
)

__all__ = [
    "FakeAnthropicServer",
    "FakeOpenAIServer",
    "FakeReply",
    "FakeRequest",
    "FakeToolCall",
    "Script",
]
