"""docs/scorers.md: every python block on the page runs, in order, as one reader would run it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import vitrine.scorers

PAGE = Path(__file__).resolve().parents[2] / "docs" / "scorers.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_page_has_examples_to_run():
    assert len(BLOCKS) >= 6


def test_every_python_block_runs_in_order(capsys):
    namespace: dict[str, object] = {"__name__": "scorers_page"}
    for number, block in enumerate(BLOCKS, start=1):
        try:
            exec(compile(block, f"{PAGE.name} block {number}", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the message is the point
            pytest.fail(f"block {number} of {PAGE.name} raised {exc!r}:\n{block}")
    printed = capsys.readouterr().out
    assert "case 'bare' has no metadata field 'days'" in printed
    assert "mode='loose' is not one of" in printed
    assert "was not admitted: refused" in printed


def test_the_page_covers_every_scorer_factory():
    text = PAGE.read_text(encoding="utf-8")
    factories = [name for name in vitrine.scorers.__all__ if name[0].islower()]
    assert factories
    assert [name for name in factories if f"`{name}" not in text] == []
