"""Wall time of the 43 registered controls alone, over state captured once from a real suite.

Run: python benchmarks/controls.py [--runs N]
The capture (one offline suite run) is not timed; each timed run builds the registry and runs
all 43 controls (healthy, broken and restored arms).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from vitrine.store import RunStore
from vitrine_shop.evals.controls import capture_shipped_state, run_shop_controls
from vitrine_shop.evals.offline import run_offline_suite


async def _main(runs: int) -> int:
    with tempfile.TemporaryDirectory(prefix="vitrine-controls-") as tmp:
        store = RunStore(Path(tmp))
        suite = await run_offline_suite(store, with_controls=False)
        state = await capture_shipped_state(
            evidence=suite.production_run.responses["shipped-shop"]["structured"],
            canonical_runs=tuple(suite.canonical_runs),
            claims=suite.sections[0],
            store_root=store.root,
        )
        times, caught = [], 0
        for _ in range(runs):
            started = time.perf_counter()
            results = await run_shop_controls(state)
            times.append(time.perf_counter() - started)
            caught = sum(1 for r in results if r.caught)
        print(
            f"43 controls over {runs} runs: median {statistics.median(times) * 1000:.1f} ms, "
            f"min {min(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms; "
            f"{caught}/{len(results)} caught"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10, help="timed runs (default 10)")
    return asyncio.run(_main(parser.parse_args().runs))


if __name__ == "__main__":
    raise SystemExit(main())
