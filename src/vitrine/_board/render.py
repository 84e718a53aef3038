"""The board's pages: rendered through the one template environment the HTML report uses.

Escaping, the visible control characters and number formatting are those of
:func:`vitrine.reports._templates.environment`, so the board and the report never disagree
about how a value is shown; the board adds only its catalogue of run kinds.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from vitrine._board.catalog import KINDS
from vitrine._board.fields import field_table
from vitrine.reports._templates import environment

__all__ = ["FAVICON", "render", "static_file"]

_STATIC_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
# The board's icon, served at /favicon.ico too: browsers ask for that address on every page.
FAVICON = "favicon.svg"


def render(template: str, **context: Any) -> str:
    """Render one board page to a complete HTML document."""
    return (
        environment()
        .get_template(f"board/{template}")
        .render(KINDS=KINDS, fields=field_table, **context)
    )


def static_file(name: str) -> tuple[bytes, str] | None:
    """The bytes and content type of one file of the board's static folder, if it exists."""
    suffix = name[name.rfind(".") :] if "." in name else ""
    if "/" in name or name.startswith(".") or suffix not in _STATIC_TYPES:
        return None
    resource = files("vitrine._board").joinpath("static", name)
    if not resource.is_file():
        return None
    return resource.read_bytes(), _STATIC_TYPES[suffix]
