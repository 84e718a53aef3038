"""Live-path throughput: trials against a 200 ms OpenAI-compatible endpoint at fixed concurrency.

Each trial is one run-store-backed runner trial whose subject makes one ``complete()`` call of
:class:`~vitrine.providers._openai_compat.OpenAICompatibleModel` against
:class:`~vitrine.testing.FakeOpenAIServer`, which sleeps ``--latency-ms`` before answering. The
ideal throughput is ``concurrency / latency``; the share of it achieved is what the harness
(runner, store, HTTP client, retry layer) costs on top of the model's own latency:

    python benchmarks/live_concurrency.py                  # 500 trials at 50, 2000 at 200
    python benchmarks/live_concurrency.py --repeat 3       # each configuration three times
    python benchmarks/live_concurrency.py --client vitrine sdk sdk-fast --workload 500@50

``--client sdk`` and ``--client sdk-fast`` are an agent built on the OpenAI SDK: each trial
awaits ``AsyncOpenAI.chat.completions.create`` on a client instrumented with
:func:`vitrine.adapters.instrument_openai`, as a user's agent would be. ``sdk`` keeps the SDK's
default httpx2 transport; ``sdk-fast`` is ``instrument_openai(client, transport="aiohttp")``,
the SDK's own aiohttp backend. Beside ``vitrine`` in one run they show what an SDK agent costs
the harness, and a summary gives each one's share and CPU relative to ``vitrine``'s.
``--client bare`` is a calibration, not a harness: aiohttp posting the same request in a loop,
with no runner, store, model layer or checks. ``--client raw`` is the floor under every Python
client: HTTP/1.1 written and read by hand on asyncio streams, no parsing library at all. On a
given machine they show how much of the ideal any asyncio client could reach there, so the
harness's own share can be read against them.

Two shares are printed. ``share`` is the whole run, start to last reply: it includes the ramp
(the first wave is sent as a burst) and the drain (the last wave waits for its slowest reply),
which on a run of ten waves cost a few points even for a client with no overhead at all.
``steady`` is the rate between the end of the first wave of replies and the end of the
last-but-one, whole cycles of every connection: the rate a long run converges to.

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
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import httpx2
import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from vitrine._bench.model import Arm, BenchmarkDefinition, Case, admit, check
from vitrine._bench.response import SubjectResponse, TokenUsage
from vitrine._bench.runner import run_benchmark
from vitrine._floors import ChanceFloor
from vitrine._outcomes import Observation
from vitrine.adapters import current_journal, instrument_openai
from vitrine.providers._base import ChatMessage, ChatRequest
from vitrine.providers._openai_compat import OpenAICompatibleModel
from vitrine.providers._retry import ProviderBackoff
from vitrine.store import RunStore
from vitrine.testing import FakeOpenAIServer, FakeReply

_FLOOR = ChanceFloor.not_derivable("a deterministic predicate has no random-draw population")
_TIMEOUT_S = 30.0
CLIENTS = ("vitrine", "sdk", "sdk-fast", "bare", "raw")


@check("answered")
def _answered(case: Case, response: SubjectResponse) -> Observation:
    ok = bool(response.answer)
    return Observation.measured(ok, ok)


# What one call of a subject returns: its answer and the usage it reported, if any.
_Call = Callable[[str], Awaitable[tuple[str, TokenUsage | None]]]


def _vitrine_client(base_url: str, concurrency: int) -> tuple[_Call, Callable[[], Awaitable[None]]]:
    model = OpenAICompatibleModel(
        "bench-model",
        api_key="bench-key",
        base_url=base_url,
        retry=ProviderBackoff(max_retries=0),
        timeout_s=_TIMEOUT_S,
        max_connections=concurrency,
    )

    async def call(text: str) -> tuple[str, TokenUsage | None]:
        completion = await model.complete(ChatRequest((ChatMessage("user", text),)))
        return completion.content, completion.usage

    return call, model.aclose


def _sdk_client(base_url: str, transport: str) -> tuple[_Call, Callable[[], Awaitable[None]]]:
    """An agent's own ``AsyncOpenAI`` client, instrumented as a user would instrument it."""
    client = instrument_openai(
        openai.AsyncOpenAI(
            api_key="bench-key", base_url=base_url, max_retries=0, timeout=_TIMEOUT_S
        ),
        transport=transport,
    )

    async def call(text: str) -> tuple[str, TokenUsage | None]:
        reply = await client.chat.completions.create(
            model="bench-model", messages=[{"role": "user", "content": text}]
        )
        journal = current_journal()
        # Usage comes from the adapter's record, as in any instrumented agent; a trial whose
        # call the adapter did not see would be measuring an uninstrumented client.
        if journal is not None and len(journal.model_calls) != 1:
            raise RuntimeError("the adapter did not record the model call")
        return reply.choices[0].message.content or "", None

    return call, client.close


@dataclass
class Timing:
    """One timed run: its wall and CPU time, and when (since the start) each reply arrived."""

    elapsed_s: float
    cpu_s: float
    latencies_s: list[float]
    arrivals_s: list[float]

    def steady_rate(self, concurrency: int) -> float:
        """Replies per second from the end of the first wave to the end of the last-but-one.

        A wave is ``concurrency`` replies; measuring between two wave ends counts whole cycles
        of every connection, so the ramp and the drain are left out without rounding bias.
        """
        arrivals = sorted(self.arrivals_s)
        if len(arrivals) <= 2 * concurrency:
            return len(arrivals) / self.elapsed_s
        first, last = arrivals[concurrency - 1], arrivals[len(arrivals) - concurrency - 1]
        return (len(arrivals) - 2 * concurrency) / (last - first)


class _Clock:
    """Collects each reply's latency and arrival time; started when the timed window opens."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.arrivals: list[float] = []
        self.origin = time.perf_counter()
        self._cpu_origin = time.process_time()

    def start(self) -> None:
        self.latencies.clear()
        self.arrivals.clear()
        self.origin = time.perf_counter()
        self._cpu_origin = time.process_time()

    def reply(self, sent: float) -> None:
        now = time.perf_counter()
        self.latencies.append(now - sent)
        self.arrivals.append(now - self.origin)

    def stop(self) -> Timing:
        return Timing(
            time.perf_counter() - self.origin,
            time.process_time() - self._cpu_origin,
            self.latencies,
            self.arrivals,
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
            elif client == "raw":
                timed = _raw(endpoint.base_url, trials, concurrency)
            else:
                if client == "vitrine":
                    call, close = _vitrine_client(endpoint.base_url, concurrency)
                else:
                    transport = "aiohttp" if client == "sdk-fast" else "sdk"
                    call, close = _sdk_client(endpoint.base_url, transport)
                timed = _run(call, close, trials, concurrency, RunStore(root))
            timing = asyncio.run(timed)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    elapsed = timing.elapsed_s
    achieved = trials / elapsed
    ideal = concurrency / latency_s
    quantiles = statistics.quantiles(timing.latencies_s, n=100)
    return {
        "client": client,
        "concurrency": concurrency,
        "trials": trials,
        "achieved_per_s": achieved,
        "ideal_per_s": ideal,
        "share": achieved / ideal,
        "steady_share": timing.steady_rate(concurrency) / ideal,
        "p50_ms": quantiles[49] * 1000,
        "p95_ms": quantiles[94] * 1000,
        "server_peak_in_flight": endpoint.peak_in_flight,
        "client_cpu_ms_per_trial": timing.cpu_s * 1000.0 / trials,
        "server_cpu_ms_per_request": endpoint.cpu_s * 1000.0 / max(endpoint.requests, 1),
    }


async def _run(
    call: _Call,
    close: Callable[[], Awaitable[None]],
    trials: int,
    concurrency: int,
    store: RunStore,
) -> Timing:
    clock = _Clock()

    async def subject(case: Case) -> SubjectResponse:
        started = time.perf_counter()
        answer, usage = await call(f"case {case.id}")
        clock.reply(started)
        return SubjectResponse(answer=answer, usage=usage)

    cases = [Case(f"case-{i:05d}", {"n": i}) for i in range(trials)]
    definition = BenchmarkDefinition("live-concurrency", "1", cases, [admit(_answered, _FLOOR)])
    # Warm-up calls open the client and its connections outside the timed window, as a long
    # run amortises them.
    await asyncio.gather(*(call("warm-up") for _ in range(concurrency)))
    clock.start()
    result = await run_benchmark(
        definition, Arm("fake-endpoint", subject), store=store, concurrency=concurrency
    )
    timing = clock.stop()
    await close()
    unmeasured = [row for row in result.rows if row.observation.state.value != "measured"]
    if len(result.rows) != trials or unmeasured:
        raise RuntimeError(f"{len(unmeasured)} of {len(result.rows)} trials were not measured")
    return timing


_BODY = json.dumps({"model": "bench-model", "messages": [{"role": "user", "content": "x"}]})


def _check_reply(body: bytes) -> None:
    if not json.loads(body)["choices"][0]["message"]["content"]:
        raise RuntimeError("the endpoint answered without content")


async def _bare(base_url: str, trials: int, concurrency: int) -> Timing:
    headers = {"Content-Type": "application/json", "Authorization": "Bearer bench-key"}
    clock = _Clock()
    gate = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def one() -> None:
            async with gate:
                started = time.perf_counter()
                async with session.post(f"{base_url}/chat/completions", data=_BODY) as response:
                    _check_reply(await response.read())
                clock.reply(started)

        await asyncio.gather(*(one() for _ in range(concurrency)))
        clock.start()
        await asyncio.gather(*(one() for _ in range(trials)))
        return clock.stop()


async def _raw(base_url: str, trials: int, concurrency: int) -> Timing:
    parts = urlsplit(base_url)
    request = (
        f"POST {parts.path}/chat/completions HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        "Content-Type: application/json\r\nAuthorization: Bearer bench-key\r\n"
        f"Content-Length: {len(_BODY)}\r\n\r\n{_BODY}"
    ).encode()
    clock = _Clock()
    connections = [
        await asyncio.open_connection(parts.hostname, parts.port) for _ in range(concurrency)
    ]

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        started = time.perf_counter()
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.partition(b":")[2])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        _check_reply(await reader.readexactly(length))
        clock.reply(started)

    async def connection(pair: tuple[asyncio.StreamReader, asyncio.StreamWriter], n: int) -> None:
        for _ in range(n):
            await one(*pair)

    shares = [trials // concurrency + (i < trials % concurrency) for i in range(concurrency)]
    await asyncio.gather(*(one(*pair) for pair in connections))
    clock.start()
    work = zip(connections, shares, strict=True)
    await asyncio.gather(*(connection(pair, n) for pair, n in work))
    timing = clock.stop()
    for _, writer in connections:
        writer.close()
    return timing


def _workload(text: str) -> tuple[int, int]:
    trials, _, concurrency = text.partition("@")
    try:
        pair = int(trials), int(concurrency)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not TRIALS@CONCURRENCY") from None
    if min(pair) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: trials and concurrency must be positive")
    return pair


_LOADS: list[str] = []


def _load(*, after: bool = False) -> str:
    """The 1, 5 and 15 minute load averages, read once before the run and once after."""
    if after or not _LOADS:
        _LOADS.append(" / ".join(f"{value:.2f}" for value in os.getloadavg()))
    return _LOADS[-1] if after else _LOADS[0]


def _rows_of(
    rows: list[dict[str, Any]], client: str, trials: int, concurrency: int
) -> list[dict[str, Any]]:
    return [
        r
        for r in rows
        if (r["client"], r["trials"], r["concurrency"]) == (client, trials, concurrency)
    ]


def _median(mine: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in mine)


_FLOOR_CALLS = 2000
_FLOOR_REPLY = json.dumps(
    {
        "id": "floor",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "GLX-1234 because it fits"},
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
).encode()


def sdk_floor_ms(calls: int = _FLOOR_CALLS) -> float:
    """The OpenAI SDK's own CPU per ``chat.completions.create``, with nothing under it: an
    in-process transport answers at once, with no socket, no harness and no instrumentation.
    No transport vitrine hands the SDK can bring an SDK agent's CPU per trial below this."""

    class _Instant(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            await request.aread()
            headers = {"content-type": "application/json"}
            return httpx2.Response(200, headers=headers, content=_FLOOR_REPLY)

    async def spend() -> float:
        http = httpx2.AsyncClient(transport=_Instant())
        client = openai.AsyncOpenAI(
            api_key="floor", base_url="http://127.0.0.1:9/v1", http_client=http, max_retries=0
        )
        messages: Any = [{"role": "user", "content": "recommend a tent"}]
        for _ in range(calls // 10):  # warm: first calls build the SDK's caches
            await client.chat.completions.create(model="fake", messages=messages)
        began = time.process_time()
        for _ in range(calls):
            await client.chat.completions.create(model="fake", messages=messages)
        spent = time.process_time() - began
        await client.close()
        return spent / calls * 1000

    return asyncio.run(spend())


def _against_vitrine(rows: list[dict[str, Any]], workload: list[tuple[int, int]]) -> None:
    """Each SDK client's median share and CPU per trial as a ratio of ``vitrine``'s, and the
    SDK's own floor: its CPU per call with no transport, harness or network at all."""
    lines = []
    for trials, concurrency in workload:
        ours = _rows_of(rows, "vitrine", trials, concurrency)
        for client in ("sdk", "sdk-fast"):
            theirs = _rows_of(rows, client, trials, concurrency)
            if not ours or not theirs:
                continue
            share = _median(theirs, "share") / _median(ours, "share")
            cpu = _median(theirs, "client_cpu_ms_per_trial") / _median(
                ours, "client_cpu_ms_per_trial"
            )
            lines.append(
                f"{client:>8} {trials}@{concurrency}: share {share:.2f}x vitrine's, "
                f"cpu/trial {cpu:.2f}x vitrine's"
            )
    if not lines:
        return
    print("\nagainst vitrine (target for sdk-fast: share >= 0.90x, cpu/trial <= 1.50x):")
    print("\n".join(lines))
    floor = sdk_floor_ms()
    ours = [r["client_cpu_ms_per_trial"] for r in rows if r["client"] == "vitrine"]
    print(
        f"the SDK's own floor: {floor:.3f} ms CPU per create() on an instant in-process "
        f"transport (no socket, harness or instrumentation), "
        f"{floor / statistics.median(ours):.2f}x vitrine's whole trial"
    )


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
        f"{'client':>8} {'conc':>5} {'trials':>6} {'achieved/s':>11} {'ideal/s':>8} "
        f"{'share':>6} {'steady':>6} {'p50 ms':>7} {'p95 ms':>7} {'srv peak':>8} "
        f"{'cpu ms/trial':>12} {'srv cpu ms/req':>14}",
        flush=True,
    )
    _load()
    rows: list[dict[str, Any]] = []
    for trials, concurrency in args.workload:
        for _ in range(args.repeat):
            for client in args.client:
                r = measure(client, trials, concurrency, args.latency_ms / 1000.0)
                rows.append(r)
                print(
                    f"{client:>8} {concurrency:>5} {trials:>6} {r['achieved_per_s']:>11.1f} "
                    f"{r['ideal_per_s']:>8.1f} {r['share']:>6.3f} {r['steady_share']:>6.3f} "
                    f"{r['p50_ms']:>7.1f} "
                    f"{r['p95_ms']:>7.1f} {r['server_peak_in_flight']:>8} "
                    f"{r['client_cpu_ms_per_trial']:>12.2f} "
                    f"{r['server_cpu_ms_per_request']:>14.2f}",
                    flush=True,
                )
    _against_vitrine(rows, args.workload)
    print(f"\n{os.cpu_count()} cores; load average {_load()} before, {_load(after=True)} after")
    if args.repeat > 1:
        print("\nranges over the repeats (share and steady share of ideal; client CPU ms/trial):")
        for trials, concurrency in args.workload:
            for client in args.client:
                mine = _rows_of(rows, client, trials, concurrency)
                shares = [r["share"] for r in mine]
                steady = [r["steady_share"] for r in mine]
                cpus = [r["client_cpu_ms_per_trial"] for r in mine]
                print(
                    f"{client:>8} {trials}@{concurrency}: share {min(shares):.3f}-"
                    f"{max(shares):.3f}; steady {min(steady):.3f}-{max(steady):.3f}; "
                    f"cpu {min(cpus):.2f}-{max(cpus):.2f} ms"
                )


if __name__ == "__main__":
    main()
