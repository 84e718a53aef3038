"""Ship the vectors the shop embeds offline: a maintainer's tool, not part of any run.

``python -m vitrine_shop.ship_vectors`` says whether the shipped catalogue vectors are current;
``--rebuild`` re-embeds the catalogue; ``--rebuild-queries`` runs every offline mode of the
shop's suite, records every text it embeds (through the embedders' recorder hook) and ships
their vectors, so that ``vitrine --all`` never needs the model. Both need the ``embeddings``
extra (torch and the model package).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from vitrine import PlanRequest
from vitrine_shop.catalogue import load_catalogue
from vitrine_shop.embeddings import (
    MODEL_ID,
    SHIPPED_QUERIES_PATH,
    SHIPPED_VECTORS_PATH,
    MiniLMEmbedder,
    shipped_vectors_current,
    texts_recorded_by,
    write_shipped_queries,
    write_shipped_vectors,
)
from vitrine_shop.evals.offline import run_mode
from vitrine_shop.evals.suite import SUITE

__all__ = ["main", "record_offline_texts"]


def record_offline_texts() -> list[str]:
    """Run every offline mode of the shop's suite and return every text it embedded."""
    recorded: list[str] = []
    with (
        texts_recorded_by(recorded.extend),
        tempfile.TemporaryDirectory(prefix="vitrine-queries-") as store,
    ):
        base = PlanRequest(plan="offline-suite", output=Path(store))
        for request in (base, *(replace(base, mode=mode.name) for mode in SUITE.declared_modes)):
            asyncio.run(run_mode(request))
    return recorded


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vitrine_shop.ship_vectors",
        description="Inspect or regenerate the shipped catalogue and query vectors.",
    )
    parser.add_argument(
        "--rebuild", action="store_true", help="re-embed the catalogue and rewrite the file"
    )
    parser.add_argument(
        "--rebuild-queries",
        action="store_true",
        help="run every offline mode, record the texts it embeds, and ship their vectors",
    )
    args = parser.parse_args(argv)
    if args.rebuild_queries:
        count = write_shipped_queries(record_offline_texts())
        print(f"wrote {count} query vectors to {SHIPPED_QUERIES_PATH.name}")
        return 0
    catalogue = load_catalogue()
    if args.rebuild:
        vectors = write_shipped_vectors(catalogue, MiniLMEmbedder())
        print(f"wrote {len(vectors.skus)} vectors to {SHIPPED_VECTORS_PATH.name}")
        return 0
    current = shipped_vectors_current(catalogue, MODEL_ID)
    state = "current" if current else "stale: run with --rebuild"
    print(f"{SHIPPED_VECTORS_PATH.name}: {state}")
    return 0 if current else 1


if __name__ == "__main__":
    sys.exit(main())
