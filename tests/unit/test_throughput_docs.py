"""docs/throughput.md: its ```python block runs against a fake OpenAI server, on aiohttp."""

from __future__ import annotations

from docs_examples import run_page
from test_adapter_docs import agent_script

from vitrine.testing import FakeOpenAIServer


def test_the_throughput_page_runs_and_its_trials_are_marked(tmp_path, monkeypatch, capsys):
    with FakeOpenAIServer(agent_script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-docs")
        namespace = run_page("throughput.md", tmp_path)
        assert server.request_count == 20
    assert "offline-deterministic+openai-aiohttp 1" in capsys.readouterr().out
    runs = namespace["result"].runs
    assert all(r["provenance"].endswith("+openai-aiohttp") for r in runs[0].responses.values())
