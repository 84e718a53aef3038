"""The documentation site: every public name has a docstring and one place in the API page."""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

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


def _gen_api() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_api", ROOT / "docs" / "gen_api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_api_page_is_the_one_its_script_writes():
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert page == _gen_api().render(), "docs/api.md is stale: run python docs/gen_api.py"


def test_the_api_page_holds_every_name_of_every_namespace_once():
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    sections = re.split(r"^## `([\w.]+)`$", page, flags=re.M)[1:]
    listed = dict(zip(sections[::2], sections[1::2], strict=True))
    assert sorted(listed) == sorted(_gen_api().namespaces())
    rendered = []
    for namespace, text in listed.items():
        here = re.findall(rf"^::: {re.escape(namespace)}\.(\w+)$", text, re.M)
        linked = re.findall(r"\[`(\w+)`\]\[([\w.]+)\]", text)
        assert sorted(here + [name for name, _ in linked]) == sorted(
            importlib.import_module(namespace).__all__
        ), namespace
        rendered += [f"{namespace}.{name}" for name in here]
        for name, target in linked:  # a link points at the same object, rendered elsewhere
            home, _, attribute = target.rpartition(".")
            assert attribute == name, target
            assert getattr(importlib.import_module(home), name) is getattr(
                importlib.import_module(namespace), name
            )
    assert len(rendered) == len(set(rendered))


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
