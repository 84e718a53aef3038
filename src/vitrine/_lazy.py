"""One way for a public namespace to export names that load on first use.

A namespace lists its exports once, as the imports of its ``if TYPE_CHECKING:`` block: type
checkers read them as re-exports, and :func:`lazy_exports` reads the same block from the
module's source to learn where each name lives. So a name cannot be exported to one reader
and missing for the other, and ``import vitrine`` (or ``vitrine --help``) pays for none of the
modules behind it until a name is used::

    from typing import TYPE_CHECKING
    from vitrine._lazy import lazy_exports

    if TYPE_CHECKING:
        from vitrine._store.reader import load_run

    __getattr__, __dir__ = lazy_exports(__name__)

``__all__`` is set from the same block. It is not assigned in the namespace's own source,
because a type checker that cannot read a computed ``__all__`` would then export nothing.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["exported_names", "lazy_exports"]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def exported_names(source: str) -> dict[str, str]:
    """``{name: module}`` for every ``from module import name`` under ``if TYPE_CHECKING:``."""
    table: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and _is_type_checking(node.test)):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.module:
                for alias in statement.names:
                    table[alias.asname or alias.name] = statement.module
    return table


def lazy_exports(
    module_name: str,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the namespace ``module_name``; sets its ``__all__``."""
    module = sys.modules[module_name]
    table = exported_names(Path(str(module.__file__)).read_text(encoding="utf-8"))
    namespace = vars(module)

    def __getattr__(name: str) -> Any:
        source = table.get(name)
        if source is None:
            # A public namespace below this one is an attribute too (`vitrine.stats.x`).
            if (
                "__path__" in namespace
                and not name.startswith("_")
                and importlib.util.find_spec(f"{module_name}.{name}")
            ):
                return importlib.import_module(f"{module_name}.{name}")
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    namespace["__all__"] = sorted(table)
    return __getattr__, __dir__
