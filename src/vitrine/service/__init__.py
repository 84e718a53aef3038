"""Serve a conversational assistant over HTTP: server-sent events, sessions, limits, health.

The package is generic: a suite provides an :class:`AssistantFactory` as its ``"service"``
component and ``vitrine serve`` runs it. FastAPI and uvicorn are imported only by the modules
that build or run the app, never by ``vitrine --help``.
"""

from __future__ import annotations

from vitrine.service._protocol import (
    Assistant,
    AssistantFactory,
    AssistantReply,
    AssistantUnavailable,
    ServiceOptions,
    ToolEvent,
    UnknownPersonaError,
)
from vitrine.service._providers import provider_model

__all__ = [
    "Assistant",
    "AssistantFactory",
    "AssistantReply",
    "AssistantUnavailable",
    "ServiceOptions",
    "ToolEvent",
    "UnknownPersonaError",
    "provider_model",
]
