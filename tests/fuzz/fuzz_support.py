"""The battery's budget and sandbox types (the fixtures that build them are in conftest.py)."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

BUDGET_S = 60.0


@dataclass(frozen=True)
class Budget:
    deadline: float

    @property
    def spent(self) -> bool:
        return time.monotonic() > self.deadline


@dataclass(frozen=True)
class Sandbox:
    """Folders the generated arguments point into, and the folders that must stay empty."""

    plain_file: Path  # a regular file, where a directory is expected
    folder: Path  # a directory, where a file is expected
    missing: Path  # a path under a folder that does not exist
    watched: tuple[Path, ...]  # the working directory, home and store: nothing may appear

    def written(self) -> list[Path]:
        return [path for folder in self.watched for path in folder.rglob("*")]

    def clear(self) -> None:
        for path in self.written():
            if path.parent in self.watched:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
