"""The run store: one directory per arm x repetition, written atomically and sealed by hash."""

from vitrine.store.errors import (
    IncompleteRunError,
    ResumeMismatchError,
    RunStoreError,
    TamperedRunError,
    UnsupportedSchemaError,
)
from vitrine.store.files import atomic_write_bytes, atomic_write_json
from vitrine.store.index import RunIndexEntry, iter_history, iter_index, list_runs
from vitrine.store.layout import CURRENT_SCHEMA, PER_FILE_SCHEMA, ROWS_JSONL_SCHEMA, RunPaths
from vitrine.store.naming import RUN_ID_PATTERN, new_run_id, resolve_root, sanitize_file_name
from vitrine.store.reader import load_run
from vitrine.store.run_store import RunStore
from vitrine.store.writer import RunWriter

__all__ = [
    "CURRENT_SCHEMA",
    "PER_FILE_SCHEMA",
    "ROWS_JSONL_SCHEMA",
    "RUN_ID_PATTERN",
    "IncompleteRunError",
    "ResumeMismatchError",
    "RunIndexEntry",
    "RunPaths",
    "RunStore",
    "RunStoreError",
    "RunWriter",
    "TamperedRunError",
    "UnsupportedSchemaError",
    "atomic_write_bytes",
    "atomic_write_json",
    "iter_history",
    "iter_index",
    "list_runs",
    "load_run",
    "new_run_id",
    "resolve_root",
    "sanitize_file_name",
]
