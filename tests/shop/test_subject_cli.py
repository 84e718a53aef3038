"""`python -m vitrine_shop`: selectors 1-6, offline by default, live only when asked and paid."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vitrine_shop.subject_cli import SELECTORS, main


def run(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_six_selectors_are_the_packaged_scenarios(capsys):
    from vitrine_shop.scenarios import load_scenarios

    assert set(SELECTORS) == set(load_scenarios())
    code, out, _ = run(["--list"], capsys)
    assert code == 0
    for number, scenario_id in enumerate(SELECTORS, start=1):
        assert f"{number}  {scenario_id}" in out


def test_a_selector_answers_offline_with_both_architectures(capsys):
    code, out, _ = run(["4", "--plain"], capsys)
    assert code == 0
    assert "Customer luca" in out
    assert "Architecture one: tool-using agent" in out and "(no tool calls)" in out
    assert "Architecture two: workflow" in out


def test_the_old_demo_name_and_its_persona_flag_still_work(capsys):
    from vitrine_shop.demo import main as demo_main

    assert demo_main(["--persona", "nadia", "--plain", "--architecture", "agent"]) == 0
    out = capsys.readouterr().out
    assert "Customer nadia" in out and "get_user_profile" in out
    assert "Architecture two" not in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["7"], "choose 1-6"),
        (["6"], "choose one with --persona"),
        (["--persona", "nobody"], "no packaged scenario has customer"),
        (["--provider", "openai"], "only apply with --live"),
        (["--confirm-paid"], "only apply with --live"),
        (["--live", "--zero-model", "--provider", "local"], "cannot be --live"),
    ],
)
def test_refusals_exit_2_with_a_sentence(argv, needle, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2
    assert needle in err
    assert out == ""


def test_a_paid_live_provider_needs_confirmation_and_readiness(monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("VITRINE_PROVIDER_COST", raising=False)
    code, _, err = run(["--live", "--provider", "openai"], capsys)
    assert code == 2 and "add --confirm-paid" in err
    code, out, err = run(["--live", "--provider", "openai", "--confirm-paid"], capsys)
    assert code == 4 and "not ready" in err and "OPENAI_API_KEY" in err
    assert out == ""  # nothing answered, nothing substituted offline


def test_the_subject_cli_and_the_plans_default_to_the_same_provider(monkeypatch, capsys):
    from vitrine import PlanRequest
    from vitrine_shop.evals.live.session import _read_config
    from vitrine_shop.redteam.eval06 import _config

    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    code, _, err = run(["--live"], capsys)
    # No --provider: the CLI names the service it would call, the one the plans would call.
    assert code == 2 and "--live with openai calls a paid model service" in err
    request = PlanRequest(plan="eval01-agent")
    assert _read_config(request, {"OPENAI_API_KEY": "k"}).provider == "openai"
    assert _config(request, {"OPENAI_API_KEY": "k"}).provider == "openai"
    code, out, _ = run(["--help"], capsys)
    assert "azure when AZURE_OPENAI_ENDPOINT is set, else openai" in " ".join(out.split())


@pytest.mark.parametrize("flag", ["--real-vectors", "--rebuild-embeddings"])
def test_live_embedding_flags_change_the_cost_lane_and_need_confirmation(flag, capsys):
    from vitrine_shop.embeddings import SHIPPED_VECTORS_PATH

    before = SHIPPED_VECTORS_PATH.stat().st_mtime_ns
    code, out, err = run(["1", flag], capsys)
    assert code == 2 and f"with {flag} the catalogue is embedded" in err
    assert "add --confirm-paid" in err and out == ""
    assert SHIPPED_VECTORS_PATH.stat().st_mtime_ns == before  # nothing rewritten


def test_the_one_cost_rule():
    from vitrine._cost import confirmation_refusal

    assert confirmation_refusal("x calls a paid service", paid=True, confirmed=False) == (
        "x calls a paid service; add --confirm-paid"
    )
    assert confirmation_refusal("x", paid=True, confirmed=True) is None
    assert confirmation_refusal("x", paid=False, confirmed=False) is None


def test_the_module_runs_as_a_program():
    result = subprocess.run(
        [sys.executable, "-m", "vitrine_shop", "--list"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0
    assert "nadia-cross-category" in result.stdout
