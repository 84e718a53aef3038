"""The two ways a run's scenario rows are laid out on disk.

Both layouts hand back the same layout-neutral row records (``case_id``, ``check_key``,
``observation``, ``duration_ms``), grouped by case, so that the seal and every reader are the
same code whichever layout wrote the run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from vitrine._bench.results import ScenarioRow, row_id
from vitrine.errors import InvalidDataError
from vitrine.store._files import (
    AppendLog,
    MalformedLineError,
    atomic_write_bytes,
    encode_json,
    read_json_lines,
)
from vitrine.store._layout import PER_FILE_SCHEMA, ROWS_JSONL_SCHEMA, RunPaths
from vitrine.store._naming import sanitize_file_name
from vitrine.store._private import PRIVATE_DIR
from vitrine.store._records import row_record, trial_rows_line

__all__ = ["JsonlRows", "RowLayout", "ScenarioFileRows", "StoredRows", "row_layout"]

RowRecord = dict[str, Any]


@dataclass(slots=True)
class StoredRows:
    """The finished trials found on disk, and the leftovers of an interrupted write."""

    by_case: dict[str, list[RowRecord]] = field(default_factory=dict)
    # The exact bytes of each stored record (a trial's line, or one row file) for the seal.
    record_bytes: dict[str, bytes] = field(default_factory=dict)
    committed_bytes: int = 0
    torn_tail: bool = False
    partial_cases: frozenset[str] = frozenset()


class RowLayout(Protocol):
    schema_version: int

    def open(self) -> None: ...

    def append_trial(
        self, case_id: str, rows: Sequence[ScenarioRow]
    ) -> list[tuple[str, bytes]]: ...

    def read(self, check_keys: Sequence[str], *, tolerate_torn: bool) -> StoredRows: ...

    def discard_uncommitted(self, stored: StoredRows) -> None: ...

    def sync(self) -> None: ...

    def close(self) -> None: ...


def row_layout(paths: RunPaths, schema_version: int) -> RowLayout:
    if schema_version == ROWS_JSONL_SCHEMA:
        return JsonlRows(paths)
    if schema_version == PER_FILE_SCHEMA:
        return ScenarioFileRows(paths)
    raise InvalidDataError(f"no row layout for schema version {schema_version}")


class JsonlRows:
    """Schema 2: ``rows.jsonl``, one appended line per finished trial holding all its rows.

    A trial's rows share one line, so a trial is either wholly on disk or not at all.
    """

    schema_version = ROWS_JSONL_SCHEMA

    def __init__(self, paths: RunPaths) -> None:
        self._path = paths.rows
        self._log: AppendLog | None = None

    def open(self) -> None:
        self._log = AppendLog(self._path)

    def append_trial(self, case_id: str, rows: Sequence[ScenarioRow]) -> list[tuple[str, bytes]]:
        if self._log is None:  # a store bug: the writer opens the log before any trial
            raise ValueError("the row log is not open")
        line = self._log.append_line(trial_rows_line(self.schema_version, case_id, rows))
        return [(case_id, line)]

    def read(self, check_keys: Sequence[str], *, tolerate_torn: bool) -> StoredRows:
        lines = read_json_lines(self._path)
        if lines.torn_tail and not tolerate_torn:
            raise MalformedLineError(
                self._path, len(lines.records) + 1, "it has no terminating newline"
            )
        stored = StoredRows(committed_bytes=lines.committed_bytes, torn_tail=lines.torn_tail)
        for number, (line, raw) in enumerate(
            zip(lines.records, lines.raw_lines, strict=True), start=1
        ):
            case_id = line.get("case_id")
            rows = line.get("rows")
            if not isinstance(case_id, str) or not isinstance(rows, list):
                raise MalformedLineError(self._path, number, "it lacks a case id or rows")
            if case_id in stored.by_case:
                raise MalformedLineError(self._path, number, f"case {case_id!r} appears twice")
            stored.by_case[case_id] = [{"case_id": case_id, **row} for row in rows]
            stored.record_bytes[case_id] = raw
        return stored

    def discard_uncommitted(self, stored: StoredRows) -> None:
        if stored.torn_tail:
            os.truncate(self._path, stored.committed_bytes)

    def sync(self) -> None:
        if self._log is not None:
            self._log.sync()

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


class ScenarioFileRows:
    """Schema 1: ``scenarios/<sanitized row id>.json``, one atomically written file per row."""

    schema_version = PER_FILE_SCHEMA

    def __init__(self, paths: RunPaths) -> None:
        self._dir = paths.scenarios

    def open(self) -> None:
        self._dir.mkdir(mode=PRIVATE_DIR, exist_ok=True)

    def append_trial(self, case_id: str, rows: Sequence[ScenarioRow]) -> list[tuple[str, bytes]]:
        written = []
        for record in map(row_record, rows):
            rid = row_id(case_id, record["check_key"])
            data = encode_json({"schema_version": self.schema_version, "row_id": rid, **record})
            atomic_write_bytes(self._dir / f"{sanitize_file_name(rid)}.json", data, private=True)
            written.append((rid, data))
        return written

    def read(self, check_keys: Sequence[str], *, tolerate_torn: bool) -> StoredRows:
        by_case: dict[str, list[RowRecord]] = {}
        record_bytes: dict[str, bytes] = {}
        if self._dir.is_dir():
            for path in sorted(self._dir.iterdir()):
                if path.name.startswith(".") or path.suffix != ".json":
                    continue  # temporary files of an interrupted atomic write
                data = path.read_bytes()
                record = json.loads(data)
                if not isinstance(record, dict):
                    raise InvalidDataError(f"scenarios/{path.name} does not hold a JSON object")
                case_id = str(record.get("case_id"))
                rid = row_id(case_id, str(record.get("check_key")))
                if record.get("row_id") != rid or path.name != f"{sanitize_file_name(rid)}.json":
                    raise InvalidDataError(
                        f"scenarios/{path.name} does not hold the row its name says"
                    )
                by_case.setdefault(case_id, []).append(record)
                record_bytes[rid] = data
        expected = len(check_keys)
        partial = frozenset(case for case, rows in by_case.items() if len(rows) < expected)
        if partial and not tolerate_torn:
            raise InvalidDataError(f"cases with missing rows: {', '.join(sorted(partial))}")
        for case in partial:
            for record in by_case.pop(case):
                record_bytes.pop(str(record["row_id"]), None)
        return StoredRows(by_case=by_case, record_bytes=record_bytes, partial_cases=partial)

    def discard_uncommitted(self, stored: StoredRows) -> None:
        # A rerun of a partial case rewrites the same file names, so nothing else needs removing.
        for path in self._dir.glob(".*.tmp"):
            path.unlink(missing_ok=True)

    def sync(self) -> None:
        pass  # every row file was synced as it was written

    def close(self) -> None:
        pass
