"""The public surface: a small root, namespaces for the rest, and no user reaching inside.

A module whose dotted path has a part starting with an underscore is vitrine's implementation;
the shop (written as any user's suite would be) and the examples import only public modules.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import vitrine
from vitrine._lazy import exported_names

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "vitrine"
NAMESPACES = sorted(
    "vitrine." + path.name.removesuffix(".py")
    for path in SRC.iterdir()
    if not path.name.startswith("_") and (path.suffix == ".py" or (path / "__init__.py").exists())
)
USER_CODE = [ROOT / "shop" / "src" / "vitrine_shop", ROOT / "examples"]


def _private_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
            if node.module == "vitrine":
                modules += [f"vitrine.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] == "vitrine" and any(part.startswith("_") for part in parts[1:]):
                found.append(f"{path.name}:{node.lineno} {module}")
    return found


def test_the_root_holds_at_most_thirty_names_and_each_resolves_where_it_is_declared():
    table = exported_names(Path(vitrine.__file__).read_text(encoding="utf-8"))
    assert len(vitrine.__all__) <= 30, vitrine.__all__
    assert sorted(table) == vitrine.__all__
    for name, module in table.items():
        assert getattr(vitrine, name) is getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_every_name_of_every_namespace_resolves_and_is_documented(namespace):
    module = importlib.import_module(namespace)
    assert (module.__doc__ or "").strip(), f"{namespace} has no docstring"
    assert module.__all__, namespace
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            doc = value.__dict__.get("__doc__") if inspect.isclass(value) else value.__doc__
            assert (doc or "").strip(), f"{namespace}.{name} has no docstring"


def test_a_public_namespace_is_an_attribute_of_the_root():
    assert (
        vitrine.stats.wilson_interval is importlib.import_module("vitrine._stats").wilson_interval
    )
    with pytest.raises(AttributeError, match="no attribute 'nowhere'"):
        _ = vitrine.nowhere
    with pytest.raises(AttributeError):
        _ = vitrine._nowhere


@pytest.mark.parametrize("folder", USER_CODE, ids=lambda path: path.name)
def test_the_shop_and_the_examples_import_no_private_vitrine_module(folder):
    files = sorted(folder.rglob("*.py"))
    assert len(files) > 1
    found = [line for path in files for line in _private_imports(path)]
    assert found == []


def test_the_check_itself_sees_a_private_import(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from vitrine._bench.runner import run_benchmark\nfrom vitrine import _cli\n"
    )
    assert len(_private_imports(planted)) == 2


def test_a_strict_type_checker_sees_vitrines_types_in_a_user_file(tmp_path):
    user = tmp_path / "user_suite.py"
    user.write_text(
        textwrap.dedent(
            """
            import vitrine
            from vitrine.stats import binomial_tail_p

            case = vitrine.Case("c1", {"q": "hello"})
            wrong: int = case.id
            p: str = binomial_tail_p(3, 4, 0.5)
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(user)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # Both planted type errors are seen: the annotations reach the user's checker.
    assert 'expression has type "str", variable has type "int"' in done.stdout, done.stdout
    assert 'expression has type "float", variable has type "str"' in done.stdout, done.stdout
    assert "missing library stubs or py.typed" not in done.stdout
