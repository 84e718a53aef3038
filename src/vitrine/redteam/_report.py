"""The red-team run page: one self-contained, escaped HTML file.

Jinja2 autoescape renders every value; attack text and replies are untrusted by definition.
The page carries a Content-Security-Policy without scripts or network loads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vitrine.redteam._runs import RUN_HTML, SignOff, finding_states, unresolved_of
from vitrine.reports._templates import environment
from vitrine.store._files import atomic_write_bytes

__all__ = ["render_run_html", "write_run_html"]

_BANNER = {0: "s-pass", 1: "s-fail", 3: "s-nm", 4: "s-infra"}


def render_run_html(document: Mapping[str, Any], signoffs: Sequence[SignOff]) -> str:
    findings = finding_states(document, signoffs)
    signed = sum(1 for f in findings if f["signoff"] is not None)
    return (
        environment()
        .get_template("redteam_run.html.j2")
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
