"""Choosing an executor: the runner records what any executor returns, refusals come first.

None of these start Ray; they pin the seam every executor plugs into.
"""

from __future__ import annotations

import socket

import pytest
from ray_support import ARITHMETIC, definition, row_facts

import vitrine
from vitrine._bench.executors import (
    LOCAL,
    ExecutorError,
    ExecutorUnavailableError,
    current_executor,
    executor_scope,
    use_executor,
)
from vitrine._bench.runner import run_benchmark
from vitrine.store import RunStore


class CountingExecutor:
    """Runs trials locally and counts them, as any other executor would hand them back."""

    def __init__(self, refuse: str | None = None) -> None:
        self.trials = 0
        self.refuse = refuse

    @property
    def name(self) -> str:
        return "counting"

    def admit(self, arm, checks) -> None:
        if arm.arm_id == self.refuse:
            raise ExecutorError(f"arm {arm.arm_id!r} is refused")

    def prepare(self, trials) -> None:
        self.admit(trials.arm, trials.checks)

    async def run(self, trials, case):
        self.trials += 1
        return await trials.observe(case)


async def test_a_run_inside_use_executor_runs_every_trial_there_and_records_the_same_rows():
    benchmark = definition(9)
    counting = CountingExecutor()
    local = await run_benchmark(benchmark, ARITHMETIC)
    with use_executor(counting):
        chosen = await run_benchmark(benchmark, ARITHMETIC)
    assert counting.trials == 9
    assert row_facts(chosen) == row_facts(local)
    assert current_executor() is LOCAL


async def test_an_arm_the_executor_refuses_leaves_no_run_directory(tmp_path):
    with pytest.raises(ExecutorError, match="arm 'arithmetic' is refused"):
        await run_benchmark(
            definition(3),
            ARITHMETIC,
            store=RunStore(tmp_path),
            executor=CountingExecutor(refuse="arithmetic"),
        )
    assert not list(tmp_path.glob("runs/*"))


@pytest.mark.parametrize(
    ("executor", "address", "refusal"),
    [
        ("spark", None, "unknown executor 'spark'"),
        ("local", "127.0.0.1:6379", "a Ray address was given without the ray executor"),
        (None, "127.0.0.1:6379", "ray_address names the cluster for executor='ray'"),
    ],
)
def test_an_executor_choice_that_would_be_ignored_or_is_unknown_is_refused(
    executor, address, refusal
):
    with pytest.raises(ExecutorError, match=refusal), executor_scope(executor, address):
        pass


def test_evaluate_refuses_a_ray_address_where_nothing_listens_as_unavailable(tmp_path):
    pytest.importorskip("ray")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(ExecutorUnavailableError, match="no Ray cluster answers at"):
        vitrine.evaluate(
            definition(2), ARITHMETIC, store=tmp_path, executor="ray", ray_address=address
        )
    assert not list(tmp_path.glob("runs/*"))
