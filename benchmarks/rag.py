"""RAG figures: ingestion throughput, retrieval latency percentiles, whole-eval wall time.

Run: python benchmarks/rag.py   (uses an embedded PostgreSQL under a temporary store root unless
VITRINE_DATABASE_URL is set; embeddings come warm from the cache after the first run)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="vitrine-rag-bench-"))
    os.environ.setdefault("VITRINE_HOME", str(root))
    from vitrine.rag.chunking import load_knowledge_base
    from vitrine.rag.database import database_url, release_embedded_servers
    from vitrine.rag.dataset import load_dataset, load_thresholds
    from vitrine.rag.ingest import ingest
    from vitrine.rag.metrics import HeuristicScorer
    from vitrine.rag.pipeline import evaluate, retrieve
    from vitrine.rag.vectorstore import VectorStore
    from vitrine_shop.rag import RAG

    started = time.perf_counter()
    url = database_url(root)
    print(f"database ready in {time.perf_counter() - started:.2f} s")
    kb = load_knowledge_base(RAG.knowledge_dir)
    items = load_dataset(RAG.dataset_path)
    thresholds = load_thresholds(RAG.thresholds_path)
    embedder = RAG.dev_embedder()
    embedder.embed(["warm the model"])  # model load is start-up cost, not throughput
    with VectorStore(url) as store:
        result = ingest(kb, embedder, store, "bench_chunks", force=True)
        print(
            f"ingestion: {result.chunks} chunks, embed {result.embed_s:.2f} s + write "
            f"{result.write_s:.2f} s = {result.chunks_per_s:.0f} chunks/s"
        )
        result = ingest(kb, embedder, store, "bench_chunks", force=True)
        print(f"re-ingestion (embeddings cached): {result.chunks_per_s:.0f} chunks/s")
        latencies = []
        for _ in range(5):
            retrievals = retrieve([i.question for i in items], embedder, store, "bench_chunks", 4)
            latencies.extend(r.latency_s * 1000 for r in retrievals)
        cuts = statistics.quantiles(latencies, n=100)
        print(
            f"retrieval over {len(items)} questions x5: p50 {cuts[49]:.2f} ms, "
            f"p95 {cuts[94]:.2f} ms"
        )
        wall = time.perf_counter()
        outcome = asyncio.run(
            evaluate(
                items,
                embedder=embedder,
                store=store,
                table="bench_chunks",
                top_k=4,
                generator=RAG.default_generator(embedder, thresholds),
                scorer=HeuristicScorer(
                    embedder,
                    thresholds.metrics,
                    claim_cosine_threshold=thresholds.claim_cosine_threshold,
                ),
                thresholds=thresholds,
            )
        )
        print(
            f"whole eval ({len(items)} items, warm): {time.perf_counter() - wall:.2f} s, "
            f"exit {int(outcome.exit_code)}"
        )
        store.drop("bench_chunks")
    release_embedded_servers()


if __name__ == "__main__":
    main()
