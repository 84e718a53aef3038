"""The append-only history of sealed runs: one line per run, per subject and store-wide.

These logs are a convenience for listing and trending; the run directories stay the evidence.
A process killed while appending leaves at most a torn last line, which readers skip.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from vitrine.store.files import append_line, atomic_write_bytes, read_json_lines
from vitrine.store.layout import RunPaths
from vitrine.store.naming import resolve_root, sanitize_file_name

__all__ = [
    "RunIndexEntry",
    "history_path",
    "index_path",
    "indexed_run_id_bytes",
    "indexed_run_ids",
    "iter_history",
    "iter_index",
    "list_runs",
    "newest_runs",
    "record_sealed_run",
    "sealed_ids_path",
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


def _start_sealed_ids(root: Path) -> None:
    # A store sealed before the id log existed gets it filled from the index once. A log that
    # lags the index (a process killed between the two appends) costs speed, not correctness:
    # a run missing from it is checked through its own manifest.
    ids = sealed_ids_path(root)
    if ids.exists() or not index_path(root).exists():
        return
    known = sorted(_RUN_ID.findall(index_path(root).read_bytes()))
    atomic_write_bytes(ids, b"".join(b'{"run_id": "%s"}\n' % run_id for run_id in known))


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
            return set(_RUN_ID.findall(path.read_bytes()))
        except FileNotFoundError:
            continue
    return set()
