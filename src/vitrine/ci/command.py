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
from typing import NoReturn

__all__ = ["build_parser", "main"]

PROG = "vitrine ci"
_OK, _USAGE, _INFRA = 0, 2, 4
_DEFAULT_SUITE = "vitrine_shop.evals.suite:SUITE"  # as in vitrine.cli: kept import-free
_COMPONENT_FOR = {"behaviour": "service", "redteam": "redteam-target", "rag": "rag"}


class _Usage(Exception):
    """A refused request: printed and exited with 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Usage(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description=__doc__.split("\n\n")[0], allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    init = commands.add_parser("init", help="write .github/workflows/eval-*.yml")
    init.add_argument("--suite", metavar="MODULE:ATTR", default=_DEFAULT_SUITE)
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
    init.add_argument("--behaviour-tests", default="tests/behaviour", help="behaviour test path")
    init.add_argument("--force", action="store_true", help="overwrite existing workflow files")
    return parser


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
        return _init(args)
    except _Usage as exc:
        return _error(str(exc), _USAGE)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else _USAGE


def _init(args: argparse.Namespace) -> int:
    from vitrine.ci.workflows import LAYERS, CiSettings, render_workflows
    from vitrine.suite import SuiteLoadError, load_suite

    try:
        suite = load_suite(args.suite)
    except SuiteLoadError as exc:
        return _error(str(exc), int(exc.exit_code))
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
            raise _Usage(f"--layers names no layer: choose from {', '.join(LAYERS)}")
        missing = [layer for layer in layers if layer in LAYERS and layer not in available]
        if missing:
            needs = ", ".join(
                f"{layer} needs a {_COMPONENT_FOR[layer]!r} component" for layer in missing
            )
            raise _Usage(f"suite {suite.name} cannot run {', '.join(missing)}: {needs}")
    try:
        settings = CiSettings(
            suite=args.suite,
            install=args.install,
            deploy_workflow=args.deploy_workflow,
            ingest_workflow=args.ingest_workflow,
            behaviour_tests=args.behaviour_tests,
            layers=tuple(layers),
        )
    except ValueError as exc:
        raise _Usage(str(exc)) from exc
    if not args.dir.is_dir():
        raise _Usage(f"--dir {args.dir} is not a directory")
    target = args.dir / ".github" / "workflows"
    files = render_workflows(settings)
    existing = [name for name in files if (target / name).exists()]
    if existing and not args.force:
        raise _Usage(
            f"{', '.join(existing)} already exist in {target}; pass --force to overwrite them"
        )
    from vitrine.store.files import atomic_write_bytes

    try:
        target.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            atomic_write_bytes(target / name, text.encode())
    except OSError as exc:
        return _error(f"cannot write the workflows to {target} ({exc.strerror or exc})", _INFRA)
    for name in files:
        sys.stdout.write(f"wrote {target / name}\n")
    return _OK


def _error(message: str, code: int) -> int:
    sys.stderr.write(f"{PROG}: error: {message}\n")
    return code
