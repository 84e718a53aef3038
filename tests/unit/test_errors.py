"""One error tree: every exception vitrine defines lives in vitrine.errors, under VitrineError.

``except vitrine.VitrineError`` must catch every refusal vitrine makes on purpose, so no public
path raises a bare ``ValueError`` or ``TypeError``; each class keeps its built-in base, so
``except ValueError`` code written before keeps working.
"""

from __future__ import annotations

import ast
import builtins
import re
import subprocess
import sys
from pathlib import Path

import pytest

import vitrine
import vitrine.errors
from vitrine import Arm, BenchmarkDefinition, Case, ChanceFloor, Observation, admit, check

SRC = Path(vitrine.__file__).parent
ERRORS = SRC / "errors.py"

BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}

# Bare raises that stay, each with why. Keyed by (file under src/vitrine, enclosing function).
ALLOWED_BARE_RAISES = {
    # Store bugs, not inputs: only the store's own writers hold these logs, opened first.
    ("store/_files.py", "AppendLog.append_line"),
    ("store/_rows.py", "JsonlRows.append_trial"),
}
# A pydantic validator must raise ValueError: pydantic turns it into a ValidationError that
# names the field, which is what the caller sees.
PYDANTIC_VALIDATORS = {"field_validator", "model_validator"}


def _modules() -> list[Path]:
    return sorted(path for path in SRC.rglob("*.py") if path != ERRORS)


def _relative(path: Path) -> str:
    return path.relative_to(SRC).as_posix()


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = set()
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        names.add(target.id if isinstance(target, ast.Name) else getattr(target, "attr", ""))
    return names


def _bare_raises(tree: ast.Module) -> list[tuple[int, str, str, set[str]]]:
    """(line, builtin, enclosing qualified function, its decorators) of each bare raise."""
    found: list[tuple[int, str, str, set[str]]] = []

    def visit(node: ast.AST, scope: tuple[str, ...], decorators: set[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, (*scope, child.name), decorators)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, (*scope, child.name), _decorator_names(child))
            elif isinstance(child, ast.Raise) and isinstance(child.exc, ast.Call):
                called = child.exc.func
                if isinstance(called, ast.Name) and called.id in {"ValueError", "TypeError"}:
                    found.append((child.lineno, called.id, ".".join(scope), decorators))
                visit(child, scope, decorators)
            else:
                visit(child, scope, decorators)

    visit(tree, (), set())
    return found


def test_no_public_path_raises_a_bare_value_or_type_error():
    offending = []
    for path in _modules():
        for line, name, scope, decorators in _bare_raises(ast.parse(path.read_text("utf-8"))):
            if decorators & PYDANTIC_VALIDATORS or (_relative(path), scope) in ALLOWED_BARE_RAISES:
                continue
            offending.append(f"{_relative(path)}:{line} raise {name}(...) in {scope or 'module'}")
    assert not offending, (
        "raise a vitrine.errors class that keeps the builtin base instead "
        "(InvalidArgumentError, InvalidDataError, WrongTypeError):\n" + "\n".join(offending)
    )


def test_the_allow_list_names_only_raises_that_exist():
    present = {
        (_relative(path), scope)
        for path in _modules()
        for _, _, scope, _ in _bare_raises(ast.parse(path.read_text("utf-8")))
    }
    assert present >= ALLOWED_BARE_RAISES, ALLOWED_BARE_RAISES - present


def test_the_scan_sees_a_bare_raise_and_spares_a_validator():
    tree = ast.parse(
        "class A:\n"
        "    def f(self):\n"
        "        raise ValueError('x')\n"
        "    @field_validator('v')\n"
        "    def g(cls, v):\n"
        "        raise TypeError('y')\n"
    )
    found = _bare_raises(tree)
    assert [(line, name, scope) for line, name, scope, _ in found] == [
        (3, "ValueError", "A.f"),
        (6, "TypeError", "A.g"),
    ]
    assert found[1][3] == {"field_validator"}


def _exception_bases(node: ast.ClassDef, known: set[str]) -> list[str]:
    """The bases of ``node`` that make it an exception class (by name, as written)."""
    names = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
    return [
        name
        for name in names
        if name in BUILTIN_EXCEPTIONS
        or name in known
        or name.endswith(("Error", "Exception", "Warning"))
    ]


def test_every_exception_class_is_defined_in_vitrine_errors():
    known = set(vitrine.errors.__all__)
    elsewhere = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef) and _exception_bases(node, known):
                elsewhere.append(f"{_relative(path)}:{node.lineno} class {node.name}")
    assert not elsewhere, "define these in vitrine/errors.py and import them:\n" + "\n".join(
        elsewhere
    )


def test_the_class_scan_sees_an_exception_defined_elsewhere():
    tree = ast.parse("class A(ValueError): ...\nclass B(errors.UsageError): ...\nclass C: ...")
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert [bool(_exception_bases(c, {"UsageError"})) for c in classes] == [True, True, False]


def _defined_in_errors() -> list[str]:
    tree = ast.parse(ERRORS.read_text("utf-8"))
    return [node.name for node in tree.body if isinstance(node, ast.ClassDef)]


def test_every_class_in_vitrine_errors_is_exported_and_under_the_root():
    assert vitrine.errors.__all__ == sorted(vitrine.errors.__all__)
    assert sorted(_defined_in_errors()) == vitrine.errors.__all__
    for name in vitrine.errors.__all__:
        cls = getattr(vitrine.errors, name)
        assert issubclass(cls, vitrine.VitrineError), name
        assert cls.__module__ == "vitrine.errors", name
        assert (cls.__dict__.get("__doc__") or "").strip(), f"{name} has no docstring"
    assert vitrine.VitrineError is vitrine.errors.VitrineError


def test_every_loaded_vitrine_error_comes_from_vitrine_errors():
    # Reaching every namespace loads the modules that raise; none may add a class of its own.
    for namespace in ("store", "subjects", "runs", "live", "reports", "mutants", "controls"):
        getattr(vitrine, namespace).__all__  # noqa: B018 - loads the namespace
    stack = [vitrine.VitrineError]
    while stack:
        cls = stack.pop()
        if cls.__module__.startswith("vitrine"):
            assert cls.__module__ == "vitrine.errors", f"{cls.__module__}.{cls.__qualname__}"
        stack.extend(cls.__subclasses__())


_TREE_LINE = re.compile(r"^(?P<indent>[ │├└─]*?)(?:[├└]── )?(?P<name>[A-Z]\w+)(?P<rest>.*)$")


def _drawn_tree() -> dict[str, tuple[str | None, set[str]]]:
    """Each class the docstring draws: (its parent in the drawing, the builtins it names)."""
    doc = vitrine.errors.__doc__ or ""
    block = doc.split("The whole tree::", 1)[1].split("\n\n", 2)[1]
    drawn: dict[str, tuple[str | None, set[str]]] = {}
    parents: list[tuple[int, str]] = []  # (depth, name), the path to the current line
    for line in block.splitlines():
        match = _TREE_LINE.match(line.strip("\n")[4:])
        assert match, line
        depth = len(match["indent"]) // 4 + (0 if match["name"] == "VitrineError" else 1)
        while parents and parents[-1][0] >= depth:
            parents.pop()
        named = set(re.findall(r"\[(\w+)\]", match["rest"]))
        drawn[match["name"]] = (parents[-1][1] if parents else None, named)
        parents.append((depth, match["name"]))
    return drawn


def test_the_tree_in_the_docstring_is_the_tree_of_the_classes():
    drawn = _drawn_tree()
    assert sorted(drawn) == vitrine.errors.__all__
    for name, (parent, named_builtins) in drawn.items():
        cls = getattr(vitrine.errors, name)
        ours = [base for base in cls.__bases__ if issubclass(base, vitrine.VitrineError)]
        assert (ours[0].__name__ if ours else None) == parent, name
        for builtin in named_builtins:
            assert issubclass(cls, getattr(builtins, builtin)), (name, builtin)
        # A builtin base the class adds to its parent's is drawn on its line.
        added = {
            base.__name__
            for base in cls.__bases__
            if not issubclass(base, vitrine.VitrineError) and base is not Exception
        }
        assert added <= named_builtins, (name, added)


def test_importing_vitrine_errors_imports_nothing_else_from_vitrine():
    code = (
        "import sys, vitrine; before = set(sys.modules); import vitrine.errors; "
        "print(sorted(m for m in set(sys.modules) - before if m.startswith('vitrine')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "['vitrine.errors']"


@check("answered")
def _answered(case, response):
    return Observation.measured(1.0, True)


_DEFINITION = BenchmarkDefinition(
    "errors-toy",
    "1.0.0",
    [Case("one", "hello")],
    [admit(_answered, ChanceFloor.not_derivable("a toy predicate has no random-draw population"))],
)
_ARM = Arm("echo", lambda case: vitrine.SubjectResponse(answer=str(case.input)))


@pytest.mark.parametrize(
    ("misuse", "builtin", "says"),
    [
        (lambda: vitrine.evaluate(_DEFINITION, []), ValueError, "no arms to evaluate"),
        (lambda: vitrine.evaluate(_DEFINITION, [object()]), TypeError, "arms must be vitrine Arm"),
        (lambda: vitrine.evaluate(_DEFINITION, _ARM, repetitions=0), ValueError, "repetitions"),
        (lambda: vitrine.evaluate(_DEFINITION, _ARM, reference="nobody"), ValueError, "nobody"),
        (lambda: vitrine.RetryPolicy(retries=-1), ValueError, "retries must be 0 or more"),
        (lambda: vitrine.stats.wilson_interval(5, 3), ValueError, "successes must not exceed n"),
        (lambda: ChanceFloor.uniform_choice(0), ValueError, "at least one option"),
        (lambda: Observation.measured(float("nan"), True), ValueError, "cannot be NaN"),
        (lambda: BenchmarkDefinition("empty", "1.0.0", [], []), ValueError, "no cases"),
    ],
    ids=[
        "no-arms",
        "not-an-arm",
        "zero-repetitions",
        "unknown-reference",
        "negative-retries",
        "more-successes-than-trials",
        "no-options",
        "nan-value",
        "no-cases",
    ],
)
def test_public_misuse_is_a_vitrine_error_that_says_what_was_wrong(misuse, builtin, says):
    with pytest.raises(vitrine.VitrineError) as caught:
        misuse()
    assert isinstance(caught.value, builtin), "the builtin base callers caught before is kept"
    assert says in str(caught.value)


def test_a_key_that_is_not_there_reads_as_a_sentence_and_is_still_a_key_error():
    error = vitrine.errors.UnknownKeyError("no mutant 'x'; the catalogue has a, b")
    assert isinstance(error, KeyError) and isinstance(error, vitrine.errors.NotFoundError)
    assert str(error) == "no mutant 'x'; the catalogue has a, b"


def test_errors_that_carry_an_exit_code_carry_a_vitrine_exit_code():
    codes = vitrine.ExitCode
    assert vitrine.errors.CommandRefusal("no").code is codes.INVALID_ARGUMENTS
    assert vitrine.errors.CommandRefusal("no", 4).code is codes.INFRASTRUCTURE
    assert vitrine.errors.SuiteLoadError("no").exit_code is codes.INVALID_ARGUMENTS
    assert vitrine.errors.UserCodeError("no").exit_code is codes.INFRASTRUCTURE
    assert vitrine.errors.UserCodeError("no", 2).exit_code is codes.INVALID_ARGUMENTS
