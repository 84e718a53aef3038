"""The model behind a served assistant when ``--provider`` names a model service.

Readiness is checked without a call; a provider that is not configured leaves the service
running but not ready, with the reason /health reports (which names variables, never values).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from vitrine._plans.base import PROVIDERS
from vitrine.errors import UsageError
from vitrine.providers._config import ProviderConfig, create_chat_model, readiness
from vitrine.service._protocol import ServiceOptions

if TYPE_CHECKING:
    from vitrine.providers._base import ChatModel

__all__ = ["provider_model"]


def provider_model(options: ServiceOptions) -> tuple[ChatModel | None, str | None]:
    """``(model, None)`` when the provider is ready, else ``(None, reason)``."""

    name = next((known for known in PROVIDERS if known == options.provider), None)
    if name is None:
        return None, f"provider {options.provider!r} is not a model service vitrine calls"
    environ = dict(os.environ)
    if options.max_output_tokens is not None:
        # Through the environment reader, so the ceiling is checked against the context.
        environ["VITRINE_SUBJECT_MAX_OUTPUT_TOKENS"] = str(options.max_output_tokens)
    try:
        config = ProviderConfig.from_env(
            name,
            model=options.model,
            local_model=options.local_model,
            environ=environ,
        )
    except UsageError as exc:  # a service URL holding credentials: refused, nothing called
        return None, str(exc)
    state = readiness(config)
    if not state.ready:
        return None, state.reason
    return create_chat_model(config, role="subject"), None
