"""Live-path throughput: trials against a 200 ms OpenAI-compatible endpoint at fixed concurrency.

Each trial is one run-store-backed runner trial whose subject makes one ``complete()`` call of
:class:`~vitrine.providers.openai_compat.OpenAICompatibleModel` against
:class:`~vitrine.testing.FakeOpenAIServer`, which sleeps ``--latency-ms`` before answering. The
ideal throughput is ``concurrency / latency``; the share of it achieved is what the harness
(runner, store, HTTP client, retry layer) costs on top of the model's own latency:

    python benchmarks/live_concurrency.py                  # 500 trials at 50, 2000 at 200
    python benchmarks/live_concurrency.py --repeat 3       # each configuration three times
    python benchmarks/live_concurrency.py --client vitrine sdk --workload 500@50

``--client sdk`` is the same model posting through the OpenAI SDK's own HTTP stack (the client
path vitrine used before), so before and after are measured in one run, on one machine state.
``--client bare`` is a calibration, not a harness: aiohttp posting the same request in a loop,
with no runner, store, model layer or checks. On a busy machine it shows how much of the
ideal any Python client could reach there, so the harness's own share can be read against it.

Targets: at least 0.95 of the ideal throughput at 50 and at 200 connections, and at most 1 ms
of client CPU per trial (the process CPU time of the client, runner and store included,
divided by the trials). The server runs in its own process, so that its work does not compete
with the client for the interpreter lock; its peak of requests in flight and its own CPU per
request are printed, so a server that could not keep up (rather than the client) would show.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from vitrine.bench.model import Arm, BenchmarkDefinition, Case, admit, check
from vitrine.bench.response import SubjectResponse
from vitrine.bench.runner import run_benchmark
from vitrine.floors import ChanceFloor
from vitrine.outcomes import Observation
from vitrine.providers.base import ChatCompletion, ChatMessage, ChatRequest
from vitrine.providers.openai_compat import OpenAICompatibleModel, _completion
from vitrine.providers.retry import RetryPolicy
from vitrine.store import RunStore
from vitrine.testing import FakeOpenAIServer, FakeReply

_FLOOR = ChanceFloor.not_derivable("a deterministic predicate has no random-draw population")
_TIMEOUT_S = 30.0
CLIENTS = ("vitrine", "sdk", "bare")


@check("answered")
def _answered(case: Case, response: SubjectResponse) -> Observation:
    ok = bool(response.answer)
    return Observation.measured(ok, ok)


class _SdkPathModel(OpenAICompatibleModel):
    """The same model posting through the OpenAI SDK's HTTP stack: the previous client path."""

    def __init__(self, base_url: str) -> None:
        super().__init__(
            "bench-model",
            api_key="bench-key",
            base_url=base_url,
            retry=RetryPolicy(max_retries=0),
            timeout_s=_TIMEOUT_S,
        )
        self._sdk = openai.AsyncOpenAI(
            api_key="bench-key", base_url=base_url, max_retries=0, timeout=_TIMEOUT_S
        )

    async def _attempt(self, arguments: Mapping[str, Any]) -> ChatCompletion:
        body = await self._sdk.post(
            "/chat/completions",
            body=arguments,
            cast_to=object,
            options={"timeout": _TIMEOUT_S},
        )
        return _completion(body)

    async def aclose(self) -> None:
        await self._sdk.close()


def _model(client: str, base_url: str, concurrency: int) -> OpenAICompatibleModel:
    if client == "sdk":
        return _SdkPathModel(base_url)
    return OpenAICompatibleModel(
        "bench-model",
        api_key="bench-key",
        base_url=base_url,
        retry=RetryPolicy(max_retries=0),
        timeout_s=_TIMEOUT_S,
        max_connections=concurrency,
    )


@dataclass
class Endpoint:
    """A fake endpoint in its own process; its figures are filled in when it stops."""

    base_url: str
    peak_in_flight: int = 0
    requests: int = 0
    cpu_s: float = 0.0


def _serve(latency_s: float, report: Any, stop: Any) -> None:
    reply = FakeReply.text("GLX-0001 fits your budget.", delay_s=latency_s)
    with FakeOpenAIServer(reply) as server:
        # From here on, so that the process's start-up (its imports) is not counted.
        ready_cpu_s = time.process_time()
        report.put(server.base_url)
        stop.wait()
        busy_s = time.process_time() - ready_cpu_s
        report.put((server.max_in_flight, server.request_count, busy_s))


@contextlib.contextmanager
def fake_endpoint(latency_s: float) -> Iterator[Endpoint]:
    """An OpenAI-compatible endpoint answering every request after ``latency_s``."""
    context = multiprocessing.get_context("spawn")
    report: Any = context.Queue()
    stop = context.Event()
    server = context.Process(target=_serve, args=(latency_s, report, stop), daemon=True)
    server.start()
    try:
        endpoint = Endpoint(report.get(timeout=60))
    except BaseException:
        server.kill()
        raise
    try:
        yield endpoint
    finally:
        stop.set()
        endpoint.peak_in_flight, endpoint.requests, endpoint.cpu_s = report.get(timeout=30)
        server.join(timeout=30)


def measure(client: str, trials: int, concurrency: int, latency_s: float) -> dict[str, Any]:
    """One configuration against a fresh server process; the figures of one row."""
    root = Path(tempfile.mkdtemp(prefix="vitrine-live-bench-"))
    try:
        with fake_endpoint(latency_s) as endpoint:
            if client == "bare":
                timed = _bare(endpoint.base_url, trials, concurrency)
            else:
                model = _model(client, endpoint.base_url, concurrency)
                timed = _run(model, trials, concurrency, RunStore(root))
            elapsed, cpu_s, latencies = asyncio.run(timed)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    achieved = trials / elapsed
    ideal = concurrency / latency_s
    quantiles = statistics.quantiles(latencies, n=100)
    return {
        "client": client,
        "concurrency": concurrency,
        "trials": trials,
        "achieved_per_s": achieved,
        "ideal_per_s": ideal,
        "share": achieved / ideal,
        "p50_ms": quantiles[49] * 1000,
        "p95_ms": quantiles[94] * 1000,
        "server_peak_in_flight": endpoint.peak_in_flight,
        "client_cpu_ms_per_trial": cpu_s * 1000.0 / trials,
        "server_cpu_ms_per_request": endpoint.cpu_s * 1000.0 / max(endpoint.requests, 1),
    }


async def _run(
    model: OpenAICompatibleModel, trials: int, concurrency: int, store: RunStore
) -> tuple[float, float, list[float]]:
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
    cpu_s = time.process_time() - cpu_started
    await model.aclose()
    unmeasured = [row for row in result.rows if row.observation.state.value != "measured"]
    if len(result.rows) != trials or unmeasured:
        raise RuntimeError(f"{len(unmeasured)} of {len(result.rows)} trials were not measured")
    return elapsed, cpu_s, latencies


async def _bare(base_url: str, trials: int, concurrency: int) -> tuple[float, float, list[float]]:
    body = json.dumps({"model": "bench-model", "messages": [{"role": "user", "content": "x"}]})
    headers = {"Content-Type": "application/json", "Authorization": "Bearer bench-key"}
    latencies: list[float] = []
    gate = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def one() -> None:
            async with gate:
                started = time.perf_counter()
                async with session.post(f"{base_url}/chat/completions", data=body) as response:
                    reply = json.loads(await response.read())
                if not reply["choices"][0]["message"]["content"]:
                    raise RuntimeError("the endpoint answered without content")
                latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(one() for _ in range(concurrency)))
        latencies.clear()
        started = time.perf_counter()
        cpu_started = time.process_time()
        await asyncio.gather(*(one() for _ in range(trials)))
        return time.perf_counter() - started, time.process_time() - cpu_started, latencies


def _workload(text: str) -> tuple[int, int]:
    trials, _, concurrency = text.partition("@")
    try:
        pair = int(trials), int(concurrency)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not TRIALS@CONCURRENCY") from None
    if min(pair) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: trials and concurrency must be positive")
    return pair


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workload",
        type=_workload,
        nargs="+",
        default=[(500, 50), (2000, 200)],
        metavar="TRIALS@CONCURRENCY",
    )
    parser.add_argument("--client", choices=CLIENTS, nargs="+", default=list(CLIENTS))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    args = parser.parse_args()
    if args.repeat < 1 or args.latency_ms <= 0:
        parser.error("--repeat must be at least 1 and --latency-ms positive")
    print(
        f"{'client':>7} {'conc':>5} {'trials':>6} {'achieved/s':>11} {'ideal/s':>8} "
        f"{'share':>6} {'p50 ms':>7} {'p95 ms':>7} {'srv peak':>8} "
        f"{'cpu ms/trial':>12} {'srv cpu ms/req':>14}",
        flush=True,
    )
    rows: list[dict[str, Any]] = []
    for trials, concurrency in args.workload:
        for _ in range(args.repeat):
            for client in args.client:
                r = measure(client, trials, concurrency, args.latency_ms / 1000.0)
                rows.append(r)
                print(
                    f"{client:>7} {concurrency:>5} {trials:>6} {r['achieved_per_s']:>11.1f} "
                    f"{r['ideal_per_s']:>8.1f} {r['share']:>6.3f} {r['p50_ms']:>7.1f} "
                    f"{r['p95_ms']:>7.1f} {r['server_peak_in_flight']:>8} "
                    f"{r['client_cpu_ms_per_trial']:>12.2f} "
                    f"{r['server_cpu_ms_per_request']:>14.2f}",
                    flush=True,
                )
    if args.repeat > 1:
        print("\nranges over the repeats (share of ideal; client CPU ms per trial):")
        for trials, concurrency in args.workload:
            for client in args.client:
                mine = [
                    r
                    for r in rows
                    if (r["client"], r["trials"], r["concurrency"]) == (client, trials, concurrency)
                ]
                shares = [r["share"] for r in mine]
                cpus = [r["client_cpu_ms_per_trial"] for r in mine]
                print(
                    f"{client:>7} {trials}@{concurrency}: share {min(shares):.3f}-"
                    f"{max(shares):.3f}; cpu {min(cpus):.2f}-{max(cpus):.2f} ms"
                )


if __name__ == "__main__":
    main()
