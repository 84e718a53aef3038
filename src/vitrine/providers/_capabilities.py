"""Which structured-output request an OpenAI-compatible server accepts, found by asking once.

Servers differ: OpenAI and vLLM take ``response_format: json_schema``; llama.cpp's Python
server answers it with HTTP 500 and takes ``json_object`` with a schema; some take neither.
Retrying a request the server cannot accept only queues more work behind it, so the choice is
made once, at readiness, by :func:`probe_structured_output`: one cheap call per rung of the
ladder, each made exactly once (no retries), the first accepted rung kept. The result, with
what each refused rung answered (its typed failure only), goes into the session receipt.

A failure that says nothing about support (a timeout, an unreachable server, a rejected key)
ends the probe with that error: it is an infrastructure problem, not an answer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from vitrine.providers._base import (
    ChatMessage,
    ChatRequest,
    ProviderError,
    ProviderFailure,
    ResponseFormat,
)
from vitrine.providers._openai_compat import (
    STRUCTURED_OUTPUT_MODES,
    OpenAICompatibleModel,
    StructuredOutput,
)
from vitrine.providers._retry import ProviderBackoff

__all__ = ["PROBE_MAX_OUTPUT_TOKENS", "StructuredOutputProbe", "probe_structured_output"]

PROBE_MAX_OUTPUT_TOKENS = 16
PROBE_PURPOSE = "capability-probe"
# The failures that mean "this server does not take that request shape".
_UNSUPPORTED = frozenset(
    {ProviderFailure.BAD_REQUEST, ProviderFailure.SERVER_ERROR, ProviderFailure.BAD_RESPONSE}
)
_PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class StructuredOutputProbe:
    """The mode chosen and, per refused rung, the typed failure that refused it."""

    mode: StructuredOutput
    refused: tuple[tuple[StructuredOutput, str], ...] = ()
    calls: int = 0
    source: str = "probe"

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "source": self.source,
            "calls": self.calls,
            "refused": [{"mode": mode, "failure": why} for mode, why in self.refused],
        }


async def probe_structured_output(model: OpenAICompatibleModel) -> StructuredOutputProbe:
    """Try each rung once, keep the first the server accepts, and set it on ``model``.

    The last rung (``prompt``) sends no ``response_format`` at all, so a server that refuses
    even that is not a capability question: its error propagates.
    """
    request = ChatRequest(
        (ChatMessage("user", 'Reply with the JSON object {"ok": true}.'),),
        response_format=ResponseFormat("capability_probe", _PROBE_SCHEMA),
        max_output_tokens=PROBE_MAX_OUTPUT_TOKENS,
        temperature=0.0,
        purpose=PROBE_PURPOSE,
    )
    once = ProviderBackoff(max_retries=0)
    refused: list[tuple[StructuredOutput, str]] = []
    last = STRUCTURED_OUTPUT_MODES[-1]
    for mode in STRUCTURED_OUTPUT_MODES:
        try:
            await model.complete_with(request, once, mode)
        except asyncio.CancelledError:
            raise
        except ProviderError as exc:
            if mode == last or exc.failure not in _UNSUPPORTED:
                raise
            refused.append((mode, exc.failure.value))
            continue
        model.structured_output = mode
        return StructuredOutputProbe(mode, tuple(refused), len(refused) + 1)
    raise AssertionError("unreachable: the last rung returns or raises")  # pragma: no cover
