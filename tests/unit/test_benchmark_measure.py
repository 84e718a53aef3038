"""benchmarks/_measure.py reports a command's own peak RSS, not the image of the process that
started it (which Linux carries into a child's ru_maxrss across exec)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

# A parent that holds 200 MB, then measures a bare interpreter and one that holds 100 MB.
_PARENT = """
import subprocess, sys
sys.path.insert(0, sys.argv[1])
from _measure import run_measured
held = bytearray(200 * 1024 * 1024)
for i in range(0, len(held), 4096):
    held[i] = 1
bare = run_measured([sys.executable, "-c", "pass"], stdout=subprocess.DEVNULL)
grown = run_measured(
    [sys.executable, "-c", "b = bytearray(100 * 2**20)\\nfor i in range(0, len(b), 4096): b[i] = 1"]
)
failed = run_measured([sys.executable, "-c", "raise SystemExit(3)"])
print(bare.peak_rss_mb, grown.peak_rss_mb, failed.returncode, bare.wall_s)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss semantics of Linux")
def test_peak_rss_is_the_commands_own_not_its_parents() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PARENT, str(_BENCHMARKS)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    bare, grown, code, wall = (float(x) for x in done.stdout.split())
    # A bare interpreter is about 9 MB; the parent's 200 MB must not show.
    assert bare < 40, bare
    assert 100 < grown < 160, grown
    assert code == 3
    assert 0 < wall < 30
