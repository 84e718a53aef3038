"""Durable file primitives: atomic whole-file writes and append-only JSON lines.

A reader must never see half a file. Whole files are written to a temporary sibling, synced and
renamed over the target; growing files are only ever appended to, one complete line per record,
so an interruption can at worst leave one torn line at the end, which readers drop and the next
shared append moves aside (see :func:`append_line`).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vitrine._redact import sanitize_text
from vitrine.errors import InvalidDataError, MalformedLineError
from vitrine.store._private import PRIVATE_FILE, private_dirs

__all__ = [
    "AppendLog",
    "JsonLines",
    "MalformedLineError",
    "append_line",
    "atomic_write_bytes",
    "atomic_write_json",
    "encode_json",
    "encode_line",
    "exclusive_lock",
    "read_json",
    "read_json_lines",
    "torn_path",
    "try_lock",
    "write_all",
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


def encode_compact(value: Any) -> str:
    """``value`` exactly as :func:`encode_line` writes it inside a record, without a newline.

    Compact JSON nests by concatenation, so pieces encoded once can be spliced into a line.
    """
    return _LINE_ENCODER.encode(value)


def atomic_write_bytes(path: Path, data: bytes, *, private: bool = False) -> None:
    """Replace ``path`` with ``data``: readers see the old file or the new one, never a mix.

    ``private`` writes it owner-only (0600), as run data is; otherwise the umask decides, as
    for any file a user asks for (a report copy, an exported page).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{next(_temp_counter)}.tmp")
    mode = PRIVATE_FILE if private else 0o666
    try:
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "wb") as fh:
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


def atomic_write_json(path: Path, value: Mapping[str, Any], *, private: bool = False) -> None:
    """Write ``value`` as JSON to ``path`` at once: a reader sees the old file or the new one.
    ``private`` as for :func:`atomic_write_bytes`."""

    atomic_write_bytes(path, encode_json(value), private=private)


def read_json(path: Path) -> dict[str, Any]:
    value = json.loads(path.read_bytes())
    if not isinstance(value, dict):
        raise InvalidDataError(f"{path.name} does not hold a JSON object")
    return value


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd``: ``os.write`` may write fewer than asked (a full
    disk, a signal), and a record cut short is a torn line that takes the next one with it."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, f"the write stopped after {len(data) - len(view)} bytes")
        view = view[written:]


def _flock() -> Any:
    try:
        import fcntl  # noqa: PLC0415 - POSIX only, so it is tried where it is needed
    except ImportError:
        return None
    return fcntl


@contextlib.contextmanager
def exclusive_lock(fd: int) -> Iterator[None]:
    """Hold an advisory lock on ``fd`` so appenders in other processes take turns."""
    fcntl = _flock()
    if fcntl is None:  # no advisory locks here: O_APPEND keeps each single write whole
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def try_lock(fd: int) -> bool | None:
    """Take an exclusive advisory lock on ``fd`` if no one holds it; released when ``fd`` is
    closed. True: taken; False: another process holds it; None: this platform has no locks."""
    fcntl = _flock()
    if fcntl is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def torn_path(path: Path) -> Path:
    """Where the torn tail of a log is set aside when the next append repairs the log."""
    return path.with_name(path.name + ".torn")


def append_line(path: Path, record: Mapping[str, Any], *, durable: bool = True) -> bytes:
    """Append one record to a shared log, whole or not at all, then sync it.

    Several processes may append to the same log at once; each holds a lock on the file while
    it writes, so lines never mix. A write that fails part way (a full disk) is cut back to the
    log's old length before the error is raised, so a caller told "not recorded" finds no line.
    A torn tail that a killed writer left is moved aside to ``<log>.torn`` first, so this record
    and every later one stay whole. ``durable=False`` skips the sync, for a log that only
    repeats what a synced one already holds. Returns the bytes of the line as written.
    """
    private_dirs(path.parent)  # every shared log is the store's: owner-only, as its folders
    line = encode_line(record)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
    try:
        with exclusive_lock(fd):
            committed = _quarantine_torn_tail(fd, path)
            try:
                write_all(fd, line)
                if durable:
                    os.fsync(fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, committed)
                raise
    finally:
        os.close(fd)
    return line


def _quarantine_torn_tail(fd: int, path: Path) -> int:
    """Cut bytes after the last newline (a killed writer's torn line) out of the log, keeping a
    copy beside it; returns the committed length the log now has."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    start = max(0, size - _CHUNK)
    while True:
        block = os.pread(fd, size - start, start)
        cut = block.rfind(b"\n")
        if cut >= 0 or start == 0:
            committed = start + cut + 1
            break
        start = max(0, start - _CHUNK)
    fragment = os.pread(fd, size - committed, committed)
    keep = os.open(torn_path(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
    try:
        write_all(keep, fragment + b"\n")
        os.fsync(keep)
    finally:
        os.close(keep)
    os.ftruncate(fd, committed)
    return committed


_CHUNK = 1 << 16


class AppendLog:
    """A growing JSON-lines file owned by one writer: append and flush per record, sync on demand.

    Each record goes to the operating system in unbuffered writes as it is appended, so a killed
    process loses at most the record being written; the costly fsync is left to the seal, once
    per run (the seal syncs every log it covers before it writes the sealed manifest).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        self._fd: int | None = os.open(path, flags, PRIVATE_FILE)  # a run's own log: run data
        self._size = os.fstat(self._fd).st_size  # its one writer keeps count: no seek per record

    def append(self, record: Mapping[str, Any]) -> bytes:
        """Append one record; returns the exact bytes written, which the seal hashes.

        A write that fails part way is cut back to where the record began, so a full disk
        leaves the trial unrecorded (it reruns on resume), never a torn line.
        """
        return self.append_line(encode_line(record))

    def append_line(self, line: bytes) -> bytes:
        """Append one already encoded line (ending in its newline), as :meth:`append` does."""
        if self._fd is None:  # a store bug: only the store's writers hold an AppendLog
            raise ValueError(f"{self.path.name} is closed")
        try:
            write_all(self._fd, line)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            raise
        self._size += len(line)
        return line

    def sync(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


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
