"""``vitrine redteam``: static cases, adaptive attacks, sign-off, the soft gate, exports.

::

    vitrine redteam run [CASES.yaml|promptfooconfig.yaml] [--extended] [--target shop|vulnerable]
                        [--provider P] [--no-judge] [--deterministic-only] [--trace-to URL]
    vitrine redteam adaptive --strategy goat|crescendo [--goal ID] [--attacker scripted|provider]
    vitrine redteam sign-off FINDING --by NAME --reason TEXT [--run RUN]
    vitrine redteam status [RUN]
    vitrine redteam export RUN|latest --format json|junit|sarif [--out PATH]

The target comes from the suite's ``redteam-target`` component. Without ``--provider``
everything is offline and deterministic (scripted target, scripted attacker, no judge); with
one, the subject, the judge and (by default) the attacker are that provider's models, and a
paid provider needs ``--confirm-paid``. Nothing is sent to a service the operator did not name.
With a trace destination (``--trace-to``, or the OpenTelemetry or Langfuse variables; see
docs/tracing.md) ``run`` and ``adaptive`` send each probe as a span and its results as scores.

Exit codes of ``run`` and ``adaptive``: 0 every probe resisted, 1 a compromise (a measured
failure, and a finding that needs sign-off), 3 an inconclusive probe (for a static case: an
assertion not measured, such as an ``llm-rubric`` with no judge), 4 infrastructure (an errored,
truncated or skipped probe, or an unready provider), 2 invalid arguments. ``run
--deterministic-only`` excludes the judged assertions instead, and the run says so in every
report. ``run --extended`` adds the suite's opt-in cases to its baseline cases. A promptfoo
config's ``redteam:`` block runs as vitrine can: its plugins (the static case categories) run the
suite's baseline cases of those categories, and its goat and crescendo strategies run as adaptive
attacks, each its own run; the exit code is the worst of the runs. ``status`` exits 1 while the run
has an open finding; once all are signed off it exits with what the run left unresolved (3 or 4),
and 0 only for a run with nothing missing: the soft gate a pipeline can call before the next
deploy.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vitrine._commandline import (
    INFRASTRUCTURE,
    CommandRefusal,
    RefusingParser,
    add_store_option,
    add_suite_option,
    add_trace_options,
    load_suite_or_refuse,
    run_command,
    traced_session,
)
from vitrine._vocabulary import ExitCode

if TYPE_CHECKING:
    from vitrine.providers._base import ChatModel
    from vitrine.redteam._adaptive import Strategy
    from vitrine.redteam._cases import CasesFile
    from vitrine.redteam._judge import ChatModelSafetyJudge
    from vitrine.redteam._promptfoo import AdaptiveRequest

__all__ = ["main"]

PROG = "vitrine redteam"
# The longest adaptive conversation: each turn may call the target and the attacker model.
MAX_TURNS = 50
# An adaptive conversation's default length, on the command line and in a promptfoo strategy.
_DEFAULT_TURNS = 5


def _common(parser: argparse.ArgumentParser) -> None:
    add_suite_option(parser, component="redteam-target")
    add_store_option(parser)


def _provider_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target", default="shop", help="target variant: shop (default) or vulnerable"
    )
    parser.add_argument("--provider", choices=("openai", "azure", "local"))
    parser.add_argument("--model", metavar="NAME")
    parser.add_argument("--local-model", metavar="PATH", type=Path)
    parser.add_argument("--confirm-paid", action="store_true")
    parser.add_argument("--no-judge", action="store_true", help="never call a judge")
    add_trace_options(parser)


def build_parser() -> argparse.ArgumentParser:
    parser = RefusingParser(
        prog=PROG, description=__doc__.split("\n\n")[0].replace("``", ""), allow_abbrev=False
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=RefusingParser)
    run = commands.add_parser("run", help="run static cases from a YAML file or a promptfoo config")
    run.add_argument(
        "cases",
        nargs="?",
        type=Path,
        help="case file or promptfoo config (default: the suite's baseline cases)",
    )
    run.add_argument(
        "--extended",
        action="store_true",
        help="also run the suite's opt-in extended cases, after the baseline ones",
    )
    run.add_argument(
        "--deterministic-only",
        action="store_true",
        help="exclude judged (llm-rubric) assertions and say so in the report; no judge is called",
    )
    run.set_defaults(attacker=None)  # a promptfoo strategy's attacker follows --provider
    _provider_options(run)
    _common(run)
    adaptive = commands.add_parser("adaptive", help="adaptive multi-turn attacks")
    adaptive.add_argument("--strategy", required=True, choices=("goat", "crescendo"))
    adaptive.add_argument("--goal", action="append", help="goal id (repeatable; default all)")
    adaptive.add_argument(
        "--attacker",
        choices=("scripted", "provider"),
        help="attacker model (default: the provider's if one is named, else scripted)",
    )
    adaptive.add_argument(
        "--max-turns",
        type=int,
        default=_DEFAULT_TURNS,
        metavar="N",
        help=f"turns per conversation, 1 to {MAX_TURNS} (default 5)",
    )
    adaptive.set_defaults(deterministic_only=False)  # an adaptive goal has no assertions
    _provider_options(adaptive)
    _common(adaptive)
    sign = commands.add_parser("sign-off", help="record a human sign-off of a finding")
    sign.add_argument("finding")
    sign.add_argument("--by", required=True)
    sign.add_argument("--reason", required=True)
    sign.add_argument("--run", metavar="RUN", help="run id or directory (default: the latest run)")
    _common(sign)
    status = commands.add_parser("status", help="open findings: exit 1 while any remain")
    status.add_argument(
        "run", nargs="?", metavar="RUN", help="run id or directory (default: the latest)"
    )
    _common(status)
    export = commands.add_parser("export", help="export a run as JSON, JUnit XML or SARIF")
    export.add_argument("run", metavar="RUN", help="run id, directory, or 'latest'")
    export.add_argument("--format", required=True, choices=("json", "junit", "sarif"))
    export.add_argument("--out", type=Path, help="write here instead of stdout")
    _common(export)
    return parser


def main(argv: Sequence[str]) -> int:
    """Run ``vitrine redteam``; return the exit code."""
    return run_command(PROG, build_parser(), argv, _dispatch)


def _dispatch(args: argparse.Namespace) -> int:
    handlers = {
        "run": _run,
        "adaptive": _adaptive,
        "sign-off": _sign_off,
        "status": _status,
        "export": _export,
    }
    from vitrine.redteam._runs import RunIntegrityError

    try:
        _root(args)  # a store path that cannot be a folder is refused before anything runs
        return handlers[args.command](args)
    except RunIntegrityError as exc:
        raise CommandRefusal(str(exc), INFRASTRUCTURE) from exc
    except KeyboardInterrupt:
        raise CommandRefusal(
            "interrupted: the run is incomplete and was not written", INFRASTRUCTURE
        ) from None


def _root(args: argparse.Namespace) -> Path:
    from vitrine.store._naming import blocking_file, resolve_root

    root = resolve_root(args.output)
    blocker = blocking_file(root)
    if blocker is not None:
        raise CommandRefusal(f"--output {root} is not a directory ({blocker} is a file)")
    return root


def _component(args: argparse.Namespace) -> Any:
    return load_suite_or_refuse(args.suite, "redteam-target")


@dataclass
class _Models:
    subject: ChatModel | None
    judge: ChatModelSafetyJudge | None
    attacker_source: ChatModel | None
    description: str


def _models(args: argparse.Namespace, variant: str) -> _Models:
    """The provider's models, only when one is named; refuses before any call."""
    if args.provider is None:
        return _Models(None, None, None, "offline (scripted)")
    from vitrine._cost import confirmation_refusal
    from vitrine.providers._config import ProviderConfig, create_chat_model, readiness
    from vitrine.redteam._judge import ChatModelSafetyJudge
    from vitrine.redteam._providers import redteam_config

    config = redteam_config(
        ProviderConfig.from_env(args.provider, model=args.model, local_model=args.local_model)
    )
    refusal = confirmation_refusal(
        f"--provider {args.provider} calls a paid model service (--provider local costs "
        "nothing and needs no confirmation)",
        paid=config.paid,
        confirmed=args.confirm_paid,
    )
    if refusal is not None:
        raise CommandRefusal(refusal)
    state = readiness(config)
    if not state.ready:
        raise CommandRefusal(
            f"provider not ready, nothing was called: {state.reason}", INFRASTRUCTURE
        )
    subject = create_chat_model(config, "subject")
    judge = (
        None
        if args.no_judge or args.deterministic_only
        else ChatModelSafetyJudge(
            create_chat_model(config, "judge"), max_output_tokens=config.judge_max_output_tokens
        )
    )
    described = config.describe()
    return _Models(
        None if variant == "vulnerable" else subject,
        judge,
        subject,
        f"{described['provider']} {described['model']}",
    )


def _target_facts(component: Any, variant: str, models: _Models) -> dict[str, str]:
    model = models.description if models.subject is not None else f"scripted ({variant})"
    return {"name": str(component.name), "variant": variant, "model": model}


def _factory(component: Any, variant: str, models: _Models) -> Any:
    try:
        return component.factory(variant, models.subject)
    except ValueError as exc:
        raise CommandRefusal(str(exc)) from exc


# Runs of one invocation combine as one campaign's probes do (see ``classify``): a compromise
# is a fact no gap elsewhere undoes, then infrastructure, then what was not measured.
_RUN_PRIORITY = (ExitCode.MEASURED_FAILURE, ExitCode.INFRASTRUCTURE, ExitCode.NOT_MEASURED)


def _run(args: argparse.Namespace) -> int:
    from vitrine.redteam._static import run_static_cases

    component = _component(args)
    cases, names, adaptive = _static_work(args, component)
    for request in adaptive:  # refused before anything runs
        _check_turns(request.max_turns or _DEFAULT_TURNS, f"{request.strategy} maxTurns")
    goals = _goals(component) if adaptive else {}
    models = _models(args, args.target)
    factory = _factory(component, args.target, models)
    codes = []
    with _traced(args):
        if cases is not None:
            started = _now()
            facts = asyncio.run(
                run_static_cases(
                    cases, factory, judge=models.judge, exclude_judged=args.deterministic_only
                )
            )
            codes.append(_finish(args, "static", component, models, facts, started, names))
        for request in adaptive:
            turns = request.max_turns or _DEFAULT_TURNS
            codes.append(
                _adaptive_run(args, component, models, factory, request.strategy, goals, turns)
            )
    return next((int(c) for c in _RUN_PRIORITY if c in codes), int(ExitCode.PASS))


def _traced(args: argparse.Namespace) -> AbstractContextManager[None]:
    """The command's trace: one ``session redteam run|adaptive`` span (off unless a
    destination is set)."""
    return traced_session(
        f"redteam {args.command}", trace_to=args.trace_to, trace_content=args.trace_content
    )


def _static_work(
    args: argparse.Namespace, component: Any
) -> tuple[CasesFile | None, dict[str, Any], tuple[AdaptiveRequest, ...]]:
    """The cases to run (None: none), the files they came from, and any adaptive requests.

    Refuses, before anything runs, a file that cannot be read, ``--extended`` for a suite with
    no opt-in cases, and case ids repeated across the files.
    """
    from vitrine.redteam._cases import CaseFileError, combine_cases, load_case_source, load_cases

    path = args.cases or component.cases_path
    try:
        source = load_case_source(path)
        files = [] if source.cases is None else [(path.name, source.cases)]
        block = source.redteam
        if block is not None and block.categories:
            chosen = load_cases(component.cases_path).of_categories(block.categories)
            if chosen is not None:
                files.append((component.cases_path.name, chosen))
        if args.extended:
            extended = getattr(component, "extended_cases_path", None)
            if extended is None:
                raise CommandRefusal(
                    f"--extended: the suite's {component.name} has no opt-in extended cases"
                )
            files.append((extended.name, load_cases(extended)))
        cases = combine_cases(files) if files else None
    except CaseFileError as exc:
        raise CommandRefusal(str(exc)) from exc
    adaptive = () if block is None else block.adaptive
    if cases is None and not adaptive:
        raise CommandRefusal(
            f"{path.name}: nothing to run: the suite has no cases in the redteam block's plugins"
        )
    return cases, {"cases_file": " + ".join(name for name, _ in files)}, adaptive


def _check_turns(turns: int, what: str) -> None:
    if not 1 <= turns <= MAX_TURNS:
        raise CommandRefusal(
            f"{what} must lie between 1 and {MAX_TURNS}, got {turns}: an attack needs a turn, "
            "and each turn may call the target and the attacker"
        )


def _goals(component: Any) -> dict[str, Any]:
    from vitrine.redteam._adaptive import load_goals

    return load_goals(component.profile)


def _adaptive(args: argparse.Namespace) -> int:
    _check_turns(args.max_turns, "--max-turns")
    component = _component(args)
    goals = _goals(component)
    chosen = args.goal or list(goals)
    unknown = [g for g in chosen if g not in goals]
    if unknown:
        raise CommandRefusal(f"unknown goal {unknown[0]!r}: one of {', '.join(goals)}")
    models = _models(args, args.target)
    factory = _factory(component, args.target, models)
    with _traced(args):
        return _adaptive_run(
            args,
            component,
            models,
            factory,
            args.strategy,
            {g: goals[g] for g in chosen},
            args.max_turns,
        )


def _adaptive_run(
    args: argparse.Namespace,
    component: Any,
    models: _Models,
    factory: Any,
    strategy: Strategy,
    goals: dict[str, Any],
    max_turns: int,
) -> int:
    """One adaptive campaign over ``goals``, written as its own run; returns its exit code."""
    from vitrine._progress_bar import StepProgress
    from vitrine.redteam._adaptive import AdaptiveConfig, ScriptedAttacker, run_adaptive_campaign
    from vitrine.redteam._static import RunFacts

    attacker_kind = args.attacker or ("provider" if models.attacker_source else "scripted")
    if attacker_kind == "provider" and models.attacker_source is None:
        raise CommandRefusal(
            "--attacker provider needs --provider: no attacker model is configured"
        )
    attacker = models.attacker_source if attacker_kind == "provider" else ScriptedAttacker()
    assert attacker is not None
    started = _now()
    with StepProgress.on(sys.stderr, f"{PROG} adaptive-{strategy}") as steps:
        result, turns, evidence = asyncio.run(
            run_adaptive_campaign(
                list(goals.values()),
                strategy,
                factory,
                attacker,
                judge=models.judge,
                config=AdaptiveConfig(max_turns=max_turns),
                progress=steps,
            )
        )
    facts = RunFacts(result, turns=turns, evidence=evidence)
    extra = {"strategy": strategy, "attacker": attacker.model_id}
    return _finish(args, f"adaptive-{strategy}", component, models, facts, started, extra)


def _finish(
    args: argparse.Namespace,
    kind: str,
    component: Any,
    models: _Models,
    facts: Any,
    started: str,
    extra: dict[str, Any],
) -> int:
    from vitrine.redteam._report import write_run_html
    from vitrine.redteam._runs import new_run_dir, write_run
    from vitrine.redteam._static import run_document

    document = run_document(
        kind=kind,
        target=_target_facts(component, args.target, models),
        judge=None if models.judge is None else models.judge.judge_id,
        facts=facts,
        started_at=started,
        extra=extra,
    )
    try:
        run_dir = new_run_dir(_root(args))
        write_run(run_dir, document)
        document["run_id"] = run_dir.name
        html = write_run_html(run_dir, document, [])
    except OSError as exc:
        raise CommandRefusal(
            f"the run could not be written ({type(exc).__name__})", INFRASTRUCTURE
        ) from exc
    out = sys.stdout
    scores = document["scores"]
    out.write(
        f"{PROG} {kind}: {scores['resisted']} resisted, {scores['compromised']} compromised, "
        f"{scores['inconclusive']} inconclusive ({scores['errored']} errored) of "
        f"{scores['total']}; {scores['calls_used']} of {scores['ceiling']} model calls\n"
    )
    if document["scope"] is not None:
        out.write(f"scope: {document['scope']['statement']}\n")
    for probe in document["probes"]:
        out.write(f"  {probe['probe_id']}: {probe['outcome']}  {probe['diagnostic']}\n")
    for finding in document["findings"]:
        out.write(f"finding {finding['id']} ({finding['severity']}, {finding['owasp']}): OPEN\n")
    out.write(f"artifact: {run_dir / 'redteam.json'}\nartifact: {html}\n")
    out.write(f"exit {document['exit_code']} ({document['exit_meaning']}): ")
    out.write(f"{document['exit_reason']}\n")
    return int(document["exit_code"])


def _resolve(args: argparse.Namespace, run: str | None) -> Path:
    from vitrine.redteam._runs import RunNotFoundError, resolve_run

    try:
        return resolve_run(_root(args), None if run in (None, "latest") else run)
    except RunNotFoundError as exc:
        raise CommandRefusal(str(exc)) from exc


def _loaded(run_dir: Path) -> dict[str, Any]:
    from vitrine.redteam._runs import RunNotFoundError, load_run

    try:
        return load_run(run_dir)
    except RunNotFoundError as exc:
        raise CommandRefusal(str(exc)) from exc


def _sign_off(args: argparse.Namespace) -> int:
    from vitrine.redteam._report import write_run_html
    from vitrine.redteam._runs import RunIntegrityError, sign_off

    run_dir = _resolve(args, args.run)
    document = _loaded(run_dir)
    try:
        # The page is re-rendered before the sign-off is confirmed: if either cannot be
        # written (a full disk), the sign-off is not recorded, as the refusal says.
        record = sign_off(
            run_dir,
            args.finding,
            by=args.by,
            reason=args.reason,
            then=lambda signoffs: write_run_html(run_dir, document, signoffs),
        )
    except OSError as exc:
        raise CommandRefusal(
            f"the sign-off could not be recorded in {run_dir.name} ({exc.strerror or exc})",
            INFRASTRUCTURE,
        ) from exc
    except RunIntegrityError:
        raise
    except (LookupError, ValueError) as exc:
        raise CommandRefusal(str(exc)) from exc
    sys.stdout.write(f"signed off {record.finding_id} in {run_dir.name} by {record.by}\n")
    return ExitCode.PASS


def _status(args: argparse.Namespace) -> int:
    from vitrine.redteam._runs import finding_states, read_signoffs, unresolved_of

    run_dir = _resolve(args, args.run)
    document = _loaded(run_dir)
    rows = finding_states(document, read_signoffs(run_dir))
    open_rows = [r for r in rows if r["signoff"] is None]
    out = sys.stdout
    out.write(f"{PROG} status {run_dir.name}: {len(open_rows)} open, ")
    out.write(f"{len(rows) - len(open_rows)} signed off\n")
    for row in rows:
        signed = row["signoff"]
        state = "OPEN" if signed is None else f"signed off by {signed['by']}"
        out.write(f"  {row['id']} ({row['severity']}, {row['owasp']}): {state}\n")
    if open_rows:
        out.write("open findings need a recorded human sign-off before the next deploy\n")
        return ExitCode.MEASURED_FAILURE
    gaps = unresolved_of(document)
    if gaps is not None:
        # A sign-off accepts what was found; it cannot vouch for what was never measured.
        out.write(f"no sign-off covers what the run did not measure: {gaps['reason']}\n")
        return ExitCode(gaps["exit_code"])
    return ExitCode.PASS


def _export(args: argparse.Namespace) -> int:
    from vitrine.redteam._exports import export_run
    from vitrine.redteam._runs import read_signoffs

    run_dir = _resolve(args, args.run)
    text = export_run(_loaded(run_dir), read_signoffs(run_dir), args.format)
    if args.out is None:
        sys.stdout.write(text)
        return ExitCode.PASS
    from vitrine.store._files import atomic_write_bytes

    try:
        atomic_write_bytes(args.out, text.encode())
    except OSError as exc:
        raise CommandRefusal(
            f"cannot write {args.out.name} ({type(exc).__name__})", INFRASTRUCTURE
        ) from exc
    sys.stdout.write(f"artifact: {args.out}\n")
    return ExitCode.PASS


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
