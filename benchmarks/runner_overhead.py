"""Harness overhead per trial: 10,000 trials of an instant subject with five cheap checks.

The subject answers at once and the checks are trivial, so the time per trial is what the
runner and the run store cost by themselves. Both store layouts are measured, each in a fresh
process so that one's memory does not inflate the other's peak:

    python benchmarks/runner_overhead.py                 # both layouts, then the CLI cold start
    python benchmarks/runner_overhead.py --trials 2000   # a quicker pass
    python benchmarks/runner_overhead.py --scale 10000,100000,1000000   # memory as runs grow

The per-file layout syncs one file per row, so it is measured on fewer trials by default
(``--per-file-trials``); its cost per trial does not fall with more trials.

Targets on a 2-core machine: mean overhead <= 0.1 ms per trial at 10,000 trials; peak RSS
<= 250 MB. ``--scale`` prints how the peak grows with the trials of one run (the run's result
keeps every row and response in memory, so it is not flat).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from vitrine._bench.model import Arm, BenchmarkDefinition, Case, admit, check
from vitrine._bench.response import SubjectResponse
from vitrine._bench.runner import run_benchmark
from vitrine._floors import ChanceFloor
from vitrine._outcomes import Observation
from vitrine.store import PER_FILE_SCHEMA, ROWS_JSONL_SCHEMA, RunStore, load_run

LAYOUTS = {
    PER_FILE_SCHEMA: "schema 1, scenarios/<row>.json",
    ROWS_JSONL_SCHEMA: "schema 2, rows.jsonl",
}
_FLOOR = ChanceFloor.not_derivable("a deterministic predicate has no random-draw population")
_ANSWER = SubjectResponse(answer="GLX-1234 because it is waterproof and within your budget")


def _make_check(index: int):
    @check(f"cheap-{index}")
    def cheap(case: Case, response: SubjectResponse) -> Observation:
        ok = bool(response.answer) and index < 5
        return Observation.measured(ok, ok)

    return admit(cheap, _FLOOR)


async def _instant_subject(case: Case) -> SubjectResponse:
    return _ANSWER


def _definition(trials: int) -> BenchmarkDefinition:
    cases = [Case(f"case-{i:05d}", {"n": i}) for i in range(trials)]
    return BenchmarkDefinition("overhead", "1", cases, [_make_check(i) for i in range(5)])


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kilobytes on Linux


def measure(
    schema_version: int, trials: int, concurrency: int, *, load: bool = True
) -> dict[str, float]:
    """One layout, in this process: run, seal, and load back the whole run."""

    definition = _definition(trials)
    arm = Arm("instant", _instant_subject)
    root = Path(tempfile.mkdtemp(prefix="vitrine-overhead-"))
    try:
        store = RunStore(root, schema_version=schema_version)
        started = time.perf_counter()
        result = asyncio.run(run_benchmark(definition, arm, store=store, concurrency=concurrency))
        elapsed = time.perf_counter() - started
        run_rss_mb = _peak_rss_mb()
        assert result.run_dir is not None and len(result.rows) == trials * 5
        run_dir = result.run_dir
        del result
        load_started = time.perf_counter()
        if load:
            load_run(run_dir)
        load_s = time.perf_counter() - load_started
        return {
            "schema_version": schema_version,
            "trials": trials,
            "overhead_ms_per_trial": elapsed * 1000.0 / trials,
            "trials_per_s": trials / elapsed,
            "load_s": load_s,
            "peak_rss_mb": run_rss_mb,
            "peak_rss_with_load_mb": _peak_rss_mb(),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _in_child(
    schema_version: int, trials: int, concurrency: int, *, load: bool = True
) -> dict[str, float]:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            str(schema_version),
            "--trials",
            str(trials),
            "--concurrency",
            str(concurrency),
            *([] if load else ["--no-load"]),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cli_help_wall_s() -> str:
    script = shutil.which("vitrine") or str(Path(sys.executable).with_name("vitrine"))
    if not Path(script).exists():
        return "skipped: no `vitrine` console script is installed"
    started = time.perf_counter()
    done = subprocess.run([script, "--help"], capture_output=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        return f"skipped: `vitrine --help` exited {done.returncode}"
    return f"{wall:.3f} s"


def _print_scale(counts: list[int], concurrency: int) -> None:
    print(f"rows.jsonl runs of growing size, instant subject, concurrency {concurrency}")
    for trials in counts:
        r = _in_child(ROWS_JSONL_SCHEMA, trials, concurrency, load=False)
        print(
            f"  {trials:9,d} trials   overhead {r['overhead_ms_per_trial']:.3f} ms/trial   "
            f"peak RSS {r['peak_rss_mb']:6.0f} MB   "
            f"({r['peak_rss_mb'] * 1024 * 1024 / trials:,.0f} bytes per trial at the peak)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--per-file-trials", type=int, default=1_000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--scale", help="comma-separated trial counts for rows.jsonl runs")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--no-load", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child, args.trials, args.concurrency, load=not args.no_load)))
        return
    if args.scale:
        _print_scale([int(n) for n in args.scale.split(",")], args.concurrency)
        return

    print(f"instant subject, 5 cheap checks per trial, concurrency {args.concurrency}")
    for schema_version, label in LAYOUTS.items():
        trials = args.per_file_trials if schema_version == PER_FILE_SCHEMA else args.trials
        r = _in_child(schema_version, trials, args.concurrency)
        print(
            f"  {label:32} {trials:6d} trials   "
            f"overhead {r['overhead_ms_per_trial']:.3f} ms/trial   "
            f"{r['trials_per_s']:6.0f} trials/s   peak RSS {r['peak_rss_mb']:.0f} MB   "
            f"(load_run {r['load_s']:.2f} s, peak {r['peak_rss_with_load_mb']:.0f} MB)"
        )
    print(f"  vitrine --help wall time: {_cli_help_wall_s()}")


if __name__ == "__main__":
    main()
