"""One command group: every command reachable, aliases routed to the same code, one exit enum."""

from __future__ import annotations

import ast
import builtins
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from vitrine import _cli as cli
from vitrine._cli import ALIASES, COMMANDS, PLAN_COMMANDS, SUBCOMMANDS, main
from vitrine._commandline import CommandRefusal, print_error
from vitrine._outcomes import ExitCode

SRC = Path(cli.__file__).resolve().parent
ERROR_LINE = re.compile(r"^vitrine(?: [\w-]+)*: error: \S.*\S$")

TOY_SUITE = """
from vitrine._outcomes import ExitCode
from vitrine._plans.base import PlanOutcome, plan
from vitrine._suite import Suite

REQUESTS = []


@plan("toy-offline", description="records the request and passes")
async def toy_offline(request):
    REQUESTS.append(request)
    return PlanOutcome(ExitCode.PASS, ["toy ran"])


@plan("toy-other", description="records the request and fails")
async def toy_other(request):
    REQUESTS.append(request)
    return PlanOutcome(ExitCode.MEASURED_FAILURE, ["toy failed"])


SUITE = Suite(
    name="toy",
    plans={"toy-offline": toy_offline, "toy-other": toy_other},
    scenarios={},
    default_plan="toy-offline",
    modes={"self-test", "controls-only"},
)
"""


@pytest.fixture
def toy(tmp_path, monkeypatch):
    name = f"toy_group_suite_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(TOY_SUITE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def _requests_of(toy: str, argv: list[str], capsys) -> tuple[int, list, str]:
    module = __import__(toy)
    module.REQUESTS.clear()
    code = main(argv)
    out = capsys.readouterr().out
    return code, list(module.REQUESTS), out


@pytest.mark.parametrize(
    ("command", "alias"),
    [
        (["run", "--all"], ["--all"]),
        (["run", "--eval-plan", "toy-other"], ["--eval-plan", "toy-other"]),
        (["self-test"], ["--self-test"]),
        (["controls"], ["--controls-only"]),
        (["run", "--self-test"], ["self-test"]),
    ],
)
def test_a_plan_command_and_its_protocol_flag_make_the_same_request(toy, command, alias, capsys):
    code_a, requests_a, out_a = _requests_of(toy, [*command, "--suite", toy], capsys)
    code_b, requests_b, out_b = _requests_of(toy, [*alias, "--suite", toy], capsys)
    assert len(requests_a) == 1
    assert (code_a, requests_a, out_a) == (code_b, requests_b, out_b)


def test_self_test_and_controls_switch_on_their_mode_and_nothing_else(toy, capsys):
    _, (self_test,), _ = _requests_of(toy, ["self-test", "--suite", toy], capsys)
    _, (controls,), _ = _requests_of(toy, ["controls", "--suite", toy], capsys)
    assert (self_test.mode, controls.mode) == ("self-test", "controls-only")


def test_a_plan_command_refuses_a_mode_it_cannot_combine_with(toy, capsys):
    code = main(["self-test", "--controls-only", "--suite", toy])
    err = capsys.readouterr().err
    assert code == ExitCode.INVALID_ARGUMENTS
    assert "--self-test cannot be combined with --controls-only" in err


def test_run_without_a_selection_runs_nothing_and_says_why(capsys):
    code = main(["run"])
    err = capsys.readouterr().err
    assert code == ExitCode.INVALID_ARGUMENTS
    assert "vitrine: error: nothing to run" in err


def test_an_unknown_command_is_refused_with_the_list_of_commands(capsys):
    code = main(["lint"])
    err = capsys.readouterr().err
    assert code == ExitCode.INVALID_ARGUMENTS
    assert "vitrine: error: unknown command 'lint': choose one of run, self-test" in err


def test_every_command_is_listed_once_and_routed_somewhere():
    assert set(COMMANDS) == set(PLAN_COMMANDS) | set(SUBCOMMANDS)
    assert not set(PLAN_COMMANDS) & set(SUBCOMMANDS)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_answers_help_under_its_own_name(name, capsys):
    code = main([name, "--help"])
    out = capsys.readouterr().out
    assert code == ExitCode.PASS
    assert out.startswith(f"usage: vitrine {name}")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_refuses_an_unknown_option_with_exit_2_and_one_sentence(name, capsys):
    code = main([name, "--no-such-option"])
    err = capsys.readouterr().err
    assert code == ExitCode.INVALID_ARGUMENTS
    assert "Traceback" not in err
    assert ERROR_LINE.match(err.strip().splitlines()[-1]), err


def test_the_group_help_lists_every_command_and_documents_every_alias(capsys):
    assert main(["--help"]) == ExitCode.PASS
    out = capsys.readouterr().out
    for name, line in COMMANDS.items():
        assert re.search(rf"^  {re.escape(name)}\s+{re.escape(line)}$", out, re.M), name
    for flag, command in ALIASES.items():
        assert re.search(
            rf"vitrine {re.escape(flag)}\s+is\s+vitrine {re.escape(command)}$", out, re.M
        )


def test_every_alias_names_a_flag_the_group_parser_accepts():
    parser = cli.build_parser()
    accepted = {option for action in parser._actions for option in action.option_strings}
    for flag, command in ALIASES.items():
        assert flag.split()[0] in accepted
        assert command.split()[0] in PLAN_COMMANDS


def test_the_store_option_has_one_meaning_under_both_spellings():
    parser = cli.build_parser("run")
    assert parser.parse_args(["--store", "a"]).output == Path("a")
    assert parser.parse_args(["--output", "a"]).output == Path("a")


def test_help_of_every_command_imports_no_heavy_module():
    script = textwrap.dedent(
        f"""
        import contextlib, io, sys
        from vitrine._cli import main
        for name in {list(COMMANDS)!r}:
            with contextlib.redirect_stdout(io.StringIO()):
                assert main([name, "--help"]) == 0, name
        heavy = {{"scipy", "rich", "pydantic", "numpy", "torch", "fastapi", "openai"}}
        print("HEAVY=" + ",".join(sorted({{m.split(".")[0] for m in sys.modules}} & heavy)))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "HEAVY=\n" in result.stdout


def test_a_refusal_carries_an_exit_code_from_the_one_enum(capsys):
    refusal = CommandRefusal("no", 4)
    assert refusal.code is ExitCode.INFRASTRUCTURE
    with pytest.raises(ValueError):
        CommandRefusal("no", 7)
    print_error("vitrine x", "one sentence")
    assert capsys.readouterr().err == "vitrine x: error: one sentence\n"


# --- one exit-code enum, one exception root: checked in the source itself ----------------------

_EXIT_LIKE = re.compile(r"(OK|FAIL|FOUND|USAGE|INFRA|INVALID|NOT_MEASURED|EXIT|ARGUMENTS)")
_EXITING_CALLS = {"sys.exit", "os._exit", "SystemExit", "exit"}


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _small_ints(node: ast.expr) -> bool:
    values = node.elts if isinstance(node, ast.Tuple) else [node]
    return all(
        isinstance(v, ast.Constant) and type(v.value) is int and 0 <= v.value <= 4 for v in values
    )


def _stray_exit_codes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    enum_bodies = {
        id(statement)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name == "ExitCode"
        for statement in node.body
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and id(node) not in enum_bodies:
            names = " ".join(ast.unparse(target) for target in node.targets)
            if _EXIT_LIKE.search(names) and _small_ints(node.value):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        exits = isinstance(node, ast.Call) and ast.unparse(node.func) in _EXITING_CALLS
        if exits and node.args and _small_ints(node.args[0]):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_spells_an_exit_code_as_a_bare_number():
    stray = [line for path in _modules() for line in _stray_exit_codes(path)]
    assert stray == [], "use vitrine._outcomes.ExitCode:\n" + "\n".join(stray)


def test_the_exit_code_scan_finds_what_it_looks_for(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("_USAGE = 2\n_OK, _FAIL = 0, 1\nimport sys\nsys.exit(4)\nLIMIT = 3\n")
    assert len(_stray_exit_codes(sample)) == 3


def _exception_classes() -> dict[str, list[tuple[Path, list[str]]]]:
    classes: dict[str, list[tuple[Path, list[str]]]] = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
                classes.setdefault(node.name, []).append((path, bases))
    return classes


_BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def _unrooted(classes: dict[str, list[tuple[Path, list[str]]]]) -> dict[str, str]:
    def derives(name: str, target: set[str] | str, seen: frozenset[str] = frozenset()) -> bool:
        if (name in target) if isinstance(target, set) else name == target:
            return True
        if name in seen:
            return False
        return any(
            derives(base, target, seen | {name})
            for _, bases in classes.get(name, [])
            for base in bases
        )

    unrooted = {}
    for name, definitions in classes.items():
        for path, bases in definitions:
            is_exception = any(derives(base, _BUILTIN_EXCEPTIONS) for base in bases)
            if is_exception and name != "VitrineError" and not derives(name, "VitrineError"):
                unrooted[name] = path.relative_to(SRC).as_posix()
    return unrooted


def test_every_exception_class_derives_from_vitrine_error():
    assert _unrooted(_exception_classes()) == {}


def test_the_exception_scan_sees_a_class_outside_the_root(tmp_path):
    classes = {
        "VitrineError": [(SRC / "errors.py", ["Exception"])],
        "Good": [(SRC / "a.py", ["ValueError", "VitrineError"])],
        "Bad": [(SRC / "b.py", ["RuntimeError"])],
        "Worse": [(SRC / "c.py", ["Bad"])],
        "NotAnError": [(SRC / "d.py", ["object"])],
    }
    assert _unrooted(classes) == {"Bad": "b.py", "Worse": "c.py"}
