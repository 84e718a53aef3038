"""The fake OpenAI-compatible server: each fault mode, request recording, concurrency."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from typing import Any

import pytest

from vitrine.testing import FakeOpenAIServer, FakeReply, FakeRequest, FakeToolCall

_BODY = {"model": "m-1", "messages": [{"role": "user", "content": "hi"}]}


def _post(server: FakeOpenAIServer, path: str = "/v1/chat/completions", body: Any = _BODY):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        connection.request(
            "POST", path, json.dumps(body), headers={"Content-Type": "application/json"}
        )
        response = connection.getresponse()
        raw = response.read()
        return response.status, dict(response.getheaders()), raw
    finally:
        connection.close()


def _message(raw: bytes) -> dict[str, Any]:
    return json.loads(raw)["choices"][0]["message"]


def test_text_reply_has_the_chat_completion_shape_and_usage():
    with FakeOpenAIServer(FakeReply.text("hello", prompt_tokens=7, completion_tokens=3)) as s:
        status, _, raw = _post(s)
    data = json.loads(raw)
    assert status == 200
    assert data["object"] == "chat.completion"
    assert data["model"] == "m-1"  # echoes the requested model
    assert _message(raw) == {"role": "assistant", "content": "hello"}
    assert data["choices"][0]["finish_reason"] == "stop"
    assert data["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


def test_tool_calls_are_sent_with_verbatim_argument_text_even_when_malformed():
    reply = FakeReply.tools(
        FakeToolCall("search", {"query": "tent"}), FakeToolCall("details", '{"sku": ', id="c-9")
    )
    with FakeOpenAIServer([reply]) as s:
        _, _, raw = _post(s)
    data = json.loads(raw)
    calls = _message(raw)["tool_calls"]
    assert data["choices"][0]["finish_reason"] == "tool_calls"
    assert [c["function"]["name"] for c in calls] == ["search", "details"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"query": "tent"}
    assert calls[1]["function"]["arguments"] == '{"sku": '
    assert calls[1]["id"] == "c-9"


def test_structured_reply_is_json_content():
    with FakeOpenAIServer([FakeReply.structured({"covered": True, "gaps": []})]) as s:
        _, _, raw = _post(s)
    assert json.loads(_message(raw)["content"]) == {"covered": True, "gaps": []}


def test_usage_can_be_left_out_or_extended_with_a_reported_cost():
    script = [
        FakeReply.text("a", prompt_tokens=None, completion_tokens=None),
        FakeReply.text("b", extra_usage={"cost": 0.25}),
    ]
    with FakeOpenAIServer(script) as s:
        first = json.loads(_post(s)[2])
        second = json.loads(_post(s)[2])
    assert "usage" not in first
    assert second["usage"]["cost"] == 0.25


def test_error_replies_carry_status_headers_and_the_openai_error_envelope():
    script = [FakeReply.error(429, "slow down canary-77", headers={"Retry-After": "2"})]
    with FakeOpenAIServer(script) as s:
        status, headers, raw = _post(s)
    assert status == 429
    assert headers["Retry-After"] == "2"
    assert json.loads(raw)["error"]["message"] == "slow down canary-77"


def test_a_queue_is_used_in_order_then_the_fallback_answers():
    script = [FakeReply.error(500), FakeReply.text("second")]
    with FakeOpenAIServer(script, fallback=FakeReply.text("fallback")) as s:
        statuses = [_post(s)[0] for _ in range(2)]
        assert s.pending_replies == 0
        third = _message(_post(s)[2])["content"]
        fourth = _message(_post(s)[2])["content"]
    assert statuses == [500, 200]
    assert third == fourth == "fallback"


def test_a_callable_script_sees_each_request():
    def script(request: FakeRequest) -> FakeReply:
        return FakeReply.text(f"#{request.index} for {request.model}")

    with FakeOpenAIServer(script) as s:
        _post(s)
        _, _, raw = _post(s)
    assert _message(raw)["content"] == "#1 for m-1"


def test_a_failing_script_answers_500_and_is_reported():
    def script(request: FakeRequest) -> FakeReply:
        raise RuntimeError("script bug")

    with FakeOpenAIServer(script) as s:
        status = _post(s)[0]
        assert s.script_errors == ["RuntimeError: script bug"]
    assert status == 500


def test_raw_bodies_are_sent_verbatim():
    with FakeOpenAIServer([FakeReply.raw(200, "not json at all")]) as s:
        status, _, raw = _post(s)
    assert status == 200
    assert raw == b"not json at all"


def test_a_dropped_connection_sends_no_response():
    with FakeOpenAIServer([FakeReply.dropped()]) as s:
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            _post(s)
        assert s.dropped_connections == 1
        assert s.request_count == 1


def test_latency_delays_the_reply():
    with FakeOpenAIServer(FakeReply.text("late", delay_s=0.2)) as s:
        started = time.perf_counter()
        _post(s)
        elapsed = time.perf_counter() - started
    assert elapsed >= 0.2


def test_slow_replies_are_served_concurrently():
    # 50 clients each waiting 300 ms must finish in far less than 50 x 300 ms.
    with FakeOpenAIServer(FakeReply.text("x", delay_s=0.3)) as s:
        threads = [threading.Thread(target=_post, args=(s,)) for _ in range(50)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        assert s.request_count == 50
        assert s.max_in_flight >= 40
    assert elapsed < 3.0


def test_requests_are_recorded_with_body_headers_and_azure_path_facts():
    with FakeOpenAIServer() as s:
        _post(s)
        _post(s, "/openai/deployments/shop-gpt/chat/completions?api-version=2024-10-21", {})
        _post(s, "/v1/models", {})
        recorded = s.requests
    openai_request, azure_request, other = recorded
    assert openai_request.body == _BODY
    assert openai_request.headers["content-type"] == "application/json"
    assert openai_request.deployment is None
    assert azure_request.deployment == "shop-gpt"
    assert azure_request.api_version == "2024-10-21"
    assert azure_request.model == "shop-gpt"
    assert not other.is_chat_completion


def test_unknown_paths_get_404_but_are_still_recorded():
    with FakeOpenAIServer() as s:
        status = _post(s, "/v1/embeddings", {})[0]
        assert s.request_count == 1
    assert status == 404


def test_keep_alive_serves_several_requests_on_one_connection():
    with FakeOpenAIServer() as s:
        connection = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5)
        for _ in range(3):
            connection.request("POST", "/v1/chat/completions", json.dumps(_BODY))
            response = connection.getresponse()
            assert response.status == 200
            response.read()
        connection.close()
        assert s.request_count == 3


def test_reset_forgets_requests_and_push_adds_replies():
    with FakeOpenAIServer() as s:
        _post(s)
        s.reset()
        s.push(FakeReply.text("pushed"))
        content = _message(_post(s)[2])["content"]
        assert s.request_count == 1
    assert content == "pushed"


def test_stop_releases_the_port_and_the_server_restarts_elsewhere():
    server = FakeOpenAIServer()
    with server:
        port = server.port
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url
    probe = socket.socket()
    try:
        probe.bind(("127.0.0.1", port))  # free again
    finally:
        probe.close()


def test_invalid_replies_are_refused_when_scripted():
    with pytest.raises(ValueError, match="delay_s"):
        FakeReply(delay_s=-1)
    with pytest.raises(ValueError, match="status"):
        FakeReply(status=42)
