"""``vitrine board export DIR``: the board as static files, for sharing or a CI artifact.

The exported pages are the board's own pages rendered in read-only mode (no forms, no filters,
links to sibling files), so a copy says exactly what the live board says. Each file is written
atomically and the index last, so a reader never follows a link from it to a missing page.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from urllib.parse import quote

from vitrine._board.app import Board, static_name
from vitrine._board.query import IndexQuery
from vitrine._board.render import FAVICON
from vitrine.store._files import atomic_write_bytes, read_json

__all__ = ["export_board"]


def export_board(root: Path, directory: Path, *, max_runs: int = 1000) -> int:
    """Write the static board; returns how many pages were written."""
    board = Board(root, persist_cache=False, static=True)
    headers = board.catalog.headers()
    (directory / "static").mkdir(parents=True, exist_ok=True)
    for name in ("board.css", "board.js", FAVICON):
        resource = files("vitrine._board").joinpath("static", name)
        atomic_write_bytes(directory / "static" / name, resource.read_bytes())

    pages: dict[str, bytes] = {}

    def page(path: str) -> None:
        route, _, query = path.partition("?")
        reply = board.get(route, {"hash": [query.removeprefix("hash=")]} if query else {})
        pages[static_name(path)] = reply.body

    for header in headers[:max_runs]:
        page(f"/run/{header.ref}")
        if header.kind == "benchmark":
            for case_id in _case_ids(root / header.location):
                page(f"/trial/{header.key}/{quote(case_id, safe='')}")
    for path in ("/controls", "/redteam", "/trends"):
        page(path)
    for definition_hash in sorted({h.definition_hash for h in headers if h.kind == "benchmark"}):
        page(f"/trends?hash={definition_hash}")
    for name, body in pages.items():
        atomic_write_bytes(directory / name, body)
    index = board.index(IndexQuery(per=max(1, len(headers))))
    atomic_write_bytes(directory / "index.html", index.body)
    return len(pages) + 1


def _case_ids(run_dir: Path) -> list[str]:

    try:
        manifest = read_json(run_dir / "manifest.json")
    except (OSError, ValueError):
        return []
    return [str(c) for c in manifest.get("case_ids") or ()]
