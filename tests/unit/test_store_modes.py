"""A store vitrine creates is its owner's alone: folders 0700, run data 0600, whatever the umask.

Under the common umask 022 a folder made with the default mode is readable by every local
user; the prompts, answers and receipts in a store must not be.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from store_toys import toy_definition

from vitrine import Arm, SubjectResponse, evaluate
from vitrine.redteam._runs import new_run_dir
from vitrine.reports._templates import _template_cache_dir
from vitrine.store._receipts import ReceiptStore, new_session_id


async def _answers(case):
    return SubjectResponse(answer="yes")


@pytest.fixture(autouse=True)
def everyone_may_read() -> Iterator[None]:
    previous = os.umask(0o022)  # what most systems give a process
    yield
    os.umask(previous)


def _modes(top: Path) -> dict[str, int]:
    """The permission bits of ``top`` and of everything under it, by relative path."""
    found = {".": stat.S_IMODE(top.stat().st_mode)}
    for path in top.rglob("*"):
        found[path.relative_to(top).as_posix()] = stat.S_IMODE(path.lstat().st_mode)
    return found


def _assert_private(top: Path) -> None:
    modes = _modes(top)
    folders = {p: m for p, m in modes.items() if (top / p).is_dir()}
    files = {p: m for p, m in modes.items() if p not in folders}
    assert files, "nothing was written"
    assert {p: oct(m) for p, m in folders.items() if m != 0o700} == {}
    assert {p: oct(m) for p, m in files.items() if m != 0o600} == {}


def test_a_new_store_and_every_run_in_it_are_owner_only(tmp_path: Path):
    root = tmp_path / "store"
    evaluate(toy_definition("modes-toy"), Arm("agent", _answers), store=root)
    assert {"runs", "runs-index", "history"} <= {p.name for p in root.iterdir()}
    _assert_private(root)


def test_receipts_and_the_store_root_they_create_are_owner_only(tmp_path: Path):
    root = tmp_path / "store"
    ReceiptStore(root / "live").write(new_session_id(), {"plan": "eval01", "exit_code": 4})
    _assert_private(root)


def test_a_red_team_run_folder_creates_the_store_owner_only(tmp_path: Path):
    run_dir = new_run_dir(tmp_path / "store")
    assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
    assert _modes(tmp_path / "store")["."] == 0o700
    assert _modes(tmp_path / "store")["reports"] == 0o700


def test_the_cache_folders_vitrine_creates_are_owner_only(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("VITRINE_CACHE_DIR", str(tmp_path / "caches" / "vitrine"))
    directory = _template_cache_dir()
    assert directory == tmp_path / "caches" / "vitrine" / "templates"
    for folder in (directory, directory.parent, directory.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_a_folder_that_already_exists_keeps_the_mode_its_owner_gave_it(tmp_path: Path):
    root = tmp_path / "shared"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)  # noqa: PTH101 - the umask may have trimmed it
    evaluate(toy_definition("modes-toy"), Arm("agent", _answers), store=root)
    assert stat.S_IMODE(root.stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "runs").stat().st_mode) == 0o700
