"""RAG falsification probe: one fact changed per reference answer, six kinds, on the judged items.

Run: python benchmarks/rag_falsification.py
(an embedded PostgreSQL under a temporary store root unless VITRINE_DATABASE_URL is set). For
each kind of edit (tests/rag/rag_fact_edits.py) it prints how many judged items the edit
applied to, how many of those the gate caught (an answer metric of the item failed), how many
faithfulness alone caught (the claim read against the sentence it restates), and the run's exit
code; then the unedited reference answers (false alarms) and the degenerate generators.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "rag"))

import rag_fact_edits as edits

from vitrine.rag._alignment import knowledge_entities
from vitrine.rag._chunking import load_knowledge_base
from vitrine.rag._database import database_url, release_embedded_servers
from vitrine.rag._dataset import load_dataset, load_thresholds
from vitrine.rag._ingest import ingest
from vitrine.rag._metrics import Metric
from vitrine.rag._vectorstore import VectorStore
from vitrine_shop.rag import RAG


async def measure(store: VectorStore, table: str) -> None:
    kb = load_knowledge_base(RAG.knowledge_dir)
    thresholds = load_thresholds(RAG.thresholds_path)
    judged = set(thresholds.held_out_ids)
    items = [i for i in load_dataset(RAG.dataset_path) if i.id in judged]
    embedder = RAG.dev_embedder()
    ingest(kb, embedder, store, table)
    pages = edits.Pages.of(kb)
    entities = knowledge_entities(c.text for c in kb.chunks)
    print(f"{len(items)} judged items ({sum(i.has_relevant_chunk for i in items)} answerable)")
    print(f"{'edit':<18} {'edited':>6} {'caught':>7} {'rate':>6} {'by faithfulness':>16}  exit")
    for kind in edits.KINDS:
        result, _ = await edits.run_class(
            kind,
            items,
            pages,
            embedder=embedder,
            store=store,
            table=table,
            thresholds=thresholds,
            entities=entities,
        )
        print(
            f"{kind:<18} {result.edited:>6} {result.caught:>7} {result.rate:>6.1%} "
            f"{result.caught_by_context:>16}  {result.exit_code}"
            + (f"  missed: {', '.join(result.missed)}" if result.missed else "")
        )
    _, outcome = await edits.run_class(
        None,
        items,
        pages,
        embedder=embedder,
        store=store,
        table=table,
        thresholds=thresholds,
        entities=entities,
    )
    flagged = [r.item.id for r in outcome.results if edits.caught(r.scores)[0]]
    wrong_fact = [
        r.item.id
        for r in outcome.results
        if (obs := r.scores.get(Metric.FACT_AGREEMENT)) is not None
        and obs.is_measured
        and obs.failed
    ]
    print(
        f"unedited reference answers: exit {int(outcome.exit_code)}; "
        f"{len(wrong_fact)} flagged for a wrong fact"
        + (f" ({', '.join(wrong_fact)})" if wrong_fact else "")
        + f"; {len(flagged)} with some answer metric below its threshold"
        + (f" ({', '.join(flagged)})" if flagged else "")
    )


def main() -> None:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    root = Path(tempfile.mkdtemp(prefix="vitrine-rag-falsify-"))
    os.environ.setdefault("VITRINE_HOME", str(root))
    try:
        with VectorStore(database_url(root)) as store:
            asyncio.run(measure(store, "falsification_chunks"))
    finally:
        release_embedded_servers()


if __name__ == "__main__":
    main()
