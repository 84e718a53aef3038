"""The files of one run directory and the schema versions that arrange them.

Schema 1 keeps one JSON file per scenario row (``scenarios/<row id>.json``). Schema 2 appends one
line per finished trial, holding all of its rows, to ``rows.jsonl``: at 10,000 trials with five
checks schema 1 costs 50,000 synced file replacements, which alone exceeds the per-trial overhead
budget (see ``benchmarks/runner_overhead.py``). New runs use schema 2; schema 1 stays readable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CURRENT_SCHEMA",
    "PER_FILE_SCHEMA",
    "ROWS_JSONL_SCHEMA",
    "SUPPORTED_SCHEMAS",
    "RunPaths",
    "is_sealed",
]

PER_FILE_SCHEMA = 1
ROWS_JSONL_SCHEMA = 2
CURRENT_SCHEMA = ROWS_JSONL_SCHEMA
SUPPORTED_SCHEMAS = frozenset({PER_FILE_SCHEMA, ROWS_JSONL_SCHEMA})


@dataclass(frozen=True, slots=True)
class RunPaths:
    run_dir: Path

    @property
    def run_id(self) -> str:
        return self.run_dir.name

    @property
    def manifest(self) -> Path:
        return self.run_dir / "manifest.json"

    @property
    def summary(self) -> Path:
        return self.run_dir / "summary.json"

    @property
    def rows(self) -> Path:
        return self.run_dir / "rows.jsonl"

    @property
    def scenarios(self) -> Path:
        return self.run_dir / "scenarios"

    @property
    def traces_dir(self) -> Path:
        return self.run_dir / "traces"

    @property
    def traces(self) -> Path:
        return self.traces_dir / "trials.jsonl"

    @property
    def store_root(self) -> Path:
        """The store a run belongs to: runs live at ``<root>/runs/<run_id>``."""
        return self.run_dir.parent.parent


def is_sealed(manifest: Mapping[str, Any]) -> bool:
    """A manifest that carries its seal: the run's last write landed."""
    return manifest.get("status") == "complete" and bool(manifest.get("content_hash"))
