"""Runs the ```python blocks of a documentation page, so no example on the site can rot.

A page's blocks run in order in one namespace, in a temporary working directory, as a reader
pasting them one after another would: a later block may use what an earlier one defined.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(page: str) -> list[str]:
    """The ```python blocks of ``docs/<page>``, in order; a page without one is a mistake."""
    blocks = _BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))
    if not blocks:
        raise AssertionError(f"docs/{page} has no python block to run")
    return blocks


def run_page(page: str, workdir: Path) -> dict[str, object]:
    """Execute every python block of ``docs/<page>`` in ``workdir``; returns the namespace."""
    namespace: dict[str, object] = {"__name__": f"docs_{Path(page).stem}"}
    before = Path.cwd()
    os.chdir(workdir)
    try:
        for number, block in enumerate(python_blocks(page), start=1):
            exec(compile(block, f"docs/{page} block {number}", "exec"), namespace)
    finally:
        os.chdir(before)
    return namespace
