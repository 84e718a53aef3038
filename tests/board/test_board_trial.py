"""The trial page as a transcript: the customer's words, each tool call with its arguments and
result as tables, stage attempts, model calls, the whole stored answer, and every check with
its state, message and evidence as fields (no JSON, no Python repr)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trial_fixtures
from trial_fixtures import LAST_LINE, build_trial_store

from vitrine._board.app import Board
from vitrine._board.fields import field_table, literal_value


@pytest.fixture(scope="module")
def trial_html(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("trial-store")
    run_id = build_trial_store(root)
    reply = Board(root, persist_cache=False).get(f"/trial/{run_id}/hut", {})
    assert reply.status == 200
    return reply.body.decode()


def test_the_transcript_shows_input_tools_stages_model_calls_and_the_answer(trial_html: str):
    assert "hut-to-hut hiking kit" in trial_html  # the customer's words, kept by the store
    assert "search_products" in trial_html
    assert "<th scope='row'>query</th><td>dry bag</td>" in trial_html  # arguments as a table
    assert "<th scope='col'>sku</th>" in trial_html  # the result's records as a table
    assert "GLX-2104" in trial_html
    assert 'id="stages"' in trial_html and ">recovered<" in trial_html
    assert 'id="model-calls"' in trial_html and "gpt-test" in trial_html and "812 ms" in trial_html
    assert LAST_LINE in trial_html  # the whole stored answer, its tail folded
    assert '<details class="long">' in trial_html


def test_evidence_is_fields_never_a_repr(trial_html: str):
    assert "{&#39;met&#39;" not in trial_html and "{'met'" not in trial_html
    assert "<th scope='row'>met</th><td>yes</td>" in trial_html
    assert "✗ failed" in trial_html  # the long answer fails the length rule, shown as failed


def test_field_table_reads_literals_and_escapes_everything():
    assert literal_value("{'met': True}") == {"met": True}
    assert literal_value('["a", 1]') == ["a", 1]
    assert literal_value("{not a literal") == "{not a literal"
    assert literal_value("__import__('os')") == "__import__('os')"  # nothing is evaluated
    html = field_table({"<b>": "<script>x</script>", "n": None, "ok": False})
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert '<span class="muted">none</span>' in html  # absence shown as absence
    assert "<td>no</td>" in html


def test_the_store_keeps_each_cases_input_bounded_beside_its_response(tmp_path: Path):
    import vitrine
    from vitrine import Arm, BenchmarkDefinition, Case, SubjectResponse

    definition = BenchmarkDefinition(
        "inputs",
        "1.0.0",
        cases=[Case("text", "x" * 5000), Case("data", {"query": "tent", "budget": 300})],
        checks=trial_fixtures.definition().checks,
    )

    def echo(case: Case) -> SubjectResponse:
        return SubjectResponse(answer="ok")

    result = vitrine.evaluate(definition, [Arm("echo", echo)], store=tmp_path)
    responses = result.runs[0].responses
    assert responses["data"]["case_input"] == '{"budget": 300, "query": "tent"}'
    kept = responses["text"]["case_input"]
    assert kept.startswith("x" * 100) and len(kept) < 2100  # bounded, and says so
