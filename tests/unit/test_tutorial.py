"""The first-evaluation page and its airline example: public names only, quoted, and true."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "airline"
TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "first-evaluation.md"


def _sources() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(EXAMPLE.glob("*.py"))}


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


def _vitrine_names(source: str) -> set[str]:
    """Every vitrine name a file uses: imported from a public module, or read off `vitrine.`."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "vitrine":
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "vitrine"
        ):
            names.add(f"vitrine.{node.attr}")
    return names


def test_the_example_uses_only_exported_names_of_public_modules():
    sources = _sources()
    assert set(sources) == {"airline.py", "airline_evals.py"}
    for name, text in sources.items():
        for dotted in _vitrine_names(text):
            module, _, attribute = dotted.rpartition(".")
            assert not any(part.startswith("_") for part in module.split(".")), (name, dotted)
            assert attribute in importlib.import_module(module).__all__, (name, dotted)


def test_every_code_block_of_the_tutorial_is_quoted_from_the_example():
    sources = _sources().values()
    blocks = _python_blocks(TUTORIAL.read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    for block in blocks:
        assert any(block in source for source in sources), block


def test_the_tutorial_states_the_example_s_size_and_vitrine_names_as_they_are():
    evals = _sources()["airline_evals.py"]
    page = " ".join(TUTORIAL.read_text(encoding="utf-8").split())
    lines = sum(1 for line in evals.splitlines() if line.strip())
    names = len(_vitrine_names(evals))
    assert f"{lines} non-blank lines that use {names} names from vitrine" in page


def test_the_evaluation_code_stays_under_a_hundred_lines():
    code = [
        line
        for line in _sources()["airline_evals.py"].splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    assert len(code) <= 100


def _run_in_the_example(*args: str) -> str:
    """Run Python in the example's folder, importable as the tutorial says (PYTHONPATH=.)."""
    env = {**os.environ, "PYTHONPATH": ".", "NO_COLOR": "1"}
    env.pop("VITRINE_HOME", None)
    done = subprocess.run(
        [sys.executable, *args],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_example_gates_compares_controls_and_kills_its_mutant(tmp_path):
    stdout = _run_in_the_example("airline_evals.py", str(tmp_path))
    out = " ".join(stdout.split())
    assert "all 3 mandatory gates measured and passed" in out
    assert "1/1 registered controls caught" in out
    assert "1/1 mutants killed" in out

    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    assert report["exit_code"] == 0
    assert {row["name"] for row in report["gates"]} == {
        "states-the-real-status[careful]",
        "looks-up-the-booking[careful]",
        "keeps-basic-fares[careful]",
    }
    (section,) = report["benchmarks"]
    losses = {c["check_key"]: c["losses"] for c in section["comparisons"]}
    assert losses["looks-up-the-booking"] == 12  # the hasty agent never looks anything up
    assert (tmp_path / "reports" / "report.html").is_file()
    assert len(list((tmp_path / "store" / "runs").iterdir())) == 4


def test_the_command_line_runs_the_same_evaluation(tmp_path):
    stdout = _run_in_the_example(
        "-m", "vitrine", "--suite", "airline_evals:EVALUATION", "--all", "--output", str(tmp_path)
    )
    assert "1/1 registered controls caught" in stdout
    assert (tmp_path / "reports" / "airline" / "report.json").is_file()
