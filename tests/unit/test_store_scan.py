"""`vitrine runs unsealed` on a store that has not changed reads a checkpoint, not every run.

The checkpoint (runs-index/scan.json) is trusted only for the runs/ folder it describes: a
folder added since, a run sealed since, or a replaced id log is seen as it would be by a full
scan, and no checkpoint is left while runs/ is still changing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from store_toys import toy_definition

from vitrine import Arm, SubjectResponse, evaluate
from vitrine.store._files import append_line, atomic_write_bytes
from vitrine.store._index import sealed_ids_path
from vitrine.store._maintenance import inspect_store
from vitrine.store._scan import checkpoint_path, scan_runs

UNSEALED = "2026-02-01_00-00-00_99999990"


async def _answers(case):
    return SubjectResponse(answer="yes")


def _quiet(root: Path) -> None:
    """Date runs/ a few seconds back, as a store nobody is writing to is."""
    past = time.time_ns() - 5_000_000_000
    os.utime(root / "runs", ns=(past, past))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    evaluate(toy_definition("scan-toy"), Arm("agent", _answers), store=tmp_path, repetitions=2)
    (tmp_path / "runs" / UNSEALED).mkdir()  # killed before its manifest landed: debris
    _quiet(tmp_path)
    return tmp_path


def _forbid_listing(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, any listing the scan makes of a runs/ folder fails the test."""

    listed = os.listdir

    def listdir(path="."):
        if Path(os.fsdecode(path)).name == "runs":
            raise AssertionError(f"runs/ was listed: {os.fsdecode(path)}")
        return listed(path)

    monkeypatch.setattr(os, "listdir", listdir)


def _summary(root: Path) -> tuple[int, list[str]]:
    health = inspect_store(root)
    return health.sealed, sorted(f"{item.kind} {item.path}" for item in health.leftovers)


def test_an_unchanged_store_is_inspected_without_listing_its_runs(store, monkeypatch):
    cold = _summary(store)
    assert cold == (2, [f"folder-without-manifest runs/{UNSEALED}"])
    assert checkpoint_path(store).is_file()
    _forbid_listing(monkeypatch)
    assert _summary(store) == cold


def test_a_folder_added_after_the_checkpoint_is_found(store):
    scan_runs(store)
    later = "2026-02-02_00-00-00_99999991"
    (store / "runs" / later).mkdir()
    assert later.encode() in scan_runs(store).unlisted


def test_a_run_sealed_after_the_checkpoint_is_read_from_the_appended_ids(store, monkeypatch):
    assert UNSEALED.encode() in scan_runs(store).unlisted
    _forbid_listing(monkeypatch)
    append_line(sealed_ids_path(store), {"run_id": UNSEALED}, durable=False)
    scan = scan_runs(store)
    assert UNSEALED.encode() not in scan.unlisted
    assert scan.total == 3


def test_a_replaced_id_log_is_not_read_from_an_old_offset(store):
    scan_runs(store)
    ids = sealed_ids_path(store)
    # Rewritten whole (as a repair would), the new line first: the old offset now points into
    # the middle of another line.
    atomic_write_bytes(ids, b'{"run_id": "%s"}\n' % UNSEALED.encode() + ids.read_bytes())
    assert UNSEALED.encode() not in scan_runs(store).unlisted


def test_no_checkpoint_is_left_while_runs_is_still_changing(tmp_path):
    evaluate(toy_definition("scan-toy"), Arm("agent", _answers), store=tmp_path)
    scan_runs(tmp_path)  # runs/ changed a moment ago: a coarse clock could hide the next one
    assert not checkpoint_path(tmp_path).exists()
    _quiet(tmp_path)
    scan_runs(tmp_path)
    assert checkpoint_path(tmp_path).is_file()
