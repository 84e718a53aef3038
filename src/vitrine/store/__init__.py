"""The run store: one directory per arm x repetition, written atomically and sealed by hash.

Names resolve on first use: ``vitrine runs list`` reads only the index and must not pay for
the benchmark model (pydantic, asyncio) that reading and writing whole runs needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "IncompleteRunError": "vitrine.store.errors",
    "ResumeMismatchError": "vitrine.store.errors",
    "RunStoreError": "vitrine.store.errors",
    "TamperedRunError": "vitrine.store.errors",
    "UnsupportedSchemaError": "vitrine.store.errors",
    "atomic_write_bytes": "vitrine.store.files",
    "atomic_write_json": "vitrine.store.files",
    "RunIndexEntry": "vitrine.store.index",
    "iter_history": "vitrine.store.index",
    "iter_index": "vitrine.store.index",
    "list_runs": "vitrine.store.index",
    "CURRENT_SCHEMA": "vitrine.store.layout",
    "PER_FILE_SCHEMA": "vitrine.store.layout",
    "ROWS_JSONL_SCHEMA": "vitrine.store.layout",
    "RunPaths": "vitrine.store.layout",
    "RUN_ID_PATTERN": "vitrine.store.naming",
    "new_run_id": "vitrine.store.naming",
    "resolve_root": "vitrine.store.naming",
    "sanitize_file_name": "vitrine.store.naming",
    "load_run": "vitrine.store.reader",
    "RunStore": "vitrine.store.run_store",
    "RunWriter": "vitrine.store.writer",
}

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'vitrine.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # the same names, for type checkers; a test keeps them equal to _EXPORTS
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
