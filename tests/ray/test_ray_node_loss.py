"""A node that dies mid-run: its trials are retried elsewhere and say so, none lost or doubled."""

from __future__ import annotations

import asyncio

import pytest

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

from ray_support import (  # noqa: E402
    RAY_TESTS,
    definition,
    is_loopback,
    listening_sockets,
    rows_per_trial,
    sleeper,
)

from vitrine import Arm  # noqa: E402
from vitrine._bench.ray_executor import LOOPBACK, RayExecutor, loopback_only  # noqa: E402
from vitrine._bench.retry import RetryPolicy  # noqa: E402
from vitrine._bench.runner import run_benchmark  # noqa: E402
from vitrine.store import RunStore  # noqa: E402
from vitrine.store._reader import load_run  # noqa: E402

pytestmark = RAY_TESTS

TRIAL_S = 3.0
# Declare a node dead after about a second without a heartbeat, not the default fifteen.
FAST_HEALTH_CHECKS = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 2,
}


@pytest.fixture(scope="module")
def two_nodes():
    """A head and a worker node, one CPU each, so each holds exactly one trial host."""
    with loopback_only():  # both nodes on this machine's loopback, as a local run's is
        cluster = cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 1,
                "include_dashboard": False,
                "node_ip_address": LOOPBACK,
                "_system_config": FAST_HEALTH_CHECKS,
            },
        )
        worker = cluster.add_node(num_cpus=1, node_ip_address=LOOPBACK)
    cluster.wait_for_nodes()
    yield cluster, worker
    ray.shutdown()
    cluster.shutdown()


async def test_a_killed_node_leaves_every_trial_exactly_once_retried_and_recorded(
    two_nodes, tmp_path
):
    cluster, worker = two_nodes
    benchmark = definition(8)

    async def kill_the_worker_node():
        await asyncio.sleep(TRIAL_S / 3)
        await asyncio.to_thread(cluster.remove_node, worker)

    with RayExecutor(cluster.address) as executor:
        assert executor.live_hosts == 2
        assert [s for s in listening_sockets() if not is_loopback(s[0])] == []
        killer = asyncio.create_task(kill_the_worker_node())
        result = await run_benchmark(
            benchmark,
            Arm("sleeper", sleeper(TRIAL_S)),
            store=RunStore(tmp_path),
            concurrency=8,
            retry=RetryPolicy(retries=1, backoff_s=0.0, max_backoff_s=0.0),
            executor=executor,
        )
        await killer
        assert executor.live_hosts == 1

    stored = load_run(result.run_dir)  # sealed, and the seal verifies
    assert set(rows_per_trial(stored)) == {
        (case.id, key) for case in benchmark.cases for key in benchmark.check_keys()
    }
    assert set(rows_per_trial(stored).values()) == {1}
    # The trials that were on the dead node were tried again on the head, and say so.
    assert 0 < len(stored.retries) < len(benchmark.cases)
    for attempts in stored.retries.values():
        assert len(attempts) == 1
        assert attempts[0].attempt == 1
        assert attempts[0].category == "ActorDiedError"
        assert "was lost" in attempts[0].error
    # Everything was measured in the end: the retry policy allowed one more try.
    assert stored.census.not_measured == 0
    assert stored.census.measured == len(benchmark.cases) * 2
