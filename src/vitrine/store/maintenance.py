"""What a killed process leaves in a store, and how to find and clear it.

A run directory is evidence only once it is sealed. A process killed with ``kill -9`` can leave
three kinds of remains: an unsealed run (a manifest without a seal, trials possibly finished:
resumable, never deleted here), a run folder without a manifest (killed before the manifest
landed: it holds nothing a reader could trust), and temporary files from an atomic write that
never reached its rename. The last two are debris; :func:`sweep` removes them once they are old
enough that no live writer can still own them.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from vitrine.store.layout import RunPaths
from vitrine.store.naming import RUN_ID_PATTERN

__all__ = ["Leftover", "StoreHealth", "inspect_store", "sweep"]

# A writer creates the manifest within milliseconds of the folder and renames a temporary file
# within seconds of creating it; anything older than this has no live owner.
DEFAULT_GRACE_S = 600.0


@dataclass(frozen=True, slots=True)
class Leftover:
    """One thing a killed process left behind, relative to the store root."""

    path: str
    kind: str  # "unsealed-run" | "folder-without-manifest" | "temporary-file"
    age_s: float

    @property
    def debris(self) -> bool:
        """True when nothing in it can be resumed or read as evidence."""
        return self.kind != "unsealed-run"


@dataclass(frozen=True, slots=True)
class StoreHealth:
    sealed: int
    leftovers: tuple[Leftover, ...]

    @property
    def unsealed(self) -> tuple[Leftover, ...]:
        return tuple(x for x in self.leftovers if x.kind == "unsealed-run")

    @property
    def debris(self) -> tuple[Leftover, ...]:
        return tuple(x for x in self.leftovers if x.debris)


def inspect_store(root: Path, *, now: float | None = None) -> StoreHealth:
    """Classify every run folder and find stray temporary files; reads manifests only."""
    from vitrine.store.errors import RunStoreError
    from vitrine.store.index import indexed_run_ids
    from vitrine.store.reader import is_sealed, read_manifest

    moment = time.time() if now is None else now
    # A run the index lists was sealed; only the others need their manifest read, so a store
    # of a hundred thousand runs is inspected without opening a hundred thousand files.
    indexed = indexed_run_ids(root)
    sealed = 0
    found: list[Leftover] = []
    runs = root / "runs"
    for run_dir in _children(runs):
        if not RUN_ID_PATTERN.match(run_dir.name):
            continue
        if run_dir.name in indexed:
            sealed += 1
            continue
        paths = RunPaths(run_dir)
        age = moment - _mtime(run_dir)
        if not paths.manifest.exists():
            found.append(Leftover(_relative(run_dir, root), "folder-without-manifest", age))
            continue
        try:
            manifest = read_manifest(paths)
        except RunStoreError:
            found.append(Leftover(_relative(run_dir, root), "unsealed-run", age))
            continue
        if is_sealed(manifest):
            sealed += 1
        else:
            found.append(Leftover(_relative(run_dir, root), "unsealed-run", age))
    for tmp in _temporary_files(root, sealed=indexed):
        found.append(Leftover(_relative(tmp, root), "temporary-file", moment - _mtime(tmp)))
    return StoreHealth(sealed, tuple(found))


def sweep(root: Path, *, grace_s: float = DEFAULT_GRACE_S, now: float | None = None) -> list[str]:
    """Remove debris older than ``grace_s``; unsealed runs are kept (they can be resumed).

    Returns the removed paths, relative to the root.
    """
    removed = []
    for item in inspect_store(root, now=now).debris:
        if item.age_s < grace_s:
            continue
        target = root / item.path
        if item.kind == "temporary-file":
            target.unlink(missing_ok=True)
        else:
            shutil.rmtree(target, ignore_errors=True)
        removed.append(item.path)
    return removed


def _children(folder: Path) -> Iterator[Path]:
    try:
        with os.scandir(folder) as entries:
            yield from (Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return


def _temporary_files(root: Path, *, sealed: set[str]) -> Iterator[Path]:
    # Atomic writes stage to ".<name>.<random>.tmp" beside their target. A sealed run's folder
    # is skipped: its last write (the seal) finished, so nothing is staged there.
    if not root.is_dir():
        return
    runs = root / "runs"
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == runs:
            dirnames[:] = [d for d in dirnames if d not in sealed]
        for name in filenames:
            if name.startswith(".") and name.endswith(".tmp"):
                yield here / name


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()
