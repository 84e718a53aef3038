"""Why a run directory was refused. Every message names the run and says what to do."""

from __future__ import annotations

from vitrine.errors import (
    IncompleteRunError,
    ResumeMismatchError,
    RunStoreError,
    TamperedRunError,
    UnsupportedSchemaError,
)

__all__ = [
    "IncompleteRunError",
    "ResumeMismatchError",
    "RunStoreError",
    "TamperedRunError",
    "UnsupportedSchemaError",
]
