"""One traced model call for any :class:`~vitrine.providers.ChatModel`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine.tracing._spans import installed_backend, model_call, provider_of, record_completion

if TYPE_CHECKING:
    from vitrine.providers._base import ChatCompletion, ChatModel, ChatRequest

__all__ = ["complete"]

# Models whose id carries no provider prefix are named by where their output comes from.
_BY_PROVENANCE = {"offline-deterministic": "vitrine.scripted", "local": "llama_cpp"}


async def complete(model: ChatModel, request: ChatRequest) -> ChatCompletion:
    """``model.complete(request)`` as one ``chat {model}`` span; a plain call when tracing is off.

    Scripted, local and remote models alike get the span, with the request's settings, the
    response's model, finish reason and token usage, and (content capture on) the messages.
    A provider that retries on its own adds its attempts to this span as events.
    """
    if installed_backend() is None:
        return await model.complete(request)
    model_id = model.model_id
    provider = provider_of(model_id) or _BY_PROVENANCE.get(model.provenance.value)
    with model_call(model_id, provider=provider, purpose=request.purpose, request=request) as span:
        completion = await model.complete(request)
        record_completion(span, completion)
        return completion
