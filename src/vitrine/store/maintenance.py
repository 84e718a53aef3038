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
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from vitrine.store.errors import RunStoreError
from vitrine.store.index import indexed_run_id_bytes
from vitrine.store.layout import RunPaths
from vitrine.store.naming import RUN_ID_PATTERN
from vitrine.store.reader import is_sealed, read_manifest

RUN_ID_BYTES = re.compile(RUN_ID_PATTERN.pattern.encode())

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

    moment = time.time() if now is None else now
    # A run the index lists was sealed; only the others need their manifest read, so a store
    # of a hundred thousand runs is inspected without opening a hundred thousand files. Names
    # stay bytes until they are candidates: building a Path per sealed run dominated the time.
    indexed = indexed_run_id_bytes(root)
    runs = root / "runs"
    names, staged = _list_runs_folder(runs)
    unlisted = names.difference(indexed)
    sealed = len(names) - len(unlisted)
    candidates = sorted(
        name.decode()
        for name in unlisted
        if RUN_ID_BYTES.match(name) and (runs / name.decode()).is_dir()
    )
    found: list[Leftover] = []
    for name in candidates:
        run_dir = runs / name
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
    unsealed = [runs / name for name in candidates]
    for tmp in (*staged, *_temporary_files(root, unsealed=unsealed)):
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


def _list_runs_folder(runs: Path) -> tuple[set[bytes], list[Path]]:
    """The names in the runs folder and the temporary files staged directly in it, in one
    listing. ``listdir`` on bytes builds no entry objects: at a hundred thousand runs that is
    most of the cost. A name is only known to be a folder once it is a candidate."""
    try:
        names = set(os.listdir(os.fsencode(runs)))  # noqa: PTH208 - bytes names, no Paths
    except (FileNotFoundError, NotADirectoryError):
        return set(), []
    staged = [runs / os.fsdecode(name) for name in names if _is_temporary(os.fsdecode(name))]
    return names, staged


def _temporary_files(root: Path, *, unsealed: list[Path]) -> Iterator[Path]:
    # Atomic writes stage to ".<name>.<random>.tmp" beside their target. Of the run folders only
    # those the index does not list are searched: a sealed run's last write (the seal) finished,
    # so nothing is staged there.
    for top in (root, *unsealed):
        for dirpath, dirnames, filenames in os.walk(top):
            if top == root and Path(dirpath) == root:
                dirnames[:] = [d for d in dirnames if d != "runs"]
            yield from (Path(dirpath) / name for name in filenames if _is_temporary(name))


def _is_temporary(name: str) -> bool:
    return name.startswith(".") and name.endswith(".tmp")


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()
