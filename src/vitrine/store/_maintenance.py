"""What a killed process leaves in a store, and how to find and clear it.

A run directory is evidence only once it is sealed. A process killed with ``kill -9`` can leave
these remains: an unsealed run (a manifest without a seal, trials possibly finished: resumable,
never deleted here), an abandoned run (unsealed, and a later run of the same definition and arm
was sealed since: nothing will resume it; :func:`sweep` with ``abandoned=True`` sets it aside
under ``abandoned/`` with its reason, never deleting it), a run folder without a manifest
(killed before the manifest landed: it holds nothing a reader could trust), and temporary files
from an atomic write that never reached its rename. The last two are debris; :func:`sweep`
removes them once they are old enough that no live writer can still own them. A sealed run the
index does not list (killed between the seal and the index) is indexed on the way.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vitrine.errors import InvalidArgumentError
from vitrine.store._errors import RunStoreError
from vitrine.store._files import atomic_write_json
from vitrine.store._index import (
    iter_index,
    pending_dir,
    recover_index,
    reindex_sealed,
)
from vitrine.store._layout import RunPaths, is_sealed
from vitrine.store._naming import RUN_ID_PATTERN
from vitrine.store._private import PRIVATE_DIR
from vitrine.store._scan import scan_runs

RUN_ID_BYTES = re.compile(RUN_ID_PATTERN.pattern.encode())

__all__ = ["Leftover", "StoreHealth", "abandoned_dir", "inspect_store", "sweep"]

# A writer creates the manifest within milliseconds of the folder and renames a temporary file
# within seconds of creating it; anything older than this has no live owner.
DEFAULT_GRACE_S = 600.0


@dataclass(frozen=True, slots=True)
class Leftover:
    """One thing a killed process left behind, relative to the store root."""

    path: str
    # "unsealed-run" | "abandoned-run" | "folder-without-manifest" | "temporary-file"
    kind: str
    age_s: float
    reason: str = ""  # why an abandoned run will not be resumed

    @property
    def debris(self) -> bool:
        """True when nothing in it can be resumed or read as evidence."""
        return self.kind not in {"unsealed-run", "abandoned-run"}


@dataclass(frozen=True, slots=True)
class StoreHealth:
    sealed: int
    leftovers: tuple[Leftover, ...]
    reindexed: tuple[str, ...] = ()  # sealed runs the index lacked, indexed by this inspection

    @property
    def unsealed(self) -> tuple[Leftover, ...]:
        return tuple(x for x in self.leftovers if x.kind == "unsealed-run")

    @property
    def abandoned(self) -> tuple[Leftover, ...]:
        return tuple(x for x in self.leftovers if x.kind == "abandoned-run")

    @property
    def debris(self) -> tuple[Leftover, ...]:
        return tuple(x for x in self.leftovers if x.debris)


def inspect_store(root: Path, *, now: float | None = None) -> StoreHealth:
    """Classify every run folder and find stray temporary files; reads manifests only, and
    indexes a sealed run the index lacks."""

    moment = time.time() if now is None else now
    reindexed = recover_index(root)
    # A run the index lists was sealed; only the others need their manifest read, so a store
    # of a hundred thousand runs is inspected without opening a hundred thousand files. Names
    # stay bytes until they are candidates: building a Path per sealed run dominated the time.
    runs = root / "runs"
    scan = scan_runs(root)
    unlisted = scan.unlisted
    staged = [runs / os.fsdecode(name) for name in scan.staged]
    sealed = scan.total - len(unlisted)
    candidates = sorted(
        name.decode()
        for name in unlisted
        if RUN_ID_BYTES.match(name) and (runs / name.decode()).is_dir()
    )
    found: list[Leftover] = []
    unindexed: list[str] = []
    open_runs: list[tuple[Path, float, Mapping[str, Any]]] = []
    for name in candidates:
        run_dir = runs / name
        paths = RunPaths(run_dir)
        age = moment - _mtime(run_dir)
        if not paths.manifest.exists():
            found.append(Leftover(_relative(run_dir, root), "folder-without-manifest", age))
            continue
        # Imported only for a run that has one: the reader's models are most of the cost of a
        # clean store's inspection otherwise.
        from vitrine.store._reader import read_manifest  # noqa: PLC0415

        try:
            manifest = read_manifest(paths)
        except RunStoreError:
            found.append(Leftover(_relative(run_dir, root), "unsealed-run", age))
            continue
        if is_sealed(manifest):
            sealed += 1
            if not (pending_dir(root) / name).exists():  # else its writer is indexing it now
                unindexed.append(name)
        else:
            open_runs.append((run_dir, age, manifest))
    if unindexed:
        # Sealed before the index line landed; an index written by an older vitrine could
        # lose it this way. reindex_sealed skips those the index already lists.
        reindexed = [*reindexed, *reindex_sealed(root, unindexed)]
    found.extend(_classify_unsealed(root, open_runs))
    unsealed = [runs / name for name in candidates]
    for tmp in (*staged, *_temporary_files(root, unsealed=unsealed)):
        found.append(Leftover(_relative(tmp, root), "temporary-file", moment - _mtime(tmp)))
    return StoreHealth(sealed, tuple(found), tuple(reindexed))


def _classify_unsealed(
    root: Path, open_runs: list[tuple[Path, float, Mapping[str, Any]]]
) -> Iterator[Leftover]:
    """An unsealed run is resumable unless a later run of the same definition and arm was
    sealed since it started: then the command that left it has been run again, and the
    leftover is abandoned (`vitrine --all` reruns its production checks and live plans rather
    than resuming them, and they have no ``--benchmark`` to resume them with)."""
    if not open_runs:
        return
    newest: dict[tuple[str, str], tuple[str, str]] = {}
    for entry in iter_index(root):
        key = (str(entry.definition.get("content_hash")), entry.arm)
        newest[key] = max(newest.get(key, ("", "")), (entry.timestamp, entry.run_id))
    for run_dir, age, manifest in open_runs:
        run = _mapping(manifest.get("run"))
        key = (str(run.get("definition_hash")), str(manifest.get("arm", manifest.get("subject"))))
        later = newest.get(key)
        path = _relative(run_dir, root)
        if later is not None and later[0] > str(run.get("timestamp") or ""):
            reason = (
                f"superseded: run {later[1]} of the same definition and arm was sealed after "
                "it started"
            )
            yield Leftover(path, "abandoned-run", age, reason)
        else:
            yield Leftover(path, "unsealed-run", age)


def sweep(
    root: Path,
    *,
    grace_s: float = DEFAULT_GRACE_S,
    now: float | None = None,
    abandoned: bool = False,
    abandon: Sequence[str] = (),
) -> list[str]:
    """Remove debris older than ``grace_s``; unsealed runs are kept (they can be resumed).

    With ``abandoned``, abandoned runs are also moved out of ``runs/`` into ``abandoned/``, each
    with an ``abandoned.json`` that says why: set aside, never deleted. ``abandon`` names
    unsealed runs to set aside the same way, for those no benchmark will resume (a killed
    production check or live plan that is not run again); a name that is not an unsealed run
    of this store raises :class:`ValueError` before anything is moved. Returns the removed or
    moved paths, relative to the root.
    """
    health = inspect_store(root, now=now)
    leftover = {Path(item.path).name: item for item in (*health.unsealed, *health.abandoned)}
    unknown = [name for name in abandon if name not in leftover]
    if unknown:
        raise InvalidArgumentError(
            f"{unknown[0][:60]!r} is not an unsealed run of this store "
            "(`vitrine runs unsealed` lists them)"
        )
    named = [
        Leftover(item.path, "abandoned-run", item.age_s, _BY_HAND)
        for item in (leftover[name] for name in dict.fromkeys(abandon))
    ]
    chosen = {item.path: item for item in (*(health.abandoned if abandoned else ()), *named)}
    removed = []
    for item in (*health.debris, *chosen.values()):
        if item.age_s < grace_s:
            continue
        target = root / item.path
        if item.kind == "temporary-file":
            target.unlink(missing_ok=True)
        elif item.kind == "abandoned-run":
            _set_aside(root, target, item.reason)
        else:
            shutil.rmtree(target, ignore_errors=True)
        removed.append(item.path)
    return removed


_BY_HAND = "set aside by hand (`vitrine runs sweep --abandon`): no benchmark will resume it"


def abandoned_dir(root: Path) -> Path:
    return root / "abandoned"


def _set_aside(root: Path, run_dir: Path, reason: str) -> None:
    atomic_write_json(
        run_dir / "abandoned.json",
        {"reason": reason, "set_aside_at": datetime.now(UTC).isoformat(timespec="seconds")},
        private=True,
    )
    abandoned_dir(root).mkdir(mode=PRIVATE_DIR, exist_ok=True)
    run_dir.replace(abandoned_dir(root) / run_dir.name)


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


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}
