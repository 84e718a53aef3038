"""``vitrine ci init``: write GitHub Actions workflows for a suite's evaluation layers.

The layers written are the ones the suite can run: offline always, behaviour when it provides a
``service`` component, red team with a ``redteam-target``, RAG with ``rag``. Existing files are
never overwritten without ``--force``. Exit codes: 0 written, 2 bad arguments or a file that
exists, 4 the files could not be written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from vitrine._commandline import (
    INFRASTRUCTURE,
    CommandRefusal,
    RefusingParser,
    add_suite_option,
    load_suite_or_refuse,
    refused_as_command,
    run_command,
)
from vitrine._vocabulary import ExitCode

__all__ = ["build_parser", "main"]

PROG = "vitrine ci"
_COMPONENT_FOR = {"behaviour": "service", "redteam": "redteam-target", "rag": "rag"}


def build_parser() -> argparse.ArgumentParser:
    parser = RefusingParser(prog=PROG, description=__doc__.split("\n\n")[0], allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=RefusingParser)
    init = commands.add_parser("init", help="write .github/workflows/eval-*.yml")
    add_suite_option(init)
    init.add_argument("--dir", type=Path, default=Path(), help="repository root (default: here)")
    init.add_argument(
        "--install",
        default="pip install -e . 'vitrine[{extras}]'",
        help="install command; {extras} becomes the layer's vitrine extras",
    )
    init.add_argument("--layers", help="comma-separated subset of offline,behaviour,redteam,rag")
    init.add_argument("--deploy-workflow", default="Deploy Backend", help="workflow to follow")
    init.add_argument(
        "--ingest-workflow", default="Ingest Knowledge Base", help="workflow RAG follows"
    )
    init.add_argument(
        "--behaviour-tests", metavar="PATH", default="tests/behaviour", help="behaviour test path"
    )
    init.add_argument("--force", action="store_true", help="overwrite existing workflow files")
    return parser


def main(argv: Sequence[str]) -> int:
    """Run ``vitrine ci``; return the exit code."""
    return run_command(PROG, build_parser(), argv, _init)


def _init(args: argparse.Namespace) -> int:
    from vitrine._ci.workflows import LAYERS, CiSettings, render_workflows
    from vitrine._discovery import find_suite

    with refused_as_command():
        # The workflows name the suite by its import path, however this command found it.
        spec = find_suite(args.suite).spec
    suite = load_suite_or_refuse(spec)
    available = [
        layer
        for layer in LAYERS
        if layer not in _COMPONENT_FOR or _COMPONENT_FOR[layer] in suite.components
    ]
    if args.layers is None:
        layers = available
    else:
        layers = [part.strip() for part in args.layers.split(",") if part.strip()]
        if not layers:
            raise CommandRefusal(f"--layers names no layer: choose from {', '.join(LAYERS)}")
        missing = [layer for layer in layers if layer in LAYERS and layer not in available]
        if missing:
            needs = ", ".join(
                f"{layer} needs a {_COMPONENT_FOR[layer]!r} component" for layer in missing
            )
            raise CommandRefusal(f"suite {suite.name} cannot run {', '.join(missing)}: {needs}")
    try:
        settings = CiSettings(
            suite=spec,
            install=args.install,
            deploy_workflow=args.deploy_workflow,
            ingest_workflow=args.ingest_workflow,
            behaviour_tests=args.behaviour_tests,
            layers=tuple(layers),
        )
    except ValueError as exc:
        raise CommandRefusal(str(exc)) from exc
    if not args.dir.is_dir():
        raise CommandRefusal(f"--dir {args.dir} is not a directory")
    target = args.dir / ".github" / "workflows"
    files = render_workflows(settings)
    existing = [name for name in files if (target / name).exists()]
    if existing and not args.force:
        raise CommandRefusal(
            f"{', '.join(existing)} already exist in {target}; pass --force to overwrite them"
        )
    from vitrine.store._files import atomic_write_bytes

    try:
        target.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            atomic_write_bytes(target / name, text.encode())
    except OSError as exc:
        raise CommandRefusal(
            f"cannot write the workflows to {target} ({exc.strerror or exc})", INFRASTRUCTURE
        ) from exc
    for name in files:
        sys.stdout.write(f"wrote {target / name}\n")
    return ExitCode.PASS
