"""The red-team run page: one self-contained, escaped HTML file.

Jinja2 autoescape renders every value; attack text and replies are untrusted by definition.
The page carries a Content-Security-Policy without scripts or network loads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from jinja2 import Environment, StrictUndefined, select_autoescape

from vitrine.redteam._runs import RUN_HTML, SignOff, finding_states, unresolved_of
from vitrine.store._files import atomic_write_bytes

__all__ = ["render_run_html", "write_run_html"]

_BANNER = {0: "s-pass", 1: "s-fail", 3: "s-nm", 4: "s-infra"}


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(
        autoescape=select_autoescape(default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        pct=lambda v: "—" if v is None else f"{v:.1f}%",
        rate=lambda v: "—" if v is None else f"{v:.3f}",
    )
    return env


def render_run_html(document: Mapping[str, Any], signoffs: Sequence[SignOff]) -> str:
    source = files("vitrine.redteam").joinpath("templates/redteam.html.j2").read_text("utf-8")
    findings = finding_states(document, signoffs)
    signed = sum(1 for f in findings if f["signoff"] is not None)
    return (
        _environment()
        .from_string(source)
        .render(
            run=document,
            banner=_BANNER.get(int(document.get("exit_code", 4)), "s-infra"),
            findings=findings,
            open_count=len(findings) - signed,
            signed_count=signed,
            # Older documents carry neither key; the page reads them as the soft gate does.
            scope=document.get("scope"),
            unresolved=unresolved_of(document),
        )
    )


def write_run_html(run_dir: Path, document: Mapping[str, Any], signoffs: Sequence[SignOff]) -> Path:
    path = run_dir / RUN_HTML
    atomic_write_bytes(path, render_run_html(document, signoffs).encode())
    return path
