"""The offline suite traced to a real Arize Phoenix, and its spans read back through its API."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from typing import Any

import pytest
from tracing_support import needs_otel

from vitrine._cli import main

pytestmark = needs_otel

# A whole offline suite sends thousands of spans; Phoenix ingests them in its own time.
_ARRIVAL_S = 180.0


def _spans(phoenix: str, project: str = "default") -> list[dict[str, Any]]:
    """Every span of ``project``, through Phoenix's REST API, page by page."""
    spans: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
        url = f"{phoenix}/v1/projects/{project}/spans?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(url, timeout=10) as response:
            page = json.load(response)
        spans.extend(page["data"])
        cursor = page.get("next_cursor")
        if not cursor:
            return spans


@pytest.fixture(scope="module")
def phoenix_spans(phoenix: str, tmp_path_factory: pytest.TempPathFactory):
    store = tmp_path_factory.mktemp("store")
    code = main(["--all", "--output", str(store), "--trace-to", phoenix])
    assert code == 0
    run_ids = {
        json.loads(path.read_text())["run"]["trace_ids"][0]
        for path in store.rglob("manifest.json")
        if "runs" in path.parts
    }
    # Phoenix ingests asynchronously: wait until every run's trace has its trial spans and
    # every span's parent has arrived.
    deadline = time.monotonic() + _ARRIVAL_S
    while True:
        spans = [s for s in _spans(phoenix) if s["context"]["trace_id"] in run_ids]
        traces = {s["context"]["trace_id"] for s in spans if s["name"].startswith("trial ")}
        ids = {s["context"]["span_id"] for s in spans}
        orphans = [s for s in spans if s["parent_id"] and s["parent_id"] not in ids]
        if (traces == run_ids and not orphans) or time.monotonic() > deadline:
            return spans, run_ids
        time.sleep(0.5)


def test_phoenix_holds_a_trial_span_for_every_sealed_run(phoenix_spans):
    spans, run_ids = phoenix_spans
    traced = {s["context"]["trace_id"] for s in spans if s["name"].startswith("trial ")}
    assert traced == run_ids
    trial = next(s for s in spans if s["name"].startswith("trial "))
    attrs = trial["attributes"]
    assert trial["name"] == f"trial {attrs['vitrine.case']}"
    assert {"vitrine.run.id", "vitrine.arm", "vitrine.repetition", "vitrine.measurement_state"} <= (
        set(attrs)
    )
    assert any(e["name"] == "gen_ai.evaluation.result" for e in trial["events"])


def test_phoenix_reads_the_model_calls_as_genai_chat_spans(phoenix_spans):
    spans, _ = phoenix_spans
    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert chats
    attrs = chats[0]["attributes"]
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"].startswith("scripted-shop-1")
    assert attrs["gen_ai.provider.name"] == "vitrine.scripted"
    assert "gen_ai.usage.input_tokens" in attrs
    # Phoenix recognised the GenAI conventions: it files the span as an LLM call.
    assert chats[0]["span_kind"] == "LLM"


def test_phoenix_reads_the_tool_calls_as_genai_tool_spans_under_the_agent(phoenix_spans):
    spans, _ = phoenix_spans
    by_id = {s["context"]["span_id"]: s for s in spans}
    tools = [s for s in spans if s["name"].startswith("execute_tool ")]
    assert tools
    assert all(s["parent_id"] in by_id for s in tools)
    tool = next(s for s in tools if by_id[s["parent_id"]]["name"].startswith("invoke_agent "))
    assert tool["attributes"]["gen_ai.tool.name"] == tool["name"].removeprefix("execute_tool ")
    assert tool["attributes"]["gen_ai.tool.call.id"]
    assert tool["span_kind"] == "TOOL"
    agent = by_id[tool["parent_id"]]
    assert agent["name"] == "invoke_agent shop-agent"
    assert by_id[agent["parent_id"]]["name"].startswith("trial ")
