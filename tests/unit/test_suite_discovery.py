"""Which suite a command loads: --suite, else [tool.vitrine] in pyproject.toml, else the one
installed suite; several or none are refused with the ways to choose."""

from __future__ import annotations

import sys
import uuid
from importlib import metadata
from pathlib import Path

import pytest

from vitrine._cli import main
from vitrine._discovery import ENTRY_POINT_GROUP, find_suite
from vitrine._outcomes import ExitCode
from vitrine.errors import SuiteLoadError

SHOP = "vitrine_shop.evals.suite:SUITE"

TOY = """
from vitrine._outcomes import ExitCode
from vitrine._plans.base import PlanOutcome, plan
from vitrine._suite import Suite


@plan("toy-offline")
async def toy_offline(request):
    return PlanOutcome(ExitCode.PASS, ["the toy ran"])


SUITE = Suite("toy", {"toy-offline": toy_offline}, {}, default_plan="toy-offline")
"""


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An importable toy suite module; yields its ``module:ATTR``."""
    name = f"found_toy_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(TOY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield f"{name}:SUITE"
    sys.modules.pop(name, None)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder, made the working directory."""
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def _entry_points(monkeypatch: pytest.MonkeyPatch, *pairs: tuple[str, str]) -> list[int]:
    """Make the installed suites exactly ``pairs`` of (name, module:ATTR); count the look-ups."""
    calls: list[int] = []
    found = [metadata.EntryPoint(name, value, ENTRY_POINT_GROUP) for name, value in pairs]

    def entry_points(**selection: str) -> list[metadata.EntryPoint]:
        calls.append(1)
        assert selection == {"group": ENTRY_POINT_GROUP}
        return found

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    return calls


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_named_suite_wins_over_everything(project, toy, monkeypatch, capsys):
    (project / "pyproject.toml").write_text('[tool.vitrine]\nsuite = "elsewhere:SUITE"\n')
    calls = _entry_points(monkeypatch, ("a", "a:SUITE"), ("b", "b:SUITE"))
    assert find_suite(toy).spec == toy
    code, out, err = _run(["--suite", toy, "--all"], capsys)
    assert code == 0, err
    assert "the toy ran" in out
    assert calls == []


def test_the_projects_pyproject_names_the_suite(project, toy, monkeypatch, capsys):
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "x"\n[tool.vitrine]\nsuite = "{toy}"\n'
    )
    calls = _entry_points(monkeypatch, ("a", "a:SUITE"), ("b", "b:SUITE"))
    code, out, err = _run(["--all"], capsys)
    assert code == 0, err
    assert "the toy ran" in out
    assert calls == []


def test_the_nearest_parent_holding_a_pyproject_is_read(project, toy, monkeypatch):
    (project / "pyproject.toml").write_text(f'[tool.vitrine]\nsuite = "{toy}"\n')
    nested = project / "src" / "pkg"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    source = find_suite(None)
    assert source.spec == toy
    assert "[tool.vitrine] suite in" in source.where and "pyproject.toml" in source.where


def test_a_pyproject_without_tool_vitrine_leaves_the_choice_to_the_installed_suites(
    project, toy, monkeypatch, capsys
):
    # The nearest pyproject decides: an outer one naming a suite is not read past it.
    (project.parent / "pyproject.toml").write_text('[tool.vitrine]\nsuite = "outer:SUITE"\n')
    (project / "pyproject.toml").write_text('[project]\nname = "mine"\n')
    calls = _entry_points(monkeypatch, ("toy", toy))
    code, out, err = _run(["--all"], capsys)
    assert code == 0, err
    assert "the toy ran" in out
    assert calls == [1]


def test_exactly_one_installed_suite_is_the_one(project, toy, monkeypatch):
    # One distribution seen twice on the path is still one suite.
    _entry_points(monkeypatch, ("toy", toy), ("toy", toy))
    source = find_suite(None)
    assert source.spec == toy
    assert source.label == f"the installed suite 'toy' ({toy})"


def test_several_installed_suites_are_refused_naming_them_and_how_to_choose(
    project, monkeypatch, capsys
):
    _entry_points(monkeypatch, ("shop", SHOP), ("toy", "toy_pkg.suite:SUITE"))
    code, out, err = _run(["--all"], capsys)
    assert code == ExitCode.INVALID_ARGUMENTS
    assert out == ""
    assert (
        "2 installed suites could run here: shop (vitrine_shop.evals.suite:SUITE), "
        "toy (toy_pkg.suite:SUITE); choose one with --suite MODULE:ATTR, or name it in "
        'pyproject.toml as [tool.vitrine] suite = "MODULE:ATTR"'
    ) in err


def test_no_suite_anywhere_is_refused_saying_how_to_name_one(project, monkeypatch, capsys):
    _entry_points(monkeypatch)
    code, _, err = _run(["--list-plans"], capsys)
    assert code == ExitCode.INVALID_ARGUMENTS
    assert "no suite to run" in err
    assert "--suite MODULE:ATTR" in err and "[tool.vitrine]" in err
    assert "vitrine.suites entry-point group" in err


def test_an_installed_suite_registered_by_a_distribution_on_the_path_is_found(
    project, tmp_path, monkeypatch, capsys
):
    # A real distribution's metadata, not a stand-in: the look-up is the standard library's.
    site = tmp_path / "site"
    (site / "found_pkg").mkdir(parents=True)
    (site / "found_pkg" / "__init__.py").write_text(TOY, encoding="utf-8")
    info = site / "found_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: found-pkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nfound = found_pkg:SUITE\n")
    monkeypatch.syspath_prepend(str(site))
    try:
        installed = {e.name for e in metadata.entry_points(group=ENTRY_POINT_GROUP)}
        if installed == {"found"}:  # the shop is not installed here: the one suite is ours
            assert find_suite(None).spec == "found_pkg:SUITE"
            return
        code, _, err = _run(["--all"], capsys)
        assert code == ExitCode.INVALID_ARGUMENTS
        assert "found (found_pkg:SUITE)" in err
        (project / "pyproject.toml").write_text('[tool.vitrine]\nsuite = "found_pkg:SUITE"\n')
        code, out, err = _run(["--all"], capsys)
        assert code == 0, err
        assert "the toy ran" in out
    finally:
        sys.modules.pop("found_pkg", None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[tool.vitrine\n", "is not valid TOML"),
        ("[tool.vitrine]\nsuite = 3\n", 'must be an import path, "MODULE:ATTR"; got 3'),
        ("[tool.vitrine]\nsuite = '  '\n", "must be an import path"),
    ],
)
def test_a_pyproject_that_names_no_usable_suite_is_refused(project, monkeypatch, text, message):
    (project / "pyproject.toml").write_text(text, encoding="utf-8")
    _entry_points(monkeypatch, ("shop", SHOP))
    with pytest.raises(SuiteLoadError) as caught:
        find_suite(None)
    assert message in str(caught.value)
    assert caught.value.exit_code is ExitCode.INVALID_ARGUMENTS


def test_a_found_suite_that_does_not_load_is_refused_naming_where_it_was_found(project, capsys):
    (project / "pyproject.toml").write_text('[tool.vitrine]\nsuite = "no_such_module_q:SUITE"\n')
    code, _, err = _run(["--all"], capsys)
    assert code == ExitCode.INVALID_ARGUMENTS
    assert "[tool.vitrine] suite in pyproject.toml (no_such_module_q:SUITE)" in err
    assert "no module named 'no_such_module_q'" in err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--help"], 0),
        (["run", "-h"], 0),
        (["serve", "--help"], 0),
        (["--version"], 0),
        (["--repetitions"], 2),
        (["serve", "--port", "0"], 2),
    ],
)
def test_help_version_and_refused_arguments_look_for_no_suite(
    argv, expected, project, monkeypatch, capsys
):
    (project / "pyproject.toml").write_text("[tool.vitrine\n")  # refused, were it read
    calls = _entry_points(monkeypatch, ("a", "a:SUITE"), ("b", "b:SUITE"))
    code, _, err = _run(argv, capsys)
    assert code == expected
    assert "TOML" not in err and "installed suites" not in err
    assert calls == []
