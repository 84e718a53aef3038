"""The shop assistant on its own: ``python -m vitrine_shop [SELECTOR] [options]``.

Selectors 1-6 name the six packaged scenarios (``--list`` shows them); each puts the scenario's
query to its customer and shows both architectures answering, the agent with its tool journal
and the workflow with its route. Everything is offline by default, on the deterministic
scripted model, through the same code a live model drives.

The cost boundary is fail-closed, as in the evaluation plans:

- ``--live`` answers with a configured model (``--provider``, ``--model``); a paid provider
  also needs ``--confirm-paid``. A free one (``--provider local``, or an OpenAI-compatible
  server declared ``VITRINE_PROVIDER_COST=free``) needs no confirmation.
- ``--real-vectors`` embeds the catalogue with the model now instead of reading the shipped
  vectors, and ``--rebuild-embeddings`` rewrites the shipped vectors. Both change the cost
  lane, so both need ``--confirm-paid`` as the protocol requires (vitrine's one rule,
  :func:`vitrine.live.confirmation_refusal`), although the packaged all-MiniLM-L6-v2 model
  they run costs nothing.

Exit codes: 0 answered, 2 bad arguments, 4 the model or a provider was not available.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from vitrine.providers import ChatModel
    from vitrine_shop.operations import ShopServices

__all__ = ["main"]

PROG = "python -m vitrine_shop"
_OK, _USAGE, _INFRA = 0, 2, 4
# The packaged scenarios in registry order; a selector is a 1-based index into this tuple.
SELECTORS = (
    "nadia-cross-category",
    "sofia-capability-gap",
    "marco-gift-trap",
    "luca-safe-abstention",
    "elena-sensitive-boundary",
    "cohort-weekly-picks",
)
EMBEDDING_COST = "free: the packaged all-MiniLM-L6-v2 model runs on this machine"


class _Usage(Exception):
    """A refused request: printed and exited with 2."""


class _Infra(Exception):
    """The model or provider is unavailable: exit 4."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Usage(message)


def build_parser() -> argparse.ArgumentParser:
    from vitrine.providers import DEFAULT_PROVIDER_RULE

    listing = ", ".join(f"{n} {s}" for n, s in enumerate(SELECTORS, start=1))
    parser = _Parser(
        prog=PROG,
        description="Both shop architectures answer one packaged scenario, offline by default.",
        epilog=f"Selectors: {listing}.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "selector",
        nargs="?",
        help="1-6 or a scenario id (default: the scenario of --persona, else 1, Nadia)",
    )
    parser.add_argument("--list", action="store_true", help="list the selectors and exit")
    parser.add_argument("--persona", help="the customer, for the cohort scenario (6)")
    parser.add_argument("--query", help="ask this instead of the scenario's query")
    parser.add_argument("--architecture", choices=("agent", "workflow", "both"), default="both")
    parser.add_argument("--zero-model", action="store_true", help="the workflow with no model")
    parser.add_argument("--plain", action="store_true", help="plain text, no colours or tables")
    live = parser.add_argument_group("live model (fail-closed)")
    live.add_argument("--live", action="store_true", help="answer with a configured model")
    live.add_argument(
        "--confirm-paid",
        action="store_true",
        help="allow a paid provider, --real-vectors or --rebuild-embeddings",
    )
    live.add_argument(
        "--provider",
        choices=("openai", "azure", "local"),
        help=f"the model service (default: {DEFAULT_PROVIDER_RULE}, as for every vitrine plan)",
    )
    live.add_argument("--model", metavar="NAME", help="model, deployment or GGUF file")
    vectors = parser.add_argument_group("embeddings")
    vectors.add_argument(
        "--real-vectors",
        action="store_true",
        help=f"embed the catalogue now instead of reading the shipped vectors ({EMBEDDING_COST})",
    )
    vectors.add_argument(
        "--rebuild-embeddings",
        action="store_true",
        help=f"re-embed the catalogue and rewrite the shipped vectors ({EMBEDDING_COST})",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    if argv is None:
        from vitrine.reports import pipe_safe_stdout

        pipe_safe_stdout()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except _Usage as exc:
        sys.stderr.write(parser.format_usage())
        return _error(str(exc), _USAGE)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else _USAGE
    try:
        if args.list:
            _list()
            return _OK
        scenario_id = _scenario(args.selector, args.persona)
        _check_cost_flags(args)
        if args.rebuild_embeddings:
            return _rebuild()
        model = _live_model(args) if args.live else None
        return _answer(args, scenario_id, model)
    except _Usage as exc:
        return _error(str(exc), _USAGE)
    except _Infra as exc:
        return _error(str(exc), _INFRA)


def _scenario(selector: str | None, persona_id: str | None) -> str:
    if selector is None:
        return _scenario_of(persona_id) if persona_id else SELECTORS[0]
    text = selector.strip()
    if text.isdigit() and len(text) < 3 and 1 <= int(text) <= len(SELECTORS):
        return SELECTORS[int(text) - 1]
    if text in SELECTORS:
        return text
    raise _Usage(f"unknown selector {selector[:40]!r}: choose 1-{len(SELECTORS)} or a scenario id")


def _scenario_of(persona_id: str) -> str:
    from vitrine_shop.scenarios import load_scenarios

    for scenario_id in SELECTORS:
        if persona_id in load_scenarios()[scenario_id].personas:
            return scenario_id
    raise _Usage(f"no packaged scenario has customer {persona_id[:40]!r}: see --list")


def _check_cost_flags(args: argparse.Namespace) -> None:
    from vitrine.live import confirmation_refusal

    live_only = [
        flag
        for flag, given in (
            ("--provider", args.provider),
            ("--model", args.model),
            ("--confirm-paid", args.confirm_paid),
        )
        if given
    ]
    embedding = [
        flag
        for flag, given in (
            ("--real-vectors", args.real_vectors),
            ("--rebuild-embeddings", args.rebuild_embeddings),
        )
        if given
    ]
    refusal = confirmation_refusal(
        f"with {' and '.join(embedding)} the catalogue is embedded by the model instead of read "
        f"from the shipped vectors, another cost lane ({EMBEDDING_COST})",
        paid=bool(embedding),
        confirmed=args.confirm_paid,
    )
    if refusal is not None:
        raise _Usage(refusal)
    if embedding and not args.live:
        live_only = [flag for flag in live_only if flag != "--confirm-paid"]
    if live_only and not args.live:
        # A provider flag without --live would otherwise be silently ignored: the answer would
        # come from the scripted model while the operator believes a real one answered.
        raise _Usage(f"{', '.join(live_only)} only apply with --live")
    if args.live and args.zero_model:
        raise _Usage("--zero-model runs the workflow without any model; it cannot be --live")


def _live_model(args: argparse.Namespace) -> ChatModel:
    from vitrine.live import confirmation_refusal
    from vitrine.providers import ProviderConfig, create_chat_model, readiness

    local_model = args.model if args.provider == "local" else None
    model_name = None if args.provider == "local" else args.model
    config = ProviderConfig.from_env(args.provider, model=model_name, local_model=local_model)
    refusal = confirmation_refusal(
        f"--live with {config.provider} calls a paid model service (a local model, --provider "
        "local, costs nothing and needs no confirmation)",
        paid=config.paid,
        confirmed=args.confirm_paid,
    )
    if refusal is not None:
        raise _Usage(refusal)
    state = readiness(config)
    if not state.ready:
        raise _Infra(f"the {config.provider} provider is not ready: {state.reason}")
    return create_chat_model(config, "subject")


def _answer(args: argparse.Namespace, scenario_id: str, model: ChatModel | None) -> int:
    from vitrine_shop.demo import render, request_for_scenario, run_demo

    try:
        request = request_for_scenario(scenario_id, persona_id=args.persona, query=args.query)
    except ValueError as exc:
        raise _Usage(str(exc)) from exc
    services = _services(real_vectors=args.real_vectors)
    try:
        run = asyncio.run(
            run_demo(
                request,
                services=services,
                zero_model=args.zero_model,
                model=model,
                architectures=args.architecture,
            )
        )
    except _Infra as exc:
        return _error(str(exc), _INFRA)
    except Exception as exc:
        from vitrine.redact import describe_exception

        return _error(f"the assistant could not answer ({describe_exception(exc)})", _INFRA)
    render(run, plain=args.plain)
    return _OK


def _services(*, real_vectors: bool) -> ShopServices:
    from vitrine_shop.embeddings import (
        CatalogueVectors,
        MiniLMEmbedder,
        catalogue_content_hash,
        product_text,
    )
    from vitrine_shop.operations import ShopServices

    services = ShopServices()
    if real_vectors:
        # The model itself, now: not the shipped file and not the cache, so the run shows what
        # the model produces for this catalogue.
        embedder = MiniLMEmbedder()
        pairs = [(p.sku, product_text(p)) for p in services.catalogue]
        matrix = embedder.encode_uncached([text for _, text in pairs])
        digest = catalogue_content_hash(embedder.model_id, pairs)
        skus = tuple(sku for sku, _ in pairs)
        services.use_vectors(CatalogueVectors(skus, matrix, embedder.model_id, digest, "embedded"))
    return services


def _rebuild() -> int:
    from vitrine_shop.catalogue import load_catalogue
    from vitrine_shop.embeddings import (
        SHIPPED_VECTORS_PATH,
        EmbeddingModelMissingError,
        MiniLMEmbedder,
        write_shipped_vectors,
    )

    try:
        vectors = write_shipped_vectors(load_catalogue(), MiniLMEmbedder())
    except EmbeddingModelMissingError as exc:
        return _error(str(exc), _INFRA)
    sys.stdout.write(f"wrote {len(vectors.skus)} vectors to {SHIPPED_VECTORS_PATH.name}\n")
    return _OK


def _list() -> None:
    from vitrine_shop.scenarios import load_scenarios

    scenarios = load_scenarios()
    for number, scenario_id in enumerate(SELECTORS, start=1):
        scenario = scenarios[scenario_id]
        who = ", ".join(scenario.personas)
        sys.stdout.write(f"{number}  {scenario_id}  ({who})\n   {scenario.query}\n")


def _error(message: str, code: int) -> int:
    sys.stderr.write(f"{PROG}: error: {message}\n")
    return code
