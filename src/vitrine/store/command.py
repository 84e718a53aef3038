"""``vitrine runs``: list the sealed runs of a store, and find what a killed process left.

``vitrine runs list`` reads the store's run index newest first (filters by definition, arm and
verdict); ``vitrine runs unsealed`` lists runs that were started but never sealed (resumable
with :func:`vitrine.bench.runner.resume_run`) and debris (run folders without a manifest,
temporary files of interrupted writes); ``vitrine runs sweep`` removes the debris, never an
unsealed run. Exit codes: 0 done, 1 ``unsealed`` found something, 2 bad arguments, 4 the store
cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from vitrine.commandline import INFRASTRUCTURE, CommandRefusal, RefusingParser, run_command
from vitrine.outcomes import Verdict

__all__ = ["build_parser", "main"]

PROG = "vitrine runs"
_OK, _FOUND = 0, 1


def _positive(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 9 or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1, got {text[:40]!r}")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text[:40]!r}") from None
    if not 0.0 <= value <= 10**7:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"expected 0 to 10000000 seconds, got {text[:40]!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = RefusingParser(prog=PROG, description=__doc__.split("\n\n")[0], allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=RefusingParser)
    listing = commands.add_parser("list", help="sealed runs, newest first")
    listing.add_argument("--definition", metavar="KEY", help="only this definition key")
    listing.add_argument("--arm", help="only this arm")
    listing.add_argument(
        "--verdict",
        type=str.upper,
        choices=[verdict.value for verdict in Verdict],
        help="only this verdict (PASS, FAIL, WARN, PENDING)",
    )
    listing.add_argument("--limit", type=_positive, default=50, help="at most N rows (50)")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    unsealed = commands.add_parser("unsealed", help="unsealed runs and debris: exit 1 if any")
    sweep = commands.add_parser("sweep", help="remove debris left by killed processes")
    sweep.add_argument(
        "--older-than",
        type=_seconds,
        default=600.0,
        metavar="SECONDS",
        help="only debris at least this old, so no live writer loses its files (600)",
    )
    for sub in (listing, unsealed, sweep):
        sub.add_argument(
            "--output",
            metavar="DIR",
            type=Path,
            help="store root (default $VITRINE_HOME, ./.vitrine)",
        )
    return parser


def main(argv: Sequence[str]) -> int:
    return run_command(PROG, build_parser(), argv, _run)


def _run(args: argparse.Namespace) -> int:
    from vitrine.store.naming import resolve_root

    root = resolve_root(args.output)
    if root.exists() and not root.is_dir():
        raise CommandRefusal(f"--output {root} is not a directory")
    try:
        if args.command == "list":
            return _list(root, args)
        if args.command == "unsealed":
            return _unsealed(root)
        return _sweep(root, args.older_than)
    except OSError as exc:
        raise CommandRefusal(
            f"the store at {root} cannot be read ({exc.strerror or exc})", INFRASTRUCTURE
        ) from exc


def _list(root: Path, args: argparse.Namespace) -> int:
    from vitrine.store.index import RunIndexEntry, newest_runs

    def matches(entry: RunIndexEntry) -> bool:
        return (
            (not args.definition or entry.definition.get("key") == args.definition)
            and (not args.arm or entry.arm == args.arm)
            and (not args.verdict or entry.verdict.upper() == args.verdict.upper())
        )

    # Exact substrings every matching line holds: most lines are skipped before parsing.
    needles = tuple(json.dumps(value) for value in (args.definition, args.arm) if value)
    out = sys.stdout
    entries = newest_runs(root, limit=args.limit, contains=needles, where=matches)
    for entry in entries:
        if args.json:
            out.write(json.dumps(entry.to_record(), sort_keys=True) + "\n")
            continue
        key = f"{entry.definition.get('key')}@{entry.definition.get('version')}"
        out.write(
            f"{entry.run_id}  {entry.verdict:<7}  {key}  {entry.arm}  "
            f"rep {entry.repetition}  {entry.run_dir}\n"
        )
    if not entries and not args.json:
        out.write("no sealed runs match\n")
    return _OK


def _unsealed(root: Path) -> int:
    from vitrine.store.maintenance import inspect_store

    health = inspect_store(root)
    out = sys.stdout
    for item in health.leftovers:
        advice = (
            "resumable with vitrine.bench.runner.resume_run"
            if item.kind == "unsealed-run"
            else "debris: `vitrine runs sweep` removes it"
        )
        out.write(f"{item.kind:<24} {item.path}  ({advice})\n")
    out.write(
        f"{health.sealed} sealed runs, {len(health.unsealed)} unsealed, "
        f"{len(health.debris)} debris\n"
    )
    return _FOUND if health.leftovers else _OK


def _sweep(root: Path, older_than: float) -> int:
    from vitrine.store.maintenance import sweep

    removed = sweep(root, grace_s=older_than)
    for path in removed:
        sys.stdout.write(f"removed {path}\n")
    sys.stdout.write(f"{len(removed)} debris item(s) removed; unsealed runs were kept\n")
    return _OK
