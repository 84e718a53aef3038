"""Importing the code a user names (a suite, a benchmark, a component) without being taken over.

A module named by ``--suite`` or ``--benchmark`` is someone else's code, run inside vitrine's
process. Whatever it raises while it is imported, or while one of its attributes is read or
called, must come back as a sentence and an exit class, never as a traceback or as the
module's own choice of exit code: ``sys.exit(0)`` at import would otherwise end ``vitrine
--all`` silently with the code of a pass. :class:`UserCodeError` carries that sentence; every
loader turns it into its own refusal.

A module or attribute that does not exist is an invalid argument (exit 2); a module that exists
but raises, exits or is interrupted while it runs is a broken installation (exit 4). A dataset
file it reads that cannot become cases is an invalid argument too (exit 2).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from vitrine._redact import describe_exception
from vitrine._vocabulary import ExitCode
from vitrine.errors import DatasetArgumentError, DatasetFileError, UserCodeError

__all__ = [
    "UserCodeError",
    "call_user_code",
    "describe_user_exception",
    "import_user_module",
    "user_attribute",
]

T = TypeVar("T")
_ABSENT = object()


def describe_user_exception(exc: BaseException) -> str:
    """How user code ended instead of returning, in words, whatever it raised.

    A BaseException is named for what it means (an exit, an interrupt); an exception whose
    own ``__str__`` raises is named by its type alone.
    """
    if isinstance(exc, SystemExit):
        try:
            code = repr(exc.code)[:40]
        except Exception:  # a code object whose repr breaks
            code = type(exc.code).__name__
        return f"it called sys.exit({code}) instead of returning"
    if isinstance(exc, KeyboardInterrupt):
        return "KeyboardInterrupt: it was interrupted"
    try:
        return describe_exception(exc)
    except Exception:  # its message cannot be rendered
        return f"{type(exc).__name__} (its message could not be shown)"


def call_user_code(label: str, doing: str, function: Callable[[], T]) -> T:
    """``function()``; anything it raises, exits or is interrupted by becomes a UserCodeError.

    ``label`` names the argument that led here (``--suite x:SUITE``), ``doing`` the step
    (``importing the module``); the sentence reads ``LABEL: DOING failed (WHAT HAPPENED)``.
    """
    try:
        return function()
    except UserCodeError:
        raise
    except (DatasetArgumentError, DatasetFileError) as exc:
        # A dataset the code reads is input the operator chose: a bad row or an unknown suffix
        # is an invalid argument (2), not a broken installation.
        raise UserCodeError(
            f"{label}: {doing} failed ({describe_user_exception(exc)})",
            ExitCode.INVALID_ARGUMENTS,
        ) from exc
    except BaseException as exc:  # user code may raise anything, even SystemExit
        raise UserCodeError(f"{label}: {doing} failed ({describe_user_exception(exc)})") from exc


def import_user_module(module_name: str, label: str) -> ModuleType:
    """Import ``module_name``; a missing module is a usage error, a failing one infrastructure."""

    def load() -> ModuleType:
        try:
            return importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            # Only the module the operator named (or a parent package of it) is an argument
            # error; a missing dependency inside it is a broken installation.
            if missing == module_name or module_name.startswith(missing + "."):
                raise UserCodeError(
                    f"{label}: no module named {module_name!r} on the import path",
                    ExitCode.INVALID_ARGUMENTS,
                ) from None
            raise UserCodeError(
                f"{label}: the module imports {missing!r}, which is not installed"
            ) from exc

    return call_user_code(label, "importing the module", load)


def user_attribute(module: ModuleType, attr: str, label: str) -> Any:
    """``module.attr``; absent is a usage error, a module ``__getattr__`` that fails is not."""

    def read() -> Any:
        try:
            return getattr(module, attr)
        except AttributeError:
            return _ABSENT

    value = call_user_code(label, f"reading {module.__name__}.{attr}", read)
    if value is _ABSENT:
        raise UserCodeError(
            f"{label}: module {module.__name__!r} has no attribute {attr!r}",
            ExitCode.INVALID_ARGUMENTS,
        )
    return value
