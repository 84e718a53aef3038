"""The fuzz battery's sandbox and time budget.

Every example runs in-process with its working directory, home and run store in temporary
folders, so anything a command wrote would be found there (and nothing may be). The battery
shares one budget: once it is spent, the remaining examples return at once, which keeps the
whole battery within :data:`BUDGET_S` however slow the machine.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from fuzz_support import BUDGET_S, Budget, Sandbox


@pytest.fixture(scope="session")
def fuzz_budget() -> Budget:
    return Budget(time.monotonic() + BUDGET_S)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    root = tmp_path_factory.mktemp("fuzz")
    inputs = root / "inputs"
    (inputs / "folder").mkdir(parents=True)
    (inputs / "plain.txt").write_text("not a directory\n")
    watched = tuple(root / name for name in ("work", "home", "store"))
    for folder in watched:
        folder.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(watched[0])
        patch.setenv("HOME", str(watched[1]))
        patch.setenv("VITRINE_HOME", str(watched[2]))
        patch.setenv("NO_COLOR", "1")
        yield Sandbox(
            plain_file=inputs / "plain.txt",
            folder=inputs / "folder",
            missing=inputs / "absent" / "deeper" / "file.json",
            watched=watched,
        )
