"""benchmarks/performance_page.py: the page's figures section is the generator's, whole."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "performance_page.py"
_SPEC = importlib.util.spec_from_file_location("vitrine_performance_page", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
page_module = importlib.util.module_from_spec(_SPEC)
sys.modules["vitrine_performance_page"] = page_module
_SPEC.loader.exec_module(page_module)


def _outcome(output: str, code: int | None) -> object:
    script = page_module.SCRIPTS[0]
    return page_module.Outcome(script, script.quick, output, code, 12.3, (1.5, 2.5, 3.5))


def test_the_section_names_the_machine_state_and_copies_each_output() -> None:
    section = page_module.render(
        [_outcome("mean 0.123 ms per trial\n", 0), _outcome("half", None)], True, (4.0, 3.0, 2.0)
    )
    assert section.startswith(page_module.BEGIN) and section.endswith(page_module.END + "\n")
    assert "4.00 / 3.00 / 2.00 before the first script" in section
    assert "1.50 / 2.50 / 3.50 after" in section
    assert re.search(r"at commit `[0-9a-f]{4,}`", section)
    assert re.search(r"\d+ CPUs", section) and "quick sizes" in section
    assert "mean 0.123 ms per trial" in section
    assert "stopped at the time limit" in section and "exit 0, 12 s" in section


def test_writing_replaces_only_the_section(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    old = f"{page_module.BEGIN}\nold figure 9.9 s\n{page_module.END}\n"
    page.write_text(f"# Title\n\nprose\n\n{old}\nafter\n")
    page_module.write_page(f"{page_module.BEGIN}\nnew\n{page_module.END}\n", page)
    assert page.read_text() == (
        f"# Title\n\nprose\n\n{page_module.BEGIN}\nnew\n{page_module.END}\n\nafter\n"
    )
    page.write_text("# no markers\n")
    with pytest.raises(SystemExit):
        page_module.write_page("x", page)


def test_outputs_are_stripped_of_this_machines_paths() -> None:
    text = f"{sys.executable} wrote {page_module.ROOT}/docs and /scratch/x/y"
    assert page_module._anonymous(text, "/scratch/x") == "python wrote ./docs and $TMP/y"


def test_the_published_page_holds_one_generated_section() -> None:
    text = page_module.PAGE.read_text(encoding="utf-8")
    assert text.count(page_module.BEGIN) == 1 and text.count(page_module.END) == 1
    section = text[text.index(page_module.BEGIN) :]
    assert "Load average" in section and "at commit" in section
