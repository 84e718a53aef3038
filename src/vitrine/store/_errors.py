"""Why a run directory was refused. Every message names the run and says what to do."""

from __future__ import annotations

from vitrine.errors import VitrineError

__all__ = [
    "IncompleteRunError",
    "ResumeMismatchError",
    "RunStoreError",
    "TamperedRunError",
    "UnsupportedSchemaError",
]


class RunStoreError(VitrineError):
    """A run directory that cannot be read or written as asked."""


class TamperedRunError(RunStoreError):
    """A sealed run whose content no longer matches its seal."""


class IncompleteRunError(RunStoreError):
    """A run that was never sealed: its process stopped before completing it."""


class UnsupportedSchemaError(RunStoreError):
    """A run written by a schema version this library cannot read."""


class ResumeMismatchError(RunStoreError):
    """A resume asked for with a different benchmark definition or arm than the run used."""
