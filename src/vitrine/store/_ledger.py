"""Chained append-only ledgers whose last line is sealed too.

A ledger is a JSON-lines file where every record names the hash of the record before it (the
first names an origin: the seal of the document the ledger belongs to), so a record removed,
edited or inserted in the middle breaks the chain. The chain alone cannot protect the last
record, which has no successor; a head file beside the ledger (``<name>.head.json``) therefore
holds the number of records and the hash of the last one, rewritten atomically after each
append. Editing or removing the last record no longer matches the head.

Appending is one step that either lands whole or leaves the ledger as it was: the record is
appended, then whatever the caller must write with it (a re-rendered page) is written, then the
head is advanced. A failure before the head moves cuts the record back off; a process killed
before the head moves leaves a record the head does not cover, which readers ignore (it was
never confirmed to its caller) and the next append removes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vitrine.errors import LedgerError
from vitrine.store._files import append_line, atomic_write_json, exclusive_lock, read_json
from vitrine.store._private import private_dirs

__all__ = ["Ledger", "LedgerError", "line_hash"]


def line_hash(raw: bytes) -> str:
    return "sha256:" + hashlib.sha256(raw.rstrip(b"\n")).hexdigest()


@dataclass(frozen=True, slots=True)
class _Entry:
    record: dict[str, Any]
    raw: bytes
    end: int  # byte offset just after this record's line


@dataclass(frozen=True, slots=True)
class Ledger:
    """``path``: the JSON-lines file; ``origin``: the hash its first record chains to."""

    path: Path
    origin: str

    @property
    def head_path(self) -> Path:
        return self.path.with_name(f"{self.path.stem}.head.json")

    def read(self, *, require_head: bool) -> list[dict[str, Any]]:
        """The confirmed records, verified; raises :class:`LedgerError` when they do not.

        ``require_head``: the ledger was written by a version that seals its head, so a ledger
        with records and no head had its head removed. Without it, a ledger that has no head
        (written before heads existed) is verified by its chain alone.
        """
        return [entry.record for entry in self._verified(require_head=require_head)]

    def append(
        self,
        record: Mapping[str, Any],
        *,
        require_head: bool,
        then: Callable[[list[dict[str, Any]]], object] | None = None,
    ) -> dict[str, Any]:
        """Chain ``record`` to the ledger and seal the new head; returns the record as stored.

        ``then`` receives every confirmed record including the new one and runs before the
        head moves: if it raises, the record is cut back off and the error propagates.
        """
        private_dirs(self.path.parent)
        lock = os.open(self.path.with_name(f".{self.path.name}.lock"), os.O_RDWR | os.O_CREAT)
        try:
            with exclusive_lock(lock):
                return self._append(record, require_head=require_head, then=then)
        finally:
            os.close(lock)

    def _append(
        self,
        record: Mapping[str, Any],
        *,
        require_head: bool,
        then: Callable[[list[dict[str, Any]]], object] | None,
    ) -> dict[str, Any]:
        entries = self._verified(require_head=require_head)
        committed = entries[-1].end if entries else 0
        if self.path.exists() and self.path.stat().st_size > committed:
            os.truncate(self.path, committed)  # records a killed append never confirmed
        stored = {**record, "prev": line_hash(entries[-1].raw) if entries else self.origin}
        raw = append_line(self.path, stored)
        try:
            if then is not None:
                then([*(e.record for e in entries), stored])
            head = {"records": len(entries) + 1, "head": line_hash(raw)}
            atomic_write_json(self.head_path, head, private=True)
        except BaseException:
            with contextlib.suppress(OSError):
                os.truncate(self.path, committed)
            raise
        return stored

    def _verified(self, *, require_head: bool) -> list[_Entry]:
        entries = self._entries()
        head = self._head()
        if head is None:
            if require_head and entries:
                raise LedgerError(
                    f"has {len(entries)} record(s) but its sealed head {self.head_path.name} "
                    "is missing: the ledger was edited"
                )
        else:
            count, last = head
            if len(entries) < count:
                raise LedgerError(
                    f"holds {len(entries)} record(s) but its sealed head counts {count}: a "
                    "record was removed"
                )
            extra = entries[count:]
            # One record past the head, chained to it, is an append killed before it was
            # confirmed: ignored. Anything else past the head was added by hand.
            if len(extra) > 1 or (extra and extra[0].record.get("prev") != (last or self.origin)):
                raise LedgerError(
                    f"has {len(extra)} record(s) after its sealed head that no append wrote: "
                    "the ledger was edited"
                )
            entries = entries[:count]
            if count and line_hash(entries[-1].raw) != last:
                raise LedgerError(
                    f"record {count} does not match the sealed head: the last record was edited"
                )
        expected = self.origin
        for number, entry in enumerate(entries, start=1):
            if entry.record.get("prev") != expected:
                raise LedgerError(
                    f"line {number} does not follow the line before it: the ledger was edited"
                )
            expected = line_hash(entry.raw)
        return entries

    def _head(self) -> tuple[int, str] | None:
        try:
            head = read_json(self.head_path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise LedgerError(f"has a damaged sealed head ({self.head_path.name})") from exc
        count, last = head.get("records"), head.get("head")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise LedgerError(f"has a damaged sealed head ({self.head_path.name}: records)")
        if not isinstance(last, str):
            raise LedgerError(f"has a damaged sealed head ({self.head_path.name}: head)")
        return count, last

    def _entries(self) -> list[_Entry]:
        """Committed object lines with their offsets; a torn tail and lines that are not JSON
        objects are skipped (a chain over the others still detects what matters)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        out: list[_Entry] = []
        offset = 0
        for raw in data[:end].splitlines(keepends=True):
            offset += len(raw)
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if isinstance(value, dict):
                out.append(_Entry(value, raw, offset))
        return out
