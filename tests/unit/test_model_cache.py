"""ModelCallCache: a second run asks the server nothing, says so, and never serves a paid run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import openai
import pytest
from test_adapter_openai import CITIES, async_agent, definition, sync_agent, weather_script

import vitrine
from vitrine import Arm, Case, SubjectResponse
from vitrine.adapters import ModelCallCache, instrument_openai
from vitrine.adapters._cache import paid_plan_scope
from vitrine.errors import InvalidArgumentError, InvalidDataError, UsageError
from vitrine.testing import FakeOpenAIServer, FakeReply


def _entries(root: Path) -> list[Path]:
    return sorted(root.rglob("*.json"))


@pytest.fixture(autouse=True)
def _paid_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VITRINE_PROVIDER_COST", raising=False)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_second_run_makes_no_request_and_its_answers_are_marked_cached(kind, tmp_path):
    cache = ModelCallCache(tmp_path / "cache")
    with FakeOpenAIServer(weather_script) as server:

        def arm() -> Arm:
            if kind == "sync":
                client = openai.OpenAI(base_url=server.base_url, api_key="t")
                return Arm("agent", sync_agent(instrument_openai(client, cache=cache)))
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="t")
            return Arm("agent", async_agent(instrument_openai(client, cache=cache)))

        first = vitrine.evaluate(definition(), arm())
        asked = server.request_count
        assert asked == 4
        second = vitrine.evaluate(definition(), arm())
        assert server.request_count == asked  # zero requests the second time
    assert len(_entries(tmp_path / "cache")) == 4
    for case_id in CITIES:
        before, after = first.runs[0].responses[case_id], second.runs[0].responses[case_id]
        assert after["answer_preview"] == before["answer_preview"]
        assert after["tool_calls"][0]["result_summary"] == before["tool_calls"][0]["result_summary"]
        assert [c["cached"] for c in before["model_calls"]] == [False, False]
        assert [c["cached"] for c in after["model_calls"]] == [True, True]
        # No tokens were spent on a cached answer; the trial says where its answers came from.
        assert all(c["input_tokens"] is None for c in after["model_calls"])
        assert after["usage"] is None
        assert before["provenance"] == "offline-deterministic"
        assert after["provenance"] == "offline-deterministic+model-cache"


def test_a_streamed_answer_is_replayed_from_the_cache(tmp_path):
    cache = ModelCallCache(tmp_path)
    with FakeOpenAIServer(FakeReply.text("streamed words")) as server:
        client = instrument_openai(
            openai.OpenAI(base_url=server.base_url, api_key="t"), cache=cache
        )

        def agent(case: Case) -> SubjectResponse:
            stream = client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            return SubjectResponse(
                answer="".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            )

        first = vitrine.evaluate(definition("paris"), Arm("agent", agent))
        second = vitrine.evaluate(definition("paris"), Arm("agent", agent))
        assert server.request_count == 1
    assert second.runs[0].responses["paris"]["answer_preview"] == "streamed words"
    assert first.runs[0].responses["paris"]["answer_preview"] == "streamed words"
    (call,) = second.runs[0].responses["paris"]["model_calls"]
    assert call["cached"] is True
    assert call["finish_reason"] == "stop"


def test_errors_are_never_cached(tmp_path):
    cache = ModelCallCache(tmp_path)
    with FakeOpenAIServer([FakeReply.error(500)], fallback=FakeReply.text("ok")) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)
        client = instrument_openai(client, cache=cache)
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="m", messages=[])  # outside a trial: no cache

        def one(case: Case) -> SubjectResponse:
            try:
                client.chat.completions.create(model="m", messages=[])
            except openai.InternalServerError:
                return SubjectResponse(answer="failed")
            return SubjectResponse(answer="ok")

        server.push(FakeReply.error(500))
        failed = vitrine.evaluate(definition("paris"), Arm("one", one))
        assert _entries(tmp_path) == []
        answered = vitrine.evaluate(definition("paris"), Arm("one", one))
        assert server.request_count == 3  # the failure was asked again, not replayed
    assert failed.runs[0].responses["paris"]["answer_preview"] == "failed"
    assert answered.runs[0].responses["paris"]["answer_preview"] == "ok"
    assert len(_entries(tmp_path)) == 1


# -- keys ---------------------------------------------------------------------------------


def _key(body: dict[str, Any], headers: dict[str, str] | None = None, url: str = "") -> str:
    return ModelCallCache.key(
        "POST",
        url or "http://127.0.0.1:8080/v1/chat/completions",
        headers or {},
        json.dumps(body).encode(),
    )


def test_the_key_is_the_whole_request_and_only_the_headers_that_change_the_answer():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    key = _key(body)
    assert _key(dict(reversed(body.items()))) == key  # key order is not the request
    assert _key({**body, "temperature": 1}) != key
    assert _key({**body, "seed": 7}) != key
    assert _key({**body, "model": "n"}) != key
    assert _key({**body, "tools": []}) != key
    assert _key(body, url="http://127.0.0.1:8080/v1/responses") != key
    assert _key(body, url="http://127.0.0.1:9090/v1/chat/completions") != key
    transport = {"authorization": "Bearer sk-other", "x-stainless-retry-count": "1"}
    assert _key(body, transport) == key
    assert _key(body, {"OpenAI-Organization": "org-1"}) != key
    assert _key(body, {"openai-project": "p"}) != key


def test_a_crash_never_leaves_a_half_written_entry(tmp_path, monkeypatch):
    cache = ModelCallCache(tmp_path)
    key = _key({"model": "m"})

    def crash(*args: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    monkeypatch.setattr(Path, "replace", crash)
    with pytest.raises(OSError, match="disk gone"):
        cache.store(
            key, method="POST", url="http://h/v1/x", model="m", content_type="a", body=b"{}"
        )
    assert list(tmp_path.rglob("*")) == [tmp_path / key[:2]]  # no entry, no temporary file
    assert cache.lookup(key) is None


# -- the paid lane ----------------------------------------------------------------------------


def test_a_paid_service_is_refused_unless_allowed(tmp_path, monkeypatch):
    client = openai.OpenAI(base_url="https://api.openai.com/v1", api_key="t")
    with pytest.raises(UsageError, match=r"refuses a paid service.*allow_paid=True"):
        instrument_openai(client, cache=ModelCallCache(tmp_path))
    instrument_openai(client, cache=ModelCallCache(tmp_path, allow_paid=True))
    # A self-hosted service declared free is free; OpenAI's own host never is.
    monkeypatch.setenv("VITRINE_PROVIDER_COST", "free")
    own = openai.OpenAI(base_url="https://models.example.internal/v1", api_key="t")
    instrument_openai(own, cache=ModelCallCache(tmp_path))
    with pytest.raises(UsageError, match="paid service"):
        instrument_openai(
            openai.OpenAI(base_url="https://api.openai.com/v1", api_key="t"),
            cache=ModelCallCache(tmp_path),
        )


def test_a_paid_plan_is_refused_even_on_loopback_unless_allowed(tmp_path):
    with FakeOpenAIServer(FakeReply.text("live")) as server:

        def arm(cache: ModelCallCache) -> Arm:
            client = openai.OpenAI(base_url=server.base_url, api_key="t")
            client = instrument_openai(client, cache=cache)

            def one(case: Case) -> SubjectResponse:
                reply = client.chat.completions.create(model="m", messages=[])
                return SubjectResponse(answer=reply.choices[0].message.content)

            return Arm("one", one)

        # A client instrumented before the plan started is refused at its first request.
        early, permitted = (
            arm(ModelCallCache(tmp_path)),
            arm(ModelCallCache(tmp_path, allow_paid=True)),
        )
        with paid_plan_scope("live-comparison"):
            with pytest.raises(UsageError, match="paid plan 'live-comparison'"):
                arm(ModelCallCache(tmp_path))
            refused = vitrine.evaluate(definition("paris"), early, retries=0)
            allowed = vitrine.evaluate(definition("paris"), permitted)
        assert server.request_count == 1
    (error,) = refused.runs[0].subject_errors.values()
    assert "paid plan 'live-comparison'" in error
    assert allowed.runs[0].responses["paris"]["answer_preview"] == "live"


# -- damaged entries ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "damage",
    [b"{not json", b'{"format": "something-else"}', b"\x00\x01"],
    ids=["torn", "foreign", "binary"],
)
def test_a_damaged_entry_is_a_clear_error_naming_its_file(damage, tmp_path):
    cache = ModelCallCache(tmp_path)
    with FakeOpenAIServer(FakeReply.text("fresh")) as server:
        client = instrument_openai(
            openai.OpenAI(base_url=server.base_url, api_key="t"), cache=cache
        )

        def one(case: Case) -> SubjectResponse:
            reply = client.chat.completions.create(model="m", messages=[])
            return SubjectResponse(answer=reply.choices[0].message.content)

        vitrine.evaluate(definition("paris"), Arm("one", one))
        (entry,) = _entries(tmp_path)
        entry.write_bytes(damage)
        result = vitrine.evaluate(definition("paris"), Arm("one", one), retries=0)
        assert server.request_count == 1
    (error,) = result.runs[0].subject_errors.values()
    assert "InvalidDataError" in error
    assert entry.name in error
    assert "damaged" in error
    key = entry.stem
    with pytest.raises(InvalidDataError, match=entry.name):
        cache.lookup(key)


def test_an_entry_holding_another_requests_answer_is_refused(tmp_path):
    cache = ModelCallCache(tmp_path)
    one, other = _key({"model": "a"}), _key({"model": "b"})
    cache.store(one, method="POST", url="http://h/v1/x", model="a", content_type="a", body=b"{}")
    target = cache.entry_path(other)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(cache.entry_path(one).read_bytes())
    with pytest.raises(InvalidDataError, match="another request's answer"):
        cache.lookup(other)


def test_a_cache_path_must_be_a_directory(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidArgumentError, match="is a file"):
        ModelCallCache(tmp_path / "file")
    with pytest.raises(vitrine.errors.WrongTypeError, match="ModelCallCache"):
        instrument_openai(openai.OpenAI(base_url="http://127.0.0.1:1", api_key="t"), cache="x")  # type: ignore[arg-type]
