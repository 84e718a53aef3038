"""Loading a run directory back into a :class:`RunResult`, verifying its seal on the way."""

from __future__ import annotations

import os
from pathlib import Path
from types import MappingProxyType
from typing import Any

from vitrine._bench.results import RunResult
from vitrine.store._contents import RunContents, read_contents
from vitrine.store._errors import (
    IncompleteRunError,
    RunStoreError,
    TamperedRunError,
    UnsupportedSchemaError,
)
from vitrine.store._files import read_json
from vitrine.store._layout import SUPPORTED_SCHEMAS, RunPaths, is_sealed
from vitrine.store._rows import row_layout

__all__ = ["is_sealed", "load_run", "read_manifest", "result_from_contents"]

RESUME_HINT = (
    "vitrine._bench.runner.resume_run(run_dir, definition, arm) with the same definition and arm"
)


def read_manifest(paths: RunPaths) -> dict[str, Any]:
    try:
        manifest = read_json(paths.manifest)
    except FileNotFoundError as exc:
        raise RunStoreError(
            f"{paths.run_dir.name} is not a run directory: it has no manifest.json"
        ) from exc
    except ValueError as exc:
        raise RunStoreError(f"run {paths.run_id}: manifest.json is not valid JSON") from exc
    version = manifest.get("schema_version")
    if version not in SUPPORTED_SCHEMAS:
        raise UnsupportedSchemaError(
            f"run {paths.run_id} uses schema version {version!r}; this library reads "
            f"{sorted(SUPPORTED_SCHEMAS)}"
        )
    return manifest


def load_run(run_dir: str | os.PathLike[str], *, allow_incomplete: bool = False) -> RunResult:
    """Read a run and verify its seal.

    A sealed run whose content hash does not match is refused (:class:`TamperedRunError`). A run
    that was never sealed is refused (:class:`IncompleteRunError`) unless ``allow_incomplete``,
    in which case the trials that finished are returned with ``complete=False``.
    """
    paths = RunPaths(Path(run_dir))
    manifest = read_manifest(paths)
    sealed = is_sealed(manifest)
    if not sealed and not allow_incomplete:
        raise IncompleteRunError(
            f"run {paths.run_id} was never sealed: it was interrupted before it completed; "
            f"resume it with {RESUME_HINT}, or load it with allow_incomplete=True"
        )
    layout = row_layout(paths, int(manifest["schema_version"]))
    try:
        contents = read_contents(paths, manifest, layout, strict=sealed)
    except (ValueError, KeyError, TypeError) as exc:
        if sealed:
            raise _tampered(paths, str(exc)) from exc
        raise RunStoreError(f"run {paths.run_id}: its stored rows are damaged ({exc})") from exc
    if sealed:
        try:
            summary = read_json(paths.summary)
        except (OSError, ValueError) as exc:
            raise _tampered(paths, "summary.json is missing or unreadable") from exc
        actual = contents.hasher.digest(manifest, summary)
        if actual != manifest["content_hash"]:
            raise _tampered(paths, f"sealed {manifest['content_hash']}, found {actual}")
    return result_from_contents(paths, contents, complete=sealed)


def _tampered(paths: RunPaths, detail: str) -> TamperedRunError:
    return TamperedRunError(
        f"run {paths.run_id}: the content hash does not match its seal ({detail}); the run "
        "was modified after it was sealed and its results cannot be trusted"
    )


def result_from_contents(paths: RunPaths, contents: RunContents, *, complete: bool) -> RunResult:
    manifest = contents.manifest
    run = manifest["run"]
    return RunResult(
        run_id=str(run["run_id"]),
        definition_key=str(run["definition_key"]),
        definition_version=str(run["definition_version"]),
        definition_hash=str(run["definition_hash"]),
        arm_id=str(manifest.get("arm", manifest["subject"])),
        repetition=int(run["repetition"]),
        checks=contents.checks,
        case_ids=contents.case_ids,
        rows=tuple(row for case in contents.case_ids for row in contents.rows.get(case, ())),
        started_at=str(run["timestamp"]),
        duration_s=float(run.get("duration_s") or 0.0),
        complete=complete,
        run_dir=str(paths.run_dir),
        subject_errors=MappingProxyType(dict(contents.subject_errors)),
        responses=MappingProxyType(dict(contents.responses)),
        retries=MappingProxyType(dict(contents.retries)),
    )
