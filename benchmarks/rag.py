"""RAG figures: ingestion throughput, retrieval latency percentiles, whole-eval wall time, and
the HNSW index against exact search on a synthetic table.

Run: python benchmarks/rag.py [--synthetic N] [--skip-shop]
(uses an embedded PostgreSQL under a temporary store root unless VITRINE_DATABASE_URL is set;
embeddings come warm from the cache after the first run). The synthetic table holds N unit
vectors of 384 dimensions (default 100,000) drawn around 2,000 topic centres, and each query is
a perturbed row, as real questions sit near the chunks that answer them. For top-4 and top-10
it prints the index's recall@K against exact search at each ef_search (default 40, 100, 200):
the setting `vitrine rag eval --ef-search` exposes. (Uniformly random
vectors have no neighbours worth the name: every row is nearly equidistant from a random query,
and the index's recall@10 against exact search on them measured 0.06, a property of the data.)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from vitrine.rag._chunking import Chunk, load_knowledge_base
from vitrine.rag._database import database_url, release_embedded_servers
from vitrine.rag._dataset import load_dataset, load_thresholds
from vitrine.rag._ingest import ingest
from vitrine.rag._metrics import HeuristicScorer
from vitrine.rag._pipeline import evaluate, retrieve
from vitrine.rag._vectorstore import StoredRow, VectorStore
from vitrine_shop.rag import RAG

EF_SEARCH = (None, 100, 200)  # pgvector's hnsw.ef_search: `vitrine rag eval --ef-search N`


def ann_versus_exact(url: str, rows: int, *, dimension: int = 384, queries: int = 100) -> None:
    """Build an HNSW table of ``rows`` clustered vectors; recall@K of the index against exact
    search, and latency, for each ef_search setting."""

    rng = np.random.default_rng(7)

    def normalised(m: np.ndarray) -> np.ndarray:
        return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)

    def noise(n: int, scale: float) -> np.ndarray:
        return rng.standard_normal((n, dimension)) * scale / np.sqrt(dimension)

    centres = normalised(rng.standard_normal((2_000, dimension)))
    data = normalised(centres[rng.integers(0, len(centres), rows)] + noise(rows, 0.6))

    def synthetic() -> Iterator[StoredRow]:
        for i, vector in enumerate(data):
            yield StoredRow(Chunk(f"s#{i}.0", "s.md", "S", ("x",), 0, f"row {i}"), vector)

    with VectorStore(url) as store:
        started = time.perf_counter()
        store.replace(
            "bench_synthetic",
            synthetic(),
            embedding_model="random",
            dimension=dimension,
            content_hash="synthetic",
        )
        print(
            f"synthetic table: {rows:,} rows x {dimension} dims loaded and HNSW-indexed in "
            f"{time.perf_counter() - started:.1f} s"
        )
        for k in (4, 10):
            picked = data[rng.integers(0, rows, queries)]
            probes = normalised(picked + noise(queries, 0.3))
            truth = [
                {c.id for c in store.search("bench_synthetic", q, k, exact=True)} for q in probes
            ]
            for ef_search in EF_SEARCH:
                timings, recalls = [], []
                for query, exact in zip(probes, truth, strict=True):
                    t = time.perf_counter()
                    found = store.search("bench_synthetic", query, k, ef_search=ef_search)
                    timings.append((time.perf_counter() - t) * 1000)
                    recalls.append(len({c.id for c in found} & exact) / k)
                cuts = statistics.quantiles(timings, n=100)
                print(
                    f"HNSW top-{k}, ef_search {ef_search or 'default (40)'}: recall@{k} vs exact "
                    f"mean {np.mean(recalls):.3f}, min {min(recalls):.2f}; "
                    f"p50 {cuts[49]:.2f} ms, p95 {cuts[94]:.2f} ms"
                )
        store.drop("bench_synthetic")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, default=100_000, help="rows of the ANN table")
    parser.add_argument("--skip-shop", action="store_true", help="only the synthetic table")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="vitrine-rag-bench-"))
    os.environ.setdefault("VITRINE_HOME", str(root))

    started = time.perf_counter()
    url = database_url(root)
    print(f"database ready in {time.perf_counter() - started:.2f} s")
    if args.synthetic:
        ann_versus_exact(url, args.synthetic)
    if args.skip_shop:
        release_embedded_servers()
        return
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
        vectors = embedder.embed([i.question for i in items])
        print(f"shop table plan: {store.scan('bench_chunks', vectors[0], 4)}")
        for ef_search in EF_SEARCH:
            recalls = []
            for vector in vectors:
                exact = {c.id for c in store.search("bench_chunks", vector, 4, exact=True)}
                found = store.search("bench_chunks", vector, 4, ef_search=ef_search)
                recalls.append(len({c.id for c in found} & exact) / 4)
            print(
                f"shop HNSW recall@4 vs exact, ef_search {ef_search or 'default (40)'}: "
                f"mean {np.mean(recalls):.3f}, min {min(recalls):.2f}"
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
                scorer=HeuristicScorer.calibrated(
                    embedder, thresholds, structural_faithfulness=True
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
