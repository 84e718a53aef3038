"""The compact sealed-id log: what lets `vitrine runs unsealed` skip the full index."""

from __future__ import annotations

from pathlib import Path

from store_toys import toy_definition

from vitrine import (
    Arm,
    SubjectResponse,
    evaluate,
)
from vitrine.store._index import index_path, indexed_run_ids, sealed_ids_path
from vitrine.store._maintenance import inspect_store

DEFINITION = toy_definition("ids-toy")


async def _subject(case):
    return SubjectResponse(answer="yes")


def _seal(store: Path, repetitions: int) -> None:
    evaluate(DEFINITION, Arm("agent", _subject), repetitions=repetitions, store=store)


def test_each_sealed_run_lands_in_the_id_log_and_inspection_agrees(tmp_path):
    _seal(tmp_path, 3)
    ids = indexed_run_ids(tmp_path)
    assert len(ids) == 3
    assert sealed_ids_path(tmp_path).read_text(encoding="utf-8").count("\n") == 3
    health = inspect_store(tmp_path)
    assert health.sealed == 3 and health.leftovers == ()


def test_a_store_sealed_before_the_id_log_gets_it_filled_from_the_index(tmp_path):
    _seal(tmp_path, 2)
    sealed_ids_path(tmp_path).unlink()
    before = indexed_run_ids(tmp_path)  # falls back to the whole index
    assert len(before) == 2
    _seal(tmp_path, 1)
    assert len(indexed_run_ids(tmp_path)) == 3
    assert before < indexed_run_ids(tmp_path)


def test_an_id_log_that_lags_the_index_costs_speed_not_correctness(tmp_path):
    _seal(tmp_path, 2)
    log = sealed_ids_path(tmp_path)
    first = log.read_text(encoding="utf-8").splitlines()[0]
    log.write_text(first + "\n", encoding="utf-8")  # as if killed between the two appends
    assert len(index_path(tmp_path).read_text(encoding="utf-8").splitlines()) == 2
    health = inspect_store(tmp_path)
    assert health.sealed == 2 and health.unsealed == ()
