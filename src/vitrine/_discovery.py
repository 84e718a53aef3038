"""Which suite a command loads: the one named, the project's, or the one installed.

In order: ``--suite MODULE:ATTR``; else ``[tool.vitrine] suite = "MODULE:ATTR"`` in the
``pyproject.toml`` of the working directory, or of its nearest parent that has one; else the
suite an installed package registers in the ``vitrine.suites`` entry-point group, when exactly
one does. Several installed suites, or none, are refused (exit 2) with the ways to choose.

Nothing here runs for ``--help``, ``--version`` or a refused argument: reading the installed
packages' metadata costs more than the whole of ``vitrine --help``, so the standard-library
modules that do it are imported only when a suite is looked for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vitrine.errors import SuiteLoadError

__all__ = ["ENTRY_POINT_GROUP", "HOW_TO_NAME", "SuiteSource", "find_suite"]

ENTRY_POINT_GROUP = "vitrine.suites"
# Every refusal that asks for a suite says the same two ways to name one.
HOW_TO_NAME = (
    "choose one with --suite MODULE:ATTR, or name it in pyproject.toml as [tool.vitrine] "
    'suite = "MODULE:ATTR"'
)


@dataclass(frozen=True, slots=True)
class SuiteSource:
    """A suite's import path and where it was found, as refusals name it."""

    spec: str
    where: str  # "--suite", "[tool.vitrine] suite in pyproject.toml", "the installed suite 'x'"

    @property
    def label(self) -> str:
        """``--suite mod:X``, or ``<where> (mod:X)`` for a suite nobody typed."""
        if self.where == "--suite":
            return f"--suite {self.spec}"
        return f"{self.where} ({self.spec})"


def find_suite(given: str | None, start: Path | None = None) -> SuiteSource:
    """The suite to load: ``given`` (the ``--suite`` value), else the project's, else the one
    installed. ``start`` is where the search for ``pyproject.toml`` begins (the working
    directory by default). Raises :class:`SuiteLoadError` (exit 2) when none or several
    could be meant."""
    if given is not None:
        # An empty value is kept: the loader refuses it as a mistake, never as "the default".
        return SuiteSource(given, "--suite")
    configured = _from_pyproject(Path.cwd() if start is None else start)
    return configured if configured is not None else _from_entry_points()


def _nearest_pyproject(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _shown(path: Path) -> str:
    """``path`` as the user would type it from the working directory."""
    try:
        return os.path.relpath(path)
    except ValueError:  # on another drive
        return str(path)


def _from_pyproject(start: Path) -> SuiteSource | None:
    path = _nearest_pyproject(start)
    if path is None:
        return None
    import tomllib  # noqa: PLC0415 - only a command that needs a suite reads the file

    shown = _shown(path)
    try:
        document: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or "it is not UTF-8 text"
        raise SuiteLoadError(
            f"{shown} cannot be read ({reason}), so its [tool.vitrine] suite is unknown"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise SuiteLoadError(
            f"{shown} is not valid TOML ({exc}), so its [tool.vitrine] suite is unknown"
        ) from None
    tool = document.get("tool")
    table = tool.get("vitrine") if isinstance(tool, dict) else None
    if not isinstance(table, dict) or "suite" not in table:
        return None
    spec = table["suite"]
    if not isinstance(spec, str) or not spec.strip():
        raise SuiteLoadError(
            f'[tool.vitrine] suite in {shown} must be an import path, "MODULE:ATTR"; got {spec!r}'
        )
    return SuiteSource(spec, f"[tool.vitrine] suite in {shown}")


def _from_entry_points() -> SuiteSource:
    from importlib import metadata  # noqa: PLC0415 - costs more than --help itself

    # A set: one distribution seen twice on the path (an editable install and a copy) is one
    # suite, not two to choose between.
    found = {
        (entry.name, f"{entry.module}:{entry.attr}" if entry.attr else entry.module)
        for entry in metadata.entry_points(group=ENTRY_POINT_GROUP)
    }
    if not found:
        raise SuiteLoadError(
            f"no suite to run: none is named and no installed package registers one; "
            f"{HOW_TO_NAME}, or install a package that registers one in the "
            f"{ENTRY_POINT_GROUP} entry-point group"
        )
    if len(found) > 1:
        listed = ", ".join(f"{name} ({spec})" for name, spec in sorted(found))
        raise SuiteLoadError(
            f"{len(found)} installed suites could run here: {listed}; {HOW_TO_NAME}"
        )
    ((name, spec),) = found
    return SuiteSource(spec, f"the installed suite {name!r}")
