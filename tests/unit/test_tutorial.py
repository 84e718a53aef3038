"""The tutorial's airline example runs end to end on public names only."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import vitrine

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "airline"
TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "your-agent.md"
# `import vitrine.x`, `from vitrine.x import ...`, or `vitrine.x.y` reached through the root
PRIVATE = re.compile(r"^\s*(?:from|import)\s+vitrine\.\w", re.MULTILINE)


def _sources() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(EXAMPLE.glob("*.py"))}


def test_the_example_imports_only_the_package_root():
    sources = _sources()
    assert set(sources) == {"airline.py", "airline_evals.py"}
    for name, text in sources.items():
        assert not PRIVATE.search(text), f"{name} imports a vitrine submodule"
        used = set(re.findall(r"\bvitrine\.(\w+)", text))
        assert used <= set(vitrine.__all__), (name, used - set(vitrine.__all__))


def test_the_tutorial_code_blocks_import_only_the_package_root():
    blocks = re.findall(r"```python\n(.*?)```", TUTORIAL.read_text(), re.DOTALL)
    assert blocks
    for block in blocks:
        assert not PRIVATE.search(block), block


def test_the_evaluation_code_stays_under_a_hundred_lines():
    code = [
        line
        for line in _sources()["airline_evals.py"].splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    assert len(code) <= 100


def test_the_example_gates_compares_controls_and_kills_its_mutant(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(EXAMPLE), "NO_COLOR": "1"}
    env.pop("VITRINE_HOME", None)
    done = subprocess.run(
        [sys.executable, "airline_evals.py", str(tmp_path)],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert "all 3 mandatory gates measured and passed" in out
    assert "controls caught: 1 of 1" in out
    assert "mutants killed: 1 of 1" in out

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
