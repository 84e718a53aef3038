"""Trials on a local Ray cluster: the same rows as in-process, one writer, refusals that say why."""

from __future__ import annotations

import threading

import pytest

ray = pytest.importorskip("ray")

import ray_support  # noqa: E402
from ray_support import (  # noqa: E402
    ARITHMETIC,
    CRASH_INPUT,
    RAY_TESTS,
    definition,
    is_loopback,
    listening_sockets,
    row_facts,
    rows_per_trial,
)

import vitrine  # noqa: E402
from vitrine import Arm, SubjectResponse  # noqa: E402
from vitrine._bench.executors import ExecutorError  # noqa: E402
from vitrine._bench.ray_executor import RayExecutor, start_local_ray  # noqa: E402
from vitrine._bench.runner import run_benchmark  # noqa: E402
from vitrine.store import RunStore  # noqa: E402
from vitrine.store._reader import load_run  # noqa: E402

pytestmark = RAY_TESTS


@pytest.fixture(scope="module")
def local_cluster():
    """The one local cluster of the test run: two CPUs, no dashboard, loopback only, started
    as ``--executor ray`` starts it (the other Ray modules start none, or a two-node one)."""
    with pytest.MonkeyPatch.context() as patch:
        # A cluster named in the environment is not "local": only an address given is used.
        patch.setenv("RAY_ADDRESS", ELSEWHERE)
        start_local_ray(num_cpus=2)
    yield
    ray.shutdown()


ELSEWHERE = "127.0.0.1:9"


def test_the_local_cluster_listens_on_loopback_only(local_cluster):
    sockets = listening_sockets()
    assert {"gcs_server", "raylet"} <= {name for _, _, name in sockets}, sockets
    assert [s for s in sockets if not is_loopback(s[0])] == []


def test_a_local_cluster_is_started_here_whatever_ray_address_says(local_cluster):
    gcs = ray.get_runtime_context().gcs_address
    assert gcs != ELSEWHERE and is_loopback(gcs.rpartition(":")[0])


@pytest.fixture
def executor(local_cluster):
    with RayExecutor() as started:
        yield started


def test_a_ray_run_records_the_same_rows_as_a_local_run(executor, tmp_path):
    benchmark = definition(20)
    local = vitrine.evaluate(benchmark, ARITHMETIC, store=tmp_path / "local", executor="local")
    on_ray = vitrine.evaluate(
        benchmark, ARITHMETIC, store=tmp_path / "ray", executor=executor, concurrency=8
    )

    local_run = load_run(local.runs[0].run_dir)
    ray_run = load_run(on_ray.runs[0].run_dir)  # loading verifies the seal
    assert row_facts(ray_run) == row_facts(local_run)
    assert set(rows_per_trial(ray_run).values()) == {1}
    assert len(ray_run.rows) == 20 * 2
    census = ray_run.census
    assert (census.measured, census.not_measured) == (
        local_run.census.measured,
        local_run.census.not_measured,
    )
    assert census.not_measured > 0 and census.measured > 0  # the mix exercised every path
    assert ray_run.verdict == local_run.verdict
    assert dict(ray_run.subject_errors) == dict(local_run.subject_errors)
    assert on_ray.exit_code == local.exit_code


def test_a_subject_that_cannot_be_pickled_is_refused_by_arm_before_any_run(tmp_path):
    lock = threading.Lock()

    async def holds_a_lock(case):
        with lock:
            return SubjectResponse(answer="1")

    store = tmp_path / "store"
    executor = RayExecutor()
    with pytest.raises(ExecutorError, match=r"arm 'locked': its subject cannot be pickled"):
        vitrine.evaluate(
            definition(3),
            [ARITHMETIC, Arm("locked", holds_a_lock)],
            store=store,
            executor=executor,
        )
    assert not list(store.glob("runs/*")), "a refused evaluation wrote a run"
    assert not executor.started, "the refusal came after the executor had started its hosts"


async def test_a_worker_that_dies_leaves_its_trials_not_measured_and_the_run_sealed(
    executor, tmp_path
):
    benchmark = definition(12)
    result = await run_benchmark(
        benchmark,
        Arm("crashing", ray_support.crashing),
        store=RunStore(tmp_path),
        concurrency=12,
        executor=executor,
    )

    stored = load_run(result.run_dir)
    assert set(rows_per_trial(stored)) == {
        (case.id, key) for case in benchmark.cases for key in benchmark.check_keys()
    }
    assert set(rows_per_trial(stored).values()) == {1}
    crashed = f"case-{CRASH_INPUT:03d}"
    assert "worker process died" in stored.subject_errors[crashed]
    lost = {case for case, error in stored.subject_errors.items() if "was lost" in error}
    assert crashed in lost
    # Trials on the surviving host were measured; a single lost try is its trial's error.
    assert stored.census.measured == (12 - len(lost)) * 2
    assert not stored.retries
    assert executor.live_hosts == 1
