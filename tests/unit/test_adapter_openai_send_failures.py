"""instrument_openai when the send itself fails: the attempt is recorded, the error still
reaches the caller, and the SDK's retries of it are counted; the same for both clients.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import openai
import pytest
from test_adapter_openai import definition

import vitrine
from vitrine import Arm, Case, SubjectResponse
from vitrine.adapters import instrument_openai

KINDS = [openai.OpenAI, openai.AsyncOpenAI]


def closed_port_url() -> str:
    """A loopback URL nothing listens on, so every connection is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


async def create(client: Any) -> Any:
    reply = client.chat.completions.create(model="gpt-test", messages=[])
    return await reply if asyncio.iscoroutine(reply) else reply


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_connection_is_a_failed_call_and_still_reaches_the_caller(kind):
    client = instrument_openai(kind(base_url=closed_port_url(), api_key="t", max_retries=1))
    seen: list[Any] = []
    raised: list[BaseException] = []

    async def one(case: Case) -> SubjectResponse:
        try:
            await create(client)
        except openai.APIConnectionError as exc:
            raised.append(exc)
            seen.extend(vitrine.adapters.current_journal().model_calls)
        return SubjectResponse(answer="no connection")

    vitrine.evaluate(definition("paris"), Arm("one", one), retries=0)
    assert len(raised) == 1
    (call,) = seen
    assert call.sdk_retries == 1  # the SDK retried the refused connection once
    assert call.error is not None and "ConnectError" in call.error
    assert call.finish_reason is None
    assert call.input_tokens is None


@pytest.mark.parametrize("kind", KINDS)
def test_outside_a_trial_a_refused_connection_passes_through_unrecorded(kind):
    client = instrument_openai(kind(base_url=closed_port_url(), api_key="t", max_retries=0))
    with pytest.raises(openai.APIConnectionError):
        asyncio.run(create(client))
