"""The append-only history of sealed runs: one line per run, per subject and store-wide.

These logs are a convenience for listing and trending; the run directories stay the evidence.
A process killed while appending leaves at most a torn last line, which readers skip and the
next append moves aside.

Sealing and indexing are one recoverable step (:func:`sealing`): before a run's sealed manifest
is written, a marker naming the run is created under ``runs-index/pending/`` and held locked
until the run is indexed. A process killed between the seal and the index leaves the marker;
the next command that opens the store (:func:`recover_index`) finds the sealed run through it
and indexes it, so a sealed run never drops out of every listing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from vitrine.store._files import (
    append_line,
    atomic_write_bytes,
    read_json,
    read_json_lines,
    try_lock,
)
from vitrine.store._layout import RunPaths, is_sealed
from vitrine.store._naming import RUN_ID_PATTERN, resolve_root, sanitize_file_name
from vitrine.store._private import PRIVATE_FILE, private_dirs

__all__ = [
    "RunIndexEntry",
    "history_path",
    "index_path",
    "index_problem",
    "indexed_run_id_bytes",
    "indexed_run_ids",
    "iter_history",
    "iter_index",
    "list_runs",
    "newest_runs",
    "record_sealed_run",
    "recover_index",
    "reindex_sealed",
    "run_ids_in",
    "sealed_ids_path",
    "sealing",
]


@dataclass(frozen=True, slots=True)
class RunIndexEntry:
    run_id: str
    run_dir: str  # relative to the store root, so a store can be moved or shared
    definition: Mapping[str, Any]
    arm: str
    repetition: int
    verdict: str
    census: Mapping[str, int]
    timestamp: str
    content_hash: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RunIndexEntry:
        known = {f.name for f in fields(cls)}
        return cls(
            str(record["run_id"]),
            str(record["run_dir"]),
            dict(record.get("definition") or {}),
            str(record.get("arm") or ""),
            int(record.get("repetition") or 0),
            str(record.get("verdict") or ""),
            dict(record.get("census") or {}),
            str(record.get("timestamp") or ""),
            record.get("content_hash"),
            {k: v for k, v in record.items() if k not in known},
        )

    def to_record(self) -> dict[str, Any]:
        return {
            "schema_version": 1,
            "run_id": self.run_id,
            "run_dir": self.run_dir,
            "definition": dict(self.definition),
            "arm": self.arm,
            "repetition": self.repetition,
            "verdict": self.verdict,
            "census": dict(self.census),
            "timestamp": self.timestamp,
            "content_hash": self.content_hash,
        }


def index_path(root: Path) -> Path:
    return root / "runs-index" / "recent.jsonl"


def sealed_ids_path(root: Path) -> Path:
    """A compact log of sealed run ids beside the index: finding the unsealed runs of a large
    store reads this (about 40 bytes a run) instead of the whole index (about 400)."""
    return root / "runs-index" / "sealed-ids.jsonl"


def pending_dir(root: Path) -> Path:
    """Markers of runs being sealed: one empty file per run, named by its id."""
    return root / "runs-index" / "pending"


def history_path(root: Path, subject: str) -> Path:
    return root / "history" / f"{sanitize_file_name(subject)}.jsonl"


def record_sealed_run(
    paths: RunPaths, manifest: Mapping[str, Any], summary: Mapping[str, Any]
) -> RunIndexEntry:
    root = paths.store_root
    run = manifest["run"]
    entry = RunIndexEntry(
        run_id=paths.run_id,
        run_dir=Path(os.path.relpath(paths.run_dir, root)).as_posix(),
        definition={
            "key": run["definition_key"],
            "version": run["definition_version"],
            "content_hash": run["definition_hash"],
        },
        arm=str(manifest["subject"]),
        repetition=int(run["repetition"]),
        verdict=str(summary["verdict"]),
        census=dict(summary["census"]),
        timestamp=str(run["timestamp"]),
        content_hash=manifest.get("content_hash"),
    )
    record = entry.to_record()
    # Only the store-wide index is synced. A per-arm history line lost to a power cut is still
    # in it (`vitrine runs list --arm` reads the index), a lost id line only makes the unsealed
    # check read that run's manifest, and each run folder stays the evidence; three syncs per
    # sealed run were a quarter of an offline suite's wall time.
    append_line(history_path(root, entry.arm), record, durable=False)
    _start_sealed_ids(root)
    append_line(index_path(root), record)
    append_line(sealed_ids_path(root), {"run_id": entry.run_id}, durable=False)
    return entry


@contextlib.contextmanager
def sealing(paths: RunPaths) -> Iterator[None]:
    """Make sealing and indexing one step: whatever the body seals is indexed even if the process
    dies before it indexes it (the next :func:`recover_index` does). The marker is held locked
    while the body runs, so a recovery never indexes a run whose writer is still sealing it."""
    marker = pending_dir(paths.store_root) / paths.run_id
    private_dirs(marker.parent)
    fd = os.open(marker, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
    try:
        try_lock(fd)  # a fresh marker no one else has reason to hold
        yield
        marker.unlink(missing_ok=True)  # the run is indexed: nothing left to recover
    finally:
        os.close(fd)


# Without advisory locks a marker is trusted to a live writer for this long.
_UNLOCKED_GRACE_S = 60.0


def recover_index(root: str | os.PathLike[str] | None = None) -> list[str]:
    """Index every sealed run a killed process left out of the index; returns their ids.

    Costs one listing of a folder that is empty unless a seal was interrupted, so every command
    that opens a store calls it. A store that cannot be written (read-only, full) is left as it
    is: the runs are still found by ``vitrine runs unsealed`` later.
    """
    where = resolve_root(root)
    try:
        names = sorted(os.listdir(pending_dir(where)))  # noqa: PTH208 - names only
    except OSError:
        return []
    recovered: list[str] = []
    with contextlib.suppress(OSError):
        for name in names:
            if RUN_ID_PATTERN.match(name) and _recover_one(where, name):
                recovered.append(name)
    return recovered


def _recover_one(root: Path, run_id: str) -> bool:
    marker = pending_dir(root) / run_id
    fd = os.open(marker, os.O_RDWR)
    try:
        locked = try_lock(fd)
        if locked is False:
            return False  # its writer is alive and sealing it
        if locked is None and time.time() - os.fstat(fd).st_mtime < _UNLOCKED_GRACE_S:
            return False
        indexed = bool(reindex_sealed(root, [run_id]))
        marker.unlink(missing_ok=True)
        return indexed
    finally:
        os.close(fd)


def reindex_sealed(root: Path, run_ids: Iterable[str]) -> list[str]:
    """Append an index record for each of ``run_ids`` that is sealed but not in the index.

    A run the index already lists (its id line may lag, after a kill between the two appends)
    only gets its id line; an unsealed or unreadable run is left to ``vitrine runs unsealed``.
    """
    wanted = list(run_ids)
    if not wanted:
        return []
    try:
        listed = {i.decode() for i in _RUN_ID.findall(index_path(root).read_bytes())}
    except FileNotFoundError:
        listed = set()
    done: list[str] = []
    for run_id in wanted:
        paths = RunPaths(root / "runs" / run_id)
        if run_id in listed:
            append_line(sealed_ids_path(root), {"run_id": run_id}, durable=False)
            continue
        try:
            manifest = read_json(paths.manifest)
            if not is_sealed(manifest):
                continue
            record_sealed_run(paths, manifest, read_json(paths.summary))
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            continue  # not a sealed run this reader can index; loading it says why
        done.append(run_id)
    return done


def index_problem(root: str | os.PathLike[str] | None, entry: RunIndexEntry) -> str | None:
    """Why ``entry`` cannot be shown as the index states it, or None when the run's own sealed
    manifest agrees: same seal, same verdict. Reads one small file; the rows are verified when
    the run is loaded. An index line edited (say FAIL to PASS) no longer matches its seal."""
    paths = RunPaths(resolve_root(root) / entry.run_dir)
    try:
        manifest = read_json(paths.manifest)
    except FileNotFoundError:
        return "the index lists it, but its run folder or manifest is gone"
    except (OSError, ValueError):
        return "its manifest cannot be read, so the verdict the index lists is not verified"
    run = _mapping(manifest.get("run"))
    if not is_sealed(manifest) or manifest.get("content_hash") != entry.content_hash:
        return "the index line does not name the run's seal: the index or the run was edited"
    if run.get("verdict") != entry.verdict or paths.run_id != entry.run_id:
        return (
            f"the index says {entry.verdict[:20]!r} but the sealed run says "
            f"{str(run.get('verdict'))[:20]!r}: the index line was edited"
        )
    return None


def _start_sealed_ids(root: Path) -> None:
    # A store sealed before the id log existed gets it filled from the index once. A log that
    # lags the index (a process killed between the two appends) costs speed, not correctness:
    # a run missing from it is checked through its own manifest.
    ids = sealed_ids_path(root)
    if ids.exists() or not index_path(root).exists():
        return
    known = sorted(_RUN_ID.findall(index_path(root).read_bytes()))
    lines = b"".join(b'{"run_id": "%s"}\n' % run_id for run_id in known)
    atomic_write_bytes(ids, lines, private=True)


def _entries(path: Path) -> Iterator[RunIndexEntry]:
    # A malformed line anywhere is skipped as well as a torn tail: a damaged index must not hide
    # the runs it still lists, and the runs themselves are verified when they are loaded.
    for record in read_json_lines(path, skip_malformed=True).records:
        try:
            yield RunIndexEntry.from_record(record)
        except (KeyError, TypeError, ValueError, OverflowError):
            # OverflowError: a number such as 1e999 parses as infinity and has no int.
            continue


def iter_index(root: str | os.PathLike[str] | None = None) -> Iterator[RunIndexEntry]:
    """Every sealed run in the store, in the order it was sealed."""
    return _entries(index_path(resolve_root(root)))


def iter_history(
    subject: str, root: str | os.PathLike[str] | None = None
) -> Iterator[RunIndexEntry]:
    """The sealed runs of one subject (arm), in the order they were sealed."""
    return _entries(history_path(resolve_root(root), subject))


def list_runs(
    root: str | os.PathLike[str] | None = None, *, subject: str | None = None
) -> list[RunIndexEntry]:
    """Sealed runs, newest first; only one subject's when ``subject`` is given."""
    recover_index(root)
    entries = iter_index(root) if subject is None else iter_history(subject, root)
    return sorted(entries, key=lambda e: (e.timestamp, e.run_id), reverse=True)


_CHUNK = 1 << 20
_RUN_ID = re.compile(rb'"run_id":\s*"([0-9_-]+)"')


def _lines_newest_first(path: Path) -> Iterator[bytes]:
    """The committed lines of ``path``, last first, read backwards in 1 MB chunks.

    A torn tail (bytes after the last newline) is not a committed record and is skipped.
    """
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        position = handle.seek(0, os.SEEK_END)
        carry = b""
        first = True
        while position > 0:
            step = min(_CHUNK, position)
            position -= step
            handle.seek(position)
            block = handle.read(step) + carry
            lines = block.split(b"\n")
            carry = lines[0]
            tail = lines[1:]
            if first:
                tail = tail[:-1]  # after the final newline: empty, or a torn write
                first = False
            yield from reversed([line for line in tail if line.strip()])
        if carry.strip() and not first:
            yield carry


def newest_runs(
    root: str | os.PathLike[str] | None = None,
    *,
    limit: int | None = None,
    contains: tuple[str, ...] = (),
    where: Callable[[RunIndexEntry], bool] | None = None,
) -> list[RunIndexEntry]:
    """Sealed runs newest first (in sealing order), at most ``limit`` of them.

    Reads the index from its end and stops at ``limit``, so listing recent runs costs the
    same for a store of a hundred runs or a hundred thousand. ``contains`` are exact strings a
    matching line must hold (cheap byte tests that skip most lines before any JSON parsing);
    ``where`` then decides on the parsed entry. Damaged lines are skipped.
    """
    needles = tuple(n.encode() for n in contains)
    out: list[RunIndexEntry] = []
    for raw in _lines_newest_first(index_path(resolve_root(root))):
        if needles and not all(n in raw for n in needles):
            continue
        try:
            record = json.loads(raw)
            entry = RunIndexEntry.from_record(record)
        except (ValueError, RecursionError, KeyError, TypeError, OverflowError):
            continue
        if where is not None and not where(entry):
            continue
        out.append(entry)
        if limit is not None and len(out) >= limit:
            break
    return out


def indexed_run_ids(root: str | os.PathLike[str] | None = None) -> set[str]:
    """The ids of every sealed run the index lists, found without parsing whole records."""
    return {run_id.decode() for run_id in indexed_run_id_bytes(root)}


def indexed_run_id_bytes(root: str | os.PathLike[str] | None = None) -> set[bytes]:
    """:func:`indexed_run_ids` as bytes, to compare with ``os.scandir(bytes)`` names undecoded
    (a store of a hundred thousand runs spends most of an inspection decoding otherwise). Read
    from the compact id log when there is one."""
    where = resolve_root(root)
    for path in (sealed_ids_path(where), index_path(where)):
        try:
            return set(run_ids_in(path.read_bytes()))
        except FileNotFoundError:
            continue
    return set()


def run_ids_in(data: bytes) -> list[bytes]:
    """The run ids that lines of the index or the id log name, found without parsing them."""
    return _RUN_ID.findall(data)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}
