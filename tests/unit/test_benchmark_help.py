"""Every script in benchmarks/ answers --help with its usage and exits 0, without running."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest

_BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# Helper modules start with an underscore; every other file is a script a user runs.
_SCRIPTS = sorted(path.name for path in _BENCHMARKS.glob("[!_]*.py"))
_LIMIT_S = 20.0


def _help(name: str) -> tuple[int | None, str]:
    try:
        done = subprocess.run(
            [sys.executable, str(_BENCHMARKS / name), "--help"],
            capture_output=True,
            text=True,
            timeout=_LIMIT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, ""
    return done.returncode, done.stdout + done.stderr


@cache
def _answers() -> dict[str, tuple[int | None, str]]:
    # A few at a time: the scripts import vitrine (some the shop), and serially that adds up.
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(_SCRIPTS, pool.map(_help, _SCRIPTS), strict=True))


def test_the_scripts_are_found() -> None:
    assert {"board.py", "peers.py", "tracing_overhead.py"} <= set(_SCRIPTS)


@pytest.mark.parametrize("name", _SCRIPTS)
def test_help_prints_usage_and_exits_0(name: str) -> None:
    code, output = _answers()[name]
    assert code is not None, f"{name} --help still running after {_LIMIT_S:.0f} s: it runs"
    assert code == 0, output[-2000:]
    assert output.startswith("usage:"), output[:500]
