"""Reading a run directory's rows and traces back, validated, for loading, resuming and sealing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vitrine._bench.results import CheckInfo, ScenarioRow
from vitrine._bench.retry import FailedAttempt
from vitrine.errors import InvalidDataError
from vitrine.store._files import JsonLines, read_json_lines
from vitrine.store._layout import RunPaths
from vitrine.store._records import ContentHasher, check_info_from_record, row_from_record
from vitrine.store._rows import RowLayout, StoredRows

__all__ = ["RunContents", "read_contents"]


@dataclass(slots=True)
class RunContents:
    """What a run directory holds, with the trials that finished and their content digests."""

    manifest: dict[str, Any]
    checks: tuple[CheckInfo, ...]
    case_ids: tuple[str, ...]
    rows: dict[str, tuple[ScenarioRow, ...]]
    traces: dict[str, dict[str, Any]]
    trace_lines: dict[str, bytes]
    hasher: ContentHasher
    stored_rows: StoredRows
    traces_file: JsonLines
    # Traces of trials whose rows never reached the disk: dropped before a resume appends more.
    orphan_traces: int = 0
    subject_errors: dict[str, str] = field(default_factory=dict)
    responses: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    retries: dict[str, tuple[FailedAttempt, ...]] = field(default_factory=dict)


def read_contents(
    paths: RunPaths,
    manifest: dict[str, Any],
    layout: RowLayout,
    *,
    strict: bool,
) -> RunContents:
    """Parse and validate rows and traces.

    ``strict`` is for sealed runs: every case must be present and nothing may be torn. Otherwise
    the trials that finished are returned and an interrupted write's leftovers are reported.
    Structural problems raise ``ValueError`` (or ``KeyError``/``TypeError`` from a bad record).
    """
    checks = tuple(check_info_from_record(c) for c in manifest["checks"])
    check_order = {info.key: i for i, info in enumerate(checks)}
    case_ids = tuple(str(c) for c in manifest["case_ids"])
    known_cases = set(case_ids)

    hasher = ContentHasher()
    stored = layout.read(tuple(check_order), tolerate_torn=not strict)
    rows: dict[str, tuple[ScenarioRow, ...]] = {}
    for case_id, records in stored.by_case.items():
        if case_id not in known_cases:
            raise InvalidDataError(f"rows for case {case_id!r}, which the run does not contain")
        keys = sorted(str(r["check_key"]) for r in records)
        if keys != sorted(check_order):
            raise InvalidDataError(
                f"case {case_id!r} has rows for {keys}, not one per check {sorted(check_order)}"
            )
        parsed = sorted(
            (row_from_record(r) for r in records), key=lambda row: check_order[row.check_key]
        )
        rows[case_id] = tuple(parsed)
    for key, data in stored.record_bytes.items():
        hasher.add_row(key, data)
    if strict and len(rows) != len(case_ids):
        missing = [c for c in case_ids if c not in rows]
        raise InvalidDataError(f"no rows for {len(missing)} case(s), first {missing[0]!r}")

    traces_file = read_json_lines(paths.traces)
    if strict and traces_file.torn_tail:
        raise InvalidDataError("the trace log ends in a torn line")
    traces: dict[str, dict[str, Any]] = {}
    trace_lines: dict[str, bytes] = {}
    orphans = 0
    for record, raw in zip(traces_file.records, traces_file.raw_lines, strict=True):
        case_id = str(record.get("case_id"))
        if case_id not in rows or case_id in traces:
            if strict:
                raise InvalidDataError(
                    f"trace for case {case_id!r} does not match a finished trial"
                )
            orphans += 1
            continue
        traces[case_id] = record
        trace_lines[case_id] = raw
        hasher.add_trace(case_id, raw)

    contents = RunContents(
        manifest, checks, case_ids, rows, traces, trace_lines, hasher, stored, traces_file, orphans
    )
    for case_id, record in traces.items():
        if record.get("error"):
            contents.subject_errors[case_id] = str(record["error"])
        if isinstance(record.get("response"), dict):
            contents.responses[case_id] = record["response"]
        if record.get("failed_attempts"):
            contents.retries[case_id] = tuple(
                FailedAttempt.from_dict(a) for a in record["failed_attempts"]
            )
    return contents
