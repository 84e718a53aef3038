"""The documentation site: every public name has a docstring and a place in the API page."""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import vitrine

ROOT = Path(__file__).resolve().parents[2]


def _own_docstring(value: object) -> str | None:
    # A class inherits its base's __doc__ through getattr; only its own counts.
    if inspect.isclass(value):
        doc = value.__dict__.get("__doc__")
        return doc if isinstance(doc, str) else None
    return getattr(value, "__doc__", None)


@pytest.mark.parametrize("name", sorted(vitrine.__all__))
def test_every_public_name_has_a_docstring(name):
    assert (_own_docstring(getattr(vitrine, name)) or "").strip(), f"vitrine.{name}"


def test_the_api_page_documents_every_export_where_the_table_says():
    page = (ROOT / "docs" / "api.md").read_text()
    documented = dict(
        (name, module) for module, name in re.findall(r"^::: ([\w.]+)\.(\w+)$", page, re.M)
    )
    assert documented == vitrine._EXPORTS


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None
    or importlib.util.find_spec("mkdocstrings_handlers") is None,
    reason="the docs extra (mkdocs, mkdocstrings-python) is not installed",
)
def test_the_site_builds_strictly(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    api = (tmp_path / "api" / "index.html").read_text()
    assert "Ask the subject for its response" in api  # Arm.respond, from its docstring
