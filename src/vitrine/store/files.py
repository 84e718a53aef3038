"""Durable file primitives: atomic whole-file writes and append-only JSON lines.

A reader must never see half a file. Whole files are written to a temporary sibling, synced and
renamed over the target; growing files are only ever appended to, one complete line per record,
so an interruption can at worst leave one torn line at the end, which readers drop.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from vitrine.errors import VitrineError
from vitrine.redact import sanitize_text

__all__ = [
    "AppendLog",
    "JsonLines",
    "MalformedLineError",
    "append_line",
    "atomic_write_bytes",
    "atomic_write_json",
    "encode_json",
    "encode_line",
    "read_json",
    "read_json_lines",
]

_temp_counter = itertools.count()


def _json_fallback(value: Any) -> Any:
    # Checks may put arbitrary objects into evidence; a set or a custom object must not make a
    # finished trial unwritable, so it is stored as a bounded, scrubbed description instead.
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return sanitize_text(repr(value), 500)


# Built once: json.dumps with any non-default option constructs a new encoder on every call,
# which costs more than encoding a trial's small record.
_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_json_fallback)
_DOCUMENT_ENCODER = json.JSONEncoder(ensure_ascii=False, indent=2, default=_json_fallback)


def encode_line(record: Mapping[str, Any]) -> bytes:
    """One compact JSON object and its terminating newline (the newline commits the record)."""
    return _LINE_ENCODER.encode(record).encode() + b"\n"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: readers see the old file or the new one, never a mix."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{next(_temp_counter)}.tmp")
    try:
        with tmp.open("wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def encode_json(value: Mapping[str, Any]) -> bytes:
    """A whole-file JSON document, indented for people who open it."""
    return _DOCUMENT_ENCODER.encode(value).encode() + b"\n"


def atomic_write_json(path: Path, value: Mapping[str, Any]) -> None:
    atomic_write_bytes(path, encode_json(value))


def read_json(path: Path) -> dict[str, Any]:
    value = json.loads(path.read_bytes())
    if not isinstance(value, dict):
        raise ValueError(f"{path.name} does not hold a JSON object")
    return value


def append_line(path: Path, record: Mapping[str, Any], *, durable: bool = True) -> None:
    """Append one record to a shared log with a single O_APPEND write, then sync it.

    Several processes may seal runs into the same history at once; a single small write to a file
    opened for appending lands whole, so their lines interleave but never mix. ``durable=False``
    skips the sync, for a log that only repeats what a synced one already holds.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        line = encode_line(record)
        if _ends_torn(fd):
            # A killed writer left bytes without their newline. Glued to them, this record
            # would be one malformed line and lost; closing the fragment first keeps it whole.
            line = b"\n" + line
        os.write(fd, line)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def _ends_torn(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


class AppendLog:
    """A growing JSON-lines file owned by one writer: append and flush per record, sync on demand.

    Flushing hands each record to the operating system, so a killed process loses at most the
    record being written; the costly fsync is left to the seal, once per run.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[bytes] | None = path.open("ab")

    def append(self, record: Mapping[str, Any]) -> bytes:
        """Append one record; returns the exact bytes written, which the seal hashes."""
        if self._fh is None:
            raise ValueError(f"{self.path.name} is closed")
        line = encode_line(record)
        self._fh.write(line)
        self._fh.flush()
        return line

    def sync(self) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class MalformedLineError(ValueError, VitrineError):
    """A committed (newline-terminated) line that is not a JSON object."""

    def __init__(self, path: Path, line_number: int, why: str) -> None:
        super().__init__(f"{path.name} line {line_number} is not a valid record ({why})")
        self.path = path
        self.line_number = line_number


@dataclass(frozen=True, slots=True)
class JsonLines:
    """The committed records of a JSON-lines file, their exact bytes, and where they end."""

    records: tuple[dict[str, Any], ...]
    raw_lines: tuple[bytes, ...]
    committed_bytes: int
    torn_tail: bool
    malformed: int = 0  # committed lines skipped as corrupt (only with skip_malformed)


def read_json_lines(path: Path, *, skip_malformed: bool = False) -> JsonLines:
    """Read the committed lines of ``path``; a missing file has none.

    A record is committed once its newline is written, so trailing bytes without one are a torn
    write from an interrupted process: they are reported, never parsed.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return JsonLines((), (), 0, False)
    end = data.rfind(b"\n") + 1
    records: list[dict[str, Any]] = []
    raw_lines: list[bytes] = []
    malformed = 0
    for number, raw in enumerate(data[:end].splitlines(keepends=True), start=1):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            # RecursionError: a line of deeply nested brackets is damage, not a crash.
            if skip_malformed:
                malformed += 1
                continue
            raise MalformedLineError(path, number, "invalid JSON") from exc
        if not isinstance(value, dict):
            if skip_malformed:
                malformed += 1
                continue
            raise MalformedLineError(path, number, "not an object")
        records.append(value)
        raw_lines.append(raw)
    return JsonLines(tuple(records), tuple(raw_lines), end, end < len(data), malformed)
