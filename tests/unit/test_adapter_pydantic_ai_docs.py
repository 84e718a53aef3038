"""The pydantic-ai page: every ```python block runs, in order, against the bank's scripted model.

The page builds ``AsyncOpenAI()`` as a reader would, so the fake server is reached through the
environment the SDK reads (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``). The script is the bank
example's own, with a fault rate the instrumented client has to retry, so the page's claims
about what is recorded, compared and retried are checked against what it printed.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("openai")

from docs_examples import run_page

from vitrine.testing import FakeOpenAIServer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _bank_model(fault_rate: float) -> Any:
    """The bank example's scripted model, from the examples folder as a package."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        scripted = importlib.import_module("bank_agents.scripted_model")
    finally:
        sys.path.remove(str(EXAMPLES))
    return scripted.BankModel(fault_rate=fault_rate, seed=5)


def test_every_python_block_of_the_pydantic_ai_page_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _bank_model(fault_rate=0.015)
    with FakeOpenAIServer(model) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-docs")
        namespace = run_page("adapter-pydantic-ai.md", tmp_path)
        assert server.script_errors == []
    printed = capsys.readouterr().out
    result: Any = namespace["result"]
    assert result.exit_code == 0
    # What the page says the comparison shows, and what the hasty arm's refused transfer holds.
    for line in (
        "looks-before-it-moves 0 8 0.0078",
        "admits-a-refusal 0 4 0.125",
        "Done: 2500 moved from ACC-1.",
        "transfer {'amount': 2500.0, 'source': 'ACC-1', 'target': 'ACC-9'} refused "
        "refused: 2500.00 is above the 1000 limit without approval",
        "gpt-4o-mini tool_calls 10 0",
        "gpt-4o-mini stop 10 0",
        "[('get_balance', 'ok'), ('transfer', 'ok')]",
        "[('get_balance', 'ok'), ('transfer', 'refused')]",
    ):
        assert line in printed, line
    # The faults of the evaluation were retried inside the client and counted, none by a trial;
    # the approval block's requests, outside any trial, may have had faults of their own.
    runs = result.runs.runs
    assert all(run.retried_trials == 0 and run.unmeasured_trials == 0 for run in runs)
    calls = [c for run in runs for r in run.responses.values() for c in r["model_calls"]]
    assert 1 <= sum(call["sdk_retries"] for call in calls) <= model.faults
