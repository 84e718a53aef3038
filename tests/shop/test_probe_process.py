"""The invariants probes in a forked child: the same facts, the parent's plants, its errors."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import pytest

from vitrine_shop.evals import probe_guard, probe_process
from vitrine_shop.evals.probe_process import ProbeProcessError, run_probes

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="probes fork on Linux only"
)


@pytest.fixture(autouse=True)
def _no_model_in_this_process(monkeypatch):
    # Another test in this worker may have loaded the embedding model, which keeps the probes
    # inline (see the last tests): these tests are about the forked child.
    monkeypatch.setattr(probe_process, "model_in_use", lambda: False)


PLANTED = {"value": "healthy"}


async def _reads_the_plant(services: Any) -> dict[str, Any]:
    return {"calls": 1, "seen": PLANTED["value"], "pid": os.getpid(), "services": services}


async def _suite_raises(services: Any) -> dict[str, Any]:
    raise KeyError("the suite's own lookup")


async def _dies(services: Any) -> dict[str, Any]:
    os._exit(7)


def test_the_probes_run_in_another_process_and_hand_back_their_facts():
    facts = asyncio.run(run_probes({"a": _reads_the_plant, "b": _reads_the_plant}, "svc"))
    assert set(facts) == {"a", "b"}
    assert facts["a"]["pid"] != os.getpid()
    assert facts["a"]["services"] == "svc" and facts["a"]["seen"] == "healthy"


def test_a_plant_made_in_the_parent_is_planted_in_the_child(monkeypatch):
    monkeypatch.setitem(PLANTED, "value", "mutant")
    facts = asyncio.run(run_probes({"a": _reads_the_plant}, None))
    assert facts["a"]["seen"] == "mutant"


def test_an_exception_from_the_suite_in_the_child_propagates_with_where_it_was_raised(
    monkeypatch,
):
    # As if raised in the suite's own code (this test file is neither the suite nor the shop).
    monkeypatch.setattr(probe_guard, "raised_by_suite", lambda exc: True)
    with pytest.raises(KeyError) as raised:
        asyncio.run(run_probes({"a": _suite_raises}, None))
    assert any("probes' process" in note for note in raised.value.__notes__)
    assert any("_suite_raises" in note for note in raised.value.__notes__)


def test_a_child_that_dies_without_its_facts_is_an_error_not_an_empty_result():
    with pytest.raises(ProbeProcessError, match="exit 7"):
        asyncio.run(run_probes({"a": _dies}, None))


def test_the_shop_raising_in_the_child_is_still_one_measured_violation():
    facts = asyncio.run(run_probes({"a": _suite_raises}, None))
    assert facts["a"]["rules"] == {"raised": 1}


async def _hangs(services: Any) -> dict[str, Any]:
    await asyncio.sleep(3600)
    return {}


def test_a_cancelled_wait_kills_the_child_and_returns():
    async def main() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(run_probes({"a": _hangs}, None), timeout=0.5)

    asyncio.run(asyncio.wait_for(main(), timeout=30))


def test_without_fork_the_probes_run_inline_with_the_same_facts(monkeypatch):
    monkeypatch.setattr(probe_process, "can_fork", lambda: False)
    facts = asyncio.run(run_probes({"a": _reads_the_plant}, None))
    assert facts["a"]["pid"] == os.getpid()


def test_with_the_embedding_model_loaded_the_probes_run_inline(monkeypatch):
    # A model's own threads do not survive a fork: a process that holds it keeps the probes.
    from vitrine_shop import embeddings

    monkeypatch.setattr(probe_process, "model_in_use", embeddings.model_in_use)
    monkeypatch.setitem(embeddings._loaded, "a model", object())
    assert embeddings.model_in_use() and not probe_process.can_fork()
    facts = asyncio.run(run_probes({"a": _reads_the_plant}, None))
    assert facts["a"]["pid"] == os.getpid() and facts["a"]["seen"] == "healthy"


def test_a_lock_another_thread_held_at_the_fork_is_free_in_the_child():
    import threading

    from vitrine_shop import embeddings

    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with embeddings._memo_lock:
            held.set()
            done.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: the holder thread is not here, so its lock must be new
            os._exit(0 if embeddings._memo_lock.acquire(timeout=2) else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        done.set()
        holder.join()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
