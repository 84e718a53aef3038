"""The run store: a root folder of run directories and the history of the sealed ones."""

from __future__ import annotations

import os
from pathlib import Path

from vitrine._bench.model import BenchmarkDefinition
from vitrine._bench.results import RunResult
from vitrine.errors import InvalidArgumentError
from vitrine.store._index import RunIndexEntry, list_runs, recover_index
from vitrine.store._layout import CURRENT_SCHEMA, SUPPORTED_SCHEMAS
from vitrine.store._naming import RUN_ID_PATTERN, resolve_root
from vitrine.store._reader import load_run
from vitrine.store._writer import RunWriter

__all__ = ["RunStore"]


class RunStore:
    """Runs under ``<root>/runs/<run_id>``; see :func:`resolve_root` for how the root is chosen.

    ``schema_version`` selects the row layout of new runs; it exists so that the previous layout
    can still be produced for comparison and fixtures. Reading accepts every supported version.
    """

    def __init__(
        self, root: str | os.PathLike[str] | None = None, *, schema_version: int = CURRENT_SCHEMA
    ) -> None:
        if schema_version not in SUPPORTED_SCHEMAS:
            raise InvalidArgumentError(
                f"schema version {schema_version} is not one of {sorted(SUPPORTED_SCHEMAS)}"
            )
        self.root = resolve_root(root)
        self.schema_version = schema_version
        # A seal a killed process left unindexed is indexed before anything reads the store.
        recover_index(self.root)

    def __repr__(self) -> str:
        return f"RunStore({str(self.root)!r})"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    def create_run(
        self,
        definition: BenchmarkDefinition,
        arm_id: str,
        *,
        repetition: int = 1,
        seed: int | None = None,
    ) -> RunWriter:
        return RunWriter.create(
            self.root,
            definition,
            arm_id,
            repetition=repetition,
            seed=seed,
            schema_version=self.schema_version,
        )

    def run_dir(self, run_id: str) -> Path:
        if not RUN_ID_PATTERN.match(run_id):
            raise InvalidArgumentError(
                f"{run_id!r} is not a run id (expected e.g. 2026-09-10_07-08-15_45588192)"
            )
        return self.runs_dir / run_id

    def load(self, run_id: str, *, allow_incomplete: bool = False) -> RunResult:
        return load_run(self.run_dir(run_id), allow_incomplete=allow_incomplete)

    def list_runs(self, *, subject: str | None = None) -> list[RunIndexEntry]:
        return list_runs(self.root, subject=subject)
