"""Model providers: one chat interface over OpenAI, Azure OpenAI, Anthropic and local GGUF models.

Each provider's SDK is imported only when a model of that kind is created, so the core
installs and runs without any of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine._plans.base import (
        DEFAULT_PROVIDER_RULE as DEFAULT_PROVIDER_RULE,
        default_provider as default_provider,
    )
    from vitrine.providers._base import (
        ChatCompletion as ChatCompletion,
        ChatMessage as ChatMessage,
        ChatModel as ChatModel,
        ChatRequest as ChatRequest,
        Provenance as Provenance,
        ProviderError as ProviderError,
        ProviderFailure as ProviderFailure,
        ResponseFormat as ResponseFormat,
        ToolCallRequest as ToolCallRequest,
        ToolSpec as ToolSpec,
        WrappedModel as WrappedModel,
    )
    from vitrine.providers._capabilities import (
        probe_structured_output as probe_structured_output,
    )
    from vitrine.providers._config import (
        ProviderConfig as ProviderConfig,
        create_chat_model as create_chat_model,
        provider_is_free as provider_is_free,
        readiness as readiness,
    )
    from vitrine.providers._openai_compat import (
        OpenAICompatibleModel as OpenAICompatibleModel,
    )

__getattr__, __dir__ = lazy_exports(__name__)
