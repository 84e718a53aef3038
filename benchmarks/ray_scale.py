"""Trial throughput: the local executor against Ray on one and on two simulated nodes.

Run: python benchmarks/ray_scale.py [--io-trials N] [--cpu-trials N] [--concurrency N]

Two subjects, one run each per configuration, every run written to a real store:
- ``io``: waits 200 ms (``asyncio.sleep``), like a model endpoint; concurrency is what counts.
- ``cpu``: a pure-Python loop calibrated to about 50 ms here; only more processes help.

The Ray nodes are ``ray.cluster_utils.Cluster`` nodes on this machine, one CPU each, so "two
nodes" means two trial hosts in two processes, not two machines. Cluster start-up is reported
apart and left out of the throughput; each configuration runs a short warm-up run first so the
hosts have imported vitrine before the clock starts. Needs the ``ray`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import ray
from ray.cluster_utils import Cluster

from vitrine import (
    Arm,
    BenchmarkDefinition,
    Case,
    ChanceFloor,
    Observation,
    SubjectResponse,
    admit,
    check,
)
from vitrine._bench.executors import LOCAL, TrialExecutor
from vitrine._bench.ray_executor import LOOPBACK, RayExecutor, loopback_only
from vitrine._bench.runner import run_benchmark
from vitrine.store import RunStore

IO_WAIT_S = 0.2
CPU_TARGET_S = 0.05
FLOOR = ChanceFloor.not_derivable("a benchmark subject has no random-draw population")


@check("answered")
def answered(case, response):
    return Observation.measured(1.0, bool(response.answer))


async def io_subject(case):
    await asyncio.sleep(IO_WAIT_S)
    return SubjectResponse(answer=f"waited for {case.id}")


def _spin(rounds: int) -> int:
    total = 0
    for i in range(rounds):
        total += i * i % 7
    return total


def calibrate_rounds(target_s: float) -> int:
    """Loop rounds that take about ``target_s`` on this machine, measured now."""
    rounds = 10_000
    while True:
        took = min(_timed(rounds) for _ in range(3))  # the least disturbed of three
        if took > 0.02:
            return max(1, int(rounds * target_s / took))
        rounds *= 4


def _timed(rounds: int) -> float:
    started = time.perf_counter()
    _spin(rounds)
    return time.perf_counter() - started


def cpu_subject(rounds: int) -> Callable[[Case], SubjectResponse]:
    def spin(case: Case) -> SubjectResponse:
        return SubjectResponse(answer=str(_spin(rounds)))

    return spin


@dataclass
class Figure:
    executor: str
    subject: str
    trials: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.trials / self.seconds


def definition(name: str, trials: int) -> BenchmarkDefinition:
    cases = [Case(f"{name}-{i:04d}", i) for i in range(trials)]
    return BenchmarkDefinition(f"ray-scale-{name}", "1", cases, [admit(answered, FLOOR)])


def measure(
    label: str, executor: TrialExecutor, arms: dict[str, Arm], trials: dict[str, int], args
) -> list[Figure]:
    figures = []
    for name, arm in arms.items():
        with tempfile.TemporaryDirectory(prefix="vitrine-ray-scale-") as tmp:
            store = RunStore(Path(tmp))
            warm = definition(f"{name}-warm", 4)
            asyncio.run(run_benchmark(warm, arm, store=store, executor=executor))
            bench = definition(name, trials[name])
            started = time.perf_counter()
            result = asyncio.run(
                run_benchmark(
                    bench, arm, store=store, executor=executor, concurrency=args.concurrency
                )
            )
            seconds = time.perf_counter() - started
        measured = result.census.measured
        if measured != trials[name]:
            raise SystemExit(f"{label} {name}: only {measured} of {trials[name]} trials measured")
        figures.append(Figure(label, name, trials[name], seconds))
        print(f"  {label:<14} {name:<4} {trials[name]:>4} trials in {seconds:6.2f} s", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--io-trials", type=int, default=200)
    parser.add_argument("--cpu-trials", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=50)
    args = parser.parse_args()

    rounds = calibrate_rounds(CPU_TARGET_S)
    arms = {"io": Arm("io", io_subject), "cpu": Arm("cpu", cpu_subject(rounds))}
    trials = {"io": args.io_trials, "cpu": args.cpu_trials}
    alone_ms = min(_timed(rounds) for _ in range(3)) * 1000
    print(f"cpu subject: {rounds} loop rounds, {alone_ms:.0f} ms alone (best of three)")

    figures = measure("local", LOCAL, arms, trials, args)

    started = time.perf_counter()
    with loopback_only():  # a benchmark opens no port off this machine's loopback
        cluster = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 1, "include_dashboard": False, "node_ip_address": LOOPBACK},
        )
        ray.init(address=cluster.address, log_to_driver=False)
    print(f"  (head node up in {time.perf_counter() - started:.1f} s)")
    try:
        with RayExecutor() as executor:
            figures += measure("ray, 1 node", executor, arms, trials, args)
        started = time.perf_counter()
        with loopback_only():
            cluster.add_node(num_cpus=1, node_ip_address=LOOPBACK)
        cluster.wait_for_nodes()
        print(f"  (second node up in {time.perf_counter() - started:.1f} s)")
        with RayExecutor() as executor:
            figures += measure("ray, 2 nodes", executor, arms, trials, args)
    finally:
        ray.shutdown()
        cluster.shutdown()

    local = {f.subject: f.rate for f in figures if f.executor == "local"}
    print(f"\n{'executor':<14} {'subject':<7} {'trials/s':>9} {'vs local':>9}")
    for f in figures:
        print(f"{f.executor:<14} {f.subject:<7} {f.rate:9.1f} {f.rate / local[f.subject]:8.2f}x")
    print(
        f"\nideal io rate at concurrency {args.concurrency}: "
        f"{args.concurrency / IO_WAIT_S:.0f} trials/s; ideal cpu rate per core: "
        f"{1000 / alone_ms:.0f} trials/s"
    )


if __name__ == "__main__":
    main()
