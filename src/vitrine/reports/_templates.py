"""The one Jinja2 environment and template folder behind every HTML page vitrine renders.

The suite report, the board's pages, the mutants' kill matrix, the red-team run page and the
RAG report all load from ``vitrine/reports/templates/`` (the board's pages under ``board/``)
through :func:`environment`, so escaping, number formatting and the compiled-template cache
are decided once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from jinja2 import (
    BaseLoader,
    Environment,
    FileSystemBytecodeCache,
    StrictUndefined,
    TemplateNotFound,
    select_autoescape,
)
from jinja2.bccache import Bucket
from markupsafe import Markup

from vitrine.reports import _formatting as fmt
from vitrine.store._naming import CACHE_ENV, cache_dir, resolve_root
from vitrine.store._private import private_dirs

__all__ = ["TEMPLATE_NAME", "PackageLoader", "as_json", "environment", "visible_finalize"]

# The template whose compile-time settings salt the cache key.
TEMPLATE_NAME = "report.html.j2"
_JSON_LIMIT = 4000

# Colour is never the only signal: each status badge also carries a symbol and its word.
_SYMBOL: dict[fmt.StatusClass, str] = {
    "pass": "✓",
    "fail": "✗",
    "not-measured": "?",
    "na": "–",
    "other": "!",
}


class PackageLoader(BaseLoader):
    """Load ``vitrine/reports/templates/`` through importlib.resources (works from a wheel)."""

    def get_source(self, environment: Environment, template: str) -> tuple[str, str, Any]:
        resource = files("vitrine.reports").joinpath("templates", *template.split("/"))
        if not resource.is_file():
            raise TemplateNotFound(template)
        return resource.read_text(encoding="utf-8"), template, lambda: True


def visible_finalize(value: Any) -> Any:
    # Runs on every {{ }} value before autoescape: control characters become visible text.
    if isinstance(value, str) and not isinstance(value, Markup):
        return fmt.visible(value)
    return value


class _TemplateCache(FileSystemBytecodeCache):
    """Jinja2's file cache of compiled templates, keyed also by the environment's settings.

    Compiling the report template costs more than rendering it, in every process. Jinja2
    already recompiles when a template's source changes; the salt adds what else shapes the
    generated code (the Jinja2 version, the syntax, whitespace and escaping options, which
    filters and tests exist and what each is passed), so a cache shared by two versions of
    vitrine never serves code compiled for the other. A cache that cannot be read or written
    costs speed, never a report.
    """

    def __init__(self, directory: Path, salt: str) -> None:
        super().__init__(str(directory))
        self._salt = salt

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        return super().get_cache_key(f"{self._salt}|{name}", filename)

    def load_bytecode(self, bucket: Bucket) -> None:
        with contextlib.suppress(OSError):
            super().load_bytecode(bucket)

    def dump_bytecode(self, bucket: Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def _template_cache_dir() -> Path | None:
    """``templates`` in vitrine's cache folder (:func:`~vitrine.store.cache_dir`), or
    None when it cannot be made or is not safe to load code from.

    Loading a cached template executes it, so a folder that another user could write to is
    never used. Without ``$VITRINE_CACHE_DIR`` the cache lives in the store root the
    environment names, and only when that root exists: a report written to a store elsewhere
    (``--output``) must not leave a ``.vitrine`` folder behind just to hold a cache.
    """
    if not os.environ.get(CACHE_ENV, "").strip() and not resolve_root().is_dir():
        return None
    directory = cache_dir("templates")
    try:
        private_dirs(directory)  # its parents too: the cache folder, perhaps the store root
        info = directory.stat()
    except OSError:
        return None
    getuid = getattr(os, "getuid", None)
    if getuid is not None and (
        info.st_uid != getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    ):
        return None
    return directory


def _pass_args(functions: dict[str, Any]) -> list[tuple[str, str]]:
    # The compiled call passes a context or environment first when the function asks for one.
    return sorted((name, str(getattr(f, "jinja_pass_arg", None))) for name, f in functions.items())


def _cache_salt(env: Environment) -> str:
    settings = (
        jinja2.__version__,
        env.block_start_string,
        env.block_end_string,
        env.variable_start_string,
        env.variable_end_string,
        env.comment_start_string,
        env.comment_end_string,
        env.line_statement_prefix,
        env.line_comment_prefix,
        env.trim_blocks,
        env.lstrip_blocks,
        env.newline_sequence,
        env.keep_trailing_newline,
        env.optimized,
        env.is_async,
        env.autoescape(TEMPLATE_NAME) if callable(env.autoescape) else env.autoescape,
        str(getattr(env.finalize, "jinja_pass_arg", None)),
        _pass_args(env.filters),
        _pass_args(env.tests),
    )
    return hashlib.sha256(repr(settings).encode()).hexdigest()[:16]


def as_json(value: Any) -> str:
    """Evidence as indented JSON text, bounded: it is shown, escaped, never interpreted."""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= _JSON_LIMIT else text[:_JSON_LIMIT] + "\n… (truncated)"


def _number(value: Any, places: int = 3) -> str:
    return fmt.DASH if value is None else f"{float(value):.{places}f}"


def _percent(value: float | None) -> str:
    return fmt.DASH if value is None else f"{value:.1f}%"


def _verdict_class(verdict: str) -> str:
    return {
        "pass": "pass",
        "fail": "fail",
        "warn": "not-measured",
        "not measured": "not-measured",
    }.get(verdict, "other")


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The one template environment of every HTML page vitrine writes or serves.

    Autoescape is on for every template and string, undefined names raise, and control
    characters become visible before escaping: every value a page shows may come from a model,
    a tool or a case file. Numbers go through :mod:`vitrine.reports._formatting`, so the report,
    the board, the kill matrix, the red-team and RAG pages never round a p-value differently.
    """
    env = Environment(
        loader=PackageLoader(),
        autoescape=select_autoescape(
            enabled_extensions=("html", "html.j2", "j2"), default_for_string=True, default=True
        ),
        undefined=StrictUndefined,
        finalize=visible_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        p=fmt.format_p,
        rate=fmt.format_rate,
        delta=fmt.format_delta,
        effect=fmt.format_effect,
        duration=fmt.format_duration,
        offset=fmt.format_offset,
        short_hash=fmt.short_hash,
        as_json=as_json,
        num=_number,
    )
    env.globals.update(
        status_class=fmt.status_class,
        status_symbol=lambda status: _SYMBOL[fmt.status_class(status)],
        verdict_class=_verdict_class,
        exit_class=fmt.exit_class,
        authority_label=fmt.authority_label,
        interval=fmt.format_interval,
        census_compact=fmt.census_compact,
        successes=fmt.successes_text,
        wlt=fmt.wlt_text,
        power_state=fmt.power_state,
        comparison_flags=fmt.comparison_flags,
        gate_problems=fmt.gate_problems,
        segment=lambda value: quote(str(value), safe=""),  # one URL path segment
        pct=_percent,
        fraction=lambda value: fmt.DASH if value is None else f"{value:.3f}",
        DASH=fmt.DASH,
    )
    directory = _template_cache_dir()
    if directory is not None:
        env.bytecode_cache = _TemplateCache(directory, _cache_salt(env))
    return env
