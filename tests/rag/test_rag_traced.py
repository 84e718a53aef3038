"""`vitrine rag eval` traced to a Langfuse stand-in on the loopback, over the real PostgreSQL:
one span per query under the command's session span, each metric's value as that query's score,
each metric's mean as the session's, and no score for a metric that did not apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tracing_support import (
    TRACING_VARIABLES,
    attributes,
    langfuse_variables,
    needs_otel,
    scores_by_span,
    start_receiver,
)

from vitrine.rag._command import main

pytestmark = needs_otel


@pytest.fixture
def langfuse(monkeypatch):
    receiver = start_receiver()
    for name in TRACING_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in langfuse_variables(receiver).items():
        monkeypatch.setenv(name, value)
    yield receiver
    receiver.server.shutdown()


def test_eval_sends_a_span_per_query_and_each_metric_as_its_score(
    vitrine_home: Path, database, tmp_path, langfuse
):
    pytest.importorskip("sentence_transformers")
    out = tmp_path / "r.json"
    main(["eval", "--items", "calibration", "--limit", "3", "--json-report", str(out)])
    report = json.loads(out.read_text())

    spans = {span.name: span for _, span in langfuse.spans()}
    session = spans["session rag eval"]
    scores = scores_by_span(langfuse)
    for item in report["items"]:
        query = spans[f"query {item['id']}"]
        assert query.parent_span_id == session.span_id
        assert attributes(query.attributes)["vitrine.case"] == item["id"]
        sent = scores[query.name]
        assert set(sent) == set(item["scores"])
        for name, score in item["scores"].items():
            body = sent[name]
            if score["state"] == "measured":
                assert (body["dataType"], body["value"]) == ("NUMERIC", score["value"])
            else:  # absence is not a zero: the state, as a category
                assert (body["dataType"], body["value"]) == ("CATEGORICAL", score["state"])
    states = {s["state"] for i in report["items"] for s in i["scores"].values()}
    assert {"measured", "not_applicable"} <= states

    means = scores["session rag eval"]
    assert set(means) == {f"{name} mean" for name in report["metrics"]}
    for name, metric in report["metrics"].items():
        expected = metric["mean"] if metric["state"] == "measured" else metric["state"]
        assert means[f"{name} mean"]["value"] == expected
