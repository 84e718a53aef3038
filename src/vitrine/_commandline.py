"""What every vitrine command shares: a parser that refuses instead of exiting, one refusal
type carrying its exit code, one way to print it, and the options every command spells alike.

argparse prints and calls ``sys.exit`` on a bad argument; a command's ``main(argv)`` must
instead *return* its code (an :class:`~vitrine.ExitCode`) so that it can be tested and
composed, and every refusal reads the same: ``PROG: error: one sentence``.

Only ``argparse`` and the standard-library outcome vocabulary are imported: ``--help`` and a
refused argument answer before anything heavy loads.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from vitrine._vocabulary import ExitCode
from vitrine.errors import CommandRefusal, UsageError

if TYPE_CHECKING:
    from vitrine._suite import Suite

__all__ = [
    "INFRASTRUCTURE",
    "MAX_ECHO",
    "PATH_VARIABLES",
    "URL_VARIABLES",
    "USAGE",
    "CommandRefusal",
    "RefusingParser",
    "add_store_option",
    "add_suite_flag",
    "add_suite_option",
    "add_trace_options",
    "asks_for_help",
    "component_or_refuse",
    "environment_path",
    "environment_path_problem",
    "environment_problem",
    "load_suite_or_refuse",
    "named_suite",
    "one_line",
    "parse_with_suite",
    "path_problem",
    "print_error",
    "refused_as_command",
    "report",
    "run_command",
    "run_suite_command",
    "takes_path",
    "traced_session",
]

# The two classes a refusal can carry, under the names commands use for them.
USAGE = ExitCode.INVALID_ARGUMENTS
INFRASTRUCTURE = ExitCode.INFRASTRUCTURE


# The longest run of input an error line repeats (longer ones keep their start and end), and the
# longest error line: a 5,000-character argument is named, not echoed back whole.
MAX_ECHO = 120
MAX_ERROR_LINE = 600
# What the file systems vitrine runs on accept: one name, and a whole path, in bytes.
NAME_MAX = 255
PATH_MAX = 4096
# Metavars that say an option takes a path even where its value stays text (a run named by
# its id or its folder is a folder name either way).
_PATH_METAVARS = frozenset({"PATH", "DIR", "FILE", "RUN", "RUN_ID"})


def path_problem(text: str) -> str | None:
    """Why ``text`` cannot name a file on this system, or None when it can."""
    if "\x00" in text:
        return "a path cannot contain a NUL character"
    try:
        encoded = os.fsencode(text)
    except UnicodeEncodeError:
        return "the path has characters this file system's encoding cannot store"
    if len(encoded) > PATH_MAX:
        return f"the path is {len(encoded)} bytes long, over the {PATH_MAX}-byte limit"
    for part in encoded.split(b"/"):
        if len(part) > NAME_MAX:
            return (
                f"a path component is {len(part)} bytes long, over the {NAME_MAX}-byte limit "
                f"of a file name: {text!r}"
            )
    return None


# The environment variables that name a file or folder. A path read from one is checked as a
# path given on the command line is: it would otherwise end in a traceback where it is used.
PATH_VARIABLES = ("VITRINE_HOME", "VITRINE_CACHE_DIR", "VITRINE_LOCAL_MODEL")


def environment_path_problem(
    names: Sequence[str] = PATH_VARIABLES, environ: Mapping[str, str] = os.environ
) -> str | None:
    """The sentence that refuses the first of ``names`` set to a path no file system accepts,
    or None when each is unset or usable."""
    for name in names:
        value = environ.get(name, "").strip()
        problem = path_problem(value) if value else None
        if problem is not None:
            return f"{name} cannot name a file or folder: {problem}"
    return None


# The environment variables that name a model service's URL. Credentials in one (user:password@)
# are refused before any call: a key is sent in a header, from the key's own variable.
URL_VARIABLES = ("OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "ANTHROPIC_BASE_URL")


def environment_problem(environ: Mapping[str, str] = os.environ) -> str | None:
    """The sentence that refuses the first variable vitrine reads and cannot use (a path no
    file system accepts, a service URL holding credentials), or None."""
    return environment_path_problem(environ=environ) or _url_problem(environ)


def _url_problem(environ: Mapping[str, str]) -> str | None:
    # The URL is never repeated: its password must not reach a terminal or a log.
    for name in URL_VARIABLES:
        try:
            netloc = urlsplit(environ.get(name, "").strip()).netloc
        except ValueError:  # a malformed host, e.g. an unclosed IPv6 bracket
            return f"{name} is not a URL vitrine can read"
        if "@" in netloc:
            from vitrine.providers._openai_compat import credentialed_url_problem

            return credentialed_url_problem(name)
    return None


def environment_path(name: str) -> Path | None:
    """The path ``$name`` names (``~`` expanded), None when it is unset; refused
    (:class:`~vitrine.errors.UsageError`) as the same path on the command line would be."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    problem = environment_path_problem((name,))
    if problem is not None:
        raise UsageError(problem)
    # os.path.expanduser leaves "~unknown-user" as it is where Path.expanduser would raise.
    return Path(os.path.expanduser(value))  # noqa: PTH111


def takes_path(action: argparse.Action) -> bool:
    """Whether ``action`` names a file or folder: typed as a Path, or shown as PATH, DIR, FILE,
    RUN or RUN_ID."""
    kind = action.type
    if isinstance(kind, type) and issubclass(kind, PurePath):
        return True
    return isinstance(action.metavar, str) and action.metavar in _PATH_METAVARS


class RefusingParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise :class:`CommandRefusal` instead of exiting.

    Every value it reads is checked before its option's own type sees it, so that each
    option of each command refuses the same inputs alike, a new option included: an empty or
    blank value (``--output ''`` would otherwise mean the working directory), and for an
    option that takes a path (typed :class:`~pathlib.Path`, or shown as PATH, DIR, FILE, RUN) a
    path no file system accepts (a name over 255 bytes, a NUL), which would otherwise end in
    a traceback the first time the path is touched.
    """

    def error(self, message: str) -> NoReturn:
        raise CommandRefusal(message, USAGE)

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        if isinstance(arg_string, str):
            if not arg_string.strip():
                raise argparse.ArgumentError(action, "expected a value, got an empty one")
            problem = path_problem(arg_string) if takes_path(action) else None
            if problem is not None:
                raise argparse.ArgumentError(action, problem)
        return super()._get_value(action, arg_string)


def add_suite_option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, component: str | None = None
) -> None:
    """``--suite MODULE:ATTR`` (default: None, found as :mod:`vitrine._discovery` finds it).

    None rather than a text, so that an empty ``--suite ''`` is refused by the loader as a
    mistake instead of being read as a request for the project's suite.
    """
    provides = f" providing a {component!r} component" if component else ""
    parser.add_argument(
        "--suite",
        metavar="MODULE:ATTR",
        default=None,
        help=f"the suite{provides} to load (default: [tool.vitrine] suite in pyproject.toml, "
        "else the one installed suite); its own flags are listed by --suite MODULE:ATTR --help",
    )


TRACE_TO_HELP = "send spans over OTLP/HTTP to URL (/v1/traces is appended); see docs/tracing.md"
TRACE_CONTENT_HELP = "put prompts, answers and tool arguments (scrubbed) in the spans"


def add_trace_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--trace-to URL`` and ``--trace-content``, spelled alike by every traced command."""
    parser.add_argument("--trace-to", metavar="URL", help=TRACE_TO_HELP)
    parser.add_argument("--trace-content", action="store_true", help=TRACE_CONTENT_HELP)


def traced_session(
    name: str, *, trace_to: str | None = None, trace_content: bool = False
) -> contextlib.AbstractContextManager[None]:
    """Start tracing as the flags and the environment ask (a no-op when no destination is set)
    and return the command's scope: one ``session {name}`` span, and every span and score sent
    when it closes.

    A destination that is not a URL is refused (exit 2) and ``--trace-to`` without the
    ``tracing`` extra too (exit 4), as :class:`CommandRefusal`, before anything runs.
    """
    from vitrine import tracing

    try:
        tracing.start(trace_to=trace_to, trace_content=trace_content)
    except tracing.TracingUnavailableError as exc:
        raise CommandRefusal(str(exc), INFRASTRUCTURE) from None
    except tracing.TracingConfigError as exc:
        raise CommandRefusal(str(exc), USAGE) from None
    return _session(name)


@contextlib.contextmanager
def _session(name: str) -> Iterator[None]:
    from vitrine import tracing

    try:
        with tracing.session_span(name):
            yield
    finally:
        tracing.shutdown()


def named_suite(args: Sequence[str]) -> str | None:
    """The ``--suite`` value in ``args``, read without parsing them (None when not given).

    ``--help`` prints before anything is checked, so it must know whether to load a suite
    for its flags before the parser runs.
    """
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--suite" and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith("--suite="):
            return arg.partition("=")[2]
    return None


def asks_for_help(args: Sequence[str]) -> bool:
    """Whether ``args`` ask for ``--help`` (before a ``--``)."""
    for arg in args:
        if arg == "--":
            return False
        if arg in ("-h", "--help"):
            return True
    return False


def add_suite_flag(
    group: argparse.ArgumentParser | argparse._ArgumentGroup,
    suite: str,
    flag: str,
    **settings: Any,
) -> None:
    """Add a flag the suite ``suite`` declares; one that vitrine already has is the suite's
    mistake, refused as a broken suite (exit 4) rather than shadowing vitrine's."""
    try:
        group.add_argument(flag, **settings)
    except argparse.ArgumentError:
        raise CommandRefusal(
            f"suite {suite} declares {flag}, which is one of vitrine's own flags: the suite "
            "must rename it",
            INFRASTRUCTURE,
        ) from None


def parse_with_suite(
    parser: argparse.ArgumentParser, args: Sequence[str], suite: str, own: Sequence[str]
) -> argparse.Namespace:
    """Parse ``args`` with the loaded suite's flags in ``parser``; a flag neither vitrine nor
    the suite ``suite`` knows is refused naming both, with the flags the suite does offer."""
    namespace, extras = parser.parse_known_args(list(args))
    if extras:
        flagged = any(extra.startswith("-") for extra in extras)
        # The flag is not repeated: it stands just before, and may be thousands of characters.
        why = (
            f" (neither vitrine nor suite {suite} has that flag; the suite's own flags: "
            f"{', '.join(own) or 'none'})"
            if flagged
            else ""
        )
        raise CommandRefusal(f"unrecognized arguments: {' '.join(extras)}{why}", USAGE)
    return namespace


def add_store_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--output DIR``, also spelled ``--store DIR``: the run-store root (``args.output``)."""
    parser.add_argument(
        "--output",
        "--store",
        dest="output",
        metavar="DIR",
        type=Path,
        help="run-store root (default: $VITRINE_HOME, else ./.vitrine)",
    )


def load_suite_or_refuse(spec: str | None, component: str | None = None) -> Any:
    """The suite ``spec`` names (None: the one :mod:`vitrine._discovery` finds), or its
    ``component``.

    A suite that cannot be loaded, or lacks the component, becomes a :class:`CommandRefusal`
    with the loader's own exit class (2 for a bad name, 4 for a module that breaks on import).
    """
    from vitrine._suite import load_suite

    with refused_as_command():
        suite: Suite = load_suite(spec)
    return suite if component is None else component_or_refuse(suite, component)


def component_or_refuse(suite: Suite, name: str) -> Any:
    """The suite's component ``name``, or a :class:`CommandRefusal` saying why not."""
    with refused_as_command():
        return suite.component(name)


@contextlib.contextmanager
def refused_as_command() -> Iterator[None]:
    """Turn a suite that cannot be found or loaded into a :class:`CommandRefusal` with the
    loader's exit class (2 for a bad name, 4 for a module that breaks on import)."""
    from vitrine.errors import SuiteLoadError

    try:
        yield
    except SuiteLoadError as exc:
        raise CommandRefusal(str(exc), exc.exit_code) from exc
    except UsageError as exc:
        raise CommandRefusal(str(exc), USAGE) from exc


def run_command(
    prog: str,
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    handler: Callable[[argparse.Namespace], int],
) -> int:
    """Parse ``argv`` and hand the namespace to ``handler``; refusals become their exit code.

    A parse error prints the usage line first; ``--help`` returns argparse's own code. A
    :class:`~vitrine.errors.UsageError` from anywhere in the handler is a refusal too (exit 2).
    """
    try:
        args = parser.parse_args(list(argv))
    except CommandRefusal as exc:
        sys.stderr.write(parser.format_usage())
        return report(prog, exc)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else USAGE
    return _handled(prog, lambda: handler(args))


def _handled(prog: str, call: Callable[[], int]) -> int:
    """Run a command's handler; a refusal from it becomes its exit code."""
    try:
        return int(call())
    except CommandRefusal as exc:
        return report(prog, exc)
    except UsageError as exc:  # raised below the command (a service URL holding credentials)
        return report(prog, CommandRefusal(str(exc), USAGE))


def run_suite_command(
    prog: str,
    build: Callable[[Suite | None], argparse.ArgumentParser],
    argv: Sequence[str],
    handler: Callable[[argparse.Namespace, Suite], int],
    own_flags: Callable[[Suite], Sequence[str]],
) -> int:
    """:func:`run_command` for a command that offers the loaded suite's own flags.

    ``build(None)`` is the command's parser without them: it answers ``--help`` and refuses a
    malformed argument before any suite is looked for. The suite is then loaded (by
    ``--suite``, else found) and the arguments parsed again with its flags, ``build(suite)``;
    ``--help`` shows them only when ``--suite`` names the suite, which keeps help free of the
    look-up through the installed packages.
    """
    args = list(argv)
    named = named_suite(args) if asks_for_help(args) else None
    try:
        parser = build(None if named is None else load_suite_or_refuse(named))
    except CommandRefusal as exc:
        return report(prog, exc)
    try:
        first, _ = parser.parse_known_args(args)
    except CommandRefusal as exc:
        sys.stderr.write(parser.format_usage())
        return report(prog, exc)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else USAGE
    try:
        suite: Suite = load_suite_or_refuse(first.suite)
        parser = build(suite)
    except CommandRefusal as exc:
        return report(prog, exc)
    try:
        namespace = parse_with_suite(parser, args, suite.name, own_flags(suite))
    except CommandRefusal as exc:
        sys.stderr.write(parser.format_usage())
        return report(prog, exc)
    return _handled(prog, lambda: handler(namespace, suite))


def report(prog: str, refusal: CommandRefusal) -> int:
    """Print ``PROG: error: message`` on stderr and return the refusal's exit code."""
    print_error(prog, str(refusal))
    return int(refusal.code)


def print_error(prog: str, message: str) -> None:
    """Print ``PROG: error: message`` on stderr: the one shape of every refusal, on one line."""
    sys.stderr.write(f"{prog}: error: {one_line(message)}\n")
    sys.stderr.flush()


_LONG_RUN = re.compile(rf"\S{{{MAX_ECHO + 1},}}")


def _shorten(match: re.Match[str]) -> str:
    run = match.group(0)
    keep = MAX_ECHO - 30
    return f"{run[:keep]}...{run[-20:]} ({len(run)} characters)"


def one_line(message: str, limit: int = MAX_ERROR_LINE) -> str:
    """``message`` as one bounded line: its lines joined by "; ", control characters escaped,
    every run of input longer than :data:`MAX_ECHO` characters cut in the middle, and the
    whole at most about ``limit`` characters."""
    lines = [line.strip() for line in message.splitlines()]
    text = "; ".join(line for line in lines if line)
    text = "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)
    text = _LONG_RUN.sub(_shorten, text)
    if len(text) > limit:
        text = f"{text[: limit - 100]} ... {text[-80:]} ({len(text)} characters)"
    return text
