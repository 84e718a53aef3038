"""A newcomer's first result: fresh clone to a finished ``make run``, then cold and warm runs.

Usage: ``python benchmarks/first_result.py [--repeats N] [--keep]``

1. Clones the committed HEAD of this repository into a temporary folder.
2. Runs ``make run`` there with pip's cache off (``PIP_NO_CACHE_DIR=1``), as on a fresh
   machine: venv creation, the core install and the first ``vitrine --all``. Prints its time.
3. Runs ``vitrine --all`` again with an empty store and embedding cache (cold) and with both
   kept (warm), ``--repeats`` times each, printing wall time and peak RSS of each run, and
   whether the model (torch) was loaded.

Targets (this project's, on a 2-core machine): ``make run`` within 120 s, cold ``vitrine
--all`` within 2 s and 150 MB, warm within 1 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, int]:
    """Wall seconds, this run's peak RSS in MB (GNU time), and the exit code."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss_file:
        wrapped = ["/usr/bin/time", "-f", "%M", "-o", rss_file.name, *cmd]
        started = time.perf_counter()
        result = subprocess.run(
            wrapped, cwd=cwd, env=env, capture_output=True, text=True, check=False
        )
        wall = time.perf_counter() - started
        lines = rss_file.read().split()
    if result.returncode not in (0, 1):
        sys.stderr.write(result.stdout[-2000:] + result.stderr[-2000:])
    peak_kb = int(lines[-1]) if lines and lines[-1].isdigit() else 0
    return wall, peak_kb // 1024, result.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the temporary clone")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vitrine-first-result-"))
    try:
        clone = work / "vitrine"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        env = {**os.environ, "PIP_NO_CACHE_DIR": "1"}
        env.pop("VITRINE_HOME", None)
        env.pop("VIRTUAL_ENV", None)
        wall, _, code = _timed(["make", "run"], clone, env)
        print(f"fresh clone -> finished `make run` (pip cache off): {wall:.1f} s, exit {code}")
        vitrine = str(clone / ".venv" / "bin" / "vitrine")
        torch = subprocess.run(
            [str(clone / ".venv" / "bin" / "python"), "-c", "import torch"],
            capture_output=True,
            check=False,
        )
        print(f"torch installed by `make run`: {'yes' if torch.returncode == 0 else 'no'}")
        cold, warm = [], []
        for _ in range(args.repeats):
            shutil.rmtree(clone / ".vitrine", ignore_errors=True)
            cold.append(_timed([vitrine, "--all"], clone, env))
            warm.append(_timed([vitrine, "--all"], clone, env))
        for name, runs in (("cold", cold), ("warm", warm)):
            walls = [w for w, _, _ in runs]
            print(
                f"{name} `vitrine --all`: median {statistics.median(walls):.2f} s "
                f"(min {min(walls):.2f}, max {max(walls):.2f}), "
                f"peak RSS {max(r for _, r, _ in runs)} MB, "
                f"exit codes {sorted({c for _, _, c in runs})}"
            )
        return 0
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
