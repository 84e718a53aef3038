"""``vitrine rag ingest | eval | calibrate``: the RAG layer's command line.

Exit codes: 0 every metric's aggregate meets its threshold, 1 a measured metric fails, 2 bad
arguments or inputs (dataset, thresholds, suite), 3 nothing could be measured, 4 infrastructure
(database, embeddings endpoint, model provider, unwritable store). Readiness is checked before
anything is written: an unready prod configuration leaves no table, report or file behind.
With a trace destination (``--trace-to``, or the OpenTelemetry or Langfuse variables; see
docs/tracing.md) ``eval`` sends each query as a span and its metrics as scores.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from vitrine._commandline import (
    INFRASTRUCTURE,
    CommandRefusal,
    RefusingParser,
    add_store_option,
    add_suite_option,
    add_trace_options,
    load_suite_or_refuse,
    print_error,
    run_command,
    traced_session,
)
from vitrine._progress_bar import StepProgress
from vitrine._vocabulary import ExitCode, MeasurementState, Status
from vitrine.rag._database import DatabaseUnavailable

if TYPE_CHECKING:
    from vitrine.rag._chunking import KnowledgeBase
    from vitrine.rag._component import RagComponent
    from vitrine.rag._dataset import DatasetItem, RagThresholds
    from vitrine.rag._embeddings import EmbeddingMode, TextEmbedder
    from vitrine.rag._metrics import Scorer

__all__ = ["main"]

PROG = "vitrine rag"
# After SIGTERM the run unwinds as an interruption; a model call running in a worker thread can
# keep it waiting, so after this grace the database is stopped and the process exits anyway.
_TERM_GRACE_S = 10.0
_held_servers: list[frozenset[Path]] = [frozenset()]  # set by main, read by _force_exit


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= 50:
        raise argparse.ArgumentTypeError(f"top-K must be between 1 and 50, got {value}")
    return value


def _ef_search(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"ef_search must be between 1 and 1000, got {value}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = RefusingParser(
        prog=PROG,
        description="Ingest the suite's knowledge base into pgvector, evaluate retrieval-"
        "augmented answers on its ground-truth dataset, or calibrate the thresholds.",
        epilog="Exit codes: 0 pass, 1 a metric fails, 2 bad arguments, 3 nothing measured, "
        "4 infrastructure failure. Database: VITRINE_DATABASE_URL, else an embedded "
        "PostgreSQL under <store root>/pg.",
        allow_abbrev=False,
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=RefusingParser
    )

    def common(sub: argparse.ArgumentParser) -> None:
        add_suite_option(sub, component="rag")
        sub.add_argument(
            "--embedding-mode",
            choices=("dev", "prod"),
            default="dev",
            help="dev: the suite's local model (table knowledge_chunks_dev); prod: an "
            "OpenAI-compatible endpoint (OPENAI_API_KEY, OPENAI_BASE_URL, "
            "VITRINE_EMBEDDING_MODEL; table knowledge_chunks). A paid endpoint needs "
            "--confirm-paid",
        )
        sub.add_argument(
            "--confirm-paid",
            action="store_true",
            help="allow a paid service (a --provider model, or --embedding-mode prod)",
        )
        add_store_option(sub)

    ingest = commands.add_parser("ingest", help="chunk, embed and load the knowledge base")
    common(ingest)
    ingest.add_argument("--force", action="store_true", help="re-ingest even when unchanged")

    evaluate = commands.add_parser("eval", help="answer and score the ground-truth dataset")
    common(evaluate)
    evaluate.add_argument(
        "--top-k", type=_positive, default=None, help="chunks retrieved (default 4)"
    )
    evaluate.add_argument(
        "--provider",
        choices=("openai", "azure", "anthropic", "local"),
        help="answer and judge with this model service (default: offline extractive answers "
        "and non-LLM metric forms)",
    )
    evaluate.add_argument("--model", metavar="NAME", help="model or deployment for --provider")
    evaluate.add_argument(
        "--non-llm-metrics",
        action="store_true",
        help="with --provider, still score with the non-LLM metric forms",
    )
    evaluate.add_argument(
        "--items",
        choices=("judged", "calibration", "all"),
        default="judged",
        help="which items to judge (default judged: the dataset's judged set, 43 items for the "
        "shop, which no threshold was fitted on; calibration: the items that fitted them)",
    )
    evaluate.add_argument(
        "--limit", type=_count, default=None, metavar="N", help="judge only the first N items"
    )
    evaluate.add_argument(
        "--exact",
        action="store_true",
        help="exact nearest-neighbour search instead of the HNSW index",
    )
    evaluate.add_argument(
        "--ef-search",
        type=_ef_search,
        default=None,
        metavar="N",
        help="HNSW candidate list size per query (pgvector's hnsw.ef_search, default 40): "
        "larger is slower and nearer exact; benchmarks/rag.py prints recall@K against exact",
    )
    evaluate.add_argument("--thresholds", metavar="PATH", type=Path, help="thresholds file to read")
    evaluate.add_argument("--json-report", metavar="PATH", type=Path, help="also write JSON here")
    evaluate.add_argument("--html-report", metavar="PATH", type=Path, help="also write HTML here")
    add_trace_options(evaluate)

    calibrate = commands.add_parser("calibrate", help="derive thresholds and write them")
    common(calibrate)
    calibrate.add_argument(
        "--top-k", type=_positive, default=None, help="chunks retrieved (default 4)"
    )
    calibrate.add_argument(
        "--thresholds", metavar="PATH", type=Path, help="where to write (default: the suite's file)"
    )
    calibrate.add_argument("--dry-run", action="store_true", help="print, write nothing")
    calibrate.add_argument(
        "--seed", type=int, default=None, help="seed of the dev/held-out split (default fixed)"
    )
    calibrate.add_argument(
        "--resamples", type=_count, default=None, help="random splits for the spread (default 30)"
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """Run ``vitrine rag``; return the exit code."""
    return run_command(PROG, build_parser(), argv, _run)


def _run(args: argparse.Namespace) -> int:
    # SIGTERM (a CI timeout, `kill`) becomes an ordinary interruption, so the embedded
    # PostgreSQL is released below instead of outliving the process.
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread: the caller owns signal handling
        previous = None
    held = _held_servers[0] = _running_servers()
    try:
        if args.command == "ingest":
            return _ingest(args)
        if args.command == "eval":
            return _evaluate(args)
        return _calibrate(args)
    except KeyboardInterrupt:
        raise CommandRefusal(
            "interrupted: the live table was left as it was", INFRASTRUCTURE
        ) from None
    except DatabaseUnavailable as exc:
        # The database went away mid-run (stopped, restarted, network): one line, exit 4.
        raise CommandRefusal(str(exc), INFRASTRUCTURE) from None
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if "vitrine.rag._database" in sys.modules:
            from vitrine.rag._database import release_embedded_servers

            release_embedded_servers(keep=held)


def _terminated(signum: int, frame: object) -> NoReturn:
    watchdog = threading.Timer(_TERM_GRACE_S, _force_exit)
    watchdog.daemon = True
    watchdog.start()
    raise KeyboardInterrupt


def _force_exit() -> None:
    print_error(PROG, "terminated; stopping the embedded database and exiting")
    if "vitrine.rag._database" in sys.modules:
        from vitrine.rag._database import release_embedded_servers

        release_embedded_servers(keep=_held_servers[0])
    os._exit(INFRASTRUCTURE)


def _running_servers() -> frozenset[Path]:
    """Servers held before this command ran (a caller's): this command leaves them running."""
    if "vitrine.rag._database" not in sys.modules:
        return frozenset()
    from vitrine.rag._database import running_servers

    return running_servers()


# ----------------------------------------------------------------------------------------------


@dataclass
class _Setup:
    component: RagComponent
    mode: EmbeddingMode
    table: str
    root: Path
    kb: KnowledgeBase
    embedder: TextEmbedder


def _setup(args: argparse.Namespace) -> _Setup:
    from vitrine._redact import describe_exception
    from vitrine.rag._chunking import load_knowledge_base
    from vitrine.rag._component import RagComponent
    from vitrine.rag._embeddings import (
        EmbeddingConfigError,
        EmbeddingMode,
        OpenAIEmbedder,
        ProdEmbeddingConfig,
        table_for_mode,
    )
    from vitrine.store import resolve_root
    from vitrine.store._naming import cache_dir

    mode = EmbeddingMode(args.embedding_mode)
    prod: ProdEmbeddingConfig | None = None
    if mode is EmbeddingMode.PROD:
        from vitrine.providers._config import provider_is_free

        try:
            prod = ProdEmbeddingConfig.from_env()
        except EmbeddingConfigError as exc:
            raise CommandRefusal(str(exc), INFRASTRUCTURE) from None
        _require_confirmation(
            not provider_is_free("openai"),
            args,
            f"--embedding-mode prod embeds every chunk and question with {prod.model} at "
            f"{prod.base_url}, a paid service",
        )
    component = load_suite_or_refuse(args.suite, "rag")
    if not isinstance(component, RagComponent):
        raise CommandRefusal(
            f"the suite's 'rag' component is a {type(component).__name__}, not a RagComponent"
        )
    try:
        kb = load_knowledge_base(component.knowledge_dir)
    except (OSError, ValueError) as exc:
        raise CommandRefusal(f"knowledge base: {describe_exception(exc)}") from None
    root = resolve_root(args.output)
    embedder: TextEmbedder
    if prod is not None:
        embedder = OpenAIEmbedder(prod)
    else:
        try:
            # The vector cache lives under the store root, so --output moves it too.
            embedder = component.dev_embedder(cache_dir("embeddings", root))
        except Exception as exc:
            raise CommandRefusal(
                f"the dev embedder is unavailable: {describe_exception(exc)}", INFRASTRUCTURE
            ) from None
    return _Setup(component, mode, table_for_mode(mode), root, kb, embedder)


def _items(setup: _Setup) -> list[DatasetItem]:
    from vitrine.rag._dataset import DatasetError, load_dataset, unresolved_chunk_ids

    try:
        items = load_dataset(setup.component.dataset_path)
    except DatasetError as exc:
        raise CommandRefusal(str(exc)) from None
    broken = unresolved_chunk_ids(items, setup.kb)
    if broken:
        listed = "; ".join(f"{item}: {', '.join(ids)}" for item, ids in sorted(broken.items()))
        raise CommandRefusal(
            f"the dataset names chunks the knowledge base no longer has ({listed}); "
            "update the dataset or the pages"
        )
    return items


def _open_store(setup: _Setup) -> Any:
    from vitrine.rag._database import DatabaseUnavailable, database_url
    from vitrine.rag._vectorstore import VectorStore

    try:
        return VectorStore(database_url(setup.root))
    except DatabaseUnavailable as exc:
        raise CommandRefusal(str(exc), INFRASTRUCTURE) from None


def _load(setup: _Setup, store: Any, *, force: bool = False) -> None:
    from vitrine._redact import describe_exception
    from vitrine.rag._embeddings import EmbeddingError
    from vitrine.rag._ingest import ingest

    try:
        result = ingest(setup.kb, setup.embedder, store, setup.table, force=force)
    except EmbeddingError as exc:
        raise CommandRefusal(str(exc), INFRASTRUCTURE) from None
    except Exception as exc:
        raise CommandRefusal(
            f"ingestion failed, the previous table is intact: {describe_exception(exc)}",
            INFRASTRUCTURE,
        ) from None
    if result.skipped:
        print(
            f"ingest: {result.table} is up to date "
            f"({result.chunks} chunks, {result.content_hash[:19]})"
        )
    else:
        print(
            f"ingest: {result.chunks} chunks from {result.pages} pages into {result.table} "
            f"({result.embedding_model}; {result.chunks_per_s:.0f} chunks/s)"
        )


def _ingest(args: argparse.Namespace) -> int:
    setup = _setup(args)
    with _open_store(setup) as store:
        _load(setup, store, force=args.force)
    return ExitCode.PASS


def _thresholds(args: argparse.Namespace, setup: _Setup) -> RagThresholds:
    from vitrine.rag._dataset import DatasetError, load_thresholds

    try:
        return load_thresholds(args.thresholds or setup.component.thresholds_path)
    except DatasetError as exc:
        raise CommandRefusal(f"{exc}; run `vitrine rag calibrate`") from None


def _require_confirmation(paid: bool, args: argparse.Namespace, what: str) -> None:
    """vitrine's one cost rule (:func:`vitrine.live.confirmation_refusal`): a paid --provider
    model or prod embeddings are refused before anything runs unless --confirm-paid."""
    from vitrine._cost import confirmation_refusal

    refusal = confirmation_refusal(what, paid=paid, confirmed=args.confirm_paid)
    if refusal is not None:
        raise CommandRefusal(refusal)


def _live_models(args: argparse.Namespace) -> tuple[Any, Any] | None:
    """(generator model, judge model) for --provider, refused before anything is written."""
    if args.provider is None:
        if args.model or args.non_llm_metrics:
            raise CommandRefusal("--model and --non-llm-metrics need --provider")
        return None
    from vitrine.providers._config import ProviderConfig, create_chat_model, readiness

    config = ProviderConfig.from_env(args.provider, model=args.model)
    state = readiness(config)
    if not state.ready:
        raise CommandRefusal(state.reason, INFRASTRUCTURE)
    _require_confirmation(
        state.paid,
        args,
        f"{state.reason}: this calls a paid service (one answer plus up to 5 judge calls per "
        "item; --limit bounds the items)",
    )
    judge = None if args.non_llm_metrics else create_chat_model(config, "judge")
    return create_chat_model(config, "subject"), judge


def _evaluate(args: argparse.Namespace) -> int:
    from vitrine.rag._alignment import knowledge_entities
    from vitrine.rag._generator import ChatModelGenerator
    from vitrine.rag._metrics import HeuristicScorer, LlmScorer
    from vitrine.rag._pipeline import DEFAULT_TOP_K, evaluate
    from vitrine.rag._report import build_report, write_report

    if args.exact and args.ef_search is not None:
        raise CommandRefusal("--ef-search tunes the HNSW index search; --exact does not use it")
    live = _live_models(args)
    setup = _setup(args)
    thresholds = _thresholds(args, setup)
    items = _select(_items(setup), thresholds, args.items, args.limit)
    top_k = args.top_k or DEFAULT_TOP_K
    generator = (
        setup.component.default_generator(setup.embedder, thresholds)
        if live is None
        else ChatModelGenerator(live[0])
    )
    structural = bool(getattr(generator, "faithful_by_construction", False))
    entities = knowledge_entities(c.text for c in setup.kb.chunks)
    scorer: Scorer
    if live is not None and live[1] is not None:
        scorer = LlmScorer(live[1], setup.embedder, thresholds.metrics, entities=entities)
    else:
        scorer = HeuristicScorer.calibrated(
            setup.embedder, thresholds, structural_faithfulness=structural, entities=entities
        )
    provenance = _provenance(thresholds, items)
    with (
        traced_session("rag eval", trace_to=args.trace_to, trace_content=args.trace_content),
        _open_store(setup) as store,
    ):
        _load(setup, store)
        # What the planner runs, not what was asked for: said in the line and the report.
        plan = store.scan(
            setup.table,
            setup.embedder.embed([items[0].question])[0],
            top_k,
            exact=args.exact,
            ef_search=args.ef_search,
        )
        search = "exact search (sequential scan)" if args.exact else f"HNSW search ({plan}"
        if not args.exact:
            search += f", ef_search {args.ef_search or 'default 40'})"
        print(
            f"{PROG}: judging {len(items)} {args.items} items ({search}, top-{top_k}); "
            f"{provenance}",
            flush=True,
        )
        steps = StepProgress.on(sys.stderr, PROG)
        steps.begin(len(items))
        with steps:
            outcome = asyncio.run(
                evaluate(
                    items,
                    embedder=setup.embedder,
                    store=store,
                    table=setup.table,
                    top_k=top_k,
                    generator=generator,
                    scorer=scorer,
                    thresholds=thresholds,
                    exact=args.exact,
                    ef_search=args.ef_search,
                    progress=_progress_steps(steps, live is not None),
                )
            )
    forms = {m.value: method.value for m, method in scorer.forms.items()}
    llm = any(v.startswith("llm:") for v in forms.values())
    summary = (
        "LLM-judged forms (judge: " + str(getattr(scorer, "judge_id", "")) + ")"
        if llm
        else "non-LLM forms (chunk ids, embeddings, fact checks); no model judged"
    )
    if structural:
        summary += (
            "; faithfulness is structural: the extractive generator copies retrieved "
            "sentences, so its value checks the copying, not a model's grounding"
        )
    report = build_report(
        outcome,
        {
            "knowledge_base": {
                "pages": len(setup.kb.pages),
                "chunks": len(setup.kb.chunks),
                "content_hash": setup.kb.content_hash,
                "table": setup.table,
                "embedding_mode": setup.mode.value,
                "embedding_model": setup.embedder.model_id,
            },
            "generator": {"id": generator.generator_id, "provenance": generator.provenance},
            "forms": forms,
            "forms_summary": summary,
            "items_judged": {
                "split": args.items,
                "count": len(items),
                "fitted_on_judged_items": bool(set(thresholds.dev_ids) & {i.id for i in items}),
                "calibration_items": len(thresholds.dev_ids),
                "statement": provenance,
            },
            "search": "exact" if args.exact else "hnsw",
            "search_plan": {"scan": plan, "ef_search": args.ef_search, "described": search},
            "thresholds": thresholds.to_dict(),
            "interval_method": next(iter(outcome.aggregates.values())).interval_method,
        },
    )
    stamp = datetime.now(UTC).strftime("%Y-%m-%d_%H-%M-%S")
    directory = setup.root / "reports" / f"rag-{stamp}"
    try:
        paths = write_report(
            report, directory, json_path=args.json_report, html_path=args.html_report
        )
    except OSError as exc:
        raise CommandRefusal(
            f"cannot write the report: {exc.strerror or exc}", INFRASTRUCTURE
        ) from None
    _print_summary(report)
    for path in paths:
        print(f"artifact: {path}")
    code = int(outcome.exit_code)
    print(f"{PROG}: eval exit {code} ({outcome.exit_code.meaning})")
    return code


def _select(
    items: list[DatasetItem], thresholds: RagThresholds, split: str, limit: int | None
) -> list[DatasetItem]:
    """The items to judge: by default those the thresholds were not fitted on."""
    if split != "all":
        wanted = set(thresholds.held_out_ids if split == "judged" else thresholds.dev_ids)
        if not wanted:
            raise CommandRefusal(
                f"{thresholds.source} records no {split} split; run `vitrine rag calibrate` "
                "or pass --items all"
            )
        items = [i for i in items if i.id in wanted]
    if limit is not None:
        items = items[:limit]
    if not items:
        raise CommandRefusal(f"no dataset item is in the {split} split of {thresholds.source}")
    return items


def _provenance(thresholds: RagThresholds, items: Sequence[DatasetItem]) -> str:
    """Where the thresholds came from, relative to the items judged: said on stdout and in
    the HTML, not only in the JSON."""
    fitted = set(thresholds.dev_ids)
    overlap = sum(1 for i in items if i.id in fitted)
    where = f"thresholds fitted only on the {len(fitted)} calibration items of {thresholds.source}"
    if overlap:
        return f"{where}; {overlap} of the judged items are among them, so this run is no test"
    return f"{where}, none of which is judged here"


def _progress_steps(steps: StepProgress, live: bool) -> Callable[[int, int, str], None]:
    """One step per scored item; with a live model each answer too, as a plain line, since a
    model taking minutes per call would otherwise leave a log silent (a bar shows its clock)."""

    def report(_done: int, _total: int, event: str) -> None:
        item, _, what = event.rpartition(" ")
        if what == "scored":
            steps.step(item, what)
        elif live and not steps.drawing:
            steps.note(f"{PROG}: {event}")

    return report


def _print_summary(report: dict[str, Any]) -> None:
    print(f"forms: {report['forms_summary']}")
    print(f"{'metric':<27} {'mean':>6} {'95% interval':>15} {'thresh':>7}  {'n':>3}  verdict")
    for name, m in report["metrics"].items():
        mean = "—" if m["mean"] is None else f"{m['mean']:.3f}"
        interval = "—" if not m["interval"] else f"{m['interval'][0]:.3f}–{m['interval'][1]:.3f}"
        verdict = Status.of(MeasurementState(m["state"]), m["passed"]).value
        n = m["census"]["measured"]
        print(f"{name:<27} {mean:>6} {interval:>15} {m['threshold']:>7.3f}  {n:>3}  {verdict}")
    rates = report.get("abstention_rates", {})
    if rates:
        print(
            "answered unanswerable: "
            + _rate(rates["answered_unanswerable"])
            + "; abstained on answerable: "
            + _rate(rates["abstained_answerable"])
        )


def _rate(rate: dict[str, Any]) -> str:
    if rate["of"] == 0:
        return "— (no such item)"
    return f"{rate['count']}/{rate['of']} ({rate['count'] / rate['of']:.3f})"


def _calibrate(args: argparse.Namespace) -> int:
    from vitrine.rag._calibrate import DEFAULT_RESAMPLES, DEFAULT_SEED, calibrate
    from vitrine.rag._pipeline import DEFAULT_TOP_K
    from vitrine.store import atomic_write_json

    if args.thresholds is not None and args.thresholds.is_dir():
        # Refused before calibrating: finding out at the write would waste the whole run.
        raise CommandRefusal(f"--thresholds {args.thresholds} is a directory; name a file")
    setup = _setup(args)
    items = _items(setup)
    top_k = args.top_k or DEFAULT_TOP_K
    with _open_store(setup) as store:
        _load(setup, store)
        document = calibrate(
            setup.kb,
            items,
            embedder=setup.embedder,
            store=store,
            table=setup.table,
            top_k=top_k,
            seed=DEFAULT_SEED if args.seed is None else args.seed,
            resamples=args.resamples or DEFAULT_RESAMPLES,
            progress=lambda step: print(f"calibrate: {step}", flush=True),
        )
    split = document["split"]
    origin = (
        "declared by the dataset" if split.get("declared_by_dataset") else f"seed {split['seed']}"
    )
    print(
        f"split ({origin}): {len(split['dev'])} calibration items fit the thresholds, "
        f"{len(split['held_out'])} judged items are judged by them"
    )
    print("calibration evidence (matched p5 / negative p95 -> threshold) and judged-item means:")
    for name, ev in document["evidence"].items():
        if "matched" in ev:
            good, bad, held = ev["matched"], ev["mismatched"], ev["held_out"]
            verdict = (
                "ok" if held["matched_passes"] and held["negative_fails"] else "HELD-OUT DISAGREES"
            )
            print(
                f"  {name:<24} p5 {good['p5']:.3f} / p95 {bad['p95']:.3f} -> "
                f"{ev['threshold']:.3f} [{ev['rule']}]; judged matched "
                f"{held['matched_mean']:.3f}, negative {held['negative_mean']:.3f}: {verdict}"
            )
        else:
            print(f"  {name:<24} {ev['rule']}")
    resamples = document["resamples"]
    print(
        f"spread over {resamples['splits']} random halvings of the calibration items (threshold "
        "min/median/max; other half"
    )
    print("  matched passes, negative fails):")
    for name, r in resamples.items():
        if isinstance(r, dict):
            print(
                f"  {name:<24} {r['threshold_min']:.3f}/{r['threshold_median']:.3f}/"
                f"{r['threshold_max']:.3f}; {r['held_out_matched_passes']}/{resamples['splits']}"
                f", {r['held_out_negative_fails']}/{resamples['splits']}"
            )
    print(
        "recommended: "
        + ", ".join(f"{k}={v}" for k, v in {**document["retrieval"], **document["metrics"]}.items())
    )
    if args.dry_run:
        print("dry run: nothing written")
        return ExitCode.PASS
    target = args.thresholds or setup.component.thresholds_path
    try:
        atomic_write_json(target, document)
    except OSError as exc:
        raise CommandRefusal(
            f"cannot write {target.name}: {exc.strerror or exc}", INFRASTRUCTURE
        ) from None
    print(f"wrote {target}")
    return ExitCode.PASS
