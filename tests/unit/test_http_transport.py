"""PooledJsonClient against a real HTTP server: pooling, event streams, typed failures."""

from __future__ import annotations

import asyncio
import gc
import json
import warnings

import pytest

from vitrine._cli import missing_extra_hint
from vitrine.providers._base import ProviderError, ProviderFailure
from vitrine.providers._http_transport import (
    PooledJsonClient,
    environment_proxy,
    retry_after_s,
    status_error,
)
from vitrine.providers._retry import RetryAfterError
from vitrine.testing import FakeOpenAIServer, FakeReply

_BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _client(server: FakeOpenAIServer, **options) -> PooledJsonClient:
    options.setdefault("timeout_s", 5.0)
    return PooledJsonClient(
        f"{server.base_url}/chat/completions", {"Authorization": "Bearer k-1"}, **options
    )


def _events_reply(text: str) -> FakeReply:
    return FakeReply.raw(200, text, headers={"Content-Type": "text/event-stream"})


async def _collect(client: PooledJsonClient) -> list[object]:
    return [data async for data in client.stream(_BODY)]


async def test_a_post_sends_the_json_body_and_headers_and_returns_the_decoded_reply():
    with FakeOpenAIServer(FakeReply.text("hello")) as s:
        reply = await _client(s).post(_BODY)
        request = s.requests[0]
    assert reply["choices"][0]["message"]["content"] == "hello"
    assert request.body == _BODY
    assert request.headers["authorization"] == "Bearer k-1"
    assert request.headers["content-type"] == "application/json"


async def test_concurrent_calls_never_open_more_connections_than_the_pool_allows():
    with FakeOpenAIServer(FakeReply.text("slow", delay_s=0.1)) as s:
        client = _client(s, max_connections=2)
        await asyncio.gather(*(client.post(_BODY) for _ in range(6)))
        assert s.request_count == 6
        assert s.max_in_flight == 2


async def test_events_are_split_on_blank_lines_with_multi_line_data_comments_and_crlf():
    first = {"choices": [{"delta": {"content": "a"}}]}
    second = {"choices": [{"delta": {"content": "b"}}]}
    text = (
        ": keep-alive comment\r\n\r\n"
        f"event: chunk\r\ndata: {json.dumps(first)}\r\n\r\n"
        # One event's data may span several data lines, joined with newlines.
        'data: {"choices":\ndata: [{"delta": {"content": "b"}}]}\n\n'
        "data: [DONE]\n\n"
        f"data: {json.dumps({'after': 'done'})}\n\n"
    )
    with FakeOpenAIServer(_events_reply(text)) as s:
        events = await _collect(_client(s))
        assert s.requests[0].headers["accept"] == "text/event-stream"
    assert events == [first, second]


async def test_a_last_event_without_its_blank_line_is_still_delivered():
    with FakeOpenAIServer(_events_reply('data: {"n": 1}\n\ndata: {"n": 2}')) as s:
        assert await _collect(_client(s)) == [{"n": 1}, {"n": 2}]


async def test_an_error_event_mid_stream_is_a_bad_response_without_the_providers_words():
    text = 'data: {"n": 1}\n\ndata: {"error": {"message": "SECRET-INTERNAL overloaded"}}\n\n'
    with FakeOpenAIServer(_events_reply(text)) as s, pytest.raises(ProviderError) as caught:
        await _collect(_client(s))
    assert caught.value.failure is ProviderFailure.BAD_RESPONSE
    assert "SECRET-INTERNAL" not in str(caught.value)
    assert caught.value.__context__ is None


async def test_an_event_that_is_not_json_is_a_malformed_body():
    reply = _events_reply("data: {not json\n\n")
    with FakeOpenAIServer(reply) as s, pytest.raises(ProviderError) as caught:
        await _collect(_client(s))
    assert caught.value.failure is ProviderFailure.BAD_RESPONSE
    assert "malformed response body" in str(caught.value)


async def test_an_http_error_on_a_stream_is_typed_like_one_on_a_post():
    reply = FakeReply.error(429, "slow down", code="rate_limit_exceeded")
    with FakeOpenAIServer(reply) as s, pytest.raises(ProviderError) as caught:
        await _collect(_client(s))
    assert caught.value.failure is ProviderFailure.RATE_LIMITED
    assert str(caught.value).endswith("HTTP 429 (Too Many Requests, code rate_limit_exceeded)")


def test_a_status_error_keeps_the_allow_listed_code_wherever_the_server_puts_it():
    enveloped = status_error(400, b'{"error": {"code": "context_length_exceeded"}}', {})
    top_level = status_error(404, b'{"code": "model_not_found", "message": "no"}', {})
    free_text = status_error(400, b'{"error": {"code": "user 42 at 10.0.0.7 is blocked"}}', {})
    not_json = status_error(502, b"<html>Bad gateway at internal-host</html>", {})
    assert top_level.safe_detail == "HTTP 404 (Not Found, code model_not_found)"
    assert enveloped.safe_detail == "HTTP 400 (Bad Request, code context_length_exceeded)"
    assert free_text.safe_detail == "HTTP 400 (Bad Request)"
    assert not_json.safe_detail == "HTTP 502 (Bad Gateway)"
    assert not_json.failure is ProviderFailure.SERVER_ERROR


def test_a_non_standard_status_is_named_as_such():
    error = status_error(599, b"", {})
    assert error.safe_detail == "HTTP 599 (non-standard status)"
    assert error.failure is ProviderFailure.SERVER_ERROR


def test_retry_advice_prefers_milliseconds_and_ignores_dates_and_nonsense():
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "30"}) == pytest.approx(0.25)
    assert retry_after_s({"retry-after": "2"}) == 2.0
    assert retry_after_s({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}) is None
    assert retry_after_s({"retry-after": "-1"}) is None
    assert retry_after_s({"retry-after": "nan"}) is None
    assert retry_after_s(None) is None


def test_retry_advice_rides_only_on_a_retryable_failure():
    throttled = status_error(429, b"", {"retry-after": "3"})
    refused = status_error(400, b"", {"retry-after": "3"})
    assert isinstance(throttled, RetryAfterError)
    assert throttled.retry_after_s == 3.0
    assert not isinstance(refused, RetryAfterError)


def test_one_client_serves_successive_event_loops_and_leaves_no_unclosed_session():
    with FakeOpenAIServer(FakeReply.text("again")) as s:
        client = _client(s)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                reply = asyncio.run(client.post(_BODY))
                assert reply["choices"][0]["message"]["content"] == "again"
            del client
            gc.collect()
    unclosed = [w for w in caught if "Unclosed" in str(w.message)]
    assert unclosed == []


async def test_aclose_closes_the_loops_connections_and_a_later_call_opens_new_ones():
    with FakeOpenAIServer(FakeReply.text("ok")) as s:
        client = _client(s)
        await client.post(_BODY)
        await client.aclose()
        await client.aclose()  # closing twice is harmless
        assert (await client.post(_BODY))["choices"][0]["message"]["content"] == "ok"
        await client.aclose()


def test_the_repr_shows_neither_the_url_nor_the_key():
    client = PooledJsonClient(
        "http://canary-host-77.invalid/v1/chat/completions",
        {"Authorization": "Bearer sk-canary-1"},
        timeout_s=1.0,
    )
    assert "canary" not in repr(client)


def test_bad_pool_settings_are_refused():
    with pytest.raises(ValueError, match="timeout_s"):
        PooledJsonClient("http://127.0.0.1:1/", {}, timeout_s=0)
    with pytest.raises(ValueError, match="max_connections"):
        PooledJsonClient("http://127.0.0.1:1/", {}, timeout_s=1.0, max_connections=0)


def test_a_missing_http_client_names_the_live_extra():
    hint = missing_extra_hint(ModuleNotFoundError("No module named 'aiohttp'", name="aiohttp"))
    assert hint is not None
    assert "'live' extra" in hint


async def test_a_proxy_named_in_the_environment_carries_the_requests(monkeypatch):
    with FakeOpenAIServer(FakeReply.text("via proxy")) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.endpoint)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        client = PooledJsonClient("http://upstream.invalid/v1/chat/completions", {}, timeout_s=5.0)
        reply = await client.post(_BODY)
        assert proxy.requests[0].path == "/v1/chat/completions"
    assert reply["choices"][0]["message"]["content"] == "via proxy"


def test_no_proxy_exempts_a_host_and_no_setting_means_no_proxy(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert environment_proxy("https://api.example.com/v1") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    assert environment_proxy("https://api.example.com/v1") == "http://proxy.example:3128"
    assert environment_proxy("https://internal.example/v1") is None
    assert environment_proxy("http://api.example.com/v1") is None  # only HTTPS is proxied
