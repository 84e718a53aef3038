"""The board's Jinja2 environment: autoescape always, the report's formatting rules reused.

Every value a page shows may come from a model, a tool or a case file, so autoescape is on for
every template and control characters are made visible before escaping, exactly as in the
static HTML report. Numbers are formatted by :mod:`vitrine.reports._formatting`, so the board
and the report never disagree about how a p-value is rounded.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib.resources import files
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, StrictUndefined

from vitrine._board.catalog import KINDS
from vitrine.reports import _formatting as fmt
from vitrine.reports._html import PackageLoader, visible_finalize

__all__ = ["render", "static_file"]

_STATIC_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
_JSON_LIMIT = 4000


def _as_json(value: Any) -> str:
    """Evidence as indented JSON text, bounded: it is shown, escaped, never interpreted."""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= _JSON_LIMIT else text[:_JSON_LIMIT] + "\n… (truncated)"


def _verdict_class(verdict: str) -> str:
    return {
        "pass": "pass",
        "fail": "fail",
        "warn": "not-measured",
        "not measured": "not-measured",
    }.get(verdict, "other")


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("vitrine._board"),
        autoescape=True,
        undefined=StrictUndefined,
        finalize=visible_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        p=fmt.format_p,
        rate=fmt.format_rate,
        delta=fmt.format_delta,
        duration=fmt.format_duration,
        short_hash=fmt.short_hash,
        as_json=_as_json,
    )
    env.globals.update(
        status_class=fmt.status_class,
        verdict_class=_verdict_class,
        exit_class=fmt.exit_class,
        interval=fmt.format_interval,
        census_compact=fmt.census_compact,
        authority_label=fmt.authority_label,
        KINDS=KINDS,
        segment=lambda value: quote(str(value), safe=""),  # one URL path segment
        DASH=fmt.DASH,
    )
    return env


def render(template: str, **context: Any) -> str:
    """Render one board page to a complete HTML document."""
    return _environment().get_template(template).render(**context)


def static_file(name: str) -> tuple[bytes, str] | None:
    """The bytes and content type of one file of the board's static folder, if it exists."""
    suffix = name[name.rfind(".") :] if "." in name else ""
    if "/" in name or name.startswith(".") or suffix not in _STATIC_TYPES:
        return None
    resource = files("vitrine._board").joinpath("static", name)
    if not resource.is_file():
        return None
    return resource.read_bytes(), _STATIC_TYPES[suffix]
