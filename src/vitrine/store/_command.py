"""``vitrine runs``: list the sealed runs of a store; find and finish what a killed process left.

``vitrine runs list`` reads the store's run index newest first (filters by definition, arm and
verdict); ``vitrine runs unsealed`` lists runs that were started but never sealed, abandoned
runs (unsealed and superseded by a later sealed run) and debris (run folders without a
manifest, temporary files of interrupted writes), and indexes a sealed run the index lacks;
``vitrine runs resume`` finishes an unsealed run with the benchmark that started it
(``--benchmark MODULE:ATTR``) and seals it; ``vitrine runs sweep`` removes the debris, never an
unsealed run, and with ``--abandoned`` sets the abandoned runs aside under ``abandoned/``.
Exit codes: 0 done (also: nothing to resume), 1 ``unsealed`` found something, 2 bad arguments
(also: several unsealed runs and none named), 4 the store cannot be read or written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vitrine._commandline import INFRASTRUCTURE, CommandRefusal, RefusingParser, run_command
from vitrine._outcomes import ExitCode, Verdict

if TYPE_CHECKING:
    from vitrine._bench.model import Arm, BenchmarkDefinition

__all__ = ["build_parser", "main"]

PROG = "vitrine runs"
_OK, _FOUND = ExitCode.PASS, ExitCode.MEASURED_FAILURE


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
    resume = commands.add_parser("resume", help="finish the run a killed process left unsealed")
    resume.add_argument(
        "run_id", nargs="?", metavar="RUN_ID", help="the run to resume (needed when several are)"
    )
    resume.add_argument(
        "--benchmark",
        metavar="MODULE:ATTR",
        help="a function returning (definition, arms): the code that started the run",
    )
    resume.add_argument(
        "--concurrency",
        type=_positive,
        default=16,
        metavar="N",
        help="at most N trials at once (16)",
    )
    sweep = commands.add_parser("sweep", help="remove debris left by killed processes")
    sweep.add_argument(
        "--older-than",
        type=_seconds,
        default=600.0,
        metavar="SECONDS",
        help="only debris at least this old, so no live writer loses its files (600)",
    )
    sweep.add_argument(
        "--abandoned",
        action="store_true",
        help="also move abandoned runs (superseded, never to be resumed) to abandoned/",
    )
    sweep.add_argument(
        "--abandon",
        action="append",
        default=[],
        metavar="RUN_ID",
        help="set this unsealed run aside in abandoned/: no benchmark will resume it (repeatable)",
    )
    for sub in (listing, unsealed, resume, sweep):
        sub.add_argument(
            "--output",
            "--store",
            dest="output",
            metavar="DIR",
            type=Path,
            help="store root (default $VITRINE_HOME, ./.vitrine)",
        )
    return parser


def main(argv: Sequence[str]) -> int:
    return run_command(PROG, build_parser(), argv, _run)


def _run(args: argparse.Namespace) -> int:
    from vitrine.store._naming import damaged_store, resolve_root

    root = resolve_root(args.output)
    # The nearest part of the path that exists must be a folder: under a file, no store can be.
    existing = next((p for p in (root, *root.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        where = "" if existing == root else f" ({existing} is a file)"
        raise CommandRefusal(f"--output {root} is not a directory{where}")
    damage = damaged_store(root)
    if damage is not None:
        raise CommandRefusal(damage, INFRASTRUCTURE)
    try:
        if args.command == "list":
            return _list(root, args)
        if args.command == "unsealed":
            return _unsealed(root)
        if args.command == "resume":
            return _resume(root, args)
        return _sweep(root, args.older_than, abandoned=args.abandoned, abandon=args.abandon)
    except OSError as exc:
        raise CommandRefusal(
            f"the store at {root} cannot be read ({exc.strerror or exc})", INFRASTRUCTURE
        ) from exc


def _list(root: Path, args: argparse.Namespace) -> int:
    from vitrine.store._index import RunIndexEntry, index_problem, newest_runs, recover_index

    recover_index(root)
    problems: dict[str, str] = {}

    def matches(entry: RunIndexEntry) -> bool:
        if (
            (args.definition and entry.definition.get("key") != args.definition)
            or (args.arm and entry.arm != args.arm)
            or (args.verdict and entry.verdict.upper() != args.verdict.upper())
        ):
            return False
        # The verdict shown is the index's only once the run's own seal agrees with it: one
        # small read for each line that would be listed, so a listing stays as cheap as its
        # limit. A line whose verdict was edited never matches --verdict.
        problem = index_problem(root, entry)
        if problem is not None:
            problems[entry.run_id] = problem
        return not args.verdict or problem is None

    # Exact substrings every matching line holds: most lines are skipped before parsing.
    needles = tuple(json.dumps(value) for value in (args.definition, args.arm) if value)
    out = sys.stdout
    entries = newest_runs(root, limit=args.limit, contains=needles, where=matches)
    for run_id, why in problems.items():  # listed or not: an edited line is said
        sys.stderr.write(f"{PROG}: run {run_id}: {why}\n")
    for entry in entries:
        problem = problems.get(entry.run_id)
        if args.json:
            record = entry.to_record()
            if problem is not None:
                record.update(verdict="UNVERIFIED", index_problem=problem)
            out.write(json.dumps(record, sort_keys=True) + "\n")
            continue
        key = f"{entry.definition.get('key')}@{entry.definition.get('version')}"
        verdict = entry.verdict if problem is None else "UNVERIFIED"
        out.write(
            f"{entry.run_id}  {verdict:<7}  {key}  {entry.arm}  "
            f"rep {entry.repetition}  {entry.run_dir}\n"
        )
    if not entries and not args.json:
        out.write("no sealed runs match\n")
    return _OK


def _unsealed(root: Path) -> int:
    from vitrine.store._maintenance import inspect_store

    health = inspect_store(root)
    out = sys.stdout
    for run_id in health.reindexed:
        out.write(f"{'reindexed':<24} runs/{run_id}  (sealed, but missing from the index)\n")
    for item in health.leftovers:
        if item.kind == "unsealed-run":
            advice = (
                "`vitrine runs resume --benchmark` finishes it; if no benchmark will, "
                "`vitrine runs sweep --abandon RUN_ID` sets it aside"
            )
        elif item.kind == "abandoned-run":
            advice = f"{item.reason}; `vitrine runs sweep --abandoned` sets it aside"
        else:
            advice = "debris: `vitrine runs sweep` removes it"
        out.write(f"{item.kind:<24} {item.path}  ({advice})\n")
    out.write(
        f"{health.sealed} sealed runs, {len(health.unsealed)} unsealed, "
        f"{len(health.abandoned)} abandoned, {len(health.debris)} debris\n"
    )
    return _FOUND if health.leftovers else _OK


def _resume(root: Path, args: argparse.Namespace) -> int:
    from vitrine._bench.recovery import select_unsealed
    from vitrine.store._errors import RunStoreError

    try:
        target = select_unsealed(root, args.run_id)
    except ValueError as exc:  # several unsealed runs and none named, or an unknown run id
        raise CommandRefusal(str(exc)) from exc
    except RunStoreError as exc:
        raise CommandRefusal(str(exc), INFRASTRUCTURE) from exc
    if target is None:
        sys.stdout.write(
            f"run {args.run_id} is already sealed: nothing to resume\n"
            if args.run_id
            else f"no unsealed run in {root}: nothing to resume\n"
        )
        return _OK
    if not args.benchmark:
        raise CommandRefusal(
            f"run {target.describe()} is unsealed; name the code that started it with "
            "--benchmark MODULE:ATTR (a function returning the definition and its arms): a run "
            "is finished only by the benchmark that measures it"
        )
    definition, arms = _load_benchmark(args.benchmark)
    return _finish(root, target.run_id, definition, arms, args.concurrency)


def _finish(
    root: Path, run_id: str, definition: BenchmarkDefinition, arms: list[Arm], concurrency: int
) -> int:
    from vitrine._bench.recovery import resume_unsealed
    from vitrine.store._errors import ResumeMismatchError, RunStoreError

    try:
        resumed = resume_unsealed(root, definition, arms, run_id=run_id, concurrency=concurrency)
    except ResumeMismatchError as exc:
        raise CommandRefusal(str(exc)) from exc
    except RunStoreError as exc:
        raise CommandRefusal(str(exc), INFRASTRUCTURE) from exc
    for run in resumed:
        sys.stdout.write(
            f"resumed {run.run_id}: {len(run.case_ids)} cases, verdict {run.verdict.value}, "
            f"sealed in {Path(run.run_dir or '').relative_to(root).as_posix()}\n"
        )
    return _OK


def _load_benchmark(spec: str) -> tuple[BenchmarkDefinition, list[Arm]]:
    """Import ``module:attr`` and call it (when callable) for ``(definition, arm or arms)``."""
    from vitrine._usercode import (
        UserCodeError,
        call_user_code,
        import_user_module,
        user_attribute,
    )

    module_name, _, attr = spec.strip().partition(":")
    if not module_name or not attr:
        raise CommandRefusal(f"--benchmark expects MODULE:ATTR, got {spec[:80]!r}")
    label = f"--benchmark {spec}"
    try:
        value = user_attribute(import_user_module(module_name, label), attr, label)
        if callable(value):
            value = call_user_code(label, "building the benchmark", value)
    except UserCodeError as exc:
        raise CommandRefusal(str(exc), exc.exit_code) from exc
    return _benchmark_pair(spec, value)


def _benchmark_pair(spec: str, value: object) -> tuple[BenchmarkDefinition, list[Arm]]:
    from vitrine._bench.model import Arm, BenchmarkDefinition

    if isinstance(value, tuple) and len(value) == 2:
        definition, arms = value
        arm_list = [arms] if isinstance(arms, Arm) else []
        if isinstance(arms, list | tuple):
            arm_list = list(arms)
        if (
            isinstance(definition, BenchmarkDefinition)
            and arm_list
            and all(isinstance(arm, Arm) for arm in arm_list)
        ):
            return definition, arm_list
    raise CommandRefusal(
        f"--benchmark {spec} gave {type(value).__name__}, not (BenchmarkDefinition, arms): the "
        "attribute must be, or return, the definition and its Arm (or a list of Arms)"
    )


def _sweep(root: Path, older_than: float, *, abandoned: bool, abandon: list[str]) -> int:
    from vitrine.store._maintenance import abandoned_dir, sweep

    try:
        removed = sweep(root, grace_s=older_than, abandoned=abandoned, abandon=abandon)
    except ValueError as exc:  # a run named with --abandon that is not unsealed
        raise CommandRefusal(f"--abandon {exc}") from exc
    for path in removed:
        moved = (abandoned_dir(root) / Path(path).name).is_dir()
        sys.stdout.write(f"set aside {path} in abandoned/\n" if moved else f"removed {path}\n")
    kept = "unsealed runs were kept" if abandoned else "unsealed and abandoned runs were kept"
    sys.stdout.write(f"{len(removed)} item(s) removed or set aside; {kept}\n")
    return _OK
