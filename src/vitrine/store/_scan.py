"""Which run folders the index does not list, without listing every run folder each time.

Finding a store's unsealed runs and debris needs the names in ``runs/`` that the sealed-id log
does not list. At a hundred thousand runs, listing the folder and parsing the log cost about a
quarter of a second, and between two looks both rarely change. So a scan leaves a checkpoint
(``runs-index/scan.json``): the identity and modification time of ``runs/``, how far the id log
was read, and the names it did not list. A later scan finds ``runs/`` as it was (no folder added,
removed or renamed since: any of those changes its modification time) and reads only the id
lines appended after the checkpoint. A checkpoint is written only when ``runs/`` had not
changed for a second before the scan began, since a coarse clock could give a change made just
after the listing the very same modification time.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from vitrine.store._files import atomic_write_bytes
from vitrine.store._index import indexed_run_id_bytes, run_ids_in, sealed_ids_path

__all__ = ["RunsScan", "checkpoint_path", "scan_runs"]

_VERSION = 1
_QUIET_NS = 1_000_000_000


@dataclass(frozen=True, slots=True)
class RunsScan:
    """What ``runs/`` holds, as bytes names: how many entries, the ones the id log does not
    list (unsealed runs, debris, sealed runs whose id line was lost), and the temporary files
    staged directly in it."""

    total: int
    unlisted: frozenset[bytes]
    staged: tuple[bytes, ...]


def checkpoint_path(root: Path) -> Path:
    return root / "runs-index" / "scan.json"


def scan_runs(root: Path) -> RunsScan:
    """The run folders of the store at ``root`` that its id log does not list."""
    runs = root / "runs"
    try:
        before = runs.stat()  # before the listing: a change during it shows as a new time
    except (FileNotFoundError, NotADirectoryError):
        return RunsScan(0, frozenset(), ())
    ids = sealed_ids_path(root)
    warm = _from_checkpoint(root, before, ids)
    if warm is not None:
        return warm
    try:
        names = set(os.listdir(os.fsencode(runs)))  # noqa: PTH208 - bytes names, no Paths
    except NotADirectoryError:
        return RunsScan(0, frozenset(), ())
    committed = _committed_ids(ids)
    if committed is None:  # no id log yet: the index lists the sealed runs
        return _scan(names, indexed_run_id_bytes(root))
    log, data = committed
    scan = _scan(names, run_ids_in(data))
    if time.time_ns() - before.st_mtime_ns > _QUIET_NS:
        _write_checkpoint(root, before, log, len(data), scan)
    return scan


def _scan(names: set[bytes], indexed: Iterable[bytes]) -> RunsScan:
    """``names`` less the ``indexed`` ones (``names`` is consumed: at a hundred thousand runs a
    second set of them costs as much as the listing)."""
    # Temporary files are the only names that start with ".", which sorts before every digit
    # a run id starts with: when the smallest name does not, no name does, and the filter over
    # a hundred thousand names is skipped.
    dotted = bool(names) and min(names)[:1] <= b"."
    staged = [n for n in names if n[:1] == b"." and n.endswith(b".tmp")] if dotted else []
    total = len(names)
    names.difference_update(indexed)
    return RunsScan(total, frozenset(names), tuple(sorted(staged)))


def _committed_ids(path: Path) -> tuple[os.stat_result, bytes] | None:
    """The id log's identity and its committed lines (a torn tail is left for the next look)."""
    try:
        with path.open("rb") as handle:
            stat = os.fstat(handle.fileno())
            data = handle.read()
    except FileNotFoundError:
        return None
    return stat, data[: data.rfind(b"\n") + 1]


def _from_checkpoint(root: Path, runs: os.stat_result, ids: Path) -> RunsScan | None:
    """The scan the checkpoint holds, brought up to date with the id lines appended since; None
    when ``runs/`` or the id log is not the one it describes."""
    try:
        point = json.loads(checkpoint_path(root).read_bytes())
        if point.get("version") != _VERSION or point.get("runs") != _identity(runs):
            return None
        offset = int(point["ids"]["size"])
        with ids.open("rb") as handle:
            log = os.fstat(handle.fileno())
            if [log.st_ino, log.st_dev] != point["ids"]["file"] or log.st_size < offset:
                return None  # replaced or cut short: its offsets mean nothing now
            handle.seek(offset)
            appended = handle.read()
        unlisted = {os.fsencode(name) for name in point["unlisted"]}
        staged = tuple(os.fsencode(name) for name in point["staged"])
        total = int(point["total"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    appended = appended[: appended.rfind(b"\n") + 1]
    if not appended:
        return RunsScan(total, frozenset(unlisted), staged)
    scan = RunsScan(total, frozenset(unlisted.difference(run_ids_in(appended))), staged)
    _write_checkpoint(root, runs, log, offset + len(appended), scan)
    return scan


def _identity(stat: os.stat_result) -> list[int]:
    return [stat.st_ino, stat.st_dev, stat.st_mtime_ns]


def _write_checkpoint(
    root: Path, runs: os.stat_result, log: os.stat_result, size: int, scan: RunsScan
) -> None:
    point = {
        "version": _VERSION,
        "runs": _identity(runs),
        "ids": {"file": [log.st_ino, log.st_dev], "size": size},
        "total": scan.total,
        "unlisted": sorted(os.fsdecode(name) for name in scan.unlisted),
        "staged": [os.fsdecode(name) for name in scan.staged],
    }
    # Only a shortcut: a store that cannot be written (read-only, full) is scanned in full.
    with contextlib.suppress(OSError):
        atomic_write_bytes(checkpoint_path(root), json.dumps(point).encode(), private=True)
