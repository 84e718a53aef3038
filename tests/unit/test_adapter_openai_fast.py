"""instrument_openai(client, transport="aiohttp"): the SDK's aiohttp backend under an
AsyncOpenAI client, recorded exactly as the default path is, and marked in the provenance.

Every test drives a real ``openai.AsyncOpenAI`` against the loopback FakeOpenAIServer.
"""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import pytest
from test_adapter_openai import _one_call_arm, async_agent, definition, weather_script

import vitrine
from vitrine import Arm
from vitrine.adapters import ModelCallCache, instrument_openai
from vitrine.adapters._openai import _AiohttpPerLoop
from vitrine.testing import FakeOpenAIServer, FakeReply

AIOHTTP_PROVENANCE = "+openai-aiohttp"


def base_transport(client: openai.AsyncOpenAI) -> Any:
    """What really sends for ``client``: the transport under the adapter's wrapper."""
    return client._client._transport.inner


def evaluated(client: openai.AsyncOpenAI, arm: Arm | None = None) -> dict[str, dict[str, Any]]:
    """Each case's response as the run holds it, latencies left out (they differ by run)."""
    result = vitrine.evaluate(definition(), arm or Arm("agent", async_agent(client)), retries=0)
    (run,) = result.runs
    responses = {case_id: dict(response) for case_id, response in run.responses.items()}
    for response in responses.values():
        for key, timed in (("model_calls", "latency_ms"), ("tool_calls", "duration_ms")):
            response[key] = [{k: v for k, v in c.items() if k != timed} for c in response[key]]
        response.pop("latency_ms", None)
    return responses


def test_the_aiohttp_path_records_model_and_tool_calls_as_the_default_path_does():
    with FakeOpenAIServer(weather_script) as server:
        default = instrument_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t"))
        fast = instrument_openai(
            openai.AsyncOpenAI(base_url=server.base_url, api_key="t"), transport="aiohttp"
        )
        assert isinstance(base_transport(fast), _AiohttpPerLoop)
        assert isinstance(base_transport(default), httpx2.AsyncHTTPTransport)
        by_default, by_aiohttp = evaluated(default), evaluated(fast)
        assert server.request_count == 8

    for case_id, response in by_default.items():
        assert response["provenance"] == "offline-deterministic"
        assert by_aiohttp[case_id]["provenance"] == "offline-deterministic" + AIOHTTP_PROVENANCE
        assert len(response["model_calls"]) == 2 and len(response["tool_calls"]) == 1
        for key in ("answer_preview", "model_calls", "tool_calls", "usage"):
            assert by_aiohttp[case_id][key] == response[key], key


def test_copies_made_before_share_the_aiohttp_transport_and_twice_changes_nothing():
    with FakeOpenAIServer(weather_script) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="t")
        copy = client.with_options(timeout=5.0)
        instrument_openai(client, transport="aiohttp")
        transport = client._client._transport
        assert instrument_openai(client, transport="aiohttp") is client
        assert client._client._transport is transport
        assert copy._client._transport is transport
        responses = evaluated(copy)
    assert all(r["provenance"].endswith(AIOHTTP_PROVENANCE) for r in responses.values())


def test_a_client_instrumented_first_on_the_sdk_transport_can_switch_after():
    with FakeOpenAIServer(weather_script) as server:
        client = instrument_openai(openai.AsyncOpenAI(base_url=server.base_url, api_key="t"))
        wrapper = client._client._transport
        instrument_openai(client, transport="aiohttp")
        assert client._client._transport is wrapper
        assert isinstance(base_transport(client), _AiohttpPerLoop)
        responses = evaluated(client)
    assert all(r["provenance"].endswith(AIOHTTP_PROVENANCE) for r in responses.values())


def test_each_evaluate_gets_its_own_session_closed_with_its_loop():
    with FakeOpenAIServer(weather_script) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="t")
        instrument_openai(client, transport="aiohttp")
        per_loop = base_transport(client)
        sessions = []
        for _ in range(2):
            responses = evaluated(client)
            assert all(len(r["model_calls"]) == 2 for r in responses.values())
            ((transport, _),) = per_loop._by_loop.values()
            sessions.append(transport.client)
    # The first loop's session was let go of when the second loop opened its own; both were
    # closed as their loop shut down, so nothing is left to warn about at exit.
    assert len(set(map(id, sessions))) == 2
    assert all(session.closed for session in sessions)


def test_the_sdk_retries_on_the_aiohttp_path_are_counted():
    with FakeOpenAIServer([FakeReply.error(500)], fallback=FakeReply.text("fine")) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", max_retries=2)
        instrument_openai(client, transport="aiohttp")
        result = vitrine.evaluate(definition("paris"), _one_call_arm(client), retries=0)
        assert server.request_count == 2
    response = result.runs[0].responses["paris"]
    (call,) = response["model_calls"]
    assert call["sdk_retries"] == 1
    assert call["error"] is None
    assert response["answer_preview"] == "fine"
    assert response["provenance"].endswith(AIOHTTP_PROVENANCE)


def test_a_user_supplied_http_client_is_left_alone_with_a_warning():
    with FakeOpenAIServer(weather_script) as server:
        own = httpx2.AsyncClient(timeout=30.0)
        inner = own._transport
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", http_client=own)
        with pytest.warns(UserWarning, match="http_client"):
            instrument_openai(client, transport="aiohttp")
        assert client._client is own
        assert base_transport(client) is inner
        responses = evaluated(client)
    # Still recorded, and the provenance does not claim a transport that never ran.
    assert all(len(r["model_calls"]) == 2 for r in responses.values())
    assert all(r["provenance"] == "offline-deterministic" for r in responses.values())


def test_a_user_supplied_aiohttp_client_is_kept_and_marked():
    with FakeOpenAIServer(weather_script) as server:
        own = openai.DefaultAioHttpClient()
        inner = own._transport
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="t", http_client=own)
        instrument_openai(client, transport="aiohttp")
        assert client._client is own and base_transport(client) is inner
        responses = evaluated(client)
    assert all(r["provenance"].endswith(AIOHTTP_PROVENANCE) for r in responses.values())


def test_a_trial_answered_from_the_cache_does_not_claim_the_transport(tmp_path):
    cache = ModelCallCache(tmp_path / "cache")
    with FakeOpenAIServer(weather_script) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="t")
        instrument_openai(client, cache=cache, transport="aiohttp")
        evaluated(client)
        replayed = evaluated(client)
        assert server.request_count == 4
    assert all(r["provenance"] == "offline-deterministic+model-cache" for r in replayed.values())


def test_the_switch_refuses_a_sync_client_and_an_unknown_transport():
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="t")
    with pytest.raises(vitrine.errors.InvalidArgumentError, match="AsyncOpenAI"):
        instrument_openai(client, transport="aiohttp")  # type: ignore[call-overload]
    with pytest.raises(vitrine.errors.InvalidArgumentError, match="transport"):
        instrument_openai(client, transport="fast")  # type: ignore[arg-type]
    assert isinstance(client._client._transport, httpx2.HTTPTransport)
