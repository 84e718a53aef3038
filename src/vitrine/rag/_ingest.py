"""Ingestion: chunk the knowledge base, embed every chunk, swap the table in atomically.

Identical content (same chunk ids and texts, same embedding model) is detected from the table's
recorded hash and skipped unless forced; a forced re-ingestion writes the same ids and rows.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from vitrine.rag._chunking import KnowledgeBase
from vitrine.rag._embeddings import TextEmbedder
from vitrine.rag._vectorstore import StoredRow, VectorStore

__all__ = ["IngestResult", "ingest"]


@dataclass(frozen=True, slots=True)
class IngestResult:
    table: str
    chunks: int
    pages: int
    content_hash: str
    embedding_model: str
    skipped: bool  # the table already held exactly this content
    embed_s: float
    write_s: float

    @property
    def chunks_per_s(self) -> float:
        total = self.embed_s + self.write_s
        return self.chunks / total if total > 0 else float("inf")


def ingest(
    kb: KnowledgeBase,
    embedder: TextEmbedder,
    store: VectorStore,
    table: str,
    *,
    force: bool = False,
) -> IngestResult:
    digest = kb.content_hash
    current = store.info(table)
    if (
        not force
        and current is not None
        and current.content_hash == digest
        and current.embedding_model == embedder.model_id
        and current.rows == len(kb.chunks)
    ):
        return IngestResult(
            table, len(kb.chunks), len(kb.pages), digest, embedder.model_id, True, 0.0, 0.0
        )
    started = time.perf_counter()
    # Embedding happens before the transaction opens: a slow or failing model never holds
    # a database transaction, and a failure here has touched nothing.
    vectors = embedder.embed([chunk.embedding_text for chunk in kb.chunks])
    embedded = time.perf_counter()

    def rows() -> Iterator[StoredRow]:
        for chunk, vector in zip(kb.chunks, vectors, strict=True):
            yield StoredRow(chunk, vector)

    store.replace(
        table,
        rows(),
        embedding_model=embedder.model_id,
        dimension=int(vectors.shape[1]),
        content_hash=digest,
    )
    written = time.perf_counter()
    return IngestResult(
        table,
        len(kb.chunks),
        len(kb.pages),
        digest,
        embedder.model_id,
        False,
        embedded - started,
        written - embedded,
    )
