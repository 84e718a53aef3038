"""Every option of every command, found in the parsers themselves, refuses hostile values alike.

The options are not listed here: they are read from each command's argparse parser (the
group's, each subcommand's, each of their subparsers'), so an option added tomorrow is covered
by these tests without anyone remembering to add it. For each option that takes a value:

- an empty or blank value is refused (exit 2, one ``error:`` line naming the option);
- where the option names a path (typed as a Path, or shown as PATH, DIR or FILE), a generated
  path that no file system accepts is refused the same way: a component over 255 bytes, a whole
  path over 4096 bytes, a NUL byte, anywhere in the path;
- the error line is bounded, whatever the length of what was typed.

Code a user names is generated too: a suite module that raises each built-in BaseException
class (and one of its own) at import, in a module ``__getattr__``, or calls ``sys.exit`` with
a generated code, and a plan that raises one; every command that loads a suite must answer
exit 2 or 4 with one sentence, never a traceback and never the exit code the module chose.
Trace destinations are generated URLs that are not URLs (unclosed brackets, bad ports), given
as ``--trace-to`` and in ``OTEL_EXPORTER_OTLP_ENDPOINT``.
"""

from __future__ import annotations

import argparse
import builtins
import importlib
import socket
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fuzz_support import Sandbox, run_in_process
from hypothesis import HealthCheck, given, settings, strategies as st

from vitrine._cli import SUBCOMMANDS, build_parser
from vitrine._commandline import MAX_ERROR_LINE, NAME_MAX, PATH_MAX, takes_path

pytestmark = pytest.mark.fuzz

FAST = settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _parsers() -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    """(the words that reach a parser, the parser) for every parser of every command."""
    yield [], build_parser(None)
    for name, module_name in sorted(SUBCOMMANDS.items()):
        module = importlib.import_module(module_name)
        if name == "board":  # `vitrine board` and `vitrine board export` are two parsers
            yield [name], module.build_parser(False)
            yield [name, "export"], module.build_parser(True)
        else:
            yield from _walk([name], module.build_parser())


def _walk(
    prefix: list[str], parser: argparse.ArgumentParser
) -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for word, child in action.choices.items():
                yield from _walk([*prefix, word], child)


def _valued(action: argparse.Action) -> bool:
    """Whether the action reads a value from the command line (not a flag, not --help)."""
    skipped = (argparse._SubParsersAction, argparse._HelpAction, argparse._VersionAction)
    return not isinstance(action, skipped) and action.nargs != 0


def _options() -> list[tuple[list[str], argparse.Action]]:
    return [
        (prefix, action)
        for prefix, parser in _parsers()
        for action in parser._actions
        if _valued(action)
    ]


OPTIONS = _options()
PATH_OPTIONS = [(prefix, action) for prefix, action in OPTIONS if takes_path(action)]


def _label(item: tuple[list[str], argparse.Action]) -> str:
    prefix, action = item
    return " ".join(
        [
            "vitrine",
            *prefix,
            action.option_strings[0] if action.option_strings else action.dest.upper(),
        ]
    )


def _argv(prefix: list[str], action: argparse.Action, value: str) -> list[str]:
    # FLAG=VALUE, so a value that starts with a dash is still this option's value.
    if action.option_strings:
        return [*prefix, f"{action.option_strings[-1]}={value}"]
    # A positional after "--", so a generated path of dashes is read as the path it is.
    return [*prefix, "--", value]


def _refused(argv: list[str], sandbox: Sandbox, *, must_say: str | None = None) -> str:
    try:
        code, out, err = run_in_process(argv)
        written = sandbox.written()
    finally:
        sandbox.clear()
    shown = repr(argv)[:300]
    assert code == 2, f"{shown}: exit {code}\n{err[-800:]}"
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and "Traceback" not in out + err, f"{shown}:\n{err[-2000:]}"
    assert len(lines[0]) <= MAX_ERROR_LINE + 200, f"{shown}: an error line of {len(lines[0])}"
    assert written == [], f"{shown} wrote {written[:3]}"
    if must_say is not None:
        assert must_say in lines[0], f"{shown}: {lines[0]}"
    return lines[0]


def test_the_parsers_are_found_and_hold_the_path_options_people_use() -> None:
    labels = {_label(item) for item in PATH_OPTIONS}
    for expected in (
        "vitrine --output",
        "vitrine --json-report",
        "vitrine board --output",
        "vitrine board export DIRECTORY",
        "vitrine serve --log-file",
        "vitrine redteam run --output",
        "vitrine ci init --dir",
        "vitrine redteam status RUN",
        "vitrine redteam sign-off --run",
    ):
        assert expected in labels, sorted(labels)
    assert len(OPTIONS) > 80  # every valued option of every command, not a sample


@pytest.mark.parametrize("item", OPTIONS, ids=_label)
@pytest.mark.parametrize("blank", ["", " ", "\t"])
def test_every_option_refuses_an_empty_value(
    item: tuple[list[str], argparse.Action], blank: str, sandbox: Sandbox
) -> None:
    prefix, action = item
    _refused(_argv(prefix, action, blank), sandbox, must_say="empty")


# Characters of one, two, three and four bytes in UTF-8, so a component's byte length and its
# character count differ.
_CHARS = st.sampled_from("aZ9._-éß€𝄞 ")
_NAME = st.text(_CHARS, min_size=1, max_size=20).filter(
    lambda t: t.strip() not in ("", ".", "..") and not t.startswith("-")
)


@st.composite
def unusable_paths(draw: st.DrawFn) -> tuple[str, str]:
    """A path no file system accepts, and the phrase its refusal must hold."""
    parts = draw(st.lists(_NAME, min_size=0, max_size=4))
    kind = draw(st.sampled_from(["long-name", "long-path", "nul"]))
    if kind == "long-name":
        unit = draw(_CHARS.filter(str.strip))
        count = NAME_MAX // len(unit.encode()) + 1 + draw(st.integers(0, 300))
        bad, phrase = unit * count, "255-byte limit"
    elif kind == "long-path":
        bad = "/".join(["d" * 200] * (PATH_MAX // 200 + 1))
        phrase = "4096-byte limit"
    else:
        bad, phrase = draw(_NAME) + "\x00" + draw(_NAME), "NUL"
    parts.insert(draw(st.integers(0, len(parts))), bad)
    absolute = draw(st.booleans())
    return ("/" if absolute else "") + "/".join(parts), phrase


@pytest.mark.parametrize("item", PATH_OPTIONS, ids=_label)
@FAST
@given(path=unusable_paths())
def test_every_path_option_refuses_a_path_no_file_system_accepts(
    item: tuple[list[str], argparse.Action], path: tuple[str, str], sandbox: Sandbox
) -> None:
    prefix, action = item
    text, phrase = path
    line = _refused(_argv(prefix, action, text), sandbox, must_say=phrase)
    assert len(line) < 600


@FAST
@given(
    text=st.text(min_size=200, max_size=6000),
    item=st.sampled_from([i for i in OPTIONS if not takes_path(i[1])]),
)
def test_an_error_line_echoes_a_bounded_part_of_any_value(
    text: str, item: tuple[list[str], argparse.Action], sandbox: Sandbox
) -> None:
    prefix, action = item
    argv = [*_argv(prefix, action, text), "--zz-" + "q" * 3000]
    try:
        code, out, err = run_in_process(argv)
    finally:
        sandbox.clear()
    assert code in (2, 4), err[-800:]
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and "Traceback" not in out + err, err[-2000:]
    assert len(lines[0]) <= MAX_ERROR_LINE + 200


# -- code a user names -------------------------------------------------------------------------

_BASE_EXCEPTIONS = sorted(
    (
        name
        for name, value in vars(builtins).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    ),
)
_RAISE = '''
import builtins

class Planted(BaseException):
    """A BaseException of the module's own."""

class Unprintable(BaseException):
    def __str__(self):
        raise RuntimeError("no words for this")

def planted(name):
    cls = {"Planted": Planted, "Unprintable": Unprintable}.get(name) or getattr(builtins, name)
    for args in (("planted",), ("planted", [ValueError("inner")])):
        try:
            return cls(*args)
        except TypeError:
            continue
    return cls.__new__(cls)
'''
_AT_IMPORT = _RAISE + "\nraise planted(NAME)\n"
_IN_GETATTR = _RAISE + "\ndef __getattr__(attr):\n    raise planted(NAME)\n"
_EXIT = "import sys\nsys.exit(NAME)\n"
_IN_PLAN = (
    _RAISE
    + '''
from vitrine._plans.base import plan
from vitrine._suite import Suite


@plan("planted")
async def planted_plan(request):
    """Raises what the test planted."""
    raise planted(NAME)


SUITE = Suite(
    name="planted", plans={"planted": planted_plan}, scenarios={}, default_plan="planted"
)
'''
)
# Half the draws are the classes an ``except Exception`` lets through.
_NOT_EXCEPTIONS = [n for n in _BASE_EXCEPTIONS if not issubclass(getattr(builtins, n), Exception)]
EXCEPTION_NAMES = st.sampled_from([*_NOT_EXCEPTIONS, "Planted", "Unprintable"]) | st.sampled_from(
    _BASE_EXCEPTIONS
)
EXIT_CODES = st.none() | st.integers(-5, 300) | st.sampled_from(["", "bye", "0"])


def _free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


# Every command that loads a suite, each given a planted module as its suite.
SUITE_COMMANDS: list[Callable[[], list[str]]] = [
    lambda: ["--all"],
    lambda: ["--list-plans"],
    lambda: ["--self-test"],
    lambda: ["serve", "--port", _free_port()],
    lambda: ["ci", "init"],
    lambda: ["mutants", "--list"],
    lambda: ["redteam", "run"],
    lambda: ["redteam", "adaptive", "--strategy", "goat"],
]
Planter = Callable[[str, object], str]


@pytest.fixture
def plant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Planter]:
    """``plant(source, value)``: a new module on sys.path whose NAME is ``repr(value)``."""
    folder = tmp_path / "planted"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    names: list[str] = []

    def make(source: str, value: object) -> str:
        name = f"planted_{uuid.uuid4().hex[:10]}"
        (folder / f"{name}.py").write_text(source.replace("NAME", repr(value)), encoding="utf-8")
        importlib.invalidate_caches()
        names.append(name)
        return name

    yield make
    for name in names:
        sys.modules.pop(name, None)


def _fails_in_one_sentence(argv: list[str], sandbox: Sandbox) -> str:
    try:
        code, out, err = run_in_process(argv)
    finally:
        sandbox.clear()
    assert code in (2, 4), f"{argv}: exit {code}\n{out[-400:]}\n{err[-800:]}"
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, f"{argv}: {err[-2000:]}"
    assert "Traceback" not in out + err, f"{argv}: {err[-2000:]}"
    return lines[0]


@FAST
@given(
    where=st.sampled_from(["import", "getattr"]),
    name=EXCEPTION_NAMES,
    command=st.sampled_from(SUITE_COMMANDS),
)
def test_a_suite_that_raises_any_base_exception_is_an_error_never_a_traceback(
    where: str,
    name: str,
    command: Callable[[], list[str]],
    plant: Planter,
    sandbox: Sandbox,
) -> None:
    module = plant(_AT_IMPORT if where == "import" else _IN_GETATTR, name)
    line = _fails_in_one_sentence([*command(), "--suite", f"{module}:SUITE"], sandbox)
    assert module in line


@FAST
@given(code=EXIT_CODES, command=st.sampled_from(SUITE_COMMANDS))
def test_a_suite_that_exits_at_import_is_an_error_whatever_code_it_chose(
    code: int | str | None, command: Callable[[], list[str]], plant: Planter, sandbox: Sandbox
) -> None:
    module = plant(_EXIT, code)
    line = _fails_in_one_sentence([*command(), "--suite", f"{module}:SUITE"], sandbox)
    assert "sys.exit" in line


@FAST
@given(name=EXCEPTION_NAMES)
def test_a_plan_that_raises_any_base_exception_is_an_infrastructure_error(
    name: str, plant: Planter, sandbox: Sandbox
) -> None:
    module = plant(_IN_PLAN, name)
    try:
        code, out, err = run_in_process(["--eval-plan", "planted", "--suite", f"{module}:SUITE"])
    finally:
        sandbox.clear()
    assert code == 4, f"{name}: exit {code}\n{err[-800:]}"
    assert err.count("error:") == 1 and "Traceback" not in out + err, err[-2000:]
    assert "vitrine: error: planted " in err, err  # the plan ran and its failure is named


# -- trace destinations ------------------------------------------------------------------------

NOT_URLS = st.builds(
    lambda scheme, host, rest: f"{scheme}://{host}{rest}",
    st.sampled_from(["http", "https"]),
    st.sampled_from(
        ["[::1", "[::1]]", "[", "]", "[fe80::1%", "[zz::1]", "h:99999", "h:-1", "h:x", "a]b"]
    ),
    st.sampled_from(["", "/", "/v1", ":4318"]),
)


@FAST
@given(url=NOT_URLS, how=st.sampled_from(["flag", "env"]))
def test_a_trace_destination_that_is_not_a_url_is_refused_in_one_sentence(
    url: str, how: str, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["--all", "--output", str(sandbox.watched[2] / "store")]
    with monkeypatch.context() as patch:
        if how == "flag":
            argv += ["--trace-to", url]
        else:
            patch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
        try:
            code, out, err = run_in_process(argv)
        finally:
            sandbox.clear()
    assert code == 2, f"{url!r} ({how}): exit {code}\n{err[-800:]}"
    assert err.count("error:") == 1 and "Traceback" not in out + err, err[-2000:]
