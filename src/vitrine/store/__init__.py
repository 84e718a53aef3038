"""The run store: one directory per arm x repetition, written atomically and sealed by hash.

Names resolve on first use: ``vitrine runs list`` reads only the index and must not pay for
the benchmark model (pydantic, asyncio) that reading and writing whole runs needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine._bench.recovery import (
        UnsealedRun as UnsealedRun,
        find_unsealed as find_unsealed,
        resume_unsealed as resume_unsealed,
        resume_unsealed_async as resume_unsealed_async,
    )
    from vitrine._bench.runner import (
        resume_run as resume_run,
    )
    from vitrine.store._errors import (
        IncompleteRunError as IncompleteRunError,
        ResumeMismatchError as ResumeMismatchError,
        RunStoreError as RunStoreError,
        TamperedRunError as TamperedRunError,
        UnsupportedSchemaError as UnsupportedSchemaError,
    )
    from vitrine.store._files import (
        atomic_write_bytes as atomic_write_bytes,
        atomic_write_json as atomic_write_json,
    )
    from vitrine.store._index import (
        RunIndexEntry as RunIndexEntry,
        iter_history as iter_history,
        iter_index as iter_index,
        list_runs as list_runs,
    )
    from vitrine.store._layout import (
        CURRENT_SCHEMA as CURRENT_SCHEMA,
        PER_FILE_SCHEMA as PER_FILE_SCHEMA,
        ROWS_JSONL_SCHEMA as ROWS_JSONL_SCHEMA,
        RunPaths as RunPaths,
    )
    from vitrine.store._naming import (
        RUN_ID_PATTERN as RUN_ID_PATTERN,
        cache_dir as cache_dir,
        new_run_id as new_run_id,
        resolve_root as resolve_root,
        sanitize_file_name as sanitize_file_name,
    )
    from vitrine.store._reader import (
        load_run as load_run,
    )
    from vitrine.store._receipts import (
        ReceiptStore as ReceiptStore,
        new_session_id as new_session_id,
    )
    from vitrine.store._run_store import (
        RunStore as RunStore,
    )
    from vitrine.store._writer import (
        RunWriter as RunWriter,
    )

__getattr__, __dir__ = lazy_exports(__name__)
