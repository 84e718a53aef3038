"""Live-path throughput: trials against a 200 ms OpenAI-compatible endpoint at fixed concurrency.

Each trial is one run-store-backed runner trial whose subject makes one ``complete()`` call of
:class:`~vitrine.providers.openai_compat.OpenAICompatibleModel` against
:class:`~vitrine.testing.FakeOpenAIServer`, which sleeps ``--latency-ms`` before answering. The
ideal throughput is ``concurrency / latency``; the ratio of achieved to ideal is what the
harness (runner, store, SDK, retry layer) costs on top of the model's own latency:

    python benchmarks/live_concurrency.py                       # 500 trials at concurrency 50
    python benchmarks/live_concurrency.py --concurrency 10 50 100

Target: ratio >= 0.9 at concurrency 50. The server runs in its own process, so that its
work does not compete with the harness for the interpreter lock; its peak of requests in
flight is printed, so a server that could not keep up (rather than the harness) would show.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from vitrine.bench.model import Arm, BenchmarkDefinition, Case, admit, check
from vitrine.bench.response import SubjectResponse
from vitrine.bench.runner import run_benchmark
from vitrine.floors import ChanceFloor
from vitrine.outcomes import Observation
from vitrine.providers.base import ChatMessage, ChatRequest
from vitrine.providers.openai_compat import OpenAICompatibleModel
from vitrine.providers.retry import RetryPolicy
from vitrine.store import RunStore
from vitrine.testing import FakeOpenAIServer, FakeReply

_FLOOR = ChanceFloor.not_derivable("a deterministic predicate has no random-draw population")


@check("answered")
def _answered(case: Case, response: SubjectResponse) -> Observation:
    ok = bool(response.answer)
    return Observation.measured(ok, ok)


def _serve(latency_s: float, report: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    reply = FakeReply.text("GLX-0001 fits your budget.", delay_s=latency_s)
    with FakeOpenAIServer(reply) as server:
        report.put(server.base_url)
        stop.wait()
        report.put(server.max_in_flight)


def measure(trials: int, concurrency: int, latency_s: float) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    report: multiprocessing.Queue = context.Queue()
    stop = context.Event()
    server = context.Process(target=_serve, args=(latency_s, report, stop), daemon=True)
    server.start()
    root = Path(tempfile.mkdtemp(prefix="vitrine-live-bench-"))
    try:
        elapsed, cpu_ms, latencies = asyncio.run(
            _run(report.get(timeout=60), trials, concurrency, RunStore(root))
        )
    finally:
        stop.set()
        peak = report.get(timeout=30)
        server.join(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
    achieved = trials / elapsed
    ideal = concurrency / latency_s
    quantiles = statistics.quantiles(latencies, n=100)
    return {
        "concurrency": concurrency,
        "trials": trials,
        "elapsed_s": elapsed,
        "achieved_per_s": achieved,
        "ideal_per_s": ideal,
        "ratio": achieved / ideal,
        "p50_ms": quantiles[49] * 1000,
        "p95_ms": quantiles[94] * 1000,
        "server_peak_in_flight": peak,
        "client_cpu_ms_per_trial": cpu_ms,
    }


async def _run(
    base_url: str, trials: int, concurrency: int, store: RunStore
) -> tuple[float, float, list[float]]:
    model = OpenAICompatibleModel(
        "bench-model",
        api_key="bench-key",
        base_url=base_url,
        retry=RetryPolicy(max_retries=0),
        timeout_s=30.0,
    )
    latencies: list[float] = []

    async def subject(case: Case) -> SubjectResponse:
        started = time.perf_counter()
        completion = await model.complete(ChatRequest((ChatMessage("user", f"case {case.id}"),)))
        latencies.append(time.perf_counter() - started)
        return SubjectResponse(answer=completion.content, usage=completion.usage)

    cases = [Case(f"case-{i:05d}", {"n": i}) for i in range(trials)]
    definition = BenchmarkDefinition("live-concurrency", "1", cases, [admit(_answered, _FLOOR)])
    # Warm-up calls open the client and its connections outside the timed window, as a long
    # run amortises them.
    warm_up = ChatRequest((ChatMessage("user", "warm-up"),))
    await asyncio.gather(*(model.complete(warm_up) for _ in range(concurrency)))
    started = time.perf_counter()
    cpu_started = time.process_time()
    result = await run_benchmark(
        definition, Arm("fake-endpoint", subject), store=store, concurrency=concurrency
    )
    elapsed = time.perf_counter() - started
    cpu_ms = (time.process_time() - cpu_started) * 1000.0 / trials
    await model.aclose()
    unmeasured = [row for row in result.rows if row.observation.state.value != "measured"]
    if len(result.rows) != trials or unmeasured:
        raise RuntimeError(f"{len(unmeasured)} of {len(result.rows)} trials were not measured")
    return elapsed, cpu_ms, latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[50])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    args = parser.parse_args()
    print(
        f"{'conc':>5} {'trials':>6} {'achieved/s':>11} {'ideal/s':>8} {'ratio':>6} "
        f"{'p50 ms':>7} {'p95 ms':>7} {'server peak':>11} {'cpu ms/trial':>12}"
    )
    for concurrency in args.concurrency:
        r = measure(args.trials, concurrency, args.latency_ms / 1000.0)
        print(
            f"{concurrency:>5} {r['trials']:>6} {r['achieved_per_s']:>11.1f} "
            f"{r['ideal_per_s']:>8.1f} {r['ratio']:>6.2f} {r['p50_ms']:>7.1f} "
            f"{r['p95_ms']:>7.1f} {r['server_peak_in_flight']:>11} "
            f"{r['client_cpu_ms_per_trial']:>12.2f}"
        )


if __name__ == "__main__":
    main()
