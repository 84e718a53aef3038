"""A newcomer's first result: fresh clone to a finished ``make run``, then cold and warm runs.

Usage: ``python benchmarks/first_result.py [--repeats N] [--keep] [--here] [--imports]``

1. Clones the committed HEAD of this repository into a temporary folder.
2. Runs ``make run`` there with pip's cache off (``PIP_NO_CACHE_DIR=1``), as on a fresh
   machine: venv creation, the core install and the first ``vitrine --all``. Prints its time.
3. Runs ``vitrine --all`` again with an empty store and caches (cold) and with them kept
   (warm), ``--repeats`` times each, printing wall time and peak RSS of each run, and whether
   the model (torch) was loaded. The embedding and compiled-template caches live under the
   store folder (``VITRINE_CACHE_DIR``), so a cold run really starts without them.

``--here`` skips steps 1 and 2 and times this checkout with the running interpreter, in a
temporary folder: the quick check of a change. ``--imports`` adds where a warm run's import
time goes (``python -X importtime``, self time summed by top-level package; the tracing
inflates every figure, so compare them with each other, not with the wall times).

Targets (this project's, on a 2-core machine): ``make run`` within 120 s, cold ``vitrine
--all`` within 2 s and 150 MB, warm within 1 s.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
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


def _import_breakdown(python: str, cwd: Path, env: dict[str, str], top: int = 12) -> None:
    """Self import time of one warm ``vitrine --all``, summed by top-level package."""
    done = subprocess.run(
        [python, "-X", "importtime", "-m", "vitrine", "--all"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    by_package: collections.Counter[str] = collections.Counter()
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if match:
            by_package[match[2].split(".")[0]] += int(match[1])
    total = sum(by_package.values())
    print(f"imports of a warm run (-X importtime, self time): {total / 1000:.0f} ms in all")
    for package, micros in by_package.most_common(top):
        print(f"  {package:<20} {micros / 1000:6.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the temporary clone")
    parser.add_argument(
        "--here", action="store_true", help="time this checkout: no clone, no `make run`"
    )
    parser.add_argument(
        "--imports", action="store_true", help="also show where a warm run's imports go"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vitrine-first-result-"))
    try:
        clone = work / "vitrine"
        env = {**os.environ, "PIP_NO_CACHE_DIR": "1"}
        env.pop("VITRINE_HOME", None)
        if args.here:
            clone.mkdir()
            python = sys.executable
            vitrine_cmd = [python, "-m", "vitrine"]
        else:
            subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
            env.pop("VIRTUAL_ENV", None)
            wall, _, code = _timed(["make", "run"], clone, env)
            print(f"fresh clone -> finished `make run` (pip cache off): {wall:.1f} s, exit {code}")
            python = str(clone / ".venv" / "bin" / "python")
            vitrine_cmd = [str(clone / ".venv" / "bin" / "vitrine")]
        torch = subprocess.run([python, "-c", "import torch"], capture_output=True, check=False)
        print(f"torch installed: {'yes' if torch.returncode == 0 else 'no'}")
        # Every cache (embeddings, compiled templates) under the store folder, which a cold run
        # removes: a cold run then starts with nothing the previous one left.
        env["VITRINE_CACHE_DIR"] = str(clone / ".vitrine" / "cache")
        cold, warm = [], []
        for _ in range(args.repeats):
            shutil.rmtree(clone / ".vitrine", ignore_errors=True)
            cold.append(_timed([*vitrine_cmd, "--all"], clone, env))
            warm.append(_timed([*vitrine_cmd, "--all"], clone, env))
        for name, runs in (("cold", cold), ("warm", warm)):
            walls = [w for w, _, _ in runs]
            print(
                f"{name} `vitrine --all`: median {statistics.median(walls):.2f} s "
                f"(min {min(walls):.2f}, max {max(walls):.2f}), "
                f"peak RSS {max(r for _, r, _ in runs)} MB, "
                f"exit codes {sorted({c for _, _, c in runs})}"
            )
        if args.imports:
            _import_breakdown(python, clone, env)
        return 0
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
