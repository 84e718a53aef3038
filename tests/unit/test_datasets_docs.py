"""The datasets page: every Python block runs, in order, in a directory of its own.

A data block (```yaml, ```json, ```csv) right after a line that ends with a file name in
backticks and a colon (`` `translate.yaml`: ``) is written to that file first, so the page
shows the file the code then loads.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "datasets.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
NAMED = re.compile(r"`([\w.-]+)`:\s*$")
NEEDS_DATASETS = re.compile(r"^import datasets$", re.M)


def _blocks() -> list[tuple[str, str, str | None]]:
    """(language, code, the file name the line before it names) for each fenced block."""
    text = PAGE.read_text(encoding="utf-8")
    found = []
    for match in BLOCK.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        named = NAMED.search(before)
        found.append((match[1], match[2], named[1] if named else None))
    return found


def _run_page(directory: Path, monkeypatch: pytest.MonkeyPatch, *, hugging_face: bool) -> int:
    monkeypatch.chdir(directory)
    namespace: dict[str, object] = {"__name__": "datasets_page"}
    ran = 0
    for language, code, named in _blocks():
        if language != "python":
            if named:
                (directory / named).write_text(code, encoding="utf-8")
            continue
        if bool(NEEDS_DATASETS.search(code)) != hugging_face:
            continue
        exec(compile(code, f"{PAGE.name} block {ran + 1}", "exec"), namespace)
        ran += 1
    return ran


def test_the_page_has_the_blocks_this_test_runs():
    blocks = _blocks()
    python = [code for language, code, _ in blocks if language == "python"]
    assert len(python) >= 5
    assert any(named == "translate.yaml" for _, _, named in blocks)
    # The end-to-end example writes its own JSONL and runs an evaluation that reads metadata.
    assert "write_text(" in python[0] and "capitals.jsonl" in python[0]
    assert 'case.metadata["expected"]' in python[0] and "vitrine.Evaluation(" in python[0]


def test_every_python_block_of_the_page_runs(tmp_path, monkeypatch, capsys):
    assert _run_page(tmp_path, monkeypatch, hugging_face=False) >= 4
    out = capsys.readouterr().out
    assert "broken.jsonl line 2: field 'input': missing" in out
    assert (tmp_path / "translate.yaml").is_file()
    assert (tmp_path / ".vitrine").is_dir()


@pytest.mark.skipif(
    importlib.util.find_spec("datasets") is None, reason="the datasets extra is not installed"
)
def test_the_hugging_face_block_runs(tmp_path, monkeypatch):
    assert _run_page(tmp_path, monkeypatch, hugging_face=True) == 1
