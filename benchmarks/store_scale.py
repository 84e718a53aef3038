"""`vitrine runs` on a store of 100,000 sealed runs: list, filter, find the unsealed.

Usage: ``python benchmarks/store_scale.py [--runs N] [--repeats R]``

Builds a synthetic store in a temporary folder (an index line and a run folder with its sealed
manifest per run, plus a few unsealed runs and debris), then times each command as a user runs
it (a fresh process, start-up included) and prints the median wall time. Target: each under
0.5 s at 100,000 runs, and ``runs unsealed`` under 0.3 s on a store that has not changed since
the last look (it reads its checkpoint); the last line times it just after a run folder was
added, when it lists runs/ and reads the whole id log again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def build(root: Path, runs: int) -> None:
    index = root / "runs-index" / "recent.jsonl"
    index.parent.mkdir(parents=True)
    arms = ("scripted-agent", "zero-model-workflow", "degraded-empty-answer")
    # The compact id log a sealing writer keeps beside the index (runs-index/sealed-ids.jsonl).
    ids = (root / "runs-index" / "sealed-ids.jsonl").open("w", encoding="utf-8")
    with index.open("w", encoding="utf-8") as handle, ids:
        for number in range(runs):
            seconds = number % 60
            minutes = (number // 60) % 60
            hours = (number // 3600) % 24
            run_id = f"2026-01-01_{hours:02d}-{minutes:02d}-{seconds:02d}_{number:08d}"
            (root / "runs" / run_id).mkdir(parents=True)
            record = {
                "schema_version": 1,
                "run_id": run_id,
                "run_dir": f"runs/{run_id}",
                "definition": {"key": "bench", "version": "1", "content_hash": "sha256:0"},
                "arm": arms[number % 3],
                "repetition": 1,
                "verdict": "PASS" if number % 7 else "FAIL",
                "census": {"measured": 10, "not_applicable": 0, "not_measured": 0, "total": 10},
                "timestamp": f"2026-01-01T00:00:00.{number:06d}+00:00",
                "content_hash": "sha256:1",
            }
            handle.write(json.dumps(record) + "\n")
            ids.write(json.dumps({"run_id": run_id}) + "\n")
            # What `runs list` checks each listed line against: the run's sealed manifest.
            manifest = {"status": "complete", "content_hash": "sha256:1", "run": record}
            (root / "runs" / run_id / "manifest.json").write_text(json.dumps(manifest))
    for number in range(3):  # unsealed leftovers, never indexed
        (root / "runs" / f"2026-02-01_00-00-0{number}_9999999{number}").mkdir()


def timed(
    cmd: list[str], repeats: int, before: Callable[[], None] | None = None
) -> tuple[float, int]:
    walls = []
    code = 0
    for _ in range(repeats):
        if before is not None:
            before()
        started = time.perf_counter()
        code = subprocess.run(cmd, capture_output=True, check=False).returncode
        walls.append(time.perf_counter() - started)
    return statistics.median(walls), code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="vitrine-store-scale-"))
    try:
        started = time.perf_counter()
        build(root, args.runs)
        print(
            f"built a store of {args.runs:,} sealed runs in {time.perf_counter() - started:.1f} s"
        )
        vitrine = [sys.executable, "-m", "vitrine", "runs"]
        out = ["--output", str(root)]
        for label, extra in (
            ("runs list (newest 50)", ["list", *out]),
            ("runs list --arm (filtered)", ["list", "--arm", "degraded-empty-answer", *out]),
            ("runs list --verdict FAIL", ["list", "--verdict", "FAIL", *out]),
            ("runs unsealed", ["unsealed", *out]),
        ):
            wall, code = timed([*vitrine, *extra], args.repeats)
            print(f"{label:<30} median {wall:.3f} s (exit {code})")
        # A store that just changed: every look lists runs/ and reads the whole id log again.
        fresh = iter(range(10**6))

        def add_a_run_folder() -> None:
            (root / "runs" / f"2026-03-01_00-00-00_{next(fresh):08d}").mkdir()

        wall, code = timed([*vitrine, "unsealed", *out], args.repeats, before=add_a_run_folder)
        print(f"{'runs unsealed, runs/ changed':<30} median {wall:.3f} s (exit {code})")
        wall, _ = timed([sys.executable, "-c", "import vitrine._cli"], args.repeats)
        print(f"{'python start-up + import':<30} median {wall:.3f} s (included above)")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
