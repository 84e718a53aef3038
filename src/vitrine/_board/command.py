"""``vitrine board``: open the evaluation board over a run store, or export a static copy.

::

    vitrine board [--store DIR] [--port N] [--host ADDR] [--suite MODULE:ATTR]
    vitrine board export DIR [--store DIR] [--max-runs N]

The board listens on 127.0.0.1 and a free port unless told otherwise, prints its address (with
the access token every request needs, drawn anew at each start), and runs until interrupted.
Exit codes: 0 stopped cleanly or exported, 2 invalid arguments, 4 the store or the port cannot
be used.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from vitrine._commandline import (
    INFRASTRUCTURE,
    USAGE,
    CommandRefusal,
    RefusingParser,
    add_store_option,
    add_suite_option,
    run_command,
)
from vitrine._vocabulary import ExitCode

__all__ = ["main"]

PROG = "vitrine board"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def build_parser(export: bool) -> argparse.ArgumentParser:
    if export:
        parser = RefusingParser(
            prog=f"{PROG} export",
            description="Write a static, offline copy of the board into DIR (a CI artifact).",
            allow_abbrev=False,
        )
        parser.add_argument("directory", type=Path, help="where to write the copy")
        parser.add_argument(
            "--max-runs",
            type=int,
            default=1000,
            help="export the pages of the newest N runs (default 1000); the index lists all",
        )
        add_store_option(parser)
        return parser
    parser = RefusingParser(
        prog=PROG,
        description=__doc__.split("\n\n")[0].replace("``", ""),
        epilog=f"{PROG} export DIR writes a static copy (see {PROG} export --help).",
        allow_abbrev=False,
    )
    add_store_option(parser)
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    add_suite_option(parser)
    return parser


def main(argv: Sequence[str]) -> int:
    """Run ``vitrine board`` or ``vitrine board export``; return the exit code."""
    args_list = list(argv)
    export = bool(args_list) and args_list[0] == "export"
    prog = f"{PROG} export" if export else PROG
    return run_command(
        prog,
        build_parser(export),
        args_list[1:] if export else args_list,
        lambda args: _run(args, export=export),
    )


def _run(args: argparse.Namespace, *, export: bool) -> int:
    from vitrine.store._naming import damaged_store, resolve_root

    root = resolve_root(args.output)
    if not root.is_dir():
        raise CommandRefusal(
            f"no run store at {root}: run something first (vitrine --all) or pass --store DIR",
            USAGE if args.output is not None else INFRASTRUCTURE,
        )
    damage = damaged_store(root)
    if damage is not None:
        raise CommandRefusal(damage, INFRASTRUCTURE)
    if export:
        return _export(root, args.directory, args.max_runs)
    return _serve(root, args)


def _serve(root: Path, args: argparse.Namespace) -> int:
    from vitrine._board.app import Board
    from vitrine._board.server import serve

    if not 0 <= args.port <= 65535:
        raise CommandRefusal(f"--port must lie between 0 and 65535, got {args.port}")
    board = Board(root, suite=args.suite)
    # Read the header index and compile the index page before announcing the address, so the
    # first person to open it waits for the rows, not for a cold start.
    from vitrine._board.query import IndexQuery

    board.index(IndexQuery())
    try:
        with serve(board, args.host, args.port) as server:
            out = sys.stdout
            if args.host not in _LOOPBACK:
                out.write(
                    f"{PROG}: warning: listening on {args.host}: anyone who can reach it can "
                    "read this store\n"
                )
            # The address carries the access token: the board is whoever holds this line's.
            out.write(f"{PROG}: {server.login_url} (store {root}); Ctrl-C stops it\n")
            out.flush()
            import threading

            threading.Event().wait()
    except OSError as exc:
        raise CommandRefusal(
            f"cannot listen on {args.host}:{args.port} ({exc.strerror or type(exc).__name__})",
            INFRASTRUCTURE,
        ) from None
    except KeyboardInterrupt:
        sys.stdout.write(f"{PROG}: stopped\n")
    return ExitCode.PASS


def _export(root: Path, directory: Path, max_runs: int) -> int:
    from vitrine._board.export import export_board

    if max_runs < 1:
        raise CommandRefusal(f"--max-runs must be at least 1, got {max_runs}")
    if directory.exists() and not directory.is_dir():
        raise CommandRefusal(f"{directory} exists and is not a directory")
    target, store = directory.resolve(), root.resolve()
    if target == store or store in target.parents:
        raise CommandRefusal(
            f"{directory} is inside the run store it would copy ({root}): export the board "
            "to a folder outside the store"
        )
    try:
        written = export_board(root, directory, max_runs=max_runs)
    except OSError as exc:
        raise CommandRefusal(
            f"cannot write the export into {directory} ({exc.strerror or type(exc).__name__})",
            INFRASTRUCTURE,
        ) from None
    sys.stdout.write(f"{PROG} export: {written} pages\nartifact: {directory / 'index.html'}\n")
    return ExitCode.PASS
