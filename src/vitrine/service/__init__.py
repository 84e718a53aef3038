"""Serve a conversational assistant over HTTP: server-sent events, sessions, limits, health.

The package is generic: a suite provides an :class:`AssistantFactory` as its ``"service"``
component and ``vitrine serve`` runs it. FastAPI and uvicorn are imported only by the modules
that build or run the app, never by ``vitrine --help``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine.service._protocol import (
        Assistant as Assistant,
        AssistantFactory as AssistantFactory,
        AssistantReply as AssistantReply,
        AssistantUnavailable as AssistantUnavailable,
        ServiceOptions as ServiceOptions,
        ToolEvent as ToolEvent,
        UnknownPersonaError as UnknownPersonaError,
    )
    from vitrine.service._providers import provider_model as provider_model

__getattr__, __dir__ = lazy_exports(__name__)
