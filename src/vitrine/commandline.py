"""What every vitrine command shares: a parser that refuses instead of exiting, one refusal
type carrying its exit code, one way to print it, and the options every command spells alike.

argparse prints and calls ``sys.exit`` on a bad argument; a command's ``main(argv)`` must
instead *return* its code (an :class:`~vitrine.outcomes.ExitCode`) so that it can be tested and
composed, and every refusal reads the same: ``PROG: error: one sentence``.

Only ``argparse`` and the standard-library outcome vocabulary are imported: ``--help`` and a
refused argument answer before anything heavy loads.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from vitrine.errors import VitrineError
from vitrine.vocabulary import ExitCode

if TYPE_CHECKING:
    from vitrine.suite import Suite

__all__ = [
    "DEFAULT_SUITE",
    "INFRASTRUCTURE",
    "USAGE",
    "CommandRefusal",
    "RefusingParser",
    "add_store_option",
    "add_suite_option",
    "load_suite_or_refuse",
    "print_error",
    "report",
    "run_command",
]

# The suite a command loads when --suite is not given. vitrine never imports it itself; the
# name is only resolved when a command needs a suite.
DEFAULT_SUITE = "vitrine_shop.evals.suite:SUITE"

# The two classes a refusal can carry, under the names commands use for them.
USAGE = ExitCode.INVALID_ARGUMENTS
INFRASTRUCTURE = ExitCode.INFRASTRUCTURE


class CommandRefusal(VitrineError):
    """A request a command will not run, with the exit code that says whose fault it is."""

    def __init__(self, message: str, code: ExitCode | int = USAGE) -> None:
        super().__init__(message)
        self.code = ExitCode(code)


class RefusingParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise :class:`CommandRefusal` instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise CommandRefusal(message, USAGE)


def add_suite_option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, component: str | None = None
) -> None:
    """``--suite MODULE:ATTR`` (default: None, read as :data:`DEFAULT_SUITE` when loading).

    None rather than the default's text, so that an empty ``--suite ''`` is refused by the
    loader as a mistake instead of being read as a request for the default suite.
    """
    provides = f" providing a {component!r} component" if component else ""
    parser.add_argument(
        "--suite",
        metavar="MODULE:ATTR",
        default=None,
        help=f"the suite{provides} to load (default {DEFAULT_SUITE})",
    )


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
    """The suite ``spec`` names (default :data:`DEFAULT_SUITE`), or its ``component``.

    A suite that cannot be loaded, or lacks the component, becomes a :class:`CommandRefusal`
    with the loader's own exit class (2 for a bad name, 4 for a module that breaks on import).
    """
    from vitrine.plans.base import UsageError
    from vitrine.suite import SuiteLoadError, load_suite

    try:
        suite: Suite = load_suite(DEFAULT_SUITE if spec is None else spec)
        return suite if component is None else suite.component(component)
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

    A parse error prints the usage line first; ``--help`` returns argparse's own code.
    """
    try:
        args = parser.parse_args(list(argv))
    except CommandRefusal as exc:
        sys.stderr.write(parser.format_usage())
        return report(prog, exc)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else USAGE
    try:
        return int(handler(args))
    except CommandRefusal as exc:
        return report(prog, exc)


def report(prog: str, refusal: CommandRefusal) -> int:
    """Print ``PROG: error: message`` on stderr and return the refusal's exit code."""
    print_error(prog, str(refusal))
    return int(refusal.code)


def print_error(prog: str, message: str) -> None:
    """Print ``PROG: error: message`` on stderr: the one shape of every refusal."""
    sys.stderr.write(f"{prog}: error: {message}\n")
    sys.stderr.flush()
