"""``vitrine board``: open the evaluation board over a run store, or export a static copy.

::

    vitrine board [--store DIR] [--port N] [--host ADDR] [--suite MODULE:ATTR]
    vitrine board export DIR [--store DIR] [--max-runs N]

The board listens on 127.0.0.1 and a free port unless told otherwise, prints its address, and
runs until interrupted. Exit codes: 0 stopped cleanly or exported, 2 invalid arguments, 4 the
store or the port cannot be used.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

__all__ = ["main"]

PROG = "vitrine board"
_OK, _USAGE, _INFRA = 0, 2, 4
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class _Usage(Exception):
    """A refused request: printed and exited with 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Usage(message)


def _store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="DIR",
        type=Path,
        help="run-store root (default $VITRINE_HOME, ./.vitrine)",
    )


def build_parser(export: bool) -> argparse.ArgumentParser:
    if export:
        parser = _Parser(
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
        _store_option(parser)
        return parser
    parser = _Parser(
        prog=PROG,
        description=__doc__.split("\n\n")[0].replace("``", ""),
        epilog=f"{PROG} export DIR writes a static copy (see {PROG} export --help).",
        allow_abbrev=False,
    )
    _store_option(parser)
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    parser.add_argument("--suite", metavar="MODULE:ATTR", help="suite for the setup panel")
    return parser


def main(argv: Sequence[str]) -> int:
    args_list = list(argv)
    export = bool(args_list) and args_list[0] == "export"
    parser = build_parser(export)
    try:
        args = parser.parse_args(args_list[1:] if export else args_list)
    except _Usage as exc:
        sys.stderr.write(parser.format_usage())
        return _error(str(exc), _USAGE)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else _USAGE
    from vitrine.store.naming import resolve_root

    root = resolve_root(args.store)
    if not root.is_dir():
        return _error(
            f"no run store at {root}: run something first (vitrine --all) or pass --store DIR",
            _USAGE if args.store is not None else _INFRA,
        )
    if export:
        return _export(root, args.directory, args.max_runs)
    return _serve(root, args)


def _serve(root: Path, args: argparse.Namespace) -> int:
    from vitrine.board.app import Board
    from vitrine.board.server import serve

    if not 0 <= args.port <= 65535:
        return _error(f"--port must lie between 0 and 65535, got {args.port}", _USAGE)
    board = Board(root, suite=args.suite)
    # Read the header index and compile the index page before announcing the address, so the
    # first person to open it waits for the rows, not for a cold start.
    from vitrine.board.query import IndexQuery

    board.index(IndexQuery())
    try:
        with serve(board, args.host, args.port) as server:
            out = sys.stdout
            if args.host not in _LOOPBACK:
                out.write(
                    f"{PROG}: warning: listening on {args.host}: anyone who can reach it can "
                    "read this store\n"
                )
            out.write(f"{PROG}: {server.url} (store {root}); Ctrl-C stops it\n")
            out.flush()
            import threading

            threading.Event().wait()
    except OSError as exc:
        return _error(
            f"cannot listen on {args.host}:{args.port} ({exc.strerror or type(exc).__name__})",
            _INFRA,
        )
    except KeyboardInterrupt:
        sys.stdout.write(f"{PROG}: stopped\n")
    return _OK


def _export(root: Path, directory: Path, max_runs: int) -> int:
    from vitrine.board.export import export_board

    if max_runs < 1:
        return _error(f"--max-runs must be at least 1, got {max_runs}", _USAGE)
    if directory.exists() and not directory.is_dir():
        return _error(f"{directory} exists and is not a directory", _USAGE)
    try:
        written = export_board(root, directory, max_runs=max_runs)
    except OSError as exc:
        return _error(
            f"cannot write the export into {directory} ({exc.strerror or type(exc).__name__})",
            _INFRA,
        )
    sys.stdout.write(f"{PROG} export: {written} pages\nartifact: {directory / 'index.html'}\n")
    return _OK


def _error(message: str, code: int) -> int:
    sys.stderr.write(f"{PROG}: error: {message}\n")
    return code
