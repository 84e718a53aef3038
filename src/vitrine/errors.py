"""The one root of every error vitrine raises on purpose.

``except vitrine.VitrineError`` catches a refused argument, a damaged run, a provider that
failed or a report that cannot be read, and nothing that is a bug in the caller's own code.
Each concrete error also keeps its built-in base (``ValueError``, ``RuntimeError``, ...), so
code that caught those before keeps working.
"""

from __future__ import annotations

__all__ = ["VitrineError"]


class VitrineError(Exception):
    """Base class of the errors vitrine raises deliberately, each with a sentence that says why."""
