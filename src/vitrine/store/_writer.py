"""Writing one run directory: create it, append finished trials, seal it once."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vitrine._bench.model import BenchmarkDefinition
from vitrine._bench.results import RunResult, ScenarioRow
from vitrine._bench.retry import FailedAttempt
from vitrine.store._contents import RunContents, read_contents
from vitrine.store._errors import RunStoreError
from vitrine.store._files import AppendLog, atomic_write_bytes, atomic_write_json, encode_line
from vitrine.store._index import record_sealed_run, sealing
from vitrine.store._layout import CURRENT_SCHEMA, RunPaths
from vitrine.store._naming import new_run_id
from vitrine.store._private import PRIVATE_DIR, private_dirs
from vitrine.store._records import (
    ContentHasher,
    build_summary,
    new_manifest,
    trace_record,
)
from vitrine.store._rows import RowLayout, row_layout

__all__ = ["RunWriter", "utc_timestamp"]


def utc_timestamp(moment: datetime | None = None) -> str:
    return (moment or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="microseconds")


def _json_roundtrip(value: Mapping[str, Any]) -> dict[str, Any]:
    # The seal covers what a reader will parse, so hash the manifest and summary as they will read.
    result: dict[str, Any] = json.loads(encode_line(value))
    return result


class RunWriter:
    """The single writer of one run directory.

    Per trial it only appends; the manifest is written at creation (and on resume) and, with the
    summary, once more at the seal.
    """

    def __init__(
        self,
        paths: RunPaths,
        manifest: dict[str, Any],
        layout: RowLayout,
        hasher: ContentHasher | None = None,
    ) -> None:
        self.paths = paths
        self.manifest = manifest
        self._layout = layout
        self._hasher = hasher or ContentHasher()
        self._traces: AppendLog | None = None
        self._sealed = False

    @property
    def run_id(self) -> str:
        return self.paths.run_id

    @property
    def run_dir(self) -> Path:
        return self.paths.run_dir

    @property
    def schema_version(self) -> int:
        return int(self.manifest["schema_version"])

    @property
    def started_at(self) -> str:
        return str(self.manifest["run"]["timestamp"])

    @classmethod
    def create(
        cls,
        root: Path,
        definition: BenchmarkDefinition,
        arm_id: str,
        *,
        repetition: int,
        seed: int | None,
        schema_version: int = CURRENT_SCHEMA,
    ) -> RunWriter:
        runs = root / "runs"
        private_dirs(runs)  # the store root too, when this run is its first
        now = datetime.now(UTC)
        while True:  # two runs started in the same second draw different digits; retry a clash
            run_dir = runs / new_run_id(now)
            try:
                run_dir.mkdir(mode=PRIVATE_DIR)
                break
            except FileExistsError:
                continue
        paths = RunPaths(run_dir)
        paths.traces_dir.mkdir(mode=PRIVATE_DIR)
        manifest = new_manifest(
            schema_version=schema_version,
            run_id=paths.run_id,
            timestamp=utc_timestamp(now),
            definition=definition,
            arm_id=arm_id,
            repetition=repetition,
            seed=seed,
        )
        atomic_write_json(paths.manifest, manifest, private=True)
        writer = cls(paths, manifest, row_layout(paths, schema_version))
        writer._open()
        return writer

    @classmethod
    def reopen(cls, paths: RunPaths, manifest: dict[str, Any]) -> tuple[RunWriter, RunContents]:
        """Reopen an interrupted run: keep its finished trials and drop a torn write's leftovers."""
        layout = row_layout(paths, int(manifest["schema_version"]))
        try:
            contents = read_contents(paths, manifest, layout, strict=False)
        except (ValueError, KeyError, TypeError) as exc:
            raise RunStoreError(
                f"run {paths.run_id} cannot be resumed: its stored rows are damaged ({exc})"
            ) from exc
        layout.discard_uncommitted(contents.stored_rows)
        if contents.traces_file.torn_tail or contents.orphan_traces:
            # Written once per resume, not per trial: keep only traces of finished trials so that
            # the rerun of an interrupted trial does not leave two traces for one case.
            atomic_write_bytes(paths.traces, b"".join(contents.trace_lines.values()), private=True)
        manifest["run"].setdefault("resumed_at", []).append(utc_timestamp())
        atomic_write_json(paths.manifest, manifest, private=True)
        writer = cls(paths, manifest, layout, contents.hasher)
        writer._open()
        return writer, contents

    def _open(self) -> None:
        self._layout.open()
        self._traces = AppendLog(self.paths.traces)

    def record_trial(
        self,
        case_id: str,
        rows: Sequence[ScenarioRow],
        *,
        duration_ms: float,
        error: str | None,
        response: Mapping[str, Any] | None,
        failed_attempts: Sequence[FailedAttempt] = (),
    ) -> None:
        """Persist one finished trial: its trace first, then its rows.

        The rows line is what marks a trial finished, so a trace without rows (a kill between the
        two appends) is recognisable and dropped on resume rather than duplicated.
        """
        if self._traces is None:
            raise RunStoreError(f"run {self.run_id} is not open for writing")
        trace = self._traces.append(
            trace_record(
                self.schema_version, case_id, duration_ms, error, response, failed_attempts
            )
        )
        self._hasher.add_trace(case_id, trace)
        for key, data in self._layout.append_trial(case_id, rows):
            self._hasher.add_row(key, data)

    def note_trace_id(self, trace_id: str) -> None:
        """Record the trace this run's spans went to (a resumed run adds its own); sealed."""
        trace_ids = self.manifest["run"].setdefault("trace_ids", [])
        if trace_id not in trace_ids:
            trace_ids.append(trace_id)

    def seal(self, result: RunResult) -> str:
        """Write the summary and the sealed manifest, then index the run. Returns the hash."""
        if self._sealed:
            raise RunStoreError(f"run {self.run_id} is already sealed")
        self._layout.sync()
        if self._traces is not None:
            self._traces.sync()
        self.close()
        summary = _json_roundtrip(build_summary(result, self.schema_version))
        run = self.manifest["run"]
        run["duration_s"] = result.duration_s
        run["verdict"] = result.verdict.value
        run["scenario_count"] = len(result.rows)
        run["case_count"] = len(result.case_ids)
        run["check_count"] = len(result.checks)
        self.manifest["status"] = "complete"
        self.manifest.pop("content_hash", None)
        manifest = _json_roundtrip(self.manifest)
        content_hash = self._hasher.digest(manifest, summary)
        self.manifest["content_hash"] = content_hash
        atomic_write_json(self.paths.summary, summary, private=True)
        with sealing(self.paths):  # a kill from here on leaves the run to be indexed on open
            # The manifest goes last: its content hash is the seal, so a run is complete only
            # once everything it covers is already on disk.
            atomic_write_json(self.paths.manifest, self.manifest, private=True)
            self._sealed = True
            record_sealed_run(self.paths, self.manifest, summary)
        return content_hash

    def close(self) -> None:
        self._layout.close()
        if self._traces is not None:
            self._traces.close()
            self._traces = None
