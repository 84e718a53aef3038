"""The documentation site: every public name has a docstring and one place in the API page."""

from __future__ import annotations

import ast
import importlib
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


PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
# The page for people changing vitrine names the implementation on purpose, and says so.
CONTRIBUTOR_PAGES = {"contributing.md"}
# `vitrine.run.id` and its kind are span attribute names in the traces page, not Python names.
# The entry-point group an installed suite registers in: a name in package metadata, no module.
ENTRY_POINT_GROUP = importlib.import_module("vitrine._discovery").ENTRY_POINT_GROUP
SPAN_ATTRIBUTES = {
    value
    for value in vars(importlib.import_module("vitrine.tracing._semconv")).values()
    if isinstance(value, str) and value.startswith("vitrine.")
}
DOTTED = re.compile(r"(?<![\w./-])vitrine(?:\.\w+)+")
PRIVATE_PATH = re.compile(r"(?<![\w.-])(?:src/)?vitrine/(?:\w+/)*_[a-z]\w*")


def _unexported(dotted: str, namespaces: list[str]) -> str | None:
    """Why ``vitrine.x.y`` is not a name a user can import, or None when it is one."""
    parts = dotted.split(".")
    if any(part.startswith("_") and not part.endswith("__") for part in parts):
        return f"{dotted} names a private module"
    if len(parts) == 1 or parts[1] in vitrine.__all__ or parts[1].startswith("__"):
        return None
    namespace = ".".join(parts[:2])
    if namespace not in namespaces:
        return f"{dotted}: vitrine exports no {parts[1]}"
    if len(parts) > 2 and parts[2] not in importlib.import_module(namespace).__all__:
        return f"{dotted}: {namespace} exports no {parts[2]}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_a_page_names_only_what_users_can_import(page):
    text = page.read_text(encoding="utf-8")
    if page.name in CONTRIBUTOR_PAGES:
        return
    namespaces = _gen_api().namespaces()
    found = {dotted.rstrip(".") for dotted in DOTTED.findall(text)}
    problems = [
        why
        for dotted in sorted(found - SPAN_ATTRIBUTES - {"vitrine.py", ENTRY_POINT_GROUP})
        if (why := _unexported(dotted, namespaces))
    ]
    problems += [f"{path} is a private module's path" for path in PRIVATE_PATH.findall(text)]
    assert not problems, problems


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_every_python_block_of_a_page_parses_and_imports_public_names(page):
    namespaces = _gen_api().namespaces()
    for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
        tree = compile(block, page.name, "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vitrine."):
                imported = [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module == "vitrine":
                imported = [f"vitrine.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                imported = [a.name for a in node.names if a.name.split(".")[0] == "vitrine"]
            else:
                continue
            problems = [why for name in imported if (why := _unexported(name, namespaces))]
            assert not problems, (problems, block)


@pytest.mark.parametrize("page", [*PAGES, ROOT / "MIGRATION.md"], ids=lambda path: path.name)
def test_every_repository_path_a_page_names_exists(page):
    roots = "src|shop|tests|benchmarks|examples|docs|\\.github|\\.ci"
    named = re.findall(rf"`((?:{roots})/[^`\s:]*)", page.read_text(encoding="utf-8"))
    assert [path for path in named if not (ROOT / path).exists()] == []


def test_the_readme_is_short_and_every_link_in_it_resolves():
    readme = ROOT / "README.md"
    assert len(readme.read_bytes()) <= 10 * 1024, "the README is a front page: move detail to docs/"
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme.read_text(encoding="utf-8"))
    assert targets
    assert [t for t in targets if "://" not in t and not (ROOT / t).exists()] == []


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


def test_the_migration_ledger_records_trace_export_and_the_receipt_numbering():
    from vitrine.store._receipts import RECEIPT_SCHEMA, RECEIPT_SCHEMA_VERSION

    rows = (ROOT / "MIGRATION.md").read_text(encoding="utf-8").splitlines()
    trace = [r for r in rows if r.startswith("| Langfuse export |")]
    # Trace export exists: the row names the namespace, and nothing says it is still to come.
    assert len(trace) == 1 and "`vitrine.tracing`" in trace[0]
    assert "not yet" not in trace[0].lower()
    receipt = [r for r in rows if "schema 1.4" in r]
    # The protocol's receipt schema 1.4 is mapped onto the schema and version vitrine writes.
    assert len(receipt) == 1
    assert f"`{RECEIPT_SCHEMA}`, version {RECEIPT_SCHEMA_VERSION}" in receipt[0]
