"""The HTML rendering of a suite report: one self-contained, printable page.

The page has inline CSS only and a Content-Security-Policy that forbids scripts and network
loads, so it opens offline from a CI artifact and stays inert even if an escape were missed.
Escaping itself is Jinja2's autoescape: every value from the report is untrusted text.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from itertools import groupby
from pathlib import Path
from typing import Any

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
from vitrine.reports._model import BenchmarkSection, CheckFacts, SuiteReport, TimelineEntry
from vitrine.store._naming import CACHE_ENV, cache_dir, resolve_root

__all__ = ["PackageLoader", "render_html", "visible_finalize"]

TEMPLATE_NAME = "report.html.j2"

# Colour is never the only signal: each status badge also carries a symbol and its word.
_SYMBOL: dict[fmt.StatusClass, str] = {
    "pass": "✓",
    "fail": "✗",
    "not-measured": "?",
    "na": "–",
    "other": "!",
}


class PackageLoader(BaseLoader):
    """Load a package's ``templates/`` through importlib.resources (works from a wheel/zip)."""

    def __init__(self, package: str = "vitrine.reports") -> None:
        self.package = package

    def get_source(self, environment: Environment, template: str) -> tuple[str, str, Any]:
        resource = files(self.package).joinpath("templates", template)
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
    """``templates`` in vitrine's cache folder (:func:`~vitrine.store._naming.cache_dir`), or
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
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
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


@lru_cache(maxsize=1)
def _environment() -> Environment:
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
        duration=fmt.format_duration,
        offset=fmt.format_offset,
        short_hash=fmt.short_hash,
    )
    env.globals.update(
        status_class=fmt.status_class,
        status_symbol=lambda status: _SYMBOL[fmt.status_class(status)],
        authority_label=fmt.authority_label,
        interval=fmt.format_interval,
        census_compact=fmt.census_compact,
        successes=fmt.successes_text,
        wlt=fmt.wlt_text,
        power_state=fmt.power_state,
        comparison_flags=fmt.comparison_flags,
        DASH=fmt.DASH,
    )
    directory = _template_cache_dir()
    if directory is not None:
        env.bytecode_cache = _TemplateCache(directory, _cache_salt(env))
    return env


@dataclass(frozen=True, slots=True)
class _Bar:
    """Where one timeline node sits on a 0-100 % axis of the suite's wall time."""

    entry: TimelineEntry
    left: float
    width: float


def _timeline_bars(entries: list[TimelineEntry]) -> list[_Bar]:
    span = max((e.started_s + e.duration_s for e in entries), default=0.0)
    if span <= 0:
        return [_Bar(e, 0.0, 0.0) for e in entries]
    bars = []
    for e in entries:
        left = min(100.0, 100.0 * e.started_s / span)
        # A visible sliver for instant nodes, so a completed node never looks like a missing one.
        width = max(0.6, 100.0 * e.duration_s / span) if e.duration_s > 0 else 0.6
        bars.append(_Bar(e, round(left, 2), round(min(width, 100.0 - left), 2)))
    return bars


@dataclass(frozen=True, slots=True)
class _BenchView:
    """A benchmark with its checks grouped by arm and its floor reasons numbered once.

    Every admitted check may carry the same not-derivable reason; printing it in every row
    buries the numbers, so each distinct reason becomes one footnote.
    """

    bench: BenchmarkSection
    arm_groups: list[tuple[str, list[CheckFacts]]]
    floor_notes: list[str]

    def note_number(self, check: CheckFacts) -> int | None:
        reason = check.floor.reason
        return None if not reason else self.floor_notes.index(reason) + 1


def _bench_view(bench: BenchmarkSection) -> _BenchView:
    groups = [(arm, list(rows)) for arm, rows in groupby(bench.checks, key=lambda c: c.arm_id)]
    notes: list[str] = []
    for check in bench.checks:
        if check.floor.reason and check.floor.reason not in notes:
            notes.append(check.floor.reason)
    return _BenchView(bench, groups, notes)


def render_html(report: SuiteReport) -> str:
    """Render the report as a complete HTML document (a string; the caller writes it)."""
    gates_total = sum(1 for g in report.gates if g.authority == "gate")
    gates_passed = sum(
        1 for g in report.gates if g.authority == "gate" and fmt.status_class(g.status) == "pass"
    )
    template = _environment().get_template(TEMPLATE_NAME)
    return template.render(
        report=report,
        exit_class=fmt.exit_class(report.exit_code),
        gates_total=gates_total,
        gates_passed=gates_passed,
        benches=[_bench_view(b) for b in report.benchmarks],
        runs_total=sum(len(b.runs) for b in report.benchmarks),
        gaps=fmt.unmeasured_items(report),
        bars=_timeline_bars(report.timeline),
        exit_glossary=fmt.EXIT_CODE_GLOSSARY,
    )
