"""Write a kill matrix as ``matrix.json`` and ``matrix.html``, atomically, plus optional copies."""

from __future__ import annotations

from pathlib import Path

from vitrine._plans.base import UsageError
from vitrine.mutants._html import render_matrix_html
from vitrine.mutants._report import MutantMatrix, matrix_json
from vitrine.store._files import atomic_write_bytes
from vitrine.store._naming import blocking_file

__all__ = ["HTML_NAME", "JSON_NAME", "refuse_directory", "write_matrix"]

JSON_NAME = "matrix.json"
HTML_NAME = "matrix.html"


def refuse_directory(path: Path | None, flag: str) -> None:
    """Refuse a report path that names a directory, or lies under a file, before anything runs."""
    if path is None:
        return

    if path.is_dir():
        raise UsageError(f"{flag} {path} is a directory; name a file to write")
    blocker = blocking_file(path.parent)
    if blocker is not None:
        raise UsageError(f"{flag} {path}: {blocker} is not a directory")


def write_matrix(
    matrix: MutantMatrix,
    session: Path,
    *,
    json_path: Path | None = None,
    html_path: Path | None = None,
) -> MutantMatrix:
    """Write the matrix into ``session`` (and the copies); return it with its artifacts stamped.

    Both texts are rendered before any file is touched, so a rendering error writes nothing.
    """

    targets = {"json": session / JSON_NAME, "html": session / HTML_NAME}
    if json_path is not None:
        targets["json_report"] = json_path
    if html_path is not None:
        targets["html_report"] = html_path
    stamped = matrix.model_copy(
        update={"artifacts": {key: path.as_posix() for key, path in targets.items()}}
    )
    texts = {
        "json": matrix_json(stamped).encode(),
        "html": render_matrix_html(stamped).encode(),
    }
    for key, path in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, texts["json" if key.startswith("json") else "html"])
    return stamped
