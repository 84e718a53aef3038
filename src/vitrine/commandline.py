"""What every vitrine subcommand shares: a parser that refuses instead of exiting, one refusal
type carrying its exit code, and one way to print it.

argparse prints and calls ``sys.exit`` on a bad argument; a subcommand's ``main(argv)`` must
instead *return* its code (2 for arguments, 4 for infrastructure) so that it can be tested and
composed, and every refusal reads the same: ``PROG: error: one sentence``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from vitrine.errors import VitrineError

__all__ = ["INFRASTRUCTURE", "USAGE", "CommandRefusal", "RefusingParser", "report", "run_command"]

USAGE = 2
INFRASTRUCTURE = 4


class CommandRefusal(VitrineError, Exception):
    """A request a command will not run, with the exit code that says whose fault it is."""

    def __init__(self, message: str, code: int = USAGE) -> None:
        super().__init__(message)
        self.code = code


class RefusingParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise :class:`CommandRefusal` instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise CommandRefusal(message, USAGE)


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
        return handler(args)
    except CommandRefusal as exc:
        return report(prog, exc)


def report(prog: str, refusal: CommandRefusal) -> int:
    """Print ``PROG: error: message`` on stderr and return the refusal's exit code."""
    sys.stderr.write(f"{prog}: error: {refusal}\n")
    sys.stderr.flush()
    return refusal.code
